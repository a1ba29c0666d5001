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
    python bench/cell_overhead.py --pairs 5 [--backend docker]

`--pairs N` measures first: N interleaved pairs of the same Point-Selects cell (the
pinned MySQL 5.6.24, InnoDB 1 x 1,000 rows, 2 users, 1 s + 2 s) through
harness.measure.cell.run_cell, one ended as before this change (a clean shutdown),
one as the frame ends it now (killed: its datadir copy is discarded), and prints both
arms' figures from their manifests.
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


def measure_pairs(n: int, backend: str, work: Path) -> dict[str, str]:
    """N pairs of one cell, clean shutdown vs killed, in shuffled order; {arm: raw dir}."""
    import random
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from common import BUILD, pinned_build  # noqa: E402  (bench/common.py: the pinned build)
    from harness.measure import cell, datasets
    from harness.measure.frame import Frame
    from harness.plan import cells as hplan, config
    entry, build_dir, template = pinned_build()
    settings = {**hplan.run_settings(config.with_defaults({})), "backend": backend, "warmup_s": 1, "duration_s": 2}
    ds = work / "datasets" / "InnoDB_t1_n1000"
    datasets.prepare("sbtest", ds.name, name=BUILD, entry=entry, build_dir=build_dir, template=template,
                     out=ds, settings=settings)
    spec = {"study": "A3", "kind": "throughput", "workload": "point_select", "dataset": "sbtest",
            "engines": ["InnoDB"], "tables": [1], "table_size": 1000, "cores": [1], "users": [2], "variants": {}}
    killed = Frame.finish

    def clean(self):  # the frame's end before this change: a clean shutdown
        self._stop(failed=False)
    rng = random.Random(1)
    for r in range(1, n + 1):
        arms = ["clean", "killed"]
        rng.shuffle(arms)
        for arm in arms:
            Frame.finish = clean if arm == "clean" else killed
            out = work / arm / "A3" / "point_select" / f"{BUILD}_InnoDB_base_t1_c1_u2_r{r}"
            try:
                cell.run_cell(experiment="point_select", spec=spec, cell=out.name, entry=entry,
                              build_dir=build_dir, source=ds, settings=settings, out=out)
            finally:
                Frame.finish = killed
    return {arm: str(work / arm) for arm in ("clean", "killed")}


def report(rs: list[dict]) -> None:
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=".")
    p.add_argument("--raw", default="data/raw")
    p.add_argument("--bench", default="benchmarks")
    p.add_argument("--pairs", type=int, default=0, help="measure N pairs first (clean shutdown vs killed)")
    p.add_argument("--backend", default="docker")
    a = p.parse_args()
    if a.pairs:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="cell-overhead-", dir=".") as work:
            for arm, raw in measure_pairs(a.pairs, a.backend, Path(work).resolve()).items():
                print(f"-- cells ended {'by a clean shutdown (before)' if arm == 'clean' else 'killed (now)'}:")
                report(rows(raw, os.path.join(work, "no-benchmarks")))
        return
    rs = rows(os.path.join(a.root, a.raw), os.path.join(a.root, a.bench))
    if not rs:
        print(f"no throughput cells under {os.path.join(a.root, a.raw)}")
        return
    report(rs)


if __name__ == "__main__":
    main()
