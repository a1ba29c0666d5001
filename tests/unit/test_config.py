"""harness.plan.config.resolve: valid profiles resolve with defaults; each malformed
one fails with ONE line that names the dotted key and says how to fix it,
both from Python and end to end through the CLI and Snakemake (which never
gets as far as starting a server: the check runs while the Snakefile loads).
"""
import copy
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.plan import config
from harness import paths

ROOT = Path(__file__).resolve().parents[2]
PY = ROOT / ".venv" / "bin" / "python"
SNAKEMAKE = ROOT / ".venv" / "bin" / "snakemake"
HOST_CPUS = sorted(os.sched_getaffinity(0))


def merge(base: dict, over: dict) -> dict:
    """Snakemake's --configfile merge: nested dicts merge, other values replace."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


def smoke() -> dict:
    """config/smoke.yaml over config/default.yaml, a fresh copy each call."""
    return merge(load("default.yaml"), load("smoke.yaml"))


def ps(cfg):
    return cfg["experiments"]["point_select"]


def _set(*path):
    *keys, value = path

    def apply(cfg):
        node = cfg
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return apply


# (id, how to break the smoke profile, dotted key path the error must name)
MALFORMED = [
    ("unknown-engine", _set("experiments", "point_select", "engines", ["InnoDB", "RocksDB"]),
     "experiments.point_select.engines.1"),
    ("cores-beyond-host", _set("experiments", "point_select", "cores", [len(HOST_CPUS)]),
     "experiments.point_select.cores"),
    ("users-zero", _set("experiments", "point_select", "users", [0, 4]),
     "experiments.point_select.users.0"),
    ("users-negative", _set("experiments", "point_select", "users", [1, -1]),
     "experiments.point_select.users.1"),
    ("unknown-top-level-key", _set("colour", "blue"), "colour"),
    ("unknown-nested-key", _set("sysbench", "warmup", 3), "sysbench.warmup"),
    ("wrong-type", _set("sysbench", "duration_s", "ten"), "sysbench.duration_s"),
    ("build-not-in-lock", _set("builds", ["mysql-5.6.24", "mysql-9.9.9"]), "builds.1"),
    ("empty-builds", _set("builds", []), "builds"),
    ("table-size-too-small", _set("experiments", "point_select", "table_size", 10),
     "experiments.point_select.table_size"),
    ("repetitions-zero", _set("experiments", "point_select", "repetitions", 0),
     "experiments.point_select.repetitions"),
    ("unknown-mysqld-option", _set("server", "options", {"innodb_buffer_pol_size": "1G"}),
     "server.options.innodb_buffer_pol_size"),
    ("reserved-socket", _set("server", "options", {"socket": "/tmp/x.sock"}), "server.options.socket"),
    ("reserved-datadir", _set("server", "options", {"datadir": "/tmp/d"}), "server.options.datadir"),
    ("reserved-port", _set("server", "options", {"port": 3307}), "server.options.port"),
    ("client-cpus-all-of-host", _set("placement", "client_cpus", len(HOST_CPUS)),
     "placement.client_cpus"),
    ("duplicate-users", _set("experiments", "point_select", "users", [1, 4, 4]),
     "experiments.point_select.users"),
    ("cv-threshold-zero", _set("stats", "cv_threshold", 0), "stats.cv_threshold"),
    ("bad-profile-name", _set("profile", "Smoke Test!"), "profile"),
    ("unknown-mechanism", _set("placement", "mechanism", "cgroups"), "placement.mechanism"),
    ("mems-node-not-allowed", _set("placement", "mems", [0, 63]), "placement.mems"),
    ("mems-unknown-word", _set("placement", "mems", "local"), "placement.mems"),
    ("unknown-pairing", _set("pairing", "twin"), "pairing"),
    ("duet-with-groups", _set("pairing", "duet"), "pairing"),   # smoke sweeps users on one server (tests/unit/test_duet.py)
]


def broken(mutate) -> dict:
    cfg = smoke()
    mutate(cfg)
    return cfg


def assert_one_line_error(msg: str, key: str):
    assert "\n" not in msg.strip(), msg
    # the message leads with the key path, so a short path like 'builds' cannot
    # match by accident somewhere in the hint
    assert msg.startswith(f"{key}:"), msg
    problem, sep, hint = msg.partition("; ")
    assert sep and hint.strip(), f"no fix hint after '; ': {msg}"


@pytest.mark.parametrize("mutate,key", [pytest.param(m, k, id=i) for i, m, k in MALFORMED])
def test_malformed_config_is_one_line_naming_key_with_hint(mutate, key):
    with pytest.raises(config.ConfigError) as exc:
        config.resolve(broken(mutate))
    assert_one_line_error(str(exc.value), key)


def test_error_path_indexes_the_offending_list_entry():
    # the bad value is the second entry: the index in the path must say so
    cfg = smoke()
    ps(cfg)["users"] = [1, 4, 5000]
    with pytest.raises(config.ConfigError, match=r"^experiments\.point_select\.users\.2: "):
        config.resolve(cfg)


def test_empty_config_is_rejected():
    with pytest.raises(config.ConfigError, match="^<top level>: "):
        config.resolve({})


def test_cores_are_checked_against_given_cpus_minus_client():
    cfg = smoke()
    ps(cfg)["cores"] = [2]
    assert config.resolve(cfg, cpus=[0, 1, 2])["experiments"]["point_select"]["cores"] == [2]
    with pytest.raises(config.ConfigError, match=r"^experiments\.point_select\.cores: .*the largest that fits is 1"):
        config.resolve(cfg, cpus=[0, 1])


@pytest.mark.parametrize("name", ["default.yaml", "smoke.yaml"])
def test_shipped_profiles_resolve(name):
    cfg = merge(load("default.yaml"), load(name))
    out = config.resolve(cfg)
    assert out["profile"] == name.removesuffix(".yaml")
    assert out["builds"] == ["mysql-5.6.24"]


def test_smoke_overrides_only_what_it_names():
    out = config.resolve(smoke())
    assert out["sysbench"]["duration_s"] == 3          # from smoke.yaml
    assert out["sysbench"]["report_interval_s"] == 1   # kept from default.yaml
    assert ps(out)["users"] == [1, 4]


def test_defaults_are_filled_when_omitted():
    """What a profile leaves out comes from config/default.yaml (the schema has no defaults)."""
    cfg = smoke()
    for key in ("stats", "placement", "backend"):
        del cfg[key]
    cfg["claims"] = {"decide": False}   # smoke's 1-2 repetitions decide nothing: it must opt out
    del cfg["sysbench"]["seed"]
    ps(cfg).pop("enabled", None)
    del cfg["server"]["options"]
    out = config.resolve(cfg)
    assert out["stats"]["cv_threshold"] == 0.05
    assert out["placement"] == {"client_cpus": 1, "mechanism": "auto", "mems": "plan", "lanes": "auto"}
    assert out["claims"] == {"level": 0.9, "decide": False}
    assert out["backend"] == load("default.yaml")["backend"]
    assert ps(out)["enabled"] is True and ps(out)["variants"] == {}
    assert out["sysbench"]["seed"] == 42
    assert ps(out)["enabled"] is True
    assert out["server"]["options"] == {}


def test_resolve_does_not_modify_its_input():
    cfg = smoke()
    del cfg["stats"]
    before = copy.deepcopy(cfg)
    config.resolve(cfg)
    assert cfg == before


# -- end to end: the CLI and Snakemake ------------------------------------------
E2E = ["users-zero", "unknown-nested-key", "reserved-socket", "duet-with-groups"]
E2E_CASES = [pytest.param(m, k, id=i) for i, m, k in MALFORMED if i in E2E]


def write_bad(tmp_path, mutate) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(broken(mutate), sort_keys=False))
    return path


@pytest.mark.parametrize("mutate,key", E2E_CASES)
def test_cli_check_config_prints_one_line(tmp_path, mutate, key):
    bad = write_bad(tmp_path, mutate)
    res = subprocess.run([str(PY), "-m", "harness", "check-config", str(bad)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert key in lines[0]
    assert "Traceback" not in res.stderr + res.stdout


def test_cli_check_config_accepts_a_valid_profile(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(smoke()))
    res = subprocess.run([str(PY), "-m", "harness", "check-config", str(good)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "config ok: profile smoke"


def test_cli_check_config_merges_files_like_snakemake(tmp_path):
    over = tmp_path / "over.yaml"
    over.write_text(yaml.safe_dump({"sysbench": {"warmup_s": 2}}))
    out = tmp_path / "resolved.yaml"
    res = subprocess.run([str(PY), "-m", "harness", "check-config", str(ROOT / "config" / "default.yaml"),
                          str(over), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    resolved = yaml.safe_load(out.read_text())
    expected = config.resolve(merge(load("default.yaml"), {"sysbench": {"warmup_s": 2}}))
    assert resolved["sysbench"] == expected["sysbench"]  # duration_s 10 from default.yaml


@pytest.mark.parametrize("mutate,key", E2E_CASES)
def test_snakemake_dry_run_stops_with_one_config_error_line(tmp_path, mutate, key):
    bad = write_bad(tmp_path, mutate)
    # --configfile takes several values: keep it last
    res = subprocess.run([str(SNAKEMAKE), "-n", "--cores", "1", "--configfile", str(bad)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    errors = [l for l in out.splitlines() if l.startswith("config error:")]
    assert len(errors) == 1, out
    assert key in errors[0]
    assert "Traceback" not in out


def test_paper_profile_plans_the_studies_cores_on_a_64_cpu_host_and_what_fits_here():
    cfg = {}
    for f in ("default.yaml", "paper.yaml"):
        config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / f).read_text()))
    out = config.resolve(cfg, cpus=list(range(64)))
    assert out["profile"] == "paper" and out["experiments"]["fts"]["cores"] == [4, 8, 16, 24, 32]
    assert out["experiments"]["point_select"]["cores"] == [16, 24, 32]   # cores: study (A3)
    assert out["experiments"]["oltp_ro"]["cores"] == [4, 8, 16, 24, 32]  # cores: study (A2: the setup's 4..32)
    assert out["experiments"]["ps_pfs"]["cores"] == [32]  # cores: max
    assert out["experiments"]["build_compare"]["cores"] == [16, 24, 32]  # cores: study (A3's 8-table runs)
    # planned from the host: here the sweep shrinks to what fits, and the plan says so
    here = config.resolve(cfg, cpus=[0, 1])
    assert here["experiments"]["point_select"]["cores"] == [1]
    assert "does not fit" in here["host"]["plan"]


@pytest.mark.parametrize("exp,want", [("point_select", [16, 24, 32]), ("oltp_ro", [4, 8, 16, 24, 32]),
                                      ("fts", [4, 8, 16, 24, 32]), ("read_write", [4, 8, 16, 24, 32])])
def test_cores_study_is_the_experiments_own_studys_counts(exp, want):
    """A3 (8 tables) 16, 24, 32, and A2 (one table, no count stated) on A3's sweep; A1 the
    setup's 4 to 32; B3 (no count stated) study A's 4 to 32."""
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    cfg["experiments"][exp]["cores"] = "study"
    assert config.resolve(cfg, cpus=list(range(64)))["experiments"][exp]["cores"] == want


def test_cores_study_for_a_study_without_counts_is_one_line_naming_the_key():
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())   # B1 declares no CORES
    cfg["experiment_defaults"]["cores"] = "study"
    with pytest.raises(config.ConfigError, match=r"^experiments\.simple_ranges_scale\.cores: study: B1 "
                                                 r"declares no core counts of its own \(CORES\); use cores: auto"):
        config.resolve(cfg, cpus=list(range(64)))


def test_cores_study_with_a_count_no_plan_makes_is_one_line_naming_the_key(monkeypatch):
    """A study package (one on $MYSQLBENCH_STUDY_PATH too) declaring a count the core plan never
    makes would have it dropped without a word: the config says so instead."""
    from harness import registry
    study = next(s for s in registry.all_studies().values() if "A3" in getattr(s, "CORES", {}))
    monkeypatch.setattr(study, "CORES", {**study.CORES, "A3": (12, 24)})
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    cfg["experiments"]["point_select"]["cores"] = "study"
    with pytest.raises(config.ConfigError, match=r"^experiments\.point_select\.cores: study: A3 declares core "
                                                 r"counts \[12\] that no core plan makes \(fix its CORES\); use"):
        config.resolve(cfg, cpus=list(range(64)))


def test_every_studys_cores_are_counts_the_core_plan_makes():
    """`cores: study` keeps the host plan's counts that are in a study's CORES: a count the plan
    never makes (not one of harness.measure.coreplan' candidates) would be dropped without a word,
    and a key that is not one of the study's config codes would never be asked."""
    from harness import registry
    from harness.measure import coreplan
    makes = set(coreplan.PLANNED)
    declared = {name: s.CORES for name, s in registry.all_studies().items() if hasattr(s, "CORES")}
    assert declared, "no study declares CORES: the test would check nothing"
    for name, table in declared.items():
        study = registry.all_studies()[name]
        for code, counts in table.items():
            assert code in study.CODES, f"{name}.CORES[{code!r}]: not one of its config codes {study.CODES}"
            assert counts, f"{name}.CORES[{code!r}] is empty"
            assert set(counts) <= makes, \
                f"{name}.CORES[{code!r}] = {counts}: the core plan makes only {sorted(makes)}"


def test_schema_enums_of_registry_keys_are_the_registries(monkeypatch):
    """An experiment's study, workload, dataset and script come from the registries
    (harness.studies and the workloads and datasets the studies bring); the schema file
    keeps their enums for its readers, and they must not drift from the registries."""
    monkeypatch.delenv("MYSQLBENCH_STUDY_PATH", raising=False)
    in_file = yaml.safe_load(paths.SCHEMA.read_text())["$defs"]["experiment"]["properties"]
    registries = config.registry_enums()
    assert set(registries) == {"study", "workload", "dataset", "script"}
    for key, values in registries.items():
        assert in_file[key]["enum"] == values, f"config.schema.yaml experiment.{key}: enum differs from the registry"


# --- repetitions that can decide (harness.plan.repetitions) ----------------------------------

@pytest.mark.parametrize("profile, bounds", [("default.yaml", (6, 12, 2)), ("paper.yaml", (6, 24, 2))])
def test_paper_and_default_profiles_validate_and_decide(profile, bounds):
    from harness.analysis import intervals
    from harness.plan import repetitions
    cfg = config.deep_merge(load("default.yaml"), load(profile)) if profile != "default.yaml" \
        else load("default.yaml")
    out = config.resolve(cfg, cpus=[0, 1, 2, 3])
    assert out["claims"]["decide"] is True
    for name, spec in out["experiments"].items():
        lo, hi, looks = repetitions.bounds(spec["repetitions"])
        if name == "aa_throughput":  # A/A: min set by the quiet-host check at 0.99 (8 blocks)
            assert lo == 8 and (hi, looks) == bounds[1:], name
            continue
        assert (lo, hi, looks) == bounds, name
        assert lo >= intervals.min_blocks(out["claims"]["level"], looks)


@pytest.mark.parametrize("where, value, key, fix", [
    ("defaults", 3, "experiment_defaults.repetitions", "set it to at least 5"),
    ("defaults", {"min": 5, "max": 12, "looks": 2}, "experiment_defaults.repetitions",
     "set min to at least 6"),
    ("point_select", {"min": 6, "max": 24, "looks": 4}, "experiments.point_select.repetitions",
     "set min to at least 7"),
    ("point_select", {"min": 8, "max": 6, "looks": 1}, "experiments.point_select.repetitions",
     "1 <= min <= max"),
    ("point_select", {"min": 6, "max": 7, "looks": 3}, "experiments.point_select.repetitions",
     "use at most 2 looks"),
])
def test_repetitions_too_few_for_the_level_are_refused(where, value, key, fix):
    cfg = load("default.yaml")
    if where == "defaults":
        cfg["experiment_defaults"]["repetitions"] = value
    else:
        cfg["experiments"][where]["repetitions"] = value
    with pytest.raises(config.ConfigError) as e:
        config.resolve(cfg, cpus=[0, 1, 2, 3])
    msg = str(e.value)
    assert msg.startswith(key + ":") and fix in msg and "\n" not in msg


def test_a_disabled_experiments_repetitions_are_checked_by_the_same_bounds_check():
    """A disabled experiment decides nothing, so only its bounds are checked, by the one check
    an enabled one gets first (harness.analysis.intervals.schedule_problem): the same line."""
    msgs = []
    for enabled in (True, False):
        cfg = load("default.yaml")
        cfg["experiments"]["point_select"].update(repetitions={"min": 6, "max": 7, "looks": 3}, enabled=enabled)
        with pytest.raises(config.ConfigError) as e:
            config.resolve(cfg, cpus=[0, 1, 2, 3])
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] == ("experiments.point_select.repetitions: 3 looks do not fit between 6 and 7 "
                                  "blocks; use at most 2 looks, or a larger max")
    cfg = load("default.yaml")
    cfg["experiments"]["point_select"].update(repetitions=3, enabled=False)   # too few to decide: unused
    assert config.resolve(cfg, cpus=[0, 1, 2, 3])["experiments"]["point_select"]["enabled"] is False


