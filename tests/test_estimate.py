"""harness.plan.estimate: the time and disk a sweep needs, before it starts.

cells x (warm-up + duration) x repetitions comes from the resolved profile and
harness.plan.cells; the per-cell overhead is measured from Snakemake benchmark files
(benchmarks/run_cell/<study>/<experiment>/<cell>.tsv) against the cell's
manifest, else the stated default.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from harness import builds

from harness.plan import config

from harness.plan import estimate as E

from harness.plan import cells as plan

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "tests" / "fixtures" / "raw"


def smoke():
    return E.load_profile([str(ROOT / "config" / "smoke.yaml")], ROOT)


def test_measurement_time_is_cells_times_warmup_plus_duration(tmp_path):
    cfg = smoke()
    lock = builds.load_lock(config.LOCK)
    est = E.estimate(cfg, lock, root=str(tmp_path))          # nothing measured: defaults
    per = cfg["sysbench"]["warmup_s"] + cfg["sysbench"]["duration_s"]
    ps = next(r for r in est["rows"] if r["experiment"] == "point_select")
    assert ps["cells"] == len(plan.cell_names(cfg, lock, "point_select")) == ps["todo"]
    assert ps["measure_s"] == ps["cells"] * per
    assert ps["total_s"] == ps["cells"] * (per + E.DEFAULT_CELL_OVERHEAD_S)
    assert est["overheads"]["cell_overhead_src"] == "default"
    assert est["disk_bytes"] > 0
    assert "default" in E.render(est)


def test_overhead_measured_from_benchmark_files(tmp_path):
    """Two recorded real cells with benchmark files: overhead = benchmark s - (warm-up + duration)."""
    cells = sorted((RAW / "A3" / "point_select").iterdir())[:2]
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
    est = E.estimate(smoke(), builds.load_lock(config.LOCK), root=str(tmp_path))
    ps = next(r for r in est["rows"] if r["experiment"] == "point_select")
    assert ps["todo"] == ps["cells"] - 2


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


def test_wall_clock_on_nodes_is_bounded_by_the_longest_chain_of_blocks():
    """on_nodes: an experiment's blocks run in turn, experiments side by side, datasets first."""
    est = {"rows": [{"experiment": "long", "blocks": [4, 8], "total_s": 400.0, "worst_s": 800.0},
                    {"experiment": "a", "blocks": [2, 4], "total_s": 100.0, "worst_s": 200.0},
                    {"experiment": "b", "blocks": [2, 4], "total_s": 100.0, "worst_s": 200.0},
                    {"experiment": "off", "blocks": [2, 4], "total_s": 0.0, "worst_s": 0.0}],
           "dataset_s": 20.0, "datasets": 4}
    assert E.on_nodes(est, 1) == 20 + 600  # one node: everything in turn
    assert E.on_nodes(est, 1, worst=True) == 20 + 1200
    assert E.on_nodes(est, 2) == 10 + 400  # the chain of `long` on one node, a and b on the other
    # more nodes than chains: the longest chain bounds it (datasets over at most 4 nodes)
    assert E.on_nodes(est, 3) == 20 / 3 + 400 and E.on_nodes(est, 8) == 20 / 4 + 400
    try:
        E.on_nodes(est, 0)
    except ValueError as e:
        assert "at least 1" in str(e)
    else:
        raise AssertionError("0 nodes accepted")
