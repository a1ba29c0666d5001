"""Duet pairing (`pairing: duet`; Bulej et al., "Duet Benchmarking", ICPE 2020): the two
sides of a compared pair run at the same time on twin spans of lanes (harness.plan.lanes.twins),
swapped between blocks (lanes.duet_sides), so what disturbs the host during the window
disturbs both sides alike.

Which cells are a pair: an experiment's duet factor (`factor`) is its engines when it has
two (whatever its variants), else, with one engine, its one variant of two values when it
has exactly one such and none of more. Two cells of a block that differ only in that
factor are a pair (side A: the factor's first level in the experiment's spec, side B: the
second); a cell whose partner is not planned in the block (a build without that engine, a
cell no claim reads) is a unit of its own. An experiment with no such factor (three
engines or more; one engine and two two-valued variants, or a variant of three values;
steps) runs as blocks, and so does an A/A control (a `replica` variant): its interval is
the run's resolution, which must be that of cells run one after the other, the wider one,
for every claim. The plan lists each experiment's factor or why it has none. A claim that
compares another factor than the paired one (ps_pfs's ps or pfs levels, build_compare's
builds) compares cells of different pairs, which ran at different times, as blocks do.

A block's order under duet is its seeded order (harness.plan.blocks.order) with each
pair's second cell moved up behind its first (`order`), so the order of units, and of
a pair's two cells, is still the seeded shuffle's, on every host. Where the cells' width has twins (the plan's lanes) a
pair runs at once, one side on each twin; where it has none, its two cells run back to
back on the block's lane, as blocks do.

Cells of a block are still compared only inside that block, so the analysis is the same
for both pairings; duet changes when and where a block's cells run.
"""
from __future__ import annotations

from harness.measure import factors as F
from harness.plan import cells as plan, lanes as L


def factor(spec: dict) -> tuple[str | None, str]:
    """(the experiment's duet factor: "engine" or a variant's name, or None; why, when None)."""
    if spec["kind"] != "throughput":
        return None, "a steps experiment: its statements are timed on one server after another"
    engines = list(spec.get("engines") or [])
    two = [k for k, v in (spec.get("variants") or {}).items() if len(v) == 2]
    many = [k for k, v in (spec.get("variants") or {}).items() if len(v) > 2]
    if len(engines) == 2:
        return "engine", ""
    if len(engines) > 2:
        return None, f"{len(engines)} engines: no one pair of sides (runs as blocks)"
    if two == ["replica"] and not many:
        return None, "an A/A control: its resolution is that of cells run one after the other (runs as blocks)"
    if len(two) == 1 and not many:
        return two[0], ""
    if many:
        return None, f"variant {many[0]} has {len(spec['variants'][many[0]])} values: no one pair of sides (runs as blocks)"
    if len(two) > 1:
        return None, f"variants {' and '.join(two)} each have two values: no one pair of sides (runs as blocks)"
    return None, "nothing it compares has two sides (runs as blocks)"


def levels(spec: dict, name: str) -> list[str]:
    """The duet factor's two levels as its cells name them, side A's first."""
    if name == "engine":
        return list(spec["engines"])
    return [F.label({name: v}).partition("-")[2] for v in spec["variants"][name]]


def _key(d: dict, name: str) -> tuple:
    """A cell's name fields without the duet factor's level: equal for a pair's two sides."""
    if name == "engine":
        return tuple(sorted((k, v) for k, v in d.items() if k != "engine"))
    variant = F.parse(d["variant"])
    variant.pop(name, None)
    return tuple(sorted((k, F.label(variant) if k == "variant" else v) for k, v in d.items()))


def _level(d: dict, name: str) -> str:
    if name == "engine":
        return d["engine"]
    return F.label({name: F.parse(d["variant"])[name]}).partition("-")[2]


