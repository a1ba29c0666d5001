"""One private mysqld instance: rendered my.cnf, unix socket only, readiness
wait, clean shutdown, and no survivor on failure, SIGINT/SIGTERM or SIGKILL
of the harness (the server dies with its parent, or its container with the
run's watchdog).

Where it runs is a backend object (harness.measure.backends): `host` here, in a
per-run cgroup cpuset holding its CPUs and memory nodes (taskset, CPUs only, as
a fallback); `docker` in a labelled `--network none` container of the
offline-built runtime image, held by `--cpuset-cpus`, `--cpuset-mems` and a
memory limit, with the build (read-only, with the files its symlinks point at),
datadir and run dir bind-mounted at their host paths, so the same my.cnf and
socket serve sysbench on the host; `auto` is docker when an engine answers and
the image can be had, else host with a one-line
warning on stderr that `placement_info()["fallback"]` keeps."""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pymysql

from harness.measure import backends

from harness import builds, keptlogs

from harness.measure import mycnf

from harness.measure import procs

BACKENDS = backends.NAMES


class ServerError(Exception):
    pass


def _err_tail(log: Path, n: int = 1) -> str:
    """The server's own last error(s): its cause, not the generic '[ERROR] Aborting'."""
    try:
        lines = [l for l in log.read_text(errors="replace").splitlines() if "[ERROR]" in l]
    except OSError:
        return "no error log"
    causes = [l for l in lines if not l.rstrip().endswith("Aborting")] or lines
    return " | ".join(causes[-n:]) if causes else "see " + str(log)


