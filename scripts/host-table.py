#!/usr/bin/env python3
"""The "which host do I need" table: per recorded host (tests/fixtures/topology/hwloc/), what
`./artifact plan --configfile PROFILE --topology FILE` says: its lanes, how many claim rows it
can decide, the expected and worst-case wall time on its lanes (stated defaults: no benchmark
files, no raw cells, so it prints the same anywhere). Prints Markdown; writes nothing.

    scripts/host-table.py [--configfile config/paper.yaml]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

import yaml  # noqa: E402

from harness import studies  # noqa: E402,F401  (registers the studies: harness.registry)
from harness.plan import config, coreplan, estimate  # noqa: E402
from harness.measure import topology  # noqa: E402

HOSTS = ("24em64t-2n6c2t-pci.xml", "32em64t-2n8c2t-pci-noio.xml", "96em64t-4n4d3ca2co-pci.xml",
         "192em64t-12gr2n8c2t.xml")


def row(path: Path, profile: str, empty: str) -> str:
    topo = topology.read(path)
    cfg: dict = {}
    for f in (ROOT / "config" / "default.yaml", ROOT / profile):
        config.deep_merge(cfg, yaml.safe_load(f.read_text()) or {})
    p = coreplan.build(cfg, topo, root=str(ROOT), bench_dir=f"{empty}/b", raw=f"{empty}/r")
    vs, est = p["claims"], p["estimate"]
    ok, rows = sum(v["measurable_rows"] for v in vs), sum(v["rows"] for v in vs)
    ln = est["lanes"]
    return (f"| `{path.name}` ({topo.summary()}) | {ln['count']} × {ln['size']} cores | "
            f"{ok} of {rows} ({100 * ok / rows:.0f}%) | {estimate.hms(est['wall_s'])} | "
            f"{estimate.hms(est['wall_worst_s'])} | {estimate.hms(est['total_s'])} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configfile", default="config/paper.yaml")
    a = ap.parse_args(argv)
    print("| host | lanes | claim rows it can decide | expected | worst case | one cell at a time |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as empty:
        for name in HOSTS:
            print(row(ROOT / "tests" / "fixtures" / "topology" / "hwloc" / name, a.configfile, empty))
    return 0


if __name__ == "__main__":
    sys.exit(main())
