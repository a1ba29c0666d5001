"""Adding a Debian-packaged build as docs/builds.md "Adding a build" says, beside the pinned one,
and fetching the pinned one after the archive moved on. Real apt, dpkg-deb, Nix and servers.

  - A second MariaDB 10.11 (whichever version this host's archive offers besides the
    pinned 1:10.11.19-0+deb12u1; skipped with the reason if none), from a lock entry with
    no hashes in a temporary copy of the lock: `fetch-build` pins mysqld_sha256 and every
    .deb, a second fetch verifies them, `nix-pins pin` pins its NAR hash, the Nix store
    holds both builds, one measured cell runs on each (the extracted `mariadbd` with its
    basedir and plugin dir inside the build), and `dpkg -l` is the same before and after.
  - The pinned version hidden from apt (APT_CONFIG: an empty sources list and lists dir):
    one line naming the build, the version, what the archive offers and the two ways out;
    with ARTIFACT_DEB_DIR holding the pinned files the build is fetched and verified, and a
    changed file there is refused with both hashes.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, cell_spec, flip_byte, harness_cmd, harness_env, run_settings, server_pids

from harness import builds
from harness.measure import initdb
from harness.builds import debian
from harness.measure import datasets
from harness import paths

pytestmark = pytest.mark.e2e

PINNED = "mariadb-10.11"
HAVE_DEB = all(shutil.which(c) for c in ("apt-get", "apt-cache", "dpkg-deb"))
needs_deb = pytest.mark.skipif(not HAVE_DEB, reason="apt-get, apt-cache and dpkg-deb are needed (Debian)")


def dpkg_l() -> str:
    return subprocess.run(["dpkg", "-l"], capture_output=True, text=True, check=True).stdout


def harness(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(harness_cmd(*args), capture_output=True, text=True, cwd=ROOT,
                          env={**harness_env(), **(env or {})}, timeout=3600)


def other_version(pinned: str) -> str | None:
    return next((v for v in debian.offered_versions("mariadb-server") if v != pinned), None)


def new_entry(pinned_entry: dict, version: str) -> dict:
    """A lock entry as a user writes it: coordinates, layout, engines; no hash at all."""
    keep = ("family", "provider", "package", "packages", "links", "mysqld", "lib_dir", "share_dir",
            "install_db", "store_exclude", "engines")
    upstream = version.split(":", 1)[-1].split("-")[0]
    return {"family": pinned_entry["family"], "provider": "debian", "version": upstream,
            "description": f"MariaDB {upstream} as packaged by Debian",
            "package_version": version, **{k: pinned_entry[k] for k in keep if k in pinned_entry}}


def add_entry(lock: Path, name: str, entry: dict) -> None:
    block = yaml.safe_dump({name: entry}, sort_keys=False, default_flow_style=None, width=200)
    lock.write_text(lock.read_text().rstrip("\n") + "\n\n" + "".join(f"  {l}\n" for l in block.splitlines()))


def flake_root(dest: Path) -> Path:
    dest.mkdir()
    for f in builds.FLAKE_FILES:
        src = ROOT / f
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / f)
    return dest


def one_cell(name: str, entry: dict, lock: Path, build_dir: Path, work: Path) -> dict:
    """Bootstrap, a 1000-row sbtest dataset and one 2 s point-select cell, as the pipeline runs them."""
    tpl, ds = work / f"tpl-{name}", work / f"ds-{name}"
    initdb.bootstrap(name, entry, build_dir, tpl)
    datasets.prepare("sbtest", "InnoDB_t1_n1000", name=name, entry=entry, build_dir=build_dir,
                     template=tpl, out=ds, settings=run_settings())
    out = work / "raw" / f"{name}_InnoDB_base_t1_c1_u2_r1"
    spec = json.dumps(cell_spec({"warmup_s": 1, "duration_s": 2}))
    res = harness("run-cell", "--cell", out.name, "--cell-spec", spec, "--lock", str(lock),
                  "--build-dir", str(build_dir), "--source", str(ds), "--out", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    m = json.loads((out / "manifest.json").read_text())
    assert m["result"]["qps"] > 0
    assert m["build"]["mysqld_sha256"] == entry["mysqld_sha256"]
    assert Path(m["build"]["basedir"]).resolve() == Path(build_dir).resolve()
    err = (out / "mysqld.err").read_text(errors="replace")
    assert entry["version"] in err  # the server that ran is this build's
    return m


@needs_deb
def test_a_second_debian_mariadb_is_pinned_stored_and_measured_beside_the_pinned_one(tmp_path):
    pinned = builds.load_lock(paths.LOCK)[PINNED]
    version = other_version(str(pinned["package_version"]))
    if version is None:
        pytest.skip(f"this host's apt archive offers no mariadb-server besides the pinned "
                    f"{pinned['package_version']} (apt-cache madison mariadb-server)")
    works, why = builds.nix_works()
    if not works:
        pytest.skip(f"nix does not work here ({why}): the NAR hash and the store cannot be shown")
    before = dpkg_l()
    name = "mariadb-" + version.split(":", 1)[-1].split("-")[0]
    lock = tmp_path / "builds.lock.yaml"
    shutil.copy2(paths.LOCK, lock)
    add_entry(lock, name, new_entry(pinned, version))
    assert "mysqld_sha256" not in builds.load_lock(lock)[name]

    # fetch-build pins mysqld and every .deb; a second fetch verifies them
    out = tmp_path / "builds" / name
    res = harness("fetch-build", "--name", name, "--lock", str(lock), "--out", str(out))
    assert res.returncode == 0, res.stderr
    entry = builds.load_lock(lock)[name]
    assert entry["mysqld_sha256"] == builds.sha256_file(out / "sbin" / "mariadbd")
    assert sorted(entry["deb_files"]) == sorted(entry["packages"])
    for p, f in entry["deb_files"].items():
        assert f["file"].startswith(f"{p}_{version.split(':', 1)[-1]}_") and len(f["sha256"]) == 64
    assert entry["mysqld_sha256"] != pinned["mysqld_sha256"]
    assert "pinned deb_files" in res.stderr and "pinned mysqld_sha256" in res.stderr
    res = harness("fetch-build", "--name", name, "--lock", str(lock), "--out", str(out))
    assert res.returncode == 0 and "pinned" not in res.stderr, res.stderr

    # the NAR hash, by the command docs/builds.md names; then both builds from the Nix store
    root = flake_root(tmp_path / "flake")
    res = harness("nix-pins", "pin", "--name", name, "--lock", str(lock), "--out", str(root / "nix" / "builds.json"))
    assert res.returncode == 0, res.stderr
    entry = builds.load_lock(lock)[name]
    assert entry["nar_hash"].startswith("sha256-") and entry["nar_hash"] != pinned["nar_hash"]
    assert builds.nix.pins_stale(lock, root / "nix" / "builds.json") is None
    stored = {n: builds.fetch_nix(n, e, tmp_path / "store" / n, root=root)
              for n, e in ((name, entry), (PINNED, pinned))}
    resolved = {n: d.resolve() for n, d in stored.items()}
    assert all(builds.in_store(p) for p in resolved.values()) and resolved[name] != resolved[PINNED]
    for n, e in ((name, entry), (PINNED, pinned)):
        assert builds.nix_path_info(resolved[n])["narHash"] == e["nar_hash"]

    # one cell on each, from the store (the extracted mariadbd, its basedir the store path)
    work = Path(tempfile.mkdtemp(prefix="debcell-"))  # short paths for the sockets
    try:
        versions = {n: one_cell(n, e, lock, stored[n], work)["build"]
                    for n, e in ((name, entry), (PINNED, pinned))}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert versions[name]["mysqld_sha256"] != versions[PINNED]["mysqld_sha256"]
    assert server_pids() == []
    assert dpkg_l() == before, "fetching a debian build changed the host's installed packages"


def hidden_apt(tmp: Path) -> dict:
    """APT_CONFIG for an apt that sees no archive at all (and writes no cache of the host's)."""
    (tmp / "parts").mkdir(parents=True)
    (tmp / "lists" / "partial").mkdir(parents=True)
    (tmp / "sources.list").write_text("")
    conf = tmp / "apt.conf"
    conf.write_text(f'Dir::Etc::sourcelist "{tmp}/sources.list";\nDir::Etc::sourceparts "{tmp}/parts";\n'
                    f'Dir::State::Lists "{tmp}/lists";\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n')
    return {"APT_CONFIG": str(conf)}


@pytest.fixture(scope="module")
def pinned_debs(tmp_path_factory):
    """The pinned .deb files under their pinned names, as a user would bring them from
    Debian's snapshot archive (here: from this host's archive while it still offers them)."""
    if not HAVE_DEB:
        pytest.skip("apt-get, apt-cache and dpkg-deb are needed (Debian)")
    entry = builds.load_lock(paths.LOCK)[PINNED]
    d = tmp_path_factory.mktemp("debs")
    for p, f in entry["deb_files"].items():
        scratch = d / f".{p}"
        scratch.mkdir()
        res = subprocess.run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root",
                              f"{p}={entry['package_version']}"], cwd=scratch, capture_output=True, text=True)
        if res.returncode != 0:
            pytest.skip(f"this host's archive no longer offers {p}={entry['package_version']}: "
                        f"put the pinned files in a directory to run this test ({res.stderr.strip()[-200:]})")
        (next(scratch.glob("*.deb"))).rename(d / f["file"])
        scratch.rmdir()
    return d


