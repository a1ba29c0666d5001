"""An experiment's `repetitions`: how many blocks it measures and when its claims are looked at.

`repetitions: {min, max, looks, figures}` (config/default.yaml): blocks 1..min first, then
more up to max; blocks 1..figures (optional, default min) measure every read cell, later
blocks only the cells a measurable claim reads (harness.plan.cells.read_combos); the claims looked at after each count of
harness.analysis.intervals.look_schedule(min, max, looks) and frozen at the first
look that decides them. An integer n is accepted as {min: n, max: n, looks: 1}.

`check` is the validation: a profile whose claims decide (claims.decide) must
give every look an interval at the per-look level
(harness.analysis.intervals.per_look_level: Bonferroni over the looks), i.e.
min >= intervals.min_blocks(level, looks); otherwise it is refused before
anything runs, with the key and the smallest usable min.
"""
from __future__ import annotations

from harness.analysis import intervals

# a `repetitions` value's parse lives with the looks it feeds (harness.analysis.intervals,
# a stage below): the verdicts read it too
from harness.analysis.intervals import KEYS, OPTIONAL, bounds, figures  # noqa: E402,F401


def schedule(value) -> list[int]:
    """The block counts at which the claims are looked at (the last is max)."""
    return intervals.look_schedule(*bounds(value))


def check_bounds(value, key: str) -> str | None:
    """None if `value`'s min, max and looks make a look schedule, else a one-line error
    naming `key` and the fix (harness.analysis.intervals.schedule_problem)."""
    why = intervals.schedule_problem(*bounds(value))
    return f"{key}: {why}" if why else None


def check(value, level: float, key: str, decide: bool = True) -> str | None:
    """None if `value` is usable, else a one-line error naming `key` and the fix."""
    lo, hi, looks = bounds(value)
    why = check_bounds(value, key)
    if why:
        return why
    fig = value.get("figures", lo) if isinstance(value, dict) else lo
    if isinstance(fig, bool) or not isinstance(fig, int) or not 1 <= fig <= lo:
        return (f"{key}.figures: {fig!r} must be an integer with 1 <= figures <= min ({lo}); "
                f"set it between 1 and {lo}, or remove it (default: min)")
    if not decide:
        return None
    need = intervals.min_blocks(level, looks)
    if lo < need:
        per = intervals.per_look_level(level, looks)
        fix = (f"set it to at least {need}" if isinstance(value, int) else
               f"set min to at least {need}, e.g. {{min: {need}, max: {max(hi, 2 * need)}, looks: {looks}}}")
        return (f"{key}: {lo} blocks cannot reach claims.level {level:g} (each of {looks} "
                f"look{'s' if looks > 1 else ''} at level {per:.4g} needs >= {need} blocks); {fix}; "
                f"or set claims.decide: false to measure without verdicts")
    return None
