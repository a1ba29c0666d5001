"""Study C: "MySQL 5.0's Pluggable Storage Engine Architecture, Part 2: A Quick
Test Drive" (Schumacher, MySQL AB, 2005), as one steps script, `c_test_drive`.

  C1  a stored procedure's WHILE loop inserts `rows` rows, one INSERT each,
      autocommit, into `(c1 int, c2 varchar(20), c3 date)`, once per engine; between
      engines the study's TRUNCATE then ALTER TABLE ... ENGINE=. Timed: the CALL.
  C2  on each loaded table, `SELECT count(*) FROM t1 WHERE c1 = 1` timed, with the
      proof that it is a real scan (EXPLAIN type ALL, Handler_read_rnd_next grows by
      at least the row count); MyISAM and ARCHIVE answer a bare count(*) from metadata,
      so that is never what is timed. Then the loaded table converted ARCHIVE ->
      MyISAM -> InnoDB and back, each ALTER timed.
  C3  bytes on disk (the table's files in the datadir, and information_schema
      data_length + index_length) per engine and the ARCHIVE/MyISAM ratio, on the
      study's identical rows and on a deterministic varied row set (identical rows
      compress absurdly well, so the study's ratio alone says little).
  C4  SHOW ENGINES; a restart with InnoDB disabled; a stored procedure, a trigger and
      a view created on every engine and still working after ALTER TABLE ... ENGINE=
      to every other engine.

Traps handled (each recorded as a row, never hidden): ARCHIVE cannot TRUNCATE on
MariaDB 10.11 (the table is dropped and recreated instead, and the row says so);
MariaDB aborts on skip-innodb unless the default and tmp engines are MyISAM; an
engine the build lacks gets a `skipped` row with the reason, never a zero; a table
that silently landed on another engine stops the script.

This module runs the steps (C1-C3 here); the parameters, server options, SQL
and shared helpers are in harness.studies.c.drivebase (re-exported here, the
names the step runtime and the tests use), C4 in harness.studies.c.pluggability.
"""
from __future__ import annotations

import random
import statistics
from pathlib import Path

import pymysql

from harness.measure.stepscript import StepContext, cursor
from harness.studies.c import legacy_pg
from harness.studies.c.legacy_pg import check_spec  # noqa: F401 - the config check of its legacy keys
from harness.studies.c.drivebase import (  # noqa: F401 - names of the script (C.params, C.STUDY_ENGINES, ...)
    ARCHIVE_PLUGIN, COLUMNS, CONVERSIONS, DB, ER_ILLEGAL_HA, KNOBS, PAPER_ROWS, SCAN, SCRIPT,
    STUDY_ENGINES, STUDY_ROW, TABLE, durability_options, ensure_engine, expected_matches,
    explain, fsync_latencies, load_procedure, numbers, one, params, rnd_next, server_options,
    skip_innodb_options, usable_engines, varied_values)
from harness.studies.c.pluggability import c4_features, c4_show_engines, c4_skip_innodb


# -- the script ---------------------------------------------------------------------------
# the experiment keys it reads beside a steps experiment's own (harness.plan.config.kind_keys)
SPEC_KEYS = ("legacy", "legacy_build", "legacy_commit")
# its extra part's settings go into the cell's effective evidence as `postgres` (harness.measure.steps)
EVIDENCE = {"legacy": "postgres"}


def run(ctx: StepContext) -> None:
    p = params(ctx.params)
    ctx.server.query(f"DROP DATABASE IF EXISTS {DB}")
    ctx.server.query(f"CREATE DATABASE {DB}")
    datadir = Path(str(ctx.server.query("SELECT @@datadir")[0][0]))
    _setup(ctx, p, datadir)
    engines = usable_engines(ctx)
    with cursor(ctx.server, DB) as cur:
        cur.execute("CREATE TABLE c_digits (d int) ENGINE=MyISAM")
        cur.execute("INSERT INTO c_digits VALUES " + ", ".join(f"({i})" for i in range(10)))
        last = _c1_c2_c3(ctx, cur, p, block_order(ctx, engines), datadir)
        _conversions(ctx, cur, p, engines, last)
        _varied_sizes(ctx, cur, p, engines, datadir)
        c4_features(ctx, cur, p, engines)
    c4_show_engines(ctx, "C4.engines")
    c4_skip_innodb(ctx, p)