@needs_deb
def test_a_pinned_version_the_archive_no_longer_offers_is_one_line_with_both_ways_out(tmp_path):
    entry = builds.load_lock(paths.LOCK)[PINNED]
    env = hidden_apt(tmp_path / "apt")
    out = tmp_path / "builds" / PINNED
    res = harness("fetch-build", "--name", PINNED, "--out", str(out), env=env)
    assert res.returncode != 0
    msg = res.stderr.strip()
    assert "\n" not in msg, msg
    assert msg.startswith(f"error: build {PINNED}: mariadb-server {entry['package_version']} is no longer offered")
    assert "(it offers: none)" in msg and "snapshot archive" in msg and "ARTIFACT_DEB_DIR=DIR" in msg
    assert f"builds.{PINNED}.deb_dir" in msg
    for f in entry["deb_files"].values():
        assert f"{f['file']} sha256 {f['sha256']}" in msg
    assert not out.exists()


@needs_deb
def test_the_pinned_files_from_a_local_directory_are_fetched_and_verified(tmp_path, pinned_debs):
    entry = builds.load_lock(paths.LOCK)[PINNED]
    before = dpkg_l()
    env = {**hidden_apt(tmp_path / "apt"), "ARTIFACT_DEB_DIR": str(pinned_debs)}
    out = tmp_path / "builds" / PINNED
    res = harness("fetch-build", "--name", PINNED, "--out", str(out), env=env)
    assert res.returncode == 0, res.stderr
    assert builds.verify_installed(PINNED, entry, out) == out / entry["mysqld"]
    assert json.loads((out / "build.json").read_text())["deb_files"] == entry["deb_files"]
    assert dpkg_l() == before

    # one changed byte in one pinned file: refused with both hashes, nothing left
    bad_dir = tmp_path / "bad"
    shutil.copytree(pinned_debs, bad_dir)
    f = entry["deb_files"]["mariadb-common"]
    flip_byte(bad_dir / f["file"], offset=(bad_dir / f["file"]).stat().st_size - 10)
    out2 = tmp_path / "builds2" / PINNED
    res = harness("fetch-build", "--name", PINNED, "--out", str(out2), env={**env, "ARTIFACT_DEB_DIR": str(bad_dir)})
    assert res.returncode != 0 and "\n" not in res.stderr.strip()
    assert f["sha256"] in res.stderr and builds.sha256_file(bad_dir / f["file"]) in res.stderr
    assert not out2.exists()
