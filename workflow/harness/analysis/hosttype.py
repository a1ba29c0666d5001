"""Host types: one experiment's medians come from one kind of CPU.

Why: on a cluster (profiles/slurm) each cell runs on whichever node SLURM
gives it, and the tidy summary takes the median over a cell's repetitions.
If the partition mixes node types, repetitions measured on different CPU
models would be averaged into one number that describes no machine. Every
manifest records its node (`host`: hostname, cpu_model, ...), so tidying an
experiment refuses, in one line, when its cells come from more than one CPU
model; the fix is a partition (or constraint) of identical nodes, a separate
run per node type, or one bundle per node type (`harness export --cpu-model`),
each imported as a host of its own (docs/results.md)."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path


class MixedHostsError(ValueError):
    """An experiment's cells were measured on more than one CPU model."""


def host_type(manifest: dict) -> str:
    """The CPU model a cell ran on (its manifest's `host.cpu_model`)."""
    return (manifest.get("host") or {}).get("cpu_model") or "unknown"


def refuse_mixed(cells: list[Path], manifests: list[dict]) -> None:
    """Raise MixedHostsError (one line naming the models, a cell and host of
    each, and the fix) when the cells' CPU models differ; else nothing."""
    by_type: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    for c, m in zip(cells, manifests):
        by_type[host_type(m)].append((Path(c), m))
    if len(by_type) <= 1:
        return
    experiment = Path(cells[0]).parent.name
    parts = "; ".join(f"{t!r}: {len(v)} cell(s), e.g. {v[0][0].name} on {v[0][1]['host'].get('hostname', '?')}"
                      for t, v in sorted(by_type.items()))
    raise MixedHostsError(
        f"{Path(cells[0]).parent}: experiment {experiment} was measured on {len(by_type)} CPU models ({parts}); "
        "its medians would average different hardware: run it on one node type (a SLURM partition or "
        "--constraint of identical nodes), or export each CPU model's cells as a host of its own "
        "(./artifact export --cpu-model MODEL --host-id ID) and import those bundles into a fresh clone")
