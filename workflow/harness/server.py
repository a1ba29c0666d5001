"""One private mysqld instance: rendered my.cnf, unix socket only, readiness
wait, clean shutdown, and no survivor on failure, SIGINT/SIGTERM or SIGKILL
of the harness (the server dies with its parent)."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pymysql

from . import builds, mycnf, placement, procs


class ServerError(Exception):
    pass


def _err_tail(log: Path, n: int = 1) -> str:
    try:
        lines = [l for l in log.read_text(errors="replace").splitlines() if "[ERROR]" in l]
    except OSError:
        return "no error log"
    return " | ".join(lines[-n:]) if lines else "see " + str(log)


class Server:
    """Start with `with Server(...) as srv:`; `srv.connect()` gives a PyMySQL connection."""

    def __init__(self, *, name: str, entry: dict, build_dir: Path, datadir: Path, rundir: Path,
                 run_id: str, cpus, mechanism: str = "auto", options: dict | None = None,
                 max_connections: int = 200, startup_timeout: float = 120,
                 shutdown_timeout: float = 120, backend: str = "host"):
        if backend != "host":
            raise ServerError(f"backend: {backend} is not supported yet; use host")
        self.backend = backend
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

    def _wait_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"mysqld exited with {self.proc.returncode} during startup: "
                                  f"{_err_tail(self.error_log)}")
            if self.socket.exists():
                try:
                    self.connect().close()
                    return
                except pymysql.err.MySQLError as e:
                    last = e
            time.sleep(0.2)
        raise ServerError(f"mysqld not ready after {self.startup_timeout}s "
                          f"(server.startup_timeout_s): {last or _err_tail(self.error_log)}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, kill: bool = False):
        """Clean shutdown (SIGTERM, wait); SIGKILL after the timeout or when `kill`."""
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

    # -- use -----------------------------------------------------------------
    @property
    def mechanism_used(self) -> str:
        """How the server is held to its CPUs (recorded in every manifest)."""
        return self.placement.mechanism

    @property
    def pid(self) -> int:
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
