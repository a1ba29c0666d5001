"""Any clone location works (issue: a clone in root's home, mode 700, failed at study C's
first PostgreSQL cell): the pinned PostgreSQL build placed under a mode-700 folder, or
under a path with a space, starts on the docker and the host backend and answers
`SELECT 1`; mysqld and mariadbd bootstrap and start from such a folder too. A failed initdb keeps
its log under the run's logs/ and its one-line error quotes initdb's own reason."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import BUILD, ROOT, copy_checkout, server_pids
from test_postgres_e2e import docker_engine  # noqa: F401  (the fixture)

from harness import builds, keptlogs
from harness.measure import initdb
from harness.measure.server import Server
from harness.studies.c import pgserver
from harness.studies.c import legacy_pg as postgres
from harness import paths

pytestmark = pytest.mark.e2e

CPUS = sorted(os.sched_getaffinity(0))[:1]
MARIADB = "mariadb-10.11"


@pytest.fixture
def closed():
    """A mode-700 folder in the user's home (as root: /root, mode 700 too), where a newcomer
    clones: under docker, a host path under /root meets the image's own /root (mode 700)."""
    d = Path(tempfile.mkdtemp(prefix=".mysqlbench-clonetest-", dir=Path.home()))
    os.chmod(d, 0o700)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def spaced():
    """A path with a space in it, every folder of it enterable by others."""
    d = Path(tempfile.mkdtemp(prefix="mysqlbench-clonetest-"))
    os.chmod(d, 0o755)
    (d / "my clone").mkdir(mode=0o755)
    yield d / "my clone"
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def open_base():
    """A directory PostgreSQL's user can enter, for the datadir on the host (the pipeline
    puts it in such a place itself: legacy_pg._pg_parent)."""
    d = Path(tempfile.mkdtemp(prefix="mysqlbench-pgdata-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def place_build(src: Path, where: Path) -> Path:
    """A copy of a fetched build at <where>/resources/builds/<name>, as a clone there has it."""
    dest = where / "resources" / "builds" / src.name
    dest.parent.mkdir(parents=True)
    subprocess.run(["cp", "-a", "--", str(src), str(dest)], check=True)
    return dest


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to PostgreSQL's own user")
@pytest.mark.parametrize("folder", ["closed", "spaced"])
@pytest.mark.parametrize("backend", ["host", "docker"])
def test_postgres_starts_from_a_closed_or_spaced_folder(pg_build, folder, backend, request, open_base):
    name, entry, d = pg_build
    if backend == "docker":
        request.getfixturevalue("docker_engine")
    root = request.getfixturevalue(folder)
    build = place_build(d, root)
    # under docker the datadir lies in the same folder; on the host a place its user can enter
    data = (root / "data" / "pg data") if backend == "docker" else open_base / "data"
    run_id = f"test-clone-{backend}-{folder}-{os.getpid()}"
    with postgres.PgServer(build=name, entry=entry, build_dir=build, datadir=data, rundir=root / "run",
                           run_id=run_id, cpus=CPUS, backend=backend) as pg:
        assert pg.query("SELECT 1") == [("1",)]
        assert pg.info()["backend"] == backend
        assert pg.server_version().split()[0] == entry["version"]
        copy = getattr(pg, "_build_copy", None)
        if backend == "host" and folder == "closed":  # its user cannot reach the build where it lies
            assert pg.info()["build_copy"] == str(copy / "build")
    assert postgres.pg_pids(run_id=run_id) == []
    assert oct(root.stat().st_mode & 0o777) == ("0o700" if folder == "closed" else "0o755"), \
        "the user's folder was chmodded"
    if copy is not None:
        assert not copy.exists(), "the build's linked copy outlived the server"


@pytest.fixture
def server_build(request, build_dir, lock_entry):
    """(name, lock entry, build dir) of MySQL 5.6 (mysqld --bootstrap) or MariaDB 10.11
    (mariadb-install-db, then mariadbd), fetched as the pipeline does."""
    if request.param == BUILD:
        return BUILD, lock_entry, build_dir
    entry = builds.load_lock(paths.LOCK)[request.param]
    d = ROOT / "resources" / "builds" / request.param
    if not d.exists():
        builds.fetch(request.param, entry, d)
    builds.verify_installed(request.param, entry, d)
    return request.param, entry, d


@pytest.mark.parametrize("server_build", [BUILD, MARIADB], indirect=True)
@pytest.mark.parametrize("backend", ["host", "docker"])
def test_server_bootstraps_and_starts_from_a_closed_folder(server_build, closed, backend, request):
    name, entry, build_dir = server_build
    if backend == "docker":
        request.getfixturevalue("docker_engine")
    clone = closed / "clone one"
    build = place_build(build_dir, clone)
    tpl = clone / "resources" / "templates" / name
    initdb.bootstrap(name, entry, build, tpl, backend=backend)
    assert (tpl / "datadir" / "mysql").is_dir()
    run = Path(tempfile.mkdtemp(prefix="mysqlbench-clonemy-"))  # short: the socket lives here
    try:
        shutil.copytree(tpl / "datadir", clone / "datadir", symlinks=True)
        with Server(name=name, entry=entry, build_dir=build, datadir=clone / "datadir",
                    rundir=run, run_id=f"test-clonemy-{backend}-{os.getpid()}", cpus=CPUS,
                    backend=backend) as srv:
            assert srv.query("SELECT 1") == [(1,)]
            assert srv.backend == backend
    finally:
        shutil.rmtree(run, ignore_errors=True)
    assert server_pids() == []


@pytest.fixture
def full_datadir(open_base):
    """A datadir PostgreSQL's user owns but cannot fill: a 1 MiB tmpfs (initdb writes ~40 MB)."""
    d = open_base / "pgdata"
    d.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "mysqlbench-test", str(d)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.strip()}")
    yield d
    subprocess.run(["umount", str(d)], capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting the small datadir needs root")
def test_failed_initdb_keeps_its_log_and_quotes_its_reason(pg_build, full_datadir, open_base, tmp_path,
                                                          monkeypatch):
    name, entry, d = pg_build
    logs = tmp_path / "logs"
    monkeypatch.setenv(keptlogs.LOGS_VAR, str(logs))
    run_id = f"test-initdb-fails-{os.getpid()}"
    rundir = open_base / "run"
    with pytest.raises(pgserver.PgError) as err:
        with postgres.PgServer(build=name, entry=entry, build_dir=d, datadir=full_datadir, rundir=rundir,
                               run_id=run_id, cpus=CPUS, backend="host"):
            pass
    line = str(err.value)
    kept = logs / "failed" / run_id / "initdb.log"
    shutil.rmtree(rundir)  # the run directory goes, as the pipeline's temporary one does
    assert "\n" not in line
    assert line.startswith(f"initdb of {full_datadir} failed (exit 1): ")
    assert line.endswith(f"(log kept in {kept})")
    assert kept.is_file(), "the log the error names is gone"
    reason = re.search(r"failed \(exit 1\): (.*) \(log kept in ", line).group(1)
    assert "No space left on device" in reason, line
    assert reason in kept.read_text(), "the quoted line is not initdb's own"
    assert postgres.pg_pids(run_id=run_id) == []


def test_failed_bootstrap_keeps_its_log(build_dir, lock_entry, tmp_path, monkeypatch):
    """MySQL 5.6 has no --initialize-insecure: its bootstrap fails in the staging dir, which
    goes; the log it names stays under logs/failed/ and holds the quoted line."""
    monkeypatch.setenv(keptlogs.LOGS_VAR, str(tmp_path / "logs"))
    with pytest.raises(builds.BuildError) as err:
        initdb.bootstrap(BUILD, {**lock_entry, "init": "initialize"}, build_dir, tmp_path / "tpl",
                         backend="host")
    line = str(err.value)
    m = re.fullmatch(r"build \S+: bootstrap failed \(exit 1, backend host\): (.+) \(log kept in (\S+)\)", line)
    assert m, line
    kept = Path(m.group(2))
    assert kept.is_relative_to(tmp_path / "logs" / "failed") and kept.is_file()
    assert m.group(1) in kept.read_text() and not (tmp_path / "tpl").exists()


def test_the_pipeline_runs_from_a_clone_whose_path_holds_a_space(spaced):
    """Snakemake spawns a `run:` job (block_open) through a shell with its Python's path
    unquoted, and that path is the clone's .venv: from "my clone" it ran `/tmp/…/my` and
    the sweep stopped at its first block. The profiles run such jobs in threads, and the
    rules quote the Python they call: the block opens, its order written."""
    copy_checkout(spaced)
    (spaced / ".venv").symlink_to(ROOT / ".venv")   # the clone's own venv path, with the space
    py = spaced / ".venv" / "bin" / "python"
    target = "data/order/point_select.r1.a1.open"
    res = subprocess.run([str(py), "-m", "snakemake", "--cores", "1", "--configfile", "config/smoke.yaml",
                          "--", target], cwd=spaced, capture_output=True, text=True, timeout=900)
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "not found" not in out, out[-3000:]
    opened = json.loads((spaced / target).read_text())
    assert opened["experiment"] == "point_select" and opened["order"], opened


def test_slurm_from_a_clone_whose_path_holds_a_space_is_refused_in_one_line(spaced):
    """Snakemake's SLURM executor writes each job's command with the clone's Python path
    unquoted, so a cluster run from such a path would fail on the nodes, job by job: the
    workflow refuses it before anything is submitted, naming the fix."""
    copy_checkout(spaced)
    (spaced / ".venv").symlink_to(ROOT / ".venv")
    env = {**os.environ, "MYSQLBENCH_NODE_CPUS": str(os.cpu_count())}
    res = subprocess.run([str(spaced / ".venv" / "bin" / "python"), "-m", "snakemake", "--profile", "profiles/slurm",
                          "--configfile", "config/smoke.yaml", "-n"], cwd=spaced, capture_output=True, text=True,
                         env=env, timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-2000:]
    lines = [x for x in out.splitlines() if x.startswith("config error: profiles/slurm:")]
    assert len(lines) == 1 and "clone to a path without spaces" in lines[0], out[-2000:]
    assert not (spaced / "data" / "raw").exists()
