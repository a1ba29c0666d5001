"""`python -m harness plan`: which CPUs a profile's sweep gets on a host, before it runs.

    python -m harness plan --topology FILE.xml --configfile config/paper.yaml

Per experiment: the core counts kept and the ones dropped, each with why (it
does not fit, `cores: max` keeps only the largest, 1 and 2 were not needed),
then each cell group (the experiment's cells on one core count): mysqld's and
sysbench's CPUs with their sockets and NUMA nodes, the memory nodes mysqld is
to be bound to, and how many cells. `--topology`: a recorded
`lstopo --of xml` file (or a harness.measure.topology JSON snapshot); without it this
host. The profile is resolved for that topology exactly as the pipeline
resolves it here (harness.plan.config), and the time estimate is harness.plan.estimate's.
"""
from __future__ import annotations

import os
from collections import Counter

from harness import builds, registry
from harness.plan import cells as plan, config, estimate, lanes as L, reads, schedule
from harness.plan import duet as D
from harness.plan import odds as O
from harness.measure import coreplan
from harness.measure.placement import cpulist
from harness.measure.topology import Topology
from harness import paths


def dropped(host_plan: coreplan.Plan, asked, kept: list[int], study: tuple = ()) -> dict[int, str]:
    """The counts `cores: auto|max|study` considered and left out, with why (`study`: the
    experiment's study's own counts). An explicit list drops nothing: config.resolve has
    checked every count of it fits."""
    if isinstance(asked, list):
        return {}
    out = {n: f"does not fit: {why}" for n, why in host_plan.missing.items()}
    own = ", ".join(map(str, study))
    why = ("cores: max keeps only the largest count that fits" if asked == "max" else
           f"cores: study keeps the study's own counts that fit ({own})" if set(kept) & set(study)
           else f"cores: study: none of the study's own counts ({own}) fits, so the largest that does")
    for n in host_plan.counts:
        if n not in kept:
            out[n] = why
    for n in coreplan.SMALL_CORES:
        if n in out or n in host_plan.cells:
            continue
        try:
            coreplan.place(host_plan.topology, n, client_min=host_plan.client_min,
                        client_ratio=host_plan.client_ratio, cross_socket=host_plan.cross_socket)
        except coreplan.CoresError as e:
            out[n] = f"does not fit: {e}"
        else:
            out[n] = (f"not needed: 1 and 2 are added only when fewer than {coreplan.MIN_POINTS} of the "
                      f"studies' counts fit ({len(host_plan.counts)} do)")
    return dict(sorted(out.items()))


