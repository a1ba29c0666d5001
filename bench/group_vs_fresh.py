"""Benchmark (prints figures, asserts nothing): may a group of cells (users swept on one
server start, `sysbench.users_on_one_server`) stand in for fresh cells (a server start
per cell) for what the claims read?

On the pinned MySQL 5.6.24 and real sysbench, Point-Selects at a profile's scale, the
cells run by the harness's own code (harness.measure.frame.Frame with `outs` for a group,
harness.measure.throughput.measure per cell). A block holds the host's measurement lock
and measures every engine both ways: group (one start per engine, the users swept in a
seeded order) and fresh (one start per engine x users); the eight starts' order is
seeded. Comparisons (what claims read): InnoDB/MyISAM at each users level (A3's engine
rows), MEMORY/InnoDB at the top users level (B2), InnoDB's users scaling top/bottom.
Per block and comparison the ratio of ratios (A/B in the group ÷ A/B fresh); its exact
signed-rank interval over blocks (harness.analysis.intervals.ratio_of_ratios).
Rule: groups may become the default only if that interval lies inside [0.97, 1.03] on at
least three comparisons; otherwise keep fresh cells.

    python bench/group_vs_fresh.py [--profile smoke] [--blocks 8] [--seed 1] [--tsv raw.tsv]
    python bench/group_vs_fresh.py --from-tsv raw.tsv     (re-analyse, no server)
"""
from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUILD, ROOT, pinned_build, sbtest_datasets  # noqa: E402
from variance_components import profile_scale  # noqa: E402

ENGINES = ("InnoDB", "MyISAM", "MEMORY")
LEVEL = 0.90
BAND = (0.97, 1.03)
NEEDED = 3
FIELDS = ["block", "mode", "engine", "users", "qps", "load1"]


# -- measuring ---------------------------------------------------------------------------
def _spec(sc: dict) -> dict:
    return {"study": "A3", "kind": "throughput", "workload": "point_select", "dataset": "sbtest",
            "table_size": sc["table_size"]}


def one_start(sc: dict, engine: str, users: list[int], rep: int, build: tuple, ds: Path, work: Path) -> dict:
    """One server start (a Frame, as the pipeline's cell or group runs it) measuring the
    users in the given order: {users: qps}."""
    from harness.measure import factors, throughput
    from harness.measure.frame import Frame
    entry, build_dir, _ = build
    spec, s = _spec(sc), sc["settings"]
    names = [f"{BUILD}_{engine}_base_t{sc['tables']}_c1_u{u}_r{rep}" for u in users]
    ds_ = [throughput.parse(n) for n in names]
    values = factors.settings(factors.parse(ds_[0]["variant"]), engine, "point_select")
    options = {**s["options"], **throughput.server_options(spec, ds_[0], values, entry["family"])}
    got = {}
    with Frame(outs=[work / "cells" / f"{n}-{os.getpid()}-{time.monotonic_ns()}" for n in names],
               name=BUILD, entry=entry, build_dir=build_dir, source=ds, cores=1, settings=s,
               options=options, max_connections=max(users) + 64) as fr:
        for i, (u, d) in enumerate(zip(users, ds_)):
            fr.select(i)
            got[u] = throughput.measure(fr, spec, d, values, s)["result"]["qps"]
        fr.finish()
    return got


def block_plan(users: list[int], rng: random.Random) -> list[tuple[str, str, list[int]]]:
    """The block's starts, (mode, engine, users in order), in a seeded order."""
    starts = []
    for e in ENGINES:
        swept = list(users)
        rng.shuffle(swept)
        starts.append(("group", e, swept))
        starts += [("fresh", e, [u]) for u in users]
    rng.shuffle(starts)
    return starts


def measure(sc: dict, users: list[int], blocks: int, rng: random.Random, work: Path) -> list[dict]:
    from harness.measure import hostlock
    build = pinned_build()
    ds = sbtest_datasets(sc, build, work, ENGINES)
    rows = []
    for b in range(1, blocks + 1):
        with hostlock.measuring(f"bench group_vs_fresh {sc['profile']} block {b}"):
            for n, (mode, e, us) in enumerate(block_plan(users, rng)):
                got = one_start(sc, e, us, b * 100 + n, build, ds[e], work)
                load = os.getloadavg()[0]
                rows += [{"block": b, "mode": mode, "engine": e, "users": u, "qps": q, "load1": load}
                         for u, q in got.items()]
                print(f"  block {b} {mode:5} {e:6} " + ", ".join(f"u{u} {q:,.0f}" for u, q in got.items())
                      + f" QPS (load {load:.1f})", flush=True)
    return rows


