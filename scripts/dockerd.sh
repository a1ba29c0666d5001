#!/usr/bin/env bash
# Start (or stop) a Docker engine for the docker backend, idempotently.
#
#   scripts/dockerd.sh [start]   start dockerd unless an engine already answers; wait for it
#   scripts/dockerd.sh stop      stop the dockerd this script started (by its pidfile), nothing else
#   scripts/dockerd.sh status    say whether an engine answers and whether it is ours
#
# The engine gets no network at all: no bridge (--bridge=none), no iptables
# or NAT rules, no IP forwarding; containers run with --network none and talk
# to the host only through bind-mounted unix sockets. Storage is vfs (works
# on any filesystem, also nested). Needs root and Debian's docker.io.
#
# `start` prints one line and exits 0 when an engine answers; its exit status
# is 2 when dockerd is not installed, 3 when not root, 1 when it did not come up
# (the last lines of its log are printed).
set -euo pipefail

STATE_DIR=${MYSQLBENCH_DOCKERD_DIR:-/var/run/mysqlbench-dockerd}
PIDFILE=$STATE_DIR/dockerd.pid
LOG=$STATE_DIR/dockerd.log
WAIT_S=${MYSQLBENCH_DOCKERD_WAIT_S:-60}

# The Debian CLI matches the Debian engine (20.10); any newer CLI negotiates the API down.
DOCKER=${MYSQLBENCH_DOCKER:-$(command -v docker || echo /usr/bin/docker)}

engine_answers() {
  timeout 10 "$DOCKER" info --format '{{.ServerVersion}}' >/dev/null 2>&1
}

our_pid() {
  # The pid in our pidfile, if it is a live dockerd; empty otherwise.
  local pid
  [ -r "$PIDFILE" ] || return 0
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = dockerd ] && echo "$pid"
  return 0
}

start() {
  if engine_answers; then
    echo "dockerd: an engine already answers ($("$DOCKER" info --format '{{.ServerVersion}}' 2>/dev/null))"
    return 0
  fi
  command -v dockerd >/dev/null 2>&1 || { echo "dockerd: not installed; apt-get install -y docker.io" >&2; return 2; }
  [ "$(id -u)" -eq 0 ] || { echo "dockerd: must be started as root" >&2; return 3; }
  mkdir -p "$STATE_DIR"
  if [ -z "$(our_pid)" ]; then
    rm -f "$PIDFILE"
    # Own session, no harness labels in its environment; it outlives this script.
    env -u MYSQLBENCH_SESSION -u MYSQLBENCH_RUN -u MYSQLBENCH_LABEL \
      setsid dockerd --storage-driver=vfs --bridge=none --iptables=false --ip-masq=false \
        --ip-forward=false --pidfile "$PIDFILE" </dev/null >>"$LOG" 2>&1 &
  fi
  local deadline=$((SECONDS + WAIT_S))
  while ((SECONDS < deadline)); do
    if engine_answers; then
      echo "dockerd: started (pid $(our_pid), log $LOG)"
      return 0
    fi
    sleep 0.5
  done
  echo "dockerd: no answer from the engine after ${WAIT_S}s; last lines of $LOG:" >&2
  tail -5 "$LOG" >&2 || true
  return 1
}

stop() {
  local pid
  pid=$(our_pid)
  if [ -z "$pid" ]; then
    echo "dockerd: none started by this script; nothing stopped"
    return 0
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
  rm -f "$PIDFILE"
  echo "dockerd: stopped (pid $pid)"
}

status() {
  local pid
  pid=$(our_pid)
  if engine_answers; then
    echo "dockerd: answers${pid:+ (started by this script, pid $pid)}"
  else
    echo "dockerd: no engine answers"
    return 1
  fi
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 [start|stop|status]" >&2; exit 64 ;;
esac
