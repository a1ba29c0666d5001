#!/usr/bin/env python3
"""Render the power table of docs/method.md (between <!-- power:begin --> and <!-- power:end -->)
from the CSVs bench/verdict_power.py writes: how often the verdict rule says
*reproduced* for a claim "A/B above 1" at each true ratio, per profile setting, with the
old rule beside it; and the A/A flag rate at 0.99. Never typed: run the benchmark, then

    .venv/bin/python scripts/power-table.py            # rewrite the block in docs/method.md
    .venv/bin/python scripts/power-table.py --check    # exit 1 if it is out of date
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness import markers  # noqa: E402

BEGIN, END = "<!-- power:begin -->", "<!-- power:end -->"
RATIOS = ("1.00", "1.05", "1.10", "1.20", "1.50")


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _rule(r: dict) -> str:
    if r["method"].startswith("signed-rank:"):
        _, name, lo, hi, looks = r["method"].split(":")
        return f"{name} profile: paired signed-rank, {lo}–{hi} blocks, {looks} looks"
    return f"old rule (two median intervals), {r['max_blocks']} repetitions"


def render(csv_path: Path, level: float = 0.90, drift: float = 0.05) -> str:
    """The table at `level` and `drift`: one line per rule and CoV."""
    rows = [r for r in _rows(csv_path) if float(r["level"]) == level and float(r["drift"]) == drift
            and (r["method"].startswith("signed-rank:") or r["max_blocks"] in ("6", "24"))]
    lines = [BEGIN, "",
             f"P(*reproduced*) for a claim \"A/B above 1\" at level {level:g}: run-to-run CoV as given, "
             f"a drift of sd {drift:g} along the run (AR(1), lag-one correlation 0.8); at a true ratio of "
             f"1.00 every *reproduced* is a false verdict. From `bench/verdict_power.py` (the project's "
             f"own decision code on simulated blocks), rendered by `scripts/power-table.py`.",
             "",
             "| rule | CoV | " + " | ".join(f"true {x}" for x in RATIOS) + " | mean blocks at 1.50 |",
             "|---|---|" + "---|" * len(RATIOS) + "---|"]
    groups: dict = {}
    for r in rows:
        groups.setdefault((_rule(r), r["cov"]), {})[f"{float(r['true_ratio']):.2f}"] = r
    for (rule, cov), by in groups.items():
        cells = [f"{float(by[x]['p_reproduced']):.2f}" if x in by else "–" for x in RATIOS]
        blocks = f"{float(by['1.50']['mean_blocks']):.1f}" if "1.50" in by else "–"
        lines.append(f"| {rule} | {cov} | " + " | ".join(cells) + f" | {blocks} |")
    aa = csv_path.with_name(csv_path.stem + "_aa.csv")
    if aa.exists():
        flags = [float(r["flag_rate"]) for r in _rows(aa) if r["method"].startswith("signed-rank:")]
        if flags:
            lines += ["", f"A/A controls (a setting against itself, its interval at level 0.99, every "
                          f"CoV and drift above): at most {max(flags):.3f} of the simulated runs are "
                          f"flagged as not quiet."]
    return "\n".join(lines + ["", END])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", type=Path, default=ROOT / "bench/results/verdict_power.csv")
    ap.add_argument("--doc", "--readme", dest="doc", type=Path, default=ROOT / "docs" / "method.md")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    if not a.csv.exists():
        print(f"power-table: {a.csv} does not exist; run `.venv/bin/python bench/verdict_power.py` first",
              file=sys.stderr)
        return 1
    try:
        differs = markers.update(a.doc, BEGIN, END, render(a.csv), check=a.check)
    except (markers.MarkerError, OSError) as e:
        print(f"power-table: {e}", file=sys.stderr)
        return 1
    return 1 if a.check and differs else 0


if __name__ == "__main__":
    sys.exit(main())
