#!/usr/bin/env bash
# The runtime image of the docker backend: Debian bookworm + the libraries in
# docker/packages.txt, nothing else (no server build, no sysbench).
#
#   docker/build-image.sh [ensure]       print the image's tag, building it first if missing
#   docker/build-image.sh build          build it even if present (same tag if nothing changed)
#   docker/build-image.sh lookup         print the tag if the image is present, else exit 3
#   docker/build-image.sh recipe         print the recipe hash (needs no engine)
#
# Options (after the command):
#   --dockerfile   build with `docker build` from docker/Dockerfile (needs a reachable
#                  image registry for debian:bookworm-slim) instead of the default
#   --offline      (default) mmdebstrap --variant=minbase from the Debian archive this
#                  host's apt is configured with, then `docker import`: no image registry
#
# The Debian archive (and its security archive) are taken from this host's apt
# configuration (`apt-get indextargets`: the sources apt already uses, with its
# proxy settings); no mirror host is written in this repository. Set
# MYSQLBENCH_DEBIAN_MIRROR (and MYSQLBENCH_DEBIAN_SECURITY) to a Debian archive URL
# on a host whose apt has none (e.g. Ubuntu).
#
# Two tags name one image:
#   mysqlbench/runtime:recipe-<sha256 of suite + variant + package list>  what is asked for;
#       the harness looks the image up by this tag, so an image is reused when present
#   mysqlbench/runtime:<sha256 of the rootfs' sorted file list + installed package=version list>
#       what was built; printed, and recorded by the harness (Server.image) in manifests
# Progress goes to stderr; stdout is only the content tag.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=mysqlbench/runtime
SUITE=bookworm
VARIANT=minbase
DOCKER=${MYSQLBENCH_DOCKER:-$(command -v docker || echo /usr/bin/docker)}
MIRROR=${MYSQLBENCH_DEBIAN_MIRROR:-}
SECURITY=${MYSQLBENCH_DEBIAN_SECURITY:-}
LOCK=${MYSQLBENCH_IMAGE_LOCK:-/tmp/mysqlbench-build-image.lock}
# The engine: $DOCKER_HOST, else the pipeline's own (scripts/dockerd.sh) when it answers,
# else the CLI's default; as harness.measure.docker chooses.
OWN_SOCK=${MYSQLBENCH_DOCKERD_DIR:-/run/mysqlbench-dockerd}/docker.sock
if [ -z "${DOCKER_HOST:-}" ] && [ -S "$OWN_SOCK" ] \
   && timeout 10 "$DOCKER" -H "unix://$OWN_SOCK" version >/dev/null 2>&1; then
  export DOCKER_HOST="unix://$OWN_SOCK"
fi

log() { echo "build-image: $*" >&2; }
die() { echo "build-image: $*" >&2; exit "${2:-1}"; }

# Slimmer than plain minbase (every container start copies the rootfs under the
# vfs storage driver): merged /usr without the usrmerge package (which pulls in
# perl), and no man pages, docs or translations. ~85 MB instead of ~170 MB.
MMDEBSTRAP_OPTS=(
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  "--dpkgopt=path-exclude=/usr/share/man/*"
  "--dpkgopt=path-exclude=/usr/share/doc/*"
  "--dpkgopt=path-include=/usr/share/doc/*/copyright"
  "--dpkgopt=path-exclude=/usr/share/locale/*"
  "--dpkgopt=path-exclude=/usr/share/info/*"
)

packages() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "$HERE/packages.txt" | grep -v '^$' | LC_ALL=C sort -u; }

recipe() {
  { echo "suite=$SUITE"; echo "variant=$VARIANT"; printf 'opt=%s\n' "${MMDEBSTRAP_OPTS[@]}"; packages; } \
    | sha256sum | cut -d' ' -f1
}

recipe_tag() { echo "$REPO:recipe-$(recipe)"; }

