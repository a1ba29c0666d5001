#!/usr/bin/env python3
"""The README's time table, generated (never typed) between the markers

    <!-- times:begin -->
    <!-- times:end -->

One row per profile in config/ (what it runs, from its resolved config; its
cells on this host and on a 16-vCPU host; the estimate a first sweep on a new
host prints (its first look and worst case) with the time `./artifact plan` expects
counting the later looks, from the stated defaults (never from this checkout's benchmark
files, so the table renders the same from a fresh clone); the time it took where
it was run here, with the estimate that run printed before it started:
logs/runs/<profile>.json, written by the pipeline at the end of a successful run; beside it
logs/runs/<profile>.before.json, a record renamed so by hand to keep a run from before a
change, measured on the same host; a record's optional `beside`, added by hand, says what
else ran on the host meanwhile) and one per test suite (the time of the
last whole run of `./artifact test` / `test-long` here: logs/tests/suite-*.json,
written by tests/conftest.py). Below it, per experiment, the measured time and
disk of the largest profile recorded here.

    scripts/time-table.py            rewrite the table in README.md
    scripts/time-table.py --check    exit 1 if README.md's table differs (nothing written)
    scripts/time-table.py --root DIR --readme FILE
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness import studies  # noqa: E402,F401  (registers the studies: harness.registry)
from harness import builds  # noqa: E402

from harness.plan import config

from harness.plan import estimate as E
from harness.plan import plancmd

from harness import markers

from harness.plan import cells as plan

from harness.plan import repetitions

from harness.report import runlog
from harness import paths

BEGIN, END = "<!-- times:begin -->", "<!-- times:end -->"
# the two time columns say what they show (issue 55): the stated defaults, never a clone's
# own measured rates (`./artifact plan` in a clone with runs uses those, so it may differ);
# the runs recorded in logs/ where the table was rendered (a fresh clone has none)
ESTIMATED = "estimated on a new host ({cpus} CPUs) from the stated defaults, not a clone's measured rates"
MEASURED = "measured where this table was rendered (its logs/runs/; a fresh clone has none)"
WIDE_HOST = 16  # the second cell count: a 16-vCPU host (flat topology)
ORDER = ["smoke", "default", "midsize", "paper"]
SUITES = {"default": "`./artifact test`", "long": "`./artifact test-long`"}
SUITE_WHAT = {"default": "the default suite (`pytest -m \"not slow\"`): unit tests, end-to-end runs on real "
                         "servers, containers, the Nix store, PostgreSQL, the smoke pipeline to a PDF, replot, "
                         "the fault cases, a two-node SLURM cluster (set-up, a job's allocation, dry runs)",
              "long": "the long suite (`pytest -m slow`): the load test (hundreds of short cells in a row), "
                      "group-run cells against fresh-server cells (10 rounds of 4 pairs, ~25 min on 2 CPUs), "
                      "the reduced sweep through the two-node SLURM cluster and here side by side, and duet "
                      "pairs end to end"}


def _span(values) -> str:
    vals = sorted(set(values))
    if not vals:
        return "?"
    return f"{vals[0]:,}" if len(vals) == 1 else f"{vals[0]:,}–{vals[-1]:,}"


def describe(cfg: dict, lock: dict) -> str:
    """What a resolved profile runs, in one line, from its config alone."""
    exps = plan.experiments(cfg)
    sb = cfg.get("sysbench") or {}
    thr = [s for s in exps.values() if s["kind"] == "throughput"]
    durs = {int(s.get("duration_s", sb.get("duration_s", 0))) for s in thr}
    warm = {int(s.get("warmup_s", sb.get("warmup_s", 0))) for s in thr}
    sizes = [int(s["table_size"]) for s in thr if s.get("table_size")]
    reps = sorted({n for s in exps.values() for n in repetitions.bounds(s["repetitions"])[:2]})
    users = [u for s in thr for u in (s.get("users") or [])]
    cores = [c for s in exps.values() for c in (s.get("cores") or [])]
    blds = {b for e in exps for b in plan.builds_of(cfg, e)}
    rows = [int(s["rows"]) for s in exps.values() if s["kind"] == "steps" and s.get("rows")]
    parts = [f"{len(exps)} experiments", f"{_span(durs)} s runs after {_span(warm)} s",
             f"{_span(sizes)}-row tables", f"users {_span(users)}", f"cores {_span(cores)}",
             f"{_span(reps)} repetition{'s' if max(reps, default=1) > 1 else ''}", f"{len(blds)} builds"]
    if rows:
        parts.append(f"study C on {_span(rows)} rows")
    return ", ".join(parts)


def profile_files(root: Path) -> list[tuple[str, list[str]]]:
    """(profile, configfiles on top of default.yaml) in the README's order."""
    found = [(name, files) for name, _, files in E.profile_files(root)]
    return sorted(found, key=lambda kv: (ORDER.index(kv[0]) if kv[0] in ORDER else len(ORDER), kv[0]))


