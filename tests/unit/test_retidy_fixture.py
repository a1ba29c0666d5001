"""Re-tidy and re-report recorded real raw cells: the meaning of every
experiment's outputs must survive changes to the harness.

tests/fixtures/raw/ holds real cells of a smoke run (see its README);
tests/fixtures/retidy/expected/ holds what the harness computed from exactly
those cells when they were recorded: per experiment the runs and summary
tables, the figures the report draws, and the claims table. A change that
alters a tidy row, the figure list or a claim's verdict or measured value
fails here. Re-record (only when a change of meaning is intended):

    .venv/bin/python tests/unit/test_retidy_fixture.py --record   (tests/fixtures/raw/README.md)
"""
from __future__ import annotations

import csv
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "fixtures" / "raw"
EXPECTED = ROOT / "tests" / "fixtures" / "retidy" / "expected"
# copied next to the tidy tables: the report reads them from its --tidy-dir
REPORT_INPUTS = ("config.resolved.yaml", "official_check.json", "unsupported.csv")


def retidy(raw_dir: Path, out_dir: Path) -> dict:
    """Tidy every experiment of raw_dir/<study>/<experiment>/<cell>/ and report
    on the result, through this checkout's `python -m harness` CLI (as the
    pipeline does). The one place that knows the CLI: adapt it when that changes.

    Returns {"tidy": dir of <experiment>.csv, <experiment>_summary.csv, ...,
    "generated": dir of claims.csv, ..., "figures": names of the figures drawn}."""
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    tidy_dir, gen_dir = out_dir / "tidy", out_dir / "generated"
    tidy_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    py = [sys.executable, "-m", "harness"]

    def run(args):
        p = subprocess.run(py + args, cwd=out_dir, env=env, capture_output=True, text=True)
        assert p.returncode == 0, f"harness {args[0]} failed:\n{p.stderr[-3000:]}"

    for name in REPORT_INPUTS:
        shutil.copy(raw_dir / name, tidy_dir / name)
    config = yaml.safe_load((raw_dir / "config.resolved.yaml").read_text())
    experiments = sorted(d.name for d in raw_dir.glob("*/*") if d.is_dir())
    for exp in experiments:
        (exp_dir,) = raw_dir.glob(f"*/{exp}")
        cells = sorted(str(c) for c in exp_dir.iterdir() if c.is_dir())
        run(["tidy", "--cells", *cells, "--runs", str(tidy_dir / f"{exp}.csv"),
             "--summary", str(tidy_dir / f"{exp}_summary.csv"),
             "--provenance", str(tidy_dir / f"{exp}_provenance.json"),
             "--cv-threshold", str(config["stats"]["cv_threshold"]),
             "--profile", str(config["profile"]), "--extra-dir", str(tidy_dir)])
    # study A1: the recorded fulltext datasets' dataset.json (gate and load) -> fts_gate/fts_load.csv
    datasets = sorted(str(p) for p in (raw_dir / "datasets").glob("*.json"))
    if datasets:
        run(["fts-export", "--datasets", *datasets, "--gate-out", str(tidy_dir / "fts_gate.csv"),
             "--load-out", str(tidy_dir / "fts_load.csv")])
    run(["report", "--tidy-dir", str(tidy_dir), "--config", str(tidy_dir / "config.resolved.yaml"),
         "--out", str(gen_dir)])
    # the figures the pipeline would draw for these experiments (workflow/rules/paper.smk)
    code = ("import sys\nimport harness.studies  # noqa: F401\nfrom harness import report as r\n"
            "exps = sys.argv[1:]\n"
            "print('\\n'.join(n for n in r.FIGURES if r.figure_inputs(n, exps)))")
    p = subprocess.run([sys.executable, "-c", code, *experiments], env=env, capture_output=True,
                       text=True, check=True)
    return {"tidy": tidy_dir, "generated": gen_dir, "figures": p.stdout.split()}


# Columns copied from the manifest that say where/how long a run went, not
# what it measured: not compared.
NOT_COMPARED = {"duration_s", "backend", "mechanism"}


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def same_value(a: str, b: str) -> bool:
    """Equal strings, or numbers within 1e-9 (absolute or relative)."""
    if a == b:
        return True
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


def unmatched(expected: list[dict], actual: list[dict], columns: list[str]):
    """Rows of each side with no partner on the other (compared over `columns`),
    each actual row matching at most one expected row."""
    left = list(actual)
    missing = []
    for e in expected:
        for i, a in enumerate(left):
            if all(same_value(e[c], a.get(c)) for c in columns):
                del left[i]
                break
        else:
            missing.append(e)
    return missing, left


