"""harness.measure.mycnf: the rendered [mysqld] section, option names of a build
family (mysqld 5.6.24's own list) and the keys the harness reserves."""
import re
from pathlib import Path

import pytest

from harness.measure import mycnf

FAMILY = "mysql-5.6"


def render(options=None, family=FAMILY):
    base = Path("/srv/t")
    return mycnf.render(family, basedir=base / "build", datadir=base / "datadir",
                        socket=base / "run/mysqld.sock", pid_file=base / "run/mysqld.pid",
                        log_error=base / "run/mysqld.err", tmpdir=base / "tmp",
                        share_dir=base / "build/share", max_connections=20, options=options)


def effective(text: str) -> dict:
    """What mysqld ends up with: option names with - and _ alike, the last line wins."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith(("#", "[")):
            continue
        name, _, value = line.partition("=")
        out[name.strip().replace("_", "-")] = value.strip()
    return out


def test_render_is_one_mysqld_section_with_unix_socket_only():
    text = render()
    lines = text.splitlines()
    assert [l for l in lines if l.startswith("[")] == ["[mysqld]"]
    assert "skip-networking" in lines
    assert not [l for l in lines if re.match(r"\s*(loose[-_])?port\s*=", l)]
    assert not [l for l in lines if re.match(r"\s*bind[-_]address\s*=", l)]


def test_render_has_the_fixed_keys():
    eff = effective(render())
    assert eff["basedir"] == "/srv/t/build"
    assert eff["datadir"] == "/srv/t/datadir"
    assert eff["socket"] == "/srv/t/run/mysqld.sock"
    assert eff["pid-file"] == "/srv/t/run/mysqld.pid"
    assert eff["log-error"] == "/srv/t/run/mysqld.err"
    assert eff["tmpdir"] == "/srv/t/tmp"
    assert eff["lc-messages-dir"] == "/srv/t/build/share"
    assert eff["max-connections"] == "20"


def test_render_has_the_family_defaults():
    eff = effective(render())
    assert eff["innodb-buffer-pool-size"] == "256M"
    assert eff["query-cache-type"] == "0"


def test_render_of_an_unknown_family_has_no_defaults():
    eff = effective(render(family="no-such-family"))
    assert "innodb-buffer-pool-size" not in eff
    assert eff["datadir"] == "/srv/t/datadir"


def test_profile_options_override_family_defaults():
    text = render({"innodb_buffer_pool_size": "1G", "query_cache_type": 1})
    assert effective(text)["innodb-buffer-pool-size"] == "1G"
    assert effective(text)["query-cache-type"] == "1"
    assert "innodb_buffer_pool_size=256M" not in text


def test_profile_option_spelt_with_dashes_overrides_the_default():
    assert effective(render({"innodb-buffer-pool-size": "1G"}))["innodb-buffer-pool-size"] == "1G"


def test_profile_options_are_added():
    assert effective(render({"innodb_io_capacity": 400}))["innodb-io-capacity"] == "400"


def test_booleans_render_on_off():
    lines = render({"performance_schema": False, "innodb_stats_on_metadata": True}).splitlines()
    assert "performance_schema=OFF" in lines
    assert "innodb_stats_on_metadata=ON" in lines
    assert not [l for l in lines if l.endswith(("=True", "=False"))]


@pytest.mark.parametrize("name", [
    "innodb_buffer_pool_size", "innodb-buffer-pool-size", "max_heap_table_size",
    "performance_schema", "query-cache-type", "table_open_cache", "innodb_flush_method",
    "loose-innodb-buffer-pool-size", "loose_innodb_io_capacity", "skip-performance-schema",
    "skip_innodb_adaptive_hash_index", "enable-performance-schema",
    "disable-innodb-adaptive-hash-index",
])
def test_known_option_accepts_real_56_options(name):
    assert mycnf.known_option(FAMILY, name)


@pytest.mark.parametrize("name", [
    "skip-name-resolve", "skip_grant_tables",
])
def test_known_option_accepts_options_whose_own_name_starts_with_skip(name):
    assert mycnf.known_option(FAMILY, name)


@pytest.mark.parametrize("name", [
    "innodb_buffer_pol_size", "rocksdb_block_cache_size", "innodb_dedicated_server",
    "loose-made-up-option", "skip-made-up-option", "buffer_pool", "",
])
def test_known_option_rejects_made_up_or_later_version_options(name):
    # innodb_dedicated_server is real, but only from MySQL 8.0.3
    assert not mycnf.known_option(FAMILY, name)


def test_known_option_of_a_family_without_an_option_list_accepts_nothing():
    assert not mycnf.known_option("no-such-family", "innodb_buffer_pool_size")


@pytest.mark.parametrize("name", ["socket", "datadir", "port", "skip-networking", "skip_networking",
                                  "loose-port", "pid_file", "basedir", "bind-address", "max_connections",
                                  "log-error", "PORT"])
def test_reserved_keys(name):
    assert mycnf.reserved(name)


@pytest.mark.parametrize("name", ["innodb_buffer_pool_size", "port_open_timeout", "sockets", "performance_schema"])
def test_not_reserved(name):
    assert not mycnf.reserved(name)

