"""The legacy-RDBMS stand-in end to end on a real PostgreSQL, the pinned build
(config/builds.lock.yaml postgresql-15, Debian's packages fetched as the pipeline
does): on the host, started as an unprivileged user (as root), unix socket only,
labelled, its PL/pgSQL loop and scan measured, and nothing of it left afterwards:
not after a clean exit, not after an exception inside the with-block, not after a
SIGKILL of the process that started it. In a container (backend docker): a whole
study C steps cell whose manifest shows the stand-in's container, cpuset and
package version, and the container gone after the cell."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import procnet
from conftest import BUILD, ROOT, SESSION, harness_env, run_settings

from harness.measure import cell, placement
from harness.measure import docker as docker_backend

from harness.studies.c import legacy_pg as postgres
from harness.studies.c import pgserver

from harness.measure import procs

pytestmark = pytest.mark.e2e


DOCKERD = ROOT / "scripts" / "dockerd.sh"


@pytest.fixture
def base():
    """A directory the postgres user can enter (pytest's own tmp dirs are root-only)."""
    d = Path(tempfile.mkdtemp(prefix="mysqlbench-pgtest-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _pg(pg_build, base: Path, run_id: str, **kw) -> postgres.PgServer:
    name, entry, d = pg_build
    return postgres.PgServer(build=name, entry=entry, build_dir=d, datadir=base / "data", rundir=base / "run",
                             run_id=run_id, cpus=sorted(os.sched_getaffinity(0))[:1], **kw)


def _gone(pids, timeout=15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if pgserver._running(p)]
        if not left:
            return []
        time.sleep(0.1)
    return left


def _uid(pid: int) -> int | None:
    """pid's real uid; None when it has exited since it was listed (a backend
    of a query that just ended: CI saw one vanish between the two reads)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    for line in status.splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError("no Uid line")


def test_loop_insert_and_scan_then_nothing_left(pg_build, base):
    run_id = f"test-pg-{os.getpid()}"
    with _pg(pg_build, base, run_id) as pg:
        assert pg.server_version().split()[0] == pg_build[1]["version"]  # the pinned build, not the host's
        assert pg.info()["backend"] == "host" and pg.query("SHOW jit") == [("off",)]
        pids = pg.processes()
        assert pg.pid in pids and len(pids) >= 3  # postmaster + its background processes
        assert pg.pid in procs.labelled_pids(run_id=run_id)  # the label, in the environment
        if os.geteuid() == 0:
            want = pgserver.run_as()[0]
            uids = {_uid(p) for p in pids} - {None}
            assert want != 0 and _uid(pg.pid) == want and uids == {want}, "PostgreSQL must not run as root"
        assert pg.query("SHOW listen_addresses") == [("",)]
        for p in pids:
            assert not (procnet.socket_inodes(p) & procnet.inet_inodes(p)), f"pid {p} has a TCP/UDP socket"
        assert placement.observed_cpus(pg.pid) == pg.cpus
        sockdir = pg.sockdir
        assert (sockdir / ".s.PGSQL.5432").is_socket() and len(str(sockdir)) < 60

        secs = postgres.legacy_insert(pg, 500)
        assert secs > 0
        assert pg.query("SELECT count(*), min(c2), max(c2) FROM t1") == [
            ("500", "sample audit string", "sample audit string")]
        secs, matched = postgres.legacy_scan(pg)
        assert secs > 0 and matched == 500
        assert "Seq Scan on t1" in postgres.scan_plan(pg)
        per_row = postgres.legacy_insert(pg, 500, commit_each=True)
        assert per_row > 0
        pids = pg.processes()  # now with a backend or two more
    assert _gone(pids) == [], "PostgreSQL processes outlived the with-block"
    assert postgres.pg_pids(run_id=run_id) == []
    assert not sockdir.exists()
    if pg.placement.path is not None:
        assert not pg.placement.path.exists(), "the run's cgroup was not removed"
    # the datadir is kept and starts again as it is
    with _pg(pg_build, base, run_id) as pg:
        assert pg.query("SELECT count(*) FROM t1") == [("500",)]
    assert postgres.pg_pids(run_id=run_id) == []


def test_the_study_loop_is_one_transaction_and_the_variant_commits_per_row(pg_build, base):
    """Issue 52: the study's procedure loop has no COMMIT, so legacy_insert's default runs it as
    one transaction (every row the same xmin); the per-row variant commits each row (one xmin
    a row). On the real PostgreSQL: the old default (a COMMIT per row) fails the first."""
    with _pg(pg_build, base, f"test-pg-trx-{os.getpid()}") as pg:
        assert postgres.legacy_insert(pg, 300) > 0
        assert pg.query("SELECT count(DISTINCT xmin::text), count(*) FROM t1") == [("1", "300")]
        assert postgres.legacy_insert(pg, 300, commit_each=True) > 0
        assert pg.query("SELECT count(DISTINCT xmin::text), count(*) FROM t1") == [("300", "300")]


def test_exception_inside_the_with_block_stops_everything(pg_build, base):
    run_id = f"test-pg-exc-{os.getpid()}"
    seen = {}
    with pytest.raises(RuntimeError, match="boom"):
        with _pg(pg_build, base, run_id) as pg:
            pg.query("CREATE TABLE x (i int)")
            seen["pids"] = pg.processes()
            seen["sock"] = pg.sockdir
            raise RuntimeError("boom")
    assert len(seen["pids"]) >= 3
    assert _gone(seen["pids"]) == []
    assert postgres.pg_pids(run_id=run_id) == []
    assert not seen["sock"].exists()


def test_sigkill_of_the_starter_takes_postgres_down(pg_build, base):
    """PR_SET_PDEATHSIG is set after dropping to the postgres user (a credential
    change clears it); the backends leave once their postmaster is gone."""
    run_id = f"test-pg-kill-{os.getpid()}"
    code = ("import os, sys, time\n"
            "from pathlib import Path\n"
            "from harness.studies.c import legacy_pg as postgres\n"
            f"entry, d = postgres.legacy_build({pg_build[0]!r})\n"
            f"pg = postgres.PgServer(build={pg_build[0]!r}, entry=entry, build_dir=d,"
            f" datadir=Path({str(base / 'data')!r}), rundir=Path({str(base / 'run')!r}),"
            f" run_id={run_id!r}, cpus=[0]).__enter__()\n"
            "print(' '.join(map(str, pg.processes())), flush=True)\n"
            "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=harness_env(), cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert line.strip(), proc.stderr.read()
        pids = [int(p) for p in line.split()]
        assert all(pgserver._running(p) for p in pids)
        proc.kill()
        proc.wait(timeout=30)
        assert _gone(pids) == [], "PostgreSQL outlived a SIGKILLed harness"
        assert postgres.pg_pids(run_id=run_id) == []
        cgs = [cg for cg in placement.stale_cgroups() if cg.name == placement.PREFIX + run_id]
        for cg in cgs:  # the run's cgroup outlives its killed starter, but nothing runs in it
            assert not (cg / "cgroup.procs").read_text().split(), f"tasks left in {cg}"
    finally:
        if proc.poll() is None:
            proc.kill()
        postgres.reap(run_id=run_id)
        from harness import paths  # its socket directory: no watchdog here (harness reap's job)
        for d, owner in paths.owned_scratch_dirs():
            if owner == proc.pid:
                shutil.rmtree(d, ignore_errors=True)
        with contextlib.suppress(placement.PlacementError):  # never hide the assertion above
            placement.remove_run(run_id)  # named after this test's pid: not stale to the sweep


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to the postgres user")
def test_datadir_the_postgres_user_cannot_reach_is_refused_before_starting(pg_build, base):
    closed = base / "closed"
    closed.mkdir(mode=0o700)
    run_id = f"test-pg-closed-{os.getpid()}"
    uid = pgserver.run_as()[0]
    with pytest.raises(postgres.PgError, match=rf"{closed} is not searchable by uid {uid} \(PostgreSQL's user\); "
                                              rf"chmod o\+x {closed}"):
        with _pg(pg_build, closed, run_id):
            pass
    assert postgres.pg_pids(run_id=run_id) == []
    assert not (closed / "data").exists()


# -- in a container (backend docker) ---------------------------------------------------
@pytest.fixture(scope="module")
def docker_engine():
    """An answering engine: the one running, else one started by scripts/dockerd.sh. This
    module registers as one of its users (--owner), so the engine is stopped by its last
    user, never under a pipeline running beside the tests."""
    owner = f"pytest-postgres-e2e-{os.getpid()}"
    res = subprocess.run(["bash", str(DOCKERD), "start", "--owner", owner], capture_output=True,
                         text=True, timeout=120)
    if res.returncode != 0:
        pytest.skip(f"no Docker engine can be started here: {(res.stderr or res.stdout).strip()}")
    yield docker_backend.engine_version()
    docker_backend.reap(session=SESSION)
    subprocess.run(["bash", str(DOCKERD), "stop", "--owner", owner], capture_output=True, text=True,
                   timeout=120)


def test_in_a_container_on_its_cpuset_without_network_then_gone(pg_build, base, docker_engine):
    run_id = f"test-pg-docker-{os.getpid()}"
    with _pg(pg_build, base, run_id, backend="docker") as pg:
        info = pg.info()
        cid = info["container"]
        assert info["backend"] == "docker" and info["mechanism"] == docker_backend.MECHANISM
        assert info["image"]["tag"].startswith("mysqlbench/runtime:")
        assert docker_backend.containers(run_id=run_id) == [cid]
        spec = docker_backend.inspect(cid)
        assert spec["HostConfig"]["NetworkMode"] == "none"
        assert spec["HostConfig"]["CpusetCpus"] == placement.cpulist(pg.cpus) == info["cpus"]
        assert spec["Config"]["Labels"][docker_backend.LABEL_SESSION] == SESSION
        assert info["observed_cpus"] == info["cpus"] and placement.observed_cpus(pg.pid) == pg.cpus
        pids = pg.processes()
        assert pg.pid in pids and len(pids) >= 3
        assert all(_uid(p) != 0 for p in pids), "PostgreSQL must not run as root"
        for p in pids:
            assert not (procnet.socket_inodes(p) & procnet.inet_inodes(p)), f"pid {p} has a TCP/UDP socket"
        assert pg.server_version().split()[0] == pg_build[1]["version"]
        assert postgres.legacy_insert(pg, 300) > 0
        assert postgres.legacy_scan(pg)[1] == 300
        sockdir = pg.sockdir
    assert docker_backend.inspect(cid) is None, "the stand-in's container outlived its with-block"
    assert docker_backend.containers(run_id=run_id) == []
    assert _gone(pids) == [] and not sockdir.exists()


def test_steps_cell_manifest_shows_the_stand_ins_container_cpuset_and_package(
        pg_build, build_dir, lock_entry, template, docker_engine, tmp_path):
    """A whole study C cell under backend docker: mysqld and the stand-in each in a container
    of their own on the cell's server CPUs; the manifest's `legacy` names the container, its
    cpuset (asked and observed) and the pinned package version; nothing is left after."""
    name, entry, d = pg_build
    spec = {"study": "C1", "kind": "steps", "script": "c_test_drive", "engines": ["MyISAM"], "cores": [1],
            "rows": 500, "legacy": True, "legacy_build": name,
            "variants": {"durability": ["relaxed"], "pfs": ["off"]}}
    cname = f"{BUILD}_pfs-off.dur-relaxed_c1_r1"
    out = tmp_path / "raw" / "C1" / "test_drive" / cname
    m = cell.run_cell(experiment="test_drive", spec=spec, cell=cname, entry=lock_entry, build_dir=build_dir,
                      source=template, settings=run_settings(backend="docker"), out=out)
    assert m["placement"]["backend"] == "docker"
    pg = m["legacy"]
    where = pg["placement"]
    assert where["backend"] == "docker" and len(where["container"]) == 64
    assert where["cpus"] == where["observed_cpus"] == m["placement"]["server_cpus"]
    assert where["image"]["id"] == m["placement"]["image"]["id"]  # the same runtime image as mysqld's
    assert pg["build"]["name"] == name and pg["build"]["package"] == "postgresql-15"
    assert pg["build"]["package_version"] == entry["package_version"] == "15.20-0+deb12u1"
    assert pg["build"]["postgres_sha256"] == entry["mysqld_sha256"]
    assert pg["version"].startswith(entry["version"] + " ") and "Debian" in pg["version"]
    assert pg["effective"]["synchronous_commit"] == "off" and pg["effective"]["jit"] == "off"
    assert m["effective"]["postgres"] == pg["effective"]
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk["legacy"]["placement"]["container"] == where["container"]
    steps = (out / "steps.tsv").read_text()
    assert "PostgreSQL (legacy stand-in)" in steps and "PostgreSQL 15.20" in steps
    # the study's loop, one transaction (issue 52), said in its row and the manifest
    assert "one transaction (the study's loop, no COMMIT)" in steps and pg["commit"] == "once"
    assert docker_backend.inspect(where["container"]) is None, "the stand-in's container is still there"
    assert docker_backend.containers(session=SESSION) == []