def _cmd(profile: str, files: list[str], root: Path) -> str:
    if profile == "default":
        return "`./artifact paper`"
    if profile == "smoke":
        return "`./artifact smoke`"
    return f"`./artifact paper --configfile {os.path.relpath(files[0], root)}`"


def _measured(rec: dict | None, cells: int, before: dict | None = None) -> tuple[str, str]:
    """(the table's cell: the time and the date; the note below the table: what else the record
    says, and the run kept from before a change, runlog.BEFORE, if any). A cell holds a figure
    and a date; the story of a run is a note."""
    if not rec:
        return "not run here", ""
    cell, note = _one_run(rec, cells)
    if before:
        then, then_note = _one_run(before, cells)
        note += f"; before the change: {then} ({then_note})"
    return cell, note


def _one_run(rec: dict, cells: int) -> tuple[str, str]:
    """(the time and the date, what else the record says: host, cells then, estimate, beside)."""
    when = [f"{rec.get('host_cpus')} CPUs, {rec.get('backend')}"]
    if rec.get("cells") != cells:  # the profile changed since: say what was measured
        when.append(f"{rec.get('cells')} cells then")
    if rec.get("estimate_s"):
        when.append(f"it printed {E.hms(rec['estimate_s'])} before starting")
    if rec.get("beside"):  # what else ran on the host meanwhile, added to the record by hand
        when.append(f"beside it: {rec['beside']}")
    if rec.get("from_scratch"):
        return f"{E.hms(rec['wall_s'])}, {rec.get('date')}", "; ".join(when)
    secs = sum(e["measured_s"] for e in rec["experiments"].values()) + rec["datasets"]["measured_s"]
    return f"{E.hms(secs)}, {rec.get('date')}", "; ".join(["cells + datasets of a resumed run", *when])


def _expected(est: dict, looks_s: float | None) -> str:
    """The first look's time (every experiment stops at it: min blocks) and, where more blocks
    may be added while claims are undecided, the time expected with the later looks (`./artifact
    plan`'s: each later look weighted by the chance a claim reading it is still undecided) and
    the worst case (max blocks)."""
    if est["worst_s"] > est["total_s"]:
        looks = f"{E.hms(looks_s)} expected with looks, " if looks_s is not None else ""
        return f"{E.hms(est['total_s'])} at the first look, {looks}{E.hms(est['worst_s'])} at worst"
    return E.hms(est["total_s"])


def _looks_s(files: list[str], root: Path, nothing: str) -> float | None:
    """One cell at a time on this host, the time expected with looks (plancmd.build: the
    claims' odds at the profile's stated CoV, no tidy data), or None where the plan cannot."""
    try:
        p = plancmd.build(E.merge_profile(files, root), root=str(root), bench_dir=os.path.join(nothing, "b"),
                          raw=os.path.join(nothing, "r"), tidy_dir=os.path.join(nothing, "t"))
    except config.ConfigError:
        return None
    return (p.get("estimate") or {}).get("total_looks_s")


