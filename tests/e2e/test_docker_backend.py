"""The docker backend on a real Docker engine and the real MySQL 5.6.24: the
container held to its cpuset, no network at all, queries over the
bind-mounted socket, manifests that say docker, and no container left after
an interrupt, a failure or a SIGKILL of the harness (watchdog, `harness reap`).

No mocks. The engine is started with scripts/dockerd.sh if none answers (and
stopped at the end only if it was started here); the tests are skipped only
when no engine can be started at all."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import (BUILD, ROOT, SESSION, cell_spec, copy_checkout, harness_cmd, harness_env, run_settings,
                      server_pids)

from harness.measure import backends

from harness import builds, paths
from harness.measure import initdb

from harness.measure import cell

from harness.measure import coreplan

from harness.measure import datasets

from harness.measure import docker as docker_backend

from harness.measure import placement

from harness.measure import procs
from harness.measure import sysbench
from harness.measure.server import Server, ServerError
from test_backends import harness_killed_while_serving, wait_until
from harness.measure import topology

pytestmark = pytest.mark.e2e

DOCKERD = ROOT / "scripts" / "dockerd.sh"
BUILD_IMAGE = ROOT / "docker" / "build-image.sh"
CPU0 = sorted(os.sched_getaffinity(0))[:1]
# a host where a client can join a container's memory cgroup: cgroup v1, memory in a
# hierarchy of its own, writable (root)
V1_MEMCG = placement.memcg_of(os.getpid()) is not None


def _sh(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)


def _docker(*args, **kw) -> subprocess.CompletedProcess:
    """The docker CLI, talking to the engine the harness uses (harness.measure.docker.cli_env)."""
    return _sh(docker_backend.docker_bin(), *args, env=docker_backend.cli_env(), **kw)


@pytest.fixture(scope="session")
def docker_engine():
    """An answering engine: the one running, else one started by scripts/dockerd.sh. The
    session registers as a user of the script's engine (--owner), so the engine is stopped
    by its last user: a pipeline running beside these tests is never left without it."""
    owner = f"pytest-docker-backend-{os.getpid()}"
    res = _sh("bash", DOCKERD, "start", "--owner", owner, timeout=120)
    if res.returncode != 0:
        pytest.skip(f"no Docker engine can be started here: {(res.stderr or res.stdout).strip()}")
    yield docker_backend.engine_version()
    docker_backend.reap(session=SESSION)
    res = _sh("bash", DOCKERD, "stop", "--owner", owner, timeout=120)
    assert res.returncode == 0, res.stderr
    if "dockerd: stopped" in res.stdout:
        # nothing of the engine is left: its containers' cgroup parent, its exec root
        cg = Path("/sys/fs/cgroup")
        left = [p for p in [*cg.glob("mysqlbench-docker"), *cg.glob("*/mysqlbench-docker")] if p.is_dir()]
        assert left == [], f"cgroups left by the engine: {left}"
        assert not (docker_backend.dockerd_dir() / "exec").exists()


@pytest.fixture(scope="session")
def runtime_image(docker_engine):
    t0 = time.monotonic()
    img = docker_backend.image(build=True)
    print(f"\nruntime image {img['tag']} ready in {time.monotonic() - t0:.1f}s")
    return img


@pytest.fixture(autouse=True)
def _no_container_left(request):
    yield
    if "docker_engine" not in request.fixturenames:
        return
    left = docker_backend.containers(session=SESSION)
    docker_backend.reap(session=SESSION)
    assert left == [], f"containers left behind: {left}"


def _server(build_dir, lock_entry, datadir: Path, rundir: Path, run_id: str, **kw) -> Server:
    return Server(name=BUILD, entry=lock_entry, build_dir=build_dir, datadir=datadir, rundir=rundir,
                  run_id=run_id, cpus=CPU0, backend="docker", **kw)


def _copy_datadir(dataset: Path, dest: Path) -> Path:
    subprocess.run(["cp", "-a", str(dataset / "datadir"), str(dest)], check=True)
    return dest


def _exec(cid: str, script: str) -> str:
    res = _docker("exec", cid, "sh", "-c", script, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


# -- the engine and the image ---------------------------------------------------
def test_dockerd_script_is_idempotent(docker_engine):
    res = _sh("bash", DOCKERD, "start", timeout=120)
    assert res.returncode == 0 and "already answers" in res.stdout, res.stdout + res.stderr
    assert _sh("bash", DOCKERD, "status", timeout=30).returncode == 0


def test_engine_has_no_bridge_network(docker_engine):
    status = _sh("bash", DOCKERD, "status", timeout=30).stdout
    if "started by this script" not in status:
        pytest.skip("the engine was not started by scripts/dockerd.sh; its networks are not ours")
    drivers = _docker("network", "ls", "--format", "{{.Driver}}").stdout.split()
    assert "bridge" not in drivers, drivers


def test_image_is_tagged_by_content_reused_and_has_the_build_libraries(runtime_image, build_dir,
                                                                          lock_entry):
    assert re.fullmatch(r"mysqlbench/runtime:[0-9a-f]{64}", runtime_image["tag"]), runtime_image
    assert runtime_image["recipe"] == docker_backend.recipe()
    t0 = time.monotonic()
    again = docker_backend.image(build=True)
    assert again == runtime_image and time.monotonic() - t0 < 10, "the image was not reused"
    assert _sh("bash", BUILD_IMAGE, "lookup").stdout.strip() == runtime_image["tag"]
    # every library mysqld needs resolves inside the image (the build is bind-mounted, not baked in)
    b = build_dir.resolve()
    res = _docker("run", "--rm", "--network", "none",
              "--mount", f"type=bind,source={b},target={b},readonly",
              "--env", f"LD_LIBRARY_PATH={b / lock_entry['lib_dir']}", runtime_image["id"],
              "ldd", str(b / lock_entry["mysqld"]), timeout=120)
    assert res.returncode == 0, res.stderr
    assert "not found" not in res.stdout, res.stdout
    assert "libstdc++" in res.stdout


def test_run_argv_never_has_a_network():
    argv = docker_backend.run_argv(image_ref="img", run_id="r1", cpus="0-1", mems="0",
                                   cidfile=Path("/x/cid"), ro_mounts=[Path("/b")],
                                   rw_mounts=[Path("/d")], env={"A": "1"}, command=["/b/mysqld"])
    i = argv.index("--network")
    assert argv[i + 1] == "none"
    for flag in ("--rm", "--init", "--detach"):
        assert flag in argv
    assert argv[argv.index("--cpuset-cpus") + 1] == "0-1"
    assert argv[argv.index("--cpuset-mems") + 1] == "0"
    assert argv[argv.index("--security-opt") + 1] == "seccomp=unconfined"  # bench/container_overhead.py
    assert argv[argv.index("--cidfile") + 1] == "/x/cid"
    assert f"mysqlbench.session={os.environ[procs.SESSION_VAR]}" in argv
    assert "mysqlbench.artifact=mysql-engines-artifact" in argv
    assert "type=bind,source=/b,target=/b,readonly" in argv
    assert argv[-2:] == ["img", "/b/mysqld"]


# -- one server in a container ------------------------------------------------------
def test_server_in_container_cpuset_no_network_socket(runtime_image, build_dir, lock_entry, dataset,
                                                     tmp_path):
    datadir = _copy_datadir(dataset, tmp_path / "datadir")
    run_id = f"test-docker-{os.getpid()}"
    mems = placement.allowed_mems()[:1]   # one memory node, as the plan binds a server on one node
    with _server(build_dir, lock_entry, datadir, tmp_path / "run", run_id, mems=mems) as srv:
        cid = srv.container
        assert srv.backend == "docker" and srv.mechanism_used == "docker-cpuset"
        assert srv.image["id"] == runtime_image["id"]
        assert (srv.rundir / "cid").read_text().strip() == cid
        info = docker_backend.inspect(cid)
        hc = info["HostConfig"]
        # (a) the cpuset: as configured, as docker records it, and as seen from inside
        assert hc["CpusetCpus"] == placement.cpulist(CPU0)
        inside = _exec(cid, "cat /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null"
                            " || cat /sys/fs/cgroup/cpuset/cpuset.cpus")
        assert placement.parse_cpulist(inside) == CPU0
        status1 = _exec(cid, "grep Cpus_allowed_list /proc/1/status")
        assert placement.parse_cpulist(status1.split(":", 1)[1]) == CPU0
        assert placement.observed_cpus(srv.pid) == CPU0  # the mysqld, seen from the host
        # its memory nodes: docker's --cpuset-mems, the container's cpuset, the mysqld's Mems_allowed_list
        assert hc["CpusetMems"] == placement.cpulist(mems)
        inside = _exec(cid, "cat /sys/fs/cgroup/cpuset.mems.effective 2>/dev/null"
                            " || cat /sys/fs/cgroup/cpuset/cpuset.effective_mems")
        assert placement.parse_cpulist(inside) == mems
        assert placement.observed_mems(srv.pid) == mems
        assert Path(f"/proc/{srv.pid}/comm").read_text().strip() == "mysqld"
        assert srv.pid in server_pids(), "the container's mysqld carries no session label"
        # (b) no network: network mode none, only lo inside, skip-networking, no TCP listener
        assert hc["NetworkMode"] == "none"
        # no seccomp filter on the server's syscalls (harness.measure.docker.SECCOMP), as the kernel sees it
        assert "seccomp=unconfined" in hc["SecurityOpt"]
        assert re.search(r"^Seccomp:\s+0$", Path(f"/proc/{srv.pid}/status").read_text(), re.M)
        assert _exec(cid, "ls /sys/class/net").split() == ["lo"]
        assert srv.query("SELECT @@skip_networking")[0][0] == 1
        for f in ("tcp", "tcp6"):
            rows = Path(f"/proc/{srv.pid}/net/{f}").read_text().splitlines()[1:]
            assert not [r for r in rows if r.split()[3] == "0A"], f"mysqld's netns listens on {f}"
        # the container as specified: labels, init, auto-remove, read-only build
        labels = info["Config"]["Labels"]
        assert labels["mysqlbench.artifact"] == "mysql-engines-artifact"
        assert labels["mysqlbench.run"] == run_id
        assert labels["mysqlbench.session"] == SESSION
        assert hc["Init"] is True and hc["AutoRemove"] is True
        assert [u["Name"] for u in hc["Ulimits"]] == ["nofile"]
        res = _docker("exec", cid, "touch", str(srv.build_dir / "x"))
        assert res.returncode != 0, "the build is writable from the container"
        # (c) queries over the bind-mounted socket, from the host
        assert srv.version() == "5.6.24"
        assert srv.query("SELECT COUNT(*) FROM sbtest.sbtest1")[0][0] == 1000
        assert srv.alive()
        pid = srv.pid
        # (d) the backend object: a memory limit (and no swap beyond it), a watchdog, its info
        b = srv.runner
        assert isinstance(b, backends.DockerBackend) and b.pid == pid and b.container == cid
        limit = docker_backend.memory_limit()
        assert limit.endswith("m") and hc["Memory"] == int(limit[:-1]) * 1024 * 1024
        assert hc["MemorySwap"] == hc["Memory"]
        inside = _exec(cid, "cat /sys/fs/cgroup/memory.max 2>/dev/null"
                            " || cat /sys/fs/cgroup/memory/memory.limit_in_bytes").strip()
        assert int(inside) == hc["Memory"]
        # (e) the load generator joins the server's memory cgroup for its windows (cgroup v1,
        # as root): both ends of the socket charged to one memory cgroup, as for a bare server
        memcg = srv.client_memcg()
        if V1_MEMCG:
            assert memcg is not None and cid in memcg.name  # /docker/<cid> or docker-<cid>.scope
            seen = sysbench.run(["cat", "/proc/self/cgroup"], cpus=CPU0, run_id=run_id, timeout=30,
                                memcg=memcg)
            assert [ln.split(":", 2)[2] for ln in seen.splitlines()
                    if "memory" in ln.split(":")[1].split(",")] == [placement.cgroup_path(srv.pid, "memory")]
        else:
            assert memcg is None
        assert srv.placement_info() == {"backend": "docker", "mechanism": "docker-cpuset",
                                        "cpus": placement.cpulist(CPU0), "mems": placement.cpulist(mems),
                                        "image": runtime_image,
                                        "memory_limit": limit, "seccomp": "unconfined"}
        watchdog = b._watchdog
        assert watchdog is not None and watchdog.poll() is None
    assert docker_backend.inspect(cid) is None, "the container outlived the server"
    assert watchdog.poll() is not None, "the watchdog outlived a clean stop"
    assert not srv.alive()
    assert not Path(f"/proc/{pid}").exists() or pid not in server_pids()
    assert "Shutdown complete" in (srv.rundir / "mysqld.err").read_text(), "no clean shutdown"


def test_docker_backend_runs_a_one_shot_command_in_a_container(runtime_image, tmp_path):
    b = backends.make("docker", run_id=f"test-dockerrun-{os.getpid()}", cpus=CPU0, rw_mounts=[tmp_path])
    log = tmp_path / "log"
    rc = b.run(["sh", "-c", "grep Cpus_allowed_list /proc/self/status; ls /sys/class/net; "
                f"echo \"$MYSQLBENCH_RUN\" > {tmp_path}/run_id; read line; echo \"got $line\"; exit 3"],
               stdin="hello\n", log=log)
    assert rc == 3, log.read_text()
    lines = log.read_text().splitlines()
    assert placement.parse_cpulist(lines[0].split(":", 1)[1]) == CPU0
    assert lines[1:] == ["lo", "got hello"]
    assert (tmp_path / "run_id").read_text().strip() == b.run_id  # the mount is read-write
    assert docker_backend.containers(run_id=b.run_id) == []


def test_sigkill_of_the_harness_leaves_no_container(runtime_image, build_dir, template, tmp_path):
    held = harness_killed_while_serving("docker", build_dir, template, tmp_path)
    assert held["container"]
    assert wait_until(lambda: docker_backend.containers(run_id=held["run_id"]) == []), \
        "the container outlived a SIGKILLed harness"
    assert wait_until(lambda: held["pid"] not in server_pids())


def test_bootstrap_in_a_container_and_served_there(runtime_image, build_dir, lock_entry, tmp_path):
    out = initdb.bootstrap(BUILD, lock_entry, build_dir, tmp_path / "tpl", backend="docker")
    info = json.loads((out / "bootstrap.json").read_text())
    assert info["backend"] == "docker" and info["mechanism"] == "docker-cpuset"
    assert info["image"]["id"] == runtime_image["id"] and info["method"] == "bootstrap"
    assert "[docker]" in (out / "bootstrap.log").read_text()
    assert docker_backend.containers(session=SESSION) == [], "the bootstrap's container was left"
    datadir = _copy_datadir(out, tmp_path / "datadir")
    with _server(build_dir, lock_entry, datadir, tmp_path / "run", f"test-dockerbs-{os.getpid()}") as srv:
        assert srv.query("SELECT COUNT(*) FROM mysql.user WHERE user = 'root'")[0][0] > 0
        assert {r[0] for r in srv.query("SHOW DATABASES")} >= {"mysql", "performance_schema"}


def test_failed_bootstrap_in_a_container_is_one_line(runtime_image, build_dir, lock_entry, tmp_path):
    # MySQL 5.6 has no --initialize-insecure: mysqld refuses it inside the container
    with pytest.raises(builds.BuildError) as e:
        initdb.bootstrap(BUILD, {**lock_entry, "init": "initialize"}, build_dir, tmp_path / "tpl",
                         backend="docker")
    msg = str(e.value)
    assert "\n" not in msg and "bootstrap failed (exit 1, backend docker)" in msg, msg
    assert not (tmp_path / "tpl").exists()
    assert docker_backend.containers(session=SESSION) == []


MARIADB = "mariadb-10.11"


@pytest.fixture(scope="module")
def maria(docker_engine):
    """Debian's MariaDB 10.11 as the pipeline installs it: a tree of links into /usr."""
    entry = builds.load_lock(paths.LOCK)[MARIADB]
    d = ROOT / "resources" / "builds" / MARIADB
    if not d.exists():
        if os.geteuid() != 0:
            pytest.skip("installing Debian's mariadb-server needs root")
        builds.fetch(MARIADB, entry, d)
    builds.verify_installed(MARIADB, entry, d)
    return entry, d


