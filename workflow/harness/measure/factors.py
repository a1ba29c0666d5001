"""The one table of experiment factors beyond build/engine/tables/cores/users.

Each factor says, once: its config key (``experiments.<x>.variants.<name>``,
also its tidy column), its code in a cell's name, its words in the paper, the
values it takes, what it changes on the server (my.cnf) or in the load driver
(sysbench options), the engines and workloads it means something for, and its
*baseline*: the setting the studies used when they did not vary it (every
cell sets each factor explicitly, so a comparison holds all others fixed).

Tidy, claims, report and the R scripts never name a factor: they read this
table (Python) or the factor columns of a tidy CSV's header (R: the columns
between ``variant`` and ``tables``).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.measure import mycnf


@dataclass(frozen=True)
class Factor:
    name: str
    code: str
    words: str
    values: tuple
    baseline: Any
    server: Callable[[Any, str], dict] | None = None  # (value, build family) -> my.cnf options
    driver: Callable[[Any], list[str]] | None = None  # value -> sysbench options
    engines: tuple | None = None      # None: every engine
    workloads: tuple | None = None    # None: every workload of its kind
    note: str = ""                     # why the baseline is what it is (paper)
    cast: type = str
    # the value the running server shows (harness.measure.effective gathers the evidence:
    # variables, PFS instruments, statement counters, key caches); None: nothing to read
    read: Callable[[dict], Any] | None = None
    steps: bool = False                # also set in steps cells (engines chained in one cell)
    # options a value needs the build to have though it sets none of them (None: none)
    requires: Callable[[Any], tuple] | None = None
    # the deviations table (harness.report.deviations): the studies' SETUP key whose "this
    # artifact" side counts the cells at each value, and the words for each value there
    setup: str = ""
    value_words: dict = field(default_factory=dict)

    def parse(self, text: str):
        if self.cast is int:
            return int(text)
        return next((v for v in self.values if _slug(v) == text), text)

    def applies(self, engine: str, workload: str | None = None) -> bool:
        base = engine.split("-")[0]
        if self.engines is not None and base not in self.engines and engine not in self.engines:
            return False
        return self.workloads is None or workload is None or workload in self.workloads


def _slug(v) -> str:
    return str(v).replace("_", "")


def _pfs(value, family):
    if value == "off":
        return {"performance_schema": "OFF"}
    opts = {"performance_schema": "ON"}
    if value == "on" and mycnf.known_option(family, "performance_schema_instrument"):
        opts["performance_schema_instrument"] = "'wait/%=ON'"
    return opts  # default_instruments: the build's own instrument set, nothing to set


# -- reading a factor back from the server (evidence: harness.measure.effective) ----------
def _on(v) -> str:
    return "on" if str(v).upper() in ("1", "ON", "YES", "TRUE") else "off"


def _read_trx(ev):
    st = ev.get("statements")
    if st is None:  # no counters over the measured window (steps): the session's autocommit
        return "off" if _on(ev["variables"].get("autocommit", "ON")) == "on" else "on"
    return "on" if st.get("Com_begin", 0) > 0 and st.get("Com_commit", 0) > 0 else "off"


def _read_ps(ev):
    st = ev.get("statements")
    if st is None:  # steps: the harness's driver sends text statements only (PyMySQL)
        return "off"
    return "on" if st.get("Com_stmt_execute", 0) > 0 else "off"


def _read_pfs(ev):
    if _on(ev["variables"].get("performance_schema", "OFF")) == "off":
        return "off"
    ins = ev.get("instruments") or {}
    return "on" if ins.get("wait_total") and ins.get("wait_timed") == ins["wait_total"] else \
        "default_instruments"


def _read_key_cache(ev):
    caches = ev.get("key_caches")
    if not caches:
        return None
    named = [c for c in caches if c["cache"] != "default" and int(c["key_buffer_size"] or 0) > 0]
    if len(named) == len(caches) and len({c["cache"] for c in named}) == len(caches):
        return "per_table"
    return "shared" if all(c["cache"] == "default" for c in caches) else "mixed"


def _read_durability(ev):
    v = ev["variables"].get("innodb_flush_log_at_trx_commit")
    mine = None if v is None else ("per_commit" if str(v) == "1" else "relaxed")
    pg = (ev.get("postgres") or {}).get("synchronous_commit")
    theirs = None if pg is None else ("relaxed" if _on(pg) == "off" else "per_commit")
    if mine and theirs and mine != theirs:
        return f"mixed (InnoDB {mine}, PostgreSQL {theirs})"
    return mine or theirs


def _durability(value, family):
    """Autocommit stays (the studies ran it); what changes is whether each commit waits for
    its log flush: 1 = flush and sync at every commit; 2 = write at commit, sync once a
    second (a crash of the host, not of mysqld, loses up to a second). The PostgreSQL
    stand-in's counterpart (synchronous_commit) is set by harness.studies.c.legacy_pg."""
    return {"innodb_flush_log_at_trx_commit": 1 if value == "per_commit" else 2}


