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
"""
from __future__ import annotations

import collections
import os
import statistics
import tempfile
import time
import zlib
from pathlib import Path

import pymysql

from harness.measure import mycnf
from harness.measure.stepscript import StepContext, StepError, cursor, show_engines
from harness.studies.c import legacy_pg

SCRIPT = "c_test_drive"
DB = "testdrive"
TABLE = "t1"
COLUMNS = "(c1 int, c2 varchar(20), c3 date)"
STUDY_ROW = "(1, 'sample audit string', now())"
# The study's three engines, then the two it could not have had (MEMORY was there but
# not in its table; Aria is MariaDB's): each measured where SHOW ENGINES has it.
STUDY_ENGINES = ("InnoDB", "MyISAM", "ARCHIVE", "MEMORY", "Aria")
CONVERSIONS = ("ARCHIVE", "MyISAM", "InnoDB")  # the study's order; then the reverse
PAPER_ROWS = 3_000_000
# `rows` (C1 rows per engine; the study: 3,000,000) is the experiment's `rows` from the
# resolved config (its default: config/default.yaml). These are the script's own settings,
# no config key sets them (tests shrink them):
KNOBS = {
    "realistic_rows": False,  # C1 inserts varied rows instead of the study's identical one
    "varied_rows": None,      # C3's varied row set; None = as many as `rows`
    "feature_rows": 40_000,   # C4's stored-procedure table (the study: 40,000 rows)
    "scan_repeats": 3,        # C2 scans timed per engine (the first is the coldest)
    "fsync_probes": 50,       # 4 KiB write + fsync pairs timed in the datadir's filesystem
}
# ARCHIVE is a plugin in these families' builds, loaded at startup (built in elsewhere).
ARCHIVE_PLUGIN = {"mariadb-10.11": "ha_archive.so"}
# Engine errors meaning "this engine cannot do that" (TRUNCATE on ARCHIVE in MariaDB 10.11).
ER_ILLEGAL_HA = (1031, 1030)
SSN_KEY = "password"


# -- parameters and server options ----------------------------------------------------
def params(p: dict | None) -> dict:
    """The script's parameters (`rows` given, KNOBS unless given); a bad one is a one-line
    StepError naming it."""
    p = dict(p or {})
    names = ["rows", *KNOBS]
    unknown = sorted(set(p) - set(names))
    if unknown:
        raise StepError(f"steps params of {SCRIPT}: {unknown[0]} is not a parameter; "
                        f"use {', '.join(names)}")
    out = {**KNOBS, **p}
    if not isinstance(out["realistic_rows"], bool):
        raise StepError(f"steps params of {SCRIPT}: realistic_rows={out['realistic_rows']!r} "
                        f"must be true or false")
    if "rows" not in out:
        raise StepError(f"steps params of {SCRIPT}: rows is missing; give the experiment's rows (config)")
    if out["varied_rows"] is None:
        out["varied_rows"] = out["rows"]
    for key in ("rows", "varied_rows", "feature_rows", "scan_repeats", "fsync_probes"):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise StepError(f"steps params of {SCRIPT}: {key}={v!r} must be a whole number >= 1")
    if out["feature_rows"] < 100:
        raise StepError(f"steps params of {SCRIPT}: feature_rows={out['feature_rows']} must be >= 100")
    return out


def _known(family: str, option: str) -> bool:
    """An option of the family's binary (families without an options list: assumed)."""
    return not mycnf.family_options(family) or mycnf.known_option(family, option)


def durability_options(family: str, flush_log_at_trx_commit: int = 1) -> dict:
    """A 2005 default server's durability: InnoDB flushes its log at every commit
    (innodb_flush_log_at_trx_commit=1, the default then and now), no binary log (off
    unless log-bin is given, as in MySQL 5.0; nothing here sets it) and sync_binlog=0
    (5.0's default; 5.7.7 made it 1). Autocommit inserts on InnoDB pay one log flush
    per row with this, so the setting and the host's fsync latency decide C1's InnoDB
    figure: the script records both. Pass 0 or 2 to make it a factor."""
    if flush_log_at_trx_commit not in (0, 1, 2):
        raise StepError(f"innodb_flush_log_at_trx_commit={flush_log_at_trx_commit!r}: use 0, 1 or 2")
    out = {"innodb_flush_log_at_trx_commit": flush_log_at_trx_commit}
    if _known(family, "sync_binlog"):
        out["sync_binlog"] = 0
    return out


