"""Benchmark (prints figures, asserts nothing): how often does a claim get the right verdict?

Simulates blocks as the profiles run them and judges them with the pipeline's own
decision code (harness.analysis.blockverdict.judge, the function every ratio claim
ends in; the peak and scaling arms build their blocks with
harness.analysis.claimmath.scaling_blocks / the per-load tuples peak_result makes).
A block holds every cell of an experiment once, in a random order; its size is the
profile's largest experiment block, read through the harness's planning code
(harness.plan.estimate.load_profile + harness.plan.cells.cell_names) for a flat host
of HOST_CPUS[profile] CPUs. The compared cells sit at random positions in each block.

Each measurement is truth * exp(drift_t + noise): noise normal in logs with sd
sqrt(log(1 + cov^2)) (log-normal of that CoV), drift_t an AR(1) along the run order
of every cell of every block (stationary sd = drift, lag-one correlation 0.8 from one
cell to the next), so cells of one block share the host's drift as far as their
positions are close. Arms (column `arm`), each claim "A/B above 1" (at a true ratio of
1.00 a REPRODUCED verdict is a false one):

  plain             one cell a side;
  peak-<A>-<B>      LOADS cells (loads) a side, shapes sharp (one peak, the others at
                    DROP of it), flat2 / flat3 (2 / 3 loads at the peak): equal true
                    peaks times the true ratio;
  scaling           (A_hi/A_lo)/(B_hi/B_lo), USERS cells a group, A_hi and B_lo flat,
                    A_lo and B_hi sharp (what a choice of the best cell is fooled by).

Lanes (columns `lanes`, `pairing`, `lane_offset`; --designs lanes:pairing[:offset], default 1:block
auto:block auto:duet, auto = the lanes `placement.lanes: auto` cuts for the profile on
its flat host, harness.plan.schedule): each lane has its own log offset (sd LANE_SD,
constant) and its own drift, an AR(1) as above whose share rho = LANE_RHO is common to
every lane (lanes' drifts correlated rho; on one lane the drift is the host's). block:
block b runs on lane b mod lanes, the blocks of a round side by side at once, its cells
back to back; the compared cells of a block share its lane, so its offset cancels, and
its drift as far as they run close. duet (Bulej et al., ICPE 2020): the compared pairs
of a block (side A's cell k with side B's cell k) run at once, A on one twin lane and B
on the other, at a random slot of the block's size/2, the twins swapped every other
block: the drift's common share cancels within a pair, the twins' offsets only across
swapped blocks.

Methods (column `method`, <p> = profile:min:max:looks): signed-rank:<p> is the
pipeline's rule (plain: the paired interval; peak and scaling: the max-min bound);
for comparison the rules it replaced, old-per-block-max:<p> (each side's highest value
per block) and old-best-median:<p> (each side's/group's cell of the highest median over
all blocks, judged on them), the candidate split-first-look:<p> (that cell chosen on the
first look's blocks, judged once on the others), and old-median-product (two median
intervals multiplied, plain arm only: bench/pergroup.py). The peak and scaling arms run at cov and drift
SHAPE_AT only, with --shape-trials trials; the rules replaced run on the one-lane block design only.

Writes one row per arm, method, lanes, pairing, lane offset, level, cov, drift and true ratio to --out (default
bench/results/verdict_power.csv), and the A/A control of the plain arm (A against itself,
level 0.99: how often the interval excludes 1 at some look) to the same name with _aa
before .csv.

usage: python bench/verdict_power.py [--trials 2000] [--shape-trials 200] [--seed 1]
       [--out FILE] [--settings paper:6:24:2 default:6:12:2[:block]] [--levels 0.90,0.95]
       [--jobs 2] [--designs 1:block auto:block auto:duet]
"""
from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import sys
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

import harness.studies  # noqa: E402,F401  (fills the registry the planning code asks)
from harness.analysis import blockverdict as BV  # noqa: E402
from harness.analysis import claimmath, intervals  # noqa: E402
# the model (blocks, drift, lanes, duet) is harness.analysis.power's, the one the plan's odds use
from harness.analysis import power  # noqa: E402
from harness.analysis.power import DROP, LANE_RHO, LANE_SD, ONE, PHI, Design, draw  # noqa: E402,F401
from harness.analysis.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Rule  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))   # as a script and when a test loads this file by its path
from pergroup import decide, ratio_interval  # noqa: E402  (the old-median-product arm's rule)

