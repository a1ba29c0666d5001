"""How long a sweep will take and how much disk it needs, printed before it starts.

    python -m harness estimate --configfile config/smoke.yaml   (on top of config/default.yaml)

Per experiment: cells x (warm-up + duration) x blocks is the measurement
time the profile asks for (blocks after repetitions.figures, default min: only the
cells a measurable claim reads, harness.plan.cells.read_combos), expected (repetitions.min blocks: decided at the first
look) and in the worst case (max blocks: undecided at every look); each cell also costs a per-cell overhead (datadir
copy, server start and stop, captures; a group of g cells on one server start,
harness.plan.cells.grouped, costs one cell's overhead plus g-1 times a further cell's)
and each dataset a preparation. Both
are *measured* from the Snakemake benchmark files of earlier runs
(benchmarks/run_cell/..., benchmarks/run_group/..., benchmarks/dataset/..., written by every rule's
`benchmark:`) when there are any, else the stated defaults below (measured on
the reference host: 2 vCPUs, Docker backend, Nix store). A dataset costs a
fixed part plus its rows at a per-row rate (index builds make full-text rows
dearer); a steps experiment (no sysbench run) costs a fixed part plus its rows at a
per-row rate: bench/steps_rate.py's committed fit of the real cell (its study's STEPS_FIT), the
per-row rate measured on this host's own cells where they ran. Disk: per cell the median size of
existing raw cells, per dataset its rows.

The same numbers feed the paper's time table (measured_time_rows) and
bench/estimate_vs_measured.py.
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import statistics
import sys
from pathlib import Path

import yaml

from harness import builds, paths, registry
from harness.measure import datasets, kinds

# Defaults when nothing was measured yet (stated in the printout).

from harness.plan import config

from harness.plan import cells as plan
from harness.plan import repetitions
from harness.plan import reuse
DEFAULT_CELL_OVERHEAD_S = 2.0    # a throughput cell's job beyond its windows: copy, start, captures, stop (smoke, 2-CPU VM, docker, 2026-11-26: median 1.84 s of 85 cells)
DEFAULT_GROUP_CELL_S = 0.3      # each further cell of a group (one server start): its captures and queries
DEFAULT_STEPS_ROW_S = 0.005      # a steps cell without a measured fit below, per row of its script beyond
                                 # the per-cell overhead (a guess, kept high: a flush per commit is dear)
# A steps cell's fixed part and per-row rate where a study measured them: its STEPS_FIT
# (harness.registry.steps_fits), by (experiment, build).
DEFAULT_DATASET_S = 3.0          # prepare one dataset: start a server, load, stop (the fixed part)
# and per row loaded (with its indexes): the dataset module's ROW_S (row_seconds)
DEFAULT_CELL_BYTES = 400_000     # a raw cell: logs, captures, manifest, my.cnf
ROW_BYTES = 250                  # an sbtest/fulltext row on disk, with its index
DATADIR_BYTES = 120_000_000      # an initialised system datadir a dataset starts from

BENCH = "benchmarks"
RAW = "data/raw"


def merge_profile(configfiles: list[str], root: Path = Path(".")) -> dict:
    """config/default.yaml, then each --configfile on top (as Snakemake merges them), unresolved
    (what harness.plan.plancmd.build takes)."""
    cfg: dict = paths.defaults(Path(root) / "config")
    for f in map(Path, configfiles):
        config.deep_merge(cfg, yaml.safe_load(Path(f).read_text()) or {})
    return cfg


def load_profile(configfiles: list[str], root: Path = Path("."), cpus: list[int] | None = None) -> dict:
    """merge_profile, resolved for this host (or for a flat host of `cpus`)."""
    return config.resolve(merge_profile(configfiles, root), cpus=cpus)


def profile_files(root: Path = Path(".")) -> list[tuple[str, str, list[str]]]:
    """Every profile in config/: (name, its file, the --configfile list to give on top of
    default.yaml), by file name. A YAML file without a `profile:` key (the lock) is none."""
    out = []
    for p in sorted(Path(root, "config").glob("*.yaml")):
        try:
            raw = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError:
            continue
        if isinstance(raw, dict) and (raw.get("profile") or p.name == "default.yaml"):
            out.append((raw.get("profile", p.stem), f"config/{p.name}",
                        [] if p.name == "default.yaml" else [str(p)]))
    return out


def _bench_seconds(path: str) -> float | None:
    """The wall-clock seconds ('s' column) of a Snakemake benchmark file (mean of its rows)."""
    try:
        with open(path, newline="") as f:
            vals = [float(r["s"]) for r in csv.DictReader(f, delimiter="\t") if r.get("s")]
    except (OSError, ValueError, KeyError):
        return None
    return sum(vals) / len(vals) if vals else None


def _manifest(cell_dir: str) -> dict:
    try:
        with open(os.path.join(cell_dir, "manifest.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def windows_s(timing: dict) -> float:
    """A manifest timing's warm-ups and windows in seconds (`windows`, else one window of
    its warmup_s + duration_s: older manifests)."""
    wins = timing.get("windows") or [{"warmup_s": timing.get("warmup_s") or 0,
                                      "duration_s": timing.get("duration_s") or 0}]
    return sum(float(w.get("warmup_s") or 0) + float(w.get("duration_s") or 0) for w in wins)


def group_members(raw: str, study: str, exp: str, group: str) -> list[str]:
    """The cell dirs of group `group` (<head>_r<rep>: benchmarks/run_group/...) that exist and
    were measured in it (their manifest's `group.cells`; not a users value's older cell)."""
    head, _, rep = group.rpartition("_r")
    found = sorted(glob.glob(os.path.join(glob.escape(os.path.join(raw, study, exp)),
                                          f"{glob.escape(head)}_u*_r{rep}")))
    named = {c for d in found for c in (_manifest(d).get("group") or {}).get("cells", [])}
    return [d for d in found if os.path.basename(d) in named]


def measured_cells(bench_dir: str = BENCH, raw: str = RAW) -> list[dict]:
    """Per benchmarked cell: experiment, seconds, nominal sysbench seconds (its windows
    from its manifest; 0 for a steps cell), the size of the group it ran in (1: a job of its
    own) and its job's seconds; a group's job time is shared evenly by its cells."""
    out = []
    for rule in ("run_cell", "run_group"):
        for p in sorted(glob.glob(os.path.join(bench_dir, rule, "*", "*", "*.tsv"))):
            s = _bench_seconds(p)
            if s is None:
                continue
            study, exp = Path(p).parts[-3], Path(p).parts[-2]
            dirs = [os.path.join(raw, study, exp, Path(p).stem)] if rule == "run_cell" else \
                group_members(raw, study, exp, Path(p).stem)
            for d in dirs:
                m = _manifest(d)
                nominal = windows_s(m.get("timing") or {})
                rows = int((m.get("driver") or {}).get("rows") or 0) if not kinds.of(m).SYSBENCH else 0
                pre = m.get("preload") or {}  # its tables read in (estimate adds that per spec: preload_seconds)
                pre_s = float(pre.get("seconds") or 0) if pre.get("by") == "this cell" else 0.0
                out.append({"experiment": exp, "seconds": s / len(dirs), "nominal": nominal, "preload_s": pre_s,
                            "cell": os.path.basename(d), "rows": rows, "group": len(dirs), "job": p, "job_s": s})
    return out


def dataset_rows(path: str) -> tuple[str, int]:
    """(dataset, rows) of data/datasets/<build>/<dataset>/<key>: sbtest tables x size, the
    full-text stand-in's rows or OHSUMED's records."""
    parts = Path(path).parts
    name, key = parts[-2], parts[-1]
    mod = datasets.all_datasets().get(name)
    return name, (mod.rows(key) if mod is not None else 0)


def row_seconds(name: str) -> float:
    """Seconds to load one row of dataset `name` (its module's ROW_S; 0 if it declares none)."""
    return getattr(datasets.all_datasets().get(name), "ROW_S", 0.0)


def preload_seconds(spec: dict) -> float:
    """A throughput cell's mean seconds reading its tables into memory before its warm-up
    (harness.measure.captures.preload): its dataset's PRELOAD_ROW_S per row and engine, the tables read
    side by side, as many at once as mysqld has cores; nothing for engines that hold their
    tables in memory anyway (harness.measure.throughput.PRELOADED)."""
    from harness.measure import throughput
    rates = getattr(datasets.all_datasets().get(spec.get("dataset")), "PRELOAD_ROW_S", None) or {}
    engines, tables, cores = spec.get("engines") or [], spec.get("tables") or [1], spec.get("cores") or [1]
    if not rates or not engines:
        return 0.0
    rate = statistics.mean(rates[e] if e in throughput.PRELOADED and e in rates else 0.0 for e in map(str, engines))
    rounds = [-(-int(t) // max(1, int(c))) for t in tables for c in cores if str(c).isdigit()] or [1]
    return int(spec.get("table_size") or 0) * rate * statistics.mean(rounds)


def dataset_seconds(path: str, ov: dict) -> float:
    name, rows = dataset_rows(path)
    return ov["dataset_s"] + rows * row_seconds(name)


def overheads(bench_dir: str = BENCH, raw: str = RAW) -> dict:
    """Measured per-cell overhead, per-row time of each steps experiment, the fixed part of a
    dataset's preparation, each with its source ('measured from N files' or 'default')."""
    cells = measured_cells(bench_dir, raw)
    thr = [c["seconds"] - c["nominal"] - c["preload_s"] for c in cells if c["nominal"] > 0 and c["group"] == 1]
    over = statistics.median(thr) if thr else DEFAULT_CELL_OVERHEAD_S
    jobs: dict = {}  # a group's further cells: (job - its windows - one cell's overhead) / (g - 1)
    for c in cells:
        if c["group"] > 1 and c["nominal"] > 0:
            j = jobs.setdefault(c["job"], [c["job_s"], 0.0, c["group"]])
            j[1] += c["nominal"] + c["preload_s"]
    extra = [max(0.0, (job - win - over) / (g - 1)) for job, win, g in jobs.values()]
    steps: dict = {}
    fits = registry.steps_fits()
    for c in cells:  # a steps cell: its fixed part (the fit's, else the per-cell overhead), then its rows at a rate
        if c["nominal"] == 0 and c["rows"]:
            fixed = fits.get((c["experiment"], c["cell"].split("_")[0]), (over, 0.0))[0]
            steps.setdefault(c["experiment"], []).append(max(0.0, c["seconds"] - fixed) / c["rows"])
    fixed = []
    for p in glob.glob(os.path.join(bench_dir, "dataset", "**", "*.tsv"), recursive=True):
        s = _bench_seconds(p)
        try:
            name, rows = dataset_rows(p[:-len(".tsv")])
        except ValueError:
            continue
        if s is not None:
            fixed.append(max(0.0, s - rows * row_seconds(name)))
    return {
        "cell_overhead_s": over,
        "cell_overhead_src": f"measured, median of {len(thr)} cells" if thr else "default",
        "group_cell_s": statistics.median(extra) if extra else DEFAULT_GROUP_CELL_S,
        "group_cell_src": f"measured, median of {len(extra)} groups" if extra else "default",
        "steps_row_s": {e: statistics.median(v) for e, v in steps.items()},
        "dataset_s": statistics.median(fixed) if fixed else DEFAULT_DATASET_S,
        "dataset_src": f"measured, median of {len(fixed)} datasets" if fixed else "default",
    }


def steps_cost(cfg: dict, exp: str, ov: dict) -> tuple[float, float, str]:
    """(fixed seconds, seconds per row, source) of a steps cell of `exp`, the mean over its
    builds (each has as many cells): the study's committed fit (its STEPS_FIT) where there is one, the
    per-row rate measured on this host's own cells where they ran, else the default."""
    committed = registry.steps_fits()
    fits = [committed.get((exp, b)) for b in plan.builds_of(cfg, exp)]
    measured = ov["steps_row_s"].get(exp)
    if fits and all(fits):
        fixed = statistics.fmean(f[0] for f in fits)
        if measured is not None:
            return fixed, measured, "measured on this host's cells beyond the fit's fixed part"
        return fixed, statistics.fmean(f[1] for f in fits), "bench/steps_rate.py fit (docs/benchmarks.md)"
    if measured is not None:
        return ov["cell_overhead_s"], measured, "measured on this host's cells"
    return ov["cell_overhead_s"], DEFAULT_STEPS_ROW_S, "default"


def _dir_bytes(path: str) -> int:
    total = 0
    for dp, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dp, f)).st_size
            except OSError:
                pass
    return total


def cell_bytes(raw: str = RAW, sample: int = 40) -> tuple[int, str]:
    dirs = sorted(glob.glob(os.path.join(raw, "*", "*", "*")))[:sample]
    sizes = [_dir_bytes(d) for d in dirs if os.path.isdir(d)]
    return (int(statistics.median(sizes)), f"measured, median of {len(sizes)} cells") if sizes \
        else (DEFAULT_CELL_BYTES, "default")


def estimate(cfg: dict, lock: dict, bench_dir: str = BENCH, raw: str = RAW, root: str = ".",
             topo=None, offers: bool = True) -> dict:
    """Per experiment and in total: cells, measurement seconds, overhead seconds,
    seconds still to go (cells not yet measured), disk bytes; and the wall time on the
    lanes of `placement.lanes` on `topo` (None: this host), harness.plan.schedule."""
    ov = overheads(os.path.join(root, bench_dir), os.path.join(root, raw))
    cb, cb_src = cell_bytes(os.path.join(root, raw))
    sb = cfg["sysbench"]
    rows = []
    for exp, spec in plan.experiments(cfg).items():
        # first look: blocks 1..repetitions.min (every claim decided at it); worst case:
        # every block up to max (undecided at every look). Still to run: of the first look's blocks.
        lo, hi, _ = plan.repetition_bounds(spec)
        dirs = plan.cells(cfg, lock, exp, raw=os.path.join(root, raw), blocks=lo)
        n, n_max = len(dirs), len(plan.cell_names(cfg, lock, exp, blocks=hi))
        # to do: every cell not measured with the settings this profile plans (its digest:
        # harness.plan.reuse), another profile's cell at the same path included
        todo = len(reuse.todo(cfg, lock, exp, dirs))
        if kinds.KINDS[spec["kind"]].SYSBENCH:
            per = float(sb["warmup_s"]) + float(sb["duration_s"])
            over = ov["cell_overhead_s"] + preload_seconds(spec)  # measured overheads leave theirs out
            if plan.grouped(cfg, exp):  # g cells on one server start: one start, g-1 further cells
                g = len(spec["users"])
                over = (over + (g - 1) * ov["group_cell_s"]) / g
        else:
            per = 0.0  # rows at the rate measured on smaller runs: an extrapolation, linear in rows
            fixed, row_s, _ = steps_cost(cfg, exp, ov)
            over = fixed + int(spec.get("rows") or 0) * row_s
        rows.append({"experiment": exp, "study": spec["study"], "kind": spec["kind"],
                     "cells": n, "cells_max": n_max, "blocks": [lo, hi], "todo": todo, "per_cell_s": per,
                     **plan.block_counts(cfg, lock, exp),
                     "looks": repetitions.schedule(spec["repetitions"]),
                     "measure_s": n * per, "overhead_s": n * over,
                     "total_s": n * (per + over), "worst_s": n_max * (per + over), "todo_s": todo * (per + over),
                     "disk_bytes": n * cb, "disk_max_bytes": n_max * cb})
    needed = plan.datasets_needed(cfg, lock)
    ds_todo = [d for d in needed if not os.path.isdir(os.path.join(root, d))]
    ds_s = sum(dataset_seconds(d, ov) for d in needed)
    ds_todo_s = sum(dataset_seconds(d, ov) for d in ds_todo)
    ds_bytes = 0
    for exp, spec in plan.experiments(cfg).items():
        key = datasets.scale_key(spec) if kinds.KINDS[spec["kind"]].DATASET else None
        if key:
            tables = max(spec.get("tables") or [1])
            ds_bytes += int(spec.get(key) or 0) * tables * ROW_BYTES * len(plan.builds_of(cfg, exp))
    ds_bytes += len(needed) * DATADIR_BYTES
    lanes = _lanes(cfg, lock, rows, topo, [dataset_seconds(d, ov) for d in needed], offers)
    return {"profile": cfg.get("profile"), "rows": rows, "overheads": ov, "cell_bytes_src": cb_src,
            **lanes,
            "datasets": len(needed), "datasets_todo": len(ds_todo),
            "dataset_s": ds_s, "dataset_todo_s": ds_todo_s,
            "dataset_bytes": ds_bytes,
            "total_s": sum(r["total_s"] for r in rows) + ds_s,
            "worst_s": sum(r["worst_s"] for r in rows) + ds_s,
            "todo_s": sum(r["todo_s"] for r in rows) + ds_todo_s,
            "measure_s": sum(r["measure_s"] for r in rows),
            "disk_bytes": sum(r["disk_bytes"] for r in rows) + ds_bytes}


def _lanes(cfg, lock, rows, topo, ds, offers: bool = True) -> dict:
    """The lanes chosen for this profile and the sweep's wall time on them (expected, worst);
    with `offers`, the faster shared-L3 cut not taken (schedule.shared_l3)."""
    from harness.plan import schedule
    from harness.measure.topology import Topology
    topo = topo if topo is not None else Topology.live()
    lanes = schedule.choose(cfg, lock, rows, topo, ds)
    wall = schedule.wall_time(cfg, lock, rows, lanes, ds, worst=False)
    return {"lanes": lanes.to_dict(), "lanes_obj": lanes, "wall_s": wall,
            "wall_worst_s": schedule.wall_time(cfg, lock, rows, lanes, ds, worst=True),
            "shared_l3": schedule.shared_l3(cfg, lock, rows, topo, ds, lanes, wall) if offers else None,
            "assumptions": schedule.ASSUMPTIONS}


def block_seconds(row: dict, worst: bool = False) -> list[float]:
    """The seconds of each of an experiment's blocks 1..n (n: repetitions.min, or max for the
    worst case): blocks 1..repetitions.figures hold every read cell (`cells_block`), later
    ones only the cells claims read (`cells_late`; none when no claim reads it, so those
    blocks are not run). Every cell of an experiment costs alike (the row's total over its
    cells); a row without per-block counts has blocks alike."""
    n = row["blocks"][1 if worst else 0]
    total = row["worst_s" if worst else "total_s"]
    if not n or total <= 0:
        return []
    if "cells_block" not in row:
        return [total / n] * n
    fig = min(n, row["figures"])
    sizes = [row["cells_block"]] * fig + [row["cells_late"]] * (n - fig)
    cells = sum(sizes)
    return [total * k / cells for k in sizes if k] if cells else []


def phases(row: dict, worst: bool = False) -> list[list[float]]:
    """An experiment's blocks (block_seconds) cut at its looks: the expected case is one
    phase, blocks 1..min; the worst case one phase per look (row `looks`: the block counts
    looked at; a row without them: one phase)."""
    blocks = block_seconds(row, worst)
    marks = [m for m in row.get("looks") or [] if m < len(blocks)] if worst else []
    out, first = [], 0
    for m in marks + [len(blocks)]:
        if m > first:
            out.append(blocks[first:m])
            first = m
    return out


def on_nodes(est: dict, nodes: int, worst: bool = False) -> float:
    """The wall-clock seconds of the sweep on `nodes` identical nodes of a cluster
    (profiles/slurm): each block is one job of its own cells' time (block_seconds: the
    blocks after repetitions.figures hold fewer cells); the blocks between two looks of an
    experiment run side by side, as many as nodes are free, and those after a look wait
    until every block before it is done (phases); experiments side by side. A free node
    takes the longest waiting block of the ready experiment with the most work left.
    Datasets first, spread over the nodes. Expected (repetitions.min blocks) or worst case
    (max blocks)."""
    if nodes < 1:
        raise ValueError("nodes: at least 1")
    left = {r["experiment"]: [sorted(p, reverse=True) for p in ph]
            for r in est["rows"] if (ph := phases(r, worst))}
    start = est["dataset_s"] / min(nodes, max(1, est["datasets"]))
    free = [start] * nodes  # when each node is next free
    ready = {x: start for x in left}  # when the experiment's current phase may start
    done = {x: start for x in left}   # when the blocks of its current phase launched so far end
    end = start
    while left:
        i = min(range(nodes), key=free.__getitem__)
        t = max(free[i], min(ready.values()))
        x = max((x for x in left if ready[x] <= t), key=lambda x: sum(map(sum, left[x])))
        free[i] = end_x = t + left[x][0].pop(0)
        done[x] = max(done[x], end_x)
        end = max(end, end_x)
        if not left[x][0]:  # the phase's last block launched: the next waits for the look
            left[x].pop(0)
            ready[x] = done[x]
            if not left[x]:
                del left[x], ready[x]
    return end


def expected_with_looks(est: dict, go_on: dict) -> float:
    """One cell at a time, the expected seconds counting the looks: each experiment's blocks
    of its first look, and those of a later look times the chance it is still undecided then
    (go_on: harness.plan.odds.go_on; an experiment read only by checks and rankings stops at
    its first look, one a ratio claim without a published figure reads runs every look);
    datasets once."""
    total = est["dataset_s"]
    for r in est["rows"]:
        on = go_on.get(r["experiment"]) or []
        for k, blocks in enumerate(phases(r, worst=True)):
            total += sum(blocks) * (1.0 if k == 0 else on[k - 1] if k - 1 < len(on) else 0.0)
    return total


def hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def size(b: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if b < 1000 or unit == "TB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1000
    return f"{b} B"


def render(est: dict) -> str:
    ov = est["overheads"]
    lines = [f"estimate for profile {est['profile']}: cells x (warm-up + duration) x blocks "
             f"+ {ov['cell_overhead_s']:.1f} s per cell ({ov['cell_overhead_src']}"
             f"; its tables read into memory at the dataset's rate"
             f"; a group of g users on one "
             f"server: that + (g-1) x {ov['group_cell_s']:.1f} s, {ov['group_cell_src']}) "
             f"+ {ov['dataset_s']:.1f} s per dataset ({ov['dataset_src']}) and its rows; "
             f"steps cells: a fixed part and their rows at a rate (this host's runs, else bench/steps_rate.py's fit); "
             f"first look: repetitions.min blocks (every claim decided at its first look; `./artifact plan` gives "
             f"the time expected with the later looks, by each claim's odds), worst case: max blocks",
             f"  {'experiment':<22}{'blocks':>7}{'cells':>6}{'to do':>7}{'per cell':>10}{'measure':>10}"
             f"{'1st look':>10}{'worst':>10}"]
    for r in est["rows"]:
        lo, hi = r["blocks"]
        lines.append(f"  {r['experiment']:<22}{lo if lo == hi else f'{lo}-{hi}':>7}{r['cells']:>6}{r['todo']:>7}"
                     f"{r['per_cell_s']:>9.0f}s{hms(r['measure_s']):>10}{hms(r['total_s']):>10}"
                     f"{hms(r['worst_s']):>10}")
    lines.append(f"  {'datasets':<22}{'':>7}{est['datasets']:>6}{est['datasets_todo']:>7}{'':>10}{'':>10}"
                 f"{hms(est['dataset_s']):>10}{hms(est['dataset_s']):>10}")
    lines.append(f"  one cell at a time: first look {hms(est['total_s'])}, worst case {hms(est['worst_s'])} "
                 f"(measurement {hms(est['measure_s'])} at the first look); "
                 f"still to run {hms(est['todo_s'])}; disk about {size(est['disk_bytes'])} "
                 f"(raw cells: {est['cell_bytes_src']}; datasets from their rows)")
    ln = est["lanes"]
    lines.append(f"  on {ln['count']} lane{'s' if ln['count'] != 1 else ''} of {ln['size']} cores "
                 f"(placement.lanes){' oversubscribed' if ln['oversubscribed'] else ''}: first look "
                 f"{hms(est['wall_s'])}, worst case {hms(est['wall_worst_s'])} ({est['assumptions']})")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness estimate", description=__doc__.splitlines()[0])
    ap.add_argument("--configfile", nargs="*", default=[],
                    help="profile(s) applied on top of config/default.yaml, as given to snakemake")
    ap.add_argument("--root", default=".", help="the repository (benchmarks/, data/raw/)")
    ap.add_argument("--json", action="store_true", help="print the estimate as JSON")
    a = ap.parse_args(argv)
    for f in a.configfile:
        if not os.path.exists(f):
            ap.error(f"--configfile {f}: not found")
    try:
        cfg = load_profile(a.configfile, Path(a.root))
    except config.ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    lock = builds.load_lock(paths.LOCK)
    est = estimate(cfg, lock, root=a.root)
    est.pop("lanes_obj", None)
    print(json.dumps(est, indent=1, default=str) if a.json else render(est))
    return 0


def run_lanes(cfg: dict, lock: dict):
    """The lanes a run's measurement jobs hold on this host: `placement.lanes` N, or (auto)
    the estimate's choice (harness.plan.schedule.choose)."""
    from harness.plan import schedule
    from harness.measure.topology import Topology
    if schedule.lanes_of(cfg) != "auto":
        return schedule.choose(cfg, lock, [], Topology.live(), [])
    return estimate(cfg, lock, offers=False)["lanes_obj"]
