"""How a comparison picks its cells: the levels of an experiment a claim compares,
pools of cells at those settings, the best cell, the cells at enough cores, and a
build that cannot run the experiment. Moved whole from harness.analysis.claimrules."""
from __future__ import annotations

from harness.analysis import tidyread as T
from harness.analysis.claimresult import Context
from harness.analysis.claimrules import METRIC


def varied_factors(tidy: T.Tidy, experiment: str) -> list[str]:
    """The factors an experiment varies: from its config, else from its data."""
    spec = tidy.spec(experiment)
    if spec.get("variants") is not None:
        return T.varied(spec)
    exp = tidy.experiment(experiment)
    if exp is None:
        return []
    out = []
    for name in exp.factor_columns:
        values = {T.setting_of(c, name) for c in exp.cells if T.applies(name, c.engine)} - {""}
        if len(values) > 1:
            out.append(name)
    return out


def levels_of(tidy: T.Tidy, experiment: str, levels) -> tuple[dict | None, str]:
    """{factor: level} for a claim's LEVELS of an experiment (a tuple in factor-table
    order of the experiment's varied factors; None: each at its baseline), or
    (None, why not) when the experiment does not vary those factors or lacks a level."""
    return levels_in(varied_factors(tidy, experiment), tidy.spec(experiment), experiment, levels)


def levels_in(names: list[str], spec: dict, experiment: str, levels) -> tuple[dict | None, str]:
    """levels_of on the varied factors `names` and the experiment's config `spec` (the
    plan's view, before any cell exists: names = T.varied(spec))."""
    if levels is None:
        variants = (spec.get("variants") or {})
        out = {}
        for n in names:
            base = T.text(T.factors.FACTORS[n].baseline) if n in T.factors.FACTORS else ""
            values = [T.text(v) for v in variants.get(n) or []]
            out[n] = base if not values or base in values else values[0]
        return out, ""
    levels = tuple(T.text(v) for v in levels)
    if len(levels) != len(names):
        varies = ", ".join(T.words(n) for n in names) or "nothing"
        return None, (f"experiment: {experiment} varies {varies}; the claim compares the levels "
                      f"{'/'.join(levels)}")
    out = dict(zip(names, levels))
    variants = spec.get("variants") or {}
    for n, v in out.items():
        if variants.get(n) is not None and v not in [T.text(x) for x in variants[n]]:
            return None, f"experiment: {experiment} does not run {T.setting_words(n, v)}"
    return out, ""


def planned_levels(spec: dict, experiment: str, *levels) -> list[dict] | None:
    """The factor settings (one {factor: level} per LEVELS given; None: the baselines) of
    the cells a claim reads, from the experiment's config alone (harness.plan.reads plans
    only those cells); None (any cell) when a LEVELS does not fit the config: the claim
    then says why at evaluation."""
    names = T.varied(spec)
    out = []
    for lv in levels:
        settings, _ = levels_in(names, spec, experiment, lv)
        if settings is None:
            return None
        out.append(settings)
    return out


def levels_words(settings: dict) -> str:
    return ", ".join(T.setting_words(n, v) for n, v in settings.items())


def levels_label(settings: dict) -> str:
    """A side's settings in the factor table's codes: '<code>=<value>,...'."""
    codes = {n: (T.factors.FACTORS[n].code if n in T.factors.FACTORS else n) for n in settings}
    return ",".join(f"{codes[n]}={v}" for n, v in settings.items())


def matches(cell: T.Cell, settings: dict, workload: str | None = None) -> bool:
    """Whether a cell has these factor settings (factors that do not apply to its engine match)."""
    return all(not T.applies(n, cell.engine, workload) or T.setting_of(cell, n) == T.text(v)
               for n, v in settings.items())


def pool(ctx: Context, experiment: str, build: str | None, settings: dict, **where) -> list[T.Cell]:
    """Cells of `experiment` (of `build` if given) with the key values `where` and the
    factor `settings` that have the claim's metric."""
    if build:
        where["build"] = build
    return [c for c in ctx.tidy.cells(experiment, **where)
            if matches(c, settings) and c.values(METRIC)]


def best(cells: list[T.Cell]) -> T.Cell | None:
    """The cell with the highest median (the study's 'peak'); ties by name."""
    cells = [c for c in cells if c.values(METRIC)]
    if not cells:
        return None
    return max(sorted(cells, key=lambda c: c.name), key=lambda c: c.median(METRIC))


def at_cores(cells, min_cores: int) -> list[T.Cell]:
    """The cells with mysqld on at least `min_cores` CPUs (hardware threads)."""
    return [c for c in cells if c.int("cores") >= min_cores]


def unsupported_reason(ctx: Context, experiment: str, build: str = "", engine: str = "") -> str | None:
    for r in ctx.tidy.unsupported:
        if r.get("experiment") != experiment:
            continue
        if build and r.get("build") != build:
            continue
        if engine and engine not in (r.get("engine") or "").split("+"):
            continue
        return r.get("reason") or f"{r.get('build')} cannot run it"
    return None
