"""harness.measure.backends on this host, with the real MySQL 5.6.24: the host backend
object starts the server in its cpuset, reports the CPUs the kernel gives it,
stops it, runs one-shot commands (a datadir bootstrap) in the same cpuset, and
leaves no server or cgroup behind when the harness is SIGKILLed (its watchdog).
`auto` without an engine falls back to host and says why, once. The docker
backend's objects are tested against a real engine in test_docker_backend.py
(which reuses `harness_killed_while_serving` below)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import BUILD, ROOT, harness_env, run_settings, server_pids

from harness.measure import backends

from harness.measure import initdb

from harness.measure import placement

from harness.measure import procs
from harness.measure.frame import Frame
from harness.measure.server import Server

CPU0 = sorted(os.sched_getaffinity(0))[:1]


def _copy(template: Path, dest: Path) -> Path:
    subprocess.run(["cp", "-a", str(template / "datadir"), str(dest)], check=True)
    return dest


# -- unit: choosing a backend ----------------------------------------------------------
def test_unknown_backend_is_one_line_error():
    with pytest.raises(backends.BackendError, match=r"^backend: podman is not supported; use one of host, docker, auto$"):
        backends.make("podman", run_id="x", cpus=CPU0)


def test_auto_without_engine_falls_back_to_host_and_keeps_the_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    b = backends.make("auto", run_id="test-auto-fallback", cpus=CPU0)
    assert isinstance(b, backends.HostBackend)
    info = b.info()
    assert info["backend"] == "host" and "no Docker engine answers" in info["fallback"]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"warning: backend auto: {info['fallback']}; using host"]


def test_explicit_host_has_no_fallback():
    info = backends.make("host", run_id="test-host-info", cpus=CPU0).info()
    assert "fallback" not in info and info["image"] is None
    assert info["mechanism"] in ("cgroup-v1", "cgroup-v2", "taskset")
    assert info["cpus"] == placement.cpulist(CPU0)


def test_a_memory_node_this_host_does_not_allow_is_refused_before_any_server_starts(tmp_path):
    """placement.mems naming a node outside this process's Mems_allowed_list: the cell's
    frame and either backend refuse it in one line naming the key, before a lock, copy
    or server (nothing under tmp_path is touched)."""
    bad = [max(placement.allowed_mems()) + 1]
    with pytest.raises(placement.PlacementError, match=r"^placement\.mems: memory node \d+ is not among"):
        Frame(out=tmp_path / "raw" / "cell", name=BUILD, entry={}, build_dir=tmp_path, source=tmp_path,
              cores=1, settings=run_settings(mems=bad), options={})
    for name in ("host", "docker"):
        with pytest.raises(placement.PlacementError, match=r"^placement\.mems: [^\n]*; use plan"):
            backends.make(name, run_id="test-bad-mems", cpus=CPU0, mems=bad)
    assert list(tmp_path.iterdir()) == []


def test_link_targets_are_the_files_a_debian_build_points_into(tmp_path):
    (tmp_path / "b" / "sbin").mkdir(parents=True)
    (tmp_path / "b" / "sbin" / "mysqld").symlink_to("/usr/bin/env")
    (tmp_path / "b" / "share").symlink_to("/usr/share/doc")
    (tmp_path / "b" / "inside").symlink_to(tmp_path / "b" / "sbin")  # inside the build: not mounted
    (tmp_path / "b" / "dangling").symlink_to(tmp_path / "nowhere")
    assert sorted(backends.link_targets(tmp_path / "b")) == sorted(
        [Path("/usr/bin/env").resolve(), Path("/usr/share/doc").resolve()])


# -- the host backend object with a real server ----------------------------------------
def test_host_backend_holds_the_server_to_its_cpus_and_stops_it(build_dir, lock_entry, template, tmp_path):
    datadir = _copy(template, tmp_path / "datadir")
    with Server(name=BUILD, entry=lock_entry, build_dir=build_dir, datadir=datadir, rundir=tmp_path / "run",
                run_id=f"test-hostbackend-{os.getpid()}", cpus=CPU0, backend="host") as srv:
        b = srv.runner
        assert isinstance(b, backends.HostBackend) and srv.backend == "host"
        assert b.pid == srv.pid == srv.proc.pid and b.alive()
        assert placement.observed_cpus(b.pid) == CPU0
        assert srv.mechanism_used == b.mechanism == srv.placement_info()["mechanism"]
        cgroup = b.placement.path
        if cgroup is not None:
            assert str(b.pid) in (cgroup / "cgroup.procs").read_text().split()
            # its memory nodes: the cgroup's cpuset.mems, as the kernel applies them to the mysqld
            assert placement.parse_cpulist((cgroup / "cpuset.mems").read_text()) == placement.allowed_mems()
        assert placement.observed_mems(b.pid) == placement.allowed_mems() == b.mems
        assert srv.placement_info()["mems"] == placement.cpulist(b.mems)
        assert procs.labelled_pids(run_id=srv.run_id) == [b.pid]  # the watchdog is not labelled
        watchdog = b._watchdog
        assert watchdog is not None and watchdog.poll() is None
        pid = b.pid
    assert not b.alive()
    assert not Path(f"/proc/{pid}").exists() or pid not in server_pids()
    assert cgroup is None or not cgroup.exists(), "the run's cgroup was not removed"
    assert watchdog.poll() is not None, "the watchdog outlived a clean stop"
    assert "Shutdown complete" in (tmp_path / "run" / "mysqld.err").read_text()


def test_host_backend_runs_a_one_shot_command_in_its_cpuset(tmp_path):
    b = backends.make("host", run_id=f"test-hostrun-{os.getpid()}", cpus=CPU0)
    log = tmp_path / "log"
    rc = b.run(["sh", "-c", "grep Cpus_allowed_list /proc/self/status; echo \"$MYSQLBENCH_RUN\"; "
                "read line; echo \"got $line\"; exit 3"], stdin="hello\n", log=log)
    assert rc == 3
    lines = log.read_text().splitlines()
    assert placement.parse_cpulist(lines[0].split(":", 1)[1]) == CPU0
    assert lines[1:] == [b.run_id, "got hello"]
    assert b.placement.path is None or not b.placement.path.exists()


def test_bootstrap_through_the_host_backend_says_so(build_dir, lock_entry, tmp_path):
    out = initdb.bootstrap(BUILD, lock_entry, build_dir, tmp_path / "tpl", backend="host")
    info = json.loads((out / "bootstrap.json").read_text())
    assert info["backend"] == "host" and info["method"] == "bootstrap" and info["image"] is None
    assert (out / "datadir" / "mysql" / "user.frm").exists()
    mine = placement.PREFIX + f"bootstrap-{BUILD}-{os.getpid()}"
    assert mine not in [p.name for p in placement.stale_cgroups()], "the bootstrap's cgroup was left"


# -- SIGKILL of the harness ----------------------------------------------------------------
HOLDER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from harness import builds, paths
    from harness.measure.frame import Frame
    from harness.measure.server import Server
    a = json.loads(sys.argv[1])
    entry = builds.load_lock(paths.LOCK)[a["build"]]
    with Server(name=a["build"], entry=entry, build_dir=Path(a["build_dir"]), datadir=Path(a["datadir"]),
                rundir=Path(a["rundir"]), run_id=a["run_id"], cpus=a["cpus"], backend=a["backend"]) as s:
        path = s.placement.path
        print(json.dumps({"pid": s.pid, "cgroup": str(path) if path else None,
                          "container": s.container}), flush=True)
        time.sleep(600)
""")


