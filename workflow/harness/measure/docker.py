"""The docker backend's moving parts: the runtime image, labelled containers,
and their reaping.

A server container is `docker run --rm --init --network none --cpuset-cpus …
--cpuset-mems …` (the cell's CPUs and memory nodes) of the runtime image (Debian bookworm + the libraries in docker/packages.txt,
built offline by docker/build-image.sh); the build, the datadir and the run
dir are bind-mounted at their host paths, so the rendered my.cnf and the
unix socket work unchanged and sysbench stays on the host. Every container
carries three labels (artifact, run, session) and is removed by label:
by the Server on stop, failure or SIGINT/SIGTERM, by a per-run watchdog
process when the harness is SIGKILLed, and by `harness reap`.

Which engine: $DOCKER_HOST when set, else the pipeline's own engine
(scripts/dockerd.sh: its socket in $MYSQLBENCH_DOCKERD_DIR, default
/run/mysqlbench-dockerd) when it answers, else the CLI's default. Every docker
command here, build-image.sh and the watchdog get the same choice (`cli_env`).

Nothing here ever creates a network: the engine has no bridge
(scripts/dockerd.sh) and every container runs with --network none.
"""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import paths

from harness.measure import procs

ROOT = paths.ROOT
BUILD_SCRIPT = ROOT / "docker" / "build-image.sh"
DOCKERD_SCRIPT = ROOT / "scripts" / "dockerd.sh"

LABEL_ARTIFACT = "mysqlbench.artifact"
LABEL_RUN = "mysqlbench.run"
LABEL_SESSION = "mysqlbench.session"
MECHANISM = "docker-cpuset"
# Set to 0 to start no watchdog (the tests do, to show that `harness reap` alone suffices).
WATCHDOG_VAR = "MYSQLBENCH_WATCHDOG"
SERVER_COMMS = ("mysqld", "mariadbd")
# The pipeline's own engine (scripts/dockerd.sh): state dir with its socket, pidfile, owner
DOCKERD_DIR_VAR = "MYSQLBENCH_DOCKERD_DIR"
DOCKERD_DIR = Path("/run/mysqlbench-dockerd")
# A memory limit for every container (docker syntax, e.g. 8g); default: 3/4 of the host's RAM
MEMORY_VAR = "MYSQLBENCH_DOCKER_MEMORY"
# No seccomp filter on the server's syscalls: Docker's default profile made each syscall
# ~20 % dearer here (bench/container_overhead.py --syscalls: dd's read/write 281-296 ns
# in a default container, 233-250 bare, 234-241 unconfined; 6.18 kernel, Docker 20.10),
# a cost on every query's recv/send/poll that the bare server does not pay. What isolates
# a measurement stays: --network none, the cpuset, the read-only build mount, the
# memory limit. Recorded in every manifest (placement.seccomp).
SECCOMP = "unconfined"


class DockerError(Exception):
    """The docker backend cannot do what was asked: one line, with the fix."""


def docker_bin() -> str:
    """The docker CLI: $MYSQLBENCH_DOCKER, else the one on PATH (a newer CLI
    negotiates the API down to Debian's 20.10 engine), else Debian's."""
    return os.environ.get("MYSQLBENCH_DOCKER") or shutil.which("docker") or "/usr/bin/docker"


def dockerd_dir() -> Path:
    return Path(os.environ.get(DOCKERD_DIR_VAR) or DOCKERD_DIR)


def own_socket() -> Path:
    """The socket of the engine scripts/dockerd.sh starts."""
    return dockerd_dir() / "docker.sock"


