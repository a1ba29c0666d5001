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
    if mycnf.known_option(family, "performance_schema_instrument"):
        opts["performance_schema_instrument"] = "'wait/%=ON'"
    return opts


FACTORS: dict[str, Factor] = {f.name: f for f in (
    Factor("trx", "trx", "transactions (BEGIN/COMMIT around each mix)", ("on", "off"), "off",
           driver=lambda v: [f"--skip-trx={'off' if v == 'on' else 'on'}"],
           workloads=("oltp_ro", "oltp_rw"),
           note="autocommit, as study A3's OLTP_RO baseline; transactions on is its variant"),
    Factor("ps", "ps", "prepared statements", ("on", "off"), "off",
           driver=lambda v: [f"--db-ps-mode={'auto' if v == 'on' else 'disable'}"],
           note="off, as study A3's baseline (its 'PFS off + prepared statements' runs are the variant)"),
    Factor("pfs", "pfs", "Performance Schema", ("on", "off"), "on", server=_pfs,
           note="on with every wait instrument timed, as the studies report top waits"),
    Factor("spin_wait_delay", "spin", "innodb_spin_wait_delay", (6, 96, 256), 96, cast=int,
           server=lambda v, fam: {"innodb_spin_wait_delay": v}, engines=("InnoDB",),
           note="96, the study's usual setting (256 is its variant)"),
    Factor("innodb_read_only", "ro", "innodb_read_only", ("off", "on"), "off",
           server=lambda v, fam: {"innodb_read_only": v.upper()}, engines=("InnoDB",),
           note="off; on stands in for the study's read-only prototype"),
    Factor("mdl_hash_instances", "mdl", "metadata_locks_hash_instances", ("default", "1"), "default",
           server=lambda v, fam: {} if v == "default" else {"metadata_locks_hash_instances": v},
           note="the build's default (8 in MySQL 5.6); 1 stands in for 5.6-rc1, which had one MDL hash"),
    Factor("myisam_mmap", "mmap", "myisam_use_mmap", ("off", "on"), "off",
           server=lambda v, fam: {"myisam_use_mmap": 1 if v == "on" else 0}, engines=("MyISAM",),
           note="off (the server default); study A1 tried on, which did not help MyISAM"),
    Factor("key_cache", "kc", "MyISAM key cache", ("shared", "per_table"), "per_table",
           engines=("MyISAM",),
           note="one key cache per table, as study A3's 8-table MyISAM runs"),
    # An A/A control (study AA, harness.studies.aa): the same setting measured as two
    # cells. It sets nothing on the server or in the driver; only its code in the cell
    # name keeps the two replicas apart, so they run (and are blocked) as any two cells.
    Factor("replica", "replica", "A/A replica", ("a", "b"), "a",
           note="a control of this artifact (the studies had none): the same setting measured twice, a and b"),
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
    """Every factor's effective value in a cell: the varied ones, else the baseline;
    factors that do not apply to this engine/workload are left out."""
    return {n: variant.get(n, f.baseline) for n, f in FACTORS.items() if f.applies(engine, workload)}


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
        for opt in (FACTORS[n].server(v, family) if FACTORS[n].server else {}):
            if not mycnf.known_option(family, opt):
                return f"{opt} is not an option of {family}"
    return None


def words(name: str) -> str:
    return FACTORS[name].words if name in FACTORS else name