COVS = (0.03, 0.05, 0.08)
DRIFTS = (0.0, 0.05)
RATIOS = (1.00, 1.05, 1.10, 1.20, 1.50)
SHAPE_AT = (0.05, 0.05)   # (cov, drift) of the peak and scaling arms
DESIGNS = ("1:block", "auto:block", "auto:duet")   # lanes:pairing of every setting (auto: its plan's)
AA_LEVEL = 0.99
LOADS = 4                 # a peak arm's loads a side (oltp_ro's users in the paper profile)
USERS = 3                 # a scaling group's users (the paper profile's default users)
SHAPES = {"sharp": (1.0,) + (DROP,) * (LOADS - 1), "flat2": (1.0, 1.0) + (DROP,) * (LOADS - 2),
          "flat3": (1.0, 1.0, 1.0) + (DROP,) * (LOADS - 3)}
PEAK_ARMS = (("flat2", "sharp"), ("flat3", "sharp"), ("sharp", "sharp"))
HOST_CPUS = {"paper": 64}  # the flat host a profile's blocks are planned for (paper: the study's 64 threads)
DEFAULT_CPUS = 8           # every other profile: a laptop
OLD = "old-median-product"
OLD_N = 6
RULE = Rule("above", 1.0)
COLUMNS = ["arm", "method", "lanes", "pairing", "lane_offset", "level", "cov", "drift", "true_ratio", "min_blocks", "max_blocks",
           "block_size", "p_reproduced", "p_not_reproduced", "p_inconclusive", "mean_blocks"]
AA_COLUMNS = ["arm", "method", "lanes", "pairing", "lane_offset", "level", "cov", "drift", "min_blocks", "max_blocks", "looks",
              "block_size", "flag_rate", "mean_blocks"]


def _profile(profile: str, cpus: int | None):
    from harness.builds.lock import load_lock
    from harness.plan import estimate
    files = {name: extra for name, _, extra in estimate.profile_files(ROOT)}
    if profile not in files:
        raise ValueError(f"no profile {profile!r} in config/ (one of {', '.join(sorted(files))})")
    cpus = cpus or HOST_CPUS.get(profile, DEFAULT_CPUS)
    return (estimate.load_profile(files[profile], ROOT, cpus=list(range(cpus))),
            load_lock(ROOT / "config" / "builds.lock.yaml"), cpus)


def auto_lanes(profile: str, cpus: int | None = None) -> int:
    """The lanes `placement.lanes: auto` gives the profile on that flat host (harness.plan.schedule)."""
    from harness.plan import config, estimate
    cfg, lock, cpus = _profile(profile, cpus)
    return estimate.estimate(cfg, lock, topo=config.topology(list(range(cpus))))["lanes"]["count"]


def block_size(profile: str, cpus: int | None = None) -> int:
    """The largest block (cells of one repetition) of a profile's throughput experiments, as
    its planning code lays them out on a flat host of `cpus` CPUs."""
    from harness.plan import cells, config
    cfg, lock, _ = _profile(profile, cpus)
    return max(len(cells.cell_names(cfg, lock, e, rep=1)) for e, spec in config.enabled_experiments(cfg).items()
               if spec.get("kind", "throughput") == "throughput")


def parse_setting(text: str) -> tuple:
    """name:min:max:looks[:block]; without a block size, the profile `name`'s (block_size)."""
    try:
        name, *nums = text.split(":")
        if len(nums) not in (3, 4):
            raise ValueError("want 3 or 4 numbers")
        lo, hi, looks = map(int, nums[:3])
        intervals.look_schedule(lo, hi, looks)
        size = int(nums[3]) if len(nums) == 4 else block_size(name)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"setting {text!r}: want name:min:max:looks[:block] ({e})") from None
    return name, lo, hi, looks, size


def method_name(prefix: str, s) -> str:
    return f"{prefix}:{s[0]}:{s[1]}:{s[2]}:{s[3]}"


def judge(a, b, level, s, peaks=False) -> tuple[str, int]:
    """(verdict, blocks used) by the pipeline's judge on the setting's schedule."""
    j = BV.judge(a, b, RULE, level, s[1:4], True, peaks=peaks)
    return j.verdict, j.n[0]


def column(rows, k) -> list[float]:
    return [r[k] for r in rows]


