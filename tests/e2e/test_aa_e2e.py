"""The A/A controls end to end on the real MySQL 5.6.24: the default profile's two
AA experiments (scaled down: 1000-row table, 2 s runs, the test drive on 1000
rows) planned by harness.plan.cells, each cell measured by `python -m harness
run-cell` as the pipeline runs it, tidied and reported. The two cells of a pair
differ only in their name: the same server options and the same load; the AA
claims are judged on what was measured (harness.studies.aa)."""
from __future__ import annotations

import csv
import json
import subprocess

import pytest
import yaml

from conftest import BUILD, ROOT, harness_cmd, harness_env
from harness import builds
from harness.plan import cells, config
from harness.studies import aa
from harness import paths

pytestmark = pytest.mark.e2e


def profile() -> dict:
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    cfg = config.deep_merge(cfg, {
        "backend": "host", "sysbench": {"warmup_s": 1, "duration_s": 2},
        "claims": {"decide": False},  # two and one blocks: measured and judged, decided by design never
        "experiments": {aa.THROUGHPUT: {"table_size": 1000, "users": [2], "cores": [1], "repetitions": 2},
                        aa.STEPS: {"rows": 1000, "cores": [1], "repetitions": 1}}})
    cfg["experiments"] = {k: v for k, v in cfg["experiments"].items() if k in (aa.THROUGHPUT, aa.STEPS)}
    return config.resolve(cfg)


def run(args):
    p = subprocess.run(harness_cmd(*args), capture_output=True, text=True, env=harness_env(), cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def options(cell_dir) -> dict:
    """my.cnf's options that are not paths of the cell itself."""
    out = {}
    for line in (cell_dir / "my.cnf").read_text().splitlines():
        k, sep, v = line.partition("=")
        if sep and "/" not in v:
            out[k.strip()] = v.strip()
    return out


@pytest.fixture(scope="module")
def measured(build_dir, template, dataset, tmp_path_factory):
    cfg = profile()
    lock = builds.load_lock(paths.LOCK)
    work = tmp_path_factory.mktemp("aa")
    raw, tidy, gen = work / "raw", work / "tidy", work / "generated"
    tidy.mkdir()
    out = {}
    for exp in (aa.THROUGHPUT, aa.STEPS):
        names = cells.cell_names(cfg, lock, exp)
        dirs = []
        for name in names:
            ds = cells.dataset_path(cfg, exp, name)
            if ds is not None:  # the conftest dataset is the one the plan asks for
                assert ds.endswith(dataset.name), ds
            d = raw / cells.cell_dir(cfg, exp, name, raw="")[1:]
            run(["run-cell", "--cell", name, "--cell-spec", cells.cell_spec(cfg, exp), "--build-dir",
                 str(build_dir), "--source", str(dataset if ds else template), "--out", str(d)])
            dirs.append(d)
        run(["tidy", "--cells", *map(str, dirs), "--runs", str(tidy / f"{exp}.csv"),
             "--summary", str(tidy / f"{exp}_summary.csv"), "--provenance", str(tidy / f"{exp}_provenance.json"),
             "--cv-threshold", "0.05", "--profile", "aa-e2e", "--extra-dir", str(tidy)])
        out[exp] = dirs
    (tidy / "config.resolved.yaml").write_text(yaml.safe_dump(cfg))
    rep = run(["report", "--tidy-dir", str(tidy), "--config", str(tidy / "config.resolved.yaml"), "--out", str(gen)])
    with open(gen / "claims.csv", newline="") as f:
        claims = {r["claim"]: r for r in csv.DictReader(f)}
    return {"cells": out, "claims": claims, "stderr": rep.stderr, "macros": (gen / "macros.tex").read_text()}


def test_a_pair_is_two_cells_with_the_same_server_and_load(measured):
    thr = measured["cells"][aa.THROUGHPUT]
    assert [d.name for d in thr] == [f"{BUILD}_InnoDB_replica-{x}_t1_c1_u2_r{r}" for r in (1, 2) for x in "ab"]
    by = {d.name: d for d in thr}
    for r in (1, 2):
        a, b = by[f"{BUILD}_InnoDB_replica-a_t1_c1_u2_r{r}"], by[f"{BUILD}_InnoDB_replica-b_t1_c1_u2_r{r}"]
        ma, mb = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
        assert ma["settings"].pop("replica") == "a" and mb["settings"].pop("replica") == "b"
        assert ma["settings"] == mb["settings"]
        assert options(a) == options(b)
        assert ma["result"]["qps"] > 0 and mb["result"]["qps"] > 0
    steps = measured["cells"][aa.STEPS]
    assert [d.name for d in steps] == [f"{BUILD}_replica-{x}_c1_r1" for x in "ab"]
    assert options(steps[0]) == options(steps[1])
    for d in steps:
        rows = (d / "steps.tsv").read_text()
        assert "C1\tInnoDB\tinsert_s" in rows


def test_the_aa_claims_are_judged_on_the_measured_pairs(measured):
    thr, steps = (measured["claims"][c.id] for c in aa.CLAIMS)
    assert thr["study"] == steps["study"] == "AA"
    assert thr["n"] == "2/2" and float(thr["ratio"]) > 0 and thr["side"] == "within"
    assert steps["n"] == "1/1" and float(steps["ratio"]) > 0 and steps["metric"] == "time_s"
    # two or one block(s), claims.decide false: inconclusive, never decided by noise
    assert thr["verdict"] == steps["verdict"] == "inconclusive"
    # and the paper says what the run can tell: no resolution, no quiet check at 0.99
    assert "states no resolution" in measured["macros"]
    assert "could not be checked" in measured["macros"]
    assert "not quiet" not in measured["stderr"]