FACTORS: dict[str, Factor] = {f.name: f for f in (
    Factor("trx", "trx", "transactions (BEGIN/COMMIT around each mix)", ("on", "off"), "off",
           driver=lambda v: [f"--skip-trx={'off' if v == 'on' else 'on'}"],
           workloads=("oltp_ro", "oltp_rw"), read=_read_trx,
           note="autocommit, as study A3's OLTP_RO baseline; transactions on is its variant"),
    Factor("ps", "ps", "prepared statements", ("on", "off"), "off",
           driver=lambda v: [f"--db-ps-mode={'auto' if v == 'on' else 'disable'}"], read=_read_ps,
           note="off, as study A3's baseline (its 'PFS off + prepared statements' runs are the variant)"),
    Factor("pfs", "pfs", "Performance Schema", ("on", "off", "default_instruments"), "on", server=_pfs,
           read=_read_pfs, steps=True,
           requires=lambda v: ("performance_schema_instrument",) if v == "default_instruments" else (),
           setup="pfs_instruments",
           value_words={"on": "every wait instrument timed (wait/%)",
                        "default_instruments": "the build's default instruments", "off": "PFS off"},
           note="on with every wait instrument timed (wait/%), as the studies report top waits: "
                "a choice of this artifact (the studies name no instruments); default_instruments "
                "is the build's own set, to show what timing every wait costs"),
    Factor("spin_wait_delay", "spin", "innodb_spin_wait_delay", (6, 96, 256), 96, cast=int,
           server=lambda v, fam: {"innodb_spin_wait_delay": v}, engines=("InnoDB",),
           read=lambda ev: int(ev["variables"]["innodb_spin_wait_delay"]),
           note="96, the study's usual setting (256 is its variant)"),
    Factor("innodb_read_only", "ro", "innodb_read_only", ("off", "on"), "off",
           server=lambda v, fam: {"innodb_read_only": v.upper()}, engines=("InnoDB",),
           read=lambda ev: _on(ev["variables"].get("innodb_read_only")),  # absent (5.5): read-write
           note="off; on stands in for the study's read-only prototype"),
    Factor("mdl_hash_instances", "mdl", "metadata_locks_hash_instances", ("default", "1"), "default",
           server=lambda v, fam: {} if v == "default" else {"metadata_locks_hash_instances": v},
           read=lambda ev: "1" if ev["variables"].get("metadata_locks_hash_instances") == "1" else "default",
           note="the build's default (8 in MySQL 5.6); 1 stands in for 5.6-rc1, which had one MDL hash"),
    Factor("myisam_mmap", "mmap", "myisam_use_mmap", ("off", "on"), "off",
           server=lambda v, fam: {"myisam_use_mmap": 1 if v == "on" else 0}, engines=("MyISAM",),
           read=lambda ev: _on(ev["variables"].get("myisam_use_mmap")),
           note="off (the server default); study A1 tried on, which did not help MyISAM"),
    Factor("key_cache", "kc", "MyISAM key cache", ("shared", "per_table"), "per_table",
           engines=("MyISAM",), read=_read_key_cache,
           workloads=("point_select", "oltp_ro", "simple_ranges", "oltp_rw"),  # sbtest's (CACHE INDEX)
           note="one key cache per table, as study A3's 8-table MyISAM runs"),
    # An A/A control (study AA, harness.studies.aa): the same setting measured as two
    # cells. It sets nothing on the server or in the driver; only its code in the cell
    # name keeps the two replicas apart, so they run (and are blocked) as any two cells.
    Factor("replica", "replica", "A/A replica", ("a", "b"), "a",
           note="a control of this artifact (the studies had none): the same setting measured twice, a and b"),
    Factor("durability", "dur", "durability (log flush per commit)", ("per_commit", "relaxed"), "per_commit",
           server=_durability, engines=("InnoDB",), read=_read_durability, steps=True,
           setup="log_flush",
           value_words={"per_commit": "a flush per commit (innodb_flush_log_at_trx_commit=1)",
                        "relaxed": "relaxed (2; PostgreSQL's synchronous_commit=off)"},
           note="per commit (innodb_flush_log_at_trx_commit=1, the servers' default then and now); "
                "study C's inserts run relaxed (2; the stand-in's synchronous_commit=off): its "
                "published InnoDB time needs a flush that cost next to nothing"),
)}
ORDER = list(FACTORS)


