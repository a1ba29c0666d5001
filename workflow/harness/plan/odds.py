"""Each measurable claim's odds on a host, and the chance an experiment runs its later looks.

`./artifact plan` prints, per measurable claim, the chance it is decided at or before each
look of its experiment's `repetitions` schedule, and how it would be decided, by the model
of harness.analysis.power (the one bench/verdict_power.py runs): power.TRIALS seeded trials per
claim shape (fewer for a peak over more than 4 loads: trials_for), cached per (shape, rule, true ratio, CoV, blocks and looks, block size, loads).

- The truth is the claim's published figure (`published_ratio`). A claim with a ratio rule
  but no published figure (a direction or a bound read off a figure, a qualitative
  statement) has no truth to simulate: its power is unknown (`power` None), and since its
  interval must still clear the rule's bound, which more blocks may do, the expected time
  counts it as undecided at every look but the last (as the worst case does). So is a
  claim without a ratio rule whose verdict reads a per-block difference's interval
  (Claim.by_blocks: it asks for more blocks while undecided). Any other claim without a ratio
  rule (a pass/fail check, a wait ranking) never asks for more blocks: it is not modelled,
  and counted as decided at its first look.
- The shape: `scaling` for a scaling claim (ScalingRatio, needs: scaling: its users a
  group); `peak` for a comparison over several loads (its users, and its core counts at or
  above min_cores when a load includes cores), both sides sharp; else `plain`.
- The blocks: the experiment's `repetitions` (min, max, looks) at `claims.level`; a block
  holds the experiment's cells of blocks 1..figures (harness.plan.cells.block_counts).
- The noise (`noise`): this host's measured CoV where runs exist -- the median
  `qps_server_cv` of the A/A cells (data/tidy/aa_throughput_summary.csv), else of every
  cell measured under data/tidy -- else the profile's `stats.cv_threshold`, the CoV it
  accepts; the drift is power.DRIFT. The plan names the source.

An experiment goes on past look k when a claim row reading it is still undecided; the claim
rows are taken as independent: P(on past k) = 1 - prod over rows of P(row decided by k).
"""
from __future__ import annotations

import csv
import glob
import os
import statistics

from harness import registry
from harness.analysis import claimrules, intervals, power
from harness.plan import cells as plan

MIN_TRIALS = 50
NOT_MODELLED = "not modelled; its verdict never asks for more blocks, so it counts as decided at its first look"
BY_BLOCKS = ("a difference judged on the blocks' interval, not modelled: power unknown; more blocks may "
             "decide it, so the expected time counts it undecided until its last look")
NO_TRUTH = ("no published figure to take as the truth: power unknown; its interval must still clear "
            "the rule's bound, so the expected time counts it undecided until its last look")


def noise(cfg: dict, tidy_dir: str) -> tuple[float, str]:
    """(CoV, its source) from the summaries in `tidy_dir` (noise_of)."""
    summaries = {}
    for p in sorted(glob.glob(os.path.join(tidy_dir, "*_summary.csv"))):
        try:
            with open(p, newline="") as f:
                summaries[os.path.basename(p)[:-len("_summary.csv")]] = list(csv.DictReader(f))
        except (OSError, ValueError):
            continue
    return noise_of(cfg, summaries, tidy_dir)


def noise_of(cfg: dict, summaries: dict, where: str) -> tuple[float, str]:
    """(CoV, its source): the median CoV of the cells a study declares as the host's noise
    (its NOISE_EXPERIMENT: the A/A control's), else every measured cell's, else the
    profile's stats.cv_threshold. `summaries`: {experiment: its summary rows}, read from
    `where` (named in the source)."""
    metric = f"{claimrules.METRIC}_cv"
    aa = registry.declared_one("NOISE_EXPERIMENT")
    own = [(f"the A/A cells ({aa})", [aa])] if aa else []
    for name, exps in (*own, ("the cells measured here", sorted(summaries))):
        vals = []
        for e in exps:
            for r in summaries.get(e) or []:
                try:
                    vals.append(float((r.get(metric) or "nan").strip() or "nan"))
                except (ValueError, AttributeError):
                    continue
        vals = [v for v in vals if v == v and v > 0]
        if vals:
            return statistics.median(vals), f"this host's measured CoV: median of {len(vals)} of {name} ({where})"
    cov = float(cfg["stats"]["cv_threshold"])
    return cov, f"the profile's stats.cv_threshold ({cov:g}): no cells measured on this host yet"


def shape_of(claim, spec: dict) -> tuple[str, int] | None:
    """(shape, loads) of a claim reading `spec`'s experiment, or None when not modelled."""
    rule = getattr(claim, "rule", None)
    if rule is None or getattr(claim, "published_ratio", None) is None:
        return None
    users = len(spec.get("users") or [1])
    if getattr(claim, "needs", None) == "scaling" or type(claim).__name__ == "ScalingRatio":
        return "scaling", users
    load = getattr(claim, "load", None)
    if not load:
        return "plain", 1
    cores = [n for n in spec.get("cores") or [1] if isinstance(n, int) and n >= (claim.min_cores if claim.needs else 0)]
    loads = users * (max(1, len(cores)) if "cores" in load else 1)
    return ("peak", loads) if loads > 1 else ("plain", 1)


