"""scripts/time-table.py: the README's time table, rendered from the profiles and the
run records (the end-to-end pipeline test checks a real run's record renders)."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from harness import builds


from harness.plan import estimate as E

from harness.plan import cells as plan

from harness.report import runlog
from harness import paths

SCRIPT = ROOT / "scripts" / "time-table.py"
spec = importlib.util.spec_from_file_location("time_table", SCRIPT)
tt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tt)


@pytest.fixture
def root(tmp_path):
    shutil.copytree(ROOT / "config", tmp_path / "config")
    (tmp_path / "README.md").write_text("# R\n\nbefore\n<!-- times:begin -->\nold\n<!-- times:end -->\nafter\n")
    return tmp_path


def run(root, *args):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--readme", str(root / "README.md"),
                           *args], capture_output=True, text=True)


def test_every_profile_gets_a_row_with_its_planned_cells_and_nothing_measured(root):
    assert run(root).returncode == 0
    text = (root / "README.md").read_text()
    assert text.startswith("# R\n\nbefore\n<!-- times:begin -->") and text.endswith("<!-- times:end -->\nafter\n")
    lock = builds.load_lock(paths.LOCK)
    for profile, files in tt.profile_files(root):
        cfg = E.load_profile(files, root)
        n = sum(len(plan.cell_names(cfg, lock, x)) for x in plan.experiments(cfg))
        row = next(line for line in text.splitlines() if line.startswith(f"| {tt._cmd(profile, files, root)} |"))
        assert (f"| {n:,} / " in row or f"–{n:,} / " in row) and row.endswith("| not run here |")
    assert "Per experiment" not in text  # no run recorded
    assert run(root, "--check").returncode == 0


def smoke_cells(root) -> int:
    cfg = E.load_profile([str(root / "config" / "smoke.yaml")], root)
    lock = builds.load_lock(paths.LOCK)
    return sum(len(plan.cell_names(cfg, lock, x)) for x in plan.experiments(cfg))


def test_a_recorded_run_and_suite_are_shown_as_measured(root):
    n = smoke_cells(root)
    rec = {"profile": "smoke", "host_cpus": 2, "backend": "docker", "date": "2026-01-02", "wall_s": 754.0,
           "cells": n, "measured_now": n, "from_scratch": True,
           "experiments": {"point_select": {"study": "A3", "kind": "throughput", "cells": 3, "benchmarked": 3,
                                            "measured_s": 40.0, "disk_bytes": 1_200_000}},
           "datasets": {"count": 1, "benchmarked": 1, "measured_s": 12.0, "disk_bytes": 9_000_000}}
    (root / runlog.RUNS).mkdir(parents=True)
    (root / runlog.RUNS / "smoke.json").write_text(json.dumps(rec))
    (root / "logs/tests").mkdir(parents=True)
    (root / "logs/tests/suite-default.json").write_text(json.dumps(
        {"suite": "default", "duration_s": 1783, "cpus": 2, "date": "2026-01-02", "passed": 911, "failed": 0}))
    assert run(root, "--check").returncode == 1  # the README is now out of date
    assert run(root).returncode == 0
    text = (root / "README.md").read_text()
    assert "| 12m34s, 2026-01-02 (note 1) |" in text   # a cell: a figure and a date
    assert "\n1. `./artifact smoke`: 2 CPUs, docker\n" in text   # the rest below the table
    assert "| 29m43s (2 CPUs, 2026-01-02: 911 passed, 0 failed) |" in text
    assert "| `point_select` | A3 | 3 | 0m40s | 1.2 MB |" in text
    # a record of the profile as it was before it changed says how many cells it measured then
    (root / runlog.RUNS / "smoke.json").write_text(json.dumps(dict(rec, cells=n - 4)))
    assert run(root).returncode == 0
    text = (root / "README.md").read_text()
    assert "| 12m34s, 2026-01-02 (note 1) |" in text
    assert f"\n1. `./artifact smoke`: 2 CPUs, docker; {n - 4} cells then\n" in text
    # what else ran meanwhile, however long, is a note: the cell stays a figure and a date
    story = "this session's tests on the same CPUs; the run was interrupted and resumed"
    (root / runlog.RUNS / "smoke.json").write_text(json.dumps(dict(rec, beside=story)))
    assert run(root).returncode == 0
    text = (root / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `./artifact smoke`"))
    assert row.endswith("| 12m34s, 2026-01-02 (note 1) |") and story not in row
    assert f"1. `./artifact smoke`: 2 CPUs, docker; beside it: {story}\n" in text


def test_a_readme_without_the_markers_is_refused_in_one_line(root):
    (root / "README.md").write_text("# R\nno markers\n")
    res = run(root)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "<!-- times:begin -->" in res.stderr
    assert (root / "README.md").read_text() == "# R\nno markers\n"


def test_a_record_kept_from_before_a_change_is_shown_beside_the_run(root):
    n = smoke_cells(root)
    rec = {"profile": "smoke", "host_cpus": 2, "backend": "docker", "date": "2026-01-03", "wall_s": 600.0,
           "cells": n, "measured_now": n, "from_scratch": True, "experiments": {},
           "datasets": {"count": 0, "benchmarked": 0, "measured_s": 0.0, "disk_bytes": 0}}
    (root / runlog.RUNS).mkdir(parents=True)
    (root / runlog.RUNS / "smoke.json").write_text(json.dumps(rec))
    (root / runlog.RUNS / f"smoke{runlog.BEFORE}.json").write_text(json.dumps({**rec, "wall_s": 720.0,
                                                                              "date": "2026-01-02"}))
    assert runlog.load(str(root))["smoke"]["wall_s"] == 600.0
    assert runlog.load(str(root), before=True)["smoke"]["wall_s"] == 720.0
    assert run(root).returncode == 0
    text = (root / "README.md").read_text()
    assert "| 10m00s, 2026-01-03 (note 1) |" in text
    assert "1. `./artifact smoke`: 2 CPUs, docker; before the change: 12m00s, 2026-01-02 (2 CPUs, docker)\n" in text


def test_each_time_column_says_which_it_shows(root):
    """The estimate is the stated defaults' (not a clone's measured rates, which
    `./artifact plan` uses there) and the measured column is the rendering host's logs/
    (issue 55: each table says which it shows); the README's own header is the script's."""
    assert run(root).returncode == 0
    head = next(line for line in (root / "README.md").read_text().splitlines() if line.startswith("| command |"))
    assert "from the stated defaults, not a clone's measured rates" in head
    assert "measured where this table was rendered (its logs/runs/; a fresh clone has none)" in head
    assert head in (ROOT / "README.md").read_text().splitlines()
    hosts = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| host"))
    assert "stated defaults, not a clone's measured rates or CoV" in hosts
