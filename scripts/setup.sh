#!/usr/bin/env bash
# Install everything the pipeline and the tests need, idempotently, on a
# Debian/Ubuntu machine: Debian packages (sysbench, R + ggplot2, TeX +
# latexmk, npm for the build fetch) and a Python venv (.venv) with the pinned
# Snakemake and the harness. A second run does nothing but check.
# `--plan`: only what `./artifact plan` needs (python3, the venv, hwloc's lstopo).
set -euo pipefail
cd "$(dirname "$0")/.."
scope=all
case "${1:-}" in
  "") ;;
  --plan) scope=plan ;;
  *) echo "setup: unknown argument '$1' (the only one is --plan)" >&2; exit 2 ;;
esac

PKGS=(sysbench r-base-core r-cran-ggplot2 r-cran-data.table
      texlive-latex-base texlive-latex-recommended texlive-fonts-recommended latexmk
      poppler-utils python3 python3-venv git ca-certificates procps util-linux
      postgresql)  # study C's stand-in: the libraries and the postgres user its pinned build (postgresql-15) needs on the host (its service and binaries are not used)
PKGS+=(slurm-wlm munge)  # tests/e2e/test_slurm_e2e.py's two-node cluster (started and stopped by the test)
PKGS+=(chromium)         # tests/unit/test_report_html.py opens report.html in a headless browser
PKGS+=(hwloc)            # lstopo: the CPU topology the core plan is made on (harness.measure.topology)
command -v npm >/dev/null 2>&1 || PKGS+=(npm)
# build providers, the Docker backend and the flake check; a host that already
# has Docker CE, Maven or Nix keeps its own
command -v mvn >/dev/null 2>&1 || PKGS+=(maven)
command -v dockerd >/dev/null 2>&1 || PKGS+=(docker.io)
command -v nix >/dev/null 2>&1 || PKGS+=(nix-bin)
PKGS+=(mmdebstrap debian-archive-keyring)
[ "$scope" = all ] || PKGS=(python3 python3-venv hwloc)

apt_updated=""
install_debs() {  # apt-get install "$@", as root or through sudo, no service started
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: $*" >&2; exit 1; }
    SUDO=sudo
  fi
  [ -n "$apt_updated" ] || { $SUDO apt-get update -qq; apt_updated=1; }  # once per setup
  # no package may start its service (PostgreSQL's cluster, Docker's engine): the
  # harness starts and reaps its own servers; a policy of our own only while installing
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy"
    trap '$SUDO rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  if [ -n "$policy" ]; then $SUDO rm -f "$policy"; trap - EXIT; fi
}

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  install_debs "${missing[@]}"
fi

# Debian's nix-bin as the build provider (a single-user store; harmless without nix)
[ "$scope" = plan ] || bash scripts/nix-setup.sh

# The venv is rebuilt only when pyproject.toml (the pins) changes.
stamp=.venv/.pyproject.sha256
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: creating .venv (Snakemake, harness, pytest)"
  /usr/bin/python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e .
  echo "$want" > "$stamp"
fi
# The lock's Debian-packaged builds (MariaDB 10.11, PostgreSQL 15) are extracted, never
# installed, so their servers load their libraries from the host: install those it lacks
# (e.g. liburing2), as apt-cache lists them for the pinned versions. Asked again only
# when the lock changes (the stamp: its sha256, once all were there).
stamp=.venv/.host-packages.sha256
want=$(sha256sum config/builds.lock.yaml | cut -d' ' -f1)
if [ "$scope" = all ] && [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # status 2: some pinned version's dependencies were not readable (said on stderr): install
  # what was found and leave the stamp unwritten, so the next setup asks again
  rc=0
  out=$(.venv/bin/python -m harness host-packages) || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || { echo "setup: harness host-packages failed ($rc)" >&2; exit 1; }
  read -r -a libs <<< "$out"
  if ((${#libs[@]})); then
    echo "setup: installing the libraries the pinned Debian builds load: ${libs[*]}"
    install_debs "${libs[@]}"
  fi
  [ "$rc" -ne 0 ] || echo "$want" > "$stamp"
fi
if [ "$scope" = plan ]; then echo "setup: ok for plan ($(.venv/bin/python --version), $(lstopo-no-graphics --version))"; exit 0; fi
echo "setup: ok ($(.venv/bin/snakemake --version | head -1 | sed 's/^/snakemake /'), $(sysbench --version), $(R --version | head -1))"
