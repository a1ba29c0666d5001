"""sysbench 1.0.x: named workloads, command lines, runs pinned to client CPUs, parsers."""
from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
from pathlib import Path

from harness import paths

from harness.measure import procs
from harness import registry as studies

LUA_DIR = paths.LUA

# Each workload: a small Lua wrapper in workflow/lua (stock script + CSV
# intervals) and the stock options that define it (spec: field notes).
WORKLOADS = {
    # A3 Point-Selects: one primary-key lookup per event, no transaction
    "point_select": {"script": "point_select.lua", "args": [], "statements": ["point"]},
    # OLTP_RO: the classic read-only mix (10 point selects + 4 range kinds) in BEGIN/COMMIT
    "oltp_ro": {"script": "read_only.lua", "args": [],
                "statements": ["point", "simple_range", "sum_range", "order_range", "distinct_range"]},
    # Simple-Ranges: range selects only, autocommit (as Percona's and the study's)
    "simple_ranges": {"script": "read_only.lua",
                      "args": ["--skip-trx=on", "--point-selects=0", "--simple-ranges=1", "--sum-ranges=0",
                               "--order-ranges=0", "--distinct-ranges=0"],
                      "statements": ["simple_range"]},
    # B3: read-write mix (MEMORY's table locks serialise the writes). Each event
    # deletes a row and re-inserts it; on an engine without transactions (MEMORY,
    # MyISAM) two threads can race to re-insert the same id: that duplicate key is
    # counted as an ignored error (reported), as deadlocks are for InnoDB.
    "oltp_rw": {"script": "read_write.lua", "args": ["--mysql-ignore-errors=1062,1213,1205,1020"],
                "statements": ["point", "simple_range", "sum_range", "order_range", "distinct_range",
                               "index_update", "non_index_update", "delete"]},
}
# A study's own drivers (e.g. A1's full-text search) come from its package: harness.studies.

# Workloads whose ignored errors are expected and reported (not a failed cell):
# oltp_rw's duplicate-key races on engines without transactions (above).
ERRORS_EXPECTED = {"oltp_rw"}

# One sample of each statement a workload sends, for EXPLAIN (table sbtest1).
STATEMENTS = {
    "point": "SELECT c FROM sbtest1 WHERE id=1",
    "simple_range": "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 100",
    "sum_range": "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 1 AND 100",
    "order_range": "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c",
    "distinct_range": "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c",
    "index_update": "UPDATE sbtest1 SET k=k+1 WHERE id=1",
    "non_index_update": "UPDATE sbtest1 SET c='x' WHERE id=1",
    "delete": "DELETE FROM sbtest1 WHERE id=1",
}


class SysbenchError(Exception):
    pass


