"""The legacy-RDBMS stand-in end to end on a real PostgreSQL: started as the
unprivileged postgres user (as root), unix socket only, labelled, its PL/pgSQL
loop and scan measured, and nothing of it left afterwards: not after a clean
exit, not after an exception inside the with-block, not after a SIGKILL of the
process that started it."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, harness_env

from harness.measure import placement

from harness.studies.c import legacy_pg as postgres

from harness.measure import procs

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", autouse=True)
def installed():
    try:
        postgres.bindir()
    except postgres.PgError as e:
        pytest.skip(str(e))


@pytest.fixture
def base():
    """A directory the postgres user can enter (pytest's own tmp dirs are root-only)."""
    d = Path(tempfile.mkdtemp(prefix="mysqlbench-pgtest-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _pg(base: Path, run_id: str) -> postgres.PgServer:
    return postgres.PgServer(datadir=base / "data", rundir=base / "run", run_id=run_id,
                             cpus=sorted(os.sched_getaffinity(0))[:1])


def _gone(pids, timeout=15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if postgres._running(p)]
        if not left:
            return []
        time.sleep(0.1)
    return left


def _listening_inodes() -> set[str]:
    out = set()
    for f in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
        try:
            lines = Path(f).read_text().splitlines()[1:]
        except OSError:
            continue
        out |= {line.split()[9] for line in lines}
    return out


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            t = os.readlink(fd)
        except OSError:
            continue
        if t.startswith("socket:["):
            out.add(t[8:-1])
    return out


def _uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError("no Uid line")


def test_loop_insert_and_scan_then_nothing_left(base):
    run_id = f"test-pg-{os.getpid()}"
    with _pg(base, run_id) as pg:
        assert pg.server_version().startswith(pg.bin.parent.name)
        pids = pg.processes()
        assert pg.pid in pids and len(pids) >= 3  # postmaster + its background processes
        assert pg.pid in procs.labelled_pids(run_id=run_id)  # the label, in the environment
        if os.geteuid() == 0:
            want = postgres.pwd.getpwnam(postgres.PG_USER).pw_uid
            assert {_uid(p) for p in pids} == {want}, "PostgreSQL must not run as root"
        assert pg.query("SHOW listen_addresses") == [("",)]
        for p in pids:
            assert not (_socket_inodes(p) & _listening_inodes()), f"pid {p} has a TCP/UDP socket"
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
        one_trx = postgres.legacy_insert(pg, 500, commit_each=False)
        assert one_trx > 0
        pids = pg.processes()  # now with a backend or two more
    assert _gone(pids) == [], "PostgreSQL processes outlived the with-block"
    assert postgres.pg_pids(run_id=run_id) == []
    assert not sockdir.exists()
    if pg.placement.path is not None:
        assert not pg.placement.path.exists(), "the run's cgroup was not removed"
    # the datadir is kept and starts again as it is
    with _pg(base, run_id) as pg:
        assert pg.query("SELECT count(*) FROM t1") == [("500",)]
    assert postgres.pg_pids(run_id=run_id) == []


def test_exception_inside_the_with_block_stops_everything(base):
    run_id = f"test-pg-exc-{os.getpid()}"
    seen = {}
    with pytest.raises(RuntimeError, match="boom"):
        with _pg(base, run_id) as pg:
            pg.query("CREATE TABLE x (i int)")
            seen["pids"] = pg.processes()
            seen["sock"] = pg.sockdir
            raise RuntimeError("boom")
    assert len(seen["pids"]) >= 3
    assert _gone(seen["pids"]) == []
    assert postgres.pg_pids(run_id=run_id) == []
    assert not seen["sock"].exists()


def test_sigkill_of_the_starter_takes_postgres_down(base):
    """PR_SET_PDEATHSIG is set after dropping to the postgres user (a credential
    change clears it); the backends leave once their postmaster is gone."""
    run_id = f"test-pg-kill-{os.getpid()}"
    code = ("import os, sys, time\n"
            "from pathlib import Path\n"
            "from harness.studies.c import legacy_pg as postgres\n"
            f"pg = postgres.PgServer(datadir=Path({str(base / 'data')!r}), rundir=Path({str(base / 'run')!r}),"
            f" run_id={run_id!r}, cpus=[0]).__enter__()\n"
            "print(' '.join(map(str, pg.processes())), flush=True)\n"
            "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=harness_env(), cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert line.strip(), proc.stderr.read()
        pids = [int(p) for p in line.split()]
        assert all(postgres._running(p) for p in pids)
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
        with contextlib.suppress(placement.PlacementError):  # never hide the assertion above
            placement.remove_run(run_id)  # named after this test's pid: not stale to the sweep


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to the postgres user")
def test_datadir_the_postgres_user_cannot_reach_is_refused_before_starting(base):
    closed = base / "closed"
    closed.mkdir(mode=0o700)
    run_id = f"test-pg-closed-{os.getpid()}"
    with pytest.raises(postgres.PgError, match=rf"{closed} is not searchable by user postgres; chmod o\+x"):
        with postgres.PgServer(datadir=closed / "data", rundir=base / "run", run_id=run_id, cpus=[0]):
            pass
    assert postgres.pg_pids(run_id=run_id) == []
    assert not (closed / "data").exists()
