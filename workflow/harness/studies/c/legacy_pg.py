"""The "legacy commercial RDBMS" of study C, stood in for by a real PostgreSQL
(Debian's `postgresql` package; bookworm has 15): the same table, an equivalent
PL/pgSQL loop inserting one row per statement, and the same scan.

A PgServer is one private instance, held like the MySQL servers
(harness.measure.server): initdb into a given datadir, unix socket only
(`listen_addresses=''`) in a short private directory, the project's label in
its environment (every backend inherits it), SIGKILLed should the harness die
(PR_SET_PDEATHSIG), placed on its CPUs by harness.measure.placement, stopped on
SIGINT/SIGTERM/SIGHUP and when its with-block ends, whatever happened in it.

PostgreSQL refuses to run as root, and CI runs as root: as root, initdb and
postgres run as the unprivileged `postgres` system user that the Debian package
creates (datadir and socket directory owned by it; the datadir's parents must be
searchable by it). As any other user they run as that user. Queries go through
Debian's `psql` client over the socket (the venv has no PostgreSQL driver):
`timed` uses psql's own `\\timing`, the wall time around the one statement it
sends, so psql's start and connection are not counted.
"""
from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from harness.measure import mycnf, placement
from harness.measure.effective import PG_SETTINGS

from harness.measure import procs
from harness.measure.datasets import scratch
from harness.plan import factors

PG_LIB = Path("/usr/lib/postgresql")
PG_USER = "postgres"
SEP = "\x1f"  # psql field separator: never in the values we read
COMMS = ("postgres", "postmaster")

TABLE_DDL = "CREATE TABLE t1 (c1 int, c2 varchar(20), c3 date)"
SCAN = "SELECT count(*) FROM t1 WHERE c1 = 1"
LOAD_PROCEDURE = """CREATE OR REPLACE PROCEDURE legacy_load(n integer, commit_each boolean)
LANGUAGE plpgsql AS $$
DECLARE
  i integer := 0;
BEGIN
  WHILE i < n LOOP
    INSERT INTO t1 VALUES (1, 'sample audit string', now());
    IF commit_each THEN
      COMMIT;
    END IF;
    i := i + 1;
  END LOOP;
END
$$"""


class PgError(Exception):
    """A PostgreSQL instance that cannot be used: one line, naming the path or statement."""


def bindir(version: str | None = None) -> Path:
    """/usr/lib/postgresql/<version>/bin (the newest installed if not told)."""
    if version is not None:
        d = PG_LIB / str(version) / "bin"
        if not (d / "postgres").is_file():
            raise PgError(f"{d}/postgres not found; install it: apt-get install postgresql-{version}")
        return d
    found = sorted((p for p in PG_LIB.glob("*/bin") if (p / "postgres").is_file()),
                   key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.name)] or [0])
    if not found:
        raise PgError(f"no PostgreSQL under {PG_LIB}; install it: apt-get install postgresql")
    return found[-1]


