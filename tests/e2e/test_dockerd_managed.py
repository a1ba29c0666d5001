"""The pipeline's own Docker engine (scripts/dockerd.sh from Snakemake's
onstart/onsuccess/onerror): started when none answers and backend is docker
or auto, stopped at the end only by the run that started it; an engine that
was already there is left running, and backend host starts none.

Each test gets a private engine location (state dir with socket, pidfile and
owner; data root; DOCKER_HOST pointing there), so it never touches the
engine other tests or users run. Real dockerd, real Snakemake on a copy of
the repository; the target is a corpus (no container needed, so no image)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, copy_checkout

pytestmark = pytest.mark.e2e
DOCKERD = ROOT / "scripts" / "dockerd.sh"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A copy of the repository as a fresh clone would have it (tracked + new files)."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        pytest.skip("starting a Docker engine needs root and dockerd (docker.io)")
    return copy_checkout(tmp_path_factory.mktemp("clone"))


@pytest.fixture
def engine_env():
    """Env vars that put scripts/dockerd.sh and the harness on a private engine location
    (short paths: containerd's sockets live under the exec root)."""
    d = Path(tempfile.mkdtemp(prefix="mbd-", dir="/tmp"))
    env = {"MYSQLBENCH_DOCKERD_DIR": str(d / "s"), "MYSQLBENCH_DOCKERD_ROOT": str(d / "root"),
           "DOCKER_HOST": f"unix://{d}/s/docker.sock"}
    yield env
    _dockerd(env, "stop")  # whatever a failed test left (only ever this private engine)
    subprocess.run(["rm", "-rf", "--one-file-system", str(d)], check=False)


def _env(extra: dict) -> dict:
    env = dict(os.environ)
    env.update(extra)
    return env


def _dockerd(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(DOCKERD), *args], capture_output=True, text=True, env=_env(env),
                          timeout=180)


def _pid(env: dict) -> int | None:
    try:
        pid = int((Path(env["MYSQLBENCH_DOCKERD_DIR"]) / "dockerd.pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if Path(f"/proc/{pid}").exists() else None


def _gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return not Path(f"/proc/{pid}").exists()


def _pipeline(work: Path, env: dict, backend: str) -> subprocess.CompletedProcess:
    target = "data/tidy/config.resolved.yaml"
    (work / target).unlink(missing_ok=True)
    res = subprocess.run([SNAKEMAKE, target, "--cores", "1", "--config", f"backend={backend}"], cwd=work,
                         capture_output=True, text=True, env=_env(env), timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res


def test_the_pipeline_starts_its_engine_when_none_answers_and_stops_it(work, engine_env):
    res = _pipeline(work, engine_env, "docker")
    out = res.stdout + res.stderr
    started = [l for l in out.splitlines() if l.startswith("dockerd: started (pid ")]
    assert started, out[-2000:]
    pid = int(started[0].split("(pid ")[1].split(",")[0])
    assert "dockerd: stopped (pid" in out
    assert _gone(pid), "the engine the run started outlived it"
    state = Path(engine_env["MYSQLBENCH_DOCKERD_DIR"])
    assert not (state / "dockerd.pid").exists() and not (state / "owner").exists()
    assert not (state / "docker.sock").exists()


def test_the_pipeline_leaves_an_engine_it_did_not_start(work, engine_env):
    assert _dockerd(engine_env, "start").returncode == 0
    pid = _pid(engine_env)
    assert pid is not None
    res = _pipeline(work, engine_env, "docker")
    assert "already answers" in res.stdout + res.stderr
    assert _pid(engine_env) == pid, "the run stopped an engine it had not started"
    assert _dockerd(engine_env, "status").returncode == 0
    # a run that did not start it cannot stop it by name either
    assert "left running" in _dockerd(engine_env, "stop", "--owner", "another-run").stdout
    assert _pid(engine_env) == pid
    assert _dockerd(engine_env, "stop").returncode == 0
    assert _gone(pid)


def test_the_host_backend_starts_no_engine(work, engine_env):
    res = _pipeline(work, engine_env, "host")
    assert "dockerd:" not in res.stdout + res.stderr
    assert _pid(engine_env) is None


def _unreachable(engine_env: dict) -> dict:
    """DOCKER_HOST naming a socket where nothing answers (and that is not ours to start)."""
    return {**engine_env, "DOCKER_HOST": f"unix://{Path(engine_env['MYSQLBENCH_DOCKERD_DIR']).parent}/none.sock"}


def test_backend_docker_without_an_engine_stops_before_any_job_in_one_line(work, engine_env):
    env = _unreachable(engine_env)
    (work / "data/tidy/config.resolved.yaml").unlink(missing_ok=True)
    res = subprocess.run([SNAKEMAKE, "data/tidy/config.resolved.yaml", "--cores", "1", "--config", "backend=docker"],
                         cwd=work, capture_output=True, text=True, env=_env(env), timeout=600)
    assert res.returncode != 0
    errors = [l for l in (res.stdout + res.stderr).splitlines() if "backend docker: cannot start a Docker engine" in l]
    assert len(errors) == 1 and "does not answer" in errors[0], res.stderr[-2000:]
    assert not (work / "data/tidy/config.resolved.yaml").exists(), "a job ran without its engine"
    assert _pid(engine_env) is None


def test_backend_auto_without_an_engine_warns_and_runs_on_the_host(work, engine_env):
    res = _pipeline(work, _unreachable(engine_env), "auto")
    warnings = [l for l in (res.stdout + res.stderr).splitlines() if l.startswith("warning: backend auto:")]
    assert len(warnings) == 1 and "servers run on the host" in warnings[0]
    assert _pid(engine_env) is None
