"""One private mysqld instance: rendered my.cnf, unix socket only, readiness
wait, clean shutdown, and no survivor on failure, SIGINT/SIGTERM or SIGKILL
of the harness (the server dies with its parent).

Backends: `host` runs mysqld here, in a per-run cgroup cpuset (taskset as a
fallback); `docker` runs it in a labelled `--network none` container of the
offline-built runtime image, held by `--cpuset-cpus`, with the build
(read-only), datadir and run dir bind-mounted at their host paths, so the
same my.cnf and socket serve sysbench on the host (see harness.docker_backend);
`auto` is docker when an engine answers and the image can be had, else host
with a one-line warning on stderr."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql

from . import builds, docker_backend, mycnf, placement, procs

BACKENDS = ("host", "docker", "auto")


class ServerError(Exception):
    pass


def _err_tail(log: Path, n: int = 1) -> str:
    try:
        lines = [l for l in log.read_text(errors="replace").splitlines() if "[ERROR]" in l]
    except OSError:
        return "no error log"
    return " | ".join(lines[-n:]) if lines else "see " + str(log)


def _link_targets(build_dir: Path) -> list[Path]:
    """Paths outside the build dir that its symlinks point at (a Debian build is
    links into /usr): mounted too, so the container runs the verified binary."""
    out = []
    for p in Path(build_dir).rglob("*"):
        if p.is_symlink():
            t = p.resolve()
            if t.exists() and not t.is_relative_to(Path(build_dir).resolve()) and t not in out:
                out.append(t)
    return out


class Server:
    """Start with `with Server(...) as srv:`; `srv.connect()` gives a PyMySQL connection."""

    def __init__(self, *, name: str, entry: dict, build_dir: Path, datadir: Path, rundir: Path,
                 run_id: str, cpus, mechanism: str = "auto", options: dict | None = None,
                 max_connections: int = 200, startup_timeout: float = 120,
                 shutdown_timeout: float = 120, backend: str = "host"):
        if backend not in BACKENDS:
            raise ServerError(f"backend: {backend} is not supported; use one of {', '.join(BACKENDS)}")
        # docker: the runtime image {"tag", "id", "recipe"} (for manifests) and the container
        self.image: dict | None = None
        self.container: str | None = None
        self._server_pid: int | None = None
        self._init_pid: int | None = None
        self._watchdog: subprocess.Popen | None = None
        self.backend = self._resolve_backend() if backend == "auto" else backend
        self.name, self.entry = name, entry
        self.build_dir = Path(build_dir).resolve()
        self.datadir = Path(datadir).resolve()
        self.rundir = Path(rundir).resolve()
        self.run_id = run_id
        self.cpus = list(cpus)
        self.mechanism = mechanism
        self.options = options or {}
        self.max_connections = max_connections
        self.startup_timeout, self.shutdown_timeout = startup_timeout, shutdown_timeout
        self.proc: subprocess.Popen | None = None
        self.placement: placement.Placement | None = None
        self.socket = self.rundir / "mysqld.sock"
        self.error_log = self.rundir / "mysqld.err"
        self.cnf = self.rundir / "my.cnf"
        self.cnf_text = ""
        self.mysqld: Path | None = None
        self._old_handlers: dict = {}

    # -- lifecycle -----------------------------------------------------------
    def __enter__(self):
        self._trap_signals()
        try:
            self.start()
        except BaseException:
            self.stop(kill=True)
            self._restore_signals()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.stop(kill=exc_type is not None)
        finally:
            self._restore_signals()
        return False

    def _trap_signals(self):
        def handler(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, handler)

    def _restore_signals(self):
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers.clear()

    def start(self):
        self.mysqld = builds.verify_installed(self.name, self.entry, self.build_dir)
        self.rundir.mkdir(parents=True, exist_ok=True)
        tmpdir = self.rundir / "tmp"
        tmpdir.mkdir(exist_ok=True)
        if len(str(self.socket)) > 100:
            raise ServerError(f"socket path {self.socket} is longer than a unix socket allows; "
                              f"use a shorter working directory")
        self.cnf_text = mycnf.render(
            self.entry["family"], basedir=self.build_dir, datadir=self.datadir, socket=self.socket,
            pid_file=self.rundir / "mysqld.pid", log_error=self.error_log, tmpdir=tmpdir,
            share_dir=self.build_dir / self.entry["share_dir"], max_connections=self.max_connections,
            options=self.options)
        self.cnf.write_text(self.cnf_text)
        if self.backend == "docker":
            return self._start_docker()
        self.placement = placement.Placement(self.run_id, self.cpus, self.mechanism).__enter__()
        env = procs.labelled_env(self.run_id, {
            "LD_LIBRARY_PATH": str(self.build_dir / self.entry.get("lib_dir", "."))})
        place = self.placement

        def preexec():
            procs.die_with_parent()
            place.preexec()

        self.proc = subprocess.Popen(
            [str(self.mysqld), f"--defaults-file={self.cnf}"], env=env, preexec_fn=preexec,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        self._wait_ready()

    def _wait_ready(self, exited=None):
        """Poll the socket until a connection works; `exited()` returns why the
        server is gone (None while it runs)."""
        exited = exited or self._host_exited
        deadline = time.monotonic() + self.startup_timeout
        last = None
        while time.monotonic() < deadline:
            why = exited()
            if why:
                raise ServerError(f"{why}: {_err_tail(self.error_log)}")
            if self.socket.exists():
                try:
                    self.connect().close()
                    return
                except pymysql.err.MySQLError as e:
                    last = e
            time.sleep(0.2)
        raise ServerError(f"mysqld not ready after {self.startup_timeout}s "
                          f"(server.startup_timeout_s): {last or _err_tail(self.error_log)}")

    def _host_exited(self):
        if self.proc.poll() is not None:
            return f"mysqld exited with {self.proc.returncode} during startup"
        return None

    def alive(self) -> bool:
        if self.backend == "docker":
            return self._alive_docker()
        return self.proc is not None and self.proc.poll() is None

    def stop(self, kill: bool = False):
        """Clean shutdown (SIGTERM, wait); SIGKILL after the timeout or when `kill`."""
        if self.backend == "docker":
            return self._stop_docker(kill)
        try:
            if self.proc is not None and self.proc.poll() is None:
                if kill:
                    self.proc.kill()
                else:
                    self.proc.terminate()
                try:
                    self.proc.wait(timeout=self.shutdown_timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=30)
                    raise ServerError(f"mysqld did not shut down within {self.shutdown_timeout}s; killed")
        finally:
            if self.placement is not None:
                self.placement.remove()

    # -- docker backend ------------------------------------------------------
    def _resolve_backend(self) -> str:
        """auto: docker if an engine answers within a few seconds and the image
        can be had (looked up, or built offline), else host with a warning."""
        version = docker_backend.engine_version(timeout=5)
        if version is None:
            why = "no Docker engine answers (scripts/dockerd.sh starts one)"
        else:
            try:
                self.image = docker_backend.image(build=True)
                return "docker"
            except docker_backend.DockerError as e:
                why = str(e)
        print(f"warning: backend auto: {why}; using host", file=sys.stderr)
        return "host"

    def _start_docker(self):
        try:
            if self.image is None:
                if docker_backend.engine_version(timeout=10) is None:
                    raise ServerError("backend docker: no Docker engine answers; start one with "
                                      "scripts/dockerd.sh, or use backend host")
                self.image = docker_backend.image(build=True)
            self.placement = docker_backend.DockerPlacement(cpus=self.cpus)
            cidfile = self.rundir / "cid"
            cidfile.unlink(missing_ok=True)  # docker refuses an existing cidfile
            env = {procs.LABEL_VAR: procs.LABEL, procs.RUN_VAR: self.run_id,
                   procs.SESSION_VAR: os.environ.get(procs.SESSION_VAR, ""),
                   "LD_LIBRARY_PATH": str(self.build_dir / self.entry.get("lib_dir", "."))}
            argv = docker_backend.run_argv(
                image_ref=self.image["id"], run_id=self.run_id, cpus=placement.cpulist(self.cpus),
                mems=docker_backend.host_mems(), cidfile=cidfile,
                ro_mounts=[self.build_dir, *_link_targets(self.build_dir)],
                rw_mounts=[self.datadir, self.rundir], env=env,
                command=[str(self.mysqld), f"--defaults-file={self.cnf}"])
            # before the container exists: removes it should this process be SIGKILLed
            self._watchdog = docker_backend.start_watchdog(self.run_id)
            self.container = docker_backend.run(argv)
            self.placement.container = self.container
            info = docker_backend.inspect(self.container)
            self._init_pid = int(info["State"]["Pid"]) if info and info["State"].get("Running") else None
        except docker_backend.DockerError as e:
            raise ServerError(f"backend docker: {e}") from None
        self._wait_ready(self._docker_exited)
        if self._server_pid is None:  # it answers, so its mysqld runs: find its host pid
            self._server_pid = docker_backend.server_pid(self._init_pid)
        if self._server_pid is None:
            raise ServerError(f"backend docker: mysqld answers but has no pid in container {self.container[:12]}")

    def _docker_exited(self):
        if self._init_pid is None or not Path(f"/proc/{self._init_pid}").exists():
            return f"mysqld exited during startup (container {self.container[:12]})"
        if self._server_pid is None:
            self._server_pid = docker_backend.server_pid(self._init_pid)
        return None

    def _alive_docker(self) -> bool:
        pid = self._server_pid
        if self.container is None or pid is None or not Path(f"/proc/{pid}").exists():
            return False
        return docker_backend.running(self.container)

    def _stop_docker(self, kill: bool):
        """`docker stop -t <shutdown timeout>` (clean shutdown; `kill` skips it), then
        `docker rm -f` of the container and of anything else labelled with this run.
        SIGINT/SIGTERM/SIGHUP arriving meanwhile are held until the container is gone."""
        late = False
        with _signals_held():
            try:
                cid = self.container
                if cid is None:  # interrupted inside `docker run`: the cidfile may know it
                    try:
                        cid = (self.rundir / "cid").read_text().strip() or None
                    except OSError:
                        cid = None
                if cid is not None and not kill and self._alive_docker():
                    late = not docker_backend.stop(cid, self.shutdown_timeout)
                if cid is not None:
                    docker_backend.remove(cid)
                docker_backend.reap(run_id=self.run_id)
            finally:
                # Interrupted inside `docker run`, the engine may still create the container
                # after the reap above: then the watchdog stays, and removes this run's
                # containers when this process exits.
                if self.container is not None:
                    docker_backend.stop_watchdog(self._watchdog)
                    self._watchdog = None
        if late:
            raise ServerError(f"mysqld did not shut down within {self.shutdown_timeout}s; killed")

    # -- use -----------------------------------------------------------------
    @property
    def mechanism_used(self) -> str:
        """How the server is held to its CPUs (recorded in every manifest)."""
        return self.placement.mechanism

    @property
    def pid(self) -> int:
        """The server's pid on this host (under docker: the mysqld inside the container)."""
        if self.backend == "docker":
            return self._server_pid
        return self.proc.pid

    def connect(self, db: str | None = None):
        return pymysql.connect(unix_socket=str(self.socket), user="root", database=db,
                               connect_timeout=5, autocommit=True)

    def query(self, sql: str, db: str | None = None) -> list[tuple]:
        with contextlib.closing(self.connect(db)) as con, con.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def global_status(self) -> list[tuple[str, str]]:
        return [(str(k), str(v)) for k, v in self.query("SHOW GLOBAL STATUS")]

    def version(self) -> str:
        return str(self.query("SELECT @@version")[0][0])


@contextlib.contextmanager
def _signals_held():
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
