#!/usr/bin/env bash
# Prove that `./artifact test` passes on a fresh Debian 12 machine that has
# nothing but a clone of this repository: the dev and CI machines have a newer
# python3 first on PATH and many packages already installed, which hides what
# a stock Debian 12 (python3 3.11.2) lacks. See usage() for what it does.
set -euo pipefail

PROG=check-fresh-debian
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INCLUDE=git,ca-certificates,python3,python3-venv,sudo,procps
SUITE=bookworm
CLONE=/srv/artifact                 # where the clone lives inside the root
MARK=.mysqlbench-fresh-debian       # in a kept root: bootstrapped and configured
# Carried into the root when set on the host: CA bundles, package-client settings, proxies.
CARRY_RE='^([A-Z0-9_]*(CERT|CA_BUNDLE|CAINFO|_CA_)[A-Z0-9_]*|PIP_[A-Z0-9_]+|NPM_CONFIG_[A-Za-z0-9_]+|npm_config_[A-Za-z0-9_]+|MAVEN_OPTS|MAVEN_ARGS|JAVA_TOOL_OPTIONS|(HTTP|HTTPS|FTP|ALL|NO)_PROXY|(http|https|ftp|all|no)_proxy)$'

usage() {
  cat <<EOF
usage: scripts/check-fresh-debian.sh [--workdir DIR] [--keep] [--] [PYTEST ARGS...]

Runs \`./artifact test [PYTEST ARGS]\` with CI=true in a fresh Debian 12 root,
from a clone of this repository's current HEAD (committed work only), and exits
with its status. Needs root and mmdebstrap (apt-get install -y mmdebstrap).

  1. mmdebstrap --variant=minbase --include=$INCLUDE $SUITE ROOT
     (ROOT under the work directory; its python3 is Debian's 3.11.2)
  2. carries in what this host uses to reach the package registries, and nothing
     else: its apt sources, apt.conf(.d), auth.conf(.d) and keys (no preferences),
     /etc/resolv.conf and /etc/hosts, pip.conf, npmrc, ~/.npmrc,
     ~/.m2/settings.xml, the extra CA certificates under
     /usr/local/share/ca-certificates (then update-ca-certificates inside),
     and the CA / pip / npm / proxy environment variables that are set;
     a policy-rc.d keeps package scripts from starting services
  3. mounts ROOT onto itself, then /proc, /sys (recursively: the cgroup
     hierarchies come along), /dev (with /dev/pts), a tmpfs on /run
  4. git clone of HEAD into ROOT$CLONE, \`./artifact setup\`, the venv's
     Python version, then \`./artifact test\`; prints the test run's closing
     line and the wall times of mmdebstrap, setup and tests
On exit, failure or Ctrl-C: the dockerd the tests may have started inside is
stopped (scripts/dockerd.sh stop), then the labelled servers/sysbench
(MYSQLBENCH_LABEL), then any other process whose root is ROOT; every mount
under ROOT is unmounted, deepest first, and ROOT is removed (unless --keep).
A root left behind by a killed run is cleaned up by the next run.

options:
  --workdir DIR  work directory (default \$MYSQLBENCH_FRESH_WORKDIR, else
                 /var/tmp/mysqlbench-fresh-debian; ~1.5 GB after setup); the full
                 output goes to DIR/setup.log and DIR/test.log
  --keep         keep the root in DIR/root and reuse it next time (the packages
                 setup installed stay; the clone is made anew); without it every
                 run bootstraps a new root and removes it at the end (a kept
                 root is left alone; drop it with rm -rf --one-file-system DIR/root)
  -h, --help     this text
Arguments after -- (or from the first one that is not an option) go to pytest:
  scripts/check-fresh-debian.sh -- -x -q tests/unit/test_config.py -k "not docker"
EOF
}

die() { echo "$PROG: $1" >&2; exit "${2:-1}"; }
say() { echo "$PROG: $*" >&2; }

# -- arguments ------------------------------------------------------------------
WORKDIR=${MYSQLBENCH_FRESH_WORKDIR:-/var/tmp/mysqlbench-fresh-debian}
KEEP=0
PYTEST_ARGS=()
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --keep) KEEP=1; shift ;;
    --workdir) (($# >= 2)) || die "--workdir needs a directory" 64; WORKDIR=$2; shift 2 ;;
    --workdir=*) WORKDIR=${1#*=}; shift ;;
    --) shift; PYTEST_ARGS=("$@"); break ;;
    -*) die "unknown option $1; pytest arguments go after --, see --help" 64 ;;
    *) PYTEST_ARGS=("$@"); break ;;
  esac
done

[ "$(id -u)" -eq 0 ] || die "must run as root (mmdebstrap, chroot and mounts need it); run it with sudo" 3
command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap is not installed; apt-get install -y mmdebstrap" 2
for tool in git chroot mount umount flock readlink setsid; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed" 2
done
REPO=$(git -C "$HERE/.." rev-parse --show-toplevel 2>/dev/null) || die "$HERE/.. is not a git clone" 2
SHA=$(git -C "$REPO" rev-parse HEAD)
if [ -z "$WORKDIR" ] || [[ "$WORKDIR" == *[[:space:]]* ]]; then die "--workdir: give a path without spaces" 64; fi
mkdir -p "$WORKDIR"
WORKDIR=$(readlink -f "$WORKDIR")
[ "$WORKDIR" != / ] || die "--workdir: not /" 64
LABEL=$(sed -n 's/^LABEL = "\(.*\)"$/\1/p' "$REPO/workflow/harness/measure/procs.py" 2>/dev/null)
LABEL=${LABEL:-mysql-engines-artifact}   # harness.measure.procs.LABEL

# -- time -----------------------------------------------------------------------
now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }
secs_since() { local d=$(( ($(now_us) - $1) / 100000 )); echo "$((d / 10)).$((d % 10)) s"; }

# -- processes started inside a root --------------------------------------------
pids_in_root() {
  # Every process whose root directory is ROOT or below it (a container of the
  # root's dockerd); ROOT is ours alone (the lock), so all of them are ours.
  local root=$1 p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    if [ "$r" = "$root" ] || [[ "$r" == "$root"/* ]]; then echo "${p#/proc/}"; fi
  done
}

labelled() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep -qxF "MYSQLBENCH_LABEL=$LABEL"; }

describe() { echo "$1 ($(cat "/proc/$1/comm" 2>/dev/null || echo gone))"; }

terminate() {
  # SIGTERM, up to 15 s, then SIGKILL: the given pids only.
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  local p left _
  for _ in $(seq 1 75); do
    left=()
    for p in "$@"; do [ -e "/proc/$p" ] && left+=("$p"); done
    ((${#left[@]})) || return 0
    sleep 0.2
  done
  say "still running 15 s after SIGTERM, killed: ${left[*]}"
  kill -KILL "${left[@]}" 2>/dev/null || true
  sleep 0.5
}

root_env() {
  # The environment of every command run inside: a stock root's PATH, plus what
  # the host uses to reach the registries.
  local v
  ROOT_ENV=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
            LANG=C.UTF-8 TERM="${TERM:-dumb}" CI=true)
  for v in $(compgen -e); do
    [[ "$v" =~ $CARRY_RE ]] && ROOT_ENV+=("$v=${!v}")
  done
  return 0
}
root_env

in_root() { local root=$1; shift; chroot "$root" /usr/bin/env -i "${ROOT_ENV[@]}" "$@"; }

stop_inside() {
  # Stop what was started inside $1: the tests' dockerd (with its containers) the
  # project's way, then labelled servers/sysbench, then anything else left.
  local root=$1 pids=() p
  # (/var/run is a link to /run: look at the root's /run, not the host's)
  if [ -e "$root/proc/self" ] && [ -f "$root$CLONE/scripts/dockerd.sh" ] \
     && [ -s "$root/run/mysqlbench-dockerd/dockerd.pid" ]; then
    local cids
    cids=$(in_root "$root" timeout 30 docker ps -aq 2>/dev/null || true)
    if [ -n "$cids" ]; then
      say "removing the containers of the root's dockerd: ${cids//$'\n'/ }"
      # shellcheck disable=SC2086
      in_root "$root" timeout 120 docker rm -f $cids >/dev/null 2>&1 || true
    fi
    in_root "$root" bash "$CLONE/scripts/dockerd.sh" stop >&2 || true
  fi
  for p in $(pids_in_root "$root"); do labelled "$p" && pids+=("$p"); done
  if ((${#pids[@]})); then
    say "stopping labelled processes: $(for p in "${pids[@]}"; do describe "$p"; done | paste -sd' ')"
    terminate "${pids[@]}"
  fi
  mapfile -t pids < <(pids_in_root "$root")
  if ((${#pids[@]})); then
    say "stopping other processes of the root: $(for p in "${pids[@]}"; do describe "$p"; done | paste -sd' ')"
    terminate "${pids[@]}"
  fi
}

# -- mounts ---------------------------------------------------------------------
mounts_under() {
  # Mount points at $1 or below, in /proc/self/mountinfo order (parents first).
  awk -v r="$1" '{ m = $5; gsub(/\\040/, " ", m); if (m == r || index(m, r "/") == 1) print m }' \
    /proc/self/mountinfo
}

unmount_all() {
  # Deepest (latest) first; a busy one is retried, then detached lazily.
  local root=$1 m _
  for _ in $(seq 1 500); do
    m=$(mounts_under "$root" | tail -n 1)
    [ -n "$m" ] || return 0
    umount "$m" 2>/dev/null && continue
    sleep 1
    umount "$m" 2>/dev/null && continue
    say "$m is busy; detaching it (umount -l)"
    umount -l "$m" || { say "cannot unmount $m"; return 1; }
  done
  return 1
}

mount_root() {
  # The root on itself first (dockerd inside remounts / and fails on a plain
  # directory), private so nothing done inside propagates back to the host;
  # the recursive binds are slaves for the same reason (unmounting them must
  # never unmount the host's /sys/fs/cgroup/* or /dev/pts).
  mount --bind "$ROOT" "$ROOT"
  mount --make-private "$ROOT"
  mount -t proc proc "$ROOT/proc"
  mount --rbind /sys "$ROOT/sys"
  mount --make-rslave "$ROOT/sys"
  mount --rbind /dev "$ROOT/dev"
  mount --make-rslave "$ROOT/dev"
  mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$ROOT/run"
}

clean_root() {
  # Stop, unmount, and remove $1 unless told to keep it; never removes through a mount.
  local root=$1 keep=$2 n left
  [ -d "$root" ] || return 0
  stop_inside "$root"
  n=$(mounts_under "$root" | wc -l)
  unmount_all "$root" || true
  if [ -n "$(mounts_under "$root")" ]; then
    say "mounts left under $root, not removing it: $(mounts_under "$root" | paste -sd' ')"
    return 1
  fi
  left=$(pids_in_root "$root")
  [ -z "$left" ] || { say "processes left in $root: $left"; return 1; }
  if [ "$keep" = 0 ]; then
    rm -rf --one-file-system "$root"
    say "cleaned up: $n mounts unmounted, no process left, $root removed"
  elif ((n)); then
    say "cleaned up: $n mounts unmounted, no process left, $root kept"
  fi
}

# -- one run at a time per work directory; clean up after a killed run ------------
exec 9>"$WORKDIR/.lock"
flock -n 9 || die "another check is running in $WORKDIR (it holds $WORKDIR/.lock)" 4
for old in "$WORKDIR"/root.*; do
  [ -d "$old" ] || continue
  say "cleaning up $old, left by an earlier run"
  clean_root "$old" 0 || die "could not clean up $old; see above"
done
if [ -d "$WORKDIR/root" ]; then
  # a kept root: nothing may run or stay mounted in it; reused only with --keep
  clean_root "$WORKDIR/root" 1 || die "could not clean up $WORKDIR/root; see above"
  if [ "$KEEP" = 1 ] && [ ! -e "$WORKDIR/root/$MARK" ]; then
    say "$WORKDIR/root is incomplete; bootstrapping anew"
    rm -rf --one-file-system "$WORKDIR/root"
  fi
fi

if [ "$KEEP" = 1 ]; then
  ROOT=$WORKDIR/root
  mkdir -p "$ROOT"
else
  ROOT=$(mktemp -d "$WORKDIR/root.XXXXXX")
fi
chmod 755 "$ROOT"

CHILD=""
SIGNAL=""
# shellcheck disable=SC2317  # (run by the EXIT trap)
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  set +e
  if [ -n "$CHILD" ] && kill -0 "$CHILD" 2>/dev/null; then
    # What a Ctrl-C does to a foreground job: SIGINT to its process group, so
    # pytest (or apt, pip) stops the way it handles that, reaping its own servers.
    say "${SIGNAL:-stopping}: SIGINT to the run inside; waiting up to 60 s for it to stop"
    kill -INT -- "-$CHILD" 2>/dev/null
    local _
    for _ in $(seq 1 300); do kill -0 "$CHILD" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$CHILD" 2>/dev/null && kill -TERM -- "-$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
  fi
  if ! clean_root "$ROOT" "$KEEP"; then
    say "cleanup incomplete (see above)"
    ((rc)) || rc=1
  fi
  [ -z "${TAIL:-}" ] || kill "$TAIL" 2>/dev/null
  exit "$rc"
}
trap cleanup EXIT
trap 'SIGNAL=INT; exit 130' INT
trap 'SIGNAL=TERM; exit 143' TERM
trap 'SIGNAL=HUP; exit 129' HUP

run_logged() {
  # Run a command inside the root in the background (so a signal to this script
  # is handled at once) and in its own process group (which cleanup() signals),
  # its output to LOG and to the terminal; its status. (setsid does not fork
  # here: the subshell is not a group leader, so $! is the command's pid.)
  local log=$1; shift
  : >"$log"
  # (fd 9, the lock, is not inherited: a run left behind by a killed check must
  # not keep the next check from cleaning it up)
  ( trap - INT QUIT; exec setsid chroot "$ROOT" /usr/bin/env -i "${ROOT_ENV[@]}" "$@" ) \
    </dev/null >>"$log" 2>&1 9>&- &
  CHILD=$!
  tail -n +1 -f --pid="$CHILD" "$log" 9>&- &
  TAIL=$!
  local rc=0
  wait "$CHILD" || rc=$?
  CHILD=""
  wait "$TAIL" 2>/dev/null || true
  TAIL=""
  return "$rc"
}

# -- 1. bootstrap ---------------------------------------------------------------
host_is_bookworm() { grep -qx 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null && grep -qx 'ID=debian' /etc/os-release; }

host_sources() {
  # The host's active apt source files (those with an entry in them).
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && grep -qE '^[[:space:]]*(deb|Types:)' "$f" && echo "$f"
  done
  return 0
}

carry() {
  # carry SRC [DEST]: copy a host file (following links) to the same path, or DEST, inside.
  local src=$1 dest=${2:-$1}
  [ -e "$src" ] || return 0
  mkdir -p "$ROOT$(dirname "$dest")"
  cp -L --preserve=mode,timestamps "$src" "$ROOT$dest"
}

T_BOOT="reused (--keep)"
if [ ! -e "$ROOT/$MARK" ]; then
  aptopt=$WORKDIR/apt-acquire.conf
  {
    # the host's download settings (proxy, CA, validity checks), not its hooks
    apt-config dump --no-empty Acquire | grep -v -e '^Acquire::IndexTargets' -e '^Acquire::Changelogs'
    if [ -s /etc/apt/auth.conf ] || [ -n "$(ls -A /etc/apt/auth.conf.d 2>/dev/null)" ]; then
      echo 'Dir::Etc::netrc "/etc/apt/auth.conf";'
      echo 'Dir::Etc::netrcparts "/etc/apt/auth.conf.d";'
    fi
  } >"$aptopt"
  mirrors=()
  if host_is_bookworm; then
    mapfile -t mirrors < <(host_sources)
  else
    say "the host is not Debian $SUITE: using mmdebstrap's default mirrors"
  fi
  say "mmdebstrap --variant=minbase --include=$INCLUDE $SUITE $ROOT ${mirrors[*]}"
  t0=$(now_us)
  mmdebstrap --variant=minbase --include="$INCLUDE" --aptopt="$aptopt" "$SUITE" "$ROOT" "${mirrors[@]}"
  T_BOOT=$(secs_since "$t0")
  rm -f "$aptopt"

  # -- 2. what the host uses to reach the registries ----------------------------
  if host_is_bookworm; then
    rm -f "$ROOT/etc/apt/sources.list" "$ROOT"/etc/apt/sources.list.d/* "$ROOT/etc/apt/apt.conf.d/99mmdebstrap"
    for f in $(host_sources) /etc/apt/apt.conf /etc/apt/apt.conf.d/* /etc/apt/auth.conf \
             /etc/apt/auth.conf.d/* /etc/apt/trusted.gpg /etc/apt/trusted.gpg.d/* /etc/apt/keyrings/*; do
      carry "$f"
    done
  fi
  carry /etc/resolv.conf
  carry /etc/hosts
  for f in /etc/pip.conf /etc/xdg/pip/pip.conf /etc/npmrc /usr/etc/npmrc; do carry "$f"; done
  for f in .npmrc .m2/settings.xml .pip/pip.conf .config/pip/pip.conf; do carry "$HOME/$f" "/root/$f"; done
  [ ! -e "$ROOT/root/.npmrc" ] || chmod 600 "$ROOT/root/.npmrc"
  if [ -d /usr/local/share/ca-certificates ]; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp -a /usr/local/share/ca-certificates/. "$ROOT/usr/local/share/ca-certificates/"
    out=$(in_root "$ROOT" /usr/sbin/update-ca-certificates 2>&1) \
      || die "update-ca-certificates failed in the root: $(tail -n 1 <<<"$out")"
  fi
  for kv in "${ROOT_ENV[@]}"; do
    # a CA bundle named by a variable but not made by update-ca-certificates
    v=${kv#*=}
    if [[ "$v" == /* ]] && [ -f "$v" ] && [ ! -e "$ROOT$v" ]; then carry "$v"; fi
  done
  printf '#!/bin/sh\n# no services started by package scripts in this chroot\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
  chmod 755 "$ROOT/usr/sbin/policy-rc.d"
  touch "$ROOT/$MARK"
fi

# A variable naming a local path the root lacks (a host-only wheel directory,
# say) is not carried: a fresh machine would not have it either.
kept=()
for kv in "${ROOT_ENV[@]}"; do
  v=${kv#*=}
  if [[ "$v" == /* && "$v" != *:* ]] && [ ! -e "$ROOT$v" ]; then
    say "not carried: ${kv%%=*} ($v is not in the root)"
    continue
  fi
  kept+=("$kv")
done
ROOT_ENV=("${kept[@]}")

# -- 3. mounts, 4. clone --------------------------------------------------------
mount_root
rm -rf --one-file-system "$ROOT$CLONE"
mkdir -p "$(dirname "$ROOT$CLONE")"
git -c safe.directory='*' clone -q --no-local "$REPO" "$ROOT$CLONE"
[ "$(git -C "$ROOT$CLONE" rev-parse HEAD)" = "$SHA" ] || git -C "$ROOT$CLONE" checkout -q --detach "$SHA"
say "cloned $SHA into $ROOT$CLONE"
[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] \
  || say "note: $REPO has uncommitted changes; only committed work is checked"

say "./artifact setup (log $WORKDIR/setup.log)"
t0=$(now_us)
run_logged "$WORKDIR/setup.log" /bin/bash -c "cd $CLONE && exec ./artifact setup" \
  || die "./artifact setup failed in the fresh root (exit $?); see $WORKDIR/setup.log"
T_SETUP=$(secs_since "$t0")
say "python: /usr/bin/python3 $(in_root "$ROOT" /usr/bin/python3 --version), .venv/bin/python $(in_root "$ROOT" "$CLONE/.venv/bin/python" --version)"

say "CI=true ./artifact test ${PYTEST_ARGS[*]} (log $WORKDIR/test.log)"
t0=$(now_us)
rc=0
run_logged "$WORKDIR/test.log" /bin/bash -c "cd $CLONE && exec ./artifact test \"\$@\"" artifact "${PYTEST_ARGS[@]}" || rc=$?
T_TEST=$(secs_since "$t0")
closing=$(grep -E '(passed|failed|errors?|skipped|deselected|no tests ran).* in [0-9.]+s' "$WORKDIR/test.log" | tail -n 1 || true)
[ -n "$closing" ] || closing=$(grep -v '^[[:space:]]*$' "$WORKDIR/test.log" | tail -n 1 || true)
echo "$PROG: closing line: $closing"
echo "$PROG: wall time: mmdebstrap $T_BOOT, setup $T_SETUP, tests $T_TEST; exit $rc"
exit "$rc"
