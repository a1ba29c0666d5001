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
    if r["method"] == "old-median-product":
        return f"old rule (two median intervals), {r['max_blocks']} repetitions"
    prefix, name, lo, hi, looks = r["method"].split(":")
    what = RULES.get(prefix, prefix)
    return f"{name} profile ({lo}–{hi} blocks, {looks} looks, blocks of {r['block_size']} cells): {what}"


RULES = {"signed-rank": "the pipeline's rule", "old-per-block-max": "old: each side's per-block maximum",
         "old-best-median": "old: the cell of the best median over all blocks",
         "split-first-look": "candidate: cell chosen on the first look's blocks, judged on the rest"}
ARMS = {"peak-flat2-sharp": "peak, A flat over 2 loads, B one sharp peak",
        "peak-flat3-sharp": "peak, A flat over 3 loads, B one sharp peak",
        "peak-sharp-sharp": "peak, both one sharp peak", "scaling": "scaling (ratio of gains, 3 users a group)"}


def _cells(by: dict) -> str:
    return " | ".join(f"{float(by[x]['p_reproduced']):.2f}" if x in by else "–" for x in RATIOS)


def _one_lane(r: dict) -> bool:
    return r.get("lanes", "1") == "1" and r.get("pairing", "block") == "block"


def _design(r: dict) -> str:
    n = int(r["lanes"])
    if r["pairing"] == "duet":
        return f"duet on {n} lanes ({n // 2} twin pair{'s' if n // 2 > 1 else ''})"
    return f"blocks on {n} lane{'s' if n > 1 else ''}"


def _lanes_table(rows: list[dict]) -> list[str]:
    """The plain arm by profile, lanes and pairing (the pipeline's rule), one line per CoV."""
    sel = [r for r in rows if r.get("arm", "plain") == "plain" and r["method"].startswith("signed-rank:")
           and "lanes" in r]
    if not {(r["lanes"], r["pairing"]) for r in sel} - {("1", "block")}:
        return []
    groups: dict = {}
    for r in sel:
        key = (r["method"].split(":")[1], int(r["lanes"]) > 1, r["pairing"], int(r["lanes"]),
               r.get("lane_offset") or "–", r["cov"])
        groups.setdefault(key, {})[f"{float(r['true_ratio']):.2f}"] = r
    out = ["", "Lanes and duet pairing, the pipeline's rule: every lane has its own offset (sd as given) and "
               "its own drift (sd as above, correlated 0.5 between lanes); blocks on N lanes run N at a "
               "time, one a lane; duet runs each compared pair's two sides at once on twin lanes, swapped "
               "every other block (lanes: what `placement.lanes: auto` cuts for the profile):", "",
           "| profile | design | lane offset sd | CoV | " + " | ".join(f"true {x}" for x in RATIOS) + " |",
           "|---|---|---|---|" + "---|" * len(RATIOS)]
    for key, by in sorted(groups.items()):
        first = next(iter(by.values()))
        out.append(f"| {key[0]} | {_design(first)} | {key[4]} | {key[5]} | {_cells(by)} |")
    return out


def render(csv_path: Path, level: float = 0.90, drift: float = 0.05) -> str:
    """The tables at `level` and `drift`: the plain arm, one line per rule and CoV; then
    the peak and scaling arms (CoV 0.05), one line per arm and rule."""
    at = [r for r in _rows(csv_path) if float(r["level"]) == level and float(r["drift"]) == drift]
    every = [r for r in at if _one_lane(r)]
    rows = [r for r in every if r.get("arm", "plain") == "plain"
            and (r["method"].startswith("signed-rank:") or r["max_blocks"] in ("6", "24"))]
    lines = [BEGIN, "",
             f"P(*reproduced*) for a claim \"A/B above 1\" at level {level:g}: run-to-run CoV as given, "
             f"a drift of sd {drift:g} along the run shared by the cells of a block as far as they run close "
             f"together (AR(1), lag-one correlation 0.8 from one cell to the next), the compared cells at "
             f"random positions in blocks of the profile's size; at a true ratio of 1.00 every *reproduced* "
             f"is a false verdict. From `bench/verdict_power.py` (the pipeline's own decision code on "
             f"simulated blocks), rendered by `scripts/power-table.py`.",
             "",
             "| rule | CoV | " + " | ".join(f"true {x}" for x in RATIOS) + " | mean blocks at 1.50 |",
             "|---|---|" + "---|" * len(RATIOS) + "---|"]
    groups: dict = {}
    for r in rows:
        groups.setdefault((_rule(r), r["cov"]), {})[f"{float(r['true_ratio']):.2f}"] = r
    for (rule, cov), by in groups.items():
        blocks = f"{float(by['1.50']['mean_blocks']):.1f}" if "1.50" in by else "–"
        lines.append(f"| {rule} | {cov} | {_cells(by)} | {blocks} |")
    shaped = [r for r in every if r.get("arm") in ARMS and float(r["cov"]) == 0.05]
    if shaped:
        lines += ["", "Peaks and scaling gains, CoV 0.05, four loads a side with equal true peaks (sharp: "
                      "the other loads 15% lower):", "",
                  "| arm | rule | " + " | ".join(f"true {x}" for x in RATIOS) + " |",
                  "|---|---|" + "---|" * len(RATIOS)]
        by_rule: dict = {}
        for r in shaped:
            by_rule.setdefault((r["arm"], _rule(r)), {})[f"{float(r['true_ratio']):.2f}"] = r
        for (arm, rule), by in sorted(by_rule.items(), key=lambda kv: (list(ARMS).index(kv[0][0]), kv[0][1])):
            lines.append(f"| {ARMS[arm]} | {rule} | {_cells(by)} |")
    lines += _lanes_table(at)
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
    ap.add_argument("--doc", "--readme", dest="doc", type=Path, default=ROOT / "docs" / "method.md",
                    help="the page holding the power:begin/end markers (default docs/method.md)")
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