def _connectable(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


def engine_host() -> str | None:
    """The DOCKER_HOST every docker command here uses: $DOCKER_HOST if set (None:
    leave it), else the pipeline's own engine if its socket accepts, else None
    (the CLI's default engine)."""
    if os.environ.get("DOCKER_HOST"):
        return None
    sock = own_socket()
    return f"unix://{sock}" if sock.is_socket() and _connectable(sock) else None


def cli_env(base: dict | None = None) -> dict:
    """An environment for the docker CLI (and build-image.sh) that reaches the chosen engine."""
    env = dict(os.environ if base is None else base)
    host = engine_host()
    if host:
        env["DOCKER_HOST"] = host
    return env


def _docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    argv = [docker_bin(), *args]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, env=cli_env())
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
    env = cli_env()
    env["MYSQLBENCH_DOCKER"] = docker_bin()
    try:
        return subprocess.run(["bash", str(BUILD_SCRIPT), *args], capture_output=True, text=True,
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise DockerError(f"{BUILD_SCRIPT.name} {args[0]} took more than {timeout:.0f}s") from None


def recipe() -> str:
    """The recipe hash (suite, variant, package list) the image is looked up by."""
    return _script("recipe", timeout=30).stdout.strip()


REPO = "mysqlbench/runtime"   # docker/build-image.sh's REPO


def present(rec: str) -> dict | None:
    """The image of recipe `rec` if the engine has it: one `docker image inspect` of its
    recipe tag, giving its id and content tag (what `build-image.sh lookup` finds with
    two, after its own recipe). Every cell's server start asks this; None: not present,
    or no engine answers (image() then says which)."""
    try:
        res = _docker("image", "inspect", "--format", '{{.Id}}{{range .RepoTags}} {{.}}{{end}}',
                      f"{REPO}:recipe-{rec}", timeout=30, check=False)
    except DockerError:
        return None
    if res.returncode != 0 or not res.stdout.strip():
        return None
    image_id, *tags = res.stdout.split()
    content = [t for t in tags if re.fullmatch(rf"{REPO}:[0-9a-f]{{64}}", t)]  # build-image.sh's content tag
    return {"tag": content[0], "id": image_id, "recipe": rec} if content else None


def image_if_present() -> dict | None:
    """The runtime image when an engine answers and has it (one `docker image inspect`
    after the recipe), else None: the backends' common case before any slower check."""
    try:
        return present(recipe())
    except DockerError:
        return None


def image(build: bool = True, timeout: float = 1800) -> dict:
    """The runtime image: {"tag", "id", "recipe"}. Looked up by its recipe tag;
    built offline (docker/build-image.sh, ~30 s) when missing and `build`."""
    rec = recipe()
    found = present(rec)
    if found is not None:
        return found
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
    return {"tag": tag, "id": image_id, "recipe": rec}


# -- containers ----------------------------------------------------------------
NOFILE = 65535
_CAP_SYS_RESOURCE = 24


def nofile_limit() -> int:
    """The open-files limit a container can get: 65535 (the server's
    open_files_limit), unless this host cannot raise a hard limit (no
    CAP_SYS_RESOURCE in the bounding set, as in some VMs and containers): then
    the current hard limit, which is what the host backend's mysqld gets too."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapBnd:"):
                if int(line.split()[1], 16) >> _CAP_SYS_RESOURCE & 1:
                    return NOFILE
    except (OSError, ValueError):
        pass
    return NOFILE if hard == resource.RLIM_INFINITY else min(NOFILE, hard)


def memory_limit() -> str:
    """The containers' memory limit (docker syntax): $MYSQLBENCH_DOCKER_MEMORY, else
    three quarters of the host's RAM in MiB: room for any buffer pool a profile sizes
    from its data, while the server can never take the host down. On cgroup v1 sysbench
    runs its windows in the container's memory cgroup (backends.Backend.client_memcg),
    so the limit covers its few MB too."""
    v = os.environ.get(MEMORY_VAR, "").strip()
    if v:
        return v
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) * 3 // 4 // 1024}m"
    except (OSError, ValueError, IndexError):
        pass
    return "1g"


def labels(run_id: str, session: str | None = None) -> dict[str, str]:
    session = os.environ.get(procs.SESSION_VAR, "") if session is None else session
    return {LABEL_ARTIFACT: procs.LABEL, LABEL_RUN: run_id, LABEL_SESSION: session}


def mount_pair(m) -> tuple[Path, Path]:
    """(host path, path in the container) of a mount: a path alone is mounted at itself; a
    pair at a neutral path (harness.studies.c.pgserver: PostgreSQL's unprivileged uid
    cannot pass a mode-700 folder the host path may lie under)."""
    return (Path(m[0]), Path(m[1])) if isinstance(m, (tuple, list)) else (Path(m), Path(m))


def run_argv(*, image_ref: str, run_id: str, cpus: str, mems: str, cidfile: Path,
             ro_mounts: list, rw_mounts: list, env: dict[str, str],
             command: list[str], nofile: int | None = None, memory: str | None = None,
             detach: bool = True, stdin: bool = False, user: str | None = None,
             files: list[tuple[Path, str]] = ()) -> list[str]:
    """The `docker run` arguments of one container: detached (a server), or attached
    with `stdin` open (a one-shot command such as `mysqld --bootstrap` fed SQL).
    `user` (uid:gid) runs it as that user (PostgreSQL refuses root); `files` are
    (host file, path in the container) mounted read-only (its /etc/passwd)."""
    nofile = nofile_limit() if nofile is None else nofile
    argv = ["run", "--detach"] if detach else ["run", *(["--interactive"] if stdin else [])]
    argv += ["--rm", "--init", "--network", "none", "--cpuset-cpus", cpus, "--cpuset-mems", mems,
             "--security-opt", f"seccomp={SECCOMP}",
             "--ulimit", f"nofile={nofile}:{nofile}", "--cidfile", str(cidfile)]
    if memory:  # and no swap beyond it: a server that outgrows it is killed, never swapped
        argv += ["--memory", memory, "--memory-swap", memory]
    for k, v in labels(run_id).items():
        argv += ["--label", f"{k}={v}"]
    if user:
        argv += ["--user", user]
    elif os.geteuid() != 0:  # the server runs as the harness' user (my.cnf has no user=root then)
        argv += ["--user", f"{os.geteuid()}:{os.getegid()}"]
    for src, target in map(mount_pair, ro_mounts):
        argv += ["--mount", f"type=bind,source={src},target={target},readonly"]
    for src, target in map(mount_pair, rw_mounts):
        argv += ["--mount", f"type=bind,source={src},target={target}"]
    for src, target in files:
        argv += ["--mount", f"type=bind,source={src},target={target},readonly"]
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


def server_pid(init_pid: int, comms: tuple[str, ...] | None = SERVER_COMMS) -> int | None:
    """The host pid of the command under the container's init (docker-init), if it
    runs (of one of `comms`; any command when None)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid, comm = _ppid_comm(int(d.name))
        except (OSError, ValueError, IndexError):
            continue
        if ppid == init_pid and (comms is None or comm in comms):
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
        if _docker("rm", "-f", cid, timeout=60, check=False).returncode == 0:
            return  # `rm -f` answers once the container is gone
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
