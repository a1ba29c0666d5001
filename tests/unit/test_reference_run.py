"""The reference run that ships in results/ (issue RESULTS, item 6): this project's own
default-profile run on its development host, exported with `--replot-only`.

- the bundle imports (BagIt checksums, format version, a manifest per cell) as the host its
  README names, and stays small;
- a replot of it with today's claim rules gives, byte for byte, the claims.csv that ships
  beside it, measuring nothing and starting no server: a change of the claim rules that moves
  a verdict fails here until results/claims.csv is rebuilt (results/README.md says how)."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import ROOT, copy_checkout

RESULTS = ROOT / "results"
BUNDLES = sorted(RESULTS.glob("mysqlbench-*.tar.gz"))
MAX_BYTES = 3_000_000   # "keep it small": results/README.md states the size
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
MEASURING = {"run_cell", "dataset", "corpus", "fetch_build", "bootstrap_template", "repetition_done"}


def test_exactly_one_reference_bundle_ships_and_it_is_small():
    assert len(BUNDLES) == 1, BUNDLES
    size = BUNDLES[0].stat().st_size
    assert size <= MAX_BYTES, size
    readme = (RESULTS / "README.md").read_text()
    assert BUNDLES[0].name in readme


def _meta(bundle: Path) -> dict:
    with tarfile.open(bundle) as tf:
        m = next(m for m in tf if m.name.count("/") == 1 and m.name.endswith("/bundle.json"))
        return json.loads(tf.extractfile(m).read())


def test_the_reference_is_a_default_profile_run_of_replot_only_cells():
    meta = _meta(BUNDLES[0])
    assert meta["profile"] == "default" and meta["contents"] == "each cell's files a replot reads"
    readme = (RESULTS / "README.md").read_text()
    assert f"`{meta['host_id']}`" in readme and f"{meta['cells']} cells" in readme


def test_a_replot_of_the_reference_gives_the_claims_that_ship_with_it(tmp_path):
    work = copy_checkout(tmp_path / "clone")
    env = {k: v for k, v in os.environ.items() if k != "MYSQLBENCH_HOST_ID"}
    env["PYTHONPATH"] = str(work / "workflow")
    res = subprocess.run([sys.executable, "-m", "harness", "import", str(work / "results" / BUNDLES[0].name)],
                         cwd=work, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    host = _meta(BUNDLES[0])["host_id"]
    assert f"as host {host}" in res.stdout
    res = subprocess.run([SNAKEMAKE, "paper/generated/claims.csv", "--cores", "all", "--profile", "profiles/replot"],
                         cwd=work, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    ran = set(re.findall(r"\(Rule: (\w+)\)", res.stdout + res.stderr)) or \
        set(re.findall(r"^rule (\w+):", res.stdout + res.stderr, re.M))
    assert ran and not ran & MEASURING, ran
    assert not (work / "data/raw").exists() and not (work / "resources/builds").exists()
    got = (work / "paper/generated/claims.csv").read_bytes()
    shipped = (RESULTS / "claims.csv").read_bytes()
    assert got == shipped, ("results/claims.csv is not what today's claim rules give on the reference run; "
                            "rebuild it as results/README.md says")
    assert {r["host"] for r in csv.DictReader(got.decode().splitlines())} == {host}