content_tag_of() {
  # The content tag that names the same image as the recipe tag (empty if none).
  "$DOCKER" image inspect --format '{{range .RepoTags}}{{println .}}{{end}}' "$1" 2>/dev/null \
    | grep -E "^$REPO:[0-9a-f]{64}\$" | head -1 || true
}

lookup() {
  local rt ct
  rt=$(recipe_tag)
  "$DOCKER" image inspect "$rt" >/dev/null 2>&1 || return 3
  ct=$(content_tag_of "$rt")
  [ -n "$ct" ] || return 3
  echo "$ct"
}

content_hash() {
  # $1: sorted file list, $2: sorted package=version list
  cat "$1" "$2" | sha256sum | cut -d' ' -f1
}

host_archives() {
  # "<repo uri>|<release>|<label>" of every Packages index this host's apt is configured with
  command -v apt-get >/dev/null 2>&1 || return 0
  apt-get indextargets --format '$(REPO_URI)|$(RELEASE)|$(LABEL)' 'Identifier: Packages' 2>/dev/null \
    | LC_ALL=C sort -u || true
}

host_mirrors() {
  # Fill MIRROR / SECURITY from the host's apt sources unless given: the Debian archive
  # (label Debian, or a release named $SUITE / $SUITE-updates when the lists were never
  # downloaded) and the security archive (label Debian-Security, or $SUITE-security).
  local list
  list=$(host_archives)
  if [ -z "$MIRROR" ]; then
    MIRROR=$(awk -F'|' -v s="$SUITE" '$3 == "Debian" || (($3 == "") && ($2 == s || $2 == s "-updates")) {print $1; exit}' <<<"$list")
  fi
  if [ -z "$SECURITY" ]; then
    SECURITY=$(awk -F'|' -v s="$SUITE" '$3 == "Debian-Security" || (($3 == "") && $2 == s "-security") {print $1; exit}' <<<"$list")
  fi
  [ -n "$MIRROR" ] || die "this host's apt configuration has no Debian archive to build the image from (apt-get indextargets lists none); set MYSQLBENCH_DEBIAN_MIRROR=<a Debian archive URL>, or build with --dockerfile" 5
}

apt_proxy_opts() {
  # The host apt's proxy settings, for mmdebstrap's apt (which does not read the host's apt.conf)
  command -v apt-config >/dev/null 2>&1 || return 0
  apt-config dump 2>/dev/null | grep -E '^Acquire::(https?|ftp)::Proxy(::[^ ]*)? "' \
    | sed -e 's/^/--aptopt=/' || true
}

build_offline() {
  command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap is not installed; apt-get install -y mmdebstrap" 2
  host_mirrors
  local work include
  work=$(mktemp -d /tmp/mysqlbench-image.XXXXXX)
  trap 'rm -rf "$work"' RETURN
  include=$(packages | paste -sd, -)
  # Debian's archive key, also on Ubuntu hosts (package debian-archive-keyring)
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg signed=""
  [ -r "$keyring" ] && signed="[signed-by=$keyring]"
  local sources=("deb $signed $MIRROR $SUITE main" "deb $signed $MIRROR $SUITE-updates main")
  [ -n "$SECURITY" ] && sources+=("deb $signed $SECURITY $SUITE-security main")
  local proxy=()
  mapfile -t proxy < <(apt_proxy_opts)
  log "mmdebstrap --variant=$VARIANT --include=$include $SUITE (from the host's apt sources: $MIRROR${SECURITY:+ and $SECURITY})"
  mmdebstrap --quiet --variant="$VARIANT" --include="$include" "${MMDEBSTRAP_OPTS[@]}" "${proxy[@]}" \
    "$SUITE" "$work/rootfs.tar" "${sources[@]}" \
    >&2 || die "mmdebstrap failed (is the host's Debian archive $MIRROR reachable? set MYSQLBENCH_DEBIAN_MIRROR)"
  # installed packages, from the rootfs' own dpkg database
  tar -xOf "$work/rootfs.tar" ./var/lib/dpkg/status \
    | awk '/^Package: /{p=$2} /^Version: /{print p "=" $2}' | LC_ALL=C sort > "$work/pkgs"
  tar -tf "$work/rootfs.tar" | LC_ALL=C sort > "$work/files"
  local ct="$REPO:$(content_hash "$work/files" "$work/pkgs")"
  local old
  old=$("$DOCKER" image inspect --format '{{.Id}}' "$(recipe_tag)" 2>/dev/null || true)
  log "docker import ($(du -h "$work/rootfs.tar" | cut -f1)) as $ct"
  "$DOCKER" import \
    --change "LABEL mysqlbench.artifact=mysql-engines-artifact" \
    --change "LABEL mysqlbench.recipe=$(recipe)" \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "$work/rootfs.tar" "$ct" >/dev/null
  "$DOCKER" tag "$ct" "$(recipe_tag)"
  drop_untagged "$old"
  echo "$ct"
}

