"""The verdicts on a published claim, its published side (Rule), and the one comparison
that reaches a verdict (pure functions).

A claim "A/B is above t" (below t, within [t, t_hi]) is judged on an interval for the ratio
(harness.analysis.intervals), never on two point values: two intervals that overlap the
threshold support no conclusion (Georges et al., OOPSLA 2007), and the effect is reported as
a ratio with its interval (Kalibera & Jones, ISMM 2013). `sides` is that comparison, the one
every verdict and every check of a verdict asks (intervals.rule_verdict,
claims.invariant_violations). The invariant every caller relies on: REPRODUCED implies the
whole interval lies on the published side, at a coverage of at least the requested level --
so a verdict is never reached by noise; when the data cannot give that, the verdict is
INCONCLUSIVE and its reason says what it would take.
"""
from __future__ import annotations

from dataclasses import dataclass

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_MEASURABLE = "not measurable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_MEASURABLE)

SIDES = ("above", "below", "within")


@dataclass(frozen=True)
class Rule:
    """The published side of a ratio: side 'above'/'below' `threshold`, or
    'within' [threshold, threshold_hi]. `why` justifies any tolerance in one line."""
    side: str
    threshold: float
    threshold_hi: float | None = None
    why: str = ""

    def __post_init__(self):
        if self.side not in SIDES:
            raise ValueError(f"rule side {self.side!r}: one of {SIDES}")
        if (self.side == "within") != (self.threshold_hi is not None):
            raise ValueError("rule: threshold_hi is for side 'within' only, and it needs one")

    def text(self) -> str:
        if self.side == "within":
            return f"in [{_g(self.threshold)}, {_g(self.threshold_hi)}]"
        return f"{'>' if self.side == 'above' else '<'} {_g(self.threshold)}"


def _g(x) -> str:
    return f"{x:.4g}"


def sides(lo: float, hi: float, rule: Rule) -> tuple[bool, bool]:
    """(on, off) for the closed interval [lo, hi]: `on` when it lies wholly on the published
    side (above / below: strictly past the threshold; within: inside the closed band), `off`
    when wholly on the other side (at or past the threshold the other way; within: entirely
    outside the band). An interval touching an above / below threshold, or straddling a bound,
    is neither."""
    t, t_hi = rule.threshold, rule.threshold_hi
    if rule.side == "above":
        return lo > t, hi <= t
    if rule.side == "below":
        return hi < t, lo >= t
    if t_hi is None or not t < t_hi:
        raise ValueError(f"rule: 'within' needs threshold < threshold_hi, got {t!r}, {t_hi!r}")
    return t <= lo and hi <= t_hi, hi < t or lo > t_hi