def version() -> str:
    out = subprocess.run(["sysbench", "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().split()[-1]


def all_workloads() -> dict:
    """{name: workload}: the generic ones above and every study's (harness.studies)."""
    return {**WORKLOADS, **studies.workloads()}


def workload(name: str) -> dict:
    return all_workloads()[name]


def script_path(name: str) -> Path:
    return LUA_DIR / workload(name)["script"]  # a study's script is an absolute path


def script_sha256(workload: str) -> str:
    """Hash of the wrapper and the stock scripts it loads, so a change of either shows."""
    h = hashlib.sha256()
    wrapper = script_path(workload)
    h.update(wrapper.read_bytes())
    for mod in re.findall(r'require\("([^"]+)"\)', wrapper.read_text()):
        for base in (LUA_DIR, Path("/usr/share/sysbench")):
            f = base / f"{mod}.lua"
            if f.exists():
                h.update(f.read_bytes())
                break
    return h.hexdigest()


def common_args(*, socket: Path, tables: int, table_size: int, engine: str | None = None) -> list[str]:
    args = [f"--mysql-socket={socket}", "--mysql-user=root", "--mysql-db=sbtest",
            f"--tables={tables}", f"--table-size={table_size}"]
    if engine:
        args.append(f"--mysql-storage-engine={engine.lower()}")
    return args


def run_args(*, threads: int, duration: int, seed: int, rand_type: str, interval: int) -> list[str]:
    """Run options every measured run gets (prepared statements, transactions: harness.measure.factors)."""
    return [f"--threads={threads}", f"--time={duration}", f"--rand-type={rand_type}",
            f"--rand-seed={seed}", f"--report-interval={interval}", "--percentile=95"]


def with_args(name: str, args: list[str]) -> list[str]:
    """The options workload `name`'s script adds to `args` (its `with_args`: {an option it
    is given: the options of its own that go with it}), in that order."""
    return [x for given, adds in workload(name).get("with_args", {}).items() if given in args for x in adds]


def command(name: str, common: list[str], extra: list[str], action: str) -> list[str]:
    return ["sysbench", str(script_path(name)), *workload(name)["args"], *common, *extra, action]


def run(argv: list[str], *, cpus, run_id: str, timeout: float, memcg: Path | None = None) -> str:
    """Run sysbench pinned to `cpus`, in memory cgroup `memcg` if given (the server's:
    harness.measure.backends.Backend.client_memcg); return stdout, raise with its last
    error line on failure."""
    env = procs.labelled_env(run_id, {"LUA_PATH": f"{LUA_DIR}/?.lua;;"})
    cpus = sorted(cpus)
    procs_file = str(memcg / "cgroup.procs") if memcg is not None else None

    def preexec():
        procs.die_with_parent()
        if procs_file is not None:
            with open(procs_file, "w") as f:
                f.write(str(os.getpid()))
        os.sched_setaffinity(0, cpus)

    try:
        res = subprocess.run(argv, capture_output=True, text=True, env=env, preexec_fn=preexec,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SysbenchError(f"sysbench did not finish within {timeout:.0f}s") from None
    except subprocess.SubprocessError as e:  # the preexec failed
        if procs_file is not None and not Path(procs_file).exists():
            raise SysbenchError(f"sysbench could not join memory cgroup {memcg}: it is gone "
                                f"(the server's container stopped)") from None
        raise SysbenchError(f"sysbench could not start on CPUs {cpus}"
                            f"{f' in memory cgroup {memcg}' if memcg is not None else ''} ({e})") from None
    if res.returncode != 0:
        lines = [l for l in (res.stderr + res.stdout).splitlines() if "FATAL" in l or "error" in l.lower()]
        why = lines[-1].strip() if lines else res.stderr.strip()[-300:]
        if len(why) > 300:  # a failed INSERT is echoed whole
            why = why[:297] + "..."
        how = (f"killed by {signal.Signals(-res.returncode).name}" if res.returncode < 0
               else f"exit {res.returncode}")
        raise SysbenchError(f"sysbench {argv[-1]} failed ({how}): {why or 'no message'}")
    return res.stdout


# -- parsers (tested on recorded real output in tests/fixtures) ----------------
_FLOAT = r"([0-9]+(?:\.[0-9]+)?)"
_REPORT = {
    "tps": re.compile(r"^\s*transactions:\s+\d+\s+\(" + _FLOAT + r" per sec\.\)", re.M),
    "qps": re.compile(r"^\s*queries:\s+\d+\s+\(" + _FLOAT + r" per sec\.\)", re.M),
    "errors": re.compile(r"^\s*ignored errors:\s+(\d+)", re.M),
    "reconnects": re.compile(r"^\s*reconnects:\s+(\d+)", re.M),
    "total_time_s": re.compile(r"^\s*total time:\s+" + _FLOAT + r"s", re.M),
    "events": re.compile(r"^\s*total number of events:\s+(\d+)", re.M),
    "lat_avg_ms": re.compile(r"^\s*avg:\s+" + _FLOAT, re.M),
    "lat_max_ms": re.compile(r"^\s*max:\s+" + _FLOAT, re.M),
    "lat_p95_ms": re.compile(r"^\s*95th percentile:\s+" + _FLOAT, re.M),
    "reads": re.compile(r"^\s*read:\s+(\d+)", re.M),
    "writes": re.compile(r"^\s*write:\s+(\d+)", re.M),
    "other": re.compile(r"^\s*other:\s+(\d+)", re.M),
}
_INTS = {"errors", "reconnects", "events", "reads", "writes", "other"}


def parse_report(text: str) -> dict:
    out = {}
    for key, rx in _REPORT.items():
        m = rx.search(text)
        if m is None:
            raise SysbenchError(f"sysbench report has no '{key}' line; was the run cut short?")
        out[key] = int(m.group(1)) if key in _INTS else float(m.group(1))
    return out


INTERVAL_FIELDS = ["time", "threads", "tps", "qps", "reads", "writes", "other", "lat_pct_ms",
                   "err_ps", "reconn_ps"]
_CSV_ROW = re.compile(r"^\d+,\d+(,[0-9.eE+-]+){8}$")


def parse_intervals(text: str, threads: int | None = None) -> list[dict]:
    """The per-interval CSV rows (sysbench.report_csv); a trailing partial interval,
    with fewer threads than configured, is dropped."""
    rows = []
    # sysbench prints the last (partial) interval's row without a newline, glued to the report
    text = text.replace("SQL statistics:", "\nSQL statistics:")
    for line in text.splitlines():
        line = line.strip()
        if _CSV_ROW.match(line):
            vals = line.split(",")
            row = {k: (int(v) if k in ("time", "threads") else float(v)) for k, v in zip(INTERVAL_FIELDS, vals)}
            rows.append(row)
    if threads is not None:
        while rows and rows[-1]["threads"] < threads:
            rows.pop()
    return rows