def _children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        out.setdefault(ppid, []).append(int(d.name))
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _running(pid: int) -> bool:
    """Exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def pg_pids(run_id: str | None = None, session: str | None = None) -> list[int]:
    """Our PostgreSQL processes of one run or session: the labelled postmasters and the
    processes they forked. Only the postmaster can be found by its label: a forked
    backend writes its process title over the memory /proc/<pid>/environ shows (even
    with update_process_title=off), so backends are found as its descendants. Should a
    postmaster be SIGKILLed, its backends see it gone and exit by themselves."""
    roots = [p for p in procs.labelled_pids(run_id, session) if _comm(p) in COMMS]
    kids, out, todo = _children_map(), [], list(roots)
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.append(pid)
        todo.extend(c for c in kids.get(pid, []) if _comm(c) in COMMS)
    return sorted(out)


def reap(run_id: str | None = None, session: str | None = None) -> list[int]:
    """Stop every labelled PostgreSQL process of a run or session; return their pids."""
    pids = pg_pids(run_id, session)
    for pid in pids:
        procs.terminate(pid, timeout=10.0)
    return pids


def _run_as() -> tuple[int, int] | None:
    """(uid, gid) to drop to when we are root, else None (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(PG_USER)
    except KeyError:
        raise PgError(f"user {PG_USER} does not exist; apt-get install postgresql creates it "
                      f"(PostgreSQL refuses to run as root)") from None
    return pw.pw_uid, pw.pw_gid


def _searchable(path: Path, uid: int, gid: int) -> bool:
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def _check_reachable(datadir: Path, ids: tuple[int, int] | None) -> None:
    if ids is None:
        return
    for parent in reversed(datadir.parents):
        if parent.exists() and not _searchable(parent, *ids):
            raise PgError(f"datadir {datadir}: {parent} is not searchable by user {PG_USER}; "
                          f"chmod o+x {parent}, or choose a datadir under a directory it can enter")


class PgServer(procs.Managed):
    """`with PgServer(datadir=..., rundir=..., run_id=..., cpus=[0]) as pg: pg.query(sql)`."""

    def __init__(self, *, datadir: Path, rundir: Path, run_id: str, cpus, mechanism: str = "auto",
                 options: dict | None = None, version: str | None = None,
                 startup_timeout: float = 60, shutdown_timeout: float = 60):
        self.datadir = Path(datadir).absolute()
        self.rundir = Path(rundir).absolute()
        self.run_id = run_id
        self.cpus = list(cpus)
        self.mechanism = mechanism
        # Durable defaults, stated: every commit waits for its WAL flush (InnoDB's
        # innodb_flush_log_at_trx_commit=1 counterpart).
        self.options = {"fsync": "on", "synchronous_commit": "on", **(options or {})}
        self.version = version
        self.startup_timeout, self.shutdown_timeout = startup_timeout, shutdown_timeout
        self.bin: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.placement: placement.Placement | None = None
        self.sockdir: Path | None = None
        self.log = self.rundir / "postgres.log"
        self.argv: list[str] = []
        self._ids: tuple[int, int] | None = None
        self._old_handlers: dict = {}

    def _preexec(self, place: placement.Placement | None):
        ids = self._ids

        def preexec():
            if place is not None:
                place.preexec()  # as root: enter the cgroup before dropping privileges
            if ids is not None:
                os.setgroups([])
                os.setgid(ids[1])
                os.setuid(ids[0])
            procs.die_with_parent()  # after setuid: a credential change clears PDEATHSIG
        return preexec

    def _env(self) -> dict:
        return procs.labelled_env(self.run_id, {"LC_ALL": "C", "LANG": "C", "PGTZ": "UTC"})

    def _own(self, path: Path) -> None:
        if self._ids is not None:
            os.chown(path, *self._ids)
        os.chmod(path, 0o700)

    def start(self):
        self.bin = bindir(self.version)
        self._ids = _run_as()
        self.rundir.mkdir(parents=True, exist_ok=True)
        _check_reachable(self.datadir, self._ids)
        self.sockdir = Path(tempfile.mkdtemp(prefix="mysqlbench-pg-"))
        self._own(self.sockdir)
        if not (self.datadir / "PG_VERSION").exists():
            self._initdb()
        self.placement = placement.Placement(self.run_id, self.cpus, self.mechanism).__enter__()
        self.argv = [str(self.bin / "postgres"), "-D", str(self.datadir),
                     "-c", "listen_addresses=", "-c", f"unix_socket_directories={self.sockdir}",
                     *[a for k, v in self.options.items() for a in ("-c", f"{k}={v}")]]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, env=self._env(), preexec_fn=self._preexec(self.placement),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         cwd="/", start_new_session=True)
        self._wait_ready()

    def _initdb(self):
        self.datadir.mkdir(parents=True, exist_ok=True)
        if any(self.datadir.iterdir()):
            raise PgError(f"datadir {self.datadir} is not empty and has no PG_VERSION; give an empty "
                          f"or a PostgreSQL datadir")
        self._own(self.datadir)
        argv = [str(self.bin / "initdb"), "-D", str(self.datadir), "-U", PG_USER, "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-instructions"]
        with open(self.rundir / "initdb.log", "ab") as log:
            res = subprocess.run(argv, env=self._env(), preexec_fn=self._preexec(None), cwd="/",
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, timeout=300)
        if res.returncode != 0:
            raise PgError(f"initdb of {self.datadir} failed (exit {res.returncode}); see "
                          f"{self.rundir / 'initdb.log'}")

    def _wait_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PgError(f"postgres exited with {self.proc.returncode} during startup: {self._log_tail()}")
            if (self.sockdir / ".s.PGSQL.5432").exists():
                try:
                    self.query("SELECT 1")
                    return
                except PgError as e:
                    last = str(e)
            time.sleep(0.2)
        raise PgError(f"postgres not ready after {self.startup_timeout}s: {last or self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            lines = [l for l in self.log.read_text(errors="replace").splitlines()
                     if "FATAL" in l or "ERROR" in l]
        except OSError:
            return "no log"
        return lines[-1] if lines else f"see {self.log}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, kill: bool = False):
        """Fast shutdown (SIGINT: backends end, checkpoint); immediate (SIGQUIT) when
        `kill`; SIGKILL after the timeout. Then every labelled process of this run
        must be gone (backends leave after their postmaster), the cgroup and the
        socket directory are removed."""
        late = False
        ours = pg_pids(self.run_id)
        try:
            if self.alive():
                self.proc.send_signal(signal.SIGQUIT if kill else signal.SIGINT)
                try:
                    self.proc.wait(timeout=self.shutdown_timeout)
                except subprocess.TimeoutExpired:
                    late = True
                    self.proc.kill()
                    self.proc.wait(timeout=30)
            # backends leave after their postmaster; any left are ours, by pid
            deadline = time.monotonic() + 10
            while self._left(ours) and time.monotonic() < deadline:
                time.sleep(0.1)
            for pid in self._left(ours):
                procs.terminate(pid, timeout=5.0)
        finally:
            if self.placement is not None:
                self.placement.remove()
            if self.sockdir is not None:
                shutil.rmtree(self.sockdir, ignore_errors=True)
        if late:
            raise PgError(f"postgres did not shut down within {self.shutdown_timeout}s; killed")

    def _left(self, snapshot: list[int]) -> list[int]:
        """Of the processes seen before the stop, those still running (not zombies),
        plus any new ones of this run."""
        alive = [p for p in snapshot if _running(p) and _comm(p) in COMMS]
        return sorted(set(alive) | set(pg_pids(self.run_id)))

    def processes(self) -> list[int]:
        """The postmaster and every process it forked (for tests and manifests)."""
        return pg_pids(self.run_id)

    # -- use -----------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.proc.pid

    def _psql(self, commands: list[str], db: str) -> str:
        if self.sockdir is None or self.bin is None:
            raise PgError("the PostgreSQL server is not started")
        argv = [str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-F", SEP, "-v", "ON_ERROR_STOP=1",
                "-h", str(self.sockdir), "-U", PG_USER, "-d", db]
        for c in commands:
            argv += ["-c", c]
        res = subprocess.run(argv, env=self._env(), preexec_fn=procs.die_with_parent, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, timeout=None)
        if res.returncode != 0:
            err = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise PgError(f"psql: {err} (statement: {commands[-1][:80]!r})")
        return res.stdout

    @staticmethod
    def _rows(text: str) -> list[tuple]:
        """psql -A -t output: one line per row (an empty line is a row of one empty value)."""
        if not text:
            return []
        return [tuple(line.split(SEP)) for line in text.removesuffix("\n").split("\n")]

    def query(self, sql: str, db: str = "postgres") -> list[tuple]:
        """Rows of `sql` as tuples of strings (psql's text output)."""
        return self._rows(self._psql([sql], db))

    def timed(self, sql: str, db: str = "postgres") -> tuple[float, list[tuple]]:
        """(seconds, rows): psql's `\\timing` of the one statement `sql` (client-side
        wall time around sending it and reading its result)."""
        out = self._psql(["\\timing on", sql], db)
        times = re.findall(r"^Time: ([0-9.]+) ms", out, flags=re.M)
        if len(times) != 1:
            raise PgError(f"psql \\timing gave {len(times)} times for {sql[:80]!r}")
        rest = "".join(l for l in out.splitlines(keepends=True) if not l.startswith("Time: "))
        return float(times[0]) / 1000.0, self._rows(rest)

    def server_version(self) -> str:
        return self.query("SHOW server_version")[0][0]


