"""Per-cell overhead beyond warm-up + measured window, from any run's files: what a
throughput cell costs besides the seconds it measures. Prints figures; asserts nothing.

Two views, per backend:
- job: the wall time of the cell's job (its Snakemake benchmark file,
  benchmarks/run_cell/<study>/<experiment>/<cell>.tsv, or its group's,
  benchmarks/run_group/<study>/<experiment>/<group>.tsv) minus its windows. It includes
  starting Python and waiting for the host's measurement lock (another measurement on
  the host: the wait is not the cell's), so on a shared host it is an upper bound;
- frame: the manifest's own `timing` (lock taken → manifest written: `elapsed_s`, else
  `finished` - `started` in whole seconds) minus its windows,
  and where that time goes: `timing.phases` (the datadir copy, server starts to the first
  answer with CPUs checked, stops) in manifests that record them.

The windows are `timing.windows` ([{warmup_s, duration_s}, …]) where the manifest lists
them, else its `warmup_s` + `duration_s` (one window: older manifests).

    python bench/cell_overhead.py [--root .] [--raw data/raw] [--bench benchmarks]
    python bench/cell_overhead.py --pairs 5 [--backend docker] [--interleave]

`--pairs N` measures first: N rounds of the same Point-Selects setting (the pinned
MySQL 5.6.24, InnoDB 1 x 1,000 rows, 1 s + 2 s) at users 1, 2, 4, 8, once with each
cell on a fresh server and once as a group on one server start (harness.measure.cell.
run_cells; the arms and users in a seeded random order), prints both arms' overhead
from their manifests, and the interval of the group / fresh server-side QPS over the
rounds (each round's mean log ratio over its users; the round is the unit because a
round's group cells share one server start): the group's cells must measure what
fresh ones do.

`--interleave` (with --pairs) pairs the arms seconds apart instead of a group apart: a
VM's speed drifts over minutes, which the pairs' ratio then reads as a difference. Each
group cell is measured right before or after (a coin flip) its fresh twin, which starts
a server of its own while the group's server idles (its background threads cost the
fresh cell little). The fresh twins are named repetition r + 100 and measured with the
seed 100 lower, so both run the same query sequence.

A group's cells share its time: per cell, (the group's job or frame time - its
windows) / its cells (the manifest's `group` names them).
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from harness.measure import throughput  # noqa: E402  (its group naming)
from harness.plan import estimate  # noqa: E402  (benchmark files: its _bench_seconds)


windows_s = estimate.windows_s


def rows(raw: str, bench: str) -> list[dict]:
    """One row per throughput cell. A cell measured in a group (one server start for
    several users; its manifest's `group`) shares its group's job and frame time evenly:
    its overhead is (the group's time - the group's windows) / the group's cells."""
    cells = {}
    for m_path in sorted(glob.glob(os.path.join(raw, "*", "*", "*", "manifest.json"))):
        try:
            m = json.loads(Path(m_path).read_text())
        except (OSError, ValueError):
            continue
        if m.get("kind") == "throughput":
            cells[Path(m_path).parent] = m
    out = []
    for cell, m in cells.items():
        study, exp = cell.parts[-3], cell.parts[-2]
        group = m.get("group") or {}
        members = [cell.parent / c for c in group.get("cells", [])] or [cell]
        ms = [cells.get(c) or {} for c in members]
        win = sum(windows_s(x.get("timing") or {}) for x in ms)
        if group:  # the group's job file is named as the kind names the group
            name = throughput.group_name(throughput.parse(m["cell"]))
            job = estimate._bench_seconds(os.path.join(bench, "run_group", study, exp, f"{name}.tsv"))
        else:
            job = estimate._bench_seconds(os.path.join(bench, "run_cell", study, exp, f"{cell.name}.tsv"))
        frames = [_frame_s(x.get("timing") or {}) for x in ms]
        frame = None if None in frames else sum(frames)
        n = len(members)
        out.append({"backend": (m.get("placement") or {}).get("backend", "?"), "windows_s": win / n,
                    "group": n,
                    "job_over": None if job is None else (job - win) / n,
                    "frame_over": None if frame is None else (frame - win) / n,
                    "phases": _shared_phases([x.get("timing") or {} for x in ms])})
    return out


def _shared_phases(timings: list[dict]) -> dict | None:
    """A group's copy, start and stop seconds, shared evenly by its cells."""
    ph = [t.get("phases") for t in timings]
    if not ph or None in ph:
        return None
    return {k: sum(p.get(k, 0) for p in ph) / len(ph) for k in ("copy_s", "start_s", "stop_s")}


def _frame_s(t: dict) -> float | None:
    try:
        return float(t["elapsed_s"]) if "elapsed_s" in t else \
            (dt.datetime.fromisoformat(t["finished"]) - dt.datetime.fromisoformat(t["started"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None


def _med(vals: list[float]) -> str:
    if not vals:
        return "—"
    q = statistics.quantiles(vals, n=4) if len(vals) > 1 else [vals[0]] * 3
    return f"{statistics.median(vals):5.2f} s (quartiles {q[0]:.2f}-{q[2]:.2f}, {len(vals)} cells)"


USERS = [1, 2, 4, 8]


TWIN_REP = 100  # --interleave: a group cell's fresh twin is repetition r + this


def measure_pairs(n: int, backend: str, work: Path, duration: int = 2, warmup: int = 1,
                  interleave: bool = False) -> dict[str, str]:
    """N rounds of the same Point-Selects setting (the pinned MySQL 5.6.24, InnoDB
    1 x 1,000 rows, `warmup` s + `duration` s) at users 1, 2, 4, 8: the four cells
    each on a fresh server (the arm `fresh`), and as one group on one server start
    (`group`, harness.measure.cell.run_cells), the arms and the users in a seeded
    random order per round (the same users order in both arms); {arm: raw dir}."""
    import random
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from common import BUILD, pinned_build, run_settings  # noqa: E402  (bench/common.py)
    from harness.measure import cell, datasets, kinds
    entry, build_dir, template = pinned_build()
    settings = run_settings(backend=backend, warmup_s=warmup, duration_s=duration)
    ds = work / "datasets" / "InnoDB_t1_n1000"
    datasets.prepare("sbtest", ds.name, name=BUILD, entry=entry, build_dir=build_dir, template=template,
                     out=ds, settings=settings)
    spec = {"study": "A3", "kind": "throughput", "workload": "point_select", "dataset": "sbtest",
            "engines": ["InnoDB"], "tables": [1], "table_size": 1000, "cores": [1], "users": USERS,
            "variants": {}}
    rng = random.Random(1)
    kind = kinds.KINDS["throughput"]
    measure = kind.measure
    for r in range(1, n + 1):
        arms, users = ["fresh", "group"], list(USERS)
        rng.shuffle(arms)
        rng.shuffle(users)
        names = [f"{BUILD}_InnoDB_base_t1_c1_u{u}_r{r}" for u in users]
        common = dict(experiment="point_select", spec=spec, entry=entry, build_dir=build_dir, source=ds)
        if interleave:
            twin = {u: f"{BUILD}_InnoDB_base_t1_c1_u{u}_r{r + TWIN_REP}" for u in users}
            fresh_settings = {**settings, "seed": settings["seed"] - TWIN_REP}

            def fresh(u):
                kind.measure = measure  # the twin's own cell measures as usual
                try:
                    cell.run_cell(cell=twin[u], out=work / "fresh" / "A3" / "point_select" / twin[u],
                                  settings=fresh_settings, **common)
                finally:
                    kind.measure = paired

            def paired(fr, spec_, d, values, settings_):
                first = rng.random() < 0.5
                if first:
                    fresh(d["users"])
                part = measure(fr, spec_, d, values, settings_)
                if not first:
                    fresh(d["users"])
                return part
            kind.measure = paired
            try:
                cell.run_cells(cells=names, outs=[work / "group" / "A3" / "point_select" / nm for nm in names],
                               settings=settings, **common)
            finally:
                kind.measure = measure
            continue
        for arm in arms:
            outs = [work / arm / "A3" / "point_select" / nm for nm in names]
            if arm == "group":
                cell.run_cells(cells=names, outs=outs, settings=settings, **common)
            else:
                for nm, out in zip(names, outs):
                    cell.run_cell(cell=nm, out=out, settings=settings, **common)
    return {arm: str(work / arm) for arm in ("fresh", "group")}


def server_qps(cell_dir: Path) -> float:
    """Questions per second of the window, counted by the server (status delta)."""
    delta = {r[0]: float(r[3]) for r in (line.split("\t") for line in
                                         (cell_dir / "status_delta.tsv").read_text().splitlines()[1:])}
    m = json.loads((cell_dir / "manifest.json").read_text())
    return delta["Questions"] / (m["result"]["total_time_s"] or m["timing"]["duration_s"])


def agreement(raws: dict[str, str]):
    """The interval of group / fresh server-side QPS over rounds, printed with the median
    ratio per users value and per position in the group; returned (None with too few
    rounds). The unit is the round, not the (round, users) pair: a round's group cells
    share one server start, so its pairs are not independent (bench/common.py per_start:
    each round's mean log ratio, the exact signed-rank interval over rounds)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import per_start, per_start_text  # noqa: E402  (bench/common.py)
    fresh, group = Path(raws["fresh"]), Path(raws["group"])
    pairs: list[tuple[int, float, float]] = []
    rounds: dict[int, list[tuple[float, float]]] = {}
    positions: dict[int, list[float]] = {}  # the group's k-th cell: 1 = the one that started the server
    for g in sorted(group.glob("*/*/*/manifest.json")):
        f = fresh / g.parent.relative_to(group)
        if not (f / "manifest.json").exists():  # --interleave: the fresh twin, repetition r + TWIN_REP
            head, rep = f.name.rsplit("_r", 1)
            f = f.with_name(f"{head}_r{int(rep) + TWIN_REP}")
        if (f / "manifest.json").exists():
            m = json.loads(g.read_text())
            pairs.append((m["factors"]["users"], server_qps(g.parent), server_qps(f)))
            positions.setdefault(m["group"]["position"], []).append(pairs[-1][1] / pairs[-1][2])
            rounds.setdefault(int(g.parent.name.rsplit("_r", 1)[1]), []).append(pairs[-1][1:])
    ci, comp = per_start(rounds)
    if ci is None:
        print(f"group / fresh: {len(rounds)} rounds ({len(pairs)} pairs), too few for an interval (6 rounds)")
        return None
    inside = 0.97 <= ci.lo and ci.hi <= 1.03
    per = ", ".join(f"users {u}: {statistics.median(a / b for uu, a, b in pairs if uu == u):.3f}"
                    for u in sorted({u for u, _, _ in pairs}))
    print(f"{per_start_text(ci, comp, 'group / fresh server-side QPS')}; "
          f"{'inside' if inside else 'not inside'} [0.97, 1.03]; median per users value: {per}; "
          f"per position in the group (1: the cell that started its server): "
          + ", ".join(f"{k}: {statistics.median(v):.3f}" for k, v in sorted(positions.items())))
    return ci


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
    p.add_argument("--pairs", type=int, default=0,
                   help="measure N rounds first: users 1, 2, 4, 8 on fresh servers vs as one group")
    p.add_argument("--duration", type=int, default=2, help="--pairs: each window's seconds")
    p.add_argument("--warmup", type=int, default=1, help="--pairs: each warm-up's seconds")
    p.add_argument("--backend", default="docker")
    p.add_argument("--interleave", action="store_true",
                   help="--pairs: each group cell right before or after its fresh twin (pairs seconds apart)")
    p.add_argument("--keep", metavar="DIR", help="--pairs: measure into DIR (new) and keep its cells "
                   "(their sysbench per-second reports) instead of a temporary directory")
    a = p.parse_args()
    if a.pairs:
        import contextlib
        import tempfile
        if a.keep and Path(a.keep).exists():
            p.error(f"--keep: {a.keep} exists; name a new directory")
        keep = contextlib.nullcontext(a.keep) if a.keep else \
            tempfile.TemporaryDirectory(prefix="cell-overhead-", dir=".")
        with keep as work:
            raws = measure_pairs(a.pairs, a.backend, Path(work).resolve(), a.duration, a.warmup,
                                  a.interleave)
            for arm, raw in raws.items():
                if a.interleave and arm == "group":
                    print("-- cells as groups of 4 on one server: (--interleave: each group's time holds its "
                          "fresh twins' runs, so its overhead is not shown)")
                    continue
                print(f"-- cells {'each on a fresh server' if arm == 'fresh' else 'as groups of 4 on one server'}:")
                report(rows(raw, os.path.join(work, "no-benchmarks")))
            agreement(raws)
        return
    rs = rows(os.path.join(a.root, a.raw), os.path.join(a.root, a.bench))
    if not rs:
        print(f"no throughput cells under {os.path.join(a.root, a.raw)}")
        return
    report(rs)


if __name__ == "__main__":
    main()
