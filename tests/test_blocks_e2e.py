"""Blocks and looks end to end on real servers (a tiny profile: 1,000-row tables, 1 s
runs, InnoDB and MyISAM, repetitions {min: 2, max: 4, looks: 2}) in a fresh copy of the
repository.

Two experiments of the same design: `point_select`, which claims of study A3 read,
and `blocks_free`, which no claim reads. A look at an experiment no claim reads is
decided (harness.analysis.looks: no verdict waits for its blocks), so blocks_free stops
after look 1 at 2 blocks. point_select is not decided at look 1: two blocks can decide
no claim at `claims.level` (while harness.analysis.claims.experiment_decided is not
merged, harness.analysis.looks answers "not decided" for every claim-read experiment,
and says so), so its blocks 3 and 4 are added. Every manifest records its block, and
within each block the cells ran one after the other in the block's seeded order.
Then an interrupted block (its .done gone, its last cell missing) is re-run whole on
the next run, the cell it had set aside under data/partial/."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import copy_checkout
from harness import builds
from harness.plan import blocks as B
from harness.plan import cells as plan
from harness.plan import config

pytestmark = pytest.mark.e2e
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TARGETS = ["data/tidy/point_select_summary.csv", "data/tidy/blocks_free_summary.csv"]
SELECT = {"engines": ["InnoDB", "MyISAM"], "tables": [1], "cores": "max", "users": [4]}


def profile(work: Path) -> dict:
    d = yaml.safe_load((work / "config/default.yaml").read_text())
    exps = {k: {"enabled": False} for k in d["experiments"]}
    exps["point_select"] = dict(SELECT)
    exps["blocks_free"] = {"study": "A3", "workload": "point_select", **SELECT}
    return {"profile": "blocks", "sysbench": {"warmup_s": 0, "duration_s": 1},
            "experiment_defaults": {"table_size": 1000, "repetitions": {"min": 2, "max": 4, "looks": 2}},
            "experiments": exps}


def snakemake(work: Path, *args) -> str:
    res = subprocess.run([SNAKEMAKE, *TARGETS, "--cores", "all", "--configfile", "blocks.yaml", *args],
                         cwd=work, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout + res.stderr


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = copy_checkout(tmp_path_factory.mktemp("blocks-e2e"))
    prof = profile(work)
    (work / "blocks.yaml").write_text(yaml.safe_dump(prof))
    snakemake(work)
    cfg: dict = {}
    for part in (yaml.safe_load((work / "config/default.yaml").read_text()), prof):
        config.deep_merge(cfg, part)
    return work, config.resolve(cfg), builds.load_lock(config.LOCK)


def manifests(work: Path, exp: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((work / "data/raw/A3" / exp).glob("*/manifest.json"))]


def test_a_decided_look_stops_the_sweep_an_undecided_one_adds_blocks(run):
    work, cfg, lock = run
    free = json.loads((work / B.look_path("blocks_free", 1)).read_text())
    assert free["decided"] is True and free["blocks"] == 2 and "no claim reads" in free["why"]
    selected = json.loads((work / B.look_path("point_select", 1)).read_text())
    assert selected["decided"] is False and selected["blocks"] == 2 and selected["claims"]
    assert sorted(m["block"]["id"] for m in manifests(work, "blocks_free")) == [1, 1, 2, 2]
    assert sorted(m["block"]["id"] for m in manifests(work, "point_select")) == [1, 1, 2, 2, 3, 3, 4, 4]
    assert not (work / B.look_path("point_select", 2)).exists()  # the last look adds nothing: none
    rows = (work / "data/tidy/point_select.csv").read_text().splitlines()
    assert len(rows) == 1 + 8  # the tidy data read every block measured


def test_every_block_ran_its_cells_back_to_back_in_its_seeded_order(run):
    work, cfg, lock = run
    for exp in ("point_select", "blocks_free"):
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
    first, second = [plan.cell_dir(cfg, "point_select", n) for n in B.order(cfg, lock, "point_select", 4)]
    before = json.loads((work / first / "manifest.json").read_text())
    # what a run cut inside block 4 leaves: its first cell, not its second, no .done
    subprocess.run(["rm", "-rf", str(work / second), str(work / B.done_path("point_select", 4))], check=True)
    out = snakemake(work)
    kept = work / "data/partial/A3/point_select" / f"{Path(first).name}.attempt1"
    assert json.loads((kept / "manifest.json").read_text()) == before  # set aside, not deleted
    again = [json.loads((work / c / "manifest.json").read_text()) for c in (first, second)]
    assert again[0]["timing"]["started"] > before["timing"]["finished"]  # measured again
    assert again[0]["timing"]["finished"] <= again[1]["timing"]["started"]  # in the block's order
    assert json.loads((work / B.open_path("point_select", 4, 2)).read_text())["set_aside"] == [
        str(kept.relative_to(work))], out[-2000:]
    # blocks 1..3 untouched
    assert sorted(m["block"]["id"] for m in manifests(work, "point_select")) == [1, 1, 2, 2, 3, 3, 4, 4]
