"""Lanes end to end on real servers (harness.plan.lanes, placement.lanes: 2) in a fresh copy
of the repository, on this 2-CPU host where two lanes must share CPUs (oversubscribed).

Two experiments of one design (InnoDB Point-Selects, two cells that differ only in
`replica`, 1,000-row tables, 1 s windows): `lanes_pair`, read by the claim of a study
kept outside the repository ($MYSQLBENCH_STUDY_PATH), and `lanes_free`. Block r of an
experiment runs on one lane (harness.plan.lanes.block_lane), so its blocks alternate
between lanes 0 and 1 and blocks on different lanes run at the same time through
Snakemake's resources (`lane0`, `lane1`) under `--cores all`. Asserts: windows of cells
on the two lanes overlap in time, each manifest records its lane, the other lanes busy
in its window and oversubscribed: true, a block never leaves its lane, the cells of one
lane never overlap, the tidy data and the claim read the blocks of both lanes, and the
paper's deviations table says the lanes were oversubscribed."""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import copy_checkout, one_claim_study, outside_study
from harness import studies

pytestmark = pytest.mark.e2e
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
PYTHON = sys.executable
PAIR, FREE = "lanes_pair", "lanes_free"
CLAIM = "Z9-lanes"
TARGETS = [f"data/tidy/{e}{s}" for e in (PAIR, FREE) for s in ("_summary.csv", ".csv", "_provenance.json")] + [
    "data/tidy/config.resolved.yaml", "data/tidy/unsupported.csv", "data/tidy/official_check.json"]
SELECT = {"workload": "point_select", "engines": ["InnoDB"], "tables": [1], "cores": [1],
          "users": [2], "variants": {"replica": ["a", "b"]}}
STUDY = one_claim_study(
    "A study whose one claim reads the lanes test's paired experiment (tests/e2e/test_lanes_e2e.py).",
    "zz_lanes", "Z9", "Study Z9: a claim on blocks of two lanes", "lanes_pair", "A/A Point-Selects on lanes",
    """[C.LevelRatio(
    id="Z9-lanes", study="Z9", statement="replica a and b within 20%", published="1.00x",
    published_ratio=1.0, rule=C.within(0.8, 1.25, "an A/A pair on shared CPUs"),
    experiments=("lanes_pair",), experiment_name="lanes_pair", engine="InnoDB",
    a=("a",), b=("b",))]""")


def profile(work: Path) -> dict:
    d = yaml.safe_load((work / "config/default.yaml").read_text())
    exps = {k: {"enabled": False} for k in d["experiments"]}
    exps[PAIR] = {"study": "Z9", **SELECT, "repetitions": 4}
    exps[FREE] = {"study": "A3", **SELECT, "repetitions": 3}
    return {"profile": "lanes", "sysbench": {"warmup_s": 0, "duration_s": 1},
            "placement": {"lanes": 2}, "claims": {"level": 0.75},
            "experiment_defaults": {"table_size": 1000}, "experiments": exps}


def study_path(work: Path) -> Path:
    return outside_study(work, "zz_lanes", STUDY)


def env(work: Path) -> dict:
    return {**os.environ, studies.PATH_VAR: str(study_path(work))}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    work = copy_checkout(tmp_path_factory.mktemp("lanes-e2e"))
    (work / "lanes.yaml").write_text(yaml.safe_dump(profile(work)))
    res = subprocess.run([SNAKEMAKE, *TARGETS, "--cores", "all", "--configfile", "lanes.yaml"],
                         cwd=work, capture_output=True, text=True, env=env(work))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    rep = subprocess.run([PYTHON, "-m", "harness", "report", "--tidy-dir", "data/tidy", "--config",
                          "data/tidy/config.resolved.yaml", "--out", "paper/generated"],
                         cwd=work, capture_output=True, text=True,
                         env={**env(work), "PYTHONPATH": str(work / "workflow")})
    assert rep.returncode == 0, rep.stdout[-3000:] + rep.stderr[-3000:]
    return work


def manifests(work: Path, exp: str | None = None) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((work / "data/raw").glob(f"*/{exp or '*'}/*/manifest.json"))]


def window(m: dict) -> tuple[dt.datetime, dt.datetime]:
    t = m["timing"]
    return dt.datetime.fromisoformat(t["started"]), dt.datetime.fromisoformat(t["finished"])


def test_every_manifest_has_its_lane_and_says_oversubscribed(work):
    ms = manifests(work)
    assert len(ms) == 2 * 4 + 2 * 3
    for m in ms:
        assert m["lane"]["count"] == 2 and m["lane"]["lanes"] == [m["lane"]["id"]], m["lane"]
        assert m["lane"]["cpus"] and m["oversubscribed"] is True
        assert isinstance(m["concurrent"], list) and m["concurrent_over"] == "window"
    for exp in (PAIR, FREE):  # a block never leaves its lane; its blocks use both lanes
        lanes = {}
        for m in manifests(work, exp):
            lanes.setdefault(m["block"]["id"], set()).add(m["lane"]["id"])
        assert all(len(v) == 1 for v in lanes.values()), lanes
        assert set().union(*lanes.values()) == {0, 1}, lanes


def test_cells_on_the_two_lanes_overlap_in_time_and_one_lanes_never_do(work):
    ms = manifests(work)
    by_lane = {0: [], 1: []}
    for m in ms:
        by_lane[m["lane"]["id"]].append(window(m))
    overlaps = [(a, b) for a in by_lane[0] for b in by_lane[1] if a[0] < b[1] and b[0] < a[1]]
    assert overlaps, "no cell of lane 0 ran while one of lane 1 did"
    for ws in by_lane.values():
        ws.sort()
        assert all(prev[1] <= nxt[0] for prev, nxt in zip(ws, ws[1:])), ws
    assert any(c["lane"] != m["lane"]["id"] for m in ms for c in m["concurrent"])


def test_the_tidy_data_and_the_claim_read_both_lanes_blocks(work):
    lane_of = {(m["factors"]["variant"], m["factors"]["rep"]): m["lane"]["id"] for m in manifests(work, PAIR)}
    with open(work / f"data/tidy/{PAIR}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(lane_of) == 8
    assert {lane_of[r["variant"], int(r["rep"])] for r in rows} == {0, 1}
    with open(work / "paper/generated/claims.csv", newline="") as f:
        claim = [r for r in csv.DictReader(f) if r["claim"] == CLAIM]
    assert claim and claim[0]["measured"] not in ("", "—") and claim[0]["n"] == "4/4", claim  # 4 blocks, 2 lanes


def test_the_paper_says_the_cells_were_oversubscribed(work):
    text = (work / "paper/generated/deviations.tex").read_text()
    assert "oversubscribed" in text and "2 lanes" in text
