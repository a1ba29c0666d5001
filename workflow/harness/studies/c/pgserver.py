"""One private PostgreSQL instance of the pinned build (config/builds.lock.yaml,
`postgresql-15`: Debian's packages, fetched and checked like every other build),
held like the MySQL servers (harness.measure.server): the build's `postgres`
sha256 checked before every start, initdb into a given datadir, unix socket only
(`listen_addresses=''`) in a short private directory, labelled, stopped on
SIGINT/SIGTERM/SIGHUP and when its with-block ends, whatever happened in it.

Where it runs is the profile's backend, as for mysqld:
  docker  a `--network none` container of the runtime image (docker/packages.txt
          has PostgreSQL's libraries), `--cpuset-cpus` of the cell's server CPUs,
          the build bind-mounted read-only, the datadir, the socket directory and
          the log directory bind-mounted, each at a neutral path under CONTAINER
          (not its host path: a clone in root's home, mode 700, would stop
          PostgreSQL's unprivileged uid on the way), labelled and reaped like a
          mysqld container (harness.measure.backends.DockerBackend). initdb runs
          in a one-shot container of the same kind.
  host    here, in a per-run cgroup cpuset (harness.measure.placement), SIGKILLed
          should the harness die (PR_SET_PDEATHSIG). A build PostgreSQL's user
          cannot reach where it lies (under a mode-700 home) runs from a linked
          (else copied) tree in a run directory of the temp dir, its binary's
          sha256 checked there; the user's folders are never chmodded.
  auto    docker when an engine answers and the image can be had, else host.

A failed initdb or start keeps its log under the run's logs/ (harness.keptlogs), and
its one-line error quotes the log's last meaningful line and the kept path.

PostgreSQL refuses to run as root: as root, initdb and postgres run as the
`postgres` user when the host has one (Debian's postgresql package makes it),
else as `nobody`; in a container that uid is named `postgres` by a passwd file of
the run mounted at /etc/passwd (initdb looks its own user up). As any other user
they run as that user. Queries go through the build's own `psql` on the host over
the socket (the venv has no PostgreSQL driver).
"""
from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from harness import builds, keptlogs, paths
from harness.builds.lock import check_checksum, sha256_file
from harness.measure import backends, placement, procs

PG_USER = "postgres"
FALLBACK_USER = "nobody"  # as root on a host without a postgres user (no postgresql package)
SEP = "\x1f"  # psql field separator: never in the values we read
COMMS = ("postgres", "postmaster")
# Durable and comparable on every host: each commit waits for its WAL flush (InnoDB's
# innodb_flush_log_at_trx_commit=1 counterpart); no JIT (the runtime image has no LLVM,
# and the study's 2005 database had none)
BASE_OPTIONS = {"fsync": "on", "synchronous_commit": "on", "jit": "off"}
# where a container sees the build, datadir, socket and log directories (its image has /opt, 755)
CONTAINER = Path("/opt/mysqlbench/pg")


class PgError(Exception):
    """A PostgreSQL instance that cannot be used: one line, naming the path or statement."""


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


def _tree(roots: list[int]) -> list[int]:
    """The roots and the PostgreSQL processes they forked."""
    kids, out, todo = _children_map(), [], list(roots)
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.append(pid)
        todo.extend(c for c in kids.get(pid, []) if _comm(c) in COMMS)
    return sorted(out)


def pg_pids(run_id: str | None = None, session: str | None = None) -> list[int]:
    """Our PostgreSQL processes of one run or session on this host (host backend): the
    labelled postmasters and the processes they forked. Only the postmaster can be found by
    its label: a forked backend writes its process title over the memory /proc/<pid>/environ
    shows, so backends are found as its descendants."""
    return _tree([p for p in procs.labelled_pids(run_id, session) if _comm(p) in COMMS])


def reap(run_id: str | None = None, session: str | None = None) -> list[int]:
    """Stop every labelled PostgreSQL process of a run or session; return their pids.
    (Containers are removed by harness.measure.docker.reap, by the same labels.)"""
    pids = pg_pids(run_id, session)
    for pid in pids:
        procs.terminate(pid, timeout=10.0)
    return pids


def run_as() -> tuple[int, int] | None:
    """(uid, gid) to run PostgreSQL as when we are root (postgres, else nobody), else None."""
    if os.geteuid() != 0:
        return None
    for user in (PG_USER, FALLBACK_USER):
        try:
            pw = pwd.getpwnam(user)
            return pw.pw_uid, pw.pw_gid
        except KeyError:
            continue
    raise PgError(f"neither user {PG_USER} nor {FALLBACK_USER} exists; create one (useradd --system "
                  f"{PG_USER}): PostgreSQL refuses to run as root")


