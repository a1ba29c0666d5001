"""The time estimate printed before a sweep against what the finished run took.

    .venv/bin/python bench/estimate_vs_measured.py [--configfile config/smoke.yaml]

Prints, per experiment and in total, the estimate as it was before any cell
ran (the stated default overheads: what `onstart` printed before the first
sweep), the estimate with the overheads measured by this run, and the measured
time: the sum of the Snakemake benchmark files (benchmarks/run_cell/..., run_group/...,
benchmarks/dataset/...). The REVIEWER target is |before - measured| within 25%
of measured; this script prints the figures, it asserts nothing.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness import studies  # noqa: E402,F401  (registers the studies: harness.registry)
from harness import builds  # noqa: E402


from harness.plan import estimate as E
from harness import paths


def measured(root: Path) -> dict:
    """experiment -> seconds of its run_cell and run_group benchmark files; '(datasets)' -> dataset files."""
    out: dict = {}
    for p in glob.glob(str(root / E.BENCH / "run_*" / "*" / "*" / "*.tsv")):
        s = E._bench_seconds(p)
        if s is not None:
            out[Path(p).parts[-2]] = out.get(Path(p).parts[-2], 0.0) + s
    ds = [s for p in glob.glob(str(root / E.BENCH / "dataset" / "**" / "*.tsv"), recursive=True)
          if (s := E._bench_seconds(p)) is not None]
    out["(datasets)"] = sum(ds)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configfile", nargs="*", default=[])
    ap.add_argument("--root", default=str(ROOT))
    a = ap.parse_args()
    root = Path(a.root)
    cfg = E.load_profile(a.configfile, root)
    lock = builds.load_lock(paths.LOCK)
    with tempfile.TemporaryDirectory() as empty:   # no benchmark files: the defaults
        before = E.estimate(cfg, lock, bench_dir=os.path.join(empty, "b"), root=str(root))
    after = E.estimate(cfg, lock, root=str(root))
    got = measured(root)
    if not any(got.values()):
        print(f"no benchmark files under {root / E.BENCH}: run the profile first "
              f"(./artifact paper --configfile ...)", file=sys.stderr)
        return 1
    print(f"profile {cfg['profile']}: per-cell overhead default {E.DEFAULT_CELL_OVERHEAD_S:.1f} s, "
          f"measured {after['overheads']['cell_overhead_s']:.1f} s ({after['overheads']['cell_overhead_src']})")
    print(f"{'experiment':<22}{'before':>10}{'after':>10}{'measured':>10}{'before/measured':>17}")
    b_rows = {r["experiment"]: r for r in before["rows"]}
    a_rows = {r["experiment"]: r for r in after["rows"]}
    for exp in b_rows:
        m = got.get(exp)
        ratio = f"{b_rows[exp]['total_s'] / m:.2f}" if m else "--"
        print(f"{exp:<22}{E.hms(b_rows[exp]['total_s']):>10}{E.hms(a_rows[exp]['total_s']):>10}"
              f"{E.hms(m) if m else 'not run':>10}{ratio:>17}")
    m = got["(datasets)"]
    print(f"{'(datasets)':<22}{E.hms(before['dataset_s']):>10}{E.hms(after['dataset_s']):>10}{E.hms(m):>10}"
          f"{(before['dataset_s'] / m if m else 0):>17.2f}")
    total_m = sum(got.values())
    print(f"{'total':<22}{E.hms(before['total_s']):>10}{E.hms(after['total_s']):>10}{E.hms(total_m):>10}"
          f"{before['total_s'] / total_m:>17.2f}")
    off = abs(before["total_s"] - total_m) / total_m
    print(f"estimate before the sweep is {100 * off:.0f}% {'within' if off <= 0.25 else 'outside'} "
          f"the 25% target of the measured time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