def server_options(family: str, engines, flush_log_at_trx_commit: int = 1) -> dict:
    """What a c_test_drive cell's my.cnf needs on top of the family's defaults: the
    durability above, ARCHIVE's plugin where it is one (MariaDB 10.11; built into
    MySQL 5.6.24), the query cache off (C2 times scans, not cache hits), and room for
    the MEMORY table (`max_heap_table_size`)."""
    engines = {e.lower() for e in engines}
    out = durability_options(family, flush_log_at_trx_commit)
    if "archive" in engines and family in ARCHIVE_PLUGIN:
        out["plugin_load_add"] = ARCHIVE_PLUGIN[family]
    for opt in ("query_cache_type", "query_cache_size"):
        if _known(family, opt):
            out[opt] = 0
    if "memory" in engines:
        # 1G (the family default, set here so the script does not depend on it) holds the
        # 3M study rows (~65 bytes each). Not more: MariaDB's MEMORY engine allocates its
        # first block as a fraction of this limit (4G: 512 MiB for a 1000-row table).
        out["max_heap_table_size"] = "1G"
    return out


def skip_innodb_options(family: str) -> dict:
    """InnoDB disabled, as the study's `skip-innodb`; MariaDB aborts ("Unknown/unsupported
    storage engine: InnoDB") unless the default and the tmp-table engine are set too."""
    out = {"skip_innodb": True, "default_storage_engine": "MyISAM"}
    if _known(family, "default_tmp_storage_engine"):
        out["default_tmp_storage_engine"] = "MyISAM"
    return out


# -- SQL of the study -------------------------------------------------------------------
def varied_values(x: str) -> str:
    """A deterministic, realistic-looking row for integer expression `x`: c1 an event
    code 0..9 (so `c1 = 1` matches about a tenth), c2 an audit event and user
    ('read u4211'), c3 a day of 2004-2005. Made of crc32 of the number's decimal
    text, so Python computes the same values (expected_matches)."""
    events = ", ".join(f"'{e}'" for e in ("login ok", "login failed", "logout", "read",
                                          "write", "grant", "revoke", "update"))
    return (f"crc32({x}) % 10, "
            f"concat(elt(1 + crc32(concat('a', {x})) % 8, {events}), ' u', "
            f"crc32(concat('u', {x})) % 100000), "
            f"date_add('2004-01-01', interval crc32(concat('d', {x})) % 700 day)")


def expected_matches(rows: int, realistic: bool) -> int:
    """Rows with c1 = 1 among the first `rows` C1 rows."""
    if not realistic:
        return rows
    return sum(1 for i in range(rows) if zlib.crc32(str(i).encode()) % 10 == 1)


def load_procedure(realistic: bool) -> str:
    """The study's loader: one INSERT per iteration of a WHILE loop (autocommit: each
    INSERT is its own transaction)."""
    row = f"({varied_values('i')})" if realistic else STUDY_ROW
    return (f"CREATE PROCEDURE c1_load(IN n INT)\n"
            f"BEGIN\n"
            f"  DECLARE i INT DEFAULT 0;\n"
            f"  WHILE i < n DO\n"
            f"    INSERT INTO {TABLE} VALUES {row};\n"
            f"    SET i = i + 1;\n"
            f"  END WHILE;\n"
            f"END")


SCAN = f"SELECT count(*) FROM {TABLE} WHERE c1 = 1"


def _numbers(n: int) -> str:
    """A derived table of integers 0..n-1 as column `n` (cross join of c_digits)."""
    k = len(str(max(n - 1, 1)))
    expr = " + ".join(f"{10 ** j} * d{j}.d" for j in range(k))
    tables = ", ".join(f"c_digits d{j}" for j in range(k))
    return f"(SELECT {expr} AS n FROM {tables}) AS nums WHERE n < {n}"


# -- small helpers ------------------------------------------------------------------------
def _one(cur, sql, args=None):
    cur.execute(sql, args)
    row = cur.fetchone()
    return None if row is None else row[0]


def _engine_of(cur, table: str) -> str | None:
    return _one(cur, "SELECT engine FROM information_schema.tables "
                     "WHERE table_schema = %s AND table_name = %s", (DB, table))


