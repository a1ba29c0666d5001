"""sysbench's sbtest tables: `tables` x `table_size` rows of one engine.

MEMORY tables lose their rows at every restart: their dataset is the empty
database, and the throughput kind loads them inside the cell (`VOLATILE`).
MEMORY-BTREE is MEMORY with a BTREE index added after loading, as study B
did (`collect.memory_btree`).
"""
from __future__ import annotations

import re

from harness.measure import captures as collect

from harness.measure import sysbench
from harness.measure.server import ServerError

VOLATILE = {"MEMORY", "MEMORY-BTREE"}
DB = "sbtest"
ROW_S = 1 / 50_000  # seconds to load a row, with its indexes (harness.plan.estimate)
SCALE_KEY = "table_size"  # the spec key of its scale: rows per table (the deviations table, the estimate)
# seconds per row to read a table into memory before the warm-up (harness.measure.captures.preload;
# the plan's estimate): bench/preload_rate.py, 1 x 1,000,000 rows, mysqld on 1 CPU of the 2-CPU VM,
# 2026-11-29, median of 3 (InnoDB 1.31 s: rows and index k_1; MyISAM 0.17 s: rows, from the page cache)
PRELOAD_ROW_S = {"InnoDB": 1.3e-6, "MyISAM": 1.7e-7}
TABLE_CAPTURES = True  # a cell reads its tables' statistics and key caches (harness.measure.throughput)


def key(spec: dict, cell: dict) -> str:
    return f"{cell['engine']}_t{cell['tables']}_n{spec['table_size']}"


def parse_key(key: str) -> dict:
    m = re.fullmatch(r"(?P<engine>[A-Za-z]+(?:-[A-Za-z]+)?)_t(?P<tables>\d+)_n(?P<size>\d+)", key)
    if not m:
        raise ValueError(f"sbtest dataset key '{key}': expected <engine>_t<tables>_n<rows>")
    return {"engine": m["engine"], "tables": int(m["tables"]), "table_size": int(m["size"])}


def rows(key: str) -> int:
    """Rows the dataset holds (the time estimate scales with them)."""
    k = parse_key(key)
    return k["tables"] * k["table_size"]


def driver_args(spec: dict, cell: dict, socket) -> list[str]:
    """Connection and table options of a sysbench driver over these tables."""
    return sysbench.common_args(socket=socket, tables=cell["tables"], table_size=spec["table_size"])


ROW_BYTES = 320  # an sbtest row in InnoDB with its two indexes, generously (measured ~250)


def server_options(params: dict, family: str) -> dict:
    """Buffers sized from the dataset so it fits in memory (checked per cell:
    collect.memory_fit): the InnoDB buffer pool and MyISAM's default key cache
    at least 1.5x the estimate, and MEMORY tables allowed to hold it."""
    est = params["tables"] * params["table_size"] * ROW_BYTES
    mib = max(256, -(-int(est * 1.5) // (1 << 20)))
    return {"innodb_buffer_pool_size": f"{mib}M", "key_buffer_size": f"{max(64, mib // 4)}M",
            "max_heap_table_size": f"{max(1024, mib)}M"}


def sysbench_engine(engine: str) -> str:
    return engine.split("-")[0]


def fill(srv, *, engine: str, tables: int, table_size: int, cpus, run_id: str) -> str:
    """sysbench prepare of `tables` tables (and the BTREE index of MEMORY-BTREE)."""
    common = sysbench.common_args(socket=srv.socket, tables=tables, table_size=table_size,
                                  engine=sysbench_engine(engine))
    threads = max(1, min(tables, len(cpus)))
    out = sysbench.run(sysbench.command("point_select", common, [f"--threads={threads}"], "prepare"),
                       cpus=cpus, run_id=run_id, timeout=3600)
    if engine == "MEMORY-BTREE":
        collect.memory_btree(srv, tables)
    return out


def load(srv, params: dict, *, cpus, run_id: str, corpus_dir=None, out=None) -> dict:
    srv.query("CREATE DATABASE sbtest")
    engine, tables, size = params["engine"], params["tables"], params["table_size"]
    if engine in VOLATILE:
        return {"rows": {}, "volatile": True}
    log = fill(srv, engine=engine, tables=tables, table_size=size, cpus=cpus, run_id=run_id)
    if out is not None:
        (out / "prepare.out").write_text(log)
    counts = {f"sbtest{i}": srv.query(f"SELECT COUNT(*) FROM sbtest.sbtest{i}")[0][0]
              for i in range(1, tables + 1)}
    bad = {t: n for t, n in counts.items() if n != size}
    if bad:
        raise ServerError(f"sbtest dataset: row counts {bad} differ from table_size={size}")
    return {"rows": counts, "volatile": False}