def units(cfg: dict, exp: str, names: list[str]) -> list[tuple[str, ...]]:
    """The block's cells (in `names`' order) as units: a pair where both sides are among
    `names`, else one cell; the units in the order their first cell comes, a pair's cells
    in the order they come (which side runs first, when they run one after the other,
    stays the seeded shuffle's)."""
    spec = cfg["experiments"][exp]
    name, _ = factor(spec)
    if name is None:
        return [(n,) for n in names]
    keys = [_key(plan.parse_cell(cfg, exp, n), name) for n in names]
    by: dict = {}
    for n, k in zip(names, keys):   # a unit's cells in names' order
        by.setdefault(k, []).append(n)
    out, seen = [], set()
    for k in keys:
        if k not in seen:
            seen.add(k)
            out.append(tuple(by[k]))
    return out


def sides(cfg: dict, exp: str, unit: tuple[str, ...]) -> tuple[str, ...]:
    """A pair's cells as (side A, side B): the duet factor's first level in the spec, then
    its second; a lone cell as it is."""
    if len(unit) != 2:
        return tuple(unit)
    spec = cfg["experiments"][exp]
    name, _ = factor(spec)
    first = levels(spec, name)[0]
    a = [c for c in unit if _level(plan.parse_cell(cfg, exp, c), name) == first]
    return (a[0], next(c for c in unit if c != a[0])) if len(a) == 1 else tuple(unit)


def order(cfg: dict, exp: str, names: list[str]) -> list[str]:
    """The block's measuring order under duet: each unit's cells together, the units in
    the seeded order of their first cell."""
    return [n for u in units(cfg, exp, names) for n in u]


def unit_index(cfg: dict, exp: str, names: list[str]) -> dict[str, tuple[str, ...]]:
    """{cell: its unit (pair or lone cell)} of the block whose order is `names`."""
    return {c: u for u in units(cfg, exp, names) for c in u}


def unit_lanes(cfg: dict, lanes, experiments, exp: str, unit: tuple[str, ...], rep: int,
               cores: int) -> tuple[list[dict], bool, list[int]]:
    """Where a unit's job runs (the Snakefile's run_duet): (each cell's job lane, in unit
    order, as harness.plan.lanes.job_lane gives it; at once or not; the lanes the job holds).
    At once: a pair whose width has twin spans. An experiment's blocks take the twin pairs
    two at a time (blocks 1-2 one pair, 3-4 the next, each experiment starting one pair
    further), side A on the first twin in odd blocks and on the second in even ones
    (lanes.duet_sides), so on every pair each side runs as often on either twin whenever
    the blocks are even in number. Otherwise (a lone cell, a width without twins) the
    block's own lane (lanes.block_lane), one cell after the other, as blocks run."""
    w = lanes.width(cores)
    pairs = L.twins(lanes, w) if len(unit) == 2 else []
    if pairs:
        pair = pairs[(list(experiments).index(exp) + (rep - 1) // 2) % len(pairs)]
        spans = lanes.spans(w)
        on = dict(zip(sides(cfg, exp, unit), L.duet_sides(pair, rep)))
        per = [L.job_lane(lanes, spans[on[c]][0].id, cores) for c in unit]
        return per, True, sorted({i for x in per for i in x["lanes"]})
    lane = L.job_lane(lanes, L.block_lane(experiments, exp, rep, lanes.count), cores)
    return [lane] * len(unit), False, lane["lanes"]


def active(cfg: dict, exp: str) -> bool:
    """Whether the experiment's cells run as duet units (pairing: duet and a duet factor)."""
    return cfg.get("pairing") == "duet" and factor(cfg["experiments"][exp])[0] is not None


def describe(cfg: dict, exps) -> list[str]:
    """The plan's line per experiment under pairing: duet: its pairs, or why it runs as blocks."""
    out = []
    for exp in exps:
        spec = cfg["experiments"][exp]
        name, why = factor(spec)
        if name is None:
            out.append(f"  {exp}: {why}")
        else:
            a, b = levels(spec, name)
            out.append(f"  {exp}: pairs of {name} {a} (side A) and {b} (side B)")
    return out
