"""One study-C cell (InnoDB and the PostgreSQL stand-in, a few hundred rows) through
Snakemake with the default backend, from a copy of the repository in a mode-700 folder
of the user's home (as root: under /root, mode 700, where a newcomer clones and where
study C's first PostgreSQL cell failed with initdb exit 126). The pinned builds are
reused from this checkout's resources/ (the fetch_build rule's outputs, hash-checked
again by every start); the template is bootstrapped by the pipeline in the copy."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import BUILD, ROOT, SESSION, copy_checkout, server_pids

from harness.measure import docker as docker_backend
from harness.studies.c import legacy_pg as postgres

pytestmark = pytest.mark.e2e
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
EXPERIMENT = "test_drive"
TARGET = f"data/tidy/{EXPERIMENT}_summary.csv"
PG = "postgresql-15"


def profile(work: Path) -> dict:
    """Every experiment off but one test drive: InnoDB, 300 rows, the stand-in beside it."""
    d = yaml.safe_load((work / "config/default.yaml").read_text())
    exps = {k: {"enabled": False} for k in d["experiments"]}
    exps[EXPERIMENT] = {"builds": [BUILD], "engines": ["InnoDB"], "rows": 300, "legacy": True,
                        "repetitions": 1}
    return {"profile": "closedclone", "claims": {"decide": False}, "experiments": exps}


@pytest.fixture(scope="module")
def closed_clone(pg_build, build_dir):
    """The checkout copied to <home>/.mysqlbench-e2e-*/clone, the folder mode 700, its builds reused."""
    top = Path(tempfile.mkdtemp(prefix=".mysqlbench-e2e-", dir=Path.home()))
    os.chmod(top, 0o700)
    work = top / "clone"
    work.mkdir()
    copy_checkout(work)
    for name in (BUILD, PG):
        dest = work / "resources" / "builds" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", "--", str(ROOT / "resources" / "builds" / name), str(dest)], check=True)
    (work / "closed.yaml").write_text(yaml.safe_dump(profile(work)))
    yield work
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the case is root's home; PostgreSQL drops to its own user")
def test_a_study_c_cell_runs_from_a_clone_under_a_mode_700_folder(closed_clone):
    work = closed_clone
    assert oct(work.parent.stat().st_mode & 0o777) == "0o700"
    res = subprocess.run([SNAKEMAKE, TARGET, "--cores", "all", "--configfile", "closed.yaml"], cwd=work,
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    manifests = [json.loads(p.read_text()) for p in (work / "data/raw").glob(f"*/{EXPERIMENT}/*/manifest.json")]
    assert len(manifests) == 1
    m = manifests[0]
    default = yaml.safe_load((work / "config/default.yaml").read_text())["backend"]
    want = "docker" if default == "docker" else m["placement"]["backend"]
    assert m["placement"]["backend"] == want and m["legacy"]["placement"]["backend"] == want
    assert m["legacy"]["build"]["name"] == PG and m["legacy"]["version"].startswith("15.")
    steps = (work / "data/raw").glob(f"*/{EXPERIMENT}/*/steps.tsv")
    text = next(steps).read_text()
    assert "PostgreSQL (legacy stand-in)" in text and "InnoDB" in text
    assert (work / TARGET).is_file()
    assert oct(work.parent.stat().st_mode & 0o777) == "0o700", "the user's folder was chmodded"
    assert server_pids() == [] and postgres.pg_pids(session=SESSION) == []
    assert docker_backend.containers(session=SESSION) == []
