"""harness.measure.factors: the one factor table: combinations, cell-name labels, what each factor sets,
the studies' baselines, and the config checks that read it."""
import pytest

from harness.plan import config

from harness.measure import factors as variants

from harness.plan import cells as plan

from harness.measure import sysbench
from harness import paths

FAMILY = "mysql-5.6"


def test_no_factor_is_the_base_variant():
    assert variants.expand({}) == [{}]
    assert variants.label({}) == "base"
    assert variants.parse("base") == {}


def test_expand_crosses_factors_in_a_fixed_order():
    got = variants.expand({"pfs": ["on", "off"], "ps": ["on", "off"]})
    assert [variants.label(v) for v in got] == ["ps-on.pfs-on", "ps-on.pfs-off", "ps-off.pfs-on", "ps-off.pfs-off"]


@pytest.mark.parametrize("spec", [
    {"trx": ["on", "off"]}, {"spin_wait_delay": [6, 96, 256]}, {"innodb_read_only": ["off", "on"]},
    {"key_cache": ["shared", "per_table"]}, {"ps": ["off"], "pfs": ["off"]},
])
def test_label_parse_round_trip_and_names_are_cell_safe(spec):
    for v in variants.expand(spec):
        text = variants.label(v)
        assert "_" not in text, "cell names split on underscores"
        assert variants.parse(text) == v


def test_server_options_per_factor():
    assert variants.server_options({"pfs": "off"}, FAMILY) == {"performance_schema": "OFF"}
    on = variants.server_options({"pfs": "on"}, FAMILY)
    assert on["performance_schema"] == "ON" and "wait/%=ON" in on["performance_schema_instrument"]
    assert variants.server_options({"spin_wait_delay": 96}, FAMILY)["innodb_spin_wait_delay"] == 96
    assert variants.server_options({"innodb_read_only": "on"}, FAMILY)["innodb_read_only"] == "ON"


def test_a_family_without_startup_instruments_still_runs_the_base_variant():
    opts = variants.server_options({"pfs": "on"}, "no-such-family")
    assert "performance_schema_instrument" not in opts
    assert variants.unsupported({}, FAMILY) is None


def test_an_option_the_family_lacks_makes_the_variant_unsupported(monkeypatch):
    # a family that has Performance Schema but no spin-wait knob (as MariaDB lacks some 5.6 options)
    monkeypatch.setattr(variants.mycnf, "family_options", lambda family: frozenset({"performance-schema"}))
    assert variants.unsupported({}, "f") is None
    why = variants.unsupported({"spin_wait_delay": 6}, "f")
    assert why and "innodb_spin_wait_delay" in why


def test_a_factor_an_engine_lacks_gives_that_engine_one_cell_at_the_baseline():
    """Key caches are MyISAM's: an InnoDB cell of a key-cache experiment exists once
    (at the baseline value), never once per key-cache setting."""
    assert variants.applies({"key_cache": "shared"}, "MyISAM")
    assert not variants.applies({"key_cache": "shared"}, "InnoDB")
    assert variants.applies({"key_cache": "per_table"}, "InnoDB")
    assert variants.applies({"spin_wait_delay": 256}, "MyISAM") is False


def test_sysbench_arguments_of_factors():
    assert variants.driver_args({"trx": "off"}) == ["--skip-trx=on"]
    assert variants.driver_args({"trx": "on"}) == ["--skip-trx=off"]
    assert variants.driver_args({"ps": "off"}) == ["--db-ps-mode=disable"]
    assert variants.driver_args({"ps": "on"}) == ["--db-ps-mode=auto"]


def test_every_cell_sets_every_factor_that_applies_to_it_baseline_or_varied():
    """Compare like with like: a cell that does not vary a factor runs it at the
    studies' baseline, explicitly (prepared statements off, spin-wait 96, one
    MyISAM key cache per table, transactions off)."""
    base = variants.settings({}, "InnoDB", "point_select")
    assert base == {"ps": "off", "pfs": "on", "spin_wait_delay": 96, "innodb_read_only": "off",
                    "mdl_hash_instances": "default", "replica": "a", "durability": "per_commit"}
    assert variants.settings({}, "MyISAM", "oltp_ro") == {"trx": "off", "ps": "off", "pfs": "on",
                                                          "mdl_hash_instances": "default", "myisam_mmap": "off",
                                                          "key_cache": "per_table", "replica": "a"}
    assert variants.settings({"ps": "on"}, "MEMORY-BTREE", "point_select") == {
        "ps": "on", "pfs": "on", "mdl_hash_instances": "default", "replica": "a"}
    opts = variants.server_options(base, FAMILY)
    assert opts["innodb_spin_wait_delay"] == 96 and opts["performance_schema"] == "ON"