def assert_same_rows(expected_path: Path, actual_path: Path):
    fields, expected = read_rows(expected_path)
    assert actual_path.exists(), f"{actual_path.name} not written"
    afields, actual = read_rows(actual_path)
    columns = [c for c in fields if c not in NOT_COMPARED]
    gone = [c for c in columns if c not in afields]
    assert not gone, f"{actual_path.name}: columns no longer written: {gone}"
    missing, extra = unmatched(expected, actual, columns)
    show = lambda rows: "\n".join(str({c: r.get(c) for c in columns}) for r in rows[:5])  # noqa: E731
    assert not missing and not extra, (
        f"{actual_path.name}: {len(missing)} expected row(s) not produced, {len(extra)} new row(s)\n"
        f"expected, not produced:\n{show(missing)}\nproduced, not expected:\n{show(extra)}")


def claim_rows(path: Path) -> Counter:
    """(claim id, build, verdict, measured, reason) of every row ('id' in files before the
    claims table had a 'claim' column)."""
    return Counter((r.get("claim") or r["id"], r.get("build", ""), r["verdict"], r["measured"],
                    r.get("reason", "")) for r in read_rows(path)[1])


EXPERIMENTS = sorted(p.name[:-len("_summary.csv")] for p in EXPECTED.glob("*_summary.csv"))


@pytest.fixture(scope="module")
def redone(tmp_path_factory):
    return retidy(RAW, tmp_path_factory.mktemp("retidy"))


def test_fixture_covers_every_recorded_experiment():
    recorded = sorted(d.name for d in RAW.glob("*/*") if d.is_dir())
    assert recorded and recorded == EXPERIMENTS


@pytest.mark.parametrize("experiment", EXPERIMENTS)
@pytest.mark.parametrize("table", ["{}.csv", "{}_summary.csv"])
def test_same_tidy_rows(redone, experiment, table):
    name = table.format(experiment)
    assert_same_rows(EXPECTED / name, redone["tidy"] / name)


@pytest.mark.parametrize("name", ["fts_gate.csv", "fts_load.csv"])
def test_same_dataset_tables(redone, name):
    """Study A1's dataset tables (harness.studies.a1.fts_export) from the recorded dataset.json files."""
    if not (EXPECTED / name).exists():
        pytest.skip(f"no recorded {name}")
    assert_same_rows(EXPECTED / name, redone["tidy"] / name)


def test_same_figures(redone):
    expected = (EXPECTED / "figures.txt").read_text().split()
    assert sorted(redone["figures"]) == sorted(expected)


def test_same_claims(redone):
    expected = claim_rows(EXPECTED / "claims.csv")
    actual = claim_rows(redone["generated"] / "claims.csv")
    assert actual == expected, (f"claims lost or changed: {sorted(expected - actual)}\n"
                                f"claims new or changed: {sorted(actual - expected)}")


def test_comparison_sees_a_changed_number_and_a_lost_row():
    """The comparison itself: a value off by more than 1e-9 or a row gone is a difference."""
    cols = ["engine", "qps_median"]
    rows = [{"engine": "InnoDB", "qps_median": "1000.5"}, {"engine": "MyISAM", "qps_median": "2000"}]
    assert unmatched(rows, [dict(r) for r in rows], cols) == ([], [])
    assert unmatched(rows, [{"engine": "InnoDB", "qps_median": "1000.5000000000001"}, rows[1]], cols) == ([], [])
    changed = [{"engine": "InnoDB", "qps_median": "1000.51"}, rows[1]]
    assert unmatched(rows, changed, cols) == ([rows[0]], [changed[0]])
    assert unmatched(rows, rows[:1], cols) == ([rows[1]], [])


def record(out: Path = EXPECTED) -> None:
    """Write the expected outputs from what this checkout computes from the fixture."""
    with tempfile.TemporaryDirectory() as tmp:
        done = retidy(RAW, Path(tmp))
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for summary in sorted(done["tidy"].glob("*_summary.csv")):
            exp = summary.name[:-len("_summary.csv")]
            for name in (f"{exp}.csv", f"{exp}_summary.csv"):
                shutil.copy(done["tidy"] / name, out / name)
        for name in ("fts_gate.csv", "fts_load.csv"):
            if (done["tidy"] / name).exists():
                shutil.copy(done["tidy"] / name, out / name)
        (out / "figures.txt").write_text("".join(f"{f}\n" for f in done["figures"]))
        shutil.copy(done["generated"] / "claims.csv", out / "claims.csv")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: tests/unit/test_retidy_fixture.py --record  (rewrites tests/fixtures/retidy/expected/)")
    record()