def trials_for(loads: int) -> int:
    """Seeded trials of a claim shape: power.TRIALS up to 4 loads a side, fewer beyond (a
    peak's bound costs more per load), never under MIN_TRIALS (standard error <= 0.07)."""
    return max(MIN_TRIALS, power.TRIALS * 4 // max(4, loads))


def claim_odds(claim, cfg: dict, lock: dict, cov: float, rows: int = 1) -> dict:
    """One measurable claim's odds on the resolved profile: {claim, experiment, shape, loads,
    truth, rule, looks (block counts), decided (the chance, cumulative per look, that the
    expected time counts), power (P(decided by the last look), None when unknown),
    reproduced, not_reproduced, rows, why (not modelled)}."""
    exp = claim.experiments[0] if claim.experiments else ""
    spec = cfg["experiments"].get(exp) or {}
    lo, hi, looks = plan.repetition_bounds(spec) if spec else (1, 1, 1)
    schedule = intervals.look_schedule(lo, hi, looks)
    out = {"claim": claim.id, "experiment": exp, "looks": schedule, "rows": rows, "shape": None,
           "loads": 0, "truth": getattr(claim, "published_ratio", None), "rule": None,
           "decided": [1.0] * len(schedule), "power": None, "reproduced": None, "not_reproduced": None,
           "why": ""}
    if not cfg["claims"]["decide"]:
        out["why"] = "claims.decide is false: no verdicts, nothing decides"
        out["decided"], out["power"] = [0.0] * len(schedule), 0.0
        return out
    r = getattr(claim, "rule", None)
    if r is None and getattr(claim, "by_blocks", False):   # asks for more blocks while undecided
        out.update(why=BY_BLOCKS, rule=claim.rule_words(), decided=[0.0] * (len(schedule) - 1) + [1.0])
        return out
    if r is None:
        out["why"] = "a check or ranking, no ratio: " + NOT_MODELLED
        return out
    sh = shape_of(claim, spec)
    if sh is None:   # a ratio rule without a truth: only the last look stops it for sure
        out.update(why=NO_TRUTH, rule=r.text(), decided=[0.0] * (len(schedule) - 1) + [1.0])
        return out
    size = max(2, plan.block_counts(cfg, lock, exp)["cells_block"])
    o = power.odds(sh[0], (r.side, r.threshold, r.threshold_hi), float(claim.published_ratio), round(cov, 4),
                   (lo, hi, looks), size, sh[1], level=float(cfg["claims"]["level"]), trials=trials_for(sh[1]))
    out.update(shape=sh[0], loads=sh[1], rule=r.text(), decided=list(o.decided), power=o.decided[-1],
               reproduced=o.reproduced, not_reproduced=o.not_reproduced, trials=o.trials)
    return out


def all_odds(cfg: dict, lock: dict, verdicts: list, tidy_dir: str) -> dict:
    """{"cov", "source", "claims": [claim_odds of each measurable claim], "experiments":
    {exp: [P(on past look k) for each look but the last]}}."""
    from harness import registry
    cov, source = noise(cfg, tidy_dir)
    by_id = {c.id: c for c in registry.claims()}
    rows = [claim_odds(by_id[v.claim], cfg, lock, cov, v.measurable_rows)
            for v in verdicts if v.measurable and v.claim in by_id]
    return {"cov": cov, "source": source, "drift": power.DRIFT, "trials": power.TRIALS, "claims": rows,
            "experiments": go_on(rows)}


def go_on(rows: list[dict]) -> dict:
    """{experiment: [P(it goes on past look k), k = 1..looks-1]}: some claim row reading it is
    still undecided (rows independent)."""
    out: dict = {}
    for exp in {r["experiment"] for r in rows}:
        mine = [r for r in rows if r["experiment"] == exp]
        n = len(mine[0]["looks"])
        out[exp] = []
        for k in range(n - 1):
            all_done = 1.0
            for r in mine:
                all_done *= r["decided"][k] ** max(1, r["rows"])
            out[exp].append(1.0 - all_done)
    return out


def render(odds: dict) -> list[str]:
    """The plan's lines: the noise and its source, then per claim its chance per look."""
    lines = [f"claims' odds (harness.analysis.power, {odds['trials']} seeded trials per claim shape, "
             f"{odds['trials']} x 4 / loads over more than 4 loads, at least {MIN_TRIALS}; the published "
             f"figure taken as the truth; CoV {odds['cov']:.3g}: {odds['source']}; drift {odds['drift']:g}):"]
    for r in odds["claims"]:
        if r["shape"] is None:
            lines.append(f"  {r['claim']}: {r['why']}")
            continue
        loads = f" over {r['loads']} loads" if r["loads"] > 1 else ""
        per = ", ".join(f"{p:.2f} by look {k} ({b} blocks)" for k, (p, b) in enumerate(zip(r["decided"], r["looks"]), 1))
        lines.append(f"  {r['claim']} ({r['shape']}{loads}, "
                     f"rule {r['rule']}, published {r['truth']:.3g}): P(decided) {per}; "
                     f"P(reproduced) {r['reproduced']:.2f}, P(not reproduced) {r['not_reproduced']:.2f}")
    return lines