def _ensure_engine(cur, table: str, engine: str, what: str) -> None:
    got = _engine_of(cur, table)
    if (got or "").lower() != engine.lower():
        raise StepError(f"{what}: table {table} is {got}, not {engine} (engine substitution?)")


def _rnd_next(cur) -> int:
    cur.execute("SHOW SESSION STATUS LIKE 'Handler_read_rnd_next'")
    return int(cur.fetchone()[1])


def _explain(cur, sql: str) -> dict:
    cur.execute("EXPLAIN " + sql)
    cols = [d[0].lower() for d in cur.description]
    return dict(zip(cols, cur.fetchone()))


def _usable(ctx: StepContext) -> list[str]:
    """The requested engines this server has; a skipped row per step for the others."""
    out = []
    for e in ctx.engines:
        if ctx.has_engine(e):
            out.append(e)
            continue
        why = (f"{e} is not an engine of this build: SHOW ENGINES "
               f"{'says ' + ctx.support(e) if ctx.support(e) else 'does not list it'}")
        for step in ("C1", "C2", "C3", "C4.feature"):
            ctx.rec.skip(step, e, why)
    return out


def fsync_latencies(directory: Path, n: int) -> list[float]:
    """Seconds of n (4 KiB write + fsync) pairs in a scratch file in `directory`:
    what one InnoDB log flush per autocommit insert costs on this filesystem."""
    fd, path = tempfile.mkstemp(prefix=".fsync-probe-", dir=directory)
    try:
        block, out = b"\0" * 4096, []
        for _ in range(n):
            t0 = time.perf_counter()
            os.write(fd, block)
            os.fsync(fd)
            out.append(time.perf_counter() - t0)
        return out
    finally:
        os.close(fd)
        os.unlink(path)


# -- the script ---------------------------------------------------------------------------
def run(ctx: StepContext) -> None:
    p = params(ctx.params)
    ctx.server.query(f"DROP DATABASE IF EXISTS {DB}")
    ctx.server.query(f"CREATE DATABASE {DB}")
    datadir = Path(str(ctx.server.query("SELECT @@datadir")[0][0]))
    _setup(ctx, p, datadir)
    engines = _usable(ctx)
    with cursor(ctx.server, DB) as cur:
        cur.execute("CREATE TABLE c_digits (d int) ENGINE=MyISAM")
        cur.execute("INSERT INTO c_digits VALUES " + ", ".join(f"({i})" for i in range(10)))
        last = _c1_c2_c3(ctx, cur, p, engines, datadir)
        _conversions(ctx, cur, p, engines, last)
        _varied_sizes(ctx, cur, p, engines, datadir)
        _c4_features(ctx, cur, p, engines)
    _c4_show_engines(ctx, "C4.engines")
    _c4_skip_innodb(ctx, p)


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
        _ensure_engine(cur, TABLE, e, "C1")
        rec.timed("C1", e, lambda: cur.execute(f"CALL c1_load({n})"), metric="insert_s",
                  detail=f"CALL c1_load({n}): {n} single-row autocommit INSERTs of {rowset} rows")
        loaded = _one(cur, f"SELECT count(*) FROM {TABLE}")
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
    plan = _explain(cur, SCAN)
    rec.value("C2", engine, "explain_type", plan.get("type"), "",
              f"EXPLAIN {SCAN}: rows={plan.get('rows')} Extra={plan.get('extra')}")
    rec.check("C2", engine, str(plan.get("type")).upper() == "ALL",
              f"EXPLAIN type={plan.get('type')} (ALL = full table scan)", metric="explain_type_all")
    bare = _explain(cur, f"SELECT count(*) FROM {TABLE}")
    rec.value("C2", engine, "bare_count_extra", bare.get("extra") or "(none)", "",
              "EXPLAIN of a bare count(*): 'Select tables optimized away' = answered from metadata")
    for k in range(1, repeats + 1):
        before = _rnd_next(cur)
        got = rec.timed("C2", engine, lambda: (cur.execute(SCAN), cur.fetchone())[1],
                        metric="scan_s", detail=f"repetition {k} of {repeats}: {SCAN}")
        delta = _rnd_next(cur) - before
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
    if last.lower() != CONVERSIONS[0].lower():
        cur.execute(f"ALTER TABLE {TABLE} ENGINE={CONVERSIONS[0]}")
        rec.value("C2.convert", "", "chain_start", last, "",
                  f"the loaded table moved from {last} to {CONVERSIONS[0]} (untimed) to start the chain")
    for a, b in pairs:
        rec.timed("C2.convert", f"{a}>{b}", lambda: cur.execute(f"ALTER TABLE {TABLE} ENGINE={b}"),
                  metric="alter_s", detail=f"ALTER TABLE {TABLE} ENGINE={b} of {n} rows on {a}")
        _ensure_engine(cur, TABLE, b, f"C2 conversion {a}>{b}")
        got = _one(cur, f"SELECT count(*) FROM {TABLE}")
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
    cur.execute(f"INSERT INTO c3_src SELECT {varied_values('n')} FROM {_numbers(n)}")
    for e in engines:
        cur.execute("DROP TABLE IF EXISTS c3_varied")
        cur.execute(f"CREATE TABLE c3_varied {COLUMNS} ENGINE={e}")
        _ensure_engine(cur, "c3_varied", e, "C3")
        cur.execute("INSERT INTO c3_varied SELECT * FROM c3_src")
        got = _one(cur, "SELECT count(*) FROM c3_varied")
        ctx.rec.check("C3", e, got == n, f"{got} varied rows of {n}", metric="varied_rows_loaded")
        _sizes(ctx, cur, "c3_varied", e, "varied", datadir,
               "varied rows by INSERT ... SELECT from a MyISAM copy")
    cur.execute("DROP TABLE IF EXISTS c3_varied")
    _ratio(ctx, "varied")


