"""Where a server process runs: one object per backend behind one lifecycle.

`HostBackend` runs the process here, in a per-run cgroup cpuset (v1 or v2;
taskset where neither is writable). `DockerBackend` runs it in a labelled
`--network none` container of the offline-built runtime image, held by
`--cpuset-cpus` and a memory limit, with the given paths bind-mounted at
their host paths (so the same command line, my.cnf and socket work inside).
Both give the same calls, so a server, a datadir bootstrap and a dataset load
go through whichever backend the profile names:

    b = make("docker", run_id=..., cpus=[0], mems=[0], ro_mounts=[build], rw_mounts=[datadir, rundir])
    b.start(argv, env)      # a long-running process (a server); b.pid, b.alive(), b.exited()
    b.stop(kill=False, timeout=120) -> bool   # True: it ended by itself within the timeout
    b.run(argv, env, stdin=..., log=...) -> exit status   # a one-shot command (bootstrap)
    b.info()                # backend, mechanism, cpus, mems, image, memory limit, fallback

`mems`: the memory nodes the process may allocate on (a container's
--cpuset-mems, the cgroup's cpuset.mems); None = every node this process may
use. It is checked against those before anything starts (placement.run_mems).

Nothing outlives the harness: the host's process dies with it
(PR_SET_PDEATHSIG), and a detached watchdog per run (`python -m harness
watchdog <pid> <run>`, which calls `watch`) removes the run's container or cgroup as
soon as the harness is gone, even after a SIGKILL no handler sees.

`auto` is docker when an engine answers and the image can be had, else host;
the reason is printed once (`warning: backend auto: ...; using host`) and kept
in `info()["fallback"]`, so manifests and the paper can repeat it.
"""
from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import paths

from harness.measure import docker as docker_backend

from harness.measure import placement

from harness.measure import procs

NAMES = ("host", "docker", "auto")
WATCHDOG_VAR = docker_backend.WATCHDOG_VAR


class BackendError(Exception):
    """The backend cannot run what was asked: one line, with the fix."""


def link_targets(root: Path) -> list[Path]:
    """Paths outside `root` that its symlinks point at (a Debian build is a tree of
    links into /usr): a container mounts them too, so it runs the verified files."""
    root = Path(root).resolve()
    out: list[Path] = []
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(d) / n
            if p.is_symlink():
                t = p.resolve()
                if t.exists() and not t.is_relative_to(root) and t not in out:
                    out.append(t)
    return out


class Backend:
    """What every backend gives; see the module docstring."""
    name = ""
    mechanism = ""
    image: dict | None = None
    fallback: str | None = None

    def __init__(self, run_id: str, cpus, mems=None):
        self.run_id = run_id
        self.cpus = sorted(set(cpus))
        self.mems = placement.run_mems(mems)   # a placement.PlacementError: one line, with the fix
        self._watchdog: subprocess.Popen | None = None

    def info(self) -> dict:
        out = {"backend": self.name, "mechanism": self.mechanism,
               "cpus": placement.cpulist(self.cpus), "mems": placement.cpulist(self.mems), "image": self.image}
        if self.fallback:
            out["fallback"] = self.fallback
        return out

    def client_memcg(self) -> Path | None:
        """The memory cgroup the load generator joins for its windows (sysbench.run), or
        None: it stays in the harness's. host: None, the server is charged where the
        harness is (a placement cgroup holds only the cpuset on cgroup v1)."""
        return None

    def _start_watchdog(self, cgroup: Path | None = None) -> None:
        self._watchdog = start_watchdog(self.run_id, docker=self.name == "docker", cgroup=cgroup)

    def _stop_watchdog(self) -> None:
        stop_watchdog(self._watchdog)
        self._watchdog = None


