"""What a steps cell (study C's test drive, `c_test_drive`) costs per row, measured.
Prints figures; asserts nothing.

Runs the paper profile's own test_drive cell (harness.plan.cells.cell_spec: the
same script, engines, my.cnf variants, autocommit, stored procedure, PostgreSQL
stand-in and backend) through harness.measure.cell.run_cell, as the pipeline's
run_cell rule does, with only `rows` changed, at a few row counts per build;
then fits seconds = fixed + rows x per-row by least squares, per build (a cell's
seconds: its manifest's timing.elapsed_s, from the host's measurement lock taken
to the manifest written, so a wait for another measurement is not counted),
and prints each C1 insert's rows/s per engine from the cells' results.
The cells go to a scratch directory and are removed after (their figures are
printed, and with --tsv written as one row per cell).

    python bench/steps_rate.py [--rows 5000 20000 80000] [--builds mysql-5.6.24 mariadb-10.11]
                               [--experiment test_drive] [--tsv steps.tsv]

The fit is what harness.plan.estimate uses for a steps cell when this host has no
measured cell of its own (study C's STEPS_FIT, in its package, cites the run in docs/benchmarks-record.md).
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, pinned_build  # noqa: F401  (puts workflow/ on sys.path)

from harness import builds  # noqa: E402
from harness.measure import cell  # noqa: E402
from harness.plan import blocks  # noqa: E402
from harness.plan import cells as plan  # noqa: E402
from harness.plan import estimate  # noqa: E402
from harness import paths


def legacy_ready(spec: dict) -> None:
    """The PostgreSQL stand-in's build in resources/builds/, as the pipeline's fetch_build makes it."""
    name = spec.get("legacy_build")
    if spec.get("legacy") and name and not (ROOT / "resources/builds" / name).exists():
        builds.fetch(name, builds.load_lock(paths.LOCK)[name], ROOT / "resources/builds" / name)


def run_one(cfg: dict, lock: dict, exp: str, build: str, rows: int, scratch: Path) -> dict:
    """One real cell of `exp` on `build` with `rows` rows: its wall seconds and C1 inserts."""
    req = json.loads(plan.cell_spec(cfg, exp))
    req["spec"]["rows"] = rows
    legacy_ready(req["spec"])
    names = [n for n in plan.cell_names(cfg, lock, exp, blocks=1) if n.startswith(build + "_")]
    name = names[0]
    all_names = plan.cell_names(cfg, lock, exp, blocks=1)
    entry, build_dir, template = pinned_build(build)
    out = scratch / f"rows{rows}" / name
    t0 = time.monotonic()
    m = cell.run_cell(experiment=exp, spec=req["spec"], cell=name, entry=entry, build_dir=build_dir,
                      source=template, settings=req["settings"], out=out,
                      block=blocks.info(all_names, name, 1, 1))
    wall = time.monotonic() - t0
    inserts = c1_inserts(out, rows)
    shutil.rmtree(out, ignore_errors=True)
    elapsed = (m.get("timing") or {}).get("elapsed_s")
    return {"build": build, "rows": rows, "wall_s": float(elapsed) if elapsed else wall, "job_s": wall,
            "backend": req["settings"]["backend"], "inserts": inserts}


def c1_inserts(out: Path, rows: int) -> dict:
    """{engine: rows/s} of C1's timed CALL per engine (and the legacy stand-in's), from the cell's rows."""
    got = {}
    for p in out.rglob("*.tsv"):
        with open(p, newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                if r.get("step") == "C1" and r.get("metric") == "insert_s" and r.get("value"):
                    got[r.get("engine")] = rows / float(r["value"])
    return got


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares seconds = a + b rows: (a, b)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


def host_line() -> str:
    load = os.getloadavg()
    return (f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, "
            f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[5000, 20000, 80000])
    ap.add_argument("--builds", nargs="+", default=["mysql-5.6.24", "mariadb-10.11"])
    ap.add_argument("--experiment", default="test_drive")
    ap.add_argument("--configfile", default="config/paper.yaml")
    ap.add_argument("--tsv", help="also write one row per cell here")
    a = ap.parse_args(argv)
    cfg = estimate.load_profile([str(ROOT / a.configfile)], ROOT)
    lock = builds.load_lock(paths.LOCK)
    print(f"start: {host_line()}")
    results = []
    with tempfile.TemporaryDirectory(prefix="steps-rate-") as tmp:
        for build in a.builds:
            for rows in a.rows:
                r = run_one(cfg, lock, a.experiment, build, rows, Path(tmp))
                results.append(r)
                ins = ", ".join(f"{e} {v:,.0f}" for e, v in sorted(r["inserts"].items()))
                print(f"{build} {rows:>8} rows: {r['wall_s']:7.1f} s ({r['backend']}; {r['job_s']:.1f} s with the lock wait); "
                      f"C1 inserts rows/s: {ins}", flush=True)
    print(f"end: {host_line()}")
    for build in a.builds:
        pts = [(r["rows"], r["wall_s"]) for r in results if r["build"] == build]
        if len(pts) >= 2:
            fixed, per = fit(pts)
            print(f"fit {build}: seconds = {fixed:.1f} + rows x {per:.3g} "
                  f"({1 / per if per > 0 else float('inf'):,.0f} rows/s of the cell's script, every engine); "
                  f"at 3,000,000 rows: {estimate.hms(fixed + 3_000_000 * per)}")
    if a.tsv:
        with open(a.tsv, "w", newline="") as f:
            w = csv.writer(f, delimiter="\t")
            w.writerow(["build", "rows", "wall_s", "job_s", "backend", "inserts"])
            for r in results:
                w.writerow([r["build"], r["rows"], f"{r['wall_s']:.2f}", f"{r['job_s']:.2f}", r["backend"],
                            json.dumps(r["inserts"])])
    return 0


if __name__ == "__main__":
    sys.exit(main())
