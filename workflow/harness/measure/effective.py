"""Effective settings: every factor's value as the running server shows it.

A cell's name says which factor values it runs; its manifest's `effective` block
says what the server did: the system variables of the factors (SHOW GLOBAL
VARIABLES, plus @@autocommit and the durability variables), the Performance
Schema instruments enabled and timed (performance_schema.setup_instruments),
the MyISAM key caches the tables were assigned to (the key-cache capture, read
back with @@<cache>.key_buffer_size), what the statement counters of the
measured window prove (Com_stmt_execute > 0: prepared statements were executed;
Com_begin and Com_commit > 0: transactions), and a second server's settings as
a step script's extra part shows them (a PostgreSQL's, under `postgres`). Each
factor of the factor table (harness.measure.factors) reads its value from that
evidence (`Factor.read`); a
factor with nothing on the server to read (the A/A replica label) keeps its
name's value, and the block says so (`source`).

Tidy (harness.analysis.tidywrite) reads the factor columns from this block and
refuses a cell without it, or whose server shows another value than its name.
"""
from __future__ import annotations

from harness.measure import factors

# read in every cell besides the factors' own options
VARIABLES = ("version", "autocommit", "performance_schema", "innodb_flush_log_at_trx_commit",
             "sync_binlog", "log_bin", "innodb_spin_wait_delay", "innodb_read_only",
             "metadata_locks_hash_instances", "myisam_use_mmap", "key_buffer_size")
# the statement counters that prove prepared statements and transactions were used
STATEMENT_COUNTERS = ("Com_stmt_prepare", "Com_stmt_execute", "Com_begin", "Com_commit", "Com_select")


class EffectiveError(ValueError):
    """A cell whose effective settings are missing or disagree with its name: one line."""


def variables(srv, names=()) -> dict:
    """{variable: value} of SHOW GLOBAL VARIABLES for VARIABLES and `names` (lower case;
    a variable the build lacks is absent)."""
    want = sorted({*VARIABLES, *(n.lower() for n in names)})
    rows = srv.query("SHOW GLOBAL VARIABLES WHERE Variable_name IN (%s)" % ", ".join(f"'{n}'" for n in want))
    return {str(k).lower(): str(v) for k, v in rows}


def instruments(srv) -> dict | None:
    """Counts of performance_schema.setup_instruments (None with the Performance Schema off):
    all, enabled, enabled and timed; the same for the wait/ instruments."""
    if str(srv.query("SELECT @@performance_schema")[0][0]) not in ("1", "ON"):
        return None
    row = srv.query(
        "SELECT COUNT(*), SUM(ENABLED='YES'), SUM(ENABLED='YES' AND TIMED='YES'), "
        "SUM(NAME LIKE 'wait/%'), SUM(NAME LIKE 'wait/%' AND ENABLED='YES' AND TIMED='YES') "
        "FROM performance_schema.setup_instruments")[0]
    return dict(zip(("total", "enabled", "timed", "wait_total", "wait_timed"), (int(x or 0) for x in row)))


def statements(delta: dict) -> dict:
    """The STATEMENT_COUNTERS' deltas over the measured window (0 when unchanged)."""
    return {n: int(float(delta.get(n, 0) or 0)) for n in STATEMENT_COUNTERS}


def evidence(srv, values: dict, family: str, *, delta: dict | None = None,
             key_caches: list | None = None) -> dict:
    """What the running server shows, for `values` (a cell's factor values): its
    variables, instruments, the statement counters of the measured window (`delta`,
    SHOW GLOBAL STATUS deltas; None: no window, as in a steps cell) and the key-cache
    capture's rows (table, cache, key_buffer_size, load_index)."""
    names = factors.server_options(values, family)
    return {"variables": variables(srv, names), "instruments": instruments(srv),
            "statements": None if delta is None else statements(delta),
            "key_caches": None if key_caches is None else
            [{"table": t, "cache": c, "key_buffer_size": s} for t, c, s, *_ in key_caches]}


def block(values: dict, ev: dict) -> dict:
    """The manifest's `effective` block: per factor of `values` the value the evidence
    shows (`factors`) and where it came from (`source`), then the evidence itself."""
    out, source = {}, {}
    for n, named in values.items():
        f = factors.FACTORS[n]
        got = f.read(ev) if f.read else None
        if got is None:
            out[n], source[n] = named, "name (nothing on the server shows it)"
        else:
            out[n], source[n] = got, _source(n, ev)
    return {"factors": out, "source": source, **ev}


def _source(name: str, ev: dict) -> str:
    if name in ("ps", "trx"):
        return "statement counters" if ev.get("statements") is not None else \
            "autocommit and the harness's text-protocol driver (no counters in a steps cell)"
    if name == "pfs":
        return "performance_schema and setup_instruments"
    if name == "key_cache":
        return "key-cache assignment (CACHE INDEX, @@<cache>.key_buffer_size)"
    if name == "durability" and ev.get("postgres"):
        return "innodb_flush_log_at_trx_commit and PostgreSQL's synchronous_commit"
    return "SHOW GLOBAL VARIABLES"


def text(v) -> str:
    return str(v)


def mismatches(named: dict, eff: dict) -> list[str]:
    """'<factor>: the name says X, the server shows Y' for every factor that differs."""
    got = eff.get("factors") or {}
    return [f"{n}: the name says {v}, the server shows {got.get(n, '(nothing)')}"
            for n, v in named.items() if text(got.get(n)) != text(v)]


def check(manifest: dict, named: dict, where: str = "") -> dict:
    """The manifest's effective factor values, or EffectiveError naming the cell and the fix;
    `named`: what its name says (harness.measure.kinds.named, its kind's own settings)."""
    cell = manifest.get("cell", "?")
    at = f" ({where})" if where else ""
    fix = "re-measure it (delete the cell's directory and run the pipeline again)"
    eff = manifest.get("effective")
    if not isinstance(eff, dict) or not isinstance(eff.get("factors"), dict):
        raise EffectiveError(f"cell {cell}{at} has no effective settings in its manifest (measured "
                             f"before the server's settings were read back); {fix}")
    bad = mismatches(named, eff)
    if bad:
        raise EffectiveError(f"cell {cell}{at}: its server ran other settings than its name says "
                             f"({'; '.join(bad)}); {fix}")
    return eff["factors"]
