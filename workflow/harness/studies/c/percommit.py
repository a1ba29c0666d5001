"""Study C1 with a log flush at every commit: the `test_drive_per_commit` experiment.

The study's autocommit inserts (InnoDB 184.75 s for 3,000,000 rows, 16k commits/s on
a 2005 desktop disk) were only possible with a flush that cost next to nothing, so
study C's baseline (`test_drive`) keeps autocommit and relaxes the flush
(innodb_flush_log_at_trx_commit=2, the PostgreSQL stand-in's synchronous_commit=off).
This experiment runs the same script with a flush per commit (1 and on, today's
servers' default), on a small row count: its ratios, beside the baseline's, say how
much of a C1 ratio is the flush and not the engine. Which factor values each
experiment runs is its config's (`variants`, harness.measure.factors); the tidy columns
hold what the servers reported (each cell's `effective` block).
"""
from __future__ import annotations

import statistics

from harness.analysis import marks as _marks
from harness.analysis import tidyread as T

EXPERIMENT = "test_drive_per_commit"
BASELINE = "test_drive"
LEGACY = "PostgreSQL (legacy stand-in)"
# The study's flush, as a row of the deviations table (harness.report.deviations; key log_flush)
SETUP_ROW = ("log flush per commit", "autocommit; InnoDB's 3,000,000 inserts in 184.75 s, only possible "
                                     "with a flush that cost next to nothing (C)", "log_flush")
# InnoDB's published time over each engine's (3,000,000 rows, docs/studies.md)
PUBLISHED_INNODB_OVER = {"MyISAM": 184.75 / 109.88, "ARCHIVE": 184.75 / 73.83, LEGACY: 184.75 / 183.01}
# the rows the study inserted, beside the profile's (the deviations table's "rows inserted")
ROWS_ROW = ("rows inserted", "3,000,000 (C)", "steps_rows")


def insert_times(ctx, experiment: str, build: str, engine: str) -> list[float]:
    out = []
    for cell in ctx.tidy.cells(experiment, build=build):
        for r in cell.runs:
            if r.get("step") == "C1" and r.get("engine") == engine and r.get("metric") == "insert_s":
                try:
                    out.append(float(r["value"]))
                except (TypeError, ValueError):
                    pass
    return out


def innodb_over(ctx, experiment: str, build: str, engine: str) -> float | None:
    """InnoDB's median insert time over `engine`'s in `experiment` on `build` (None: missing)."""
    a, b = insert_times(ctx, experiment, build, "InnoDB"), insert_times(ctx, experiment, build, engine)
    return statistics.median(a) / statistics.median(b) if a and b and statistics.median(b) > 0 else None


def settings_of(ctx, experiment: str) -> str:
    """The factor values the experiment's config fixes, in words ('Performance Schema off, ...')."""
    return ", ".join(T.setting_words(n, v) for n, v in T.fixed(ctx.tidy.spec(experiment)).items())


def ratio_text(ctx, engine: str, fmt) -> str:
    """'1.6× relaxed, 24× per commit (mysql-5.6.24)' per build that ran both."""
    parts = []
    for build in ctx.tidy.builds(EXPERIMENT):
        r, p = innodb_over(ctx, BASELINE, build, engine), innodb_over(ctx, EXPERIMENT, build, engine)
        if r is None and p is None:
            continue
        show = lambda x: "n/a" if x is None else f"{x:.3g}$\\times$"  # noqa: E731
        parts.append(f"{show(r)} with the flush relaxed, {show(p)} with a flush per commit "
                     f"({fmt.tex_tt(build)})")
    return "; ".join(parts) or fmt.NA


def macros(ctx, fmt) -> list[tuple[str, str]]:
    rows = ctx.tidy.spec(EXPERIMENT).get("rows")
    return [
        ("CPerCommitRows", fmt.fmt_int(rows) if rows else fmt.NA),
        ("CPerCommitSettings", fmt.tex_escape(settings_of(ctx, EXPERIMENT)) or fmt.NA),
        ("CBaselineSettings", fmt.tex_escape(settings_of(ctx, BASELINE)) or fmt.NA),
        ("CPerCommitInnodbMyisam", ratio_text(ctx, "MyISAM", fmt)),
        ("CPerCommitInnodbLegacy", ratio_text(ctx, LEGACY, fmt)),
    ]


FIGURE = {"c_per_commit": dict(script="fig_c_per_commit.R", flag="CPerCommit",
                               inputs=[(BASELINE, "summary"), (EXPERIMENT, "summary")],
                               required=[BASELINE, EXPERIMENT],   # it compares the two: drawn only with both
                               extra=["factors.csv", "published.csv"])}
PUBLISHED_MARKS = [_marks.mark("c_per_commit", v, _marks.ratio_label(v), "C1, 3,000,000 inserts",
                               step="C1", metric="insert_s", engine=e)
                   for e, v in PUBLISHED_INNODB_OVER.items()]
