"""Study C's steps script end to end on real servers: MySQL 5.6.24 (the pinned
default build, ARCHIVE built in) and MariaDB 10.11 (Debian's, ARCHIVE loaded as
a plugin), small row counts. Every step's rows must be there, scans must be
real scans, pluggability checks must pass, ARCHIVE must be smaller than MyISAM,
and an engine a build lacks must be a reason, never a zero."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, server_pids

from harness import builds
from harness.measure import initdb


from harness.measure import stepscript as steps
from harness.measure import steps as steps_kind
from harness.measure.server import Server
from harness.studies.c import test_drive as C
from harness import paths

pytestmark = pytest.mark.e2e

ENGINES = list(C.STUDY_ENGINES)
ROWS = 1000
VARIED = 5000  # tiny tables: ARCHIVE's fixed header (and, in 5.6, the .frm copy in it) outweighs the rows
SCANS = 2
MARIADB = "mariadb-10.11"


def run_c(name: str, entry: dict, build_dir: Path, template: Path, engines=ENGINES,
          params: dict | None = None, seed: int | None = None) -> steps.Recorder:
    """The script on a fresh copy of the template datadir; `restart` stops the server
    and starts a new Server on the same datadir with the cell's options + extra."""
    scratch = Path(tempfile.mkdtemp(prefix="mysqlbench-c-"))  # short: the socket lives here
    try:
        shutil.copytree(Path(template) / "datadir", scratch / "datadir", symlinks=True)
        options = C.server_options(entry["family"], engines)

        def start(extra: dict) -> Server:
            return Server(name=name, entry=entry, build_dir=build_dir, datadir=scratch / "datadir",
                          rundir=scratch / "run", run_id=f"test-c-{name}-{os.getpid()}",
                          cpus=sorted(os.sched_getaffinity(0))[:1], options={**options, **extra})

        rec = steps.Recorder()
        with steps.Restartable(start) as held:
            ctx = steps.StepContext(server=held.server, restart=held.restart, engines=list(engines),
                                    params={"rows": ROWS, "varied_rows": VARIED, "scan_repeats": SCANS,
                                            **(params or {})},
                                    rec=rec, family=entry["family"], seed=seed)
            steps.run(C.run, ctx)
        assert server_pids() == [], "a server of the steps cell is still running"
        return rec
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def mysql56(lock_entry, build_dir, template):
    return run_c("mysql-5.6.24", lock_entry, build_dir, template)


@pytest.fixture(scope="module")
def maria_entry():
    return builds.load_lock(paths.LOCK)[MARIADB]


@pytest.fixture(scope="module")
def maria_build(maria_entry):
    """Debian's MariaDB 10.11 as the pipeline installs it (a tree of links into the package)."""
    d = ROOT / "resources" / "builds" / MARIADB
    if not d.exists():
        builds.fetch(MARIADB, maria_entry, d)
    builds.verify_installed(MARIADB, maria_entry, d)
    return d


@pytest.fixture(scope="module")
def mariadb(maria_entry, maria_build, tmp_path_factory):
    template = initdb.bootstrap(MARIADB, maria_entry, maria_build, tmp_path_factory.mktemp("maria") / "tpl")
    return run_c(MARIADB, maria_entry, maria_build, template)


BUILDS = {"mysql56": ("mysql-5.6.24", ["InnoDB", "MyISAM", "ARCHIVE", "MEMORY"], ["Aria"]),
          "mariadb": (MARIADB, ["InnoDB", "MyISAM", "ARCHIVE", "MEMORY", "Aria"], [])}


@pytest.fixture(params=list(BUILDS))
def run(request):
    build, present, absent = BUILDS[request.param]
    return request.getfixturevalue(request.param), present, absent


def _one(rec, step, engine, metric):
    rows = rec.find(step, engine, metric)
    assert len(rows) == 1, f"{step}/{engine}/{metric}: {len(rows)} rows"
    return rows[0]


def test_c1_inserts_timed_per_engine(run):
    rec, present, _ = run
    for e in present:
        t = _one(rec, "C1", e, "insert_s")
        assert t["unit"] == "s" and t["value"] > 0
        assert _one(rec, "C1", e, "rows_loaded")["ok"]
    resets = [r for r in rec.find("C1", metric="reset")]
    assert [r["engine"] for r in resets] == present[:-1]
    archive = _one(rec, "C1", "ARCHIVE", "reset")
    # ARCHIVE refuses TRUNCATE (1031) on both builds here: dropped and recreated, and said so
    assert archive["value"] == "DROP+CREATE" and "1031" in archive["detail"]
    assert all(r["value"] == "TRUNCATE+ALTER" for r in resets if r["engine"] != "ARCHIVE")


