"""What a finished pipeline run took on this host, kept per profile.

At the end of a successful run (Snakemake's onsuccess) the pipeline writes
logs/runs/<profile>.json: the host's CPU count, the invocation's wall time, how
many of the profile's cells this invocation measured (all of them: a run from
scratch, whose wall time is the profile's time on this host), and per experiment
the measured seconds (the Snakemake benchmark files of its planned cells) and the
disk of its raw cells, and the estimate printed before it started. scripts/time-table.py renders these records, beside the
estimates, as the README's time table: measured where a profile was run here,
never typed.
"""
from __future__ import annotations

import datetime
import glob
import json
import os
from pathlib import Path

from harness import atomic

from harness.plan import estimate as E

from harness.plan import blocks
from harness.plan import cells as plan

RUNS = "logs/runs"


def _bench(root: str, *parts: str) -> float | None:
    return E._bench_seconds(os.path.join(root, E.BENCH, *parts) + ".tsv")


def summarize(cfg: dict, lock: dict, root: str = ".") -> dict:
    """Per experiment of the profile: planned cells, cells with a benchmark file,
    their summed seconds, raw-cell disk; the same for its datasets."""
    exps = {}
    for exp, spec in plan.experiments(cfg).items():
        study = spec["study"]
        # the blocks this run reached: min, or more where a look found the experiment undecided
        names = plan.cell_names(cfg, lock, exp, blocks=blocks.blocks_reached(cfg, lock, exp,
                                                                            os.path.join(root, E.RAW)))
        groups = list(dict.fromkeys(plan.group_of(cfg, exp, n) for n in names))  # a group's job: its cells'
        secs = [s for n in names if (s := _bench(root, "run_cell", study, exp, n)) is not None]
        if plan.grouped(cfg, exp):
            secs = [s for g in groups if (s := _bench(root, "run_group", study, exp, g)) is not None]
        exps[exp] = {"study": study, "kind": spec["kind"], "cells": len(names),
                     "benchmarked": len(secs) * len(names) // max(1, len(groups)),
                     "measured_s": round(sum(secs), 1),
                     "disk_bytes": sum(E._dir_bytes(os.path.join(root, E.RAW, study, exp, n)) for n in names)}
    ds = plan.datasets_needed(cfg, lock)
    ds_secs = [s for d in ds if (s := _bench(root, "dataset", *Path(d).parts[2:])) is not None]
    return {"experiments": exps,
            "datasets": {"count": len(ds), "benchmarked": len(ds_secs), "measured_s": round(sum(ds_secs), 1),
                         "disk_bytes": sum(E._dir_bytes(os.path.join(root, d)) for d in ds)}}


def record(cfg: dict, lock: dict, started: float, finished: float, measured_now: int,
           datasets_now: int = 0, estimate_s: float | None = None, root: str = ".") -> Path | None:
    """Write logs/runs/<profile>.json for a run that just succeeded. `measured_now` and
    `datasets_now`: cells and datasets this invocation made; `estimate_s`: what it printed
    before starting. A run that measured nothing (a replot-like rerun) writes nothing, and a
    resumed run never replaces the record of a run from scratch (its wall time is the
    profile's time on this host)."""
    if measured_now == 0:
        return None
    s = summarize(cfg, lock, root)
    total_cells = sum(e["cells"] for e in s["experiments"].values())
    scratch = measured_now == total_cells > 0 and datasets_now == s["datasets"]["count"]
    path = Path(root) / RUNS / f"{cfg.get('profile')}.json"
    if not scratch and load(root).get(cfg.get("profile"), {}).get("from_scratch"):
        return None
    out = {"profile": cfg.get("profile"), "host_cpus": (cfg.get("host") or {}).get("cpus"),
           "backend": cfg.get("backend"),
           "date": datetime.datetime.fromtimestamp(finished, datetime.timezone.utc).strftime("%Y-%m-%d"),
           "wall_s": round(finished - started, 1), "estimate_s": None if estimate_s is None else round(estimate_s, 1),
           "cells": total_cells, "measured_now": measured_now, "datasets_now": datasets_now,
           "from_scratch": scratch, **s}
    atomic.write_text(path, json.dumps(out, indent=1) + "\n")
    return path


def cells_newer_than(t: float, root: str = ".") -> int:
    """How many cells this run measured: its run_cell benchmark files, and the cells of
    its run_group files (a group's job measures several)."""
    n = newer_than("run_cell/*/*/*.tsv", t, root)
    for p in glob.glob(os.path.join(root, E.BENCH, "run_group", "*", "*", "*.tsv")):
        if os.path.getmtime(p) >= t:
            parts = Path(p).parts
            n += len(E.group_members(os.path.join(root, E.RAW), parts[-3], parts[-2], Path(p).stem)) or 1
    return n


def newer_than(pattern: str, t: float, root: str = ".") -> int:
    """How many benchmark files matching `pattern` (under benchmarks/) this run wrote."""
    return sum(1 for p in glob.glob(os.path.join(root, E.BENCH, pattern), recursive=True)
               if os.path.getmtime(p) >= t)


BEFORE = ".before"  # logs/runs/<profile>.before.json: a record kept from before a change


def load(root: str = ".", before: bool = False) -> dict:
    """profile -> its last recorded run; with `before`, the records kept as
    <profile>.before.json (a run's record renamed so, to compare a change on the same host:
    scripts/time-table.py shows both)."""
    out = {}
    for p in sorted(Path(root, RUNS).glob("*.json")):
        if p.stem.endswith(BEFORE) != before:
            continue
        try:
            r = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and r.get("profile") and isinstance(r.get("experiments"), dict) \
                and isinstance(r.get("datasets"), dict) and "wall_s" in r:
            out[r["profile"]] = r
    return out