def build(cfg: dict, topo: Topology | None = None, *, lock_path=paths.LOCK, root: str = ".",
          with_estimate: bool = True, bench_dir: str = estimate.BENCH, raw: str = estimate.RAW,
          tidy_dir: str | None = None) -> dict:
    """The plan of a merged (unresolved) profile on `topo` (None: this host). The estimate's
    overheads come from `root`/`bench_dir`'s benchmark files (none there: the stated defaults);
    the odds' noise from the summaries in `tidy_dir` (None: `root`/data/tidy; none there: the
    profile's stated CoV). `python -m harness plan` passes the clone's own (paths.TIDY), so a
    plan made from any folder reads the same noise."""
    if topo is None:  # this host: inside a SLURM job, only if the step holds the job's CPUs
        topo = Topology.live()
        config.slurm_step_check(len(topo.ids))
    resolved = config.resolve(cfg, lock_path, topo=topo)
    lock = builds.load_lock(lock_path)
    host_plan = coreplan.plan(topo, client_min=resolved["placement"]["client_cpus"])
    asked_all = config.apply_experiment_defaults(config.with_defaults(cfg))["experiments"]
    est = (estimate.estimate(resolved, lock, bench_dir=bench_dir, raw=raw, root=root, topo=topo)
           if with_estimate else None)
    who = reads.readers(resolved, lock, topo)
    odds = O.all_odds(resolved, lock, who["claims"],
                       tidy_dir=os.path.join(root, "data", "tidy") if tidy_dir is None else str(tidy_dir))
    looks = looks_times(resolved, lock, est, odds["experiments"]) if est else {}
    est_rows = {r["experiment"]: r for r in est["rows"]} if est else {}
    exps, groups, missing = [], {}, dict(host_plan.missing)
    for exp, spec in plan.experiments(resolved).items():
        asked = asked_all[exp]["cores"]
        per_count = Counter(plan.parse_cell(resolved, exp, n)["cores"] for n in plan.cell_names(resolved, lock, exp))
        for n in spec["cores"]:
            if n not in groups:
                cell = host_plan.cells.get(n) or coreplan.place(topo, n, client_min=host_plan.client_min)
                groups[n] = {**cell.to_dict(), "client_sockets": sorted({topo.cpu(x).package for x in cell.client}),
                             "client_nodes": sorted({topo.cpu(x).node for x in cell.client})}
        drop = dropped(host_plan, asked, spec["cores"], registry.study_cores(spec["study"]) or ())
        missing.update({n: why.split(": ", 1)[1] for n, why in drop.items() if why.startswith("does not fit")})
        readers = who["by_experiment"].get(exp, {"claims": [], "figures": []})
        # what late_blocks reads of the estimate's row, when there is none (plan --no-estimate)
        counts = {"blocks": list(plan.repetition_bounds(spec)[:2]), **plan.block_counts(resolved, lock, exp)}
        exps.append({"experiment": exp, "study": spec["study"], "kind": spec["kind"], "asked": asked,
                     "claims": readers["claims"], "figures": readers["figures"],
                     "whole": bool(readers.get("whole")),
                     "unread": len(plan.dropped_combos(resolved, lock, exp)),
                     "widths": (dict(sorted(schedule_widths(resolved, lock, exp, est).items()))
                                if est else {}),
                     "host_wide": sorted(n for n in spec["cores"] if est and est["lanes_obj"].on_whole_host(int(n))),
                     "kept": {str(n): per_count.get(n, 0) for n in spec["cores"]},
                     "dropped": {str(k): v for k, v in drop.items()},
                     "cells": sum(per_count.values()), "blocks": est_rows.get(exp, {}).get("blocks"),
                     "cells_expected": est_rows.get(exp, {}).get("cells"),
                     "late": late_blocks(est_rows.get(exp) or counts),
                     "estimate_s": est_rows.get(exp, {}).get("total_s"),
                     "worst_s": est_rows.get(exp, {}).get("worst_s")})
    return {"profile": resolved.get("profile"), "topology": topo.summary(), "source": topo.source,
            "cpus": cpulist(topo.ids), "mems": list(topo.mems), "rule": host_plan.rule(),
            "fits": host_plan.counts, "missing": {str(n): missing[n] for n in sorted(missing)},
            "groups": [groups[n] for n in sorted(groups)], "experiments": exps,
            "claims": [v.__dict__ for v in who["claims"]], "odds": odds,
            "not_planned": {e: s["not_planned"] for e, s in resolved["experiments"].items()
                            if s.get("not_planned")},
            "estimate": None if est is None else {"total_s": est["total_s"], "worst_s": est["worst_s"],
                                                  "measure_s": est["measure_s"],
                                                  "dataset_s": est["dataset_s"], "datasets": est["datasets"],
                                                  "nodes": nodes_table(est), "lanes": est["lanes"],
                                                  "lane_lines": L.describe(est["lanes_obj"]),
                                                  "pairing": schedule.pairing_of(resolved),
                                                  "twin_lines": twin_lines(resolved, est, exps),
                                                  "wall_s": est["wall_s"], "wall_worst_s": est["wall_worst_s"],
                                                  **looks,
                                                  "shared_l3": est.get("shared_l3"),
                                                  "assumptions": est["assumptions"] + (
                                                      f"; {schedule.DUET}" if schedule.pairing_of(resolved) == "duet"
                                                      else "")}}


def looks_times(cfg: dict, lock: dict, est: dict, go_on: dict) -> dict:
    """The expected times counting the looks (harness.plan.odds): on the lanes
    (schedule.expected_wall_time) and one cell at a time (estimate.expected_with_looks)."""
    ds = [estimate.dataset_seconds(d, est["overheads"]) for d in plan.datasets_needed(cfg, lock)]
    return {"wall_looks_s": schedule.expected_wall_time(cfg, lock, est["rows"], est["lanes_obj"], ds, go_on),
            "total_looks_s": estimate.expected_with_looks(est, go_on)}


def late_blocks(row: dict | None) -> str:
    """What the blocks after repetitions.figures measure, when fewer cells than the first:
    e.g. "blocks 7-24: only the 344 cells claims read" ("" when every block is alike)."""
    if not row or row["cells_late"] >= row["cells_block"] or row["figures"] >= row["blocks"][1]:
        return ""
    span = f"blocks {row['figures'] + 1}-{row['blocks'][1]}"
    if not row["cells_late"]:
        return f"{span}: none (no measurable claim reads it; figures read blocks 1-{row['figures']})"
    return (f"{span}: only the {row['cells_late']} cells claims read "
            f"(of {row['cells_block']} per block in blocks 1-{row['figures']})")


