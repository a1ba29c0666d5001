"""What both benchmark scripts need: the pinned default build, fetched,
verified and bootstrapped the way the pipeline does (cached in resources/)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness import studies  # noqa: E402,F401  (registers the studies: harness.registry)
from harness import builds  # noqa: E402
from harness.measure import initdb  # noqa: E402

from harness.plan import config
from harness import paths

BUILD = "mysql-5.6.24"


def run_settings(**over) -> dict:
    """Run settings as the pipeline passes them (harness.plan.cells.run_settings: every key,
    config/default.yaml's values), on the host backend unless `over` says otherwise."""
    from harness.plan import cells
    return {**cells.run_settings(config.with_defaults({})), "backend": "host", **over}


def pinned_build(name: str = BUILD) -> tuple[dict, Path, Path]:
    """(lock entry, build dir, template dir) of `name`, ready to start."""
    entry = builds.load_lock(paths.LOCK)[name]
    build_dir = ROOT / "resources/builds" / name
    template = ROOT / "resources/templates" / name
    if not build_dir.exists():
        builds.fetch(name, entry, build_dir)
    if not template.exists():
        initdb.bootstrap(name, entry, build_dir, template)
    return entry, build_dir, template


def sbtest_datasets(sc: dict, build: tuple, work: Path, engines) -> dict:
    """{engine: a prepared sbtest dataset at the scale sc (tables, table_size, settings)}, made
    under work/datasets once and reused."""
    from harness.measure import datasets
    entry, build_dir, template = build
    out = {}
    for e in engines:
        out[e] = work / "datasets" / f"{e}_t{sc['tables']}_n{sc['table_size']}"
        if not out[e].exists():
            datasets.prepare("sbtest", out[e].name, name=BUILD, entry=entry, build_dir=build_dir,
                             template=template, out=out[e], settings=sc["settings"])
    return out


def per_start(units: dict, level: float = 0.9):
    """The ratio A/B when the independent unit is a server start, not a window.

    `units` maps each unit (a round: its servers started once, then measured in
    several windows) to its windows' (a, b) values. Windows of one start share
    whatever that start drew (memory layout, where the buffer pool landed, the
    host's state that minute), so they are not independent of each other: an
    interval over all windows as if they were is too narrow, and its coverage is
    not the one it states, for any claim about the server rather than about
    these starts. Here each unit gives one log ratio (the mean of its windows'),
    and the exact signed-rank interval is taken over units (None below 6).

    Returns (interval or None, components): `components` has the windows' scatter
    within a start (sd of a window's log ratio about its unit's mean) and the
    scatter between starts left after it (sd of the units' means beyond what
    the within-start scatter explains), both as fractions (0.05 = 5 %)."""
    import math
    import statistics

    from harness.analysis import intervals
    d = {u: [math.log(a / b) for a, b in ab] for u, ab in units.items() if ab}
    means = [statistics.fmean(v) for v in d.values()]
    sizes = [len(v) for v in d.values()]
    dof = sum(sizes) - len(sizes)
    s_w2 = (sum((x - mu) ** 2 for v, mu in zip(d.values(), means) for x in v) / dof
            if dof else float("nan"))
    if len(means) < 2 or not dof:  # one start, or one window per start: the two are not separable
        s_b2 = float("nan")
    else:  # one-way random effects, method of moments (n0: the mean unit size, corrected for imbalance)
        n_all, grand = sum(sizes), statistics.fmean(x for v in d.values() for x in v)
        n0 = (n_all - sum(m * m for m in sizes) / n_all) / (len(sizes) - 1)
        ms_between = sum(m * (mu - grand) ** 2 for m, mu in zip(sizes, means)) / (len(sizes) - 1)
        s_b2 = max(0.0, (ms_between - s_w2) / n0)
    comp = {"units": len(means), "windows": sum(sizes),
            "within_sd": math.sqrt(s_w2) if s_w2 == s_w2 else float("nan"),
            "between_sd": math.sqrt(s_b2) if s_b2 == s_b2 else float("nan")}
    ci = (intervals.paired_interval([math.exp(m) for m in means], [1.0] * len(means), level=level)
          if len(means) >= 6 else None)
    return ci, comp


def per_start_text(ci, comp: dict, what: str = "ratio") -> str:
    """One line for `per_start`'s result."""
    head = (f"{what} over {comp['units']} server starts: "
            + (f"{ci.point:.3f} [{ci.lo:.3f}, {ci.hi:.3f}] ({ci.coverage:.1%} exact signed-rank "
               f"interval over starts, each start's mean log ratio)" if ci else
               "too few starts for an interval (6 needed)"))
    def pct(x: float) -> str:
        return "n/a" if x != x else f"+-{x:.1%}"
    return (f"{head}; scatter of a window's ratio within a start {pct(comp['within_sd'])}, "
            f"between starts beyond it {pct(comp['between_sd'])} ({comp['windows']} windows)")


def point_select_cell(engine: str, sc: dict, users: int, rep: int, build: tuple, ds: Path, work: Path,
                      cores: int = 1):
    """A Point-Selects cell (engine, sc's tables and table size, mysqld on `cores`, baseline settings) set
    up as the pipeline sets it up: (its Frame, to enter: the pipeline's CPUs, labelled and
    reaped; the spec; the cell's factors; their settings). Once entered,
    harness.measure.throughput._table_captures does what a cell does before its warm-up."""
    from harness.measure import factors, throughput
    from harness.measure.frame import Frame
    entry, build_dir, _ = build
    spec = {"study": "A3", "kind": "throughput", "workload": "point_select", "dataset": "sbtest",
            "table_size": sc["table_size"]}
    name = f"{BUILD}_{engine}_base_t{sc['tables']}_c{cores}_u{users}_r{rep}"
    d = throughput.parse(name)
    values = factors.settings(factors.parse(d["variant"]), engine, "point_select")
    s = sc["settings"]
    options = {**s["options"], **throughput.server_options(spec, d, values, entry["family"])}
    frame = Frame(out=work / "cells" / name, name=BUILD, entry=entry, build_dir=build_dir, source=ds,
                  cores=d["cores"], settings=s, options=options, max_connections=users + 64)
    return frame, spec, d, values
