"""Duet pairing end to end on real servers (pairing: duet, harness.plan.duet,
harness.measure.duetrun) in a fresh copy of the repository, on this 2-CPU host where the
two lanes share CPUs (placement.lanes: 2, oversubscribed): here a pair's two sides run at
once for the mechanics, not for accuracy.

Two experiments: `duet_mmap` (MyISAM Point-Selects with `myisam_use_mmap` off and on,
so its duet factor is that variant; read by the claim of a study kept outside the
repository, $MYSQLBENCH_STUDY_PATH) and `duet_engines` (InnoDB vs MyISAM, its factor the
engine: two datasets). Asserts: every manifest names its pair, its side and its lane,
the two sides of a pair ran at once on the two lanes with their windows starting
together, side A ran on both lanes over the blocks, the temporary unit directories are
gone and every cell stands at its data/raw path, the tidy data and the claim read every
block, the paper's deviations table says pairs ran at once; one side failing stops
the other, leaving no unit and no server behind; and a pair without twin lanes (a SLURM
node) runs one side after the other."""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SESSION, harness_env, one_claim_study, outside_pipeline, server_pids
from harness.measure import procs
from harness.plan import cells

# the long suite (`./artifact test-long`): duet pairing is optional (`pairing: duet`), and
# its plan and scheduling are in the default suite's tests/unit/test_duet.py
pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PYTHON = sys.executable
AA, ENG = "duet_mmap", "duet_engines"
CLAIM = "Z8-duet"
TARGETS = [f"data/tidy/{e}{s}" for e in (AA, ENG) for s in ("_summary.csv", ".csv", "_provenance.json")] + [
    "data/tidy/config.resolved.yaml", "data/tidy/unsupported.csv", "data/tidy/official_check.json"]
BASE = {"workload": "point_select", "tables": [1], "cores": [1], "users": [2]}
STUDY = one_claim_study(
    "A study whose one claim reads the duet test's mmap experiment (tests/e2e/test_duet_e2e.py).",
    "zz_duet", "Z8", "Study Z8: a claim on duet pairs", "duet_mmap",
    "MyISAM Point-Selects, mmap off and on, duet pairs", """[C.LevelRatio(
    id="Z8-duet", study="Z8", statement="mmap off and on within a third", published="1.00x",
    published_ratio=1.0, rule=C.within(0.75, 1.33, "a pair on shared CPUs"),
    experiments=("duet_mmap",), experiment_name="duet_mmap", engine="MyISAM",
    a=("off",), b=("on",))]""")


def profile(work: Path) -> dict:
    import yaml
    d = yaml.safe_load((work / "config/default.yaml").read_text())
    exps = {k: {"enabled": False} for k in d["experiments"]}
    exps[AA] = {"study": "Z8", **BASE, "engines": ["MyISAM"], "variants": {"myisam_mmap": ["off", "on"]}, "repetitions": 4}
    exps[ENG] = {"study": "A3", **BASE, "engines": ["InnoDB", "MyISAM"], "repetitions": 3}
    return {"profile": "duet", "pairing": "duet", "sysbench": {"warmup_s": 1, "duration_s": 2},
            "placement": {"lanes": 2}, "claims": {"level": 0.75},
            "experiment_defaults": {"table_size": 1000}, "experiments": exps}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    yield from outside_pipeline(tmp_path_factory, "duet", "zz_duet", STUDY, profile, TARGETS)


@pytest.fixture(scope="module")
def work(run):
    work = run[0]
    rep = subprocess.run([PYTHON, "-m", "harness", "report", "--tidy-dir", "data/tidy", "--config",
                          "data/tidy/config.resolved.yaml", "--out", "paper/generated"],
                         cwd=work, capture_output=True, text=True,
                         env={**harness_env(), "PYTHONPATH": str(work / "workflow"),
                              "MYSQLBENCH_STUDY_PATH": str(work / "extra-studies")})
    assert rep.returncode == 0, rep.stdout[-3000:] + rep.stderr[-3000:]
    return work


def manifests(work: Path, exp: str) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((work / "data/raw").glob(f"*/{exp}/*/manifest.json"))}


def t(x: str) -> dt.datetime:
    return dt.datetime.fromisoformat(x)


