"""The verdict method as the paper states it: one paragraph (macro IntervalMethod), the
power table read from data/power/verdict_power_<level>.csv (the pipeline's rule verdict_power runs
bench/verdict_power.py at the run's claims.level; never typed; a sentence saying the
benchmark was not run when the file is absent), and the
default and paper profiles' expected and worst-case blocks.
"""
from __future__ import annotations

import csv
from pathlib import Path

import yaml

from harness import paths
from harness import registry as studies
from harness.analysis import intervals as I
from harness.plan import repetitions
from harness.report.latex import GENERATED

SIDES = ("above", "below", "within")   # a claim row's side (claims.csv) when an interval decides it
POWER_CSV = paths.ROOT / "bench" / "results" / "verdict_power.csv"
COV, DRIFT = "0.05", "0.05"          # the row the paper quotes: this class of host's CoV, drift on
PROFILES = ("default", "paper")


def describe(level: float, decide: bool) -> str:
    """The method in plain words (macro IntervalMethod)."""
    text = (f"Each ratio's interval pairs the two settings by block (a repetition: every cell of an "
            f"experiment once, in a random order) and is the exact Wilcoxon signed-rank interval of "
            f"the Walsh averages of the per-block log ratios, with the Hodges-Lehmann estimate as its "
            f"point; it assumes the log ratios symmetric about their centre, which the random order "
            f"within blocks makes true when there is no effect. The sign-test interval, which assumes "
            f"no symmetry, is reported beside it (claims.csv) but never decides. Peaks and scaling gains "
            f"are bounded over all loads; two sides without a common block use the exact "
            f"Mann-Whitney interval. Blocks are looked at after the counts of each "
            f"experiment's repetitions schedule; each look is at level 1 - (1 - {level:g})/L for L looks "
            f"(Bonferroni), so the chance of a verdict on the wrong side stays within "
            f"{(1 - level) / 2:g} per side whatever the stopping, and a verdict is frozen at the first "
            f"look where the whole interval lies on one side of the published threshold.")
    if not decide:
        text += (" This profile sets claims.decide to false: it measures too few blocks to decide, "
                 "so its ratio rows are inconclusive by design.")
    return text


def limits() -> str:
    """What lies outside the stated coverage (macro IntervalLimits, in the appendix): the
    method's, each study's note on its intervals (a study's INTERVAL_NOTE) and what each
    leaves outside the coverage (OUTSIDE_COVERAGE)."""
    notes = "".join(f" {n}" for n in studies.declared("INTERVAL_NOTE"))
    outside = "; ".join(studies.declared("OUTSIDE_COVERAGE"))
    return ("No claim chooses a cell from the blocks it is judged on. A peak ratio max A / max B is "
            "the max over A's loads of the min over B's loads of A_l/B_m, so its interval is that "
            "max-min of the per-pair signed-rank intervals, the lower end's error split over A's loads "
            "and the upper end's over B's (Bonferroni), which holds for any shape of the two curves; "
            "a scaling claim is the same bound on the per-block products of its four groups (its "
            "ratio of ratios of peaks). The cost is power: each look's error is split over the loads, "
            f"so a peak over many loads needs more blocks to decide than one cell.{notes} The figures' "
            "peaks (a cell of the highest median) are descriptive and decide nothing."
            + (f" Outside the stated coverage: {outside}." if outside else ""))


def decidable(rows) -> list[dict]:
    """The claim rows (claims.csv) an interval decides: a published threshold and a side."""
    return [r for r in rows if r.get("threshold") not in (None, "") and r.get("side") in SIDES]


def multiplicity(rows, level: float) -> str:
    """How many of the decidable claim rows a run at `level` would decide by chance alone
    (macro Multiplicity). The bound: a row whose true effect sits exactly at its threshold is
    decided on a given side with probability at most (1 - level)/2 whatever the looks (each
    look at level 1 - (1 - level)/L, Bonferroni), so the expected count is at most N(1 - level)/2."""
    n = len(decidable(rows))
    per = (1 - level) / 2
    return (f"Judged together, the {n} claim rows an interval decides (those with a published threshold) "
            f"are a multiple test: were every one's true effect exactly at its threshold, each would land on "
            f"a given side with probability at most (1 - {level:g})/2 = {per:g}, so about {n * per:.1f} of "
            f"the {n} would be reproduced by chance alone (and as many not reproduced); no verdict is "
            f"corrected for this.")


def _rows(path=None) -> list[dict] | None:
    path = Path(path) if path else POWER_CSV
    if not path.exists():
        return None
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def power_settings() -> str:
    """bench/verdict_power.py's --settings for the profiles the power table shows, from
    their configs (name:min:max:looks ...)."""
    return " ".join(f"{p}:{lo}:{hi}:{k}" for p in PROFILES for lo, hi, k in [bounds(p)])