def legacy_insert(pg: PgServer, rows: int, commit_each: bool = True) -> float:
    """C1 on the stand-in: a PL/pgSQL procedure's WHILE loop inserting `rows` rows one
    INSERT each into `(c1 int, c2 varchar(20), c3 date)`; returns the CALL's seconds.
    `commit_each` (default) commits after every INSERT, as MySQL's autocommit does, so
    each row waits for its WAL flush like InnoDB's; False is one transaction, as a
    PL/SQL block without COMMIT would be (the study does not say which it ran)."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise PgError(f"legacy_insert rows={rows!r}: must be a whole number >= 1")
    pg.query("DROP TABLE IF EXISTS t1")
    pg.query(TABLE_DDL)
    pg.query(LOAD_PROCEDURE)
    secs, _ = pg.timed(f"CALL legacy_load({rows}, {'true' if commit_each else 'false'})")
    got = int(pg.query("SELECT count(*) FROM t1")[0][0])
    if got != rows:
        raise PgError(f"legacy_insert: {got} rows in t1 after inserting {rows}")
    return secs


def legacy_scan(pg: PgServer) -> tuple[float, int]:
    """C2 on the stand-in: (seconds, matching rows) of `SELECT count(*) FROM t1 WHERE c1 = 1`."""
    secs, rows = pg.timed(SCAN)
    return secs, int(rows[0][0])


def scan_plan(pg: PgServer) -> str:
    """EXPLAIN of the scan, one line per plan node (shows the Seq Scan)."""
    return "\n".join(r[0] for r in pg.query("EXPLAIN " + SCAN))


# -- the legacy row of a steps cell (the kind calls test_drive.extra) -------------------

LEGACY_ENGINE = "PostgreSQL (legacy stand-in)"


def _enterable_by_others(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents])


@contextlib.contextmanager
def _pg_parent(work: Path):
    """A directory PostgreSQL's own user can enter for its datadir: the cell's work dir
    when every parent lets others through (o+x), else a private one under /var/tmp
    (the repository may sit in a home directory only root can enter)."""
    os.chmod(work, 0o711)
    if _enterable_by_others(work):
        yield work
        return
    d = Path(tempfile.mkdtemp(prefix="mysqlbench-pg-", dir="/var/tmp"))
    try:
        os.chmod(d, 0o711)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# InnoDB's log flush of the cell (innodb_flush_log_at_trx_commit, set by harness.plan.factors)
# on PostgreSQL: autocommit kept (a COMMIT per row), only whether each commit waits for its
# WAL flush follows it (1: flush at every commit; 0 or 2: not)
FLUSH_OPTION = "innodb_flush_log_at_trx_commit"


def synchronous_commit(values: dict, family: str) -> str:
    """'on' when the cell's factor values flush InnoDB's log at every commit (the
    family's default, 1, when they set nothing), else 'off'."""
    opts = {**mycnf.family_defaults(family), **factors.server_options(values, family)}
    return "on" if str(opts.get(FLUSH_OPTION) or 1) == "1" else "off"


def settings(pg: PgServer) -> dict:
    """The stand-in's settings that say how it ran (SHOW ALL, the names of
    harness.measure.effective.PG_SETTINGS)."""
    rows = {r[0]: r[1] for r in pg.query("SHOW ALL") if len(r) >= 2}
    return {n: rows[n] for n in PG_SETTINGS if n in rows}


def legacy(fr, spec: dict, rec, values: dict | None = None) -> dict:
    """The study's "legacy commercial RDBMS" row, stood in for by a real PostgreSQL
    (Debian's) on the same CPUs: its PL/pgSQL loop inserting the same rows one
    statement each, committed per row (as autocommit), then the same scan. Each commit
    waits for its WAL flush when the cell's InnoDB flushes its log at every commit
    (synchronous_commit follows `values`, the cell's factor values). Labelled as a stand-in."""
    rows = spec["rows"]
    sync = synchronous_commit(values or {}, fr.entry["family"])
    with scratch("pg") as run, _pg_parent(fr._work) as parent:
        pgdata = parent / "pgdata"
        with PgServer(datadir=pgdata, rundir=run, run_id=fr.run_id + "-pg", cpus=fr.server_cpus,
                               mechanism=fr.settings["mechanism"], options={"synchronous_commit": sync},
                               startup_timeout=fr.settings["startup_timeout_s"]) as pg:
            version = pg.server_version()
            shown = settings(pg)
            secs = legacy_insert(pg, rows)
            rec.value("C1", LEGACY_ENGINE, "insert_s", round(secs, 6), "s",
                      detail=f"PostgreSQL {version}, PL/pgSQL loop, commit per row, "
                             f"synchronous_commit={shown.get('synchronous_commit')}")
            scan_s, n = legacy_scan(pg)
            rec.value("C2", LEGACY_ENGINE, "scan_s", round(scan_s, 6), "s", detail=scan_plan(pg))
            rec.check("C2", LEGACY_ENGINE, n == rows, f"{n} of {rows} rows match c1 = 1", metric="matched")
    return {"engine": LEGACY_ENGINE, "version": version, "effective": shown}
