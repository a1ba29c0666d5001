"""Benchmark (prints figures, asserts nothing): how often does a ratio claim get the right verdict?

Simulates blocks of two settings A and B measured back to back (in a random order
within each block) and runs the project's own decision functions on them: the
exact paired signed-rank interval with sequential stopping
(harness.analysis.intervals.sequential_decide) for each setting name:min:max:looks, and,
for reference, the old product of two median intervals (harness.analysis.verdict
ratio_interval + decide) on a fixed number of repetitions per side.

The claim is "A/B above 1"; at a true ratio of 1.00 a REPRODUCED verdict is a
false one. Each measurement is exp(drift_t + noise): noise normal in logs with
sd sqrt(log(1 + cov^2)) (log-normal of that CoV), drift_t an AR(1) along the run
order (stationary sd = drift, lag-one correlation 0.8), so pairing removes most
but not all of the drift. Every method sees the same simulated trials.

Writes one row per method, level, cov, drift and true ratio to --out
(default bench/results/verdict_power.csv), and the A/A control (A against
itself, level 0.99: how often the interval excludes 1 at some look) to the same
name with _aa before .csv.

usage: python bench/verdict_power.py [--trials 2000] [--seed 1] [--out FILE]
       [--settings paper:6:24:2 default:6:12:2] [--levels 0.90,0.95] [--jobs 2]
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import random
import sys
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness.analysis import intervals, verdict  # noqa: E402
from harness.analysis.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED  # noqa: E402

COVS = (0.03, 0.05, 0.08)
DRIFTS = (0.0, 0.05)
RATIOS = (1.00, 1.05, 1.10, 1.20, 1.50)
PHI = 0.8            # lag-one correlation of the drift along the run order
AA_LEVEL = 0.99
PEAK = 4             # the peak arms: 4 cells (users x cores) of equal truth a side
OLD = "old-median-product"
OLD_N = 6            # the old method also runs on each setting's max_blocks repetitions
RULE = intervals.Rule("above", 1.0)
COLUMNS = ["method", "level", "cov", "drift", "true_ratio", "min_blocks", "max_blocks",
           "p_reproduced", "p_not_reproduced", "p_inconclusive", "mean_blocks"]
AA_COLUMNS = ["method", "level", "cov", "drift", "min_blocks", "max_blocks", "looks",
              "flag_rate", "mean_blocks"]


def parse_setting(text: str) -> tuple[str, int, int, int]:
    try:
        name, lo, hi, looks = text.split(":")
        out = (name, int(lo), int(hi), int(looks))
        intervals.look_schedule(*out[1:])
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"setting {text!r}: want name:min:max:looks ({e})") from None
    return out


def method_name(setting) -> str:
    """signed-rank:<name>:min:max:looks; a peak arm's (<name> '<arm>|<profile>'):
    signed-rank-<arm>:<profile>:min:max:looks."""
    if "|" in setting[0]:
        arm, name = setting[0].split("|", 1)
        return f"signed-rank-{arm}:{name}:{setting[1]}:{setting[2]}:{setting[3]}"
    return "signed-rank:{}:{}:{}:{}".format(*setting)


def blocks(rng: random.Random, n: int, cov: float, drift: float, ratio: float):
    """n blocks (a_i, b_i); A's true level is `ratio` times B's."""
    sig = math.sqrt(math.log1p(cov * cov))
    step = drift * math.sqrt(1 - PHI * PHI)
    x = rng.gauss(0.0, drift) if drift else 0.0
    a, b = [], []
    for _ in range(n):
        first = math.exp(x + sig * rng.gauss(0.0, 1.0))
        x = PHI * x + step * rng.gauss(0.0, 1.0)
        second = math.exp(x + sig * rng.gauss(0.0, 1.0))
        x = PHI * x + step * rng.gauss(0.0, 1.0)
        if rng.random() < 0.5:
            first, second = second, first
        a.append(1000.0 * ratio * first)
        b.append(1000.0 * second)
    return a, b


def run_cell(job):
    """All methods on the trials of one (cov, drift, ratio): counts per method and level."""
    cov, drift, ratio, trials, seed, settings, levels, old_ns = job
    rng = random.Random(f"{seed}:{cov}:{drift}:{ratio}")  # the same trials for every method
    peak_rng = random.Random(f"{seed}:{cov}:{drift}:{ratio}:peak")
    n_max = max([s[2] for s in settings] + list(old_ns))
    schedules = {s: intervals.look_schedule(*s[1:]) for s in settings}
    counts = {}   # (method key, level) -> [reproduced, not reproduced, inconclusive, blocks]
    aa = {}       # method key -> [flagged, blocks]
    for _ in range(trials):
        a, b = blocks(rng, n_max, cov, drift, ratio)
        for level in levels + ((AA_LEVEL,) if ratio == 1.0 else ()):
            for s in settings:
                r = intervals.sequential_decide(a, b, RULE, level, schedules[s])
                tally(counts, aa, s, level, r.verdict, r.blocks)
            for n in old_ns:
                v, _ = verdict.decide(verdict.ratio_interval(a[:n], b[:n], level), 1.0, "above")
                tally(counts, aa, (OLD, n, n, 1), level, v, n)
        # peak comparisons, PEAK cells of equal truth a side (users x cores): the old way, A's
        # highest-median cell chosen over all n_max blocks against B's one cell, judged on the
        # same blocks; the extra cells from a generator of their own, so the other methods'
        # trials stay as they were
        extra = [blocks(peak_rng, n_max, cov, drift, ratio) for _ in range(PEAK - 1)]
        cands = [a] + [x for x, _ in extra]
        top = max(cands, key=lambda c: sorted(c)[len(c) // 2])
        # what the claims do (harness.analysis.claimrules.peak_result): PEAK cells a side, in
        # each block each side's highest value, paired by block
        pa = [max(v) for v in zip(*cands)]
        pb = [max(v) for v in zip(b, *(y for _, y in extra))]
        for level in levels:
            for s in settings:
                r = intervals.sequential_decide(top, b, RULE, level, schedules[s])
                tally(counts, aa, (f"peak{PEAK}|{s[0]}", *s[1:]), level, r.verdict, r.blocks)
                r = intervals.sequential_decide(pa, pb, RULE, level, schedules[s])
                tally(counts, aa, (f"blockpeak{PEAK}|{s[0]}", *s[1:]), level, r.verdict, r.blocks)
    return (cov, drift, ratio), counts, aa


def tally(counts, aa, key, level, v, used):
    if level == AA_LEVEL:   # A/A: any decided verdict on "above 1" means the interval excluded 1
        c = aa.setdefault(key, [0, 0])
        c[0] += v != INCONCLUSIVE
        c[1] += used
        return
    c = counts.setdefault((key, level), [0, 0, 0, 0])
    c[(REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE).index(v)] += 1
    c[3] += used


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000, help="trials per row (default 2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/verdict_power.csv")
    ap.add_argument("--settings", nargs="+", type=parse_setting,
                    default=[parse_setting("paper:6:24:2"), parse_setting("default:6:12:2")],
                    help="name:min_blocks:max_blocks:looks (default paper:6:24:2 default:6:12:2)")
    ap.add_argument("--levels", default="0.90,0.95", help="comma-separated levels (default 0.90,0.95)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = ap.parse_args()
    levels = tuple(float(x) for x in a.levels.split(","))
    old_ns = tuple(sorted({OLD_N} | {s[2] for s in a.settings}))
    jobs = [(cov, drift, ratio, a.trials, a.seed, a.settings, levels, old_ns)
            for cov in COVS for drift in DRIFTS for ratio in RATIOS]
    t0 = time.monotonic()
    with Pool(a.jobs) as pool:
        results = pool.map(run_cell, jobs, chunksize=1)

    rows, aa_rows = [], []
    for (cov, drift, ratio), counts, aa in results:
        for (key, level), (rep, nrep, inc, used) in counts.items():
            name = OLD if key[0] == OLD else method_name(key)
            rows.append({"method": name, "level": level, "cov": cov, "drift": drift, "true_ratio": ratio,
                         "min_blocks": key[1], "max_blocks": key[2], "p_reproduced": rep / a.trials,
                         "p_not_reproduced": nrep / a.trials, "p_inconclusive": inc / a.trials,
                         "mean_blocks": used / a.trials})
        for key, (flag, used) in aa.items():
            aa_rows.append({"method": (OLD if key[0] == OLD else method_name(key)) + "-aa",
                            "level": AA_LEVEL, "cov": cov, "drift": drift, "min_blocks": key[1],
                            "max_blocks": key[2], "looks": key[3], "flag_rate": flag / a.trials,
                            "mean_blocks": used / a.trials})
    rows.sort(key=lambda r: (r["method"], r["level"], r["min_blocks"], r["max_blocks"], r["cov"],
                             r["drift"], r["true_ratio"]))
    aa_rows.sort(key=lambda r: (r["method"], r["max_blocks"], r["cov"], r["drift"]))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    aa_out = a.out.with_name(a.out.stem + "_aa" + a.out.suffix)
    for path, cols, data in ((a.out, COLUMNS, rows), (aa_out, AA_COLUMNS, aa_rows)):
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            for r in data:
                w.writerow({k: (v if not isinstance(v, float) else
                                f"{v:g}" if k == "level" else
                                f"{v:.2f}" if k in ("cov", "drift", "true_ratio") else f"{v:.4f}")
                            for k, v in r.items()})
    summary(rows, aa_rows, a, levels, time.monotonic() - t0, aa_out)
    return 0


def summary(rows, aa_rows, a, levels, seconds, aa_out) -> None:
    for level in levels:
        for cov, drift in ((0.05, 0.05),):
            print(f"\nlevel {level:.2f}, cov {cov}, drift {drift}: P(reproduced) [mean blocks] "
                  f"for the claim A/B > 1, {a.trials} trials")
            print(f"{'method':<34}{'min':>4}{'max':>4}" + "".join(f"{r:>14.2f}" for r in RATIOS))
            sel = [r for r in rows if r["level"] == level and r["cov"] == cov and r["drift"] == drift]
            keys = sorted({(r["method"], r["min_blocks"], r["max_blocks"]) for r in sel})
            for m, lo, hi in keys:
                cells = {r["true_ratio"]: r for r in sel if (r["method"], r["min_blocks"], r["max_blocks"])
                         == (m, lo, hi)}
                print(f"{m:<34}{lo:>4}{hi:>4}" + "".join(
                    f"{cells[x]['p_reproduced']:>7.3f} [{cells[x]['mean_blocks']:>4.1f}]" for x in RATIOS))
    for level in levels + (AA_LEVEL,):
        for name, lo, hi, looks in a.settings:
            need = intervals.min_blocks(level, looks)
            if lo < need:
                print(f"note: {name} at level {level}: a look needs >= {need} blocks "
                      f"({looks} looks at {intervals.per_look_level(level, looks):.4f} each); "
                      f"the looks before that cannot decide")
    print(f"\nA/A at level {AA_LEVEL}: rate the interval excludes 1 (max over cov, drift)")
    for m in sorted({r["method"] for r in aa_rows}):
        sel = [r for r in aa_rows if r["method"] == m]
        for hi in sorted({r["max_blocks"] for r in sel}):
            worst = max(r["flag_rate"] for r in sel if r["max_blocks"] == hi)
            print(f"  {m:<38} max {hi:>3}: {worst:.4f}")
    print(f"\nwrote {a.out} and {aa_out} in {seconds:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