def harness_killed_while_serving(backend: str, build_dir: Path, template: Path, tmp_path: Path) -> dict:
    """Start a harness process holding a real server through `backend`, SIGKILL the
    harness once the server answers, and return what it had ({pid, cgroup, container})."""
    datadir = _copy(template, tmp_path / "datadir")
    args = {"build": BUILD, "build_dir": str(build_dir), "datadir": str(datadir), "rundir": str(tmp_path / "run"),
            "run_id": f"test-kill9-{backend}-{os.getpid()}", "cpus": CPU0, "backend": backend}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=harness_env(), cwd=ROOT)
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    held = json.loads(line)
    assert held["pid"] in server_pids()
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    held["run_id"] = args["run_id"]
    return held


def wait_until(check, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def test_sigkill_of_the_harness_leaves_no_host_server_or_cgroup(build_dir, template, tmp_path):
    held = harness_killed_while_serving("host", build_dir, template, tmp_path)
    assert wait_until(lambda: held["pid"] not in server_pids()), "mysqld outlived a SIGKILLed harness"
    if held["cgroup"]:
        assert wait_until(lambda: not Path(held["cgroup"]).exists()), "the run's cgroup was left behind"
    assert wait_until(lambda: procs.labelled_pids(run_id=held["run_id"]) == [])
