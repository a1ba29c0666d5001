#!/usr/bin/env bash
# Make Debian's nix-bin usable as the build provider: a single-user Nix store
# (/nix owned by the user who runs the pipeline, no daemon, no nixbld users).
# Idempotent; called by scripts/setup.sh. Writes no Nix configuration: the
# harness passes its settings itself (NIX_CONFIG, harness/builds/nixstore.py
# NIX_SETTINGS), so the user's nix.conf is never edited.
#
# Without nix, or where a Nix daemon owns /nix (a multi-user install, whose
# builds are sandboxed and cannot run the host's npm/mvn/apt-get), it says so
# and leaves the builds to the direct package clients (build_provider: auto).
set -euo pipefail

if ! command -v nix >/dev/null 2>&1; then
  echo "nix-setup: nix is not installed; builds come from the package clients directly"
  exit 0
fi

user=$(id -un)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

if [ -S /nix/var/nix/daemon-socket/socket ]; then
  echo "nix-setup: a Nix daemon manages /nix (multi-user install): its sandboxed builds cannot" \
       "run the host's package clients; builds come from the package clients directly" >&2
  exit 0
fi

# The store's root: Nix makes /nix/store and /nix/var itself on first use, as long
# as it may write /nix. Created (or handed over) only when it holds no store yet.
if [ ! -d /nix ]; then
  $SUDO install -d -m 0755 -o "$user" /nix
elif [ ! -w /nix ]; then
  if [ -z "$(ls -A /nix 2>/dev/null)" ]; then
    $SUDO chown "$user" /nix
  else
    echo "nix-setup: /nix exists and is not writable by $user; builds come from the package" \
         "clients directly (or: sudo chown -R $user /nix)" >&2
    exit 0
  fi
fi

conf='experimental-features = nix-command flakes
flake-registry = /dev/null
substituters =
build-users-group =
sandbox = false'
if NIX_CONFIG="$conf" nix store ping >/dev/null 2>&1; then
  echo "nix-setup: ok ($(nix --version), single-user store /nix/store)"
else
  echo "nix-setup: nix store ping failed: $(NIX_CONFIG="$conf" nix store ping 2>&1 | tail -1)" >&2
  exit 1
fi
