"""Study C's tidy rows as the claims and tables read them: one row per (step, engine, metric)
and repetition of the `test_drive` steps experiment (harness.studies.c re-exports these names)."""
from __future__ import annotations

import statistics

from harness.analysis import tidyread as T

EXPERIMENT = "test_drive"


# --- reading the steps rows ------------------------------------------------------------

def step_rows(ctx, build: str, step: str | None = None, engine: str | None = None,
              metric: str | None = None) -> list[dict]:
    """The test_drive rows of `build` (every repetition) with these step/engine/metric."""
    out = []
    for cell in ctx.tidy.cells(EXPERIMENT, build=build):
        for r in cell.runs:
            if ((step is None or r.get("step") == step) and (engine is None or r.get("engine") == engine)
                    and (metric is None or r.get("metric") == metric)):
                out.append(r)
    return out


def ok(row: dict) -> bool:
    return T.flag(row.get("ok", ""))


def by_rep(ctx, build: str, step: str, engine: str, metric: str) -> dict:
    """{rep: the median of the step's passing values in that repetition} (a repetition is a block)."""
    out = {}
    for r in step_rows(ctx, build, step, engine, metric):
        v = T.number(r.get("value"))
        if ok(r) and v is not None:
            out.setdefault(r.get("rep", ""), []).append(v)
    return {rep: statistics.median(v) for rep, v in sorted(out.items())}


def values(ctx, build: str, step: str, engine: str, metric: str) -> list[float]:
    """One value per repetition (the median of the step's passing values in it)."""
    return list(by_rep(ctx, build, step, engine, metric).values())


def median(ctx, build, step, engine, metric):
    v = values(ctx, build, step, engine, metric)
    return statistics.median(v) if v else None


def setup_value(ctx, build: str, metric: str) -> str:
    """A setup row's value as the script recorded it ('' when absent)."""
    rows = step_rows(ctx, build, "setup", None, metric)
    return rows[0].get("value", "") if rows else ""


def rows_loaded(ctx) -> int | None:
    return ctx.tidy.spec(EXPERIMENT).get("rows")


# --- formatting --------------------------------------------------------------------------

def fmt_s(x) -> str:
    """Seconds with three significant digits: '1.94 s', '0.0612 s'."""
    return "n/a" if x is None else f"{x:.3g} s"


def fmt_bytes(x) -> str:
    return "n/a" if x is None else f"{x:,.0f} B"