def best_load(rows) -> int:
    """The load of the highest median over `rows` (ties: the first)."""
    meds = [statistics.median(column(rows, k)) for k in range(len(rows[0]))]
    return meds.index(max(meds))


def plain_trial(rng, ratio, cov, drift, runs, levels, old_ns, tally):
    n_max = max([s[2] for s, _ in runs] + list(old_ns))
    for s, d in runs:
        rows = draw(rng, s[2], s[4], (ratio, 1.0), cov, drift, d)
        a, b = column(rows, 0), column(rows, 1)
        for level in levels + ((AA_LEVEL,) if ratio == 1.0 else ()):
            tally("plain", method_name("signed-rank", s), s, d, level, *judge(a, b, level, s))
    rows = draw(rng, n_max, 2, (ratio, 1.0), cov, drift)   # the old rule: back to back, as it ran
    for n in old_ns:
        for level in levels:
            v, _ = decide(ratio_interval(column(rows, 0)[:n], column(rows, 1)[:n], level), 1.0, "above")
            tally("plain", OLD, (f"{n}", n, n, 1, 2), ONE, level, v, n)


def split_judge(a_rows, b_rows, level, s, pick_a, pick_b):
    """The candidate: each side's load chosen on the first look's blocks, judged once on the rest."""
    lo, hi = s[1], s[2]
    ka, kb = pick_a(a_rows[:lo]), pick_b(b_rows[:lo])
    rest = (column(a_rows[lo:hi], ka), column(b_rows[lo:hi], kb))
    j = BV.judge(*rest, RULE, level, (hi - lo, hi - lo, 1), True)
    return j.verdict, hi


def one_lane(d: Design) -> bool:
    """The rules replaced are compared on the one-lane block design only."""
    return d.lanes == 1 and d.pairing == "block"


def peak_trial(rng, arm, ratio, cov, drift, runs, levels, tally):
    shape_a, shape_b = SHAPES[arm[0]], SHAPES[arm[1]]
    name = f"peak-{arm[0]}-{arm[1]}"
    for s, d in runs:
        rows = draw(rng, s[2], s[4], tuple(ratio * x for x in shape_a) + shape_b, cov, drift, d)
        a, b = [r[:LOADS] for r in rows], [r[LOADS:] for r in rows]
        for level in levels:
            tally(name, method_name("signed-rank", s), s, d, level, *judge(a, b, level, s, peaks=True))
            if not one_lane(d):
                continue
            tally(name, method_name("old-per-block-max", s), s, d, level,
                  *judge([max(r) for r in a], [max(r) for r in b], level, s))
            ka, kb = best_load(a), best_load(b)
            tally(name, method_name("old-best-median", s), s, d, level,
                  *judge(column(a, ka), column(b, kb), level, s))
            tally(name, method_name("split-first-look", s), s, d, level,
                  *split_judge(a, b, level, s, best_load, best_load))


def scaling_trial(rng, ratio, cov, drift, runs, levels, tally):
    """Cells A_hi, A_lo, B_hi, B_lo (USERS each): duet pairs A_hi with B_hi and A_lo with B_lo."""
    truths = power.scaling_truths(ratio, USERS)
    for s, d in runs:
        rows = draw(rng, s[2], s[4], truths, cov, drift, d)
        groups = [[{i: r[g * USERS + u] for i, r in enumerate(rows)} for u in range(USERS)] for g in range(4)]
        _, num, den = claimmath.scaling_blocks(*groups)
        for level in levels:
            tally("scaling", method_name("signed-rank", s), s, d, level, *judge(num, den, level, s, peaks=True))
            if not one_lane(d):
                continue
            four = [g[best_load([tuple(x[i] for x in g) for i in range(len(rows))])] for g in groups]
            j = BV.judge_scaling(*four, RULE, level, s[1:4], True)
            tally("scaling", method_name("old-best-median", s), s, d, level, j.verdict, j.n[0])
            tally("scaling", method_name("split-first-look", s), s, d, level, *scaling_split(groups, level, s))


def scaling_split(groups, level, s):
    lo, hi = s[1], s[2]
    four = []
    for g in groups:
        k = best_load([tuple(d[i] for d in g) for i in range(lo)])
        four.append({i: g[k][i] for i in range(lo, hi)})
    j = BV.judge_scaling(*four, RULE, level, (hi - lo, hi - lo, 1), True)
    return j.verdict, hi


