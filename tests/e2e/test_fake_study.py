"""A study added from outside the repository goes through the whole pipeline
with no file of the repository changed (HOUSE: the registries are the one list).

A minimal study package (one experiment on the generic point_select workload
over sbtest, one claim of an existing kind) is written to a temporary folder
on $MYSQLBENCH_STUDY_PATH, with a profile holding its experiment block. Then:
the profile validates with the new study code, harness.plan.cells plans its
cells, recorded real cells renamed for it are tidied and reported by
`python -m harness` with its claim in claims.csv, and `snakemake -n` plans its
run_cell jobs (dry run: nothing is measured).
"""
from __future__ import annotations

import csv
import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import builds, studies
from harness.plan import cells as hplan
from harness.plan import config

from test_retidy_fixture import RAW, REPORT_INPUTS, retidy
from harness import paths

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
CODE, EXPERIMENT, CLAIM = "Z9", "fake_ps", "Z9-fake-myisam-vs-innodb"
# the recorded cells the fake experiment's are copies of (same design: see BLOCK)
SOURCE = RAW / "A3" / "point_select"

STUDY = f'''\
"""A study that is not in the repository (tests/e2e/test_fake_study.py)."""
from harness.analysis import claims as C

NAME = "zz_fake"
CODES = ("{CODE}",)
TITLE = "Study Z: a fake study"
SECTION = "section.tex"
EXPERIMENTS = {{"{EXPERIMENT}": ("{CODE}", "Point-Selects, MyISAM vs InnoDB")}}
CLAIMS = [
    C.EngineRatio(
        id="{CLAIM}", study="{CODE}", statement="Point-Selects, 8 tables: MyISAM beats InnoDB",
        published="MyISAM 2x InnoDB", published_ratio=2.0, rule=C.above(1.0, "a win"),
        macro="ZFakeMyISAM", experiments=("{EXPERIMENT}",), experiment_name="{EXPERIMENT}",
        a="MyISAM", b="InnoDB"),   # tables held at the most both sides have (8): it reads 1 and 8
]
FIGURES = {{}}
SETUP = []
PUBLISHED_MARKS = []


def macros(ctx, rows, fmt):
    return []
'''

# the experiment block of the profile: the design the recorded A3 point_select cells have
BLOCK = {"study": CODE, "workload": "point_select", "dataset": "sbtest", "engines": ["InnoDB", "MyISAM"],
         "tables": [1, 8], "cores": [1], "users": [1, 4], "repetitions": 2}


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    d = tmp_path_factory.mktemp("fake_study")
    (d / "studies" / "zz_fake").mkdir(parents=True)
    (d / "studies" / "zz_fake" / "__init__.py").write_text(STUDY)
    profile = d / "fake.yaml"
    profile.write_text(yaml.safe_dump({"experiments": {EXPERIMENT: BLOCK}}, sort_keys=False))
    return {"dir": d, "path": str(d / "studies"), "profile": profile}


@pytest.fixture
def on_path(fake, monkeypatch):
    monkeypatch.setenv(studies.PATH_VAR, fake["path"])
    return fake


def test_nothing_knows_the_fake_study_without_the_path(fake, monkeypatch):
    monkeypatch.delenv(studies.PATH_VAR, raising=False)
    assert CODE not in studies.codes()
    cfg = config.deep_merge(yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()),
                            yaml.safe_load(fake["profile"].read_text()))
    with pytest.raises(config.ConfigError, match=rf"experiments\.{EXPERIMENT}\.study"):
        config.validate_schema(config.apply_experiment_defaults(
            config.deep_merge(yaml.safe_load((ROOT / "config" / "default.yaml").read_text()), cfg)))