@pytest.mark.parametrize("exp, blocks, side_a", [(AA, 4, "_mmap-off_"), (ENG, 3, "_InnoDB_")])
def test_every_manifest_names_its_pair_its_side_and_its_lane(work, exp, blocks, side_a):
    ms = manifests(work, exp)
    assert len(ms) == 2 * blocks
    for name, m in ms.items():
        d = m["duet"]
        assert name in d["cells"] and len(d["cells"]) == 2 and d["at_once"] is True
        assert side_a in d["cells"][0] and d["side"] == "AB"[d["cells"].index(name)]
        other = ms[next(c for c in d["cells"] if c != name)]
        assert other["duet"]["cells"] == d["cells"] and other["block"]["id"] == m["block"]["id"]
        assert {m["lane"]["id"], other["lane"]["id"]} == {0, 1}      # the two twins
        assert m["concurrent_over"] == "window"                      # the partner ran during its window
        assert any(c["lane"] == other["lane"]["id"] and other["cell"] in c["cells"] for c in m["concurrent"])
        assert m["oversubscribed"] is True and m["lane"]["count"] == 2
        assert "duet_wait_s" in m["timing"]


@pytest.mark.parametrize("exp", [AA, ENG])
def test_a_pairs_windows_start_together_and_side_a_runs_on_both_twins(work, exp):
    ms = manifests(work, exp)
    lanes_a = []
    for name, m in ms.items():
        if m["duet"]["side"] != "A":
            continue
        other = ms[m["duet"]["cells"][1]]
        (a0, a1), (b0, b1) = ([t(x) for x in mm["duet"]["window"]] for mm in (m, other))
        assert abs((a0 - b0).total_seconds()) < 1.5, (name, a0, b0)   # met before the 1 s warm-up
        assert a0 < b1 and b0 < a1                                       # the windows overlap
        lanes_a.append(m["lane"]["id"])
    assert set(lanes_a) == {0, 1}   # the sides swap twins between blocks
    if len(lanes_a) % 2 == 0:       # blocks even in number: side A as often on either twin
        assert lanes_a.count(0) == lanes_a.count(1), lanes_a


def test_the_unit_directories_are_gone_and_every_cell_stands_at_its_path(work):
    assert not [p for p in (work / "data/duet").rglob("*") if p.is_dir() and "_r" in p.name], \
        list((work / "data/duet").rglob("*"))
    for exp in (AA, ENG):
        for p in (work / "data/raw").glob(f"*/{exp}/*"):
            assert p.is_dir() and not p.is_symlink() and (p / "manifest.json").is_file() and (p / "sysbench.out").is_file()