def run_cell(job):
    """One (arm, cov, drift, ratio): counts per (arm, method, setting, design, level)."""
    arm, cov, drift, ratio, trials, seed, runs, levels, old_ns = job
    rng = random.Random(f"{seed}:{arm}:{cov}:{drift}:{ratio}")
    counts, aa = {}, {}

    def tally(arm_name, method, s, d, level, v, used):
        key = (arm_name, method, s[1], s[2], s[3], s[4], d.lanes, d.pairing, d.offset)
        if level == AA_LEVEL:   # A/A: any decided verdict on "above 1" means the interval excluded 1
            c = aa.setdefault(key, [0, 0])
            c[0] += v != INCONCLUSIVE
            c[1] += used
            return
        c = counts.setdefault((key, level), [0, 0, 0, 0])
        c[(REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE).index(v)] += 1
        c[3] += used

    for _ in range(trials):
        if arm == "plain":
            plain_trial(rng, ratio, cov, drift, runs, levels, old_ns, tally)
        elif arm == "scaling":
            scaling_trial(rng, ratio, cov, drift, runs, levels, tally)
        else:
            peak_trial(rng, arm, ratio, cov, drift, runs, levels, tally)
    return (cov, drift, ratio, trials), counts, aa


def jobs_of(a, levels, old_ns) -> list[tuple]:
    rest = (a.seed, a.runs, levels, old_ns)
    jobs = [("plain", cov, drift, r, a.trials, *rest) for cov in COVS for drift in DRIFTS for r in RATIOS]
    if a.shape_trials:
        jobs += [(arm, *SHAPE_AT, r, a.shape_trials, *rest) for arm in (*PEAK_ARMS, "scaling") for r in RATIOS]
    return jobs


def rows_of(results) -> tuple[list[dict], list[dict]]:
    rows, aa_rows = [], []
    for (cov, drift, ratio, trials), counts, aa in results:
        for ((arm, m, lo, hi, _, size, lanes, pairing, off), level), (rep, nrep, inc, used) in counts.items():
            rows.append({"arm": arm, "method": m, "lanes": lanes, "pairing": pairing, "lane_offset": off,
                         "level": level, "cov": cov,
                         "drift": drift, "true_ratio": ratio, "min_blocks": lo, "max_blocks": hi,
                         "block_size": size, "p_reproduced": rep / trials,
                         "p_not_reproduced": nrep / trials, "p_inconclusive": inc / trials,
                         "mean_blocks": used / trials})
        for (arm, m, lo, hi, looks, size, lanes, pairing, off), (flag, used) in aa.items():
            aa_rows.append({"arm": arm, "method": m + "-aa", "lanes": lanes, "pairing": pairing, "lane_offset": off,
                            "level": AA_LEVEL, "cov": cov, "drift": drift, "min_blocks": lo, "max_blocks": hi,
                            "looks": looks, "block_size": size, "flag_rate": flag / trials,
                            "mean_blocks": used / trials})
    rows.sort(key=lambda r: (r["arm"], r["method"], r["lanes"], r["pairing"], r["lane_offset"], r["level"], r["min_blocks"],
                             r["max_blocks"], r["cov"], r["drift"], r["true_ratio"]))
    aa_rows.sort(key=lambda r: (r["method"], r["lanes"], r["pairing"], r["lane_offset"], r["max_blocks"], r["cov"], r["drift"]))
    return rows, aa_rows


def parse_design(text: str, setting: tuple) -> Design:
    """lanes:pairing[:offset], lanes a number or auto (the lanes the setting's profile gets
    from its plan), offset a lane's own sd (default LANE_SD)."""
    try:
        lanes, pairing, *off = text.split(":")
        n = auto_lanes(setting[0]) if lanes == "auto" else int(lanes)
        offset = float(off[0]) if off else LANE_SD
        if pairing not in ("block", "duet") or n < 1 or (pairing == "duet" and n < 2) or len(off) > 1:
            raise ValueError("want lanes >= 1 (duet: >= 2), pairing block or duet, at most one offset")
    except ValueError as e:
        raise SystemExit(f"--designs {text!r}: want lanes:pairing[:offset], e.g. 1:block or auto:duet ({e})") \
            from None
    return Design(n, pairing, offset)