def _searchable(path: Path, uid: int, gid: int) -> bool:
    st = path.stat()
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def reachable(path: Path, ids: tuple[int, int] | None) -> bool:
    """Every directory from / to `path` (not included) is searchable by `ids` (None: by us)."""
    return ids is None or all(_searchable(d, *ids) for d in reversed(path.parents) if d.exists())


def linked_copy(src: Path, dest: Path) -> None:
    """`src` as `dest`: hard links (the same files, nothing copied), else (another file
    system) a copy; one `cp` either way."""
    for how in (["-al"], ["-a", "--reflink=auto"]):
        shutil.rmtree(dest, ignore_errors=True)
        res = subprocess.run(["cp", *how, "--", str(src), str(dest)], capture_output=True, text=True)
        if res.returncode == 0:
            return
    why = (res.stderr.strip().splitlines() or ["?"])[-1]
    raise PgError(f"copying the build {src} to {dest} failed ({why[:200]}); free space in {dest.parent.parent} "
                  f"or set $TMPDIR")


def check_reachable(path: Path, ids: tuple[int, int] | None, what: str, parents: bool = True) -> None:
    """`path`'s directories (its parents too when `parents`: on the host; in a container only
    the mounted directory itself) must be searchable by the user PostgreSQL runs as."""
    if ids is None:
        return
    dirs = [p for p in reversed(path.parents)] if parents else [path]
    for d in dirs:
        if d.exists() and not _searchable(d, *ids):
            raise PgError(f"{what} {path}: {d} is not searchable by uid {ids[0]} (PostgreSQL's user); "
                          f"chmod o+x {d}, or choose a directory it can enter")