def schedule_widths(cfg: dict, lock: dict, exp: str, est: dict) -> dict:
    """{cores: lanes a cell of that many cores takes} of an experiment on the chosen lanes."""
    lanes = est["lanes_obj"]
    counts = sorted({int(d.get("cores") or 1) for d in plan.read_combos(cfg, lock, exp)})
    return {n: lanes.width(n) for n in counts}


def twin_lines(cfg: dict, est: dict, exps: list[dict]) -> list[str]:
    """pairing: duet: which spans are twins, for every width a planned cell takes."""
    if schedule.pairing_of(cfg) != "duet":
        return []
    widths = {w for e in exps for w in e["widths"].values()} or {1}
    over = est["lanes_obj"].oversubscribed
    return (["pairing: duet: a compared pair's sides run at once on twin lanes (their servers meet before "
             "the warm-up); an experiment's blocks take the twin pairs two at a time, side A on the first "
             "twin in odd blocks and on the second in even ones, so each side runs as often on either; "
             + ("the twins here are oversubscribed lanes on the same CPUs: the two sides compete for them, "
                "which shows the mechanics, not a pair's ratio alone; " if over else
                "twins share no physical core and have the same layout (threads per core, client CPUs, "
                "sockets and nodes); ")
             + "a pair whose cells' width has no twins runs one side after the other, as blocks do"]
            + L.describe_twins(est["lanes_obj"], widths)
            + ["pairs per experiment (harness.plan.duet):"] + D.describe(cfg, [e["experiment"] for e in exps]))


NODES = (1, 2, 4, 8, 16, 32, 64)


def nodes_table(est: dict) -> list[dict]:
    """The sweep's wall clock on a SLURM cluster of n nodes like this host (estimate.on_nodes),
    for the usual n (on_nodes: from some n on, the longest chain of blocks between looks
    bounds it and more nodes change nothing)."""
    return [{"nodes": n, "expected_s": estimate.on_nodes(est, n), "worst_s": estimate.on_nodes(est, n, worst=True)}
            for n in NODES]


def _where(sockets, nodes, mems=None) -> str:
    s = (f"socket{'s' if len(sockets) > 1 else ''} {cpulist(sockets)}, "
         f"NUMA node{'s' if len(nodes) > 1 else ''} {cpulist(nodes)}")
    if mems is not None:
        s += f", memory on node{'s' if len(mems) > 1 else ''} {cpulist(mems)}" if mems else ", memory not bound"
    return s


def _short(why: str, many: bool) -> str:
    return f"do{'' if many else 'es'} not fit (above)" if why.startswith("does not fit") else why


