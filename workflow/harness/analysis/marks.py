"""Published marks of a study's figures, built from its claims (not a study:
the registry in studies/__init__.py lists the study modules by name).

A study module declares PUBLISHED_MARKS, a list of dicts, one per published
number one of its figures plots; harness.report.published gathers them into
data/tidy/published.csv and the figure scripts draw them (theme.R,
read_published / geom_published). A mark's keys place it on the figure
(empty: any value); `value` is in the figure's units, or, when `ref_engine`
or `ref_levels` is set, a ratio to the measured value of that reference in
the same panel (the published ratio, so the mark shows where the study's
shape would put the point on this host; absolute QPS of 2012 hardware are
never drawn).
"""
from __future__ import annotations

# The key columns of published.csv, in order (harness.report.published).
KEYS = ("experiment", "engine", "levels", "tables", "cores", "step", "metric", "ref_engine", "ref_levels")


def _levels(levels) -> str:
    """A claim's levels tuple as the figures compare it: '|'-joined, in factor-table order."""
    return "|".join(str(v) for v in levels) if levels else ""


def mark(figure: str, value: float, label: str, source: str, **keys) -> dict:
    """One mark; unknown keys are an error (a typo would silently match everything)."""
    bad = set(keys) - set(KEYS)
    if bad:
        raise ValueError(f"published mark of {figure}: unknown key(s) {sorted(bad)}; known: {KEYS}")
    return {"figure": figure, **{k: keys.get(k, "") for k in KEYS}, "value": value, "label": label,
            "source": source}


def ratio_label(r: float, prefix: str = "published ") -> str:
    return f"{prefix}{r + 1e-9:.2f}\u00d7"  # half up: 215/200 is 1.08, as the claims say


def from_claim(claim, figure: str, label: str | None = None, **keys) -> dict:
    """The mark of a ratio claim (EngineRatio: engine a vs engine b; LevelRatio: levels
    a vs levels b of one engine): its published_ratio relative to its second side."""
    r = claim.published_ratio
    if r is None:
        raise ValueError(f"claim {claim.id} has no published ratio to mark")
    base = {"experiment": claim.experiment_name}
    for k in ("tables", "cores"):
        if getattr(claim, k, None):
            base[k] = getattr(claim, k)
    if isinstance(claim.a, str):      # EngineRatio
        base.update(engine=claim.a, ref_engine=claim.b, levels=_levels(claim.levels))
    else:                             # LevelRatio
        base.update(engine=claim.engine, levels=_levels(claim.a), ref_levels=_levels(claim.b))
    base.update(keys)
    return mark(figure, r, label or ratio_label(r), f"{claim.study}, claim {claim.id}", **base)
