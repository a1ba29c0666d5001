"""QPS as the server counts it, from SHOW GLOBAL STATUS before and after a run.

The studies quote server-side QPS. sysbench's client-side "queries" count
includes the BEGIN/COMMIT of each event, so on OLTP_RO (16 statements per
event with a transaction, 14 without) "transactions on" would earn a
built-in 2/14 bonus over "transactions off" for statements that do no work.
The server-side count below leaves them out.

What counts what on MySQL 5.6.24 (observed with sysbench 1.0.20 oltp_read_only,
2 and 4 threads, 3 s, --db-ps-mode auto/disable x --skip-trx off/on; the
recorded counters are in tests/fixtures/counters):

- Com_<command> (Com_select, Com_begin, Com_commit, ...) counts an SQL
  statement once whether it came as text (COM_QUERY) or as an executed
  prepared statement: with prepared statements Com_select equalled sysbench's
  reads and Com_begin/Com_commit its transactions, exactly as without.
- Com_stmt_execute counts COM_STMT_EXECUTE *in addition* (it equalled
  Com_select + Com_commit: 5.6 cannot prepare BEGIN, so sysbench sent it as
  text), and Com_stmt_prepare/Com_stmt_close count protocol commands, not
  statements. SQL-level PREPARE/EXECUTE/DEALLOCATE
  also bump Com_prepare_sql/Com_execute_sql/Com_dealloc_sql and Com_stmt_*
  beside the executed statement's own Com_select. Com_admin_commands counts
  COM_PING and the like. None of these is summed.
- Questions counts COM_STMT_EXECUTE (it is sysbench's queries plus a few), but
  also COM_QUIT: each connection closed in the window adds one (sysbench's
  threads, the harness's earlier status connection) -- so it was sysbench's
  queries + 3 + threads, not a statement count. Queries adds COM_STMT_PREPARE
  and COM_STMT_CLOSE on top. Neither is used.

Rule: the statements the server executed in a window = the sum of the deltas
of the Com_<command> counters that count SQL statements (all Com_* except
Com_stmt_*, Com_prepare_sql, Com_execute_sql, Com_dealloc_sql,
Com_admin_commands, Com_show_processlist), minus Com_begin, Com_commit and Com_rollback, minus the
harness's own statements in the window (`exclude_harness`). With the rule,
server statements == sysbench reads + writes exactly in every run above.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

# Com_show_processlist: the harness's own polls before each status snapshot
# (harness.measure.server.Server.global_status), a number that varies; no workload sends it.
NOT_STATEMENTS = frozenset({"Com_prepare_sql", "Com_execute_sql", "Com_dealloc_sql", "Com_admin_commands",
                            "Com_show_processlist"})
TRANSACTION_CONTROL = ("Com_begin", "Com_commit", "Com_rollback")

# A window bounded by two Server.global_status() calls (one PyMySQL connection
# each) holds the second call's statements: the SET NAMES PyMySQL sends on
# connect and the SHOW GLOBAL STATUS itself (each Com_ counter is bumped before
# its statement runs, so the SHOW sees itself). Checked on the real server by
# tests/e2e/test_counters_e2e.py; pass it as exclude_harness.
SNAPSHOT_STATEMENTS = 2


class CounterError(ValueError):
    pass


def counts_statements(name: str) -> bool:
    """Whether a SHOW GLOBAL STATUS counter counts executed SQL statements."""
    return name.startswith("Com_") and not name.startswith("Com_stmt_") and name not in NOT_STATEMENTS


def _int(status: Mapping, name: str, which: str) -> int:
    try:
        return int(status[name])
    except KeyError:
        raise CounterError(f"counter {name} is in one snapshot but not in the {which} one; "
                           "pass two SHOW GLOBAL STATUS results of the same server") from None
    except (TypeError, ValueError):
        raise CounterError(f"counter {name} in the {which} snapshot is {status[name]!r}, "
                           "not an integer") from None


def deltas(before: Mapping, after: Mapping) -> dict[str, int]:
    """after - before of every statement-counting Com_ counter (refusing a counter that went back)."""
    names = sorted({n for n in (*before, *after) if counts_statements(n)})
    if not names:
        raise CounterError("no Com_ counters in the snapshots: pass SHOW GLOBAL STATUS results "
                           "(e.g. dict(Server.global_status()))")
    out = {}
    for n in names:
        d = _int(after, n, "after") - _int(before, n, "before")
        if d < 0:
            raise CounterError(f"counter {n} went back from {before[n]} to {after[n]}: did the "
                               "server restart between the snapshots?")
        out[n] = d
    return out


def server_statements(before: Mapping, after: Mapping, exclude_harness: int = 0) -> int:
    """Statements the server executed between two SHOW GLOBAL STATUS snapshots,
    without BEGIN/COMMIT/ROLLBACK and without the harness's `exclude_harness`
    own statements (SNAPSHOT_STATEMENTS for a window bounded by two
    Server.global_status() calls). The rule and what it rests on: module doc."""
    if exclude_harness < 0:
        raise CounterError(f"exclude_harness {exclude_harness} must be >= 0")
    d = deltas(before, after)
    n = sum(d.values()) - sum(d.get(c, 0) for c in TRANSACTION_CONTROL) - exclude_harness
    if n < 0:
        raise CounterError(f"exclude_harness={exclude_harness} is more than the {n + exclude_harness} "
                           "statements the server counted in the window")
    return n


def server_qps(before: dict[str, int], after: dict[str, int], seconds: float,
               exclude_harness: int = 0) -> float:
    """Server-side QPS over the measured window: server_statements() / seconds.

    `seconds` should be the time the load ran (sysbench's "total time"): every
    counted statement falls inside it, while the window between the snapshots
    also holds sysbench's start-up and connect."""
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise CounterError(f"seconds {seconds!r} must be a positive number (the run's duration)")
    return server_statements(before, after, exclude_harness) / seconds