def render(p: dict) -> str:
    lines = [f"plan for profile {p['profile']} on {p['source']}",
             f"host: {p['topology']}; usable CPUs {p['cpus']}, memory nodes {cpulist(p['mems'])}",
             p["rule"],
             f"core counts that fit: {', '.join(map(str, p['fits'])) or 'none'}"]
    for n, why in p["missing"].items():
        lines.append(f"  {n} does not fit: {why}")
    lines.append("cell groups (every cell on n cores gets these CPUs):")
    for g in p["groups"]:
        ht = f", {g['threads_per_core']} threads per core" if g["threads_per_core"] > 1 else ""
        lines.append(f"  {g['cores']:>3} core{'s' if g['cores'] > 1 else ' '}: mysqld on cpus {g['server_cpus']} "
                     f"({_where(g['sockets'], g['nodes'], g['mems'])}{ht}); sysbench on cpus {g['client_cpus']} "
                     f"({_where(g['client_sockets'], g['client_nodes'])})")
    lines.append("experiments:")
    for e in p["experiments"]:
        asked = e["asked"] if isinstance(e["asked"], str) else "[" + ", ".join(map(str, e["asked"])) + "]"
        est = ""
        if e["estimate_s"] is not None:
            lo, hi = e["blocks"]
            est = (f" ({e['cells_expected']} in blocks 1-{lo}, expected {estimate.hms(e['estimate_s'])}; "
                   f"all {hi} blocks: worst case {estimate.hms(e['worst_s'])})")
        kept = ", ".join(f"{n} ({c})" for n, c in e["kept"].items()) or "none"
        by_why: dict = {}
        for n, why in e["dropped"].items():
            by_why.setdefault(_short(why, False), []).append(n)
        drop = "; ".join(f"{', '.join(ns)}: {_short(why, len(ns) > 1) if why.endswith('(above)') else why}"
                         for why, ns in by_why.items()) or "none"
        lines.append(f"  {e['experiment']} ({e['study']}, {e['kind']}; cores: {asked}): {e['cells']} cells at most{est}")
        lines.append(f"    kept (cells at most) {kept}; dropped {drop}")
        if e.get("late"):
            lines.append(f"    {e['late']}")
        if e["whole"]:
            lines.append("    named by no claim or figure of any study (a profile's own experiment): kept whole")
        else:
            lines.append(f"    read by claims: {', '.join(e['claims']) or 'none measurable here'}; "
                         f"figures: {', '.join(e['figures']) or 'none'}")
        if e["unread"]:
            lines.append(f"    {e['unread']} cell{'s' if e['unread'] > 1 else ''} per block read by no figure and "
                         f"no claim measurable here: not planned")
        if e["widths"]:
            lines.append("    lanes per cell: " + ", ".join(
                f"{n} cores " + ("the whole host (no span of lanes holds it)" if n in e["host_wide"] else str(w))
                for n, w in e["widths"].items()))
    for exp, why in p["not_planned"].items():
        lines.append(f"  {why.split(': ', 1)[1]}")
    lines += claim_lines(p["claims"])
    lines += O.render(p["odds"])
    if p["estimate"]:
        est = p["estimate"]
        ln = est["lanes"]
        lines.append(f"lanes (placement.lanes): {ln['count']} lane{'s' if ln['count'] != 1 else ''} of {ln['size']} server core"
                     f"{'s' if ln['size'] > 1 else ''} each{', oversubscribed' if ln['oversubscribed'] else ''}; "
                     f"a cell wider than a lane takes several (lanes per cell, above), one that no "
                     f"span holds the whole host")
        lines += est["lane_lines"] + est.get("twin_lines", [])
        lines.append(f"wall time on these lanes: floor {estimate.hms(est['wall_s'])} (every experiment decided at "
                     f"its first look), expected with looks {estimate.hms(est['wall_looks_s'])} (a later look's "
                     f"blocks weighted by the chance a claim reading them is still undecided: the claims' odds, "
                     f"above), worst case {estimate.hms(est['wall_worst_s'])} (assumed: {est['assumptions']})")
        if est.get("shared_l3"):
            alt = est["shared_l3"]
            lines.append(f"  not taken: `placement.lanes: {alt['lanes']}` ({alt['lanes']} lanes of {alt['size']} server "
                         f"core{'s' if alt['size'] > 1 else ''}, their servers sharing L3 caches) would take "
                         f"{estimate.hms(alt['wall_s'])} expected, {estimate.hms(alt['wall_worst_s'])} worst case; "
                         f"`auto` keeps an L3 per lane's server, since shared-cache interference cancels in a "
                         f"block's pairs only while it is steady")
        lines.append(f"one cell at a time: floor {estimate.hms(est['total_s'])} (every experiment decided at its first "
                     f"look: repetitions.min blocks), expected with looks {estimate.hms(est['total_looks_s'])}, worst case {estimate.hms(est['worst_s'])} (undecided at "
                     f"every look: max blocks); measurement {estimate.hms(est['measure_s'])} of the floor, "
                     f"{est['datasets']} datasets {estimate.hms(est['dataset_s'])}; "
                     f"`python -m harness estimate` breaks it down")
        lines.append("on a SLURM cluster of such nodes (profiles/slurm: a block one job of a whole node, the "
                     "blocks between two looks and the experiments side by side), wall clock at the first look / worst case:")
        lines.append("  " + "; ".join(f"{r['nodes']} node{'s' if r['nodes'] > 1 else ''} "
                                      f"{estimate.hms(r['expected_s'])} / {estimate.hms(r['worst_s'])}"
                                      for r in est["nodes"]))
    return "\n".join(lines)


# what the claim rows' count counts, wherever it is printed (the plan, README's host table): the
# rows a run on the host makes, as claims.csv and the paper's abstract count them
ROWS_MEANING = "one per claim and build; one for a claim whose experiments the host does not plan"


def claim_lines(verdicts: list[dict]) -> list[str]:
    """Per claim: measurable here or not and why; then how many of the total."""
    out = ["claims (can this host decide them?):"]
    for v in verdicts:
        part = (f" ({v['measurable_rows']} of {v['rows']} rows)" if v["measurable"] and v["measurable_rows"] < v["rows"]
                else "")
        out.append(f"  {v['claim']}: " + (f"measurable{part}" if v["measurable"] else f"not measurable: {v['why']}"))
    n = sum(1 for v in verdicts if v["measurable"])
    rows = sum(v["rows"] for v in verdicts)
    ok_rows = sum(v["measurable_rows"] for v in verdicts)
    out.append(f"measurable: {n} of {len(verdicts)} claims, {ok_rows} of {rows} claim rows "
               f"({100 * ok_rows / max(1, rows):.0f}%)")
    out.append(f"  (claim rows: {ROWS_MEANING}; the paper counts them so)")
    return out
