"""Per-cell captures from a running server: key caches, Performance Schema
waits, EXPLAIN of the workload's statements, and SHOW GLOBAL STATUS deltas.
Each returns rows; the cell writes them as TSV next to its manifest."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pymysql

from harness.measure.sysbench import STATEMENTS, workload as workload_of
from harness.measure import mycnf
from harness.measure.server import ServerError

PRELOAD_TIMEOUT_S = 600  # one read of the read-in: 1,000,000 InnoDB rows took 1.3 s (bench/preload_rate.py)
KEY_CACHE_SIZE = "16M"  # the smallest per-table key cache; larger when the table's index is
MIB = 1 << 20


def _rows(srv, sql: str, db: str | None = None) -> tuple[list[str], list[tuple]]:
    with srv.connect(db) as con, con.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description] if cur.description else []
        return names, list(cur.fetchall())


def tsv(header: list[str], rows) -> str:
    def cell(v):
        return "" if v is None else str(v).replace("\t", " ").replace("\n", " ")
    return "".join("\t".join(cell(v) for v in r) + "\n" for r in [header, *rows])


def key_caches(srv, tables: int, mode: str) -> list[tuple]:
    """MyISAM key caches, preloaded before measuring: the default one shared by
    every table, or one named cache per table (CACHE INDEX ... IN kc<i>)."""
    out = []
    for i in range(1, tables + 1):
        t = f"sbtest{i}"
        cache = "default"
        if mode == "per_table":
            cache = f"kc{i}"
            index = srv.query("SELECT index_length FROM information_schema.tables "
                              f"WHERE table_schema='sbtest' AND table_name='{t}'")[0][0] or 0
            size = max(mycnf.size_bytes(KEY_CACHE_SIZE), -(-int(index * 1.25) // MIB) * MIB)
            srv.query(f"SET GLOBAL {cache}.key_buffer_size = {size}")
            _, res = _rows(srv, f"CACHE INDEX {t} IN {cache}", "sbtest")
            assert res and res[-1][-1] == "OK", f"CACHE INDEX {t} IN {cache}: {res}"
        _, load = _rows(srv, f"LOAD INDEX INTO CACHE {t}", "sbtest")
        size = srv.query(f"SELECT @@{cache}.key_buffer_size" if cache != "default"
                         else "SELECT @@global.key_buffer_size")[0][0]
        out.append((t, cache, size, load[-1][-1] if load else ""))
    return out


def pfs_enabled(srv) -> bool:
    return str(srv.query("SELECT @@performance_schema")[0][0]) in ("1", "ON")


def pfs_reset(srv) -> None:
    srv.query("TRUNCATE TABLE performance_schema.events_waits_summary_global_by_event_name")


def pfs_waits(srv) -> list[tuple]:
    """Every wait event seen since the reset, longest total wait first (picoseconds)."""
    return srv.query(
        "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT FROM "
        "performance_schema.events_waits_summary_global_by_event_name "
        "WHERE COUNT_STAR > 0 AND EVENT_NAME <> 'idle' ORDER BY SUM_TIMER_WAIT DESC")


def explain(srv, workload: str) -> tuple[list[str], list[tuple]]:
    """EXPLAIN of one sample of each statement the workload sends."""
    header, out = None, []
    for name in workload_of(workload)["statements"]:
        sql = STATEMENTS[name]
        try:
            names, rows = _rows(srv, "EXPLAIN " + sql, "sbtest")
        except pymysql.err.MySQLError as e:  # e.g. EXPLAIN UPDATE before 5.6
            names, rows = ["Extra"], [(f"EXPLAIN not supported: {e.args[-1]}",)]
        if header is None or len(names) > len(header):
            header = names
        out.extend((name, sql, dict(zip(names, r))) for r in rows)
    header = header or []
    return ["statement", "sql", *header], [(n, s, *[d.get(h) for h in header]) for n, s, d in out]


def status_delta(before, after) -> list[tuple]:
    """Numeric SHOW GLOBAL STATUS counters that changed: (name, before, after, delta)."""
    b = dict(before)
    out = []
    for name, v in after:
        try:
            x, y = float(b.get(name, "")), float(v)
        except ValueError:
            continue
        if x != y:
            d = y - x
            out.append((name, b[name], v, int(d) if d.is_integer() else d))
    return out


def memory_fit(srv, db: str, engine: str, delta: dict) -> dict:
    """Do the data fit in memory? From the server's answers, not an estimate:
    the schema's data and index bytes against the buffer that holds them, and
    the disk reads the measured run made (Innodb_buffer_pool_reads for InnoDB,
    Key_reads for MyISAM's default key cache); MEMORY tables are memory."""
    data, index = srv.query("SELECT COALESCE(SUM(data_length),0), COALESCE(SUM(index_length),0) "
                            f"FROM information_schema.tables WHERE table_schema='{db}'")[0]
    data, index = int(data), int(index)
    base = engine.split("-")[0]
    out = {"engine": engine, "data_bytes": data, "index_bytes": index}
    if base == "InnoDB":
        buf = int(srv.query("SELECT @@innodb_buffer_pool_size")[0][0])
        reads = int(float(delta.get("Innodb_buffer_pool_reads", 0) or 0))
        out.update(buffer="innodb_buffer_pool_size", buffer_bytes=buf, disk_reads=reads,
                   fits=data + index <= buf and reads == 0)
    elif base == "MyISAM":
        caches = srv.query("SELECT @@global.key_buffer_size")[0][0]
        reads = int(float(delta.get("Key_reads", 0) or 0))
        out.update(buffer="key caches (index) + OS page cache (rows)", buffer_bytes=int(caches),
                   disk_reads=reads, fits=reads == 0)
    else:
        out.update(buffer="max_heap_table_size", buffer_bytes=int(srv.query("SELECT @@max_heap_table_size")[0][0]),
                   disk_reads=0, fits=True)
    return out


def memory_btree(srv, tables: int) -> None:
    """MEMORY indexes are HASH unless declared otherwise, so range predicates
    scan the table (study B1). Study B's fix, kept as it was: the primary key
    stays as declared (HASH) and a secondary `KEY xid (id) USING BTREE` is
    added, which the range queries then use."""
    for i in range(1, tables + 1):
        srv.query(f"ALTER TABLE sbtest{i} ADD KEY xid (id) USING BTREE", "sbtest")


def show_index(srv, table: str) -> list[tuple]:
    """SHOW INDEX's rows: [2] the key, [3] the column's place in it, [4] the column, [10] the type."""
    return srv.query(f"SHOW INDEX FROM {table}", "sbtest")


def index_types(srv, tables: int) -> list[tuple]:
    return [(f"sbtest{i}", r[2], r[10]) for i in range(1, tables + 1) for r in show_index(srv, f"sbtest{i}")]


def _status(srv, name: str) -> int:
    rows = srv.query(f"SHOW GLOBAL STATUS LIKE '{name}'")
    return int(rows[0][1]) if rows else 0


def preload(srv, tables: int, engine: str) -> tuple[list[tuple], dict]:
    """Every table read into memory before the warm-up, so neither engine is measured while
    it still fills its cache, and the engines start alike: a MyISAM cell already loads its
    indexes into its key caches (key_caches), so this reads each table's rows once
    (InnoDB's clustered index into its buffer pool, MyISAM's data file into the OS page
    cache) and each InnoDB secondary index once, the tables side by side (one connection
    each). Study A had every table in the file system cache; InnoDB's buffer pool filled
    before the run is this artifact's reading of that. Rows (table, what was read, rows,
    seconds), and the whole read's {seconds, innodb_pages_read: Innodb_pages_read's rise}."""
    def one(i: int) -> list[tuple]:
        t = f"sbtest{i}"
        reads = [("rows", f"SELECT COUNT(*), SUM(LENGTH(pad)) FROM {t}")]
        if engine == "InnoDB":  # each secondary index by its first column: SUM, not COUNT(*), which
            # MySQL 8.0.17+ answers from the clustered index whatever the hint
            first = {r[2]: r[4] for r in show_index(srv, t) if int(r[3]) == 1}
            reads += [(k, f"SELECT COUNT(*), SUM(LENGTH(`{col}`)) FROM {t} FORCE INDEX (`{k}`)")
                      for k, col in sorted(first.items()) if k != "PRIMARY"]
        out = []
        for what, sql in reads:
            t0 = time.monotonic()
            try:  # a server that stops answering fails the cell, not hangs it
                n = srv.query(sql, "sbtest", read_timeout=PRELOAD_TIMEOUT_S)[0][0]
            except pymysql.err.OperationalError as e:
                raise ServerError(f"reading {t} into memory ({what}) failed after {time.monotonic() - t0:.0f} s "
                                  f"(read timeout {PRELOAD_TIMEOUT_S} s): {e}") from None
            out.append((t, what, int(n), round(time.monotonic() - t0, 3)))
        return out
    def fetched() -> int:  # pages InnoDB read from its files: one at a time or by read-ahead
        return _status(srv, "Innodb_pages_read")
    before, t0 = fetched(), time.monotonic()
    with ThreadPoolExecutor(max_workers=tables) as pool:
        rows = [r for part in pool.map(one, range(1, tables + 1)) for r in part]
    pages = fetched() - before if engine == "InnoDB" else None
    return rows, {"seconds": round(time.monotonic() - t0, 3), "innodb_pages_read": pages}