def test_a_baseline_the_build_lacks_sets_nothing_and_a_varied_value_it_lacks_is_unsupported():
    """MySQL 5.5 has no innodb_read_only: its InnoDB cells run without the option
    (what 'off' means anyway), while a cell that varies it to 'on' cannot run there."""
    opts = variants.server_options(variants.settings({}, "InnoDB", "point_select"), "mysql-5.5")
    assert "innodb_read_only" not in opts and opts["innodb_spin_wait_delay"] == 96
    assert "innodb_read_only" in variants.unsupported({"innodb_read_only": "on"}, "mysql-5.5")
    assert variants.unsupported({"innodb_read_only": "off"}, "mysql-5.6") is None


def test_config_variants_schema_comes_from_the_factor_table():
    with pytest.raises(config.ConfigError, match=r"^experiments\.x\.variants\.nosuch: unknown key"):
        config.resolve(_exp(variants={"nosuch": ["a"]}), cpus=[0, 1])
    with pytest.raises(config.ConfigError, match=r"^experiments\.x\.variants\.ps\.0: 'maybe' is not one of"):
        config.resolve(_exp(variants={"ps": ["maybe"]}), cpus=[0, 1])


def test_every_workload_names_statements_that_exist():
    for name, w in sysbench.WORKLOADS.items():
        assert w["statements"] or name == "fts", name  # fts runs on the fulltext dataset: no sbtest EXPLAIN
        assert all(s in sysbench.STATEMENTS for s in w["statements"])
        assert sysbench.script_path(name).exists()


def _exp(**kw):
    base = {"study": "A3", "workload": "point_select", "engines": ["InnoDB"], "tables": [1], "cores": [1],
            "users": [1]}
    base.update(kw)
    return {"profile": "t", "builds": ["mysql-5.6.24"], "experiments": {"x": base}}


def test_trx_on_a_workload_without_transactions_is_a_config_error():
    with pytest.raises(config.ConfigError, match=r"^experiments\.x\.variants\.trx: .*; "):
        config.resolve(_exp(variants={"trx": ["on", "off"]}), cpus=[0, 1])


def test_key_cache_without_myisam_is_a_config_error():
    with pytest.raises(config.ConfigError, match=r"^experiments\.x\.variants\.key_cache: "):
        config.resolve(_exp(variants={"key_cache": ["per_table"]}), cpus=[0, 1])


def test_experiment_defaults_are_filled():
    """From config/default.yaml's experiment_defaults (the schema has no defaults)."""
    cfg = config.resolve(_exp(), cpus=[0, 1])
    assert cfg["experiments"]["x"]["variants"] == {}
    assert cfg["experiments"]["x"]["repetitions"] == config.defaults()["experiment_defaults"]["repetitions"]
    assert cfg["experiments"]["x"]["kind"] == "throughput"


def test_experiment_defaults_fill_only_what_an_experiment_leaves_out():
    c = _exp()
    del c["experiments"]["x"]["users"]
    c["experiment_defaults"] = {"users": [2, 8], "repetitions": 7, "table_size": 500, "cores": [1]}
    c["experiments"]["x"]["table_size"] = 700
    x = config.resolve(c, cpus=[0, 1])["experiments"]["x"]
    assert (x["users"], x["repetitions"], x["table_size"]) == ([2, 8], 7, 700)


def test_experiment_defaults_skip_keys_a_kind_does_not_use():
    c = _exp()
    c["experiments"]["c"] = {"study": "C1", "kind": "steps", "script": "c_test_drive",
                             "engines": ["InnoDB", "MyISAM"], "cores": [1]}
    c["experiment_defaults"] = {"users": [4], "table_size": 500}
    c_spec = config.resolve(c, cpus=[0, 1])["experiments"]["c"]
    assert "users" not in c_spec and "table_size" not in c_spec and "dataset" not in c_spec


def test_a_key_of_the_other_kind_is_a_config_error():
    c = _exp()
    c["experiments"]["c"] = {"study": "C1", "kind": "steps", "script": "c_test_drive",
                             "engines": ["InnoDB"], "cores": [1], "users": [4]}
    with pytest.raises(config.ConfigError, match=r"^experiments\.c\.users: not a key of a steps experiment"):
        config.resolve(c, cpus=[0, 1])


def test_cell_names_round_trip_through_each_kind():
    c = _exp(variants={"ps": ["on", "off"]}, users=[1, 4], repetitions=1)
    c["experiments"]["c"] = {"study": "C1", "kind": "steps", "script": "c_test_drive",
                             "engines": ["InnoDB", "MyISAM"], "cores": [1], "repetitions": 2}
    c["claims"] = {"decide": False}   # 1-2 repetitions decide nothing (harness.plan.repetitions)
    cfg = config.resolve(c, cpus=[0, 1])
    lock = config.builds.load_lock(paths.LOCK)
    names = plan.cell_names(cfg, lock, "x")
    assert "mysql-5.6.24_InnoDB_ps-off_t1_c1_u4_r1" in names and len(names) == 4
    for n in names:
        assert plan.kind_of(cfg, "x").name(plan.parse_cell(cfg, "x", n)) == n
    assert plan.cell_names(cfg, lock, "c") == ["mysql-5.6.24_base_c1_r1", "mysql-5.6.24_base_c1_r2"]
    assert plan.dataset_path(cfg, "x", names[0]) == "data/datasets/mysql-5.6.24/sbtest/InnoDB_t1_n10000"
    assert plan.dataset_path(cfg, "c", "mysql-5.6.24_base_c1_r1") is None