class Server(procs.Managed):
    """Start with `with Server(...) as srv:`; `srv.connect()` gives a PyMySQL connection."""

    def __init__(self, *, name: str, entry: dict, build_dir: Path, datadir: Path, rundir: Path,
                 run_id: str, cpus, mems=None, mechanism: str = "auto", options: dict | None = None,
                 max_connections: int = 200, startup_timeout: float = 120,
                 shutdown_timeout: float = 120, backend: str = "host"):
        if backend not in BACKENDS:
            raise ServerError(f"backend: {backend} is not supported; use one of {', '.join(BACKENDS)}")
        self.name, self.entry = name, entry
        self.build_dir = Path(build_dir).resolve()
        self.datadir = Path(datadir).resolve()
        self.rundir = Path(rundir).resolve()
        self.run_id = run_id
        self.cpus = list(cpus)
        self.mems = list(mems) if mems else None   # memory nodes; None = all this process may use
        self.mechanism = mechanism
        self.options = options or {}
        self.max_connections = max_connections
        self.startup_timeout, self.shutdown_timeout = startup_timeout, shutdown_timeout
        self.socket = self.rundir / "mysqld.sock"
        self.error_log = self.rundir / "mysqld.err"
        self.cnf = self.rundir / "my.cnf"
        self.cnf_text = ""
        self.mysqld: Path | None = None
        try:
            self.runner = backends.make(
                backend, run_id=run_id, cpus=self.cpus, mems=self.mems, mechanism=mechanism,
                ro_mounts=[self.build_dir, *backends.link_targets(self.build_dir)],
                rw_mounts=[self.datadir, self.rundir], cidfile=self.rundir / "cid")
        except backends.BackendError as e:  # (a placement.PlacementError passes as it is)
            raise ServerError(str(e)) from None
        self.backend = self.runner.name

    # -- what the backend knows ------------------------------------------------
    @property
    def image(self) -> dict | None:
        """docker: the runtime image {"tag", "id", "recipe"} (for manifests); host: None."""
        return self.runner.image

    @property
    def container(self) -> str | None:
        return getattr(self.runner, "container", None)

    @property
    def placement(self):
        """host: the harness.measure.placement.Placement (its cgroup in .path); docker: the container's."""
        return self.runner.placement

    @property
    def proc(self):
        """host: the mysqld's Popen; docker: None."""
        return getattr(self.runner, "proc", None)

    def client_memcg(self):
        """The memory cgroup its load generator joins (docker on cgroup v1: the container's), or None."""
        return self.runner.client_memcg()

    def placement_info(self) -> dict:
        """Backend, mechanism, CPUs, image, memory limit and, when `auto` fell back to
        host, "fallback": the reason (manifests and the paper repeat it)."""
        return self.runner.info()

    # -- lifecycle (`with`: procs.Managed) --------------------------------------
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
        env = {"LD_LIBRARY_PATH": str(self.build_dir / self.entry.get("lib_dir", "."))}
        try:
            self.runner.start([self.mysqld, f"--defaults-file={self.cnf}"], env)
        except backends.BackendError as e:
            raise ServerError(f"backend {self.backend}: {e}") from None
        self._wait_ready()
        if self.runner.pid is None:  # it answers, so its mysqld runs: the backend must know it
            raise ServerError(f"backend {self.backend}: mysqld answers but its pid is unknown")

    def _wait_ready(self):
        """Poll the socket until a connection works; stop early if the server is gone."""
        deadline = time.monotonic() + self.startup_timeout
        last = None
        while time.monotonic() < deadline:
            why = self.runner.exited()
            if why:
                raise ServerError(f"mysqld {why}: {self._kept_tail()}")
            if self.socket.exists():
                try:  # a server that accepts but never greets must not hang the wait
                    self.connect(read_timeout=5).close()
                    return
                except pymysql.err.MySQLError as e:
                    last = e
            time.sleep(0.05)  # every cell waits here once per start: poll finely
        raise ServerError(f"mysqld not ready after {self.startup_timeout}s "
                          f"(server.startup_timeout_s): {self._kept_tail(last)}")

    def _kept_tail(self, cause=None) -> str:
        """`cause`, else the error log's; the log and my.cnf kept under the run's logs/ (the
        run directory is a temporary one, removed as the error passes)."""
        kept = keptlogs.keep(self.run_id, self.error_log, self.cnf) / self.error_log.name
        return f"{cause or _err_tail(self.error_log)} (log kept in {kept})"

    def alive(self) -> bool:
        return self.runner.alive()

    def stop(self, kill: bool = False):
        """Clean shutdown (SIGTERM / docker stop, wait); SIGKILL after the timeout or when `kill`."""
        if not self.runner.stop(kill=kill, timeout=self.shutdown_timeout):
            raise ServerError(f"mysqld did not shut down within {self.shutdown_timeout}s; killed")

    @property
    def mechanism_used(self) -> str:
        """How the server is held to its CPUs (recorded in every manifest)."""
        return self.runner.mechanism

    @property
    def pid(self) -> int:
        """The server's pid on this host (under docker: the mysqld inside the container)."""
        return self.runner.pid

    # -- use -----------------------------------------------------------------
    def connect(self, db: str | None = None, read_timeout: float | None = None):
        return pymysql.connect(unix_socket=str(self.socket), user="root", database=db,
                               connect_timeout=5, read_timeout=read_timeout, autocommit=True)

    def query(self, sql: str, db: str | None = None, read_timeout: float | None = None) -> list[tuple]:
        with contextlib.closing(self.connect(db, read_timeout)) as con, con.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def global_status(self, settle_s: float = 2.0) -> list[tuple[str, str]]:
        """SHOW GLOBAL STATUS once no other client session is left on the server.

        A session that just disconnected has its counters added to the global ones
        before it leaves the thread list that SHOW GLOBAL STATUS also sums (MySQL
        5.6's unlink_thd): read in that gap, they count twice (seen: Com_truncate 2
        before a window and 1 after it, the harness's TRUNCATE of a PFS table just
        closed; at the end of a window it would be a sysbench thread's statements).
        So SHOW PROCESSLIST is polled until it lists only this session (at most
        `settle_s`; Com_show_processlist is no statement of the workload:
        harness.measure.counters), then the status is read on the same connection."""
        with contextlib.closing(self.connect()) as con, con.cursor() as cur:
            me, deadline = con.thread_id(), time.monotonic() + settle_s
            while True:
                cur.execute("SHOW PROCESSLIST")
                others = [r for r in cur.fetchall() if r[0] != me and r[4] not in ("Daemon", "Killed")
                          and r[1] not in ("system user", "event_scheduler")]
                if not others or time.monotonic() > deadline:
                    break
                time.sleep(0.002)
            cur.execute("SHOW GLOBAL STATUS")
            return [(str(k), str(v)) for k, v in cur.fetchall()]

    def version(self) -> str:
        return str(self.query("SELECT @@version")[0][0])