def test_c2_scans_are_real_full_scans(run):
    rec, present, _ = run
    for e in present:
        assert _one(rec, "C2", e, "explain_type")["value"] == "ALL"
        assert _one(rec, "C2", e, "explain_type_all")["ok"]
        scans = rec.find("C2", e, "scan_s")
        assert len(scans) == SCANS and all(s["value"] > 0 for s in scans)
        rnd = rec.find("C2", e, "rnd_next")
        assert len(rnd) == SCANS and all(r["value"] >= ROWS for r in rnd)
        assert all(r["ok"] for r in rec.find("C2", e, "rnd_next_covers_rows"))
        assert all(r["ok"] for r in rec.find("C2", e, "matched"))
    # the trap the scan avoids: a bare count(*) is answered from metadata on these
    for e in ("MyISAM", "ARCHIVE"):
        assert "optimized away" in _one(rec, "C2", e, "bare_count_extra")["value"]


def test_c2_conversions_in_the_studys_order_and_back(run):
    rec, _, _ = run
    alters = rec.find("C2.convert", metric="alter_s")
    assert [a["engine"] for a in alters] == ["ARCHIVE>MyISAM", "MyISAM>InnoDB", "InnoDB>MyISAM",
                                             "MyISAM>ARCHIVE"]
    assert all(a["value"] > 0 for a in alters)
    kept = rec.find("C2.convert", metric="rows_kept")
    assert len(kept) == 4 and all(k["ok"] for k in kept)


def test_a_block_whose_order_ends_on_archive_rebuilds_it_to_start_the_chain(lock_entry, build_dir, template):
    """The block's seeded order (seed 5: InnoDB, MyISAM, ARCHIVE) leaves C1's table on ARCHIVE;
    the chain still starts with the untimed ALTER to ARCHIVE (a rebuild) on the real server,
    and every conversion keeps the rows."""
    rec = run_c("mysql-5.6.24", lock_entry, build_dir, template, engines=["InnoDB", "MyISAM", "ARCHIVE"],
                seed=5)
    order = sorted(rec.find("C1", metric="position"), key=lambda r: r["value"])
    assert [r["engine"] for r in order] == ["InnoDB", "MyISAM", "ARCHIVE"]
    start = _one(rec, "C2.convert", "", "chain_start")
    assert start["value"] == "ARCHIVE" and "a rebuild" in start["detail"], start
    kept = rec.find("C2.convert", metric="rows_kept")
    assert len(kept) == 4 and all(k["ok"] for k in kept), kept


def test_c3_archive_smaller_than_myisam_on_both_row_sets(run):
    rec, present, _ = run
    for rowset in ("identical", "varied"):
        for e in present:
            assert _one(rec, "C3", e, f"{rowset}_is_bytes")["value"] > 0
            disk = _one(rec, "C3", e, f"{rowset}_datadir_bytes")
            if e == "MEMORY":
                assert not disk["ok"] and disk["value"] == "" and "RAM" in disk["detail"]
            else:
                assert disk["ok"] and disk["value"] > 0
        for kind in ("datadir", "is"):
            ratio = _one(rec, "C3", "ARCHIVE/MyISAM", f"{rowset}_{kind}_ratio")["value"]
            assert 0 < ratio < 1, (rowset, kind, ratio)
    # identical rows compress far better than varied ones: the artefact the second set exposes
    assert (_one(rec, "C3", "ARCHIVE/MyISAM", "identical_datadir_ratio")["value"]
            < _one(rec, "C3", "ARCHIVE/MyISAM", "varied_datadir_ratio")["value"])
    assert all(r["ok"] for r in rec.find("C3", metric="varied_rows_loaded"))