# -- host ---------------------------------------------------------------------------
class HostBackend(Backend):
    """The process runs here, in a cgroup cpuset of its own (or under taskset)."""
    name = "host"

    def __init__(self, run_id: str, cpus, mechanism: str = "auto", mems=None):
        super().__init__(run_id, cpus, mems)
        self.placement = placement.Placement(run_id, self.cpus, mechanism, mems=self.mems)
        self.mechanism = self.placement.mechanism
        self.proc: subprocess.Popen | None = None

    def _preexec(self):
        place = self.placement

        def preexec():
            procs.die_with_parent()
            place.preexec()
        return preexec

    def start(self, argv: list, env: dict | None = None) -> None:
        self.placement.__enter__()
        self._start_watchdog(self.placement.path)
        self.proc = subprocess.Popen(
            [str(a) for a in argv], env=procs.labelled_env(self.run_id, env),
            preexec_fn=self._preexec(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def exited(self) -> str | None:
        if self.proc is None or self.proc.poll() is not None:
            return f"exited with {self.proc.returncode if self.proc else '?'} during startup"
        return None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, kill: bool = False, timeout: float = 120) -> bool:
        """SIGTERM and wait (SIGKILL when `kill`); SIGKILL after `timeout`: then False."""
        clean = True
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill() if kill else self.proc.terminate()
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=30)
                    clean = False
        finally:
            self.placement.remove()
            self._stop_watchdog()
        return clean

    def run(self, argv: list, env: dict | None = None, *, stdin: str | None = None,
            log: Path, timeout: float = 900) -> int:
        """Run a command to its end in the cpuset, output appended to `log`; its exit status."""
        with self.placement, open(log, "a") as f:
            self._start_watchdog(self.placement.path)
            try:
                res = subprocess.run([str(a) for a in argv], input=stdin, text=True, stdout=f,
                                     stderr=subprocess.STDOUT, env=procs.labelled_env(self.run_id, env),
                                     preexec_fn=self._preexec(), timeout=timeout,
                                     stdin=None if stdin is not None else subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise BackendError(f"{Path(str(argv[0])).name} did not finish within {timeout:.0f}s") from None
            finally:
                self._stop_watchdog()
        return res.returncode


# -- docker -------------------------------------------------------------------------
class DockerBackend(Backend):
    """The process runs in a `--network none` container held by --cpuset-cpus and a
    memory limit; `ro_mounts`/`rw_mounts` are bind-mounted at their host paths (or, given as
    (host path, path inside) pairs, at the path inside)."""
    name = "docker"
    mechanism = docker_backend.MECHANISM

    def __init__(self, run_id: str, cpus, *, mems=None, ro_mounts=(), rw_mounts=(), image: dict | None = None,
                 cidfile: Path | None = None, memory: str | None = None):
        super().__init__(run_id, cpus, mems)
        # each a path (mounted at itself) or (host path, path inside): docker.mount_pair
        self.ro_mounts = [docker_backend.mount_pair(p) for p in ro_mounts]
        self.rw_mounts = [docker_backend.mount_pair(p) for p in rw_mounts]
        self.image = image
        self.cidfile = Path(cidfile) if cidfile else None
        self.memory = memory or docker_backend.memory_limit()
        self.container: str | None = None
        self.user: str | None = None    # uid:gid to run as (default: root, or the harness' user)
        self.files: list[tuple[Path, str]] = []  # (host file, path inside), mounted read-only
        self._init_pid: int | None = None
        self._pid: int | None = None
        self.placement = docker_backend.DockerPlacement(cpus=self.cpus)

    def info(self) -> dict:
        return {**super().info(), "memory_limit": self.memory, "seccomp": docker_backend.SECCOMP}

    def client_memcg(self) -> Path | None:
        """The container's memory cgroup (cgroup v1, as root), which sysbench joins for
        its windows: mysqld and its client are then charged to one memory cgroup, as for
        a bare server, instead of two (bench/container_overhead.py compares the two: arms
        docker and docker-apartmem). On cgroup v2, where the cgroup is not writable, or
        where the pid seen is not this container's (another pid namespace), None: the
        client is charged apart."""
        pid, cid = self.pid, self.container
        d = placement.memcg_of(pid) if pid is not None and cid else None
        return d if d is not None and cid in d.name else None

    def _ensure_image(self) -> None:
        if self.image is not None:
            return
        self.image = docker_backend.image_if_present()
        if self.image is not None:
            return
        if docker_backend.engine_version(timeout=10) is None:
            raise BackendError("no Docker engine answers; start one with scripts/dockerd.sh "
                               "(the pipeline does, as root), or use backend host")
        try:
            self.image = docker_backend.image(build=True)
        except docker_backend.DockerError as e:
            raise BackendError(str(e)) from None

    def _argv(self, command: list, env: dict | None, cidfile: Path, **kw) -> list[str]:
        cenv = {procs.LABEL_VAR: procs.LABEL, procs.RUN_VAR: self.run_id,
                procs.SESSION_VAR: os.environ.get(procs.SESSION_VAR, ""), **(env or {})}
        return docker_backend.run_argv(
            image_ref=self.image["id"], run_id=self.run_id, cpus=placement.cpulist(self.cpus),
            mems=placement.cpulist(self.mems), cidfile=cidfile, ro_mounts=self.ro_mounts,
            rw_mounts=self.rw_mounts, env=cenv, command=[str(a) for a in command],
            memory=self.memory, user=self.user, files=self.files, **kw)

    def _cidfile(self) -> tuple[Path, contextlib.AbstractContextManager]:
        if self.cidfile is not None:
            self.cidfile.parent.mkdir(parents=True, exist_ok=True)
            self.cidfile.unlink(missing_ok=True)  # docker refuses an existing cidfile
            return self.cidfile, contextlib.nullcontext()
        d = tempfile.TemporaryDirectory(prefix="mysqlbench-cid-")
        return Path(d.name) / "cid", d

    def start(self, argv: list, env: dict | None = None) -> None:
        self._ensure_image()
        cidfile, self._ciddir = self._cidfile()
        run = self._argv(argv, env, cidfile)
        # before the container exists: removes it should this process be SIGKILLed
        self._start_watchdog()
        try:
            self.container = docker_backend.run(run)
        except docker_backend.DockerError as e:
            raise BackendError(str(e)) from None
        self.placement.container = self.container
        info = docker_backend.inspect(self.container)
        self._init_pid = int(info["State"]["Pid"]) if info and info["State"].get("Running") else None

    @property
    def pid(self) -> int | None:
        """The host pid of the command under the container's init, once it runs."""
        if self._pid is None and self._init_pid is not None:
            self._pid = docker_backend.server_pid(self._init_pid, comms=None)
        return self._pid

    def exited(self) -> str | None:
        if self._init_pid is None or not Path(f"/proc/{self._init_pid}").exists():
            return f"exited during startup (container {(self.container or '?')[:12]})"
        self.pid  # noqa: B018  (found while it starts)
        return None

    def alive(self) -> bool:
        pid = self.pid
        if self.container is None or pid is None or not Path(f"/proc/{pid}").exists():
            return False
        return docker_backend.running(self.container)

    def _container_id(self) -> str | None:
        if self.container is not None:
            return self.container
        try:  # interrupted inside `docker run`: the cidfile may know it
            cid = self.cidfile.read_text().strip() if self.cidfile else ""
        except OSError:
            cid = ""
        return cid or None

    def stop(self, kill: bool = False, timeout: float = 120) -> bool:
        """`docker stop -t timeout` (a clean shutdown; `kill` skips it), then `docker rm -f`
        of the container and of anything else labelled with this run. SIGINT/SIGTERM/SIGHUP
        arriving meanwhile are held until the container is gone. False if it was killed
        at the timeout."""
        late = False
        with signals_held():
            try:
                cid = self._container_id()
                if cid is not None and not kill and self.alive():
                    late = not docker_backend.stop(cid, timeout)
                if cid is not None:
                    docker_backend.remove(cid)
                docker_backend.reap(run_id=self.run_id)
            finally:
                # Interrupted inside `docker run`, the engine may still create the container
                # after the reap above: then the watchdog stays, and removes this run's
                # containers when this process exits.
                if self.container is not None:
                    self._stop_watchdog()
                ciddir = getattr(self, "_ciddir", None)
                if ciddir is not None:
                    ciddir.__exit__(None, None, None)
                    self._ciddir = None
        return not late

    def run(self, argv: list, env: dict | None = None, *, stdin: str | None = None,
            log: Path, timeout: float = 900) -> int:
        """Run a command to its end in a container (`docker run --rm [-i]`, attached),
        output appended to `log`; its exit status. The container is removed after,
        whatever happened (and by the watchdog, should this process die)."""
        self._ensure_image()
        cidfile, ciddir = self._cidfile()
        run = self._argv(argv, env, cidfile, detach=False, stdin=stdin is not None)
        self._start_watchdog()
        try:
            with ciddir, open(log, "a") as f:
                try:
                    res = subprocess.run([docker_backend.docker_bin(), *run], input=stdin, text=True,
                                         stdout=f, stderr=subprocess.STDOUT, env=docker_backend.cli_env(),
                                         preexec_fn=procs.die_with_parent, timeout=timeout,
                                         stdin=None if stdin is not None else subprocess.DEVNULL)
                except subprocess.TimeoutExpired:
                    raise BackendError(f"{Path(str(argv[0])).name} did not finish within "
                                       f"{timeout:.0f}s in its container") from None
                except FileNotFoundError:
                    raise BackendError("the docker CLI is not installed; apt-get install -y docker.io") from None
        finally:
            with signals_held():
                docker_backend.reap(run_id=self.run_id)
                self._stop_watchdog()
        return res.returncode


# -- choosing one -------------------------------------------------------------------
def resolve_auto() -> tuple[str, dict | None, str | None]:
    """auto: ("docker", image, None) if an engine answers within a few seconds and the
    image can be had (looked up, or built offline); else ("host", None, reason)."""
    found = docker_backend.image_if_present()
    if found is not None:
        return "docker", found, None
    if docker_backend.engine_version(timeout=5) is None:
        return "host", None, "no Docker engine answers (scripts/dockerd.sh starts one, as root)"
    try:
        return "docker", docker_backend.image(build=True), None
    except docker_backend.DockerError as e:
        return "host", None, str(e)


def make(name: str, *, run_id: str, cpus, mems=None, mechanism: str = "auto", ro_mounts=(), rw_mounts=(),
         cidfile: Path | None = None, warn=None) -> Backend:
    """The backend `name` (host, docker, auto) for one run. auto resolves here: its
    fallback to host is printed once (to `warn`, default stderr) and kept in info()."""
    if name not in NAMES:
        raise BackendError(f"backend: {name} is not supported; use one of {', '.join(NAMES)}")
    image = fallback = None
    if name == "auto":
        name, image, fallback = resolve_auto()
        if fallback:
            print(f"warning: backend auto: {fallback}; using host", file=warn or sys.stderr)
    if name == "host":
        b: Backend = HostBackend(run_id, cpus, mechanism, mems=mems)
        b.fallback = fallback
        return b
    return DockerBackend(run_id, cpus, mems=mems, ro_mounts=ro_mounts, rw_mounts=rw_mounts, image=image,
                         cidfile=cidfile)


# -- the per-run watchdog -------------------------------------------------------------
def start_watchdog(run_id: str, *, docker: bool, cgroup: Path | None = None) -> subprocess.Popen | None:
    """A detached process that, when this process dies (even by SIGKILL, which no handler
    sees), removes the run's containers, ends its labelled servers and removes its cgroup.
    Stopped by `stop_watchdog` once the run ended normally."""
    if os.environ.get(WATCHDOG_VAR, "1") == "0":
        return None
    env = {k: v for k, v in docker_backend.cli_env().items() if k not in (procs.LABEL_VAR, procs.RUN_VAR)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    env["MYSQLBENCH_DOCKER"] = docker_backend.docker_bin()
    argv = [sys.executable, "-m", "harness", "watchdog", str(os.getpid()), run_id]
    if docker:
        argv.append("--docker")
    if cgroup is not None:
        argv += ["--cgroup", str(cgroup)]
    return subprocess.Popen(argv, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)


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


def watchdog_args(p) -> None:
    """The watchdog's arguments, for its own parser (watch_main) and cli.py's --help."""
    p.add_argument("pid", type=int)
    p.add_argument("run_id")
    p.add_argument("--docker", action="store_true", help="remove the run's containers")
    p.add_argument("--cgroup", help="remove this cgroup")


def watch_main(argv: list[str]) -> int:
    """`python -m harness watchdog PID RUN_ID [--docker] [--cgroup PATH]` (harness/__main__.py
    calls it without loading the rest of the command line; cli.py lists it for --help)."""
    import argparse
    p = argparse.ArgumentParser(prog="harness watchdog")
    watchdog_args(p)
    a = p.parse_args(argv)
    return watch(a.pid, a.run_id, a.docker, a.cgroup)


def watch(pid: int, run_id: str, docker: bool, cgroup: str | None) -> int:
    """The watchdog (`python -m harness watchdog`): wait for `pid` to end, then remove the
    run's containers, labelled servers and cgroup, the copied datadirs `pid` left in
    the work directory and its servers' run directories in the temp dir (after a
    SIGKILL: a clean end removed them already)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _wait_for_exit(pid)
    if docker:
        docker_backend.reap(run_id=run_id)
    procs.reap(run_id=run_id)  # a host server dies with its parent already; this is a safety net
    # the copied datadirs `pid` made (harness.measure.frame), and its servers' run directories
    for d, owner in paths.owned_work_dirs() + paths.owned_scratch_dirs():
        if owner == pid:
            shutil.rmtree(d, ignore_errors=True)
    if cgroup:  # the killed server may take a moment to leave
        placement.rmdir_when_empty(Path(cgroup), tries=300)
    return 0


@contextlib.contextmanager
def signals_held():
    """Hold SIGINT/SIGTERM/SIGHUP for the block (main thread only); raise
    KeyboardInterrupt after it if one arrived, so no teardown is cut short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {sig: signal.signal(sig, lambda signum, frame: got.append(signum)) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if got:
        raise KeyboardInterrupt(f"signal {got[0]}")
