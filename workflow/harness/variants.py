"""Experiment factors beyond engine/tables/cores/users: what each one changes,
and its place in a cell's name (`base` when an experiment varies nothing).

    trx             sysbench --skip-trx (BEGIN/COMMIT around each OLTP mix)
    ps              sysbench --db-ps-mode (server-side prepared statements)
    pfs             performance_schema ON/OFF (ON: every wait instrument timed)
    spin_wait_delay innodb_spin_wait_delay
    innodb_read_only innodb_read_only
    key_cache       MyISAM: one shared key cache, or one named cache per table
"""
from __future__ import annotations

import itertools

from . import mycnf

CODES = {"trx": "trx", "ps": "ps", "pfs": "pfs", "spin_wait_delay": "spin",
         "innodb_read_only": "ro", "key_cache": "kc"}
ORDER = list(CODES)
# Workloads that run BEGIN/COMMIT, so that `trx` means something for them.
TRX_WORKLOADS = {"oltp_ro", "oltp_rw"}


def expand(spec: dict) -> list[dict]:
    """Every combination of the listed factor values (factors in a fixed order)."""
    names = [n for n in ORDER if n in (spec or {})]
    return [dict(zip(names, combo)) for combo in itertools.product(*(spec[n] for n in names))]


def label(variant: dict) -> str:
    if not variant:
        return "base"
    parts = []
    for name in ORDER:
        if name in variant:
            parts.append(f"{CODES[name]}-{str(variant[name]).replace('_', '')}")
    return ".".join(parts)


def parse(text: str) -> dict:
    if text == "base":
        return {}
    by_code = {v: k for k, v in CODES.items()}
    out = {}
    for part in text.split("."):
        code, _, value = part.partition("-")
        name = by_code[code]
        if name == "spin_wait_delay":
            out[name] = int(value)
        elif name == "key_cache":
            out[name] = "per_table" if value == "pertable" else value
        else:
            out[name] = value
    return out


def server_options(variant: dict, family: str) -> dict:
    """my.cnf options a variant sets. Performance Schema is set explicitly either
    way (it is on by default in MySQL 5.6, off in MariaDB), with every wait
    instrument timed where the family can say so at startup."""
    opts = {}
    if variant.get("pfs", "on") == "off":
        opts["performance_schema"] = "OFF"
    else:
        opts["performance_schema"] = "ON"
        if mycnf.known_option(family, "performance_schema_instrument"):
            opts["performance_schema_instrument"] = "'wait/%=ON'"
    if "spin_wait_delay" in variant:
        opts["innodb_spin_wait_delay"] = variant["spin_wait_delay"]
    if "innodb_read_only" in variant:
        opts["innodb_read_only"] = variant["innodb_read_only"].upper()
    return opts


def prepared_statements(variant: dict) -> bool:
    return variant.get("ps", "on") == "on"


def applies(variant: dict, engine: str) -> bool:
    """A per-table MyISAM key cache means nothing for another engine: no such cell."""
    return not (variant.get("key_cache") == "per_table" and engine != "MyISAM")


def unsupported(variant: dict, family: str) -> str | None:
    """Why a build family cannot run this variant (None if it can)."""
    for opt in server_options(variant, family):
        if not mycnf.known_option(family, opt):
            return f"{opt} is not an option of {family}"
    return None
