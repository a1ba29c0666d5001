"""One measured cell: the shared frame (harness.measure.frame) around the measurement
kind's step (kinds.throughput, kinds.steps). The cell appears at its output
path, with its manifest.json, only when all of it succeeded.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.measure import factors

from harness.measure import effective, kinds
from harness.measure.frame import Frame
from harness.measure.placement import PlacementError
from harness.measure.server import ServerError


def run_cell(*, experiment: str, spec: dict, cell: str, entry: dict, build_dir: Path, source: Path,
             settings: dict, out: Path, block: dict | None = None) -> dict:
    """Measure cell `cell` of `experiment` (its resolved config block `spec`) into `out`.

    `source` holds the datadir the cell starts from: a prepared dataset, or the
    build's empty template for kinds without one. `block` (harness.plan.blocks.info:
    id, position, seed, size) goes into the manifest as it is. Returns the manifest.
    """
    return run_cells(experiment=experiment, spec=spec, cells=[cell], entry=entry, build_dir=build_dir,
                     source=source, settings=settings, outs=[out], block=block)[0]


LANE_KEYS = ("id", "lanes", "count", "cpus", "mems", "server_cpus", "client_cpus", "oversubscribed")


def lane_arg(text: str | None) -> dict | None:
    """run-cell's --lane, checked before anything starts: the JSON of harness.plan.lanes.job_lane."""
    if not text:
        return None
    try:
        lane = json.loads(text)
        ok = isinstance(lane, dict) and all(k in lane for k in LANE_KEYS) and bool(lane["lanes"])
    except ValueError:
        ok = False
    if not ok:
        raise PlacementError(f"--lane: {text!r} is not the JSON of harness.plan.lanes.job_lane "
                         f"({', '.join(LANE_KEYS)}); let the pipeline pass it")
    return lane


DUET_KEYS = ("cells", "at_once", "rendezvous", "timeout_s")


def duet_arg(text: str | None, cells: list[str]) -> dict | None:
    """run-cell's --duet, checked before anything starts: the pair its one cell runs in
    (harness.measure.duetrun passes it): cells (side A, side B), at_once, rendezvous (a
    directory), timeout_s (the longest wait there for the other side)."""
    if not text:
        return None
    try:
        duet = json.loads(text)
        ok = isinstance(duet, dict) and all(k in duet for k in DUET_KEYS) and len(cells) == 1 \
            and isinstance(duet["cells"], list) and cells[0] in duet["cells"] and 1 <= len(duet["cells"]) <= 2
    except ValueError:
        ok = False
    if not ok:
        raise PlacementError(f"--duet: {text!r} is not a pair holding the one --cell ({', '.join(DUET_KEYS)}); "
                             f"let the pipeline (run-duet) pass it")
    return duet


def max_users(spec: dict, ds: list[dict]) -> int:
    """The most users any cell of the experiment runs: its server's max_connections is
    sized from it (+ 64 for the harness's own sessions), so a cell's my.cnf is the same
    whether it runs on a fresh server or in a group (performance_schema sizes its
    tables from max_connections)."""
    return max([*(int(u) for u in spec.get("users") or []), *(d.get("users", 0) for d in ds)])


def server_setup(kind, spec: dict, d: dict, family: str, options: dict) -> tuple[dict, dict]:
    """(values, options) of cell `d` on a build of `family`: every factor's value as its name
    says, and the my.cnf options its server gets over the family's defaults (mycnf): the
    profile's `options`, then the kind's (its dataset's or step script's, then the factors',
    which win). One function where a cell is measured (run_cells) and where its settings
    digest is computed (harness.measure.digest), so the two agree."""
    variant = factors.parse(d["variant"])
    values = factors.settings(variant, d.get("engine", ""), spec.get("workload")) if "engine" in d else \
        factors.step_settings(variant)
    return values, {**options, **kind.server_options(spec, d, values, family)}


def run_cells(*, experiment: str, spec: dict, cells: list[str], entry: dict, build_dir: Path,
              source: Path, settings: dict, outs: list[Path], block: dict | None = None,
              lane: dict | None = None, duet: dict | None = None,
              stamps: dict | None = None) -> list[dict]:
    """Measure `cells` (a group: the same setting but for their users,
    harness.plan.cells.grouped) on one server start, in the order given, cell i into
    outs[i]; `stamps` (cell -> harness.measure.digest.stamp: profile, settings_digest,
    digest_inputs) go into each cell's manifest; `block` is the first cell's (the others follow it in the block); `lane`
    (harness.plan.lanes.job_lane) the lanes it holds and its CPUs there. Each cell
    appears at its path, with its manifest, only when the whole group succeeded.
    Returns the manifests."""
    kind_name = spec["kind"]
    kind = kinds.KINDS[kind_name]
    ds = [kind.parse(c) for c in cells]
    for c, out in zip(cells, outs, strict=True):
        if Path(out).name != c:
            raise ValueError(f"output {out} is not named after cell {c}")
    if len(cells) > 1:
        by = getattr(kind, "GROUP_BY", None)
        heads = {json.dumps({k: v for k, v in d.items() if k != by}, sort_keys=True) for d in ds}
        if by is None or len(heads) != 1:
            raise ValueError(f"cells {', '.join(cells)} are no group: they differ in more than "
                             f"{by or 'nothing (kind ' + kind_name + ' has no groups)'}")
    d0 = ds[0]
    variant = factors.parse(d0["variant"])
    why = factors.unsupported(variant, entry["family"])
    if why:
        raise ServerError(f"variant {d0['variant']}: {why}; drop it for build {d0['build']}")
    values, options = server_setup(kind, spec, d0, entry["family"], settings["options"])
    users = max_users(spec, ds)
    manifests = []
    with Frame(outs=[Path(o) for o in outs], name=d0["build"], entry=entry, build_dir=build_dir,
               source=source, cores=d0["cores"], settings=settings, options=options,
               max_connections=users + 16 + 48, lane=lane, duet=duet) as fr:
        for i, d in enumerate(ds):
            fr.select(i)
            part = kind.measure(fr, spec, d, values, settings)
            if i == len(ds) - 1:
                fr.finish()
            manifest = fr.manifest(kind=kind_name, study=spec["study"], experiment=experiment,
                                   factors={**d, **({"workload": spec["workload"]} if "workload" in spec else {}),
                                            **({"script": spec["script"]} if "script" in spec else {}),
                                            **({"table_size": spec["table_size"]} if "table_size" in spec else {}),
                                            **{f"variant_{k}": v for k, v in variant.items()}},
                                   )
            manifest["settings"] = values  # every factor's value as the name says (the server's: "effective")
            manifest.update((stamps or {}).get(cells[i], {}))  # what it measured: harness.measure.digest
            if block is not None:  # where the cell ran in its block (harness.plan.blocks)
                manifest["block"] = {**block, "position": block["position"] + i}
            if len(ds) > 1:  # the group it ran in: one server start for all its cells, in this order
                manifest["group"] = {"cells": list(cells), "position": i + 1, "size": len(cells),
                                     "fresh_server": i == 0}
            manifest["server"]["version"] = part.pop("server_version", "")
            manifest.update(part)
            try:  # a server that ran other settings than the name says is no measurement of it
                effective.check(manifest, kinds.named(manifest))
            except effective.EffectiveError as e:
                raise ServerError(str(e)) from None
            (fr.tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
            manifests.append(manifest)
    return manifests
