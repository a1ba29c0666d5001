"""The per-group interval the verdicts used before paired blocks (bench/verdict_power.py's
old-median-product arm compares the pipeline's rule with it; nothing in the pipeline uses it).

A claim "A is k× B" judged on an interval for median(A)/median(B) made of the two groups'
own median intervals, [lo_A/hi_B, hi_A/lo_B]: it pays the coverage twice (the product of the
sides') and ignores the pairing of blocks, which harness.analysis.intervals' paired interval
uses. Its verdict reads the interval as every verdict does (harness.analysis.verdict.sides):
REPRODUCED only when the whole interval lies on the published side at a coverage of at least
the requested level.
"""
from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from harness.analysis.stats import median_ci, order_coverage  # noqa: E402
from harness.analysis.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, SIDES, Rule, sides  # noqa: E402

METHOD = "order-statistic median intervals per group, combined as [lo_A/hi_B, hi_A/lo_B]"


class RatioCI(NamedTuple):
    """An interval for median(A)/median(B). `coverage` is what the interval
    really has (a guaranteed lower bound), `level` what was asked for."""
    lo: float
    hi: float
    point: float
    coverage: float
    method: str
    n_a: int
    n_b: int
    level: float = 0.95


def _checked(values, name: str) -> list[float]:
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError(f"ratio_interval: group {name} has no values")
    bad = [v for v in xs if not math.isfinite(v) or v <= 0]
    if bad:
        raise ValueError(f"ratio_interval: group {name} has a value {bad[0]!r} that is not a positive "
                         "number; a ratio of medians needs positive measurements (a run with 0 QPS "
                         "failed: report it as such, not as a ratio)")
    return xs


def ratio_interval(a, b, level: float = 0.95) -> RatioCI:
    """Interval for median(A)/median(B) from the repetitions of two independent groups.

    Each group gets its order-statistic median interval at coverage >= sqrt(level)
    where its n allows ([min, max] otherwise); the groups being independent, the
    ratio lies in [lo_A/hi_B, hi_A/lo_B] with probability >= cov_A * cov_B
    (distribution-free, Hoefler & Belli SC'15 order statistics), the coverage
    reported. With one value in a group its interval is a point of coverage 0."""
    if not 0 < level < 1:
        raise ValueError(f"ratio_interval: level {level} must be between 0 and 1 (e.g. 0.95)")
    xa, xb = _checked(a, "A"), _checked(b, "B")
    per_side = math.sqrt(level)
    lo_a, hi_a, cov_a = median_ci(xa, per_side)
    lo_b, hi_b, cov_b = median_ci(xb, per_side)
    return RatioCI(lo=lo_a / hi_b, hi=hi_a / lo_b,
                   point=statistics.median(xa) / statistics.median(xb),
                   coverage=cov_a * cov_b, method=METHOD, n_a=len(xa), n_b=len(xb), level=level)


def reps_needed(level: float = 0.95) -> int:
    """Repetitions per group for a ratio interval of coverage `level`: the
    smallest n whose [min, max] (or a narrower order-statistic interval)
    reaches sqrt(level). 7 for 95%, 5 for 80%."""
    if not 0 < level < 1:
        raise ValueError(f"reps_needed: level {level} must be between 0 and 1")
    n = 2
    while order_coverage(n, 1) < math.sqrt(level):
        n += 1
    return n


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _interval_text(ci: RatioCI) -> str:
    return (f"[{_fmt(ci.lo)}, {_fmt(ci.hi)}] at {100 * ci.coverage:.1f}% coverage "
            f"(n = {ci.n_a} vs {ci.n_b})")


def _published_text(threshold, side, threshold_hi) -> str:
    if side == "within":
        return f"within [{_fmt(threshold)}, {_fmt(threshold_hi)}]"
    return f"{side} {_fmt(threshold)}"


def decide(ci: RatioCI, threshold: float, side: str, threshold_hi: float | None = None
           ) -> tuple[str, str]:
    """(verdict, reason) for the claim "the ratio is `side` `threshold`".

    side "above": the ratio > threshold; "below": < threshold; "within": in
    [threshold, threshold_hi]. REPRODUCED only when the whole interval is
    strictly on the published side (within: inside the band) and its coverage
    reaches ci.level; NOT_REPRODUCED only when the whole interval is on the
    other side (within: entirely outside the band) at that coverage; an
    interval touching the threshold, straddling it, or of too low a coverage
    gives INCONCLUSIVE, with the interval, its coverage and the repetitions
    per side a ci.level interval needs."""
    if side not in SIDES:
        raise ValueError(f"decide: side {side!r} must be one of {', '.join(SIDES)}")
    if side == "within":
        if threshold_hi is None or not threshold < threshold_hi:
            raise ValueError(f"decide: side 'within' needs threshold < threshold_hi, got "
                             f"{threshold!r}, {threshold_hi!r}")
    elif threshold_hi is not None:
        raise ValueError(f"decide: threshold_hi is only for side 'within', not {side!r}")
    for name, t in (("threshold", threshold), ("threshold_hi", threshold_hi)):
        if t is not None and not math.isfinite(t):
            raise ValueError(f"decide: {name} {t!r} is not a finite number")
    if not ci.lo <= ci.point <= ci.hi:
        raise ValueError(f"decide: point {ci.point!r} outside its interval [{ci.lo!r}, {ci.hi!r}]")
    if min(ci.n_a, ci.n_b) < 2:
        return INCONCLUSIVE, (f"one repetition: spread unknown (n = {ci.n_a} vs {ci.n_b}; a "
                              f"{100 * ci.level:.0f}% interval needs {reps_needed(ci.level)} per side)")

    on_side, other_side = sides(ci.lo, ci.hi, Rule(side, threshold, threshold_hi))
    published = _published_text(threshold, side, threshold_hi)
    other = (f"outside [{_fmt(threshold)}, {_fmt(threshold_hi)}]" if side == "within" else
             f"at or {'below' if side == 'above' else 'above'} {_fmt(threshold)}")
    stated = f"ratio {_fmt(ci.point)}, interval {_interval_text(ci)}"
    if ci.coverage >= ci.level:
        if on_side:
            return REPRODUCED, f"{stated} lies entirely {published}"
        if other_side:
            return NOT_REPRODUCED, f"{stated} lies entirely {other}"
    need = (f"a {100 * ci.level:.0f}% interval needs {reps_needed(ci.level)} repetitions per side"
            if ci.coverage < ci.level else
            f"at {100 * ci.level:.0f}% the data do not tell which side the ratio is on")
    if on_side or other_side:
        where = published if on_side else other
        return INCONCLUSIVE, (f"{stated} lies entirely {where}, but its coverage is below "
                              f"{100 * ci.level:.0f}%; {need}")
    return INCONCLUSIVE, f"{stated} straddles or touches the published bound ({published}); {need}"