def test_the_tidy_data_and_the_claim_read_every_block(work):
    with open(work / f"data/tidy/{AA}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and {int(r["rep"]) for r in rows} == {1, 2, 3, 4}
    with open(work / "paper/generated/claims.csv", newline="") as f:
        claim = [r for r in csv.DictReader(f) if r["claim"] == CLAIM]
    assert claim and claim[0]["measured"] not in ("", "—") and claim[0]["n"] == "4/4", claim


def test_the_paper_says_pairs_ran_at_once_on_shared_cpus(work):
    text = (work / "paper/generated/deviations.tex").read_text()
    assert "duet pairing: two cells that differ only in" in text and "paired: duet" in text
    assert "the two sides of a pair competed for them" in text


@pytest.fixture
def docker_engine():
    """An answering engine for the direct run-duet below (the pipeline stopped the one it
    started): scripts/dockerd.sh, this test one of its users (--owner), so the engine is
    stopped by its last user, never under a pipeline running beside the tests."""
    owner = f"pytest-duet-e2e-{os.getpid()}"
    dockerd = str(Path(__file__).resolve().parents[2] / "scripts" / "dockerd.sh")
    res = subprocess.run(["bash", dockerd, "start", "--owner", owner], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr or res.stdout
    yield
    subprocess.run(["bash", dockerd, "stop", "--owner", owner], capture_output=True, text=True, timeout=120)


def test_one_side_failing_stops_the_other_and_leaves_nothing(run, work, docker_engine, tmp_path):
    """Side B's source holds no datadir (its run-cell refuses it before any server starts)
    while side A is starting: the run stops A by its pid, says which cell failed in
    one line, and leaves no unit directory and no server of this session."""
    ms = manifests(work, AA)
    a = next(n for n, m in ms.items() if m["duet"]["side"] == "A" and m["block"]["id"] == 1)
    b = ms[a]["duet"]["cells"][1]
    bad = tmp_path / "bad-source"
    bad.mkdir()
    spec = json.loads(cells.cell_spec(run[1], AA))
    lanes = [json.dumps({**ms[c]["lane"], "server_cpus": "0", "client_cpus": "1", "cell_mems": [],
                         "oversubscribed": True}) for c in (a, b)]
    src = str(next((work / "data/datasets").glob("*/sbtest/MyISAM_t1_n1000")))
    out = tmp_path / "unit"
    before = set(server_pids())
    res = subprocess.run(
        [PYTHON, "-m", "harness", "run-duet", "--cell", a, b, "--pair", a, b, "--cell-spec", json.dumps(spec),
         "--block", *(json.dumps(ms[c]["block"]) for c in (a, b)), "--lane", *lanes, "--at-once",
         "--build-dir", *[str(work / "resources/builds/mysql-5.6.24")] * 2, "--source", src, str(bad),
         "--log", str(tmp_path / "a.log"), str(tmp_path / "b.log"), "--out", str(out)],
        cwd=work, capture_output=True, text=True, timeout=600,
        env={**harness_env(), "PYTHONPATH": str(work / "workflow"), procs.SESSION_VAR: SESSION})
    assert res.returncode == 1, res.stdout + res.stderr
    err = res.stderr.strip().splitlines()
    assert err[-1].startswith(f"error: cell {b} failed") and "the other side was stopped" in err[-1], err
    assert all(x.startswith("waiting for ") for x in err[:-1]), err   # another pipeline's cell on a lane
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".unit.tmp-")]
    assert set(server_pids()) <= before


def test_a_pair_without_twins_runs_one_side_after_the_other(run, work, docker_engine, tmp_path):
    """Where a pair's width has no twin lanes (a SLURM node, which uses no lanes; a cell as
    wide as the host), run-duet gets neither --lane nor --at-once: the two run-cells run one
    after the other, as a block's cells do, and the unit holds both, each manifest saying so."""
    ms = manifests(work, AA)
    a = next(n for n, m in ms.items() if m["duet"]["side"] == "A" and m["block"]["id"] == 2)
    b = ms[a]["duet"]["cells"][1]
    spec = json.loads(cells.cell_spec(run[1], AA))
    src = str(next((work / "data/datasets").glob("*/sbtest/MyISAM_t1_n1000")))
    out = tmp_path / "unit"
    before = set(server_pids())
    res = subprocess.run(
        [PYTHON, "-m", "harness", "run-duet", "--cell", a, b, "--pair", a, b, "--cell-spec", json.dumps(spec),
         "--block", *(json.dumps(ms[c]["block"]) for c in (a, b)),
         "--build-dir", *[str(work / "resources/builds/mysql-5.6.24")] * 2, "--source", src, src,
         "--log", str(tmp_path / "a.log"), str(tmp_path / "b.log"), "--out", str(out)],
        cwd=work, capture_output=True, text=True, timeout=600,
        env={**harness_env(), "PYTHONPATH": str(work / "workflow"), procs.SESSION_VAR: SESSION})
    assert res.returncode == 0, res.stdout + res.stderr + (tmp_path / "b.log").read_text(errors="replace")[-2000:]
    got = {c: json.loads((out / c / "manifest.json").read_text()) for c in (a, b)}
    for c, m in got.items():
        assert m["duet"]["at_once"] is False and m["duet"]["cells"] == [a, b] and m["duet"]["side"] == "AB"[[a, b].index(c)]
        assert (out / c / "sysbench.out").is_file()
    (a0, a1), (b0, b1) = ([t(x) for x in got[c]["duet"]["window"]] for c in (a, b))
    assert a1 <= b0, (a0, a1, b0, b1)   # side A's window ended before side B's began
    assert not (out / ".rendezvous").exists() and set(server_pids()) <= before
