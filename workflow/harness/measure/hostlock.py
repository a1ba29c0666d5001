"""One measurement per lane (or one on the whole host) at a time, whichever pipeline asks.

Inside one pipeline Snakemake's `lane<i>` resources already run one server per
lane at a time; a second pipeline (another clone, another profile, a test run) knows
nothing of it and would measure on the same cores. Every step that starts a
server to measure or to load (the cell frame, dataset preparation) therefore
holds an exclusive `flock` on one host-wide lock file for its whole life. A
second one waits, saying once on stderr who holds the lock, and starts when
the first ends. The kernel drops the lock when its holder exits, however it
exits (SIGKILL included), so no stale lock is ever left to clean up.

Lanes (harness.plan.lanes): a cell that runs on lanes holds the host lock shared and
each of its lanes' locks (`<lock>.lane<i>`, in ascending order) exclusively, so cells
of one lane never overlap while cells of different lanes may; a step on the whole host
(a dataset, a cell without lanes) holds the host lock exclusively and so waits for
every lane, and every lane waits for it.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
from pathlib import Path

LOCK_NAME = "mysqlbench-measure.lock"
# Where the lock lives: the first writable directory of these (the FHS place for
# lock files first); $MYSQLBENCH_LOCK names the file itself.
LOCK_VAR = "MYSQLBENCH_LOCK"
LOCK_DIRS = ("/run/lock", "/var/lock")

_depth = 0  # nesting depth in this process: flock would block on our own lock
# A parent that holds lanes' locks for its children (harness.measure.duetrun: a duet pair's
# two sides take both twins' locks at once, so two such parents cannot each hold one
# side's lane and wait for the other's): "<its pid>:<lane>,<lane>" in the children's environment.
HELD_VAR = "MYSQLBENCH_LANES_HELD"


def held_env(lanes) -> dict:
    """The environment entry that tells this process's children it holds `lanes`' locks."""
    return {HELD_VAR: f"{os.getpid()}:{','.join(str(x) for x in sorted(set(lanes)))}"}


def _held_by_parent(lanes) -> bool:
    pid, _, held = os.environ.get(HELD_VAR, "").partition(":")
    return bool(lanes) and pid.isdigit() and int(pid) == os.getppid() and \
        {str(x) for x in lanes} <= set(held.split(","))


def lock_path() -> Path:
    """The host's lock file (not created here)."""
    if os.environ.get(LOCK_VAR):
        return Path(os.environ[LOCK_VAR])
    for d in LOCK_DIRS:
        if os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return Path(d) / LOCK_NAME
    return Path(tempfile.gettempdir()) / LOCK_NAME


def holder(path: Path | None = None) -> str:
    """Who holds the lock, as its holder wrote it: '<pid> <what>' (or '' if unknown)."""
    try:
        return Path(path or lock_path()).read_text().strip()
    except OSError:
        return ""


def busy(path: Path | None = None) -> str | None:
    """Who measures on this host right now ('<pid> <what>', or 'another process'), None if
    nobody: for a console notice before jobs whose stderr goes to a log (Snakemake's
    `onstart`). Only a snapshot: the lock itself is taken by `measuring`."""
    if _depth:
        return None
    path = Path(path or lock_path())
    if not path.exists():
        return None
    fd, _ = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return holder(path) or "another process"
    finally:
        os.close(fd)
    return None


def _open(path: Path) -> tuple[int, bool]:
    """A descriptor to flock (not inherited by children); read-write when we may write
    the holder line, read-only when another user created the file (flock needs no write)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666), True
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False


def lane_path(lane: int, path: Path | None = None) -> Path:
    """Lane `lane`'s lock file, beside the host's."""
    path = Path(path or lock_path())
    return path.with_name(f"{path.name}.lane{lane}")


def _take(fd: int, mode: int, path: Path, what: str, out, lane: int | None = None) -> None:
    """flock `fd` in `mode`, saying once on `out` who holds it while waiting."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        who = holder(path) or "another process"
        whose, where = ("the host's", "this host") if lane is None else (f"lane {lane}'s", f"lane {lane}")
        print(f"waiting for {whose} measurement lock {path} (held by {who}): one measurement on "
              f"{where} at a time; this {what} starts when that one ends", file=out or sys.stderr, flush=True)
        fcntl.flock(fd, mode)


@contextlib.contextmanager
def measuring(what: str, out=None, lanes=None):
    """Hold the host's measurement lock for the block (exclusive; with `lanes`, shared, and
    those lanes' locks exclusive); wait (one line on `out`, stderr by default) while another
    process holds it. Re-entrant in one process, and held already when the parent process
    holds these lanes for it (held_env)."""
    global _depth
    if _depth or _held_by_parent(lanes):
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
        return
    path = lock_path()
    fds = []
    try:
        fd, writable = _open(path)
        fds.append(fd)
        _take(fd, fcntl.LOCK_SH if lanes else fcntl.LOCK_EX, path, what, out)
        if lanes:  # the host lock is shared: the holder line goes in the lane's file
            for lane in sorted(set(lanes)):
                lp = lane_path(lane, path)
                fd, writable = _open(lp)
                fds.append(fd)
                _take(fd, fcntl.LOCK_EX, lp, what, out, lane)
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {what}\n".encode(), 0)
        _depth = 1
        try:
            yield
        finally:
            _depth = 0
            if writable:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
    finally:
        for fd in reversed(fds):
            os.close(fd)  # releases the flock