def test_mariadb_10_11_bootstraps_loads_and_measures_in_containers(runtime_image, maria, tmp_path):
    """The install script, the dataset load and a measured cell of Debian's MariaDB 10.11
    (the binary and its files bind-mounted from /usr, the libraries from the image)."""
    entry, d = maria
    tpl = initdb.bootstrap(MARIADB, entry, d, tmp_path / "tpl", backend="docker")
    assert json.loads((tpl / "bootstrap.json").read_text())["method"] == "install-db"
    settings = run_settings(backend="docker", warmup_s=1, duration_s=2)
    ds = datasets.prepare("sbtest", "InnoDB_t1_n1000", name=MARIADB, entry=entry, build_dir=d, template=tpl,
                          out=tmp_path / "ds", settings=settings)
    assert json.loads((ds / "dataset.json").read_text())["placement"]["backend"] == "docker"
    out = tmp_path / "raw" / f"{MARIADB}_InnoDB_base_t1_c1_u2_r1"
    req = cell_spec(settings)
    m = cell.run_cell(experiment=req["experiment"], spec=req["spec"], cell=out.name, entry=entry,
                      build_dir=d, source=ds, settings=req["settings"], out=out)
    assert m["placement"]["backend"] == "docker" and m["placement"]["memory_limit"]
    assert m["placement"]["observed_server_cpus"] == m["placement"]["server_cpus"]
    assert m["server"]["version"].startswith("10.11.") and "MariaDB" in m["server"]["version"]
    assert m["result"]["qps"] > 0


