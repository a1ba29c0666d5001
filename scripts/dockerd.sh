#!/usr/bin/env bash
# Start (or stop) the Docker engine of the docker backend, idempotently.
#
#   scripts/dockerd.sh [start] [--owner ID]   start dockerd unless an engine already answers; wait for it
#   scripts/dockerd.sh stop [--owner ID]      stop the dockerd this script started (its pidfile), nothing else
#   scripts/dockerd.sh status                 say whether an engine answers and whether it is ours
#
# "An engine answers" is the docker CLI's own (DOCKER_HOST, or its default
# socket) or ours. Ours has its own socket, exec root and pidfile in
# $MYSQLBENCH_DOCKERD_DIR (default /run/mysqlbench-dockerd) and its own data
# root $MYSQLBENCH_DOCKERD_ROOT (default /var/lib/mysqlbench-docker: the runtime
# image is built once there and reused), so it never touches a system Docker's
# state; the harness finds it by its socket (harness.measure.docker.engine_host).
#
# --owner ID (the pipeline passes its session id): `start` records ID in
# $MYSQLBENCH_DOCKERD_DIR/owner only when it really started the engine, and
# `stop --owner ID` stops it only when that file says ID. So a run stops the
# engine it started, never one that was already there (a system dockerd, or one
# another run or a user started).
#
# The engine gets no network at all: no bridge (--bridge=none), no iptables or
# NAT rules, no IP forwarding; containers run with --network none and talk to
# the host only through bind-mounted unix sockets. Its containers' cgroups sit
# under one parent of its own, /mysqlbench-docker (cgroupfs driver, v1 or v2),
# removed with the engine's exec root when `stop` stops it. Storage: dockerd's own choice
# (overlay2 where the data root allows it, else vfs);
# MYSQLBENCH_DOCKERD_STORAGE=vfs forces one. Needs root and Debian's docker.io.
#
# `start` prints one line and exits 0 when an engine answers; its exit status
# is 2 when dockerd is not installed, 3 when not root, 1 when it did not come up
# (the last lines of its log are printed).
set -euo pipefail

STATE_DIR=${MYSQLBENCH_DOCKERD_DIR:-/run/mysqlbench-dockerd}
DATA_ROOT=${MYSQLBENCH_DOCKERD_ROOT:-/var/lib/mysqlbench-docker}
STORAGE=${MYSQLBENCH_DOCKERD_STORAGE:-}
CGROUP_PARENT=${MYSQLBENCH_DOCKERD_CGROUP:-mysqlbench-docker}
SOCK=$STATE_DIR/docker.sock
PIDFILE=$STATE_DIR/dockerd.pid
OWNER=$STATE_DIR/owner
LOG=$STATE_DIR/dockerd.log
WAIT_S=${MYSQLBENCH_DOCKERD_WAIT_S:-60}
LABEL=mysql-engines-artifact

# The Debian CLI matches the Debian engine (20.10); any newer CLI negotiates the API down.
DOCKER=${MYSQLBENCH_DOCKER:-$(command -v docker || echo /usr/bin/docker)}

answers() {  # [host]: the CLI's own engine, or the one at unix://host
  if [ -n "${1:-}" ]; then
    timeout 10 "$DOCKER" -H "$1" info --format '{{.ServerVersion}}' >/dev/null 2>&1
  else
    timeout 10 "$DOCKER" info --format '{{.ServerVersion}}' >/dev/null 2>&1
  fi
}

ours_answers() { [ -S "$SOCK" ] && answers "unix://$SOCK"; }
# ours is the engine asked for unless DOCKER_HOST names another one
ours_selected() { [ -z "${DOCKER_HOST:-}" ] || [ "$DOCKER_HOST" = "unix://$SOCK" ]; }

our_pid() {
  # The pid in our pidfile, if it is a live dockerd; empty otherwise.
  local pid
  [ -r "$PIDFILE" ] || return 0
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = dockerd ] && echo "$pid"
  return 0
}

# Pipelines using our engine: $STATE_DIR/users/<owner id> holds the caller's pid. A run
# that did not start the engine registers too, so the engine is stopped by the LAST live
# run using it (another pipeline's containers are never stopped under it).
register() {
  [ -n "$1" ] || return 0
  mkdir -p "$STATE_DIR/users"
  echo "$PPID" > "$STATE_DIR/users/$1"
}