def test_durability_is_the_log_flush_per_commit_and_applies_to_innodb_and_steps_cells():
    """Autocommit stays; per_commit flushes InnoDB's log at every commit (1), relaxed
    writes it at commit and syncs once a second (2). MyISAM cells have no such setting;
    a steps cell (study C: engines chained, InnoDB among them) has it, as it has the
    Performance Schema."""
    assert variants.server_options({"durability": "per_commit"}, FAMILY) == {"innodb_flush_log_at_trx_commit": 1}
    assert variants.server_options({"durability": "relaxed"}, FAMILY) == {"innodb_flush_log_at_trx_commit": 2}
    assert "durability" not in variants.settings({}, "MyISAM", "point_select")
    steps = variants.step_settings({"durability": "relaxed", "pfs": "off"})
    assert steps["durability"] == "relaxed" and steps["pfs"] == "off"
    assert "spin_wait_delay" not in steps and "key_cache" not in steps
    assert variants.parse(variants.label({"pfs": "off", "durability": "relaxed"})) == \
        {"pfs": "off", "durability": "relaxed"}


def test_pfs_default_instruments_sets_no_instruments_and_needs_a_build_that_could():
    assert variants.server_options({"pfs": "on"}, FAMILY)["performance_schema_instrument"] == "'wait/%=ON'"
    assert variants.server_options({"pfs": "default_instruments"}, FAMILY) == {"performance_schema": "ON"}
    assert variants.unsupported({"pfs": "default_instruments"}, FAMILY) is None
    assert "performance_schema_instrument" in variants.unsupported({"pfs": "default_instruments"}, "mysql-5.5")
    assert variants.parse(variants.label({"pfs": "default_instruments"})) == {"pfs": "default_instruments"}


def _ev(**over):
    ev = {"variables": {"autocommit": "ON", "performance_schema": "ON", "innodb_flush_log_at_trx_commit": "1",
                        "innodb_spin_wait_delay": "96", "innodb_read_only": "OFF",
                        "metadata_locks_hash_instances": "8", "myisam_use_mmap": "OFF"},
          "instruments": {"total": 500, "enabled": 400, "timed": 400, "wait_total": 300, "wait_timed": 300},
          "statements": {"Com_stmt_execute": 0, "Com_begin": 0, "Com_commit": 0},
          "key_caches": [{"table": "sbtest1", "cache": "kc1", "key_buffer_size": "16777216"}]}
    ev.update(over)
    return ev


def test_each_factor_reads_its_value_from_what_the_server_shows():
    """harness.measure.effective's evidence -> the factor's value (Factor.read)."""
    F = variants.FACTORS
    ev = _ev()
    assert {n: F[n].read(ev) for n in ("ps", "trx", "pfs", "spin_wait_delay", "innodb_read_only",
                                       "mdl_hash_instances", "myisam_mmap", "key_cache", "durability")} == {
        "ps": "off", "trx": "off", "pfs": "on", "spin_wait_delay": 96, "innodb_read_only": "off",
        "mdl_hash_instances": "default", "myisam_mmap": "off", "key_cache": "per_table",
        "durability": "per_commit"}
    assert F["ps"].read(_ev(statements={"Com_stmt_execute": 5, "Com_begin": 0, "Com_commit": 0})) == "on"
    assert F["trx"].read(_ev(statements={"Com_stmt_execute": 0, "Com_begin": 3, "Com_commit": 3})) == "on"
    assert F["pfs"].read(_ev(instruments={"wait_total": 300, "wait_timed": 40})) == "default_instruments"
    assert F["pfs"].read(_ev(variables={"performance_schema": "OFF"})) == "off"
    assert F["key_cache"].read(_ev(key_caches=[{"cache": "default", "key_buffer_size": "1"}])) == "shared"
    relaxed = _ev(variables={"innodb_flush_log_at_trx_commit": "2"}, postgres={"synchronous_commit": "off"})
    assert F["durability"].read(relaxed) == "relaxed"
    mixed = _ev(variables={"innodb_flush_log_at_trx_commit": "2"}, postgres={"synchronous_commit": "on"})
    assert F["durability"].read(mixed).startswith("mixed")
    assert F["replica"].read is None  # a label: nothing on the server shows it


def test_the_postgresql_stand_in_flushes_its_wal_as_the_cells_innodb_flushes_its_log():
    from harness.studies.c import legacy_pg
    assert legacy_pg.synchronous_commit({"durability": "relaxed"}, FAMILY) == "off"
    assert legacy_pg.synchronous_commit({"durability": "per_commit"}, FAMILY) == "on"
    assert legacy_pg.synchronous_commit({}, FAMILY) == "on"  # nothing set: the server default, 1
