"""my.cnf rendering and option names per build family."""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "builds" / "options"

# Defaults every run of a family gets, before the profile's server.options.
# Chosen for read-only sysbench on small hosts; all recorded in each cell's my.cnf.
_COMMON = {
    "innodb_buffer_pool_size": "256M",
    "innodb_log_file_size": "48M",
    "innodb_file_per_table": 1,
    "innodb_flush_log_at_trx_commit": 1,
    "key_buffer_size": "64M",
    "max_heap_table_size": "1G",
    "tmp_table_size": "64M",
    "query_cache_type": 0,
    "query_cache_size": 0,
    "performance_schema": "ON",  # off by default in MySQL 5.5 and MariaDB: always set, always recorded
    "max_prepared_stmt_count": 1048576,
    "table_open_cache": 4000,
    "open_files_limit": 65535,
    "explicit_defaults_for_timestamp": 1,
}


def _without(d: dict, *keys: str) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


# Every key of a family with an options list (builds/options/<family>.options.txt, or the help's option
# list for plugin-load-add) is an option of that family's real binary: tests/test_build_providers.py.
FAMILY_DEFAULTS = {
    "mysql-5.5": _without(_COMMON, "explicit_defaults_for_timestamp"),  # that came with 5.6.6
    "mysql-5.6": dict(_COMMON),
    "mariadb-10.2": dict(_COMMON),
    # ARCHIVE is a plugin in Debian's MariaDB, not loaded by default
    "mariadb-10.11": {**_COMMON, "plugin_load_add": "ha_archive.so"},
    # Not run here (no internet for their tarballs, so no options list yet): names known from the
    # MySQL 5.7/8.0/8.4 manuals; the query cache is gone in 8.0, innodb_log_file_size deprecated
    # in 8.0.30 (innodb_redo_log_capacity), so neither is set there.
    "mysql-5.7": dict(_COMMON),
    "mysql-8.0": _without(_COMMON, "query_cache_type", "query_cache_size", "innodb_log_file_size"),
    "mysql-8.4": _without(_COMMON, "query_cache_type", "query_cache_size", "innodb_log_file_size"),
}


def family_defaults(family: str) -> dict:
    return dict(FAMILY_DEFAULTS.get(family, {}))


# Set by the harness for every instance; a profile may not override them.
RESERVED = frozenset({"basedir", "datadir", "socket", "pid-file", "log-error", "tmpdir",
                      "lc-messages-dir", "port", "bind-address", "networking", "user",
                      "max-connections", "defaults-file"})


def reserved(name: str) -> bool:
    n = _norm(name)
    for prefix in ("loose-", "skip-"):
        n = n[len(prefix):] if n.startswith(prefix) else n
    return n in RESERVED


def _key(name: str) -> str:
    return name.strip().replace("-", "_").lower()


def _norm(name: str) -> str:
    return name.strip().replace("_", "-").lower()


@functools.lru_cache(maxsize=None)
def family_options(family: str) -> frozenset[str]:
    path = DATA / f"{family}.options.txt"
    if not path.exists():
        return frozenset()
    return frozenset(_norm(line) for line in path.read_text().splitlines()
                     if line.strip() and not line.startswith("#"))


def known_option(family: str, name: str) -> bool:
    n = _norm(name)
    if n in family_options(family):  # e.g. skip-name-resolve is listed under its full name
        return True
    for prefix in ("loose-", "skip-", "enable-", "disable-"):
        if n.startswith(prefix):
            n = n[len(prefix):]
            break
    return n in family_options(family)


HELP_TABLE = "Variables (--variable-name=value)"


def help_variables(help_text: str) -> list[str]:
    """Option names of `mysqld --verbose --help`: the first column of its Variables table."""
    lines = help_text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith(HELP_TABLE))
    except StopIteration:
        raise ValueError(f"no '{HELP_TABLE}' table in this help text") from None
    names = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if line.startswith(("and boolean options", "-----")):
            continue
        names.append(line.split()[0])
    return names


def help_flags(help_text: str) -> set[str]:
    """Every `--name` of the help's option list (also those without a row in the table,
    such as plugin-load-add)."""
    return {_norm(m) for m in re.findall(r"^  --([A-Za-z0-9_-]+)", help_text, flags=re.M)}


def size_bytes(v) -> int | None:
    """A my.cnf size ('256M', '1.5G', 1024) in bytes; None when it is not a size."""
    s = str(v).strip().upper()
    mult = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}.get(s[-1:], 1)
    try:
        return int(float(s.rstrip("KMG")) * mult)
    except ValueError:
        return None


def _value(v) -> str:
    if isinstance(v, bool):
        return "ON" if v else "OFF"
    return str(v)


def render(family: str, *, basedir: Path, datadir: Path, socket: Path, pid_file: Path,
           log_error: Path, tmpdir: Path, share_dir: Path, max_connections: int,
           options: dict | None = None) -> str:
    """The [mysqld] section for one private instance: unix socket only, no TCP."""
    fixed = {
        "basedir": basedir, "datadir": datadir, "socket": socket, "pid-file": pid_file,
        "log-error": log_error, "tmpdir": tmpdir, "lc-messages-dir": share_dir,
        "max_connections": max_connections,
    }
    # one spelling (underscores), so a profile's option replaces the default instead of
    # both being written and the later one silently winning
    merged = {_key(k): v for k, v in FAMILY_DEFAULTS.get(family, {}).items()}
    merged.update({_key(k): v for k, v in (options or {}).items()})
    lines = ["# rendered by harness.measure.mycnf; one private instance, unix socket only", "[mysqld]",
             "skip-networking", "skip-name-resolve"]
    if os.geteuid() == 0:
        lines.append("user=root")
    lines += [f"{k}={_value(v)}" for k, v in fixed.items()]
    lines += [f"{k}={_value(v)}" for k, v in sorted(merged.items())]
    return "\n".join(lines) + "\n"