drop_untagged() {
  # A rebuild moves the tags; the image they named before goes unless still in use.
  local old=$1
  [ -n "$old" ] || return 0
  if [ -z "$("$DOCKER" image inspect --format '{{join .RepoTags ""}}' "$old" 2>/dev/null)" ]; then
    "$DOCKER" rmi "$old" >/dev/null 2>&1 || true
  fi
}

build_dockerfile() {
  local work cid tmptag="$REPO:build-$$"
  work=$(mktemp -d /tmp/mysqlbench-image.XXXXXX)
  trap 'rm -rf "$work"; [ -n "${cid:-}" ] && "$DOCKER" rm -f "$cid" >/dev/null 2>&1; true' RETURN
  # The build's apt-get runs in the host's network namespace (as apt on the host
  # would): no bridge, no NAT, nothing sent to a private range.
  log "docker build --network host -f docker/Dockerfile (needs debian:$SUITE-slim from a registry)"
  "$DOCKER" build --network host -t "$tmptag" "$HERE" >&2 || die "docker build failed"
  cid=$("$DOCKER" create --network none "$tmptag" true)
  "$DOCKER" export "$cid" | tar -t | sed -e 's#^\./##' -e 's#^#./#' | LC_ALL=C sort > "$work/files"
  "$DOCKER" run --rm --network none "$tmptag" dpkg-query -W -f='${Package}=${Version}\n' \
    | LC_ALL=C sort > "$work/pkgs"
  local ct="$REPO:$(content_hash "$work/files" "$work/pkgs")"
  local old
  old=$("$DOCKER" image inspect --format '{{.Id}}' "$(recipe_tag)" 2>/dev/null || true)
  "$DOCKER" tag "$tmptag" "$ct"
  "$DOCKER" tag "$tmptag" "$(recipe_tag)"
  "$DOCKER" rmi "$tmptag" >/dev/null
  drop_untagged "$old"
  log "built $ct"
  echo "$ct"
}

cmd=ensure
case "${1:-}" in ensure|build|lookup|recipe) cmd=$1; shift ;; esac
how=offline
for a in "$@"; do
  case "$a" in
    --dockerfile) how=dockerfile ;;
    --offline) how=offline ;;
    *) die "unknown argument $a; usage: $0 [ensure|build|lookup|recipe] [--offline|--dockerfile]" 64 ;;
  esac
done

case "$cmd" in
  recipe) recipe; exit 0 ;;
  lookup) lookup; exit ;;
esac

timeout 10 "$DOCKER" info >/dev/null 2>&1 || die "no Docker engine answers; start one with scripts/dockerd.sh" 4
# one build at a time on this host; the second waits and then finds the image
exec 9>"$LOCK"
flock -w 1800 9 || die "another image build holds $LOCK"
if [ "$cmd" = ensure ] && lookup; then
  exit 0
fi
"build_$how"