other_users() {  # live runs other than $1 still using our engine
  local f pid n=0
  for f in "$STATE_DIR"/users/*; do
    [ -e "$f" ] || continue
    [ "$(basename "$f")" = "$1" ] && continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && [ -e "/proc/$pid" ]; then n=$((n + 1)); else rm -f "$f"; fi
  done
  echo "$n"
}

start() {
  local owner=$1
  if ours_selected && ours_answers; then
    register "$owner"
    echo "dockerd: ours already answers (pid $(our_pid), socket $SOCK)"
    return 0
  fi
  if answers; then
    echo "dockerd: an engine already answers ($("$DOCKER" info --format '{{.ServerVersion}}' 2>/dev/null)); left as it is"
    return 0
  fi
  if ! ours_selected; then
    echo "dockerd: DOCKER_HOST=$DOCKER_HOST does not answer; unset it to let this script start an engine" >&2
    return 1
  fi
  command -v dockerd >/dev/null 2>&1 || { echo "dockerd: not installed; apt-get install -y docker.io" >&2; return 2; }
  [ "$(id -u)" -eq 0 ] || { echo "dockerd: must be started as root" >&2; return 3; }
  mkdir -p "$STATE_DIR" "$DATA_ROOT"
  chmod 700 "$STATE_DIR"
  if [ -z "$(our_pid)" ]; then
    rm -f "$PIDFILE" "$OWNER"
    [ -S "$SOCK" ] && rm -f "$SOCK"  # left by a dockerd that was killed
    local storage=()
    [ -n "$STORAGE" ] && storage=(--storage-driver="$STORAGE")
    # Own session, no harness labels in its environment; it outlives this script.
    env -u MYSQLBENCH_SESSION -u MYSQLBENCH_RUN -u MYSQLBENCH_LABEL -u DOCKER_HOST \
      setsid dockerd "${storage[@]}" --bridge=none --iptables=false --ip6tables=false \
        --ip-masq=false --ip-forward=false --host "unix://$SOCK" --data-root "$DATA_ROOT" \
        --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "/$CGROUP_PARENT" \
        --exec-root "$STATE_DIR/exec" --pidfile "$PIDFILE" --label "mysqlbench.artifact=$LABEL" \
        </dev/null >>"$LOG" 2>&1 &
  fi
  local deadline=$((SECONDS + WAIT_S))
  while ((SECONDS < deadline)); do
    if ours_answers; then
      [ -n "$owner" ] && [ ! -e "$OWNER" ] && echo "$owner" > "$OWNER"
      register "$owner"
      echo "dockerd: started (pid $(our_pid), socket $SOCK, data root $DATA_ROOT, log $LOG)"
      return 0
    fi
    sleep 0.5
  done
  echo "dockerd: no answer from the engine after ${WAIT_S}s; last lines of $LOG:" >&2
  tail -5 "$LOG" >&2 || true
  return 1
}

remove_leftovers() {
  # After our engine exited: its exec root (if nothing is mounted there any more) and
  # the empty cgroups under its parent, in every cgroup hierarchy (v1 controllers, v2)
  local mnt fstype
  if ! grep -q " $STATE_DIR/exec" /proc/self/mounts; then
    rm -rf --one-file-system "$STATE_DIR/exec"
  fi
  while read -r _ mnt fstype _; do
    case $fstype in
      cgroup|cgroup2)
        [ -d "$mnt/$CGROUP_PARENT" ] && find "$mnt/$CGROUP_PARENT" -depth -type d -exec rmdir {} + 2>/dev/null || true
        ;;
    esac
  done < /proc/self/mounts
  return 0
}

stop() {
  local owner=$1 pid
  pid=$(our_pid)
  if [ -z "$pid" ]; then
    echo "dockerd: none started by this script; nothing stopped"
    return 0
  fi
  if [ -n "$owner" ]; then
    local registered="" others
    [ -e "$STATE_DIR/users/$owner" ] && registered=1
    rm -f "$STATE_DIR/users/$owner"
    others=$(other_users "$owner")
    if [ "$others" -gt 0 ]; then
      echo "dockerd: pid $pid left running for $others other pipeline(s) using it"
      return 0
    fi
    # ours to stop: this run started it, or a run started it (an owner is recorded: not a
    # user's engine) and this is the last live run that used it
    if [ "$(cat "$OWNER" 2>/dev/null || true)" != "$owner" ] && { [ -z "$registered" ] || [ ! -e "$OWNER" ]; }; then
      echo "dockerd: pid $pid was not started by $owner; left running"
      return 0
    fi
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 300); do
    [ -e "/proc/$pid" ] || break
    sleep 0.1
  done
  if [ -e "/proc/$pid" ]; then
    echo "dockerd: pid $pid still running 30 s after SIGTERM" >&2
    return 1
  fi
  rm -f "$PIDFILE" "$OWNER"
  remove_leftovers
  echo "dockerd: stopped (pid $pid)"
}

status() {
  local pid
  pid=$(our_pid)
  if ours_selected && ours_answers; then
    echo "dockerd: answers (started by this script, pid $pid, socket $SOCK${pid:+, owner $(cat "$OWNER" 2>/dev/null || echo none)})"
  elif answers; then
    echo "dockerd: answers (not started by this script)"
  else
    echo "dockerd: no engine answers"
    return 1
  fi
}

cmd=start
case "${1:-}" in start|stop|status) cmd=$1; shift ;; esac
owner=""
while (($#)); do
  case "$1" in
    --owner) owner=${2:?--owner needs an id}; shift 2 ;;
    --owner=*) owner=${1#--owner=}; shift ;;
    *) echo "usage: $0 [start|stop|status] [--owner ID]" >&2; exit 64 ;;
  esac
done
case "$cmd" in
  start) start "$owner" ;;
  stop) stop "$owner" ;;
  status) status ;;
esac
