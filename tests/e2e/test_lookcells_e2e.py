"""Blocks after repetitions.figures measure only the cells a claim reads, end to end on real
servers (tests/e2e/test_blocks_e2e.py's tiny profile: 1,000-row tables, 1 s runs).

One experiment, `lc_pending`: InnoDB and MyISAM Point-Selects, replicas a and b. The claim of
a study kept outside the repository ($MYSQLBENCH_STUDY_PATH) reads only its InnoDB cells and
stays undecided until all 4 blocks are measured; the study's figure draws every cell. With
repetitions {min: 2, max: 4, looks: 2, figures: 1}, block 1 measures all 4 cells, blocks 2-4
only the 2 InnoDB cells; look 1 (after block 2) is undecided, so blocks 3 and 4 are added;
the tidy data and the claims read blocks of unequal cell sets."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from conftest import outside_pipeline, outside_study, run_outside
from harness.plan import blocks as B
from harness.plan import cells as plan

pytestmark = pytest.mark.e2e
EXP = "lc_pending"
TARGETS = [f"data/tidy/{EXP}_summary.csv", "paper/generated/claims.csv"]
STUDY = '''"""A study whose claim reads only InnoDB cells and stays undecided until max blocks."""
from harness.analysis import claims as C


class UntilMax(C.LevelRatio):
    """The real rule's result, never decided before all 4 blocks."""

    def evaluate(self, ctx, build):
        res = super().evaluate(ctx, build)
        if not res.ns or min(res.ns) < 4:
            res.verdict, res.pending = C.INCONCLUSIVE, True
        return res


NAME = "zz_lookcells"
CODES = ("Z7",)
TITLE = "Study Z7: later blocks hold the claim's cells only"
SECTION = "section.tex"
EXPERIMENTS = {"lc_pending": ("Z7", "InnoDB and MyISAM Point-Selects")}
CLAIMS = [UntilMax(
    id="Z7-pending", study="Z7", statement="InnoDB replica a and b within 0.01%", published="1.0000x",
    published_ratio=1.0, rule=C.within(0.9999, 1.0001, "narrower than any 1 s run resolves"),
    experiments=("lc_pending",), experiment_name="lc_pending", engine="InnoDB",
    a=("a",), b=("b",))]
FIGURES = {"z7_all": dict(script="fig_point_select.R", flag="ZsevenAll", inputs=[("lc_pending", "summary")])}
SETUP = []
PUBLISHED_MARKS = []


def macros(ctx, rows, fmt):
    return []
'''


def profile(work: Path) -> dict:
    d = yaml.safe_load((work / "config/default.yaml").read_text())
    exps = {k: {"enabled": False} for k in d["experiments"]}
    exps[EXP] = {"study": "Z7", "workload": "point_select", "engines": ["InnoDB", "MyISAM"], "tables": [1],
                 "cores": "max", "users": [4], "variants": {"replica": ["a", "b"]}}
    return {"profile": "lookcells", "sysbench": {"warmup_s": 0, "duration_s": 1},
            "claims": {"decide": False},   # 2 blocks reach no level: the claim's own rule keeps it pending
            "experiment_defaults": {"table_size": 1000,
                                    "repetitions": {"min": 2, "max": 4, "looks": 2, "figures": 1}},
            "experiments": exps}


def study_path(work: Path) -> Path:
    return outside_study(work, "zz_lookcells", STUDY)


def snakemake(work: Path, *args) -> str:
    return run_outside(work, study_path(work), "lookcells.yaml", TARGETS, *args)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    yield from outside_pipeline(tmp_path_factory, "lookcells", "zz_lookcells", STUDY, profile, TARGETS)


def manifests(work: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((work / "data/raw").glob(f"*/{EXP}/*/manifest.json"))]


def test_later_blocks_measured_only_the_cells_the_claim_reads(run):
    work, cfg, lock = run
    look = json.loads((work / B.look_path(EXP, 1)).read_text())
    assert look["decided"] is False and look["blocks"] == 2
    ms = manifests(work)
    by_block = {r: sorted(m["cell"] for m in ms if m["block"]["id"] == r) for r in range(1, 5)}
    assert [len(by_block[r]) for r in range(1, 5)] == [4, 2, 2, 2]
    assert all(m["factors"]["engine"] == "InnoDB" for m in ms if m["block"]["id"] > 1)
    assert {m["factors"]["engine"] for m in ms if m["block"]["id"] == 1} == {"InnoDB", "MyISAM"}
    for r in range(1, 5):
        assert by_block[r] == sorted(plan.cell_names(cfg, lock, EXP, rep=r))
        assert all(m["block"]["size"] == len(by_block[r]) for m in ms if m["block"]["id"] == r)


def test_tidy_data_and_the_claim_read_blocks_of_unequal_cell_sets(run):
    work, _, _ = run
    rows = list(csv.DictReader((work / f"data/tidy/{EXP}.csv").open()))
    assert len(rows) == 4 + 2 * 3
    reps = {(r["engine"], r["rep"]) for r in rows}
    assert {("MyISAM", "1")} == {x for x in reps if x[0] == "MyISAM"}
    claims = list(csv.DictReader((work / "paper/generated/claims.csv").open()))
    mine = [c for c in claims if c.get("id", c.get("claim")) == "Z7-pending"]
    assert mine, claims[:2]


def test_a_second_run_measures_nothing(run):
    work, _, _ = run
    out = snakemake(work, "-n")
    assert "run_cell" not in out and "block_open" not in out, out[-2000:]