def render(root: Path = ROOT) -> str:
    lock = builds.load_lock(paths.LOCK)
    runs = runlog.load(str(root))
    befores = runlog.load(str(root), before=True)
    here = len(config.host_cpus())
    L = [BEGIN,
         "<!-- generated by scripts/time-table.py from config/*.yaml, logs/runs/*.json and "
         "logs/tests/suite-*.json; do not edit by hand -->",
         f"| command | what (from the profile) | cells, min–max blocks ({here} CPUs here / {WIDE_HOST} vCPUs, max) "
         f"| {ESTIMATED.format(cpus=here)} | {MEASURED} |",
         "|---|---|---|---|---|"]
    notes: list[str] = []
    for profile, files in profile_files(root):
        try:
            cfg = E.load_profile(files, root)
        except config.ConfigError as e:
            why = " ".join(str(e).split()).replace("|", "/")
            L.append(f"| {_cmd(profile, files, root)} | does not resolve here: {why} "
                     f"| — | — | — |")
            continue
        with tempfile.TemporaryDirectory() as nothing:  # no benchmark files: the stated defaults
            est = E.estimate(cfg, lock, bench_dir=os.path.join(nothing, "b"), raw=os.path.join(nothing, "r"),
                             root=str(root))
            looks_s = _looks_s(files, root, nothing)
        try:
            wide = E.load_profile(files, root, cpus=list(range(WIDE_HOST)))
            n_wide = f"{sum(len(plan.cell_names(wide, lock, x)) for x in plan.experiments(wide)):,}"
        except config.ConfigError:
            n_wide = "—"
        n_here = sum(r["cells"] for r in est["rows"])  # at min blocks (the estimate's expected run)
        n_max = sum(len(plan.cell_names(cfg, lock, x)) for x in plan.experiments(cfg))  # at max blocks
        cells = f"{n_here:,}" if n_max == n_here else f"{n_here:,}–{n_max:,}"
        got, note = _measured(runs.get(profile), n_here, befores.get(profile))
        if note:
            notes.append(f"{_cmd(profile, files, root)}: {note}")
            got += f" (note {len(notes)})"
        L.append(f"| {_cmd(profile, files, root)} | {describe(cfg, lock)} | {cells} / {n_wide} "
                 f"| {_expected(est, looks_s)}, disk ~{E.size(est['disk_bytes'])} | {got} |")
    for suite, cmd in SUITES.items():
        path = root / "logs" / "tests" / f"suite-{suite}.json"
        try:
            r = json.loads(path.read_text())
            got = (f"{E.hms(r['duration_s'])} ({r['cpus']} CPUs, {r['date']}: {r['passed']} passed, "
                   f"{r['failed']} failed)")
        except (OSError, ValueError, KeyError):
            got = "not run here"
        L.append(f"| {cmd} | {SUITE_WHAT[suite]} | — | — | {got} |")
    L.append("")
    if notes:  # what a measured cell's record says besides its time and date
        L += ["Notes on *measured here*:", ""] + [f"{i}. {n}" for i, n in enumerate(notes, 1)] + [""]
    ran = [p for p in reversed(ORDER) if p in runs] + sorted(p for p in runs if p not in ORDER)
    if ran:
        rec = runs[ran[0]]
        L += [f"Per experiment, profile `{rec['profile']}` as measured here ({rec.get('host_cpus')} CPUs, "
              f"{rec.get('date')}): the Snakemake benchmark files of its cells, the disk of its raw cells.",
              "", "| experiment | study | cells | measured | disk |", "|---|---|---|---|---|"]
        for exp, e in rec["experiments"].items():
            meas = E.hms(e["measured_s"]) if e["benchmarked"] else "not run"
            if e["benchmarked"] and e["benchmarked"] < e["cells"]:
                meas += f" ({e['benchmarked']} of {e['cells']} cells)"
            L.append(f"| `{exp}` | {e['study']} | {e['cells']} | {meas} | {E.size(e['disk_bytes'])} |")
        d = rec["datasets"]
        L.append(f"| (datasets) | | {d['count']} | {E.hms(d['measured_s'])} | {E.size(d['disk_bytes'])} |")
        L.append("")
    L.append(END)
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(ROOT), help="the repository (config/, logs/, benchmarks/)")
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    ap.add_argument("--check", action="store_true", help="exit 1 if the README's table differs; write nothing")
    a = ap.parse_args(argv)
    try:
        differs = markers.update(Path(a.readme), BEGIN, END, render(Path(a.root)), check=a.check)
    except (markers.MarkerError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if a.check and differs:
        print(f"{a.readme}: the time table is out of date; run scripts/time-table.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