def _setup(ctx: StepContext, p: dict, datadir: Path) -> None:
    """The durability and cache settings in effect, and the filesystem's fsync cost."""
    rec = ctx.rec
    names = ("version", "innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin", "autocommit",
             "query_cache_type", "innodb_file_per_table", "default_storage_engine",
             "character_set_server")
    got = {str(k).lower(): str(v) for k, v in ctx.server.query(
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN (%s)" % ", ".join(f"'{n}'" for n in names))}
    for n in names:
        if n in got:
            rec.value("setup", "", n, got[n])
        else:
            rec.skip("setup", "", f"this build has no variable {n}", metric=n)
    rec.check("setup", "", got.get("log_bin", "OFF").upper() in ("OFF", "0"),
              f"binary log off, as a 2005 default server (log_bin={got.get('log_bin')})", metric="log_bin_off")
    rec.check("setup", "", got.get("autocommit", "ON").upper() in ("ON", "1"),
              f"autocommit on (autocommit={got.get('autocommit')})", metric="autocommit_on")
    if datadir.is_dir():
        lat = fsync_latencies(datadir, p["fsync_probes"])
        rec.value("setup", "", "fsync_ms_median", statistics.median(lat) * 1000, "ms",
                  f"{len(lat)} x (4 KiB write + fsync) in {datadir}; max {max(lat) * 1000:.3f} ms")
    else:
        rec.skip("setup", "", f"datadir {datadir} is not visible from the harness", metric="fsync_ms_median")


# C1 + C2 (scan) + C3 (identical rows) ----------------------------------------------------
def block_order(ctx: StepContext, engines: list[str]) -> list[str]:
    """The engines in this block's own random order (seeded by the block: the same cell
    measured again runs the same order), each engine's place recorded as C1's `position`:
    a block whose engines always ran in the configuration's order would confound an
    engine with its place in the run (the first on a fresh server, the later ones after
    a TRUNCATE and ALTER), and the paired interval's symmetry rests on the random order."""
    order = list(engines)
    if ctx.seed is not None:
        random.Random(ctx.seed).shuffle(order)
    for i, e in enumerate(order, 1):
        ctx.rec.value("C1", e, "position", i, detail=f"place in this block's engine order "
                                                      f"({', '.join(order)}; seed {ctx.seed})")
    return order


def _c1_c2_c3(ctx: StepContext, cur, p: dict, engines: list[str], datadir: Path) -> str | None:
    """Load, scan and size the table on each engine in turn; return the engine the
    loaded table is left on."""
    rec, n = ctx.rec, p["rows"]
    rowset = "realistic" if p["realistic_rows"] else "identical"
    expected = expected_matches(n, p["realistic_rows"])
    if not engines:
        return None
    cur.execute(f"CREATE TABLE {TABLE} {COLUMNS} ENGINE={engines[0]}")
    cur.execute(load_procedure(p["realistic_rows"]))
    prev = None
    for e in engines:
        if prev is not None:
            _between_engines(ctx, cur, prev, e)
        ensure_engine(cur, TABLE, e, "C1")
        rec.timed("C1", e, lambda: cur.execute(f"CALL c1_load({n})"), metric="insert_s",
                  detail=f"CALL c1_load({n}): {n} single-row autocommit INSERTs of {rowset} rows")
        loaded = one(cur, f"SELECT count(*) FROM {TABLE}")
        rec.check("C1", e, loaded == n, f"{loaded} rows loaded of {n}", metric="rows_loaded")
        _scan(ctx, cur, e, n, expected, p["scan_repeats"])
        _sizes(ctx, cur, TABLE, e, rowset, datadir, "loaded by C1's single-row INSERTs")
        prev = e
    _ratio(ctx, rowset)
    return prev


def _between_engines(ctx: StepContext, cur, prev: str, nxt: str) -> None:
    """The study's TRUNCATE then ALTER TABLE ... ENGINE=; where the engine refuses
    TRUNCATE (ARCHIVE on MariaDB 10.11), DROP and CREATE on the next engine instead."""
    try:
        cur.execute(f"TRUNCATE TABLE {TABLE}")
    except pymysql.err.MySQLError as e:
        if e.args[0] not in ER_ILLEGAL_HA:
            raise
        cur.execute(f"DROP TABLE {TABLE}")
        cur.execute(f"CREATE TABLE {TABLE} {COLUMNS} ENGINE={nxt}")
        ctx.rec.value("C1", prev, "reset", "DROP+CREATE", "",
                      f"TRUNCATE refused ({e.args[0]}: {e.args[1]}); dropped {TABLE} and "
                      f"created it on {nxt}")
        return
    cur.execute(f"ALTER TABLE {TABLE} ENGINE={nxt}")
    ctx.rec.value("C1", prev, "reset", "TRUNCATE+ALTER", "",
                  f"TRUNCATE TABLE {TABLE}; ALTER TABLE {TABLE} ENGINE={nxt}")


def _scan(ctx: StepContext, cur, engine: str, n: int, expected: int, repeats: int) -> None:
    """C2: the study's scan, shown to read every row (a bare count(*) would not)."""
    rec = ctx.rec
    plan = explain(cur, SCAN)
    rec.value("C2", engine, "explain_type", plan.get("type"), "",
              f"EXPLAIN {SCAN}: rows={plan.get('rows')} Extra={plan.get('extra')}")
    rec.check("C2", engine, str(plan.get("type")).upper() == "ALL",
              f"EXPLAIN type={plan.get('type')} (ALL = full table scan)", metric="explain_type_all")
    bare = explain(cur, f"SELECT count(*) FROM {TABLE}")
    rec.value("C2", engine, "bare_count_extra", bare.get("extra") or "(none)", "",
              "EXPLAIN of a bare count(*): 'Select tables optimized away' = answered from metadata")
    for k in range(1, repeats + 1):
        before = rnd_next(cur)
        got = rec.timed("C2", engine, lambda: (cur.execute(SCAN), cur.fetchone())[1],
                        metric="scan_s", detail=f"repetition {k} of {repeats}: {SCAN}")
        delta = rnd_next(cur) - before
        rec.value("C2", engine, "rnd_next", delta, "rows",
                  f"Handler_read_rnd_next delta around repetition {k}")
        rec.check("C2", engine, delta >= n, f"repetition {k}: Handler_read_rnd_next grew by "
                  f"{delta}, table has {n} rows", metric="rnd_next_covers_rows")
        rec.check("C2", engine, got[0] == expected, f"repetition {k}: count {got[0]}, "
                  f"expected {expected}", metric="matched")


def _conversions(ctx: StepContext, cur, p: dict, engines: list[str], last: str | None) -> None:
    """C2: the loaded table converted ARCHIVE -> MyISAM -> InnoDB, then back (needs all
    three among the cell's usable engines)."""
    rec, n = ctx.rec, p["rows"]
    chain = list(CONVERSIONS) + list(reversed(CONVERSIONS))[1:]
    pairs = list(zip(chain, chain[1:]))
    usable = {e.lower() for e in engines}
    missing = [e for e in CONVERSIONS if e.lower() not in usable]
    if missing or last is None:
        why = (f"{', '.join(missing)} not among this cell's usable engines" if missing
               else "no engine was loaded in C1")
        for a, b in pairs:
            rec.skip("C2.convert", f"{a}>{b}", why)
        return
    # always, even when C1 left the table on ARCHIVE (its last engine in a random order): the
    # chain then starts in every block from a table ALTER built, not in some from one C1's
    # single-row inserts filled
    cur.execute(f"ALTER TABLE {TABLE} ENGINE={CONVERSIONS[0]}")
    rec.value("C2.convert", "", "chain_start", last, "",
              f"the loaded table moved from {last} to {CONVERSIONS[0]} (untimed) to start the chain"
              + (" (a rebuild: it was on it already)" if last.lower() == CONVERSIONS[0].lower() else ""))
    for a, b in pairs:
        rec.timed("C2.convert", f"{a}>{b}", lambda: cur.execute(f"ALTER TABLE {TABLE} ENGINE={b}"),
                  metric="alter_s", detail=f"ALTER TABLE {TABLE} ENGINE={b} of {n} rows on {a}")
        ensure_engine(cur, TABLE, b, f"C2 conversion {a}>{b}")
        got = one(cur, f"SELECT count(*) FROM {TABLE}")
        rec.check("C2.convert", f"{a}>{b}", got == n, f"{got} rows after the conversion, {n} before",
                  metric="rows_kept")


# C3 ----------------------------------------------------------------------------------------
def _table_files(datadir: Path, table: str) -> list[Path]:
    """The table's data and index files (not its .frm definition)."""
    return sorted(f for f in (datadir / DB).glob(f"{table}.*")
                  if f.is_file() and f.suffix.lower() != ".frm")


def _sizes(ctx: StepContext, cur, table: str, engine: str, rowset: str, datadir: Path, how: str) -> None:
    rec = ctx.rec
    cur.execute(f"FLUSH TABLES {table}")  # ARCHIVE and MyISAM write out what they buffer
    cur.execute(f"ANALYZE TABLE {table}")  # InnoDB's data_length comes from its statistics
    cur.fetchall()
    cur.execute("SELECT data_length, index_length FROM information_schema.tables "
                "WHERE table_schema = %s AND table_name = %s", (DB, table))
    dl, il = cur.fetchone()
    rec.value("C3", engine, f"{rowset}_is_bytes", int(dl or 0) + int(il or 0), "bytes",
              f"information_schema data_length {dl} + index_length {il}; {how}")
    files = _table_files(datadir, table)
    if files:
        rec.value("C3", engine, f"{rowset}_datadir_bytes", sum(f.stat().st_size for f in files), "bytes",
                  "; ".join(f"{f.name} {f.stat().st_size}" for f in files) + f"; {how}")
    elif engine.lower() == "memory":
        rec.skip("C3", engine, "MEMORY keeps its rows in RAM: no data file in the datadir",
                 metric=f"{rowset}_datadir_bytes")
    else:
        rec.skip("C3", engine, f"no data file of {table} in {datadir / DB} (InnoDB without "
                 f"innodb_file_per_table keeps rows in its shared tablespace)",
                 metric=f"{rowset}_datadir_bytes")


def _ratio(ctx: StepContext, rowset: str) -> None:
    """ARCHIVE bytes / MyISAM bytes for one row set (the study: ~0.2, "about 80% saved")."""
    rec = ctx.rec
    for kind in ("datadir", "is"):
        metric = f"{rowset}_{kind}_bytes"
        a, m = rec.find("C3", "ARCHIVE", metric), rec.find("C3", "MyISAM", metric)
        a = [r for r in a if r["ok"]]
        m = [r for r in m if r["ok"]]
        if a and m and m[-1]["value"]:
            rec.value("C3", "ARCHIVE/MyISAM", f"{rowset}_{kind}_ratio", a[-1]["value"] / m[-1]["value"],
                      "ratio", f"{a[-1]['value']} / {m[-1]['value']} bytes")
        else:
            rec.skip("C3", "ARCHIVE/MyISAM", "ARCHIVE or MyISAM size not measured here",
                     metric=f"{rowset}_{kind}_ratio")


def _varied_sizes(ctx: StepContext, cur, p: dict, engines: list[str], datadir: Path) -> None:
    """C3 on a second, varied row set, so the ARCHIVE ratio is not an artefact of
    3 million copies of one row. Loaded by INSERT ... SELECT (its speed is not the point)."""
    n = p["varied_rows"]
    cur.execute(f"CREATE TABLE c3_src {COLUMNS} ENGINE=MyISAM")
    cur.execute(f"INSERT INTO c3_src SELECT {varied_values('n')} FROM {numbers(n)}")
    for e in engines:
        cur.execute("DROP TABLE IF EXISTS c3_varied")
        cur.execute(f"CREATE TABLE c3_varied {COLUMNS} ENGINE={e}")
        ensure_engine(cur, "c3_varied", e, "C3")
        cur.execute("INSERT INTO c3_varied SELECT * FROM c3_src")
        got = one(cur, "SELECT count(*) FROM c3_varied")
        ctx.rec.check("C3", e, got == n, f"{got} varied rows of {n}", metric="varied_rows_loaded")
        _sizes(ctx, cur, "c3_varied", e, "varied", datadir,
               "varied rows by INSERT ... SELECT from a MyISAM copy")
    cur.execute("DROP TABLE IF EXISTS c3_varied")
    _ratio(ctx, "varied")


def extra(fr, spec: dict, rec, values: dict | None = None) -> dict:
    """After the script: the legacy stand-in's row (a real PostgreSQL running the study's loop
    as one transaction, or committing per row with legacy_commit: per_row, flushing its WAL as
    the cell's InnoDB flushes its log), when the experiment asks for it; its part of the
    manifest."""
    return {"legacy": legacy_pg.legacy(fr, spec, rec, values or {})} if spec.get("legacy") else {}