# -- analysis (pure: tests/e2e/test_group_vs_fresh.py) ---------------------------------------
def comparisons(users: list[int]) -> list[tuple[str, tuple, tuple]]:
    """(label, A, B), A and B as (engine, users)."""
    lo, hi = min(users), max(users)
    out = [(f"InnoDB/MyISAM u{u}", ("InnoDB", u), ("MyISAM", u)) for u in sorted(users)]
    out.append((f"MEMORY/InnoDB u{hi} (B2)", ("MEMORY", hi), ("InnoDB", hi)))
    if hi != lo:
        out.append((f"InnoDB u{hi}/u{lo} (scaling)", ("InnoDB", hi), ("InnoDB", lo)))
    return out


def analyse(rows: list[dict], level: float = LEVEL) -> list[dict]:
    """Per comparison: the blocks' ratios of ratios, their interval and whether it lies in BAND."""
    from harness.analysis import intervals
    q = {(int(r["block"]), r["mode"], r["engine"], int(r["users"])): float(r["qps"]) for r in rows}
    blocks = sorted({k[0] for k in q})
    users = sorted({k[3] for k in q})
    out = []
    for label, a, b in comparisons(users):
        cols = [[q[(k, m, *x)] for k in blocks] for m, x in (("group", a), ("group", b), ("fresh", a), ("fresh", b))]
        per = [(ga / gb) / (fa / fb) for ga, gb, fa, fb in zip(*cols)]
        ci = intervals.ratio_of_ratios(*cols, level=level) if len(blocks) >= 2 else None
        inside = ci is not None and ci.lo == ci.lo and BAND[0] <= ci.lo and ci.hi <= BAND[1]
        out.append({"label": label, "per_block": per, "ci": ci, "inside": inside})
    return out


def decision(res: list[dict]) -> str:
    n = sum(r["inside"] for r in res)
    if n >= NEEDED:
        return f"groups may become the default ({n} comparisons' intervals inside {list(BAND)})"
    return (f"keep fresh cells: {n} of {len(res)} comparisons' intervals lie inside {list(BAND)} "
            f"({NEEDED} needed)")


def report(res: list[dict]) -> str:
    lines = []
    for r in res:
        ci = r["ci"]
        iv = ("n/a (too few blocks)" if ci is None or ci.lo != ci.lo else
              f"{ci.point:.3f} [{ci.lo:.3f}, {ci.hi:.3f}] ({ci.coverage:.1%} {ci.method})")
        lines.append(f"  {r['label']}: group÷fresh per block " + " ".join(f"{x:.3f}" for x in r["per_block"])
                     + f"; {iv}; {'inside' if r['inside'] else 'not inside'} {list(BAND)}")
    lines.append("decision: " + decision(res))
    return "\n".join(lines)


def read_tsv(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def write_tsv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="smoke")
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--users", default="", help="comma-separated users levels (default: the profile's point_select)")
    p.add_argument("--tsv", type=Path)
    p.add_argument("--from-tsv", type=Path)
    a = p.parse_args(argv)
    if a.blocks < 1:
        raise SystemExit("--blocks: must be >= 1; give e.g. --blocks 8")
    if a.from_tsv:
        rows = read_tsv(a.from_tsv)
    else:
        sc = profile_scale(a.profile)
        users = [int(u) for u in a.users.split(",")] if a.users else _profile_users(a.profile, sc)
        print(f"{a.profile}: Point-Select, {sc['table_size']} rows x {sc['tables']} table(s), warm-up "
              f"{sc['warmup_s']} s, window {sc['duration_s']} s, users {users}; {a.blocks} blocks, seed {a.seed}; "
              f"load average at start {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)", flush=True)
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="group-vs-fresh-", dir=ROOT) as work:
            rows = measure(sc, users, a.blocks, random.Random(a.seed), Path(work))
        print(f"measured in {time.monotonic() - t0:.0f} s; load average 1 min over the run "
              f"{min(r['load1'] for r in rows):.1f}..{max(r['load1'] for r in rows):.1f}")
        if a.tsv:
            write_tsv(a.tsv, rows)
    print(report(analyse(rows)))
    return 0


def _profile_users(profile: str, sc: dict) -> list[int]:
    import yaml
    from harness.plan import config
    cfg = config.with_defaults(yaml.safe_load((ROOT / "config" / f"{profile}.yaml").read_text()))
    users = cfg["experiments"].get("point_select", {}).get("users") or [sc["users"]]
    return sorted({int(u) for u in users}) if len(users) > 1 else [1, int(users[0])]


if __name__ == "__main__":
    raise SystemExit(main())
