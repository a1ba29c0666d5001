"""Study C's ground (harness.studies.c.test_drive runs it): the script's
parameters and server options, the study's SQL, and the small helpers its
steps share (one value of a query, a table's engine, the engines this server
has, the filesystem's fsync cost).
"""
from __future__ import annotations

import os
import tempfile
import time
import zlib
from pathlib import Path

from harness.measure import mycnf
from harness.measure.stepscript import StepContext, StepError

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


def numbers(n: int) -> str:
    """A derived table of integers 0..n-1 as column `n` (cross join of c_digits)."""
    k = len(str(max(n - 1, 1)))
    expr = " + ".join(f"{10 ** j} * d{j}.d" for j in range(k))
    tables = ", ".join(f"c_digits d{j}" for j in range(k))
    return f"(SELECT {expr} AS n FROM {tables}) AS nums WHERE n < {n}"


# -- small helpers ------------------------------------------------------------------------
def one(cur, sql, args=None):
    cur.execute(sql, args)
    row = cur.fetchone()
    return None if row is None else row[0]


def engine_of(cur, table: str) -> str | None:
    return one(cur, "SELECT engine FROM information_schema.tables "
                     "WHERE table_schema = %s AND table_name = %s", (DB, table))


def ensure_engine(cur, table: str, engine: str, what: str) -> None:
    got = engine_of(cur, table)
    if (got or "").lower() != engine.lower():
        raise StepError(f"{what}: table {table} is {got}, not {engine} (engine substitution?)")


def rnd_next(cur) -> int:
    cur.execute("SHOW SESSION STATUS LIKE 'Handler_read_rnd_next'")
    return int(cur.fetchone()[1])


def explain(cur, sql: str) -> dict:
    cur.execute("EXPLAIN " + sql)
    cols = [d[0].lower() for d in cur.description]
    return dict(zip(cols, cur.fetchone()))


def usable_engines(ctx: StepContext) -> list[str]:
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
