"""End-to-end on the real MySQL 5.6.24: the server held to its cores, no TCP,
and no server or half-written cell left after a failure or an interrupt."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import procnet
from conftest import BUILD, ROOT, cell_spec, harness_cmd, harness_env, server_pids

from harness.measure import placement
from harness.measure.server import Server

pytestmark = pytest.mark.e2e


def test_server_runs_in_its_cpuset_without_tcp(build_dir, lock_entry, dataset, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))[:1]
    datadir = tmp_path / "datadir"
    subprocess.run(["cp", "-a", str(dataset / "datadir"), str(datadir)], check=True)
    with Server(name=BUILD, entry=lock_entry, build_dir=build_dir, datadir=datadir,
                rundir=tmp_path / "run", run_id=f"test-cpuset-{os.getpid()}",
                cpus=cpus) as srv:
        assert placement.observed_cpus(srv.pid) == cpus
        if srv.placement.path is not None:
            assert str(srv.pid) in (srv.placement.path / "cgroup.procs").read_text().split()
            cg = srv.placement.path
        assert srv.query("SELECT @@skip_networking")[0][0] == 1
        assert not (procnet.socket_inodes(srv.pid) & procnet.inet_inodes(srv.pid, listening_only=True)), "mysqld listens on TCP"
        assert srv.version() == "5.6.24"
        assert srv.pid in server_pids()
        pid = srv.pid
    assert not Path(f"/proc/{pid}").exists() or pid not in server_pids()
    if srv.placement.path is not None:
        assert not cg.exists(), "the run's cgroup was not removed"


def test_a_read_in_the_server_does_not_answer_fails_in_one_line(build_dir, lock_entry, dataset, tmp_path,
                                                                  monkeypatch):
    """The read-in before the warm-up waits at most its read timeout: a table another
    session holds locked (a server that stops answering, as far as the reader can tell)
    fails the cell with a line naming the table, instead of hanging it."""
    from harness.measure import captures
    from harness.measure.server import ServerError
    monkeypatch.setattr(captures, "PRELOAD_TIMEOUT_S", 2)
    datadir = tmp_path / "datadir"
    subprocess.run(["cp", "-a", str(dataset / "datadir"), str(datadir)], check=True)
    with Server(name=BUILD, entry=lock_entry, build_dir=build_dir, datadir=datadir, rundir=tmp_path / "run",
                run_id=f"test-preload-{os.getpid()}", cpus=sorted(os.sched_getaffinity(0))[:1]) as srv:
        assert captures.preload(srv, 1, "InnoDB")[0][0][:2] == ("sbtest1", "rows")  # unlocked: it reads
        holder = srv.connect("sbtest")
        try:
            holder.cursor().execute("LOCK TABLES sbtest1 WRITE")
            t0 = time.monotonic()
            with pytest.raises(ServerError, match=r"reading sbtest1 into memory \(\w+\) failed after \d+ s "
                                                  r"\(read timeout 2 s\)"):
                captures.preload(srv, 1, "InnoDB")
            assert time.monotonic() - t0 < 30
        finally:
            holder.close()


def _cell_args(dataset: Path, build_dir: Path, out: Path, duration: int) -> list[str]:
    spec = json.dumps(cell_spec({"warmup_s": 1, "duration_s": duration}))
    return harness_cmd("run-cell", "--cell", out.name, "--cell-spec", spec, "--build-dir", str(build_dir),
                       "--source", str(dataset), "--out", str(out))


def _wait_for_server(proc, timeout=60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in server_pids() if Path(f"/proc/{p}").exists()]
        if pids:
            return pids[0]
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.1)
    raise AssertionError("no labelled mysqld appeared")


def _no_leftovers(out: Path):
    assert not out.exists(), "a raw cell directory was left behind"
    assert not list(out.parent.glob(f".{out.name}.tmp-*")), "a temp cell directory was left behind"
    deadline = time.monotonic() + 15
    while server_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server_pids() == []


def test_cell_measures_and_records_manifest(build_dir, dataset, tmp_path):
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    res = subprocess.run(_cell_args(dataset, build_dir, out, 2), capture_output=True, text=True,
                         env=harness_env(), cwd=ROOT)
    assert res.returncode == 0, res.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["result"]["qps"] > 0
    assert m["placement"]["observed_server_cpus"] == m["placement"]["server_cpus"]
    assert m["placement"]["observed_server_mems"] == m["placement"]["server_mems"] != ""
    assert not set(placement.parse_cpulist(m["placement"]["server_cpus"])) & \
        set(placement.parse_cpulist(m["placement"]["client_cpus"]))
    assert m["build"]["mysqld_sha256"] == "dfb30bc3cde88ceba19ed59004c64b075808d902d96b9741283021e9bd4ce00a"
    assert m["schema"] == 2 and m["kind"] == "throughput"
    assert m["driver"]["version"].startswith("1.0")
    assert "--rand-type=uniform" in m["driver"]["args"]
    assert m["driver"]["warmup_seed"] != m["driver"]["seed"], "the warm-up must not replay the measured keys"
    assert 0 < m["driver"]["client_cpu_util"] <= 1.5
    # host backend: mysqld and sysbench charged where the harness is, unless cgroup v2
    # placed the server in a cgroup of its own (memory beside its cpuset)
    assert m["driver"]["client_memcg"] == ("apart" if m["placement"]["mechanism"] == "cgroup-v2" else "shared")
    assert m["settings"]["ps"] == "off" and "--db-ps-mode=disable" in m["driver"]["args"]
    for key in ("cpu_model", "kernel", "governor", "smt"):
        assert key in m["host"]
    for f in ("sysbench.out", "intervals.csv", "status_before.tsv", "status_after.tsv", "my.cnf",
              "warmup.out", "mysqld.err"):
        assert (out / f).stat().st_size > 0, f
    assert server_pids() == []


def test_kill9_of_mysqld_fails_the_cell_and_leaves_nothing(build_dir, dataset, tmp_path):
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    proc = subprocess.Popen(_cell_args(dataset, build_dir, out, 30), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=harness_env(), cwd=ROOT)
    pid = _wait_for_server(proc)
    time.sleep(2.0)
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:"), err
    _no_leftovers(out)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_the_harness_stops_its_server(build_dir, dataset, tmp_path, sig):
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    proc = subprocess.Popen(_cell_args(dataset, build_dir, out, 30), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=harness_env(), cwd=ROOT)
    _wait_for_server(proc)
    time.sleep(1.5)
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    _no_leftovers(out)


def test_sigkill_of_the_harness_takes_its_server_down(build_dir, dataset, tmp_path):
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    proc = subprocess.Popen(_cell_args(dataset, build_dir, out, 30), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=harness_env(), cwd=ROOT)
    _wait_for_server(proc)
    proc.kill()
    proc.communicate(timeout=60)
    assert not out.exists()
    deadline = time.monotonic() + 15
    while server_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server_pids() == [], "mysqld outlived a SIGKILLed harness"
    # its copied datadir: removed by its watchdog once the server is gone
    from harness import paths
    from harness.measure import frame
    mine = [d for d in paths.work_dir().iterdir() if d.name.startswith(out.name[:40])]
    while mine and time.monotonic() < deadline + 15:
        time.sleep(0.1)
        mine = [d for d in mine if d.exists()]
    assert not mine, "a SIGKILLed cell's copied datadir outlived its watchdog"
    runs = [d for d, owner in paths.owned_scratch_dirs() if owner == proc.pid]
    while runs and time.monotonic() < deadline + 15:
        time.sleep(0.1)
        runs = [d for d in runs if d.exists()]
    assert not runs, "a SIGKILLed cell's run directory (socket, error log) outlived its watchdog"
    # one whose watchdog died too (a stale dir of a dead pid): harness reap removes it, and only it
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, live = paths.work_dir() / "stale-test", paths.work_dir() / "live-test"
    for d, pid in ((stale, dead.pid), (live, os.getpid())):
        d.mkdir()
        (d / frame.OWNER).write_text(f"{pid}\n")
    # and a server's run directory in the temp dir, of the dead pid and of this one
    stale_run = Path(tempfile.mkdtemp(prefix=paths.scratch_prefix("cell", dead.pid)))
    live_run = Path(tempfile.mkdtemp(prefix=paths.scratch_prefix("cell")))
    try:
        assert stale in frame.stale_work_dirs() and live not in frame.stale_work_dirs()
        assert (stale_run, dead.pid) in paths.owned_scratch_dirs()
        res = subprocess.run(harness_cmd("reap", "--run", "none"), capture_output=True, text=True,
                             env=harness_env(), cwd=ROOT)
        assert res.returncode == 0, res.stderr
        assert not stale.exists() and live.exists()
        assert not stale_run.exists() and live_run.exists()
    finally:
        for d in (stale, live, stale_run, live_run):
            subprocess.run(["rm", "-rf", str(d)])
