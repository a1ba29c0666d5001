"""Group runs on the real MySQL 5.6.24: the cells of a setting that differ only in
their users share one server start (harness.plan.cells.grouped), each cell with its
own warm-up, window, captures and manifest; a group that fails keeps the cells it
completed (set aside under data/partial/), never as outputs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BUILD, ROOT, cell_spec, harness_cmd, harness_env, run, server_pids, tmp_siblings

from harness.measure import cell, throughput

pytestmark = pytest.mark.e2e


def _names(users, engine="InnoDB", rep=1):
    return [f"{BUILD}_{engine}_base_t1_c1_u{u}_r{rep}" for u in users]


def test_a_group_runs_its_users_on_one_server_start(dataset, build_dir, tmp_path):
    names = _names([4, 1])  # the block's order, not the sorted one
    outs = [tmp_path / "raw" / "A3" / "point_select" / n for n in names]
    req = cell_spec({"warmup_s": 1, "duration_s": 2}, users=[1, 4])
    block = {"id": 1, "position": 3, "seed": 7, "size": 4}
    res = run(harness_cmd("run-cell", "--cell", *names, "--cell-spec", json.dumps(req), "--block",
                          json.dumps(block), "--build-dir", str(build_dir), "--source", str(dataset),
                          "--out", *map(str, outs)), env=harness_env(), cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    ms = [json.loads((o / "manifest.json").read_text()) for o in outs]
    assert [m["factors"]["users"] for m in ms] == [4, 1]
    assert [m["block"]["position"] for m in ms] == [3, 4]
    assert [m["group"]["position"] for m in ms] == [1, 2]
    assert all(m["group"]["cells"] == names and m["group"]["size"] == 2 for m in ms)
    # the my.cnf a fresh cell of either users value would have: sized from the sweep's most users
    assert all("max_connections=68\n" in m["server"]["my_cnf"] for m in ms)
    # one server start: the first cell started it, the second measured on it; the last ended it
    assert [m["timing"]["phases"]["starts"] for m in ms] == [1, 0]
    assert ms[0]["timing"]["phases"]["start_s"] > 0 and ms[1]["timing"]["phases"]["start_s"] == 0
    assert ms[1]["timing"]["phases"]["stop_s"] > 0
    # each its own window: the sysbench report shows its users, the status delta its queries
    for o, m in zip(outs, ms):
        assert f"Number of threads: {m['factors']['users']}" in (o / "sysbench.out").read_text()
        assert m["result"]["qps"] > 0 and (o / "warmup.out").exists()
        assert (o / "my.cnf").read_text() == m["server"]["my_cnf"] != ""
        assert (o / "mysqld.err").exists()
        delta = dict(line.split("\t")[0::3] for line in (o / "status_delta.tsv").read_text().splitlines()[1:])
        assert int(delta["Com_select"]) > 0
    assert not tmp_siblings(outs[0].parent)
    assert not server_pids()


def test_a_memory_group_loads_its_tables_once(build_dir, template, lock_entry, tmp_path):
    """MEMORY tables live in the server: the group's first cell loads them, the next
    finds them (a fresh start per cell would load them again)."""
    from conftest import run_settings
    from harness.measure import datasets
    ds = tmp_path / "MEMORY_t1_n1000"
    datasets.prepare("sbtest", ds.name, name=BUILD, entry=lock_entry, build_dir=build_dir,
                     template=template, out=ds, settings=run_settings())
    names = _names([1, 2], engine="MEMORY")
    outs = [tmp_path / "raw" / "A3" / "point_select" / n for n in names]
    req = cell_spec({"warmup_s": 0, "duration_s": 1}, users=[1, 2], engines=["MEMORY"])
    ms = cell.run_cells(experiment="point_select", spec=req["spec"], cells=names, entry=lock_entry,
                        build_dir=build_dir, source=ds, settings=req["settings"], outs=outs)
    assert all(m["result"]["qps"] > 0 for m in ms)
    def status(o, which):
        return dict(line.split("\t") for line in (o / f"status_{which}.tsv").read_text().splitlines())
    # rows written: the first cell's load (1,000 rows) before its window; between the
    # windows only the status and capture queries' temporary tables (a second load: 1,000 more)
    assert int(status(outs[0], "before")["Handler_write"]) >= 1000
    assert int(status(outs[1], "before")["Handler_write"]) - int(status(outs[0], "after")["Handler_write"]) < 1000


def test_a_failed_group_sets_its_complete_cells_aside(dataset, build_dir, lock_entry, tmp_path, monkeypatch):
    names = _names([1, 2])
    raw = tmp_path / "data" / "raw"
    outs = [raw / "A3" / "point_select" / n for n in names]
    req = cell_spec({"warmup_s": 0, "duration_s": 1}, users=[1, 2])
    real = throughput.measure
    calls = []

    def second_fails(fr, spec, d, values, settings):
        calls.append(d["users"])
        if len(calls) == 2:
            raise RuntimeError("injected: the group's second cell fails")
        return real(fr, spec, d, values, settings)
    monkeypatch.setattr(throughput, "measure", second_fails)
    with pytest.raises(RuntimeError, match="injected"):
        cell.run_cells(experiment="point_select", spec=req["spec"], cells=names, entry=lock_entry,
                       build_dir=build_dir, source=dataset, settings=req["settings"], outs=outs)
    assert not any(o.exists() for o in outs)  # no output of a failed job
    assert not tmp_siblings(outs[0].parent)
    kept = list((tmp_path / "data" / "partial" / "A3" / "point_select").iterdir())
    assert [p.name.split(".group-failed-")[0] for p in kept] == [names[0]]
    assert json.loads((kept[0] / "manifest.json").read_text())["result"]["qps"] > 0
    assert (kept[0] / "mysqld.err").exists()
    assert not server_pids()


def test_cells_of_different_settings_are_no_group(dataset, build_dir, lock_entry, tmp_path):
    names = [f"{BUILD}_InnoDB_base_t1_c1_u1_r1", f"{BUILD}_InnoDB_base_t8_c1_u2_r1"]
    req = cell_spec({}, users=[1, 2])
    with pytest.raises(ValueError, match="no group"):
        cell.run_cells(experiment="point_select", spec=req["spec"], cells=names, entry=lock_entry,
                       build_dir=build_dir, source=dataset, settings=req["settings"],
                       outs=[tmp_path / n for n in names])
    assert throughput.GROUP_BY == "users"
    assert not list(Path(tmp_path).iterdir())


def test_ctrl_c_during_a_groups_second_cell_keeps_the_first(dataset, build_dir, tmp_path):
    """SIGINT (Ctrl-C, or Snakemake ending the job) while the group measures its second cell:
    exit 130, no output, the server gone, the complete first cell set aside."""
    import signal
    import subprocess
    import time
    names = _names([1, 2])
    raw = tmp_path / "data" / "raw"
    outs = [raw / "A3" / "point_select" / n for n in names]
    req = cell_spec({"warmup_s": 0, "duration_s": 4}, users=[1, 2])
    proc = subprocess.Popen(harness_cmd("run-cell", "--cell", *names, "--cell-spec", json.dumps(req),
                                        "--build-dir", str(build_dir), "--source", str(dataset),
                                        "--out", *map(str, outs)),
                            env=harness_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    first = outs[0].parent
    while time.monotonic() < deadline and not list(first.glob(f".{names[0]}.tmp-*/manifest.json")):
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(0.1)
    time.sleep(1.0)  # inside the second cell's window
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert not any(o.exists() for o in outs) and not tmp_siblings(first)
    kept = list((tmp_path / "data" / "partial" / "A3" / "point_select").iterdir())
    assert [p.name.split(".group-failed-")[0] for p in kept] == [names[0]], kept
    assert not server_pids()
