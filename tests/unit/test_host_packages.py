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
from harness import paths

pytestmark = pytest.mark.skipif(shutil.which("apt-cache") is None, reason="needs apt-cache (Debian/Ubuntu)")


def _offered(package: str, version: str) -> bool:
    return version in debian.offered_versions(package)


def test_mariadb_10_11_needs_liburing2_and_setup_installed_it():
    lock = load_lock(paths.LOCK)
    entry = lock["mariadb-10.11"]
    if not _offered(entry["package"], str(entry["package_version"])):
        pytest.skip("this host's archive no longer offers the pinned MariaDB 10.11")
    got, unresolved = debian.host_packages({"mariadb-10.11": entry})
    assert unresolved == [] and "liburing2" in got and "libaio1" in got, (got, unresolved)
    assert not set(got) & set(debian.packages_of(entry))  # what the build extracts itself
    # scripts/setup.sh (the test command's first step) installed every one of them
    out = subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "harness", "host-packages"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "", out


def test_only_debian_builds_count_and_a_version_not_offered_gives_nothing():
    lock = load_lock(paths.LOCK)
    others = {k: v for k, v in lock.items() if isinstance(v, dict) and v.get("provider") != "debian"}
    assert others and debian.host_packages(others) == ([], [])
    gone = {**lock["mariadb-10.11"], "package_version": "1:0.0.1-not-offered"}
    got, unresolved = debian.host_packages({"x": gone})
    assert got == [] and "mariadb-server-core=1:0.0.1-not-offered" in unresolved, unresolved


def test_a_version_not_offered_stops_setup_from_stamping(tmp_path):
    """`harness host-packages` exits 2 and names the version and the fix on stderr."""
    lock = load_lock(paths.LOCK)
    gone = {"mariadb-10.11": {**lock["mariadb-10.11"], "package_version": "1:0.0.1-not-offered"}}
    f = tmp_path / "lock.yaml"
    import yaml
    f.write_text(yaml.safe_dump({"builds": gone}))  # the lock's layout
    res = subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "harness", "host-packages", "--lock", str(f)],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2, res
    assert "1:0.0.1-not-offered" in res.stderr and "apt-get update" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_the_pinned_debs_in_deb_dir_are_read_without_the_package_lists(tmp_path):
    """With the pinned .deb files at hand (deb_dir), their own Depends count: the same
    libraries as apt-cache gives, even for a version the lists no longer hold."""
    lock = load_lock(paths.LOCK)
    entry = lock["mariadb-10.11"]
    version = str(entry["package_version"])
    if not _offered(entry["package"], version):
        pytest.skip("this host's archive no longer offers the pinned MariaDB 10.11")
    pkgs = debian.packages_of(entry)
    subprocess.run(["apt-get", "download", *(f"{p}={version}" for p in pkgs)], cwd=tmp_path,
                   capture_output=True, check=True)
    from_apt, _ = debian.host_packages({"m": entry})
    from_debs, unresolved = debian.host_packages({"m": {**entry, "deb_dir": str(tmp_path)}})
    assert unresolved == [] and from_debs == from_apt, (from_debs, from_apt)