# C4 ----------------------------------------------------------------------------------------
def _ssn(k: int) -> str:
    return f"{100 + k:03d}-45-{6789 + k:04d}"


class _Feature:
    """One server feature of C4: `setup` creates its table on an engine and the
    feature over it; `verify(k)` after the k-th ALTER says (ok, what was seen)."""

    def __init__(self, name, setup, verify):
        self.name, self.setup, self.verify = name, setup, verify


def _features(cur, p: dict) -> list[_Feature]:
    rows = p["feature_rows"]

    def proc_setup(e):
        cur.execute("DROP PROCEDURE IF EXISTS c4_count")
        cur.execute("DROP TABLE IF EXISTS c4_proc")
        cur.execute(f"CREATE TABLE c4_proc {COLUMNS} ENGINE={e}")
        cur.execute("INSERT INTO c4_proc SELECT * FROM c4_base")
        cur.execute("CREATE PROCEDURE c4_count() SELECT count(*) FROM c4_proc")
        return "c4_proc"

    def proc_verify(k):
        cur.execute("CALL c4_count()")
        got = cur.fetchall()[0][0]
        return got == rows, f"CALL c4_count() = {got}"

    def trig_setup(e):
        cur.execute("DROP TABLE IF EXISTS c4_trig")
        cur.execute(f"CREATE TABLE c4_trig (id int, userssn varbinary(64)) ENGINE={e}")
        cur.execute("CREATE TRIGGER c4_enc BEFORE INSERT ON c4_trig FOR EACH ROW "
                    f"SET NEW.userssn = aes_encrypt(NEW.userssn, '{SSN_KEY}')")
        return "c4_trig"

    def trig_verify(k):
        cur.execute("INSERT INTO c4_trig VALUES (%s, %s)", (k, _ssn(k)))
        cur.execute(f"SELECT id, userssn, aes_decrypt(userssn, '{SSN_KEY}') FROM c4_trig ORDER BY id")
        got = cur.fetchall()
        bad = [r[0] for r in got
               if bytes(r[2] or b"").decode(errors="replace") != _ssn(r[0]) or bytes(r[1]) == _ssn(r[0]).encode()]
        return (len(got) == k + 1 and not bad,
                f"{len(got)} rows, {len(got) - len(bad)} stored encrypted and decrypting to their SSN")

    want = sorted(collections.Counter(i % 100 for i in range(rows) if i % 100 < 10).items())

    def view_setup(e):
        cur.execute("DROP VIEW IF EXISTS c4_v")
        cur.execute("DROP TABLE IF EXISTS c4_vt")
        cur.execute(f"CREATE TABLE c4_vt {COLUMNS} ENGINE={e}")
        cur.execute("INSERT INTO c4_vt SELECT * FROM c4_base WHERE c1 < 10")
        cur.execute("CREATE VIEW c4_v AS SELECT c1, count(*) AS n FROM c4_vt GROUP BY c1")
        return "c4_vt"

    def view_verify(k):
        cur.execute("SELECT c1, n FROM c4_v ORDER BY c1")
        got = [(int(a), int(b)) for a, b in cur.fetchall()]
        return got == want, f"view gives {len(got)} groups, {'as expected' if got == want else got[:3]}"

    return [_Feature("procedure", proc_setup, proc_verify), _Feature("trigger", trig_setup, trig_verify),
            _Feature("view", view_setup, view_verify)]