def test_decide_false_accepts_too_few_repetitions():
    cfg = load("default.yaml")
    cfg["experiment_defaults"]["repetitions"] = 1
    cfg["claims"]["decide"] = False
    assert config.resolve(cfg, cpus=[0, 1, 2, 3])["claims"]["decide"] is False


def test_a_slurm_step_bound_to_fewer_cpus_than_its_job_holds_on_the_node_stops_naming_cpus_per_task():
    """SLURM binds a job step to --cpus-per-task CPUs; a measurement job whose step holds
    fewer than the job's CPUs on the node (SLURM_JOB_CPUS_PER_NODE) would plan on those alone.
    The two-node cluster test runs the real case (tests/e2e/test_slurm_e2e.py)."""
    job = {"SLURM_JOB_ID": "7", "SLURM_JOB_CPUS_PER_NODE": "64", "SLURM_CPUS_ON_NODE": "1", "SLURMD_NODENAME": "n1"}
    with pytest.raises(config.ConfigError) as e:
        config.slurm_step_check(1, job)
    msg = str(e.value)
    assert msg.startswith("cpus_per_task:") and "1 of the 64 CPUs" in msg and "node n1" in msg
    assert "cpus_per_task: 64" in msg and "MYSQLBENCH_NODE_CPUS=64" in msg and "\n" not in msg
    assert "MYSQLBENCH_SLURM_STEP_CHECK=0" in msg
    with pytest.raises(config.ConfigError):
        config.slurm_step_check(32, job)
    config.slurm_step_check(64, job)  # the whole node: planned on all of it
    config.slurm_step_check(128, job)  # more than SLURM counts: no stop
    # a multi-node job: this node's entry (SLURM_NODEID) of "64(x2),32"
    multi = {**job, "SLURM_JOB_CPUS_PER_NODE": "64(x2),32"}
    with pytest.raises(config.ConfigError, match="1 of the 64 CPUs"):
        config.slurm_step_check(1, {**multi, "SLURM_NODEID": "1"})
    with pytest.raises(config.ConfigError, match="16 of the 32 CPUs"):
        config.slurm_step_check(16, {**multi, "SLURM_NODEID": "2"})
    config.slurm_step_check(32, {**multi, "SLURM_NODEID": "2"})
    # no stop: an salloc shell on the submit host (no SLURMD_NODENAME), no job, a count it cannot
    # read, one thread per core (SLURM counts the idle siblings), the opt-out
    config.slurm_step_check(1, {k: v for k, v in job.items() if k != "SLURMD_NODENAME"})
    config.slurm_step_check(1, {k: v for k, v in job.items() if k != "SLURM_JOB_ID"})
    config.slurm_step_check(1, {**job, "SLURM_JOB_CPUS_PER_NODE": "x"})
    config.slurm_step_check(1, {**job, "SLURM_HINT": "nomultithread"})
    config.slurm_step_check(1, {**job, "SLURM_THREADS_PER_CORE": "1"})
    config.slurm_step_check(1, {**job, "MYSQLBENCH_SLURM_STEP_CHECK": "0"})