def expand(spec: dict | None) -> list[dict]:
    """Every combination of the listed factor values (factors in table order)."""
    names = [n for n in ORDER if n in (spec or {})]
    return [dict(zip(names, combo)) for combo in itertools.product(*(spec[n] for n in names))]


def label(variant: dict) -> str:
    """A cell name's variant part: `base` when nothing varies, else code-value pairs."""
    if not variant:
        return "base"
    return ".".join(f"{FACTORS[n].code}-{_slug(variant[n])}" for n in ORDER if n in variant)


def parse(text: str) -> dict:
    if text == "base":
        return {}
    by_code = {f.code: f for f in FACTORS.values()}
    out = {}
    for part in text.split("."):
        code, _, value = part.partition("-")
        if code not in by_code:
            raise ValueError(f"variant '{text}': unknown factor code '{code}'; known: {', '.join(by_code)}")
        f = by_code[code]
        out[f.name] = f.parse(value)
    return out


def applies(variant: dict, engine: str, workload: str | None = None) -> bool:
    """A factor value other than its baseline means nothing for an engine it does
    not touch (a per-table key cache on InnoDB): no such cell."""
    return all(FACTORS[n].applies(engine, workload) or v == FACTORS[n].baseline for n, v in variant.items())


def settings(variant: dict, engine: str, workload: str | None = None) -> dict:
    """Every factor's value in a cell as its name says: the varied ones, else the baseline;
    factors that do not apply to this engine/workload are left out."""
    return {n: variant.get(n, f.baseline) for n, f in FACTORS.items() if f.applies(engine, workload)}


def step_settings(variant: dict) -> dict:
    """The same for a steps cell (engines chained in one cell): the factors of every
    engine, and those marked `steps`."""
    return {n: variant.get(n, f.baseline) for n, f in FACTORS.items() if f.engines is None or f.steps}


def server_options(values: dict, family: str) -> dict:
    """my.cnf options of the factors' values. A baseline value whose option the build
    family does not have is left out (the build lacks the feature, and the baseline is
    what it does anyway: MySQL 5.5 has no innodb_read_only); a varied value the family
    lacks makes the cell unsupported instead (`unsupported`)."""
    opts = {}
    for n, v in values.items():
        if FACTORS[n].server:
            for opt, val in FACTORS[n].server(v, family).items():
                if v == FACTORS[n].baseline and not mycnf.known_option(family, opt):
                    continue
                opts[opt] = val
    return opts


def driver_args(values: dict) -> list[str]:
    out = []
    for n, v in values.items():
        if FACTORS[n].driver:
            out += FACTORS[n].driver(v)
    return out


def unsupported(variant: dict, family: str) -> str | None:
    """Why a build family cannot run this variant (None if it can)."""
    for n, v in variant.items():
        f = FACTORS[n]
        for opt in [*(f.server(v, family) if f.server else {}), *(f.requires(v) if f.requires else ())]:
            if not mycnf.known_option(family, opt):
                return f"{opt} is not an option of {family}"
    return None


def words(name: str) -> str:
    return FACTORS[name].words if name in FACTORS else name
