"""Labelled child processes: started with a label in their environment, killed
with their parent, and reaped by label (never by a broad name)."""
from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

LABEL_VAR = "MYSQLBENCH_LABEL"
LABEL = "mysql-engines-artifact"
RUN_VAR = "MYSQLBENCH_RUN"
# Set once per pipeline or test session (Snakefile, conftest) and inherited by
# every job, so a session reaps only what it started.
SESSION_VAR = "MYSQLBENCH_SESSION"

_PR_SET_PDEATHSIG = 1


def labelled_env(run_id: str, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env[LABEL_VAR] = LABEL
    env[RUN_VAR] = run_id
    env.update(extra or {})
    return env


def die_with_parent() -> None:
    """In a preexec_fn: SIGKILL this child when the harness dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _environ(pid: int) -> dict:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


def labelled_pids(run_id: str | None = None, session: str | None = None) -> list[int]:
    """Processes carrying our label (optionally one run's or session's), excluding ourselves."""
    me = os.getpid()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        env = _environ(int(d.name))
        if env.get(LABEL_VAR) != LABEL:
            continue
        if run_id is not None and env.get(RUN_VAR) != run_id:
            continue
        if session is not None and env.get(SESSION_VAR) != session:
            continue
        pids.append(int(d.name))
    return pids


def server_pids(run_id: str | None = None, session: str | None = None) -> list[int]:
    """Labelled processes that are servers (mysqld/mariadbd), for reaping and tests."""
    out = []
    for pid in labelled_pids(run_id, session):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm in ("mysqld", "mariadbd"):
            out.append(pid)
    return out


def terminate(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM, wait, then SIGKILL one pid we started."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not Path(f"/proc/{pid}").exists() or _is_zombie(pid):
                return
            time.sleep(0.1)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def reap(run_id: str | None = None, session: str | None = None) -> list[int]:
    """Kill every server carrying our label (of one run or session, or all); return their pids."""
    pids = server_pids(run_id, session)
    for pid in pids:
        terminate(pid, timeout=10.0)
    return pids


class Managed:
    """A server's `with` lifecycle, shared by mysqld (harness.measure.server) and PostgreSQL
    (harness.studies.c.legacy_pg): SIGINT/SIGTERM/SIGHUP become KeyboardInterrupt while it runs
    (so the `with` unwinds and stops it), a failed start is killed, the handlers are
    restored on the way out. Subclasses give start() and stop(kill)."""

    _old_handlers: dict

    def start(self):  # pragma: no cover - subclasses
        raise NotImplementedError

    def stop(self, kill: bool = False):  # pragma: no cover - subclasses
        raise NotImplementedError

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
        self._old_handlers = {}
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, handler)

    def _restore_signals(self):
        for sig, old in getattr(self, "_old_handlers", {}).items():
            signal.signal(sig, old)
        self._old_handlers = {}
