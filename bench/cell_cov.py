"""Benchmark (prints figures, asserts nothing): how repeatable is one cell?

Measures one Point-Selects cell N times exactly as the pipeline does
(harness.measure.cell.run_cell: a fresh server per repetition held to the same
cores, sysbench on disjoint ones, a discarded warm-up) and prints the QPS of
each repetition, the median, the order-statistic CI and the coefficient of
variation. The goal is CoV <= 3 %.

usage: python bench/cell_cov.py [--reps 5] [--duration 10] [--warmup 5] [--users 4] [--engine InnoDB]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUILD, pinned_build, run_settings  # noqa: E402

from harness.measure import cell  # noqa: E402

from harness.measure import datasets


from harness.analysis import stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--tables", type=int, default=8)
    ap.add_argument("--table-size", type=int, default=10000)
    ap.add_argument("--engine", default="InnoDB")
    a = ap.parse_args()

    entry, build_dir, template = pinned_build()
    settings = run_settings(warmup_s=a.warmup, duration_s=a.duration, client_cpus=1)
    qps, mech = [], None
    with tempfile.TemporaryDirectory(prefix="mb-cov-") as tmp:
        ds = Path(tmp) / "ds"
        datasets.prepare("sbtest", f"{a.engine}_t{a.tables}_n{a.table_size}", name=BUILD, entry=entry,
                         build_dir=build_dir, template=template, out=ds, settings=run_settings())
        for rep in range(1, a.reps + 1):
            spec = {"study": "A3", "kind": "throughput", "workload": "point_select", "dataset": "sbtest",
                    "table_size": a.table_size}
            name = f"{BUILD}_{a.engine}_base_t{a.tables}_c1_u{a.users}_r{rep}"
            m = cell.run_cell(experiment="bench", spec=spec, cell=name, entry=entry, build_dir=build_dir,
                              source=ds, settings=settings, out=Path(tmp) / name)
            qps.append(m["result"]["qps"])
            mech = m["placement"]
            print(f"rep {rep}: {qps[-1]:,.0f} QPS", flush=True)
    s = stats.summarize(qps, cv_threshold=0.03)
    print(f"{a.engine}, {a.tables} tables x {a.table_size} rows, {a.users} users, mysqld on CPU "
          f"{mech['server_cpus']} ({mech['mechanism']}), sysbench on CPU {mech['client_cpus']}, "
          f"{a.reps} x {a.duration} s after {a.warmup} s warm-up")
    print(f"median {s['qps_median']:,.0f} QPS, interval of the median [{s['qps_ci_lo']:,.0f}, "
          f"{s['qps_ci_hi']:,.0f}] ({100 * s['qps_ci_coverage']:.1f} % coverage), "
          f"CoV {100 * s['qps_cv']:.2f} %  (goal <= 3 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