class PgServer(procs.Managed):
    """`with PgServer(build=..., entry=..., build_dir=..., datadir=..., rundir=..., run_id=...,
    cpus=[0], backend="docker") as pg: pg.query(sql)`; `pg.info()` says where it ran."""

    def __init__(self, *, build: str, entry: dict, build_dir: Path, datadir: Path, rundir: Path,
                 run_id: str, cpus, mems=None, mechanism: str = "auto", backend: str = "host",
                 options: dict | None = None, startup_timeout: float = 60, shutdown_timeout: float = 60):
        if backend not in backends.NAMES:
            raise PgError(f"backend: {backend} is not supported; use one of {', '.join(backends.NAMES)}")
        self.build, self.entry = build, entry
        self.build_dir = Path(build_dir).resolve()  # what a container mounts
        self.datadir = Path(datadir).absolute()
        self.rundir = Path(rundir).absolute()
        self.run_id = run_id
        self.cpus = list(cpus)
        self.mems = list(mems) if mems else None   # memory nodes; None = all this process may use
        self.mechanism = mechanism
        self.backend_asked = backend
        self.options = {**BASE_OPTIONS, **(options or {})}
        self.startup_timeout, self.shutdown_timeout = startup_timeout, shutdown_timeout
        self.bin: Path | None = None
        self.lib: Path | None = None
        self.runner: backends.Backend | None = None  # docker (or auto): the container's backend
        self.proc: subprocess.Popen | None = None    # host: the postmaster
        self.placement: placement.Placement | None = None
        self.sockdir: Path | None = None
        self.logdir = self.rundir / "log"
        self.log = self.logdir / "postgres.log"
        self.argv: list[str] = []
        self._ids: tuple[int, int] | None = None
        self._build_copy: Path | None = None   # host: the run directory of a linked copy of the build
        self._mounts: list[tuple[Path, Path]] = []  # docker: (host path, path inside)

    @property
    def backend(self) -> str:
        return self.runner.name if self.runner is not None else "host"

    # -- start ---------------------------------------------------------------
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

    def _inside(self, path: Path) -> Path:
        """`path` as the server sees it: under docker, in its neutral mount; else itself."""
        path = Path(path)
        for host, inside in self._mounts if self.runner is not None else ():
            if path == host or path.is_relative_to(host):
                return inside / path.relative_to(host)
        return path

    def _env(self, server: bool = True) -> dict:
        """The server's environment (`server`: its paths as it sees them), or psql's on the host."""
        lib = self._inside(self.lib) if server else self.lib
        return {"LC_ALL": "C", "LANG": "C", "PGTZ": "UTC", "LD_LIBRARY_PATH": str(lib)}

    def _host_build(self, postgres: Path) -> Path:
        """host: the postgres binary PostgreSQL's user can reach: the build's own, else that of
        a linked copy of the build in a run directory of the temp dir (sha256 checked)."""
        if reachable(postgres, self._ids):
            return postgres
        self._build_copy = Path(tempfile.mkdtemp(prefix=paths.scratch_prefix("pgb")))
        os.chmod(self._build_copy, 0o755)
        copy = self._build_copy / "build"
        linked_copy(self.build_dir, copy)
        check_reachable(copy / "x", self._ids, "build copy")
        moved = copy / postgres.relative_to(self.build_dir)
        check_checksum(self.build, moved, self.entry["mysqld_sha256"], sha256_file(moved),
                       f"delete {self.build_dir} and fetch again")
        self.lib = copy / self.lib.relative_to(self.build_dir)
        return moved

    def _own(self, path: Path) -> None:
        if self._ids is not None:
            os.chown(path, *self._ids)
        os.chmod(path, 0o700)

    def _make_runner(self) -> None:
        """docker/auto: the container backend (auto may fall back to host: then None)."""
        if self.backend_asked == "host":
            return
        ids = self._ids or (os.geteuid(), os.getegid())
        passwd = self.rundir / "passwd"
        passwd.write_text(f"root:x:0:0:root:/root:/bin/sh\n"
                          f"{PG_USER}:x:{ids[0]}:{ids[1]}:PostgreSQL:/nonexistent:/usr/sbin/nologin\n")
        group = self.rundir / "group"
        group.write_text(f"root:x:0:\n{PG_USER}:x:{ids[1]}:\n")
        build = self.build_dir.resolve()
        rw = [(self.datadir, CONTAINER / "data"), (self.sockdir, CONTAINER / "sock"), (self.logdir, CONTAINER / "log")]
        try:
            runner = backends.make(
                self.backend_asked, run_id=self.run_id, cpus=self.cpus, mems=self.mems, mechanism=self.mechanism,
                ro_mounts=[(build, CONTAINER / "build"), *backends.link_targets(build)],
                rw_mounts=rw, cidfile=self.rundir / "cid")
        except backends.BackendError as e:
            raise PgError(str(e)) from None
        if runner.name == "docker":
            runner.user = f"{ids[0]}:{ids[1]}"
            runner.files = [(passwd, "/etc/passwd"), (group, "/etc/group")]
            check_reachable(build, self._ids, "build", parents=False)
            self._mounts = [(build, CONTAINER / "build"), *rw]
            self.runner = runner
        else:  # auto fell back to host: said once on stderr, kept in info()["fallback"]
            self._fallback = runner.fallback

    def start(self):
        postgres = builds.verify_installed(self.build, self.entry, self.build_dir)
        self.bin = postgres.parent
        self.lib = self.build_dir / self.entry.get("lib_dir", ".")
        self._ids = run_as()
        self.rundir.mkdir(parents=True, exist_ok=True)
        self.logdir.mkdir(exist_ok=True)
        self._own(self.logdir)
        self.sockdir = Path(tempfile.mkdtemp(prefix=paths.scratch_prefix("pg")))
        self._own(self.sockdir)
        self._make_runner()
        if self.runner is None:  # on the host: every parent must let PostgreSQL's user through
            check_reachable(self.datadir, self._ids, "datadir")
            postgres = self._host_build(postgres)
            self.bin = postgres.parent
        self.datadir.mkdir(parents=True, exist_ok=True)  # (a container mounts it: it must exist)
        if not (self.datadir / "PG_VERSION").exists():
            self._initdb()
        self.argv = [str(self._inside(postgres)), "-D", str(self._inside(self.datadir)),
                     "-c", "listen_addresses=", "-c", f"unix_socket_directories={self._inside(self.sockdir)}",
                     *[a for k, v in self.options.items() for a in ("-c", f"{k}={v}")]]
        if self.runner is not None:
            # the shell only redirects the output to the log and becomes postgres (exec)
            log = shlex.quote(str(self._inside(self.log)))
            sh = ["/bin/sh", "-c", f'exec "$@" >>{log} 2>&1', "sh", *self.argv]
            try:
                self.runner.start(sh, self._env())
            except backends.BackendError as e:
                raise PgError(f"backend docker: {e}") from None
        else:
            self.placement = placement.Placement(self.run_id, self.cpus, self.mechanism,
                                                 mems=self.mems).__enter__()
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    self.argv, env=procs.labelled_env(self.run_id, self._env()),
                    preexec_fn=self._preexec(self.placement), stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, cwd="/", start_new_session=True)
        self._wait_ready()

    def _initdb(self):
        if any(self.datadir.iterdir()):
            raise PgError(f"datadir {self.datadir} is not empty and has no PG_VERSION; give an empty "
                          f"or a PostgreSQL datadir")
        self._own(self.datadir)
        argv = [str(self._inside(self.bin / "initdb")), "-D", str(self._inside(self.datadir)), "-U", PG_USER,
                "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions"]
        log = self.rundir / "initdb.log"
        if self.runner is not None:
            try:
                code = self.runner.run(argv, self._env(), log=log, timeout=300)
            except backends.BackendError as e:
                raise PgError(keptlogs.failure(f"initdb of {self.datadir}: {e}", self.run_id, log)) from None
        else:
            with open(log, "ab") as f:
                code = subprocess.run(argv, env=procs.labelled_env(self.run_id, self._env()),
                                      preexec_fn=self._preexec(None), cwd="/", stdin=subprocess.DEVNULL,
                                      stdout=f, stderr=subprocess.STDOUT, timeout=300).returncode
        if code != 0:
            raise PgError(keptlogs.failure(f"initdb of {self.datadir} failed (exit {code})", self.run_id, log))

    def _exited(self) -> str | None:
        if self.runner is not None:
            return self.runner.exited()
        return None if self.proc.poll() is None else f"exited with {self.proc.returncode} during startup"

    def _wait_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        last = ""
        while time.monotonic() < deadline:
            why = self._exited()
            if why:
                raise PgError(keptlogs.failure(f"postgres {why}", self.run_id, self.log))
            if (self.sockdir / ".s.PGSQL.5432").exists():
                try:
                    self.query("SELECT 1")
                    return
                except PgError as e:
                    last = str(e)
            time.sleep(0.1)
        what = f"postgres not ready after {self.startup_timeout}s" + (f" ({last})" if last else "")
        raise PgError(keptlogs.failure(what, self.run_id, self.log))

    # -- state and stop --------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The postmaster's pid on this host (under docker: the postgres inside the container)."""
        return self.runner.pid if self.runner is not None else (self.proc.pid if self.proc else None)

    def alive(self) -> bool:
        if self.runner is not None:
            return self.runner.alive()
        return self.proc is not None and self.proc.poll() is None

    def processes(self) -> list[int]:
        """The postmaster and every process it forked (for tests and manifests)."""
        if self.runner is not None:
            return _tree([self.pid]) if self.pid is not None and _running(self.pid) else []
        return pg_pids(self.run_id)

    def info(self) -> dict:
        """Where it ran, for the manifest: backend, mechanism, CPUs and memory nodes asked and observed,
        container and image (docker), memory limit, the user it ran as, and (host) the linked
        copy of the build it ran from, if it did."""
        if self.runner is not None:
            out = {**self.runner.info(), "container": self.runner.container}
        else:
            out = {"backend": "host", "mechanism": self.placement.mechanism if self.placement else "",
                   "cpus": placement.cpulist(self.cpus),
                   "mems": placement.cpulist(self.placement.mems if self.placement else placement.run_mems(self.mems)),
                   "image": None}
            if getattr(self, "_fallback", None):
                out["fallback"] = self._fallback
        if self.pid is not None and _running(self.pid):
            out["observed_cpus"] = placement.cpulist(placement.observed_cpus(self.pid))
            out["observed_mems"] = placement.cpulist(placement.observed_mems(self.pid))
        out["uid"] = self._ids[0] if self._ids else os.geteuid()
        if self._build_copy is not None:  # host: the build its user could not reach, run from a linked copy
            out["build_copy"] = str(self._build_copy / "build")
        return out

    def stop(self, kill: bool = False):
        """Smart shutdown (SIGTERM / docker stop: no session is left, so it checkpoints and
        ends), killed when `kill`; SIGKILL after the timeout. Then nothing of this run may be
        left: its container, or (host) every labelled process; the cgroup and the socket
        directory are removed."""
        late = False
        try:
            if self.runner is not None:
                late = not self.runner.stop(kill=kill, timeout=self.shutdown_timeout)
            else:
                late = self._stop_host(kill)
        finally:
            if self.placement is not None:
                self.placement.remove()
            if self.sockdir is not None:
                shutil.rmtree(self.sockdir, ignore_errors=True)
            if self._build_copy is not None:
                shutil.rmtree(self._build_copy, ignore_errors=True)
        if late:
            raise PgError(f"postgres did not shut down within {self.shutdown_timeout}s; killed")

    def _stop_host(self, kill: bool) -> bool:
        ours = pg_pids(self.run_id)
        late = False
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
        return late

    def _left(self, snapshot: list[int]) -> list[int]:
        alive = [p for p in snapshot if _running(p) and _comm(p) in COMMS]
        return sorted(set(alive) | set(pg_pids(self.run_id)))

    # -- use -----------------------------------------------------------------
    def _psql(self, commands: list[str], db: str) -> str:
        if self.sockdir is None or self.bin is None:
            raise PgError("the PostgreSQL server is not started")
        argv = [str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-F", SEP, "-v", "ON_ERROR_STOP=1",
                "-h", str(self.sockdir), "-U", PG_USER, "-d", db]
        for c in commands:
            argv += ["-c", c]
        res = subprocess.run(argv, env=procs.labelled_env(self.run_id, self._env(server=False)),
                             preexec_fn=procs.die_with_parent, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=None)
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