def test_failed_start_leaves_no_container(runtime_image, build_dir, lock_entry, dataset, tmp_path):
    datadir = _copy_datadir(dataset, tmp_path / "datadir")
    srv = _server(build_dir, lock_entry, datadir, tmp_path / "run", f"test-docker-bad-{os.getpid()}",
                  options={"innodb_buffer_pool_size": "not-a-size", "no_such_option_xyz": 1})
    with pytest.raises(ServerError) as e:
        with srv:
            pass
    assert "\n" not in str(e.value)
    assert docker_backend.containers(run_id=srv.run_id) == []


def _memory_cgroups_seen(stop: threading.Event, seen: set) -> None:
    """Until `stop`: the memory cgroup of each sysbench window (`sysbench ... run`) this
    process started (once it runs sysbench: its comm) and of each labelled server, as
    ("sysbench"|"mysqld", path). Other sysbench calls (`--version`, `prepare`) stay apart
    by design and are not windows."""
    me = os.getpid()
    while not stop.is_set():
        for d in Path("/proc").iterdir():
            try:
                if d.name.isdigit() and (d / "comm").read_text().strip() == "sysbench" and \
                        int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me and \
                        (d / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")[-1] == b"run":
                    seen.add(("sysbench", placement.memory_cgroup(d.name)))
            except (OSError, ValueError, IndexError):
                continue
        seen.update(("mysqld", placement.memory_cgroup(pid)) for pid in server_pids())
        stop.wait(0.05)


def test_run_cell_docker_manifest(runtime_image, build_dir, lock_entry, dataset, tmp_path):
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    req = cell_spec({"backend": "docker", "warmup_s": 1, "duration_s": 2})
    stop, seen = threading.Event(), set()
    watcher = threading.Thread(target=_memory_cgroups_seen, args=(stop, seen), daemon=True)
    watcher.start()
    try:
        m = cell.run_cell(experiment=req["experiment"], spec=req["spec"], cell=out.name, entry=lock_entry,
                          build_dir=build_dir, source=dataset, settings=req["settings"], out=out)
    finally:
        stop.set()
        watcher.join()
    # where sysbench's windows were charged: the container's memory cgroup (cgroup v1, root), else apart
    server_cg = {cg for who, cg in seen if who == "mysqld"}
    client_cg = {cg for who, cg in seen if who == "sysbench"}
    assert len(server_cg) == 1 and client_cg, seen
    assert client_cg == (server_cg if V1_MEMCG else {placement.memory_cgroup("self")}), seen
    assert m["placement"]["backend"] == "docker"
    assert m["placement"]["mechanism"] == "docker-cpuset" and m["placement"]["seccomp"] == "unconfined"
    assert m["driver"]["client_memcg"] == ("shared" if V1_MEMCG else "apart")
    assert m["placement"]["observed_server_cpus"] == m["placement"]["server_cpus"]
    # the plan's memory nodes (placement.mems: plan), asked and seen by the kernel; a 1-core cell sits on
    # one node, so it is bound to that node (on this one-node host: node 0, all there is)
    p = m["placement"]
    assert p["server_mems"] == p["observed_server_mems"]
    planned = coreplan.cell_for(1, coreplan.plan(topology.Topology.live(), client_min=req["settings"]["client_cpus"]))
    assert p["server_mems"] == placement.cpulist(coreplan.mems_for("plan", planned) or placement.allowed_mems())
    assert m["result"]["qps"] > 0
    assert json.loads((out / "manifest.json").read_text())["placement"]["backend"] == "docker"
    assert (out / "mysqld.err").stat().st_size > 0
    # the windows it measured, and where the rest of its time went (bench/cell_overhead.py)
    t = m["timing"]
    assert t["windows"] == [{"warmup_s": 1, "duration_s": 2}]
    ph = t["phases"]
    assert ph["starts"] == 1 and ph["copy_s"] > 0 and ph["start_s"] > 0 and ph["stop_s"] > 0
    assert ph["end"].startswith("killed after the measurement")  # its datadir copy is discarded
    assert docker_backend.containers(run_id=f"{out.name}-{os.getpid()}") == []
    assert t["elapsed_s"] > 3 + ph["copy_s"] + ph["start_s"] + ph["stop_s"]


def test_auto_picks_docker_when_an_engine_answers(runtime_image, build_dir, lock_entry, tmp_path):
    srv = Server(name=BUILD, entry=lock_entry, build_dir=build_dir, datadir=tmp_path / "d",
                 rundir=tmp_path / "run", run_id="test-auto", cpus=CPU0, backend="auto")
    assert srv.backend == "docker" and srv.image["id"] == runtime_image["id"]


def test_auto_falls_back_to_host_with_one_warning(docker_engine, build_dir, lock_entry, tmp_path,
                                                  monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    srv = Server(name=BUILD, entry=lock_entry, build_dir=build_dir, datadir=tmp_path / "d",
                 rundir=tmp_path / "run", run_id="test-auto-host", cpus=CPU0, backend="auto")
    assert srv.backend == "host" and srv.image is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: backend auto:") and "using host" in err[0]


def test_docker_without_engine_is_one_line_error(docker_engine, build_dir, lock_entry, dataset,
                                                 tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    datadir = _copy_datadir(dataset, tmp_path / "datadir")
    with pytest.raises(ServerError, match="no Docker engine answers") as e:
        with _server(build_dir, lock_entry, datadir, tmp_path / "run", "test-docker-noengine"):
            pass
    assert "\n" not in str(e.value)


# -- interrupts and SIGKILL of the harness -------------------------------------------
def _cell_argv(dataset: Path, build_dir: Path, out: Path, duration: int) -> list[str]:
    spec = json.dumps(cell_spec({"backend": "docker", "warmup_s": 1, "duration_s": duration}))
    return harness_cmd("run-cell", "--cell", out.name, "--cell-spec", spec, "--build-dir", str(build_dir),
                       "--source", str(dataset), "--out", str(out))


def _start_cell(dataset, build_dir, out, session=SESSION, **env_extra) -> subprocess.Popen:
    env = harness_env()
    env[procs.SESSION_VAR] = session
    env.update(env_extra)
    return subprocess.Popen(_cell_argv(dataset, build_dir, out, 30), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _comm(pid: int) -> str | None:
    """pid's command name; None when it exited since it was listed."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except FileNotFoundError:
        return None


def _wait_measuring(proc, session: str, timeout=90) -> list[str]:
    """Until the cell's container runs and a labelled sysbench is at work; its container ids."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        ids = docker_backend.containers(session=session)
        sysbench = [p for p in procs.labelled_pids(session=session) if _comm(p) == "sysbench"]
        if ids and sysbench:
            return ids
        time.sleep(0.2)
    raise AssertionError("the cell's container and sysbench did not appear")


def _gone(session: str, timeout=30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not docker_backend.containers(session=session):
            return True
        time.sleep(0.2)
    return False


def _no_cell_dir(out: Path):
    assert not out.exists(), "a raw cell directory was left behind"
    assert not list(out.parent.glob(f".{out.name}.tmp-*")), "a temp cell directory was left behind"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_a_docker_cell_leaves_no_container(runtime_image, build_dir, dataset, tmp_path,
                                                        sig):
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    proc = _start_cell(dataset, build_dir, out)
    _wait_measuring(proc, SESSION)
    time.sleep(1.5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert docker_backend.containers(session=SESSION) == [], "a container outlived the interrupt"
    _no_cell_dir(out)
    assert server_pids() == []


def test_sigkill_of_the_harness_then_reap_removes_the_container(runtime_image, build_dir, dataset,
                                                                tmp_path):
    session = f"{SESSION}-reap"
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    # no watchdog: show that `harness reap --session` alone removes the survivor
    proc = _start_cell(dataset, build_dir, out, session, **{docker_backend.WATCHDOG_VAR: "0"})
    try:
        ids = _wait_measuring(proc, session)
        proc.kill()
        proc.communicate(timeout=60)
        time.sleep(1.0)
        assert docker_backend.containers(session=session) == ids, "expected the container to survive"
        from harness import paths  # and the cell's run directory (its socket): reaped below
        assert [d for d, owner in paths.owned_scratch_dirs() if owner == proc.pid]
        res = subprocess.run(harness_cmd("reap", "--session", session), capture_output=True, text=True,
                             env=harness_env(), cwd=ROOT, timeout=120)
        assert res.returncode == 0, res.stderr
        assert ids[0][:12] in res.stderr
        assert not [d for d, owner in paths.owned_scratch_dirs() if owner == proc.pid]
        assert docker_backend.containers(session=session) == []
        assert procs.server_pids(session=session) == []
        assert not out.exists()
    finally:
        docker_backend.reap(session=session)


def test_sigkill_of_the_harness_watchdog_removes_the_container(runtime_image, build_dir, dataset,
                                                               tmp_path):
    session = f"{SESSION}-watchdog"
    out = tmp_path / "raw" / f"{BUILD}_InnoDB_base_t1_c1_u2_r1"
    proc = _start_cell(dataset, build_dir, out, session)
    try:
        _wait_measuring(proc, session)
        proc.kill()
        proc.communicate(timeout=60)
        assert _gone(session), "the container outlived a SIGKILLed harness (no watchdog?)"
        assert procs.server_pids(session=session) == []
        assert not out.exists()
        from harness import paths  # and its copied datadir, once the container is gone
        deadline = time.monotonic() + 30
        while (mine := [d for d in paths.work_dir().iterdir() if d.name.startswith(out.name[:40])]) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not mine, "a SIGKILLed cell's copied datadir outlived its watchdog"
        runs = [d for d, owner in paths.owned_scratch_dirs() if owner == proc.pid]
        while runs and time.monotonic() < deadline:
            time.sleep(0.1)
            runs = [d for d in runs if d.exists()]
        assert not runs, "a SIGKILLed cell's run directory (socket, error log) outlived its watchdog"
    finally:
        docker_backend.reap(session=session)


def test_smoke_pipeline_through_the_host_backend(tmp_path):
    """The default pipeline test (tests/e2e/test_e2e_pipeline.py) runs in containers; this one
    runs the smoke profile's A3 Point-Selects with the explicit fallback, backend host
    (a cgroup cpuset or taskset), through Snakemake in a fresh copy."""
    work = copy_checkout(tmp_path / "clone")
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    res = _sh(snakemake, "data/tidy/point_select_summary.csv", "--cores", "all", "--config", "backend=host",
              "--configfile", "config/smoke.yaml", cwd=work)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    cells = list((work / "data/raw/A3/point_select").iterdir())
    assert cells
    for c in cells:
        m = json.loads((c / "manifest.json").read_text())
        assert m["placement"]["backend"] == "host"
        assert m["placement"]["mechanism"] in ("cgroup-v1", "cgroup-v2", "taskset")
        assert m["placement"]["observed_server_cpus"] == m["placement"]["server_cpus"]
    assert json.loads((work / "resources/templates/mysql-5.6.24/bootstrap.json").read_text())["backend"] == "host"
    assert docker_backend.containers(session=SESSION) == []
