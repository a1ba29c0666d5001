"""harness.variants: factor combinations, cell-name labels, what each factor sets."""
import pytest

from harness import config, sysbench, variants

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
    on = variants.server_options({}, FAMILY)
    assert on["performance_schema"] == "ON" and "wait/%=ON" in on["performance_schema_instrument"]
    assert variants.server_options({"spin_wait_delay": 96}, FAMILY)["innodb_spin_wait_delay"] == 96
    assert variants.server_options({"innodb_read_only": "on"}, FAMILY)["innodb_read_only"] == "ON"


def test_a_family_without_startup_instruments_still_runs_the_base_variant():
    opts = variants.server_options({}, "no-such-family")
    assert "performance_schema_instrument" not in opts
    assert variants.unsupported({}, FAMILY) is None


def test_an_option_the_family_lacks_makes_the_variant_unsupported(monkeypatch):
    # a family that has Performance Schema but no spin-wait knob (as MariaDB lacks some 5.6 options)
    monkeypatch.setattr(variants.mycnf, "family_options", lambda family: frozenset({"performance-schema"}))
    assert variants.unsupported({}, "f") is None
    why = variants.unsupported({"spin_wait_delay": 6}, "f")
    assert why and "innodb_spin_wait_delay" in why


def test_per_table_key_caches_apply_to_myisam_only():
    assert variants.applies({"key_cache": "per_table"}, "MyISAM")
    assert not variants.applies({"key_cache": "per_table"}, "InnoDB")
    assert variants.applies({"key_cache": "shared"}, "InnoDB")


def test_sysbench_arguments_of_factors():
    assert sysbench.variant_args({"trx": "off"}) == ["--skip-trx=on"]
    assert sysbench.variant_args({"trx": "on"}) == ["--skip-trx=off"]
    assert "--db-ps-mode=disable" in sysbench.run_args(threads=1, duration=1, seed=1, rand_type="uniform",
                                                        interval=1, ps=variants.prepared_statements({"ps": "off"}))


def test_every_workload_names_statements_that_exist():
    for name, w in sysbench.WORKLOADS.items():
        assert w["statements"], name
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
    cfg = config.resolve(_exp(), cpus=[0, 1])
    assert cfg["experiments"]["x"]["variants"] == {}
    assert cfg["experiments"]["x"]["repetitions"] == 1
