"""The verdict of a ratio claim on blocks (harness.analysis.intervals), frozen at the first look that decides it.

A block is a repetition: the `rep` of a cell. Two settings are paired by their
repetition (only repetitions present on both sides count): d_i = log(a_i/b_i)
goes into the exact Wilcoxon signed-rank interval of the Walsh averages
(Hodges-Lehmann point), which assumes the d_i symmetric about their centre --
true under no effect when the order of the settings within a block is random,
as the blocks are run. Beside it, the sign-test interval of the median of the
d_i, which assumes no symmetry, is reported (never used for the verdict).
Where the two sides share no repetition, pairing is impossible and the exact
Mann-Whitney interval of the two groups is used instead (its method says so).
A scaling claim (a ratio of ratios) pairs four cells by repetition: the
per-block (a1/b1)/(a2/b2) into the same signed-rank interval. A comparison of
peaks (`peaks`) takes per-block tuples of each side's values at its loads and
judges max A / max B by harness.analysis.intervals.max_min_interval; the scaling
claims of harness.analysis.claimmath.scaling_judged pass it per-block products.

Looks: the experiment's `repetitions` {min, max, looks} gives the block counts
harness.analysis.intervals.look_schedule looks at; each look's interval is at
harness.analysis.intervals.per_look_level (Bonferroni over the declared looks),
and the first look whose interval lies wholly on one side freezes the verdict
(harness.analysis.intervals.sequential_decide). Undecided with fewer blocks than
max: inconclusive, the reason saying how many of max were measured (`pending`:
more blocks may decide it). `claims.decide: false` (a profile that measures too
few blocks to decide, smoke): inconclusive by design, the interval still shown.
"""
from __future__ import annotations

from typing import NamedTuple

from harness import paths
from harness.analysis import intervals as I
from harness.analysis import verdict as V

BY_DESIGN = "by design: claims.decide is false in this profile (it measures too few blocks to decide)"
NO_PAIRS = "pairing impossible: the two sides share no repetition"


class Judged(NamedTuple):
    verdict: str
    reason: str
    ci: I.Interval
    sign: I.Interval | None
    look: str          # "1/2": the look that decided it (or the last one measured) of the schedule's
    pending: bool      # undecided with fewer blocks than max: more blocks may decide it
    n: tuple


def bounds_of(tidy, experiment: str) -> tuple[int, int, int]:
    """(min, max, looks) of an experiment: its config's repetitions, else config/default.yaml's."""
    value = tidy.spec(experiment).get("repetitions")
    if value is None:
        value = paths.defaults()["experiment_defaults"]["repetitions"]
    return I.bounds(value)


def _rep_key(rep) -> tuple:
    try:
        return (0, float(rep))
    except (TypeError, ValueError):
        return (1, str(rep))


def paired(*sides: dict) -> tuple[list, list[list[float]]]:
    """(repetitions on every side, in order; each side's values at them)."""
    common = set(sides[0])
    for s in sides[1:]:
        common &= set(s)
    reps = sorted(common, key=_rep_key)
    return reps, [[s[r] for r in reps] for s in sides]


def _g(x: float) -> str:
    return f"{x:.4g}"


def interval_words(ci: I.Interval) -> str:
    blocks = f"{ci.n} paired blocks" if isinstance(ci.n, int) else f"groups of {ci.n[0]} and {ci.n[1]}"
    return (f"ratio {_g(ci.point)}, interval [{_g(ci.lo)}, {_g(ci.hi)}] at {100 * ci.coverage:.1f}% "
            f"coverage ({blocks})")


def _published(rule) -> str:
    if rule.side == "within":
        return f"within [{_g(rule.threshold)}, {_g(rule.threshold_hi)}]"
    return f"{rule.side} {_g(rule.threshold)}"


def _other(rule) -> str:
    if rule.side == "within":
        return f"outside [{_g(rule.threshold)}, {_g(rule.threshold_hi)}]"
    return f"at or {'below' if rule.side == 'above' else 'above'} {_g(rule.threshold)}"


