"""Effective settings end to end (harness.measure.effective): real cells on the real
MySQL 5.6.24 (and the pinned PostgreSQL 15 as study C's stand-in) carry an `effective`
block with every factor as the running server showed it, tidy fills its factor columns
from it, and tidy refuses a copy of such a real cell with the block removed or with a
value its name does not say (one line naming the cell and the fix).

- throughput: the baseline (prepared statements off: Com_stmt_execute 0; every wait
  instrument timed; InnoDB's log flushed per commit) and a prepared-statements cell
  with the build's default instruments (Com_stmt_execute > 0; fewer wait instruments
  timed: the instrumentation-cost experiment's two PFS settings);
- steps: study C's baseline (durability relaxed, Performance Schema off:
  innodb_flush_log_at_trx_commit=2, synchronous_commit=off) and its per-commit
  experiment (1, on).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, cell_spec, run_settings
from harness.analysis import tidywrite
from harness.measure import cell, effective

pytestmark = pytest.mark.e2e
SETTINGS = {"warmup_s": 1, "duration_s": 2}
STEPS = {"study": "C1", "kind": "steps", "script": "c_test_drive", "engines": ["InnoDB", "MyISAM"],
         "cores": [1], "rows": 1000, "legacy": True, "legacy_build": "postgresql-15"}


def _throughput(tmp_path, build_dir, lock_entry, source, name, **spec):
    req = cell_spec(SETTINGS, **spec)
    out = tmp_path / "raw" / "A3" / req["experiment"] / name
    m = cell.run_cell(experiment=req["experiment"], spec=req["spec"], cell=name, entry=lock_entry,
                      build_dir=build_dir, source=source, settings=req["settings"], out=out)
    return m, out


def _steps(tmp_path, build_dir, lock_entry, template, experiment, name, variants):
    spec = {**STEPS, "variants": variants}
    out = tmp_path / "raw" / "C1" / experiment / name
    m = cell.run_cell(experiment=experiment, spec=spec, cell=name, entry=lock_entry, build_dir=build_dir,
                      source=template, settings=run_settings(**SETTINGS), out=out)
    return m, out


@pytest.fixture(scope="module")
def base(build_dir, lock_entry, dataset, tmp_path_factory):
    return _throughput(tmp_path_factory.mktemp("base"), build_dir, lock_entry, dataset,
                       f"{BUILD}_InnoDB_base_t1_c1_u2_r1")


@pytest.fixture(scope="module")
def relaxed(build_dir, lock_entry, template, pg_build, tmp_path_factory):
    return _steps(tmp_path_factory.mktemp("c"), build_dir, lock_entry, template, "test_drive",
                  f"{BUILD}_pfs-off.dur-relaxed_c1_r1", {"durability": ["relaxed"], "pfs": ["off"]})


def test_baseline_throughput_cell_shows_its_settings(base):
    m, _ = base
    eff = m["effective"]
    assert eff["factors"] == {**m["settings"]}  # what the name says is what the server showed
    assert eff["factors"]["ps"] == "off" and eff["statements"]["Com_stmt_execute"] == 0
    assert eff["statements"]["Com_select"] > 100
    assert eff["factors"]["pfs"] == "on" and eff["variables"]["performance_schema"] == "ON"
    ins = eff["instruments"]
    assert ins["wait_total"] > 0 and ins["wait_timed"] == ins["wait_total"]
    assert eff["factors"]["durability"] == "per_commit"
    assert eff["variables"]["innodb_flush_log_at_trx_commit"] == "1"
    assert eff["variables"]["autocommit"] == "ON"
    assert eff["factors"]["spin_wait_delay"] == 96 and eff["variables"]["innodb_spin_wait_delay"] == "96"
    assert eff["source"]["ps"] == "statement counters" and eff["source"]["replica"].startswith("name")


def test_prepared_statements_and_default_instruments_show_in_the_counters(build_dir, lock_entry, dataset,
                                                                          tmp_path, base):
    m, _ = _throughput(tmp_path, build_dir, lock_entry, dataset, f"{BUILD}_InnoDB_ps-on.pfs-defaultinstruments_t1_c1_u2_r1",
                       variants={"ps": ["on"], "pfs": ["default_instruments"]})
    eff = m["effective"]
    assert eff["factors"]["ps"] == "on" and eff["statements"]["Com_stmt_execute"] > 100
    assert eff["factors"]["pfs"] == "default_instruments"
    assert 0 < eff["instruments"]["wait_timed"] < eff["instruments"]["wait_total"]
    assert eff["instruments"]["wait_total"] == base[0]["effective"]["instruments"]["wait_total"]
    assert "performance_schema_instrument" not in (m["server"]["my_cnf"])


def test_study_c_baseline_is_relaxed_without_performance_schema(relaxed):
    m, _ = relaxed
    eff = m["effective"]
    assert eff["factors"]["durability"] == "relaxed" and eff["factors"]["pfs"] == "off"
    assert eff["variables"]["innodb_flush_log_at_trx_commit"] == "2"
    assert eff["variables"]["performance_schema"] == "OFF" and eff["instruments"] is None
    assert eff["variables"]["autocommit"] == "ON"  # autocommit kept: only the flush is relaxed
    assert eff["postgres"]["synchronous_commit"] == "off" and m["legacy"]["effective"]["fsync"] == "on"
    assert "innodb_flush_log_at_trx_commit=2" in m["server"]["my_cnf"]


def test_study_c_per_commit_experiment_flushes_every_commit(build_dir, lock_entry, template, pg_build, tmp_path):
    m, out = _steps(tmp_path, build_dir, lock_entry, template, "test_drive_per_commit",
                    f"{BUILD}_pfs-off.dur-percommit_c1_r1", {"durability": ["per_commit"], "pfs": ["off"]})
    eff = m["effective"]
    assert eff["factors"]["durability"] == "per_commit"
    assert eff["variables"]["innodb_flush_log_at_trx_commit"] == "1"
    assert eff["postgres"]["synchronous_commit"] == "on"
    rows = (out / "steps.tsv").read_text()
    assert "synchronous_commit=on" in rows


def _tidy(cells, tmp_path):
    tidywrite.tidy(cells, tmp_path / "t.csv", tmp_path / "t_summary.csv", tmp_path / "t_prov.json", 0.05, "test")
    return (tmp_path / "t.csv").read_text().splitlines()


def test_tidy_reads_the_factor_columns_from_effective(base, relaxed, tmp_path):
    head, row = _tidy([base[1]], tmp_path)
    cols = dict(zip(head.split(","), row.split(",")))
    assert cols["ps"] == "off" and cols["pfs"] == "on" and cols["durability"] == "per_commit"
    assert cols["key_cache"] == ""  # a MyISAM factor: blank on InnoDB, never read as a baseline
    lines = _tidy([relaxed[1]], tmp_path)
    c = dict(zip(lines[0].split(","), lines[1].split(",")))
    assert c["durability"] == "relaxed" and c["pfs"] == "off"


def _copy(src, tmp_path, change):
    dst = tmp_path / "copy" / src.parent.name / src.name
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    change(m)
    (dst / "manifest.json").write_text(json.dumps(m))
    return dst


@pytest.mark.parametrize("which", ["base", "relaxed"])
def test_a_cell_without_effective_settings_is_refused(which, request, tmp_path):
    src = request.getfixturevalue(which)[1]
    bad = _copy(src, tmp_path, lambda m: m.pop("effective"))
    with pytest.raises(effective.EffectiveError, match=rf"^cell {src.name} has no effective settings .*"
                                                        r"re-measure it"):
        _tidy([bad], tmp_path)
    # through the pipeline's command: one line, naming the cell and the fix
    p = subprocess.run([sys.executable, "-m", "harness", "tidy", "--cells", str(bad), "--runs",
                        str(tmp_path / "r.csv"), "--summary", str(tmp_path / "s.csv"), "--provenance",
                        str(tmp_path / "p.json")], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT / "workflow"), "PATH": "/usr/bin:/bin"})
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and src.name in lines[0] and "re-measure it" in lines[0], p.stderr


@pytest.mark.parametrize("which,factor,value", [("base", "ps", "on"), ("base", "pfs", "off"),
                                                ("relaxed", "durability", "per_commit")])
def test_a_cell_whose_server_showed_another_value_is_refused(which, factor, value, request, tmp_path):
    src = request.getfixturevalue(which)[1]
    bad = _copy(src, tmp_path, lambda m: m["effective"]["factors"].__setitem__(factor, value))
    with pytest.raises(effective.EffectiveError,
                       match=rf"^cell {src.name}: its server ran other settings than its name says "
                             rf"\({factor}: the name says \S+, the server shows {value}\); re-measure it"):
        _tidy([bad], tmp_path)