def write(path: Path, cols, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in data:
            w.writerow({k: (v if not isinstance(v, float) else
                            f"{v:g}" if k == "level" else
                            f"{v:.2f}" if k in ("cov", "drift", "true_ratio", "lane_offset") else f"{v:.4f}")
                        for k, v in r.items()})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000, help="trials per row of the plain arm (default 2000)")
    ap.add_argument("--shape-trials", type=int, default=200,
                    help="trials per row of the peak and scaling arms (default 200; 0: none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/verdict_power.csv")
    ap.add_argument("--settings", nargs="+", type=parse_setting, default=None,
                    help="name:min_blocks:max_blocks:looks[:block_size] (default paper:6:24:2 default:6:12:2, "
                         "block sizes from the profiles)")
    ap.add_argument("--levels", default="0.90,0.95", help="comma-separated levels (default 0.90,0.95)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--designs", nargs="+", default=list(DESIGNS),
                    help="lanes:pairing of every setting (default 1:block auto:block auto:duet; auto: the "
                         "lanes the profile's plan cuts on its host)")
    a = ap.parse_args()
    a.settings = a.settings or [parse_setting("paper:6:24:2"), parse_setting("default:6:12:2")]
    a.runs = [(s, parse_design(d, s)) for s in a.settings for d in a.designs]
    levels = tuple(float(x) for x in a.levels.split(","))
    old_ns = tuple(sorted({OLD_N} | {s[2] for s in a.settings}))
    t0 = time.monotonic()
    with Pool(a.jobs) as pool:
        results = pool.map(run_cell, jobs_of(a, levels, old_ns), chunksize=1)
    rows, aa_rows = rows_of(results)
    aa_out = a.out.with_name(a.out.stem + "_aa" + a.out.suffix)
    write(a.out, COLUMNS, rows)
    write(aa_out, AA_COLUMNS, aa_rows)
    summary(rows, aa_rows, a, levels, time.monotonic() - t0, aa_out)
    return 0


def summary(rows, aa_rows, a, levels, seconds, aa_out) -> None:
    cov, drift = SHAPE_AT
    for level in levels:
        print(f"\nlevel {level:.2f}, cov {cov}, drift {drift}: P(reproduced) [mean blocks] for the claim "
              f"A/B > 1 ({a.trials} trials plain, {a.shape_trials} peak and scaling)")
        print(f"{'arm':<20}{'method':<36}{'lanes':>6}{'pairing':>8}{'offset':>7}{'max':>4}{'block':>6}"
              + "".join(f"{r:>14.2f}" for r in RATIOS))
        sel = [r for r in rows if r["level"] == level and r["cov"] == cov and r["drift"] == drift]
        fields = ("arm", "method", "lanes", "pairing", "lane_offset", "max_blocks", "block_size")
        for key in sorted({tuple(r[k] for k in fields) for r in sel}):
            cells = {r["true_ratio"]: r for r in sel if tuple(r[k] for k in fields) == key}
            print(f"{key[0]:<20}{key[1]:<36}{key[2]:>6}{key[3]:>8}{key[4]:>7.2f}{key[5]:>4}{key[6]:>6}" + "".join(
                f"{cells[x]['p_reproduced']:>7.3f} [{cells[x]['mean_blocks']:>4.1f}]" if x in cells else f"{'--':>14}"
                for x in RATIOS))
    for level in levels + (AA_LEVEL,):
        for name, lo, hi, looks, _ in a.settings:
            need = intervals.min_blocks(level, looks)
            if lo < need:
                print(f"note: {name} at level {level}: a look needs >= {need} blocks "
                      f"({looks} looks at {intervals.per_look_level(level, looks):.4f} each); "
                      f"the looks before that cannot decide")
    print(f"\nA/A at level {AA_LEVEL}: rate the interval excludes 1 (max over cov, drift)")
    for m in sorted({(r["method"], r["lanes"], r["pairing"], r["lane_offset"]) for r in aa_rows}):
        sel = [r for r in aa_rows if (r["method"], r["lanes"], r["pairing"], r["lane_offset"]) == m]
        print(f"  {m[0]:<38} {m[1]:>3} lanes {m[2]:<6} offset {m[3]:.2f}: {max(r['flag_rate'] for r in sel):.4f}")
    print(f"\nwrote {a.out} and {aa_out} in {seconds:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
