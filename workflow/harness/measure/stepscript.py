"""The runtime of a `steps` cell: a named script of server calls against one
running server, each outcome a row (a timing, a value, or a check).

Study C is not a sysbench load: it is a short procedure (load a table with a
stored-procedure loop, scan it, convert it between engines, look at its files,
restart the server without InnoDB). A script is a function of a StepContext,
declared by its study (harness.studies: STEP_SCRIPTS); it knows nothing about how the server was
started (host or docker, which build): it gets a server object, a way to
restart it with extra my.cnf options, and a Recorder for its rows.

Rows (Recorder.FIELDS): step, engine, metric, value, unit, ok, detail.
  timed   value = wall seconds, unit "s", ok true
  value   a measured or observed value (number or text), ok true
  check   value empty, ok true/false, detail says what was checked and what was seen
  skip    value empty (never a zero), ok false, detail says why it could not be measured
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness import atomic

FIELDS = ("step", "engine", "metric", "value", "unit", "ok", "detail")
# SHOW ENGINES `Support` values of an engine a table can be created in.
SUPPORTED = ("YES", "DEFAULT")


class StepError(Exception):
    """A steps script that cannot run as asked (unknown script, bad parameter): one line."""


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(round(v, 6))
    return " ".join(str(v).split()) if any(c in str(v) for c in "\t\r\n") else str(v)


class Recorder:
    """Collects the rows of one steps cell, in the order they happened."""

    FIELDS = FIELDS

    def __init__(self):
        self.rows: list[dict] = []

    def _add(self, step, engine, metric, value, unit, ok, detail) -> dict:
        row = {"step": step, "engine": engine or "", "metric": metric, "value": value,
               "unit": unit or "", "ok": bool(ok), "detail": detail or ""}
        self.rows.append(row)
        return row

    def timed(self, step: str, engine: str, fn: Callable[[], Any], *, metric: str = "wall_s",
              detail: str = "") -> Any:
        """Call `fn` and record the wall-clock seconds (time.perf_counter) around it;
        return what `fn` returned.

        What is timed is exactly `fn`, and the scripts make `fn` one server call: one
        SQL statement sent on an already open connection over the server's unix socket,
        plus reading its result. Connecting, EXPLAIN and status reads stay outside, so
        the number is the statement's round trip as a client sees it (as the study's
        `mysql` client reported it). If `fn` raises, nothing is recorded."""
        t0 = time.perf_counter()
        result = fn()
        self._add(step, engine, metric, time.perf_counter() - t0, "s", True, detail)
        return result

    def value(self, step: str, engine: str, metric: str, value, unit: str = "", detail: str = "") -> dict:
        return self._add(step, engine, metric, value, unit, True, detail)

    def check(self, step: str, engine: str, ok: bool, detail: str, *, metric: str = "check") -> dict:
        return self._add(step, engine, metric, "", "", ok, detail)

    def skip(self, step: str, engine: str, reason: str, *, metric: str = "skipped") -> dict:
        """Something that could not be measured here: a row with no value (never a zero)."""
        return self._add(step, engine, metric, "", "", False, reason)

    def find(self, step: str | None = None, engine: str | None = None,
             metric: str | None = None) -> list[dict]:
        return [r for r in self.rows if (step is None or r["step"] == step)
                and (engine is None or r["engine"] == engine)
                and (metric is None or r["metric"] == metric)]

    def tsv(self) -> str:
        lines = ["\t".join(FIELDS)]
        lines += ["\t".join(_cell(r[f]) for f in FIELDS) for r in self.rows]
        return "\n".join(lines) + "\n"

    def write(self, path: Path) -> None:
        atomic.write_text(Path(path), self.tsv())


def show_engines(server) -> list[tuple]:
    """SHOW ENGINES rows: (Engine, Support, Comment, Transactions, XA, Savepoints)."""
    return [tuple(r) for r in server.query("SHOW ENGINES")]


@dataclass
class StepContext:
    """What a script may use. `server` has `.query(sql, db=None) -> list[tuple]` and
    `.connect(db=None)` (a PyMySQL connection with autocommit on), like
    harness.measure.server.Server. `restart(extra)` stops the server and starts it again on
    the same datadir with the cell's options plus `extra` (not added to an earlier
    restart's: `restart({})` is the cell's own configuration), returning the new
    server object. `family` is the build family of config/builds.lock.yaml."""

    server: Any
    restart: Callable[[dict], Any]
    engines: list[str]
    params: dict
    rec: Recorder
    family: str
    available_engines: list[str] | None = None  # Support YES/DEFAULT in SHOW ENGINES
    engine_support: dict[str, str] = field(default_factory=dict)  # every SHOW ENGINES row
    seed: int | None = None  # the block's seed (settings' seed + repetition): a script's random order

    def refresh_engines(self) -> list[str]:
        rows = show_engines(self.server)
        self.engine_support = {str(r[0]): str(r[1]) for r in rows}
        self.available_engines = [e for e, s in self.engine_support.items() if s.upper() in SUPPORTED]
        return self.available_engines

    def support(self, engine: str) -> str | None:
        """SHOW ENGINES' Support of `engine` (names compared case-insensitively), None if absent."""
        if not self.engine_support:
            self.refresh_engines()
        for name, s in self.engine_support.items():
            if name.lower() == engine.lower():
                return s
        return None

    def has_engine(self, engine: str) -> bool:
        s = self.support(engine)
        return s is not None and s.upper() in SUPPORTED

    def restart_with(self, extra: dict):
        """Restart through `restart`, keep the new server and re-read SHOW ENGINES."""
        self.server = self.restart(dict(extra))
        self.refresh_engines()
        return self.server


class Restartable:
    """One running server that a script may restart. `start(extra)` returns a server
    context manager (e.g. harness.measure.server.Server) for the cell's options plus `extra`,
    not yet entered; `restart(extra)` stops the current one cleanly and enters a new
    one; leaving the with-block stops whichever is current (killed on an exception).
    A server that fails to start has already cleaned up after itself (Server.__enter__)."""

    def __init__(self, start: Callable[[dict], Any]):
        self._start = start
        self.server = None

    def __enter__(self):
        self.server = self._start({}).__enter__()
        return self

    def restart(self, extra: dict):
        old, self.server = self.server, None
        if old is not None:
            old.__exit__(None, None, None)
        self.server = self._start(dict(extra)).__enter__()
        return self.server

    def __exit__(self, exc_type, exc, tb):
        cur, self.server = self.server, None
        if cur is not None:
            cur.__exit__(exc_type, exc, tb)
        return False


def run(fn: Callable[[StepContext], None], ctx: StepContext) -> Recorder:
    """Run the script `fn` on `ctx`; its rows are in ctx.rec (also returned)."""
    if ctx.available_engines is None:
        ctx.refresh_engines()
    fn(ctx)
    return ctx.rec


@contextlib.contextmanager
def cursor(server, db: str | None = None):
    """One connection and cursor for a run of statements (closed after)."""
    con = server.connect(db)
    try:
        with con.cursor() as cur:
            yield cur
    finally:
        con.close()

