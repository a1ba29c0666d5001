"""The plan: which cells a resolved profile measures, what each is called, what
it needs, and which cells a build cannot run (listed, never measured as zero).

The Snakemake rules only ask this module; cell naming is the measurement
kind's (harness.measure.kinds), dataset naming the dataset's (harness.measure.datasets).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from harness.measure import datasets


from harness.plan.combos import combos  # noqa: F401  (this module's API: every combination and its reason)

from harness.plan import repetitions

from harness.measure import kinds

from harness import paths


def experiments(cfg: dict) -> dict:
    """The enabled experiments of a resolved profile, by name."""
    return {k: v for k, v in cfg["experiments"].items() if v["enabled"]}


def builds_of(cfg: dict, exp: str) -> list[str]:
    return cfg["experiments"][exp].get("builds") or cfg["builds"]


def kind_of(cfg: dict, exp: str):
    return kinds.KINDS[cfg["experiments"][exp]["kind"]]


def repetition_bounds(spec: dict) -> tuple[int, int, int]:
    """(min, max, looks) of an experiment's `repetitions`: the mapping {min, max, looks},
    or an int n, which is {min: n, max: n, looks: 1} (every block planned from the start).
    A repetition is a block (harness.plan.blocks); the pipeline plans blocks 1..min and
    adds blocks up to the next look of harness.analysis.intervals.look_schedule while
    the experiment is not decided."""
    return repetitions.bounds(spec["repetitions"])


def cell_names(cfg: dict, lock: dict, exp: str, rep: int | None = None,
               blocks: int | None = None) -> list[str]:
    """Cell names of an experiment: of repetition `rep` if given, else of repetitions
    1..`blocks` (default: the most the experiment may run, its max); each block's
    cells are read_combos(rep) (blocks after figure_blocks: only what claims read)."""
    spec = cfg["experiments"][exp]
    kind = kinds.KINDS[spec["kind"]]
    reps = [rep] if rep is not None else range(1, (blocks or repetitions.bounds(spec["repetitions"])[1]) + 1)
    return [kind.name({**d, "rep": r}) for r in reps for d in read_combos(cfg, lock, exp, r)]


def figure_blocks(spec: dict) -> int:
    """F: the blocks that measure every read cell (figures' too): `repetitions.figures`
    if set, else its min (the first look). Later blocks measure only what claims read."""
    return repetitions.figures(spec["repetitions"])


_READ: dict = {}


def read_combos(cfg: dict, lock: dict, exp: str, rep: int | None = None) -> list[dict]:
    """The cells (without repetition) of an experiment that run and that a figure or a
    claim this host can decide reads (harness.plan.reads); the others are not planned.
    Of block `rep` > figure_blocks: only the cells a measurable claim reads."""
    late = rep is not None and rep > figure_blocks(cfg["experiments"][exp])
    key = (id(cfg), id(cfg.get("experiments")), id(lock), exp, late)
    hit = _READ.get(key)
    if hit is not None and hit[0] is cfg:
        return hit[1]
    from harness.plan import reads
    who = reads.readers_cached(cfg, lock)
    sels = who["claim_selectors" if late else "selectors"].get(exp, [])
    out = [d for d, reason in combos(cfg, lock, exp) if reason is None and reads.kept(sels, d)]
    _READ[key] = (cfg, out)
    return out


def claim_read(cfg: dict, lock: dict, exp: str) -> bool:
    """Whether a measurable claim reads any cell of the experiment (else its blocks after
    figure_blocks are empty and never planned)."""
    return bool(read_combos(cfg, lock, exp, figure_blocks(cfg["experiments"][exp]) + 1))


def block_counts(cfg: dict, lock: dict, exp: str) -> dict:
    """{figures: F, cells_block: read cells of a block 1..F, cells_late: of a later block}."""
    fig = figure_blocks(cfg["experiments"][exp])
    return {"figures": fig, "cells_block": len(read_combos(cfg, lock, exp, 1)),
            "cells_late": len(read_combos(cfg, lock, exp, fig + 1))}


def dropped_combos(cfg: dict, lock: dict, exp: str) -> list[dict]:
    """The cells of an experiment that could run but nobody reads (not planned)."""
    read = read_combos(cfg, lock, exp)
    return [d for d, reason in combos(cfg, lock, exp) if reason is None and d not in read]


def grouped(cfg: dict, exp: str) -> bool:
    """Whether the experiment's cells that differ only in their users (its kind's GROUP_BY)
    run as groups, one server start each, the users swept inside it in the block's seeded
    order (`sysbench.users_on_one_server`: false by default, true in smoke; a kind without GROUP_BY, or an
    experiment with one users value, has groups of one cell)."""
    spec = cfg["experiments"][exp]
    by = getattr(kinds.KINDS[spec["kind"]], "GROUP_BY", None)
    # a resolved config recorded before the key existed (a replot of older cells): its cells
    # ran each on its own server
    return bool(by) and bool(cfg["sysbench"].get("users_on_one_server")) and len(spec.get(by) or []) > 1


def group_of(cfg: dict, exp: str, name: str) -> str:
    """The group a cell runs in: its kind's group name, or the cell's own name when the
    experiment is not grouped."""
    if not grouped(cfg, exp):
        return name
    kind = kind_of(cfg, exp)
    return kind.group_name(kind.parse(name))


def group_cells(cfg: dict, exp: str, head: str, rep: int) -> list[str]:
    """The cell names of a group of a grouped experiment, from its name without users
    (`head`, the rule's wildcard) and its repetition: one per users value, in the
    experiment's order."""
    spec = cfg["experiments"][exp]
    return [f"{head}_u{u}_r{rep}" for u in spec[kind_of(cfg, exp).GROUP_BY]]


def cell_dir(cfg: dict, exp: str, name: str, raw: str = "data/raw") -> str:
    return f"{raw}/{cfg['experiments'][exp]['study']}/{exp}/{name}"


def cells(cfg: dict, lock: dict, exp: str, rep: int | None = None, raw: str = "data/raw",
          blocks: int | None = None) -> list[str]:
    """Output directories of the measured cells of an experiment (of one repetition if
    given, else of repetitions 1..blocks, default its max)."""
    return [cell_dir(cfg, exp, n, raw) for n in cell_names(cfg, lock, exp, rep, blocks)]


def unsupported(cfg: dict, lock: dict) -> list[list[str]]:
    """[experiment, build, engine(s), variant, reason] of every cell a build cannot run."""
    out = []
    for exp in experiments(cfg):
        for d, reason in combos(cfg, lock, exp):
            row = [exp, d["build"], d.get("engine", "+".join(cfg["experiments"][exp]["engines"])),
                   d["variant"], reason]
            if reason is not None and row not in out:  # once per combination, not per users/cores
                out.append(row)
    return out


def parse_cell(cfg: dict, exp: str, name: str) -> dict:
    return kind_of(cfg, exp).parse(name)


def dataset_path(cfg: dict, exp: str, name: str, root: str = "data/datasets") -> str | None:
    """The prepared dataset a cell copies its datadir from (None: the empty template)."""
    spec = cfg["experiments"][exp]
    d = kind_of(cfg, exp).parse(name)
    if not kind_of(cfg, exp).DATASET:
        return None
    dkind, key = datasets.for_cell(spec, d)
    return f"{root}/{d['build']}/{dkind}/{key}"


def corpus_path(spec: dict, root: str = "data/corpus") -> str:
    """The corpus directory an experiment's dataset loads (A1's fulltext: its study's
    dataset module, from the registry, names it)."""
    return f"{root}/{datasets.all_datasets()[spec['dataset']].corpus_key(spec['corpus'])}"


def cell_spec(cfg: dict, exp: str) -> str:
    """What a measured cell depends on besides its name, as JSON (a Snakemake
    param: a change of it re-measures that experiment's cells, nothing else)."""
    spec = cfg["experiments"][exp]
    run = {k: spec[k] for k in sorted(spec) if k not in ("enabled", "builds", "repetitions")}
    req = {"experiment": exp, "spec": run, "settings": run_settings(cfg)}
    if grouped(cfg, exp):  # only here: a run's other cells keep their recorded params
        req["group_by"] = kind_of(cfg, exp).GROUP_BY
    return json.dumps(req, sort_keys=True)


def run_settings(cfg: dict) -> dict:
    """Run-wide settings a cell depends on: the load driver, placement, backend, server."""
    s = {k: v for k, v in cfg["sysbench"].items() if k != "users_on_one_server"}  # (cell_spec's group_by)
    # placement.lanes says where blocks run side by side, not what a cell measures (a cell's
    # lane goes in its manifest): not a param, so changing it re-measures nothing
    s.update({k: v for k, v in cfg["placement"].items() if k != "lanes"})
    s["backend"] = cfg["backend"]
    s["options"] = cfg["server"]["options"]
    s["startup_timeout_s"] = cfg["server"]["startup_timeout_s"]
    s["shutdown_timeout_s"] = cfg["server"]["shutdown_timeout_s"]
    return s


def datasets_needed(cfg: dict, lock: dict) -> list[str]:
    out = []
    for exp in experiments(cfg):
        for n in cell_names(cfg, lock, exp, rep=1):
            p = dataset_path(cfg, exp, n)
            if p and p not in out:
                out.append(p)
    return out


def paths_exist(items) -> list[str]:
    return [p for p in items if Path(paths.ROOT / p).exists()]


def replot_missing(cfg: dict, lock: dict, exp: str, exists=os.path.isdir, raw: str = "data/raw") -> list[str]:
    """Cells a replot lacks: of blocks 1..min, and of any later block that has some cells
    (blocks after a decided look were never planned: not missing). A block's cells are its
    own (cells of rep r): figure-only cells of blocks after repetitions.figures are never
    planned, so never missing. `exists`: whether a cell is there to read (a replot: on
    disk with the settings the profile plans); `raw`: the host's raw root."""
    lo, hi, _ = repetition_bounds(cfg["experiments"][exp])
    out = []
    for r in range(1, hi + 1):
        block = cells(cfg, lock, exp, r, raw=raw)
        have = [c for c in block if exists(c)]
        if r <= lo or have:
            out += [c for c in block if c not in have]
    return out
