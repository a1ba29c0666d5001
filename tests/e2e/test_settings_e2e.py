"""Every setting a cell claims reaches the server: checked by the server's own
answers in real cells on the real MySQL 5.6.24 (no mocks; the read-in also on MariaDB 10.11).

The studies' baselines (prepared statements off, spin-wait 96, one MyISAM key
cache per table, PFS on) and each varied factor are read back from status
counters, system variables, SHOW INDEX and the key-cache assignment the cell
captured.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from conftest import BUILD, cell_spec, run_settings
from harness.measure import cell
from harness.measure import datasets

pytestmark = pytest.mark.e2e
SETTINGS = {"warmup_s": 1, "duration_s": 2}
PAGES_1000_ROWS = 8  # of the about 16 pages a 1000-row sbtest table fills: read-ins read 15 (5.6.24)


def _run(tmp_path, build_dir, lock_entry, source, name, **spec) -> tuple[dict, Path]:
    req = cell_spec(SETTINGS, **spec)
    out = tmp_path / "raw" / name
    m = cell.run_cell(experiment=req["experiment"], spec=req["spec"], cell=name, entry=lock_entry,
                      build_dir=build_dir, source=source, settings=req["settings"], out=out)
    return m, out


def _delta(out: Path) -> dict[str, int]:
    with open(out / "status_delta.tsv", newline="") as f:
        return {r["name"]: int(float(r["delta"])) for r in csv.DictReader(f, delimiter="\t")}


def _cnf(out: Path) -> dict[str, str]:
    return dict(l.split("=", 1) for l in (out / "my.cnf").read_text().splitlines() if "=" in l)


@pytest.fixture(scope="module")
def myisam8(build_dir, template, lock_entry, tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "MyISAM_t8_n1000"
    datasets.prepare("sbtest", "MyISAM_t8_n1000", name=BUILD, entry=lock_entry, build_dir=build_dir,
                     template=template, out=out, settings=run_settings())
    return out


def test_baseline_cell_runs_the_studies_settings(build_dir, lock_entry, dataset, tmp_path):
    m, out = _run(tmp_path, build_dir, lock_entry, dataset, f"{BUILD}_InnoDB_base_t1_c1_u2_r1")
    d = _delta(out)
    assert m["settings"]["ps"] == "off"
    assert d.get("Com_stmt_execute", 0) == 0, "prepared statements must be off in the baseline"
    assert d["Com_select"] > 100
    cnf = _cnf(out)
    assert cnf["innodb_spin_wait_delay"] == "96"
    assert cnf["performance_schema"] == "ON"
    assert (out / "pfs_waits.tsv").read_text().count("\n") > 1
    assert m["memory"]["fits"] is True and m["memory"]["disk_reads"] == 0


@pytest.mark.parametrize("engine", ["InnoDB", "MyISAM"])
def test_tables_are_in_memory_before_the_first_measured_second(build_dir, lock_entry, dataset, myisam8,
                                                                tmp_path, engine):
    """With no warm-up at all, the window on a freshly started server reads no page from
    outside InnoDB's buffer pool or MyISAM's key caches: the cell read every table (and
    InnoDB every index) into memory first, so neither engine is measured while warming."""
    source, tables = (dataset, 1) if engine == "InnoDB" else (myisam8, 8)
    req_settings = {"warmup_s": 0, "duration_s": 2}
    req = cell_spec(req_settings, engines=[engine], tables=[tables])
    name = f"{BUILD}_{engine}_base_t{tables}_c1_u2_r1"
    out = tmp_path / "raw" / name
    m = cell.run_cell(experiment=req["experiment"], spec=req["spec"], cell=name, entry=lock_entry,
                      build_dir=build_dir, source=source, settings=req["settings"], out=out)
    rows = list(csv.DictReader(open(out / "preload.tsv"), delimiter="\t"))
    reads = {(r["table"], r["read"]) for r in rows}
    want = {(f"sbtest{i}", "rows") for i in range(1, tables + 1)}
    if engine == "InnoDB":
        want |= {("sbtest1", "k_1")}
        # a fresh 5.6 server's pool starts cold: the read-in fetched the table's pages from its file
        # (15 seen; the 1000 rows fill about 16), more than its index alone (1-2) or the pages that
        # opening it read first. Not bounded by data_length: InnoDB's estimate read 1 page and 16
        assert m["preload"]["innodb_pages_read"] >= PAGES_1000_ROWS, m["preload"]
    assert reads == want and all(int(r["rows"]) == 1000 for r in rows)
    assert "preload.tsv" in m["captures"] and m["preload"]["by"] == "this cell"
    d = _delta(out)
    assert d["Com_select"] > 100
    counter = "Innodb_buffer_pool_reads" if engine == "InnoDB" else "Key_reads"
    assert counter in (out / "status_before.tsv").read_text()
    assert counter not in d, f"{counter} rose by {d.get(counter)} in the window (status_delta.tsv lists changes)"
    assert m["memory"]["disk_reads"] == 0 and m["memory"]["fits"] is True


def test_mariadb_reads_its_tables_in_too(mariadb_1011, tmp_path_factory, tmp_path):
    """On MariaDB 10.11 too (its SHOW INDEX and status counters as the read-in and the memory
    check expect them) the read-in reads the table and its index, and a window with no warm-up
    reads no page from outside the buffer pool. MariaDB loads, in the background at start, the
    buffer-pool dump its dataset's server wrote at shutdown, which would fill the pool without
    the read-in: the test removes the dump first, so the pool starts cold."""
    name, entry, build_dir, template = mariadb_1011
    source = tmp_path_factory.mktemp("ds") / "InnoDB_t1_n1000"
    datasets.prepare("sbtest", "InnoDB_t1_n1000", name=name, entry=entry, build_dir=build_dir,
                     template=template, out=source, settings=run_settings())
    dump = source / "datadir" / "ib_buffer_pool"
    assert dump.is_file(), "MariaDB wrote no buffer-pool dump: the docstring's premise changed"
    dump.unlink()
    req = cell_spec({"warmup_s": 0, "duration_s": 2})
    cell_name = f"{name}_InnoDB_base_t1_c1_u2_r1"
    out = tmp_path / "raw" / cell_name
    m = cell.run_cell(experiment=req["experiment"], spec=req["spec"], cell=cell_name, entry=entry,
                      build_dir=build_dir, source=source, settings=req["settings"], out=out)
    assert entry["version"] in (out / "mysqld.err").read_text(errors="replace")
    rows = list(csv.DictReader(open(out / "preload.tsv"), delimiter="\t"))
    assert {(r["table"], r["read"]) for r in rows} == {("sbtest1", "rows"), ("sbtest1", "k_1")}
    assert all(int(r["rows"]) == 1000 for r in rows)
    assert "preload.tsv" in m["captures"] and m["preload"]["by"] == "this cell"
    assert m["preload"]["innodb_pages_read"] >= PAGES_1000_ROWS, m["preload"]  # cold: the dump was removed
    d = _delta(out)
    assert d["Com_select"] > 100
    assert "Innodb_buffer_pool_reads" in (out / "status_before.tsv").read_text()
    assert "Innodb_buffer_pool_reads" not in d, f"the window read {d.get('Innodb_buffer_pool_reads')} pages"
    assert m["memory"]["disk_reads"] == 0 and m["memory"]["fits"] is True


def test_prepared_statements_and_pfs_variant_reach_the_server(build_dir, lock_entry, dataset, tmp_path):
    m, out = _run(tmp_path, build_dir, lock_entry, dataset, f"{BUILD}_InnoDB_ps-on.pfs-off_t1_c1_u2_r1",
                  variants={"ps": ["on"], "pfs": ["off"]})
    d = _delta(out)
    assert d["Com_stmt_execute"] >= d["Com_select"] > 100, "ps=on: every select is an executed prepared statement"
    assert _cnf(out)["performance_schema"] == "OFF"
    assert not (out / "pfs_waits.tsv").exists()


@pytest.mark.parametrize("trx", ["on", "off"])
def test_transactions_factor_is_seen_in_begin_commit_counters(build_dir, lock_entry, dataset, tmp_path, trx):
    m, out = _run(tmp_path, build_dir, lock_entry, dataset, f"{BUILD}_InnoDB_trx-{trx}_t1_c1_u2_r1",
                  workload="oltp_ro", variants={"trx": [trx]})
    d = _delta(out)
    if trx == "on":
        assert d["Com_begin"] > 10 and d["Com_commit"] >= d["Com_begin"] - 2
    else:
        assert d.get("Com_begin", 0) == 0 and d.get("Com_commit", 0) == 0
    # the server-side QPS of the tidy data leaves BEGIN/COMMIT out either way
    from harness.analysis import tidywrite
    row = tidywrite.run_row(m, out)
    expected = row["qps"] * (14 / 16 if trx == "on" else 1)  # OLTP_RO: 14 statements + BEGIN/COMMIT
    assert row["qps_server"] == pytest.approx(expected, rel=0.01)


def test_spin_wait_and_read_only_reach_the_server(build_dir, lock_entry, dataset, tmp_path):
    m, out = _run(tmp_path, build_dir, lock_entry, dataset, f"{BUILD}_InnoDB_spin-256.ro-on_t1_c1_u2_r1",
                  variants={"spin_wait_delay": [256], "innodb_read_only": ["on"]})
    cnf = _cnf(out)
    assert cnf["innodb_spin_wait_delay"] == "256" and cnf["innodb_read_only"] == "ON"
    assert m["settings"]["spin_wait_delay"] == 256 and m["result"]["qps"] > 0


def test_myisam_key_cache_per_table_is_the_baseline_and_shared_is_a_variant(build_dir, lock_entry, myisam8,
                                                                            tmp_path):
    _, out = _run(tmp_path, build_dir, lock_entry, myisam8, f"{BUILD}_MyISAM_base_t8_c1_u2_r1",
                  engines=["MyISAM"], tables=[8])
    rows = list(csv.DictReader(open(out / "key_caches.tsv"), delimiter="\t"))
    assert {(r["table"], r["cache"]) for r in rows} == {(f"sbtest{i}", f"kc{i}") for i in range(1, 9)}
    _, out = _run(tmp_path, build_dir, lock_entry, myisam8, f"{BUILD}_MyISAM_kc-shared_t8_c1_u2_r1",
                  engines=["MyISAM"], tables=[8], variants={"key_cache": ["shared"]})
    rows = list(csv.DictReader(open(out / "key_caches.tsv"), delimiter="\t"))
    assert {r["cache"] for r in rows} == {"default"}


def test_memory_btree_keeps_the_hash_primary_key_and_adds_a_btree_key(build_dir, template, lock_entry,
                                                                      tmp_path):
    ds = tmp_path / "MEMORY-BTREE_t1_n1000"
    datasets.prepare("sbtest", ds.name, name=BUILD, entry=lock_entry, build_dir=build_dir, template=template,
                     out=ds, settings=run_settings())
    m, out = _run(tmp_path, build_dir, lock_entry, ds, f"{BUILD}_MEMORY-BTREE_base_t1_c1_u2_r1",
                  workload="simple_ranges", engines=["MEMORY-BTREE"])
    idx = {(r["key"], r["index_type"]) for r in csv.DictReader(open(out / "indexes.tsv"), delimiter="\t")}
    assert ("PRIMARY", "HASH") in idx and ("xid", "BTREE") in idx
    plans = list(csv.DictReader(open(out / "explain.tsv"), delimiter="\t"))
    assert plans[0]["type"] == "range" and plans[0]["key"] == "xid"
    assert json.loads((out / "manifest.json").read_text())["memory"]["fits"] is True
