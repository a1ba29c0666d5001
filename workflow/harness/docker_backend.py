"""The docker backend's moving parts: the runtime image, labelled containers,
and their reaping.

A server container is `docker run --rm --init --network none --cpuset-cpus …`
of the runtime image (Debian bookworm + the libraries in docker/packages.txt,
built offline by docker/build-image.sh); the build, the datadir and the run
dir are bind-mounted at their host paths, so the rendered my.cnf and the
unix socket work unchanged and sysbench stays on the host. Every container
carries three labels (artifact, run, session) and is removed by label:
by the Server on stop, failure or SIGINT/SIGTERM, by a per-run watchdog
process when the harness is SIGKILLed, and by `harness reap`.

Nothing here ever creates a network: the engine has no bridge
(scripts/dockerd.sh) and every container runs with --network none.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import paths, procs

ROOT = paths.ROOT
BUILD_SCRIPT = ROOT / "docker" / "build-image.sh"
DOCKERD_SCRIPT = ROOT / "scripts" / "dockerd.sh"

LABEL_ARTIFACT = "mysqlbench.artifact"
LABEL_RUN = "mysqlbench.run"
LABEL_SESSION = "mysqlbench.session"
MECHANISM = "docker-cpuset"
# Set to 0 to start no watchdog (the tests do, to show that `harness reap` alone suffices).
WATCHDOG_VAR = "MYSQLBENCH_DOCKER_WATCHDOG"
SERVER_COMMS = ("mysqld", "mariadbd")


class DockerError(Exception):
    """The docker backend cannot do what was asked: one line, with the fix."""


def docker_bin() -> str:
    """The docker CLI: $MYSQLBENCH_DOCKER, else the one on PATH (a newer CLI
    negotiates the API down to Debian's 20.10 engine), else Debian's."""
    return os.environ.get("MYSQLBENCH_DOCKER") or shutil.which("docker") or "/usr/bin/docker"


def _docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    argv = [docker_bin(), *args]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise DockerError("the docker CLI is not installed; apt-get install -y docker.io") from None
    except subprocess.TimeoutExpired:
        raise DockerError(f"docker {args[0]} did not answer within {timeout:.0f}s") from None
    if check and res.returncode != 0:
        raise DockerError(f"docker {args[0]} failed: {_err_line(res.stderr)}")
    return res


def _err_line(stderr: str) -> str:
    """The line of docker's stderr that says what went wrong (not its usage hint)."""
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    lines = [l for l in lines if not l.startswith("Run 'docker")] or lines or ["no output"]
    return lines[-1]


def engine_version(timeout: float = 5) -> str | None:
    """The engine's version if one answers within `timeout` seconds, else None."""
    try:
        res = _docker("info", "--format", "{{.ServerVersion}}", timeout=timeout, check=False)
    except DockerError:
        return None
    v = res.stdout.strip()
    return v if res.returncode == 0 and v and "<no value>" not in v else None


# -- image ---------------------------------------------------------------------
def _script(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, MYSQLBENCH_DOCKER=docker_bin())
    try:
        return subprocess.run(["bash", str(BUILD_SCRIPT), *args], capture_output=True, text=True,
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise DockerError(f"{BUILD_SCRIPT.name} {args[0]} took more than {timeout:.0f}s") from None


def recipe() -> str:
    """The recipe hash (suite, variant, package list) the image is looked up by."""
    return _script("recipe", timeout=30).stdout.strip()


def image(build: bool = True, timeout: float = 1800) -> dict:
    """The runtime image: {"tag", "id", "recipe"}. Looked up by its recipe tag;
    built offline (docker/build-image.sh, ~30 s) when missing and `build`."""
    res = _script("lookup", timeout=60)
    if res.returncode != 0:
        if not build:
            raise DockerError("the runtime image is not built; run docker/build-image.sh")
        res = _script("ensure", timeout=timeout)
        if res.returncode != 0:
            tail = _err_line(res.stderr).removeprefix("build-image: ")
            raise DockerError(f"cannot build the runtime image ({tail})")
    tag = res.stdout.strip().splitlines()[-1]
    image_id = _docker("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()
    return {"tag": tag, "id": image_id, "recipe": recipe()}


# -- containers ----------------------------------------------------------------
def host_mems() -> str:
    """The memory nodes a container may use (--cpuset-mems): all the host's."""
    for p in ("/sys/fs/cgroup/cpuset/cpuset.mems", "/sys/fs/cgroup/cpuset.mems.effective",
              "/sys/devices/system/node/online"):
        try:
            text = Path(p).read_text().strip()
        except OSError:
            continue
        if text:
            return text
    return "0"


NOFILE = 65535
_CAP_SYS_RESOURCE = 24


def nofile_limit() -> int:
    """The open-files limit a container can get: 65535 (the server's
    open_files_limit), unless this host cannot raise a hard limit (no
    CAP_SYS_RESOURCE in the bounding set, as in some VMs and containers): then
    the current hard limit, which is what the host backend's mysqld gets too."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapBnd:"):
                if int(line.split()[1], 16) >> _CAP_SYS_RESOURCE & 1:
                    return NOFILE
    except (OSError, ValueError):
        pass
    return NOFILE if hard == resource.RLIM_INFINITY else min(NOFILE, hard)


def labels(run_id: str, session: str | None = None) -> dict[str, str]:
    session = os.environ.get(procs.SESSION_VAR, "") if session is None else session
    return {LABEL_ARTIFACT: procs.LABEL, LABEL_RUN: run_id, LABEL_SESSION: session}


def run_argv(*, image_ref: str, run_id: str, cpus: str, mems: str, cidfile: Path,
             ro_mounts: list[Path], rw_mounts: list[Path], env: dict[str, str],
             command: list[str], nofile: int | None = None) -> list[str]:
    """The `docker run` arguments of one server container (detached)."""
    nofile = nofile_limit() if nofile is None else nofile
    argv = ["run", "--detach", "--rm", "--init", "--network", "none",
            "--cpuset-cpus", cpus, "--cpuset-mems", mems,
            "--ulimit", f"nofile={nofile}:{nofile}", "--cidfile", str(cidfile)]
    for k, v in labels(run_id).items():
        argv += ["--label", f"{k}={v}"]
    if os.geteuid() != 0:  # the server runs as the harness' user (my.cnf has no user=root then)
        argv += ["--user", f"{os.geteuid()}:{os.getegid()}"]
    for p in ro_mounts:
        argv += ["--mount", f"type=bind,source={p},target={p},readonly"]
    for p in rw_mounts:
        argv += ["--mount", f"type=bind,source={p},target={p}"]
    for k, v in env.items():
        argv += ["--env", f"{k}={v}"]
    return argv + [image_ref, *command]


def run(argv: list[str], timeout: float = 120) -> str:
    """Start a container from `run_argv(...)`; return its id."""
    return _docker(*argv, timeout=timeout).stdout.strip()


def inspect(cid: str) -> dict | None:
    """`docker inspect` of a container, or None when it no longer exists."""
    try:
        res = _docker("inspect", "--type", "container", cid, timeout=30, check=False)
    except DockerError:
        return None
    if res.returncode != 0:
        return None
    data = json.loads(res.stdout or "[]")
    return data[0] if data else None


def running(cid: str) -> bool:
    info = inspect(cid)
    return bool(info and info["State"].get("Running"))


def _ppid_comm(pid: int) -> tuple[int, str]:
    stat = Path(f"/proc/{pid}/stat").read_text()
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    return int(stat[stat.rindex(")") + 2:].split()[1]), comm


def server_pid(init_pid: int) -> int | None:
    """The host pid of the server under the container's init (docker-init), if it runs."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid, comm = _ppid_comm(int(d.name))
        except (OSError, ValueError, IndexError):
            continue
        if ppid == init_pid and comm in SERVER_COMMS:
            return int(d.name)
    return None


def stop(cid: str, timeout: float) -> bool:
    """`docker stop -t timeout`: SIGTERM (docker-init forwards it to the server),
    SIGKILL after `timeout`. True if it stopped before being killed."""
    t0 = time.monotonic()
    try:
        _docker("stop", "-t", str(int(max(1, timeout))), cid, timeout=timeout + 60, check=False)
    except DockerError:
        return False
    return time.monotonic() - t0 < max(1, timeout) - 0.5


def remove(cid: str, wait: float = 30) -> None:
    """`docker rm -f`, then wait until the container is gone (also --rm's own removal)."""
    try:
        _docker("rm", "-f", cid, timeout=60, check=False)
    except DockerError:
        pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            res = _docker("ps", "-aq", "--no-trunc", "--filter", f"id={cid}", timeout=30, check=False)
        except DockerError:
            return
        if res.returncode != 0 or not res.stdout.strip():
            return
        time.sleep(0.2)


def containers(session: str | None = None, run_id: str | None = None) -> list[str]:
    """Ids of this artifact's containers (of one session or run, or all), running or not;
    [] when there is no docker CLI or no engine answers."""
    filters = ["--filter", f"label={LABEL_ARTIFACT}={procs.LABEL}"]
    if session is not None:
        filters += ["--filter", f"label={LABEL_SESSION}={session}"]
    if run_id is not None:
        filters += ["--filter", f"label={LABEL_RUN}={run_id}"]
    try:
        res = _docker("ps", "-aq", "--no-trunc", *filters, timeout=30, check=False)
    except DockerError:
        return []
    return res.stdout.split() if res.returncode == 0 else []


def reap(session: str | None = None, run_id: str | None = None) -> list[str]:
    """Remove (docker rm -f) every container of this artifact carrying the
    session (or run) label, or all of them when neither is given; return their
    ids. A no-op when no engine answers. For `harness reap` and test sessions."""
    ids = containers(session, run_id)
    for cid in ids:
        remove(cid)
    return ids


# -- the per-run watchdog -------------------------------------------------------
def start_watchdog(run_id: str) -> subprocess.Popen | None:
    """A detached process that removes this run's containers when the harness
    dies (even by SIGKILL, which no handler sees). Stopped by `stop_watchdog`."""
    if os.environ.get(WATCHDOG_VAR, "1") == "0":
        return None
    env = {k: v for k, v in os.environ.items() if k not in (procs.LABEL_VAR, procs.RUN_VAR)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env["MYSQLBENCH_DOCKER"] = docker_bin()
    return subprocess.Popen([sys.executable, "-m", "harness.docker_backend", "watch",
                             str(os.getpid()), run_id], env=env, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, close_fds=True)


def stop_watchdog(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _wait_for_exit(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):
        while Path(f"/proc/{pid}").exists():
            time.sleep(0.5)
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def _watch(pid: int, run_id: str) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _wait_for_exit(pid)
    reap(run_id=run_id)
    return 0


@dataclass
class DockerPlacement:
    """What Server.placement is under the docker backend: the engine holds the
    container to its cpuset; no cgroup of ours to remove."""
    cpus: list[int]
    mechanism: str = MECHANISM
    path: Path | None = None
    container: str | None = field(default=None)

    def remove(self) -> None:
        pass


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "watch":
        return _watch(int(argv[1]), argv[2])
    print("usage: python -m harness.docker_backend watch <pid> <run_id>", file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
