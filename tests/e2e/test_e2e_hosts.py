"""Two real smoke runs, two hosts, one paper (issue 53's test; docs/results.md, "Several hosts in
one paper"). In one scratch clone: the smoke run of tests/e2e/test_e2e_pipeline.py's fixtures, exported
with MYSQLBENCH_HOST_ID=lab-a; its measured cells are then removed (they are in the bundle) and
smoke runs again on the real servers, exported with MYSQLBENCH_HOST_ID=lab-b. The environment
variable is what `./artifact export --host-id` sets: on one machine it labels the second run as a
second host; no measured value is edited (the imported cells are compared byte for byte with the
exported ones). Both bundles are imported into a fresh clone and replotted into one PDF whose
claims table, claims figure and figures of measured curves show both hosts.

Slow (two smoke runs and a replot): the long suite, ./artifact test-long."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_checkout, server_pids
from test_e2e_pipeline import MEASURING, SMOKE, first_run, snakemake, work  # noqa: F401  (the smoke fixtures)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
HOSTS = ("lab-a", "lab-b")


def export(clone: Path, out: Path, host: str) -> Path:
    env = {**os.environ, "PYTHONPATH": str(clone / "workflow"), "MYSQLBENCH_HOST_ID": host}
    res = subprocess.run([sys.executable, "-m", "harness", "export", "--out", str(out)], cwd=clone, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def manifests(raw: Path) -> dict[str, bytes]:
    return {str(p.relative_to(raw)): p.read_bytes() for p in sorted(raw.glob("*/*/*/manifest.json"))}


def test_two_smoke_runs_with_two_host_ids_make_one_paper_showing_both_hosts(work, first_run, tmp_path_factory):  # noqa: F811 (the fixtures above)
    out = tmp_path_factory.mktemp("bundles")
    bundles, cells = {}, {}
    bundles["lab-a"] = export(work, out / "lab-a.tar.gz", "lab-a")
    cells["lab-a"] = manifests(work / "data/raw")
    # the second real run in the same clone: its cells (exported above) and block markers go, smoke again
    shutil.rmtree(work / "data/raw")
    shutil.rmtree(work / "data/order", ignore_errors=True)
    snakemake(work, *SMOKE)
    cells["lab-b"] = manifests(work / "data/raw")
    assert cells["lab-b"] and cells["lab-b"] != cells["lab-a"]   # measured again: new manifests (times)
    bundles["lab-b"] = export(work, out / "lab-b.tar.gz", "lab-b")

    fresh = copy_checkout(tmp_path_factory.mktemp("fresh"))
    env = {**os.environ, "PYTHONPATH": str(fresh / "workflow")}
    env.pop("MYSQLBENCH_HOST_ID", None)
    res = subprocess.run([sys.executable, "-m", "harness", "import", *map(str, bundles.values())], cwd=fresh,
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    for h in HOSTS:   # every measured value as it was measured
        assert manifests(fresh / f"data/hosts/{h}/raw") == cells[h], h
    before = set(server_pids())
    res = snakemake(fresh, "--cores", "all", "--configfile", "config/smoke.yaml", "--profile", "profiles/replot")
    assert not any(f"rule {r}:" in res.stdout + res.stderr or f"(Rule: {r})" in res.stdout + res.stderr
                   for r in MEASURING)
    assert set(server_pids()) <= before and not (fresh / "data/raw").exists()

    rows = list(csv.DictReader((fresh / "paper/generated/claims.csv").read_text().splitlines()))
    assert {r["host"] for r in rows} == {*HOSTS, "all"}
    text = subprocess.run(["pdftotext", "-layout", str(fresh / "paper/main.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    table = " ".join(text[text.index("Published claims and the verdicts"):].split())
    assert "host lab-a" in table and "host lab-b" in table and "all hosts" in table
    assert "The 2 hosts whose cells this paper judges" in text
    for pdf in sorted((fresh / "figures").glob("*.pdf")):
        fig = " ".join(subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True,
                                      check=True).stdout.split())
        assert "@ lab-a" in fig, pdf.name   # every figure names its host(s); the per-host ones both
        if pdf.stem in ("claims", "a3_point_select", "builds"):
            assert "@ lab-b" in fig, pdf.name
