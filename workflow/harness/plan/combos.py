"""Every combination of an experiment's factors, and why a build cannot run it (None: it runs).

Its own module so that harness.plan.cells (which plans only the combinations someone reads)
and harness.plan.reads (which judges what reads them) both use it without importing each other.
"""
from __future__ import annotations

from harness.measure import kinds
from harness.measure import factors


def builds_of(cfg: dict, exp: str) -> list[str]:
    return cfg["experiments"][exp].get("builds") or cfg["builds"]


def combos(cfg: dict, lock: dict, exp: str):
    """Yield (cell factors without repetition, reason): reason is None for a cell
    that runs, else why its build cannot run it."""
    spec = cfg["experiments"][exp]
    kind = kinds.KINDS[spec["kind"]]
    for build in builds_of(cfg, exp):
        entry = lock[build]
        for variant in factors.expand(spec["variants"]):
            for d in kind.combos(spec, build, variant):
                reason = kind.unsupported(spec, d, entry) or factors.unsupported(variant, entry["family"])
                if reason and not reason.startswith(build):
                    reason = f"{build}: {reason}"
                yield d, reason