def _c4_features(ctx: StepContext, cur, p: dict, engines: list[str]) -> None:
    """C4: each feature created on every engine, then the table ALTERed to each other
    engine in turn; one check row per (feature, engine created on)."""
    rows = p["feature_rows"]
    cur.execute(f"CREATE TABLE c4_base {COLUMNS} ENGINE=MyISAM")
    cur.execute(f"INSERT INTO c4_base SELECT n % 100, 'sample audit string', '2005-10-26' "
                f"FROM {_numbers(rows)}")
    for feat in _features(cur, p):
        for e in engines:
            seen = []
            try:
                table = feat.setup(e)
                ok = (_engine_of(cur, table) or "").lower() == e.lower()
                good, what = feat.verify(0)
                ok = ok and good
                seen.append(f"on {e}: {what}")
                for k, f in enumerate([x for x in engines if x != e], start=1):
                    cur.execute(f"ALTER TABLE {table} ENGINE={f}")
                    now = _engine_of(cur, table)
                    good, what = feat.verify(k)
                    good = good and (now or "").lower() == f.lower()
                    ok = ok and good
                    seen.append(f"after ALTER to {f} ({now}): {what}")
            except pymysql.err.MySQLError as err:
                ok = False
                seen.append(f"server error {err.args[0]}: {err.args[1] if len(err.args) > 1 else ''}")
            ctx.rec.check("C4.feature", e, ok, f"{feat.name} created on {e}; " + "; ".join(seen),
                          metric=feat.name)


def _c4_show_engines(ctx: StepContext, step: str) -> None:
    """SHOW ENGINES as rows: engine, Support, Comment."""
    for row in show_engines(ctx.server):
        ctx.rec.value(step, str(row[0]), "support", str(row[1]), "", str(row[2] or ""))


def _c4_skip_innodb(ctx: StepContext, p: dict) -> None:
    """C4: restart with InnoDB disabled; SHOW ENGINES must say so and a MyISAM table
    must still answer; then restart with the cell's own configuration."""
    rec = ctx.rec
    opts = skip_innodb_options(ctx.family)
    said = ", ".join(f"{k}={'ON' if v is True else v}" for k, v in opts.items())
    try:
        ctx.restart_with(opts)
    except Exception as e:  # noqa: BLE001 - a server that will not start so is the finding
        rec.check("C4.skip_innodb", "InnoDB", False, f"no server with {said}: {e}",
                  metric="innodb_disabled")
    else:
        _c4_show_engines(ctx, "C4.engines_skip_innodb")
        support = ctx.support("InnoDB")
        rec.check("C4.skip_innodb", "InnoDB", support is None or support.upper() in ("DISABLED", "NO"),
                  f"with {said} SHOW ENGINES says InnoDB {support or 'is absent'}", metric="innodb_disabled")
        got = ctx.server.query("SELECT count(*) FROM c4_base WHERE c1 >= 0", DB)[0][0]
        rec.check("C4.skip_innodb", "MyISAM", got == p["feature_rows"],
                  f"the MyISAM table answers without InnoDB: {got} rows", metric="myisam_works")
    # not in a `finally`: after an interrupt or an error no new server is started
    ctx.restart_with({})
    support = ctx.support("InnoDB")
    rec.check("C4.restart", "InnoDB", ctx.has_engine("InnoDB"),
              f"restarted with the cell's configuration: InnoDB {support}", metric="innodb_back")


def extra(fr, spec: dict, rec) -> dict:
    """After the script: the legacy stand-in's row (a real PostgreSQL), when the
    experiment asks for it; its part of the manifest."""
    return {"legacy": legacy_pg.legacy(fr, spec, rec)} if spec.get("legacy") else {}