def test_profile_validates_and_the_plan_plans_its_cells(on_path):
    assert CODE in studies.codes() and CLAIM in [c.id for c in studies.claims()]
    cfg = {}
    for f in (ROOT / "config" / "default.yaml", ROOT / "config" / "smoke.yaml", on_path["profile"]):
        config.deep_merge(cfg, yaml.safe_load(Path(f).read_text()))
    resolved = config.resolve(cfg, cpus=[0, 1])
    assert resolved["experiments"][EXPERIMENT]["study"] == CODE
    lock = config.builds.load_lock(paths.LOCK)
    planned = hplan.cells(resolved, lock, EXPERIMENT)
    assert planned and all(p.startswith(f"data/raw/{CODE}/{EXPERIMENT}/") for p in planned)
    # the same design as the recorded cells the next test renames
    assert sorted(Path(p).name for p in planned) == sorted(c.name for c in SOURCE.iterdir() if c.is_dir())


def test_its_cells_are_tidied_and_its_claim_reported(on_path, tmp_path):
    raw = tmp_path / "raw"
    for cell in sorted(c for c in SOURCE.iterdir() if c.is_dir()):
        dst = raw / CODE / EXPERIMENT / cell.name
        shutil.copytree(cell, dst)
        m = json.loads((dst / "manifest.json").read_text())
        m.update(study=CODE, experiment=EXPERIMENT)
        (dst / "manifest.json").write_text(json.dumps(m, indent=2))
    for name in REPORT_INPUTS:
        shutil.copy(RAW / name, raw / name)
    cfg = yaml.safe_load((RAW / "config.resolved.yaml").read_text())
    cfg["experiments"][EXPERIMENT] = {**cfg["experiments"]["point_select"], "study": CODE}
    (raw / "config.resolved.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))

    done = retidy(raw, tmp_path / "out")
    summary = (done["tidy"] / f"{EXPERIMENT}_summary.csv").read_text().splitlines()
    assert len(summary) > 1
    import csv
    with open(done["generated"] / "claims.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["claim"] == CLAIM]
    assert rows and rows[0]["study"] == CODE and rows[0]["experiment"] == EXPERIMENT
    print("ROW", rows[0]); assert rows[0]["measured"], rows[0]  # judged on the renamed cells, not "no data"
    assert "zz_fake" in (done["generated"] / "sections.tex").read_text()


def test_snakemake_plans_its_measuring_jobs(on_path):
    # a dry run for the fake experiment's tidy table; --configfile takes several values: keep it last
    res = subprocess.run([str(SNAKEMAKE), "-n", "--cores", "1", f"data/tidy/{EXPERIMENT}_summary.csv",
                          "--configfile", "config/smoke.yaml", str(on_path["profile"])],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")})
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    n_cells = len([c for c in SOURCE.iterdir() if c.is_dir()])
    jobs = dict(line.split()[:2] for line in out.splitlines()
                if len(line.split()) == 2 and line.split()[1].isdigit())
    # its users 1 and 4 of a setting run as one group job (run_group_u1_4): two cells a job
    assert jobs.get("run_group_u1_4") == str(n_cells // 2) and "run_cell" not in jobs, out[-3000:]
    assert f"data/raw/{CODE}/{EXPERIMENT}/" in out


# --- a study that brings every part of its own, measured and built into the paper ------------

OUTSIDE = ROOT / "tests" / "fixtures" / "outside_study"   # copied to a temporary folder first
OWN_CODE, OWN_FIGURE = "Z8", "zz_kv_engines"
OWN_CAPTION = "Outside study key lookups per engine, drawn by its own script."
OWN_CLAIMS = ("Z8-kv-lookups-myisam-vs-innodb", "Z8-tally-counts-back")
# its experiments, tiny: 500 rows, 1 s warm-up, 2 s windows, two blocks, one core, the host backend
OWN_EXPERIMENTS = {
    "zz_kv": {"study": OWN_CODE, "workload": "zz_kv_get", "dataset": "zz_kv", "engines": ["InnoDB", "MyISAM"],
              "table_size": 500, "users": [2]},
    "zz_tally": {"study": OWN_CODE, "kind": "steps", "script": "zz_tally", "engines": ["InnoDB", "MyISAM"],
                 "rows": 300},
}


def git(cwd: Path, *args) -> str:
    return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@localhost", *args], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout


def outside_profile(work: Path) -> dict:
    """Only the outside study's experiments: every experiment of default.yaml switched off."""
    default = yaml.safe_load((work / "config" / "default.yaml").read_text())
    return {"profile": "outside", "backend": "host",
            "sysbench": {"warmup_s": 1, "duration_s": 2, "users_on_one_server": True},
            "experiment_defaults": {"cores": [1], "repetitions": 2},
            "claims": {"decide": False},
            "experiments": {**{x: {"enabled": False} for x in default["experiments"]}, **OWN_EXPERIMENTS}}


@pytest.fixture(scope="module")
def outside_run(tmp_path_factory):
    """The pipeline, in a fresh copy of the repository committed to a git of its own, with the
    outside study on $MYSQLBENCH_STUDY_PATH from a temporary folder: snakemake to paper/main.pdf."""
    from conftest import copy_checkout
    root_before = git(ROOT, "status", "--porcelain")
    work = copy_checkout(tmp_path_factory.mktemp("clone"))
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "the checkout as cloned")
    studies_dir = tmp_path_factory.mktemp("outside") / "studies"
    shutil.copytree(OUTSIDE, studies_dir)
    profile = studies_dir.parent / "outside.yaml"
    profile.write_text(yaml.safe_dump(outside_profile(work), sort_keys=False))
    env = {**os.environ, studies.PATH_VAR: str(studies_dir)}
    res = subprocess.run([str(SNAKEMAKE), "--cores", "all", "--configfile", str(profile)], cwd=work,
                         capture_output=True, text=True, env=env, timeout=1800)
    return {"work": work, "res": res, "root_before": root_before}


@pytest.mark.e2e
def test_an_outside_study_runs_to_the_paper_with_no_file_of_the_repository_changed(outside_run):
    work, res = outside_run["work"], outside_run["res"]
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-4000:]
    text = subprocess.run(["pdftotext", str(work / "paper/main.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = " ".join(text.split())
    # its figure (drawn by its own R script) and its section, with the sentence its own rule wrote
    assert (work / "figures" / f"{OWN_FIGURE}.pdf").stat().st_size > 3000
    assert OWN_CAPTION in flat and "Study Z8: a study from outside the repository" in flat
    assert re.search(r"kv-innodb 500 rows \(mysql-5\.6\.24\)", flat), flat[-3000:]
    # its claims: rows of claims.csv judged on its measured cells, and in the PDF's claims table
    with open(work / "paper/generated/claims.csv", newline="") as f:
        rows = {r["claim"]: r for r in csv.DictReader(f) if r["study"] == OWN_CODE}
    assert sorted(rows) == sorted(OWN_CLAIMS), rows
    assert rows["Z8-kv-lookups-myisam-vs-innodb"]["ratio"], rows   # a ratio of its measured cells
    assert rows["Z8-tally-counts-back"]["verdict"] == "reproduced", rows
    assert "Outside study: every engine counts back the rows" in flat
    # its cells: each with its manifest, measured by its own driver and step script
    kv = sorted((work / "data/raw" / OWN_CODE / "zz_kv").iterdir())
    tally = sorted((work / "data/raw" / OWN_CODE / "zz_tally").iterdir())
    assert len(kv) == 2 * 2 and len(tally) == 2, (kv, tally)   # 2 engines x 2 blocks; 2 blocks
    for cell in kv + tally:
        m = json.loads((cell / "manifest.json").read_text())
        assert m["cell"] == cell.name and m["study"] == OWN_CODE
    m = json.loads((kv[0] / "manifest.json").read_text())
    assert m["driver"]["script"] == "kv_get.lua" and m["result"]["qps"] > 0
    assert m["build"]["name"] == "mysql-5.6.24" and m["placement"]["backend"] == "host"
    if builds.choose_provider("auto") == "nix":   # the pinned build's bytes from the Nix store
        assert m["build"]["basedir"].startswith("/nix/store/")
    assert "rows_counted" in (tally[0] / "steps.tsv").read_text()
    # no file of the repository changed: not in the copy the run made, not in this checkout
    assert git(work, "status", "--porcelain") == ""
    assert git(ROOT, "status", "--porcelain") == outside_run["root_before"]
