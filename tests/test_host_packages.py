"""The host libraries the lock's Debian-packaged builds load (harness.builds.debian.
host_packages), from the real apt-cache of this host: what scripts/setup.sh installs,
since those builds are extracted, never installed (their Depends: are not pulled in)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import ROOT

from harness.builds import debian
from harness.builds.lock import load_lock
from harness.plan import config

pytestmark = pytest.mark.skipif(shutil.which("apt-cache") is None, reason="needs apt-cache (Debian/Ubuntu)")


def _offered(package: str, version: str) -> bool:
    return version in debian.offered_versions(package)


def test_mariadb_10_11_needs_liburing2_and_setup_installed_it():
    lock = load_lock(config.LOCK)
    entry = lock["mariadb-10.11"]
    if not _offered(entry["package"], str(entry["package_version"])):
        pytest.skip("this host's archive no longer offers the pinned MariaDB 10.11")
    got = debian.host_packages({"mariadb-10.11": entry})
    assert "liburing2" in got and "libaio1" in got, got
    assert not set(got) & set(debian.packages_of(entry))  # what the build extracts itself
    assert all(n.startswith("lib") and not n.endswith("-perl") for n in got), got
    # scripts/setup.sh (the test command's first step) installed every one of them
    out = subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "harness", "host-packages"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "", out


def test_only_debian_builds_count_and_a_version_not_offered_gives_nothing():
    lock = load_lock(config.LOCK)
    others = {k: v for k, v in lock.items() if isinstance(v, dict) and v.get("provider") != "debian"}
    assert others and debian.host_packages(others) == []
    gone = {**lock["mariadb-10.11"], "package_version": "1:0.0.1-not-offered"}
    assert debian.host_packages({"x": gone}) == []