def judge(a, b, rule, level: float, bounds: tuple, decide: bool = True, *,
          unpaired: bool = False, method: str = "", peaks: bool = False) -> Judged:
    """The verdict on A/B from paired blocks a[i], b[i] (unpaired: two groups), the
    rule (a verdict.Rule), the experiment's (min, max, looks).
    peaks: a[i], b[i] are tuples of each side's values at its loads, and the ratio judged
    is max A / max B (harness.analysis.intervals.max_min_interval)."""
    lo, hi, looks = bounds
    schedule = I.look_schedule(lo, hi, looks)
    kind = "unpaired" if unpaired else "max-min" if peaks else "signed-rank"
    n = min(len(a), len(b))
    if n == 0:
        raise ValueError("no blocks on both sides")
    look_level = I.per_look_level(level, len(schedule))
    interval = {**I.METHODS, **I.PEAK_METHODS}[kind]

    def sign_at(k):
        return None if unpaired or peaks or k < 1 else I.sign_interval(a[:k], b[:k], look_level)

    def named(ci):
        return ci._replace(method=method) if method else ci

    if not decide:
        ci = named(interval(a, b, level))
        return Judged(V.INCONCLUSIVE, f"{BY_DESIGN}; {interval_words(ci)}", ci,
                      None if unpaired or peaks else I.sign_interval(a[:n], b[:n], level), "", False,
                      (len(a), len(b)))
    if n < schedule[0]:
        ci = named(interval(a[:n], b[:n], look_level))
        return Judged(V.INCONCLUSIVE, (f"{interval_words(ci)}; {n} blocks measured, the first look is "
                                       f"at {schedule[0]} (of max {hi})"), ci, sign_at(n),
                      f"0/{len(schedule)}", True, (len(a), len(b)))
    s = I.sequential_decide(a, b, rule, level, schedule, method=kind)
    ci = named(s.ci)
    look = f"{s.look}/{len(schedule)}"
    at = (f"look {look} after {s.blocks} blocks, each look at level {look_level:.4g} "
          f"(Bonferroni over {len(schedule)} looks for {level:g})")
    stated = f"{interval_words(ci)}, {at}"
    ns = (s.blocks, s.blocks)
    if s.verdict != V.INCONCLUSIVE:
        where = _published(rule) if s.verdict == V.REPRODUCED else _other(rule)
        return Judged(s.verdict, f"{stated} lies entirely {where}", ci, sign_at(s.blocks), look, False, ns)
    pending = n < hi
    if ci.coverage < ci.level:
        splits = I.max_min_splits(a, b) if peaks else 1   # a peak bound splits each look's error further
        need = I.min_blocks(level, len(schedule) * splits, "signed-rank" if peaks else kind)
        why = f"its coverage is below {100 * look_level:.4g}% (a look needs {need} blocks)"
        more = (f"{n} blocks measured of max {hi}" if pending else
                f"the profile's repetitions (max {hi} blocks) cannot decide it")
    else:
        why = f"it straddles or touches the published bound ({_published(rule)})"
        more = (f"{n} blocks measured of max {hi}: more blocks may decide it" if pending else
                f"all {hi} blocks measured: at {100 * level:g}% the data do not tell which side "
                f"the ratio is on")
    return Judged(V.INCONCLUSIVE, f"{stated}: {why}; {more}", ci, sign_at(s.blocks), look, pending, ns)


def judge_sides(va: dict, vb: dict, rule, level, bounds, decide=True) -> Judged:
    """judge() on two sides' {rep: value}: paired by repetition, or unpaired when
    they share none (the method says pairing was impossible)."""
    reps, (a, b) = paired(va, vb)
    if reps:
        return judge(a, b, rule, level, bounds, decide)
    a, b = list(va.values()), list(vb.values())
    return judge(a, b, rule, level, bounds, decide, unpaired=True, method=f"{I.UNPAIRED} ({NO_PAIRS})")


def judge_scaling(a1: dict, b1: dict, a2: dict, b2: dict, rule, level, bounds, decide=True) -> Judged:
    """(A1/B1)/(A2/B2) from the per-block ratio of ratios (the four cells paired by
    repetition): the per-block A1/B1 and A2/B2 into judge()."""
    reps, (w, x, y, z) = paired(a1, b1, a2, b2)
    if not reps:
        raise ValueError(f"scaling: the four cells share no repetition ({NO_PAIRS})")
    r1 = [p / q for p, q in zip(w, x)]
    r2 = [p / q for p, q in zip(y, z)]
    return judge(r1, r2, rule, level, bounds, decide, method=I.RATIO_OF_RATIOS)
