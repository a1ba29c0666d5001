"""harness.plan.estimate: the time and disk a sweep needs, before it starts.

cells x (warm-up + duration) x repetitions comes from the resolved profile and
harness.plan.cells; the per-cell overhead is measured from Snakemake benchmark files
(benchmarks/run_cell/<study>/<experiment>/<cell>.tsv) against the cell's
manifest, else the stated default.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import builds, registry


from harness.plan import estimate as E

from harness.plan import cells as plan
from harness import paths

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "fixtures" / "raw"


def smoke():
    return E.load_profile([str(ROOT / "config" / "smoke.yaml")], ROOT)


def test_measurement_time_is_cells_times_warmup_plus_duration(tmp_path):
    cfg = smoke()
    lock = builds.load_lock(paths.LOCK)
    est = E.estimate(cfg, lock, root=str(tmp_path))          # nothing measured: defaults
    per = cfg["sysbench"]["warmup_s"] + cfg["sysbench"]["duration_s"]
    ps = next(r for r in est["rows"] if r["experiment"] == "point_select")
    assert ps["cells"] == len(plan.cell_names(cfg, lock, "point_select")) == ps["todo"]
    assert ps["measure_s"] == ps["cells"] * per
    # smoke's point_select sweeps users 1 and 4: groups of 2 on one server start each
    assert plan.grouped(cfg, "point_select") and cfg["experiments"]["point_select"]["users"] == [1, 4]
    # a group reads its tables into memory once, with its server start
    pre = E.preload_seconds(cfg["experiments"]["point_select"])
    assert pre > 0
    group_over = (E.DEFAULT_CELL_OVERHEAD_S + pre + E.DEFAULT_GROUP_CELL_S) / 2
    assert abs(ps["total_s"] - ps["cells"] * (per + group_over)) < 1e-9
    fts = next(r for r in est["rows"] if r["experiment"] == "fts")  # one users value: a server per cell
    assert not plan.grouped(cfg, "fts")
    assert E.preload_seconds(cfg["experiments"]["fts"]) == 0  # the full-text tables are not read in first
    assert fts["total_s"] == fts["cells"] * (per + E.DEFAULT_CELL_OVERHEAD_S)
    assert est["overheads"]["cell_overhead_src"] == "default"
    assert est["disk_bytes"] > 0
    assert "default" in E.render(est)


def test_reading_the_tables_in_costs_rows_at_each_engines_rate_side_by_side_on_the_cores():
    from harness.measure import sbtest
    spec = {"dataset": "sbtest", "table_size": 1_000_000, "engines": ["InnoDB", "MyISAM", "MEMORY"],
            "tables": [1, 8], "cores": [4]}
    rate = (sbtest.PRELOAD_ROW_S["InnoDB"] + sbtest.PRELOAD_ROW_S["MyISAM"] + 0) / 3  # MEMORY: in memory
    rounds = (1 + 2) / 2  # 1 table: one read; 8 tables on 4 cores: two
    assert E.preload_seconds(spec) == pytest.approx(1_000_000 * rate * rounds)
    assert E.preload_seconds({**spec, "engines": ["MEMORY"]}) == 0
    assert E.preload_seconds({**spec, "cores": [8]}) == pytest.approx(1_000_000 * rate)


def test_overhead_measured_from_benchmark_files(tmp_path):
    """Two recorded real cells with benchmark files: overhead = benchmark s - (warm-up + duration)."""
    # one group of smoke's (users_on_one_server: its users values on one server start, a job)
    cells = [RAW / "A3" / "point_select" / f"mysql-5.6.24_InnoDB_base_t1_c1_u{u}_r1" for u in (1, 4)]
    raw = tmp_path / "data" / "raw" / "A3" / "point_select"
    raw.mkdir(parents=True)
    bench = tmp_path / "benchmarks" / "run_cell" / "A3" / "point_select"
    bench.mkdir(parents=True)
    for c, secs in zip(cells, (10.0, 14.0)):
        os.symlink(c, raw / c.name)
        (bench / f"{c.name}.tsv").write_text(f"s\th:m:s\tmax_rss\n{secs}\t0:00:{int(secs):02d}\t1\n")
    timing = json.loads((cells[0] / "manifest.json").read_text())["timing"]
    nominal = timing["warmup_s"] + timing["duration_s"]
    ov = E.overheads(str(tmp_path / "benchmarks"), str(tmp_path / "data" / "raw"))
    assert ov["cell_overhead_s"] == 12.0 - nominal
    assert ov["cell_overhead_src"] == "measured, median of 2 cells"
    lock = builds.load_lock(paths.LOCK)
    est = E.estimate(smoke(), lock, root=str(tmp_path))
    ps = next(r for r in est["rows"] if r["experiment"] == "point_select")
    # the recorded cells carry no settings digest (measured before cells recorded one): to do
    assert ps["todo"] == ps["cells"]
    from harness.plan import reuse
    for c in cells:  # the same cells, stamped with the digest smoke plans for them: done
        os.unlink(raw / c.name)
        shutil.copytree(c, raw / c.name)
        m = json.loads((c / "manifest.json").read_text())
        m["settings_digest"] = reuse.planned_digest(smoke(), lock, "point_select", c.name)
        (raw / c.name / "manifest.json").write_text(json.dumps(m))
    est = E.estimate(smoke(), lock, root=str(tmp_path))
    ps = next(r for r in est["rows"] if r["experiment"] == "point_select")
    assert ps["todo"] == ps["cells"] - 2
    shutil.rmtree(raw / cells[1].name)   # a group with one cell missing is measured again whole
    est = E.estimate(smoke(), lock, root=str(tmp_path))
    assert next(r for r in est["rows"] if r["experiment"] == "point_select")["todo"] == ps["cells"]


def test_a_measured_cells_overhead_leaves_out_its_tables_read_in(tmp_path):
    """The plan adds each spec's read-in (preload_seconds), so the overhead measured on a
    host's cells must not hold their own: their manifest's preload seconds come off."""
    # one group of smoke's (users_on_one_server: its users values on one server start, a job)
    cells = [RAW / "A3" / "point_select" / f"mysql-5.6.24_InnoDB_base_t1_c1_u{u}_r1" for u in (1, 4)]
    raw = tmp_path / "data" / "raw" / "A3" / "point_select"
    bench = tmp_path / "benchmarks" / "run_cell" / "A3" / "point_select"
    bench.mkdir(parents=True)
    for c, secs in zip(cells, (10.0, 14.0)):
        m = json.loads((c / "manifest.json").read_text())
        m["preload"] = {"seconds": 2.0, "innodb_pages_read": 10, "by": "this cell"}
        (raw / c.name).mkdir(parents=True)
        (raw / c.name / "manifest.json").write_text(json.dumps(m))
        (bench / f"{c.name}.tsv").write_text(f"s\th:m:s\tmax_rss\n{secs}\t0:00:{int(secs):02d}\t1\n")
    nominal = m["timing"]["warmup_s"] + m["timing"]["duration_s"]
    ov = E.overheads(str(tmp_path / "benchmarks"), str(tmp_path / "data" / "raw"))
    assert ov["cell_overhead_s"] == 12.0 - nominal - 2.0


def test_a_groups_job_is_shared_by_its_cells(tmp_path):
    """A run_group benchmark file: its cells share the job; a further cell's overhead is
    (job - the group's windows - one cell's overhead) / (cells - 1)."""
    cells = sorted((RAW / "A3" / "point_select").iterdir())
    one = cells[0]
    head, rep = one.name.rsplit("_u", 1)[0], one.name.rsplit("_r", 1)[1]
    members = [c for c in cells if c.name.startswith(head + "_u") and c.name.endswith(f"_r{rep}")]
    assert len(members) >= 2, [c.name for c in cells]
    raw = tmp_path / "data" / "raw" / "A3" / "point_select"
    raw.mkdir(parents=True)
    for c in [c for c in cells if c not in members][:1]:
        os.symlink(c, raw / c.name)
    for c in members:  # as a group ran them: each manifest names the group's cells
        (raw / c.name).mkdir()
        m = json.loads((c / "manifest.json").read_text())
        m["group"] = {"cells": [x.name for x in members], "position": members.index(c) + 1,
                      "size": len(members), "fresh_server": c == members[0]}
        (raw / c.name / "manifest.json").write_text(json.dumps(m))
    stale = raw / f"{head}_u999_r{rep}"  # an older cell of a users value the group did not run
    stale.mkdir()
    (stale / "manifest.json").write_text((members[0] / "manifest.json").read_text())
    b = tmp_path / "benchmarks"
    (b / "run_cell" / "A3" / "point_select").mkdir(parents=True)
    (b / "run_group" / "A3" / "point_select").mkdir(parents=True)
    fresh = [c for c in cells if c not in members][0]
    (b / "run_cell" / "A3" / "point_select" / f"{fresh.name}.tsv").write_text("s\th:m:s\n10.0\t0:00:10\n")
    wins = [E.windows_s(json.loads((c / "manifest.json").read_text())["timing"]) for c in members]
    fresh_over = 10.0 - E.windows_s(json.loads((fresh / "manifest.json").read_text())["timing"])
    job = sum(wins) + fresh_over + 0.5 * (len(members) - 1)  # one start, then 0.5 s per further cell
    (b / "run_group" / "A3" / "point_select" / f"{head}_r{rep}.tsv").write_text(f"s\th:m:s\n{job}\t0:00:10\n")
    got = E.measured_cells(str(b), str(tmp_path / "data" / "raw"))
    grouped = [c for c in got if c["group"] > 1]
    assert sorted(c["cell"] for c in grouped) == sorted(c.name for c in members)
    assert abs(sum(c["seconds"] for c in grouped) - job) < 1e-9
    ov = E.overheads(str(b), str(tmp_path / "data" / "raw"))
    assert ov["cell_overhead_s"] == fresh_over and ov["cell_overhead_src"] == "measured, median of 1 cells"
    assert abs(ov["group_cell_s"] - 0.5) < 1e-9
    assert ov["group_cell_src"] == "measured, median of 1 groups"


def test_cli_prints_and_rejects_a_missing_profile():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    ok = subprocess.run([sys.executable, "-m", "harness", "estimate", "--configfile", "config/smoke.yaml"],
                        cwd=ROOT, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "estimate for profile smoke" in ok.stdout and "disk about" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "harness", "estimate", "--configfile", "config/nope.yaml"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "config/nope.yaml: not found" in bad.stderr


def test_artifact_measured_time_sums_cell_and_tidy_benchmarks(tmp_path):
    from harness.report import artifact
    b = tmp_path / "benchmarks"
    (b / "run_cell" / "A3" / "point_select").mkdir(parents=True)
    (b / "tidy_throughput").mkdir(parents=True)
    for name, s in (("c1", 10.5), ("c2", 11.5)):
        (b / "run_cell" / "A3" / "point_select" / f"{name}.tsv").write_text(f"s\th:m:s\n{s}\t0:00:10\n")
    (b / "tidy_throughput" / "point_select.tsv").write_text("s\th:m:s\n2.0\t0:00:02\n")
    assert artifact.measured_time("A3", "point_select", str(b)) == (24.0, 3)
    assert artifact.measured_time("A3", "oltp_ro", str(b)) == (0, 0)


def test_wall_clock_on_nodes_runs_the_blocks_between_looks_side_by_side():
    """on_nodes: the blocks of one phase (between two looks) run side by side on as many
    nodes as are free, a look waits for every block before it, experiments side by side,
    datasets first."""
    est = {"rows": [{"experiment": "long", "blocks": [4, 8], "looks": [4, 8], "total_s": 400.0, "worst_s": 800.0},
                    {"experiment": "a", "blocks": [2, 4], "total_s": 100.0, "worst_s": 200.0},
                    {"experiment": "b", "blocks": [2, 4], "total_s": 100.0, "worst_s": 200.0},
                    {"experiment": "off", "blocks": [2, 4], "total_s": 0.0, "worst_s": 0.0}],
           "dataset_s": 20.0, "datasets": 4}
    assert E.on_nodes(est, 1) == 20 + 600  # one node: everything in turn
    assert E.on_nodes(est, 1, worst=True) == 20 + 1200
    assert E.on_nodes(est, 2) == 10 + 300  # 600 s of blocks over two nodes, none idle
    assert E.on_nodes(est, 3) == pytest.approx(20 / 3 + 200)
    # a node per block: the longest block bounds it (datasets over at most 4 nodes) ...
    assert E.on_nodes(est, 8) == 20 / 4 + 100
    # ... and in the worst case `long`'s second phase waits for its look after block 4
    assert E.on_nodes(est, 8, worst=True) == 20 / 4 + 100 + 100
    assert E.on_nodes(est, 16, worst=True) == 20 / 4 + 100 + 100
    no_looks = {**est, "rows": [{**r, "looks": []} for r in est["rows"]]}
    assert E.on_nodes(no_looks, 16, worst=True) == 20 / 4 + 100  # one phase: every block at once
    try:
        E.on_nodes(est, 0)
    except ValueError as e:
        assert "at least 1" in str(e)
    else:
        raise AssertionError("0 nodes accepted")


def test_a_steps_cell_costs_its_fits_fixed_part_and_rows(tmp_path):
    """Nothing measured here: a test_drive cell costs the committed bench/steps_rate.py fit
    (fixed + rows x per row, the mean over its builds); an experiment without a fit, the default."""
    cfg = E.load_profile([str(ROOT / "config" / "paper.yaml")], ROOT)
    est = E.estimate(cfg, builds.load_lock(paths.LOCK), root=str(tmp_path))
    ov = est["overheads"]
    rows = {r["experiment"]: r for r in est["rows"]}
    fits = [registry.steps_fits()[("test_drive", b)] for b in plan.builds_of(cfg, "test_drive")]
    n = cfg["experiments"]["test_drive"]["rows"]
    per = sum(f[0] + n * f[1] for f in fits) / len(fits)
    td = rows["test_drive"]
    assert abs(td["total_s"] - td["cells"] * per) < 1e-6
    assert E.steps_cost(cfg, "test_drive", ov)[2].startswith("bench/steps_rate.py")
    pc = rows["test_drive_per_commit"]  # a flush per commit: no fit, the (high) default
    n_pc = cfg["experiments"]["test_drive_per_commit"]["rows"]
    assert pc["total_s"] == pc["cells"] * (ov["cell_overhead_s"] + n_pc * E.DEFAULT_STEPS_ROW_S)


def test_a_hosts_own_steps_cells_give_the_rate_beyond_the_fits_fixed_part(tmp_path):
    """Recorded real test_drive cells (5,000 rows) with benchmark files: the per-row rate is
    (job seconds - the committed fit's fixed part of its build) / rows, the median over cells."""
    cells = sorted((RAW / "C1" / "test_drive").iterdir())
    raw = tmp_path / "data" / "raw" / "C1" / "test_drive"
    raw.mkdir(parents=True)
    bench = tmp_path / "benchmarks" / "run_cell" / "C1" / "test_drive"
    bench.mkdir(parents=True)
    secs = {c.name: 20.0 + 10 * i for i, c in enumerate(cells)}
    for c in cells:
        os.symlink(c, raw / c.name)
        (bench / f"{c.name}.tsv").write_text(f"s\th:m:s\tmax_rss\n{secs[c.name]}\t0:00:20\t1\n")
    ov = E.overheads(str(tmp_path / "benchmarks"), str(tmp_path / "data" / "raw"))
    want = sorted((secs[c.name] - registry.steps_fits()[("test_drive", c.name.split("_")[0])][0]) / 5000 for c in cells)
    assert ov["steps_row_s"]["test_drive"] == sum(want) / 2
    cfg = E.load_profile([str(ROOT / "config" / "paper.yaml")], ROOT)
    fixed, row_s, src = E.steps_cost(cfg, "test_drive", ov)
    assert row_s == ov["steps_row_s"]["test_drive"] and src.startswith("measured on this host")


def test_wall_clock_on_nodes_runs_the_later_smaller_blocks_as_shorter_jobs():
    """Blocks after repetitions.figures hold only the cells claims read: on nodes, each block
    job lasts its own cells' time, so a chain of big first blocks and small later ones ends
    where its blocks' sum does, and another experiment fills the node a small block frees."""
    row = {"experiment": "x", "blocks": [4, 8], "figures": 2, "cells_block": 10, "cells_late": 2,
           "total_s": (2 * 10 + 2 * 2) * 5.0, "worst_s": (2 * 10 + 6 * 2) * 5.0}
    assert E.block_seconds(row) == [50.0, 50.0, 10.0, 10.0]
    assert E.block_seconds(row, worst=True) == [50.0, 50.0] + [10.0] * 6
    none_late = {**row, "cells_late": 0, "total_s": 100.0, "worst_s": 100.0}
    assert E.block_seconds(none_late) == [50.0, 50.0]  # no claim reads it: blocks 1..figures only
    other = {"experiment": "y", "blocks": [1, 1], "total_s": 90.0, "worst_s": 90.0}
    est = {"rows": [row, other], "dataset_s": 0.0, "datasets": 0}
    assert E.on_nodes(est, 1) == 120 + 90
    # two nodes: x's 50 and y's 90 first, x's other 50 at 50, its 10s when nodes free up
    assert E.on_nodes(est, 2) == 110
    assert E.on_nodes(est, 4) == 90  # every block at once: y's the longest
    alone = {**est, "rows": [row]}  # no looks: x's two 50s on two nodes, its six 10s on the other two
    assert E.on_nodes(alone, 4, worst=True) == 50
    assert E.on_nodes(alone, 3, worst=True) == 60  # 50, 50, then 10s: 50 + 10 on the busiest
