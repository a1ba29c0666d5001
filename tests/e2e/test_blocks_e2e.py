"""Blocks and looks end to end on real servers (a tiny profile: 1,000-row tables, 1 s
runs, repetitions {min: 4, max: 6, looks: 2} at claims.level 0.75, whose per-look level
0.875 four blocks reach) in a fresh copy of the repository.

Two experiments of the same design (InnoDB Point-Selects, two cells that differ only in
`replica`): `blocks_pending`, read by the claim of a study kept outside the repository
($MYSQLBENCH_STUDY_PATH) that is judged by the real rule but held undecided while fewer
than max blocks are measured (an A/A interval of four blocks at 87.5 % lies wholly
outside any band one time in eight, so the rule alone cannot keep a look undecided);
and `blocks_free`, which no claim reads. A look at an experiment no claim
reads is decided (harness.analysis.looks), so blocks_free stops after look 1 at 4 blocks;
blocks_pending is not decided at look 1, so its blocks 5 and 6 are added. Every manifest
records its block, and within each block the cells ran one after the other in the
block's seeded order. Then an interrupted block (its .done gone, its last cell missing)
is re-run whole on the next run, the cell it had set aside under data/partial/."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import outside_pipeline, outside_study, run_outside
from harness.plan import blocks as B
from harness.plan import cells as plan

pytestmark = pytest.mark.e2e
PENDING = "blocks_pending"
TARGETS = [f"data/tidy/{PENDING}_summary.csv", "data/tidy/blocks_free_summary.csv"]
SELECT = {"workload": "point_select", "engines": ["InnoDB"], "tables": [1], "cores": "max",
          "users": [4], "variants": {"replica": ["a", "b"]}}
STUDY = '''"""A study whose one claim stays undecided until max blocks (tests/e2e/test_blocks_e2e.py)."""
from harness.analysis import claims as C


class UntilMax(C.LevelRatio):
    """The real rule's result, but never decided before all 6 blocks: under no effect
    the rule itself decides a look of 4 blocks one time in 8 (all four on one side)."""

    def evaluate(self, ctx, build):
        res = super().evaluate(ctx, build)
        if res.ns and min(res.ns) < 6:
            res.verdict, res.pending = C.INCONCLUSIVE, True
        return res


NAME = "zz_pending"
CODES = ("Z8",)
TITLE = "Study Z8: a claim that stays undecided"
SECTION = "section.tex"
EXPERIMENTS = {"blocks_pending": ("Z8", "A/A Point-Selects")}
CLAIMS = [UntilMax(
    id="Z8-pending", study="Z8", statement="replica a and b within 0.01%", published="1.0000x",
    published_ratio=1.0, rule=C.within(0.9999, 1.0001, "narrower than any 1 s run resolves"),
    experiments=("blocks_pending",), experiment_name="blocks_pending", engine="InnoDB",
    a=("a",), b=("b",))]
FIGURES = {}
SETUP = []
PUBLISHED_MARKS = []


def macros(ctx, rows, fmt):
    return []
'''


def profile(work: Path) -> dict:
    d = yaml.safe_load((work / "config/default.yaml").read_text())
    exps = {k: {"enabled": False} for k in d["experiments"]}
    exps[PENDING] = {"study": "Z8", **SELECT}
    exps["blocks_free"] = {"study": "A3", **SELECT}
    return {"profile": "blocks", "sysbench": {"warmup_s": 0, "duration_s": 1},
            "claims": {"level": 0.75},
            "experiment_defaults": {"table_size": 1000, "repetitions": {"min": 4, "max": 6, "looks": 2}},
            "experiments": exps}


def study_path(work: Path) -> Path:
    return outside_study(work, "zz_pending", STUDY)


def snakemake(work: Path, *args) -> str:
    return run_outside(work, study_path(work), "blocks.yaml", TARGETS, *args)


@pytest.fixture(scope="module")
def run(tmp_path_factory):  # the plan here knows study Z8 too
    yield from outside_pipeline(tmp_path_factory, "blocks", "zz_pending", STUDY, profile, TARGETS)


def manifests(work: Path, exp: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((work / "data/raw").glob(f"*/{exp}/*/manifest.json"))]


def test_a_decided_look_stops_the_sweep_an_undecided_one_adds_blocks(run):
    work, cfg, lock = run
    free = json.loads((work / B.look_path("blocks_free", 1)).read_text())
    assert free["decided"] is True and free["blocks"] == 4 and "no claim reads" in free["why"]
    pending = json.loads((work / B.look_path(PENDING, 1)).read_text())
    assert pending["decided"] is False and pending["blocks"] == 4 and pending["claims"] == ["Z8-pending"]
    assert sorted(m["block"]["id"] for m in manifests(work, "blocks_free")) == [1, 1, 2, 2, 3, 3, 4, 4]
    assert sorted(m["block"]["id"] for m in manifests(work, PENDING)) == [r for r in range(1, 7) for _ in "ab"]
    assert not (work / B.look_path(PENDING, 2)).exists()  # the last look adds nothing: none
    rows = (work / f"data/tidy/{PENDING}.csv").read_text().splitlines()
    assert len(rows) == 1 + 12  # the tidy data read every block measured


def test_every_block_ran_its_cells_back_to_back_in_its_seeded_order(run):
    work, cfg, lock = run
    for exp in (PENDING, "blocks_free"):
        ms = manifests(work, exp)
        last_finished = ""
        for r in sorted({m["block"]["id"] for m in ms}):
            block = sorted((m for m in ms if m["block"]["id"] == r), key=lambda m: m["block"]["position"])
            assert [m["cell"] for m in block] == B.order(cfg, lock, exp, r)
            assert all(m["block"] == {"id": r, "position": i, "seed": B.block_seed(cfg, exp, r), "size": 2}
                       for i, m in enumerate(block, 1))
            assert all(m["factors"]["rep"] == r for m in block)
            for m in block:  # one after the other, block after block
                assert last_finished <= m["timing"]["started"] <= m["timing"]["finished"]
                last_finished = m["timing"]["finished"]
            opened = json.loads((work / B.open_path(exp, r, 1)).read_text())
            assert opened["order"] == B.order(cfg, lock, exp, r) and opened["seed"] == B.block_seed(cfg, exp, r)


def test_a_second_run_measures_nothing(run):
    work, _, _ = run
    out = snakemake(work, "-n")
    assert "run_cell" not in out and "block_open" not in out, out[-2000:]


def test_an_interrupted_block_is_measured_again_whole_nothing_discarded(run):
    work, cfg, lock = run
    first, second = [plan.cell_dir(cfg, PENDING, n) for n in B.order(cfg, lock, PENDING, 6)]
    before = json.loads((work / first / "manifest.json").read_text())
    # what a run cut inside block 4 leaves: its first cell, not its second, no .done
    subprocess.run(["rm", "-rf", str(work / second), str(work / B.done_path(PENDING, 6))], check=True)
    out = snakemake(work)
    kept = work / "data/partial/Z8" / PENDING / f"{Path(first).name}.attempt1"
    assert json.loads((kept / "manifest.json").read_text()) == before  # set aside, not deleted
    again = [json.loads((work / c / "manifest.json").read_text()) for c in (first, second)]
    assert again[0]["timing"]["started"] > before["timing"]["finished"]  # measured again
    assert again[0]["timing"]["finished"] <= again[1]["timing"]["started"]  # in the block's order
    assert json.loads((work / B.open_path(PENDING, 6, 2)).read_text())["set_aside"] == [
        str(kept.relative_to(work))], out[-2000:]
    # blocks 1..5 untouched
    assert sorted(m["block"]["id"] for m in manifests(work, PENDING)) == [r for r in range(1, 7) for _ in "ab"]
