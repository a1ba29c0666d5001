#!/usr/bin/env bash
# Remove what this project created, in tiers, and nothing else.
#
#   scripts/clean.sh runs   [--dry-run]   measured and derived outputs: data/raw, data/tidy,
#                                         data/work, data/order, data/partial, data/power, logs/,
#                                         paper/generated/,
#                                         figures/*.pdf, paper/main.pdf (+ its LaTeX by-products);
#                                         with $MYSQLBENCH_WORK, the work dirs of dead cells there
#   scripts/clean.sh images [--dry-run]   the Docker images the project built (label
#                                         mysqlbench.artifact, tags mysqlbench/*) and its stopped
#                                         containers; nothing when no engine answers
#   scripts/clean.sh all    [--dry-run]   runs + images + resources/ (builds, templates),
#                                         data/datasets, data/corpus, and the data root
#                                         of the Docker engine scripts/dockerd.sh started, if that
#                                         root lies in a directory the project made
#
# Called as ./artifact clean-runs | clean-images | clean-all. Refuses (exit 1) while a
# pipeline or harness runs in this repository. Never touches tracked files (data/README.md,
# figures/README.md, paper/main.tex, ...), .venv/, the Nix store or a shared Docker root.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd -P)
LABEL="mysqlbench.artifact=mysql-engines-artifact"
DOCKER=${MYSQLBENCH_DOCKER:-$(command -v docker || echo /usr/bin/docker)}
DOCKERD_STATE=${MYSQLBENCH_DOCKERD_DIR:-/var/run/mysqlbench-dockerd}
# the engine the harness uses: $DOCKER_HOST, else the pipeline's own (scripts/dockerd.sh), else the default
if [ -z "${DOCKER_HOST:-}" ] && [ -S "$DOCKERD_STATE/docker.sock" ]; then
  export DOCKER_HOST="unix://$DOCKERD_STATE/docker.sock"
fi

tier=${1:-}
dry=""
[ "${2:-}" = "--dry-run" ] && dry=1
say() { echo "clean-$tier: $*"; }
die() { echo "clean-$tier: $*" >&2; exit 1; }

running_here() {
  # pids of a Snakemake or `python -m harness` whose working directory is this repository
  local p cmd re='(^|/)snakemake( |$)'
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$REPO" ] || continue
    cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null || true)
    if [[ "$cmd" =~ $re || "$cmd" == *"-m harness "* ]]; then
      echo "${p#/proc/}"
    fi
  done
}

remove() {
  # remove each existing path given, saying what and how much
  local p size
  for p in "$@"; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    size=$(du -sh "$p" 2>/dev/null | cut -f1)
    if [ -n "$dry" ]; then
      say "would remove $p ($size)"
    else
      rm -rf -- "$p"
      say "removed $p ($size)"
    fi
  done
}

dead_work_dirs() {
  # work dirs (copied datadirs) under $MYSQLBENCH_WORK whose harness process is gone
  local d pid
  [ -n "${MYSQLBENCH_WORK:-}" ] && [ -d "$MYSQLBENCH_WORK" ] || return 0
  for d in "$MYSQLBENCH_WORK"/*/; do
    [ -f "$d/.owner-pid" ] || continue
    pid=$(head -c 20 "$d/.owner-pid" | tr -dc 0-9)
    [ -n "$pid" ] && [ -e "/proc/$pid" ] && continue
    echo "${d%/}"
  done
}

clean_runs() {
  shopt -s nullglob
  remove data/raw data/tidy data/work data/order data/partial data/power logs paper/generated figures/*.pdf paper/main.pdf \
         paper/main.aux paper/main.log paper/main.fls paper/main.fdb_latexmk paper/main.out \
         paper/main.bbl paper/main.blg
  local d
  while IFS= read -r d; do remove "$d"; done < <(dead_work_dirs)
}

engine_answers() {
  command -v "$DOCKER" >/dev/null 2>&1 || [ -x "$DOCKER" ] || return 1
  timeout 10 "$DOCKER" info >/dev/null 2>&1
}

clean_images() {
  if ! engine_answers; then
    say "no Docker engine answers ($DOCKER); no project images to remove"
    return 0
  fi
  local running stopped refs ids r
  running=$("$DOCKER" ps -q --filter "label=$LABEL")
  [ -z "$running" ] || die "project containers are running ($(echo $running)): a measurement is on; stop it first"
  stopped=$("$DOCKER" ps -aq --filter "label=$LABEL")
  for r in $stopped; do
    if [ -n "$dry" ]; then say "would remove container $r"; else "$DOCKER" rm "$r" >/dev/null; say "removed container $r"; fi
  done
  # by tag: our repository's tags, and the mysqlbench/* tags of images that carry our label
  refs=$({ "$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}' --filter 'reference=mysqlbench/*'
           "$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}' --filter "label=$LABEL"; } \
         | grep -E '^mysqlbench/[^:]+:[^<]' | sort -u || true)
  for r in $refs; do
    if [ -n "$dry" ]; then say "would remove image $r"; else "$DOCKER" image rm "$r" >/dev/null; say "removed image $r"; fi
  done
  # labelled images left without any tag (an interrupted build)
  ids=$("$DOCKER" image ls -q --filter "label=$LABEL" --filter dangling=true | sort -u)
  for r in $ids; do
    if [ -n "$dry" ]; then say "would remove untagged image $r"; else "$DOCKER" image rm "$r" >/dev/null; say "removed untagged image $r"; fi
  done
  [ -n "$refs$ids$stopped" ] || say "no project images or containers"
}

clean_docker_root() {
  # the engine scripts/dockerd.sh started (its pidfile), and its data root only if we made it
  local pid root
  pid=$(cat "$DOCKERD_STATE/dockerd.pid" 2>/dev/null || true)
  [[ "$pid" =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = dockerd ] || return 0
  root=$(timeout 10 "$DOCKER" info --format '{{.DockerRootDir}}' 2>/dev/null || true)
  case "$root" in
    "$REPO"/*|"$DOCKERD_STATE"/*)
      if [ -n "$dry" ]; then say "would stop the engine scripts/dockerd.sh started and remove $root"
      else bash scripts/dockerd.sh stop; remove "$root"; fi ;;
    *)
      say "the engine scripts/dockerd.sh started keeps its data in ${root:-an unknown place}, which is not" \
          "the project's alone: left alone (the project's images are removed above)" ;;
  esac
}

pids=$(running_here)
[ -z "$pids" ] || die "a pipeline or harness runs in this repository (pid $(echo $pids)); stop it first"

case "$tier" in
  runs) clean_runs ;;
  images) clean_images ;;
  all)
    clean_runs
    clean_images
    remove resources data/datasets data/corpus
    clean_docker_root
    say ".venv/ and the Nix store (if any) are kept: ./artifact setup made them, other clones may share them" ;;
  *) echo "usage: scripts/clean.sh {runs|images|all} [--dry-run]" >&2; exit 2 ;;
esac
