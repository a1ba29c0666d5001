"""What each lever left on the paper plan's wall time would buy, on the recorded topologies.
Prints figures; asserts nothing; starts no server (the planner only, about a second a plan).

The single-host targets of the paper profile (32-thread host: 12 h expected, 36 h worst case;
96- and 192-thread hosts: 6 h expected) are not met with the settings the measurements support.
Each lever below is a profile overlay on config/paper.yaml, planned by the pipeline's own
planner (harness.plan.plancmd.build: lanes, blocks, looks, cells where they are read), so
its figure is exactly what `./artifact plan` would print with that overlay:

  figures3     repetitions.figures: 3 (figures' cells in blocks 1-3, claims' cells in 1-6):
               a figure's order-statistic interval of the median then covers 75 %, not 97 %
  figures1     repetitions.figures: 1: the cells only figures read run in one block (no interval),
               the claims' cells in their 6: a measure of what the claims cost, not a setting to run
  onelook      repetitions {min: 6, max: 6, looks: 1}: one look at 6 blocks, no more blocks for
               an undecided claim (the A/A control's 8: it needs them), so the worst case becomes
               the expected (fewer blocks than 6 are
               refused: each of two looks at 95 % needs 6, and 5 blocks' exact signed-rank
               interval reaches 93.75 % at most)
  autocores    (for reference; close to the sweeps before 2026-11-29, when read_write ran on
               `cores: max`) every experiment that
               config/paper.yaml runs on `cores: study` (each study's own counts that fit)
               on `cores: auto` instead (4, 8, 16, 24, 32 where they fit, 1 and 2 added on
               a host where fewer than four fit)
  groups       sysbench.users_on_one_server: true (rejected by bench/group_vs_fresh.py:
               0 of 4 comparisons inside [0.97, 1.03])
  sharedl3     placement.lanes: the narrower cut whose servers share L3 caches
  halfwindow   warm-up 15 s + window 30 s (NOT supported: at 1,000,000 rows no cell shorter
               than 30 s + 60 s read the claims' ratios without bias)
  honest       figures3 + onelook (the levers that keep every claim's own cells)
  all          every lever above but autocores and figures1, together
  floor        figures1 + onelook + sharedl3: the claims' cells in their 6 blocks plus one block of
               the figures' other cells, at the measured windows, on the fastest cut; close to,
               not exactly, the least the claims need (a claim reads every users level and
               core count its rule peaks over; the schedule is a list schedule; groups would go
               a little lower)

    python bench/plan_levers.py [--topology tests/fixtures/topology/hwloc/X.xml ...]
                                [--levers base figures3 ...] [--tsv out.tsv]
"""
from __future__ import annotations

import argparse
import copy
import csv
import sys
from pathlib import Path

from common import ROOT  # noqa: F401  (puts workflow/ on sys.path)

import yaml  # noqa: E402

from harness.measure import topology  # noqa: E402
from harness.plan import config, plancmd, estimate  # noqa: E402

TOPOLOGIES = ["32em64t-2n8c2t-pci-noio.xml", "96em64t-4n4d3ca2co-pci.xml", "192em64t-12gr2n8c2t.xml"]
TARGETS = {"32em64t-2n8c2t-pci-noio.xml": "≤ 12 h / 36 h", "96em64t-4n4d3ca2co-pci.xml": "≤ 6 h",
           "192em64t-12gr2n8c2t.xml": "≤ 6 h"}


def _figures3(cfg, topo):
    cfg["experiment_defaults"]["repetitions"]["figures"] = 3


def _figures1(cfg, topo):
    cfg["experiment_defaults"]["repetitions"]["figures"] = 1


def _onelook(cfg, topo):
    cfg["experiment_defaults"]["repetitions"].update(min=6, max=6, looks=1)
    for spec in cfg["experiments"].values():   # a profile's own repetitions (aa_throughput's 8 to 24)
        reps = spec.get("repetitions") if isinstance(spec, dict) else None
        if reps:
            reps.update(max=reps["min"], looks=1)


def _autocores(cfg, topo):
    for spec in cfg["experiments"].values():   # every sweep the profile runs on `cores: study`
        if isinstance(spec, dict) and spec.get("cores") == "study":
            spec["cores"] = "auto"


def _groups(cfg, topo):
    cfg.setdefault("sysbench", {})["users_on_one_server"] = True


def _halfwindow(cfg, topo):
    cfg["sysbench"].update(warmup_s=15, duration_s=30)


LEVERS = {"figures3": [_figures3], "figures1": [_figures1], "onelook": [_onelook], "autocores": [_autocores], "groups": [_groups],
          "sharedl3": ["sharedl3"], "halfwindow": [_halfwindow]}
LEVERS["honest"] = LEVERS["figures3"] + LEVERS["onelook"]
LEVERS["all"] = [f for k in ("honest", "groups", "sharedl3", "halfwindow") for f in LEVERS[k]]
LEVERS["floor"] = LEVERS["figures1"] + LEVERS["onelook"] + ["sharedl3"]


def paper() -> dict:
    cfg = config.defaults()
    config.deep_merge(cfg, yaml.safe_load((ROOT / "config/paper.yaml").read_text()))
    return cfg


def plan_times(cfg: dict, topo) -> dict:
    est = plancmd.build(cfg, topo, root=str(ROOT))["estimate"]
    return {"wall_s": est["wall_s"], "wall_worst_s": est["wall_worst_s"], "lanes": est["lanes"]["count"],
            "shared_l3": est.get("shared_l3")}


def with_lever(name: str, topo) -> dict:
    cfg = paper()
    steps = [] if name == "base" else LEVERS[name]
    for step in steps:
        if step == "sharedl3":
            cut = plan_times(copy.deepcopy(cfg), topo)["shared_l3"]
            if cut:
                cfg.setdefault("placement", {})["lanes"] = cut["lanes"]
        else:
            step(cfg, topo)
    return plan_times(cfg, topo)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topology", nargs="+", default=[str(ROOT / "tests/fixtures/topology/hwloc" / t)
                                                      for t in TOPOLOGIES])
    ap.add_argument("--levers", nargs="+", default=["base", *LEVERS], choices=["base", *LEVERS])
    ap.add_argument("--tsv", help="also write one row per topology x lever")
    a = ap.parse_args(argv)
    rows = []
    for path in a.topology:
        topo = topology.read(path)
        base = None
        for lever in a.levers:
            t = with_lever(lever, topo)
            base = base or (t if lever == "base" else None)
            rows.append({"topology": Path(path).name, "lever": lever, "lanes": t["lanes"],
                         "expected_s": round(t["wall_s"]), "worst_s": round(t["wall_worst_s"]),
                         "vs_base": round(base["wall_s"] / t["wall_s"], 2) if base else ""})
    print("| topology | lever | lanes | expected | worst case | base / this | target |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        label = r["lever"]
        print(f"| `{r['topology'].split('-')[0]}` | {label} | {r['lanes']} | {estimate.hms(r['expected_s'])} | "
              f"{estimate.hms(r['worst_s'])} | {r['vs_base']} | {TARGETS.get(r['topology'], '')} |")
    if a.tsv:
        with open(a.tsv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
