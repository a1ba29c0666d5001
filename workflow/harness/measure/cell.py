"""One measured cell: the shared frame (harness.measure.frame) around the measurement
kind's step (kinds.throughput, kinds.steps). The cell appears at its output
path, with its manifest.json, only when all of it succeeded.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.plan import factors

from harness.measure import effective, kinds
from harness.measure.frame import Frame
from harness.measure.server import ServerError


def run_cell(*, experiment: str, spec: dict, cell: str, entry: dict, build_dir: Path, source: Path,
             settings: dict, out: Path, block: dict | None = None) -> dict:
    """Measure cell `cell` of `experiment` (its resolved config block `spec`) into `out`.

    `source` holds the datadir the cell starts from: a prepared dataset, or the
    build's empty template for kinds without one. `block` (harness.plan.blocks.info:
    id, position, seed, size) goes into the manifest as it is. Returns the manifest.
    """
    kind_name = spec["kind"]
    kind = kinds.KINDS[kind_name]
    d = kind.parse(cell)
    if Path(out).name != cell:
        raise ValueError(f"output {out} is not named after cell {cell}")
    variant = factors.parse(d["variant"])
    why = factors.unsupported(variant, entry["family"])
    if why:
        raise ServerError(f"variant {d['variant']}: {why}; drop it for build {d['build']}")
    values = factors.settings(variant, d.get("engine", ""), spec.get("workload")) if "engine" in d else \
        factors.step_settings(variant)
    options = {**settings["options"],
               **kind.server_options(spec, d, values, entry["family"])}
    users = d.get("users", 0)
    with Frame(out=Path(out), name=d["build"], entry=entry, build_dir=build_dir, source=source,
               cores=d["cores"], settings=settings, options=options, max_connections=users + 16 + 48) as fr:
        part = kind.measure(fr, spec, d, values, settings)
        fr.finish()
        manifest = fr.manifest(kind=kind_name, study=spec["study"], experiment=experiment,
                               factors={**d, **({"workload": spec["workload"]} if "workload" in spec else {}),
                                        **({"script": spec["script"]} if "script" in spec else {}),
                                        **({"table_size": spec["table_size"]} if "table_size" in spec else {}),
                                        **{f"variant_{k}": v for k, v in variant.items()}},
                               )
        manifest["settings"] = values  # every factor's value as the name says (the server's: "effective")
        if block is not None:  # where the cell ran in its block (harness.plan.blocks)
            manifest["block"] = block
        manifest["server"]["version"] = part.pop("server_version", "")
        manifest.update(part)
        try:  # a server that ran other settings than the name says is no measurement of it
            effective.check(manifest)
        except effective.EffectiveError as e:
            raise ServerError(str(e)) from None
        (fr.tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return manifest