def bounds(profile: str) -> tuple[int, int, int]:
    cfg = yaml.safe_load((paths.CONFIG / f"{profile}.yaml").read_text()) or {}
    value = (cfg.get("experiment_defaults") or {}).get("repetitions")
    if value is None:
        value = paths.defaults()["experiment_defaults"]["repetitions"]
    return repetitions.bounds(value)


def power_tex(level: float, path=None) -> str:
    """The power table for claims.level (the pipeline's rule, method signed-rank, of the
    default and paper profiles' settings for each arm of ARMS, CoV and drift 5%), and each
    profile's blocks, from `path` (bench/verdict_power.py's CSV; the pipeline makes it for
    the run's level)."""
    rows = _rows(path)
    lines = [GENERATED]
    settings = {p: bounds(p) for p in PROFILES}
    if rows is None:
        lines.append(r"The verdict power benchmark (\code{bench/verdict\_power.py}) was not run for this "
                     r"build of the paper, so no power figures are stated.")
    ratios = sorted({r["true_ratio"] for r in rows or []}, key=float)
    sel, sizes = {}, {}   # (arm, min, max, true ratio) -> row; (min, max) -> block size
    for r in rows or []:
        if (r["method"].startswith("signed-rank:") and r.get("arm") in ARMS and r["cov"] == COV
                and r["drift"] == DRIFT and abs(float(r["level"]) - level) < 1e-9
                and r.get("lanes") in (None, "1") and r.get("pairing") in (None, "block")):   # one lane's
            sel[(r["arm"], int(r["min_blocks"]), int(r["max_blocks"]), r["true_ratio"])] = r
            sizes[(int(r["min_blocks"]), int(r["max_blocks"]))] = r["block_size"]
    lines += [r"\resizebox{\columnwidth}{!}{%",   # the arms' labels are long for a column
              r"\begin{tabular}{@{}l" + "r" * max(len(ratios), 1) + "rr@{}}", r"\toprule",
              "Profile (min:max:looks), arm & " + " & ".join(f"{float(x):.2f}" for x in ratios)
              + (" & " if ratios else "") + r"expected & worst\\", r"\midrule"]
    for arm, words in ARMS.items():
        for p, (lo, hi, looks) in settings.items():
            cells = [sel.get((arm, lo, hi, x)) for x in ratios]
            if arm != "plain" and not any(cells):
                continue
            means = [float(c["mean_blocks"]) for c in cells if c]
            expected = f"{min(means):.1f}--{max(means):.1f}" if means else "--"
            lines.append(f"{p} ({lo}:{hi}:{looks}), {words} & "
                         + " & ".join(f"{float(c['p_reproduced']):.3f}" if c else "--" for c in cells)
                         + (" & " if ratios else "") + f"{expected} & {hi}" + r"\\")
    lines += [r"\bottomrule", r"\end{tabular}}", ""]
    if sizes:
        lines.append("Blocks of " + ", ".join(f"{p} {sizes.get((lo, hi), '--')} cells"
                                               for p, (lo, hi, _) in settings.items()) + ".")
    return "\n".join(lines)


# the table's arms (bench/verdict_power.py's `arm`), each judged by the pipeline's own rule; the
# rules they replaced (per-block maximum, best-median cell) are in the CSV and docs/benchmarks-record.md
ARMS = {"plain": "one cell a side", "peak-flat2-sharp": "peak, flat-2 vs sharp",
        "peak-flat3-sharp": "peak, flat-3 vs sharp", "peak-sharp-sharp": "peak, sharp vs sharp",
        "scaling": "scaling"}


def power_caption(level: float) -> str:
    per = ", ".join(f"{p} {I.per_look_level(level, bounds(p)[2]):.3g} per look" for p in PROFILES)
    return (f"P(reproduced) for the claim A/B > 1 at level {level:g} ({per}), simulated by "
            f"bench/verdict_power.py with run-to-run CoV {COV} and drift {DRIFT} (shared by the cells of "
            f"a block as far as they run close together), the compared cells at random positions in "
            f"blocks of the profile's size, by true ratio; expected blocks: the range of the mean blocks "
            f"used over the true ratios; worst: max. Peak rows: 4 loads a side with equal true peaks "
            f"(times the true ratio), sharp (one peak, the others 15% lower) or flat over 2 or 3 loads; "
            f"scaling: a ratio of gains, 3 users a group. At a true ratio of 1 every reproduced is a "
            f"false verdict.")
