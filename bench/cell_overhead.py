"""Per-cell overhead beyond warm-up + measured window, from any run's files: what a
throughput cell costs besides the seconds it measures. Prints figures; asserts nothing.

Two views, per backend:
- job: the wall time of the cell's job (its Snakemake benchmark file,
  benchmarks/run_cell/<study>/<experiment>/<cell>.tsv) minus its windows. It includes
  starting Python and waiting for the host's measurement lock (another measurement on
  the host: the wait is not the cell's), so on a shared host it is an upper bound;
- frame: the manifest's own `timing` (lock taken → manifest written: `elapsed_s`, else
  `finished` - `started` in whole seconds) minus its windows,
  and where that time goes: `timing.phases` (the datadir copy, server starts to the first
  answer with CPUs checked, stops) in manifests that record them.

The windows are `timing.windows` ([{warmup_s, duration_s}, …]) where the manifest lists
them, else its `warmup_s` + `duration_s` (one window: older manifests).

    python bench/cell_overhead.py [--root .] [--raw data/raw] [--bench benchmarks]
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import glob
import json
import os
import statistics
from pathlib import Path


def windows_s(timing: dict) -> float:
    wins = timing.get("windows") or [{"warmup_s": timing.get("warmup_s") or 0,
                                      "duration_s": timing.get("duration_s") or 0}]
    return sum(float(w.get("warmup_s") or 0) + float(w.get("duration_s") or 0) for w in wins)


def job_seconds(path: str) -> float | None:
    try:
        with open(path, newline="") as f:
            vals = [float(r["s"]) for r in csv.DictReader(f, delimiter="\t") if r.get("s")]
    except (OSError, ValueError, KeyError):
        return None
    return sum(vals) / len(vals) if vals else None


def rows(raw: str, bench: str) -> list[dict]:
    out = []
    for m_path in sorted(glob.glob(os.path.join(raw, "*", "*", "*", "manifest.json"))):
        try:
            m = json.loads(Path(m_path).read_text())
        except (OSError, ValueError):
            continue
        if m.get("kind") != "throughput":
            continue
        t = m.get("timing") or {}
        win = windows_s(t)
        cell = Path(m_path).parent
        study, exp = cell.parts[-3], cell.parts[-2]
        job = job_seconds(os.path.join(bench, "run_cell", study, exp, f"{cell.name}.tsv"))
        try:
            frame = float(t["elapsed_s"]) if "elapsed_s" in t else (dt.datetime.fromisoformat(t["finished"]) - dt.datetime.fromisoformat(t["started"])).total_seconds()
        except (KeyError, TypeError, ValueError):
            frame = None
        out.append({"backend": (m.get("placement") or {}).get("backend", "?"), "windows_s": win,
                    "job_over": None if job is None else job - win,
                    "frame_over": None if frame is None else frame - win, "phases": t.get("phases")})
    return out


def _med(vals: list[float]) -> str:
    if not vals:
        return "—"
    q = statistics.quantiles(vals, n=4) if len(vals) > 1 else [vals[0]] * 3
    return f"{statistics.median(vals):5.2f} s (quartiles {q[0]:.2f}-{q[2]:.2f}, {len(vals)} cells)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=".")
    p.add_argument("--raw", default="data/raw")
    p.add_argument("--bench", default="benchmarks")
    a = p.parse_args()
    rs = rows(os.path.join(a.root, a.raw), os.path.join(a.root, a.bench))
    if not rs:
        print(f"no throughput cells under {os.path.join(a.root, a.raw)}")
        return
    for backend in sorted({r["backend"] for r in rs}):
        b = [r for r in rs if r["backend"] == backend]
        print(f"{backend}: {len(b)} throughput cells, windows {_med([r['windows_s'] for r in b])}")
        print(f"  job   (benchmark file - windows; lock waits included): "
              f"{_med([r['job_over'] for r in b if r['job_over'] is not None])}")
        print(f"  frame (manifest started..finished - windows: elapsed_s, else whole seconds): "
              f"{_med([r['frame_over'] for r in b if r['frame_over'] is not None])}")
        ph = [r["phases"] for r in b if r["phases"]]
        if ph:
            parts = [f"{k[:-2]} {statistics.median(x[k] for x in ph):.2f} s"
                     for k in ("copy_s", "start_s", "stop_s")]
            rest = [r["frame_over"] - sum(r["phases"][k] for k in ("copy_s", "start_s", "stop_s"))
                    for r in b if r["phases"] and r["frame_over"] is not None]
            print(f"  phases (median of {len(ph)}): {', '.join(parts)}; the rest (loads, captures, "
                  f"queries, manifest) {statistics.median(rest):.2f} s")
        else:
            print("  phases: not recorded (manifests older than timing.phases)")


if __name__ == "__main__":
    main()
