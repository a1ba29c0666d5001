"""scripts/reference-run.py, the tool that makes results/ (the reference run), end to end on
recorded real cells: tests/fixtures/raw6 is a real default-profile run of three experiments in
six blocks (its README), laid out as the clone that measured it. `make` exports it small,
replots its claims in a fresh copy of this checkout (nothing measured) and writes the bundle,
claims.csv and a README generated from them; `readme --check` sees a hand edit."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tarfile

import yaml
from conftest import ROOT
from harness.plan import config

RAW6 = ROOT / "tests/fixtures/raw6"
TOOL = ROOT / "scripts/reference-run.py"


def tool(*args, check=True):
    env = {k: v for k, v in os.environ.items() if k != "MYSQLBENCH_HOST_ID"}
    res = subprocess.run([sys.executable, str(TOOL), *map(str, args)], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    if check:
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return res


def test_make_writes_a_small_bundle_its_claims_and_a_readme_that_says_them(tmp_path):
    clone = tmp_path / "measured"
    for study in ("A2", "A3"):
        shutil.copytree(RAW6 / study, clone / "data/raw" / study)
    (clone / "data/tidy").mkdir(parents=True)
    shutil.copy(RAW6 / "config.resolved.yaml", clone / "data/tidy")
    (clone / "config").mkdir()
    shutil.copy(ROOT / "config/builds.lock.yaml", clone / "config")
    shutil.copy(ROOT / "CITATION.cff", clone)
    # its profile (raw6's own, not the default): the recorded effective config's profile keys
    resolved = yaml.safe_load((RAW6 / "config.resolved.yaml").read_text())
    profile = tmp_path / "raw6.yaml"
    profile.write_text(yaml.safe_dump({k: v for k, v in resolved.items() if k in config._schema()["properties"]}))
    out = tmp_path / "results"
    tool("make", "--root", clone, "--host-id", "fixture-host", "--out", out, "--configfile", profile)
    bundle = out / "mysqlbench-raw6-fixture-host.tar.gz"
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "claims.csv", bundle.name]
    with tarfile.open(bundle) as tf:
        names = tf.getnames()
        meta = json.loads(tf.extractfile(next(n for n in names if n.endswith("/bundle.json"))).read())
    assert meta["cells"] == 132 and meta["contents"] == "each cell's files a replot reads"
    assert not any(n.endswith(("sysbench.out", "mysqld.err")) for n in names)
    rows = list(csv.DictReader((out / "claims.csv").read_text().splitlines()))
    assert {r["host"] for r in rows} == {"fixture-host"}
    # the run's three experiments were read (their rows judged, or held back by the cores the
    # claim needs: 1-core cells), every other one was not run
    read = {r["experiment"] for r in rows if r["experiment"] and "not run in this profile" not in r["reason"]}
    assert read == {"oltp_ro", "ps_pfs", "read_only"}, read
    text = (out / "README.md").read_text()
    size = bundle.stat().st_size
    assert "`fixture-host`" in text and "132 cells" in text and f"{size:,} bytes" in text
    assert f"{len(rows)} rows" in text
    assert tool("readme", "--out", out, "--check").returncode == 0
    (out / "README.md").write_text(text.replace("132 cells", "133 cells"))
    res = tool("readme", "--out", out, "--check", check=False)
    assert res.returncode == 1 and "README.md" in res.stderr
    bundle.unlink()
    res = tool("readme", "--out", out, check=False)
    assert res.returncode != 0 and "0 bundles" in res.stderr


def test_make_refuses_a_run_of_another_profile(tmp_path):
    clone = tmp_path / "measured"
    shutil.copytree(RAW6 / "A3", clone / "data/raw/A3")
    (clone / "data/tidy").mkdir(parents=True)
    (clone / "data/tidy/config.resolved.yaml").write_text("profile: smoke\n")
    (clone / "config").mkdir()
    shutil.copy(ROOT / "config/builds.lock.yaml", clone / "config")
    shutil.copy(ROOT / "CITATION.cff", clone)
    res = tool("make", "--root", clone, "--out", tmp_path / "results", check=False)
    assert res.returncode == 1 and "profile 'smoke'" in res.stderr
    assert not (tmp_path / "results").exists()
