"""What a finished pipeline run took on this host, kept per profile.

At the end of a successful run (Snakemake's onsuccess) the pipeline writes
logs/runs/<profile>.json: the host's CPU count, the invocation's wall time, how
many of the profile's cells this invocation measured (all of them: a run from
scratch, whose wall time is the profile's time on this host), and per experiment
the measured seconds (the Snakemake benchmark files of its planned cells) and the
disk of its raw cells. scripts/time-table.py renders these records, beside the
estimates, as the README's time table: measured where a profile was run here,
never typed.
"""
from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from . import atomic, estimate as E, plan

RUNS = "logs/runs"


def _bench(root: str, *parts: str) -> float | None:
    return E._bench_seconds(os.path.join(root, E.BENCH, *parts) + ".tsv")


def summarize(cfg: dict, lock: dict, root: str = ".") -> dict:
    """Per experiment of the profile: planned cells, cells with a benchmark file,
    their summed seconds, raw-cell disk; the same for its datasets."""
    exps = {}
    for exp, spec in plan.experiments(cfg).items():
        study = spec.get("study", "")
        names = plan.cell_names(cfg, lock, exp)
        secs = [s for n in names if (s := _bench(root, "run_cell", study, exp, n)) is not None]
        exps[exp] = {"study": study, "kind": spec["kind"], "cells": len(names), "benchmarked": len(secs),
                     "measured_s": round(sum(secs), 1),
                     "disk_bytes": sum(E._dir_bytes(os.path.join(root, E.RAW, study, exp, n)) for n in names)}
    ds = plan.datasets_needed(cfg, lock)
    ds_secs = [s for d in ds if (s := _bench(root, "dataset", *Path(d).parts[2:])) is not None]
    return {"experiments": exps,
            "datasets": {"count": len(ds), "benchmarked": len(ds_secs), "measured_s": round(sum(ds_secs), 1),
                         "disk_bytes": sum(E._dir_bytes(os.path.join(root, d)) for d in ds)}}


def record(cfg: dict, lock: dict, started: float, finished: float, measured_now: int,
           root: str = ".") -> Path:
    """Write logs/runs/<profile>.json for a run that just succeeded. `measured_now`: cells
    this invocation measured (run_cell jobs it ran)."""
    s = summarize(cfg, lock, root)
    total_cells = sum(e["cells"] for e in s["experiments"].values())
    out = {"profile": cfg.get("profile"), "host_cpus": (cfg.get("host") or {}).get("cpus"),
           "backend": cfg.get("backend"),
           "date": datetime.datetime.fromtimestamp(finished, datetime.timezone.utc).strftime("%Y-%m-%d"),
           "wall_s": round(finished - started, 1), "cells": total_cells, "measured_now": measured_now,
           "from_scratch": measured_now == total_cells and total_cells > 0, **s}
    path = Path(root) / RUNS / f"{out['profile']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(out, indent=1) + "\n")
    return path


def load(root: str = ".") -> dict:
    """profile -> its last recorded run."""
    out = {}
    for p in sorted(Path(root, RUNS).glob("*.json")):
        try:
            r = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and r.get("profile"):
            out[r["profile"]] = r
    return out
