"""Wait events: the lock and synchronisation waits of an engine's busiest
cell (top_waits) and the claim that a published wait is among its top ones
(TopWait), a kind of claim beside those of harness.analysis.claimkinds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness.analysis import tidydata as T
from harness.analysis.claimkinds import Claim, gated
from harness.analysis.claimrules import (
    NOT_REPRODUCED, REPRODUCED, Context, Result, cell_where, flagged, missing)


LOCK_WAITS = re.compile(r"^wait/(synch|lock)/")


def short_event(name: str) -> str:
    return re.sub(r"^synch/", "", re.sub(r"^wait/", "", name))


def event_label(name: str) -> str:
    """'wait/synch/mutex/sql/THD::LOCK_thd_data' -> 'sql/THD::LOCK_thd_data'."""
    return name.split("/", 3)[-1]


def top_waits(ctx: Context, experiment: str, build: str, engine: str, tables: int | None = None):
    """(cells, [(event, share of lock+synch wait time)] descending) of an engine's
    cell with the most users, then cores (timers summed over its repetitions);
    cells with the Performance Schema off have no wait rows and do not count."""
    rows = [r for r in ctx.tidy.extra("waits", experiment)
            if r.get("build", "") == build and r.get("engine") == engine
            and LOCK_WAITS.match(r.get("event_name") or "")
            and (tables is None or r.get("tables") == str(tables))]
    if not rows:
        return [], []

    def key(r):
        return (T.number(r.get("users")) or 0, T.number(r.get("cores")) or 0)
    top = max(key(r) for r in rows)
    rows = [r for r in rows if key(r) == top]
    cell_keys = {(r.get("variant"), r.get("tables")) for r in rows}
    cells = [c for c in ctx.tidy.cells(experiment, build=build, engine=engine)
             if (c["variant"], c["tables"]) in cell_keys and (c.int("users"), c.int("cores")) == top]
    totals = {}
    for r in rows:
        totals[r["event_name"]] = totals.get(r["event_name"], 0.0) + (T.number(r.get("sum_timer_wait_ps")) or 0)
    total = sum(totals.values())
    if total <= 0:
        return cells, []
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return cells, [(e, v / total) for e, v in ranked]


@dataclass(frozen=True)
class TopWait(Claim):
    """Does the published wait (a regular expression on the event name) appear among
    the top `top_n` lock/synchronisation waits of the engine's busiest cell?"""
    experiment_name: str = ""
    engine: str = ""
    tables: int | None = None
    pattern: str = ""
    top_n: int = 5

    def evaluate(self, ctx, build):
        if ctx.tidy.experiment(self.experiment_name) is None:
            return missing(*ctx.tidy.missing(self.experiment_name).split(": ", 1))
        cells, ranked = top_waits(ctx, self.experiment_name, build, self.engine, self.tables)
        if not ranked:
            return missing("data", f"no lock or synchronisation waits of {self.engine} in "
                                   f"{self.experiment_name} (Performance Schema off, or no wait time)")
        top = ranked[:self.top_n]
        rank = next((i for i, (e, _) in enumerate(ranked, 1) if re.search(self.pattern, e)), None)
        c = cells[0] if cells else None
        listed = ", ".join(f"{event_label(e)} {100 * s:.0f}%" for e, s in top)
        found = (f"{event_label(ranked[rank - 1][0])} ranks {rank} of {len(ranked)} "
                 f"({100 * ranked[rank - 1][1]:.0f}%)" if rank else "not among the measured waits")
        measured = f"{found}; top {len(top)} of {self.engine}" + (f" ({cell_where(c, c)})" if c else "") + \
            f": {listed}"
        if rank and rank <= self.top_n:
            res = Result(measured, REPRODUCED, f"the published wait is number {rank} of the top "
                                              f"{self.top_n}", cells=cells)
        else:
            where = f"number {rank} of {len(ranked)}" if rank else "not among the measured waits"
            res = Result(measured, NOT_REPRODUCED, f"the published wait is {where}, not in the top "
                                                    f"{self.top_n}", cells=cells)
        res.reason += flagged(cells)
        return gated(self, ctx, res, cells)
