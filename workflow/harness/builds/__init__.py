"""Pinned server builds: fetch with an ordinary package client, verify, bootstrap.

The lock (config/builds.lock.yaml) is the only source of truth for what a
build is: a mismatch of any checksum is an error that names the file and
both hashes, raised before any server starts.

The package, lowest module first (each imports only those above it):
  lock       BuildError, load_lock, the checksums (sha256_file, sri_sha512,
             verify_artifact), pin_lock (a hash written into the lock on first download),
             official_pair (the packaged build and its official release, compared)
  nixstore   the settings of every `nix` call, nix_works, the checks of a store path
             (verify_store_path) and of an installed build (verify_installed)
  nix        the Nix provider (fetch_nix, choose_provider, provider_for, provenance)
             and nix/builds.json, the lock's pins for flake.nix
             (`python -m harness nix-pins {write,check,pin --name B}`)
  debian     the debian provider's .deb files: apt-get download (or a local directory,
             ARTIFACT_DEB_DIR), checked, dpkg-deb -x; never an install on the host
  providers  the direct providers npm, maven, debian, tarball: `fetch`

The public names are re-exported here: `from harness import builds; builds.fetch(...)`.
A build's empty system datadir (`bootstrap`), `mysqld --verbose --help` and the
official-binary check run a server: they are harness.measure.initdb's (a stage above).
"""
from __future__ import annotations

from harness.builds.lock import (REQUIRED, BuildError, default_lock, load_lock, mysqld_path,
                                 official_pair, pin_lock, sha256_file, sri_sha512, verify_artifact)
from harness.builds.nixstore import (NIX_SETTINGS, check_libraries, in_store, nix_env, nix_path_info,
                                     nix_works, store_dir, verify_installed, verify_store_path)
from harness.builds.nix import (BUILD_PROVIDERS, FLAKE_FILES, choose_provider, fetch_nix, flake_copy,
                                nix_build, nix_unpack_hash, provenance, provider_for)
from harness.builds.debian import DEB_DIR_VAR
from harness.builds.providers import PROVIDERS, fetch

__all__ = [
    "REQUIRED", "BuildError", "default_lock", "load_lock", "mysqld_path", "official_pair", "pin_lock", "sha256_file",
    "sri_sha512", "verify_artifact",
    "NIX_SETTINGS", "check_libraries", "in_store", "nix_env", "nix_path_info", "nix_works", "store_dir", "verify_installed",
    "verify_store_path",
    "BUILD_PROVIDERS", "FLAKE_FILES", "choose_provider", "fetch_nix", "flake_copy", "nix_build",
    "nix_unpack_hash", "provenance", "provider_for",
    "DEB_DIR_VAR", "PROVIDERS", "fetch",
]
