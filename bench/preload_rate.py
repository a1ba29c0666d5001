"""Benchmark (prints figures, asserts nothing): how long a throughput cell takes to read
its tables into memory before its warm-up (harness.measure.captures.preload), per row, so
the plan can count it (harness.plan.estimate.preload_seconds: sbtest's PRELOAD_ROW_S).

Per engine (InnoDB, MyISAM), a prepared sbtest dataset of `--tables` x `--rows`; per
round, a server started as a cell starts it (harness.measure.frame.Frame: the pipeline's
CPUs, labelled, reaped) on a fresh copy, then what a cell does before its warm-up
(throughput._table_captures: MyISAM's key caches, then the read-in, timed). Prints per round and engine: seconds, seconds per row (of one
table: the tables are read side by side), InnoDB pages fetched, and the median per engine.

    python bench/preload_rate.py [--rows 1000000] [--tables 1] [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, pinned_build, point_select_cell, run_settings, sbtest_datasets  # noqa: E402

ENGINES = ("InnoDB", "MyISAM")


def one_round(engine: str, sc: dict, build: tuple, ds: Path, work: Path, rnd: int) -> dict:
    """One server start: what a cell does before its warm-up; the read-in's totals."""
    from harness.measure import throughput
    frame, spec, d, values = point_select_cell(engine, sc, 4, rnd, build, ds, work)
    with frame as fr:
        throughput._table_captures(fr, spec, d, values)  # key caches, then the tables read in
        fr.finish()
        return fr.state["preloaded"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows per table")
    p.add_argument("--tables", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    from harness.measure import hostlock
    build = pinned_build()
    sc = {"tables": a.tables, "table_size": a.rows, "settings": run_settings()}
    with tempfile.TemporaryDirectory(prefix="preload-rate-", dir=ROOT) as work:
        ds = sbtest_datasets(sc, build, Path(work), ENGINES)
        seconds = {e: [] for e in ENGINES}
        with hostlock.measuring("bench preload_rate"):
            for r in range(1, a.rounds + 1):
                for e in ENGINES:
                    t = one_round(e, sc, build, ds[e], Path(work), r)
                    seconds[e].append(t["seconds"])
                    pages = "" if t["innodb_pages_read"] is None else f", {t['innodb_pages_read']:,} InnoDB pages fetched"
                    print(f"round {r} {e}: {t['seconds']:.2f} s for {a.tables} x {a.rows:,} rows "
                          f"({t['seconds'] / a.rows * 1e6:.2f} us per row of a table){pages}", flush=True)
    for e in ENGINES:
        med = statistics.median(seconds[e])
        print(f"{e}: median {med:.2f} s, {med / a.rows:.2e} s per row of a table ({a.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