def test_c4_pluggability_checks_all_pass(run):
    rec, present, _ = run
    for feature in ("procedure", "trigger", "view"):
        for e in present:
            row = _one(rec, "C4.feature", e, feature)
            assert row["ok"], row["detail"]
            assert row["detail"].count("after ALTER to") == len(present) - 1
    support = {r["engine"]: r["value"] for r in rec.find("C4.engines", metric="support")}
    assert support["InnoDB"] in ("YES", "DEFAULT") and support["ARCHIVE"] == "YES"
    off = {r["engine"]: r["value"] for r in rec.find("C4.engines_skip_innodb", metric="support")}
    assert off.get("InnoDB", "absent") in ("NO", "DISABLED", "absent")
    assert _one(rec, "C4.skip_innodb", "InnoDB", "innodb_disabled")["ok"]
    assert _one(rec, "C4.skip_innodb", "MyISAM", "myisam_works")["ok"]
    assert _one(rec, "C4.restart", "InnoDB", "innodb_back")["ok"]


def test_absent_engines_are_reasons_not_zeros(run):
    rec, _, absent = run
    for e in absent:
        rows = rec.find(engine=e)
        assert {r["step"] for r in rows} == {"C1", "C2", "C3", "C4.feature"}
        assert all(r["metric"] == "skipped" and not r["ok"] and r["value"] == "" and r["detail"]
                   for r in rows)


def test_every_other_row_is_ok_and_the_tsv_is_whole(run):
    rec, _, _ = run
    bad = [r for r in rec.rows if not r["ok"] and r["metric"] != "skipped"
           and not (r["engine"] == "MEMORY" and r["metric"].endswith("_datadir_bytes"))]
    assert bad == []
    assert _one(rec, "setup", "", "innodb_flush_log_at_trx_commit")["value"] == "1"
    assert _one(rec, "setup", "", "log_bin_off")["ok"]
    assert _one(rec, "setup", "", "fsync_ms_median")["value"] > 0
    lines = rec.tsv().splitlines()
    assert lines[0].split("\t") == list(steps.FIELDS)
    assert len(lines) == len(rec.rows) + 1
    assert all(len(l.split("\t")) == len(steps.FIELDS) for l in lines)


def test_realistic_rows_variant(lock_entry, build_dir, template):
    """C1 with varied rows: the scan matches exactly the rows Python computes."""
    rec = run_c("mysql-5.6.24", lock_entry, build_dir, template, engines=["MyISAM", "ARCHIVE"],
                params={"realistic_rows": True, "rows": 3000, "feature_rows": 1000})
    want = C.expected_matches(3000, True)
    assert 0 < want < 3000
    for e in ("MyISAM", "ARCHIVE"):
        assert all(r["ok"] and f"count {want}," in r["detail"] for r in rec.find("C2", e, "matched"))
        assert _one(rec, "C3", e, "realistic_datadir_bytes")["value"] > 0
    assert 0 < _one(rec, "C3", "ARCHIVE/MyISAM", "realistic_datadir_ratio")["value"] < 1
    assert rec.find("C2.convert", metric="alter_s") == []  # InnoDB not asked for: skipped, said why
    assert len(rec.find("C2.convert", metric="skipped")) == 4


def test_bad_parameters_and_scripts_are_one_line_errors():
    with pytest.raises(steps.StepError, match=r"^steps params of c_test_drive: row is not a parameter"):
        C.params({"row": 5})
    with pytest.raises(steps.StepError, match=r"rows=0 must be a whole number >= 1"):
        C.params({"rows": 0})
    with pytest.raises(steps.StepError, match=r"realistic_rows='yes' must be true or false"):
        C.params({"realistic_rows": "yes"})
    with pytest.raises(steps.StepError, match=r"steps script 'nope' is unknown; use one of c_test_drive"):
        steps_kind.script("nope")


def test_server_options_per_family():
    maria = C.server_options("mariadb-10.11", ENGINES)
    assert maria["plugin_load_add"] == "ha_archive.so"
    mysql = C.server_options("mysql-5.6", ENGINES)
    assert "plugin_load_add" not in mysql  # ARCHIVE is built into 5.6.24
    for opts in (maria, mysql):
        assert opts["innodb_flush_log_at_trx_commit"] == 1 and opts["sync_binlog"] == 0
        assert not any(k.startswith("log_bin") or k == "log-bin" for k in opts)
    assert "default_tmp_storage_engine" not in C.skip_innodb_options("mysql-5.5")  # 5.6.3+ only
    assert C.skip_innodb_options("mariadb-10.11")["default_tmp_storage_engine"] == "MyISAM"
