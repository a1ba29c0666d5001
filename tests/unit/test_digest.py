"""A cell's settings digest (harness.measure.digest) and what is decided by it
(harness.plan.reuse, harness.report.runinfo): a setting that changes what a cell
measures changes the digest, one that does not leaves it; the canonical JSON does not
depend on dict order; a cell of other settings is to do and is set aside, never
deleted; a disabled experiment's leftover tidy files of another profile are not read.
The end-to-end check (smoke, then a default overlay, in one clone) is
tests/e2e/test_e2e_pipeline.py's last test."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from harness import builds, paths
from harness.measure import digest
from harness.plan import cells, reuse
from harness.plan import estimate as E
from harness.report import runinfo

LOCK = builds.load_lock(paths.LOCK)
CELL = "mysql-5.6.24_InnoDB_base_t1_c1_u4_r1"


@pytest.fixture(scope="module")
def cfg():
    return E.load_profile([], ROOT, cpus=[0, 1])


def _digest(cfg, exp="point_select", name=CELL):
    return reuse.planned_digest(cfg, LOCK, exp, name)


def _with(cfg, fn):
    c = copy.deepcopy(cfg)
    fn(c)
    return c


@pytest.mark.parametrize("what, change", [
    ("warm-up", lambda c: c["sysbench"].__setitem__("warmup_s", 1)),
    ("measured window", lambda c: c["sysbench"].__setitem__("duration_s", 3)),
    ("table size", lambda c: c["experiments"]["point_select"].__setitem__("table_size", 1000)),
    ("users swept (max_connections)", lambda c: c["experiments"]["point_select"].__setitem__("users", [4])),
    ("users on one server", lambda c: c["sysbench"].__setitem__("users_on_one_server", True)),
    ("server options", lambda c: c["server"].__setitem__("options", {"innodb_buffer_pool_size": "64M"})),
    ("backend", lambda c: c.__setitem__("backend", "host")),
    ("client CPUs", lambda c: c["placement"].__setitem__("client_cpus", 2)),
])
def test_a_setting_that_changes_the_measurement_changes_the_digest(cfg, what, change):
    assert _digest(_with(cfg, change)) != _digest(cfg), what


@pytest.mark.parametrize("what, change", [
    ("repetitions", lambda c: c["experiments"]["point_select"].__setitem__("repetitions", {"min": 2, "max": 2, "looks": 1})),
    ("another engine listed", lambda c: c["experiments"]["point_select"].__setitem__("engines", ["InnoDB"])),
    ("another table count listed", lambda c: c["experiments"]["point_select"].__setitem__("tables", [1])),
    ("server timeouts", lambda c: c["server"].__setitem__("startup_timeout_s", 600)),
    ("lanes", lambda c: c["placement"].__setitem__("lanes", 1)),
    ("the profile's name", lambda c: c.__setitem__("profile", "mine")),
    ("claims' level", lambda c: c["claims"].__setitem__("level", 0.9)),
])
def test_a_setting_that_does_not_change_the_measurement_leaves_the_digest(cfg, what, change):
    assert _digest(_with(cfg, change)) == _digest(cfg), what


def test_the_cell_own_levels_and_build_are_in_it_but_not_its_repetition(cfg):
    assert _digest(cfg, name=CELL.replace("_r1", "_r2")) == _digest(cfg)
    for other in ("mysql-5.6.24_MyISAM_base_t1_c1_u4_r1", "mysql-5.6.24_InnoDB_base_t8_c1_u4_r1",
                  "mysql-5.6.24_InnoDB_base_t1_c1_u16_r1"):
        assert _digest(cfg, name=other) != _digest(cfg), other
    lock = copy.deepcopy(LOCK)
    lock["mysql-5.6.24"]["mysqld_sha256"] = "0" * 64
    c = json.loads(cells.cell_spec(cfg, "point_select"))
    parsed = cells.parse_cell(cfg, "point_select", CELL)
    assert digest.of(digest.inputs(c, parsed, lock)) != digest.of(digest.inputs(c, parsed, LOCK))


def test_a_steps_cell_digest_holds_its_engines_rows_and_the_legacy_build(cfg):
    name = "mysql-5.6.24_pfs-off.dur-relaxed_c1_r1"
    ins = reuse.planned(cfg, LOCK, "test_drive", name)
    assert ins["spec"]["engines"] and ins["legacy_build"]["name"] == "postgresql-15" and ins["script_sha256"]
    fewer = _with(cfg, lambda c: c["experiments"]["test_drive"].__setitem__("rows", 5000))
    assert _digest(fewer, "test_drive", name) != _digest(cfg, "test_drive", name)


def test_what_the_code_sets_on_the_server_is_in_it(cfg, monkeypatch):
    """Issue 53's review: the my.cnf defaults of a build family and the options a factor's
    value maps to live in code, not in the profile; changing either changes the digest (the
    same function, harness.measure.cell.server_setup, gives the measurement its options)."""
    import dataclasses
    from harness.measure import factors, mycnf
    name = "mysql-5.6.24_InnoDB_trx-off_t1_c1_u4_r1"
    before = reuse.planned(cfg, LOCK, "oltp_ro", name)
    assert before["server"]["family_defaults"] == mycnf.family_defaults("mysql-5.6")
    assert before["server"]["driver"] and before["version"] == 2
    monkeypatch.setitem(mycnf.FAMILY_DEFAULTS, "mysql-5.6", {**mycnf.FAMILY_DEFAULTS["mysql-5.6"],
                                                            "innodb_buffer_pool_size": "1G"})
    assert digest.differs(reuse.planned(cfg, LOCK, "oltp_ro", name), before) == [
        "server.family_defaults.innodb_buffer_pool_size"]
    monkeypatch.undo()
    pfs = factors.FACTORS["pfs"]
    monkeypatch.setitem(factors.FACTORS, "pfs", dataclasses.replace(
        pfs, server=lambda v, fam: {**pfs.server(v, fam), "performance_schema_max_table_instances": 1}))
    assert "server.options.performance_schema_max_table_instances" in digest.differs(
        reuse.planned(cfg, LOCK, "oltp_ro", name), before)


def test_a_step_script_digest_holds_the_study_modules_it_imports(cfg, monkeypatch):
    from harness import registry
    mod = registry.step_scripts()["c_test_drive"]
    own = sorted({m.__name__ for m in map(digest.inspect.getmodule, vars(mod).values())
                  if m is not None and m.__name__.startswith(mod.__name__.rpartition(".")[0] + ".")})
    assert len(own) >= 2, own  # the script and a module of its study it takes names from
    real = digest._sources_sha256(mod)
    other = sorted(own)[0] if sorted(own)[0] != mod.__name__ else sorted(own)[1]
    src = digest.inspect.getsourcefile(digest.inspect.getmodule(
        next(v for v in vars(mod).values() if digest.inspect.getmodule(v) and
             digest.inspect.getmodule(v).__name__ == other)))
    monkeypatch.setattr(digest.inspect, "getsourcefile",
                        lambda m, _real=digest.inspect.getsourcefile: "/dev/null" if _real(m) == src else _real(m))
    assert digest._sources_sha256(mod) != real


def test_the_canonical_json_is_stable_across_dict_order_and_number_spelling():
    a = {"b": {"y": 1, "x": [1, 2.0]}, "a": 3.0}
    b = {"a": 3, "b": {"x": [1, 2], "y": 1.0}}
    assert digest.canonical(a) == digest.canonical(b) == '{"a":3,"b":{"x":[1,2],"y":1}}'
    assert digest.of(a) == digest.of(b)
    assert digest.of({"a": True}) != digest.of({"a": 1})


def test_a_reader_recomputes_the_recorded_digest_and_sees_what_differs(cfg):
    req = json.loads(cells.cell_spec(cfg, "point_select"))
    st = digest.stamp(req, cells.parse_cell(cfg, "point_select", CELL), LOCK)
    stored = json.loads(json.dumps(st))  # as the manifest holds it
    assert digest.of(stored["digest_inputs"]) == stored["settings_digest"] == _digest(cfg)
    smoke = E.load_profile([str(ROOT / "config/smoke.yaml")], ROOT, cpus=[0, 1])
    diff = digest.differs(reuse.planned(smoke, LOCK, "point_select", CELL), stored["digest_inputs"])
    assert {"settings.warmup_s", "settings.duration_s", "spec.table_size"} <= set(diff)


def _cell(tmp: Path, cfg, name: str, manifest: dict | None) -> Path:
    d = tmp / "data/raw" / cells.cell_dir(cfg, "point_select", name, raw="").lstrip("/")
    d.mkdir(parents=True)
    if manifest is not None:
        (d / "manifest.json").write_text(json.dumps(manifest))
    return d


def test_a_cell_of_other_settings_is_to_do_and_set_aside_not_deleted(cfg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    smoke = E.load_profile([str(ROOT / "config/smoke.yaml")], ROOT, cpus=[0, 1])
    names = [CELL, CELL.replace("_r1", "_r2"), "mysql-5.6.24_MyISAM_base_t1_c1_u4_r1"]
    cur = _cell(tmp_path, cfg, names[0], {"settings_digest": _digest(cfg)})
    old = _cell(tmp_path, cfg, names[1], {"settings_digest": _digest(smoke, name=names[1])})
    legacy = _cell(tmp_path, cfg, names[2], {"cell": names[2]})
    rel = [str(p.relative_to(tmp_path)) for p in (cur, old, legacy)]
    assert [reuse.status(cfg, LOCK, "point_select", d) for d in rel] == [reuse.CURRENT, reuse.STALE, reuse.LEGACY]
    assert reuse.todo(cfg, LOCK, "point_select", rel + ["data/raw/A3/point_select/none"]) == rel[1:] + [
        "data/raw/A3/point_select/none"]
    inputs = {k: v for n in names for k, v in reuse.stale_inputs(cfg, LOCK, "point_select", [n]).items()}
    assert sorted(inputs) == [f"supersede_{n}" for n in sorted(names[1:])]
    tag = reuse.manifest_tag(rel[1])
    assert inputs[f"supersede_{names[1]}"] == f"data/order/point_select/{names[1]}.superseded-{tag}"
    assert reuse.supersede(rel[1], "0" * 12) is None and old.exists()  # another measurement: left alone
    dest = reuse.supersede(rel[1], tag)
    assert not old.exists() and Path(dest, "manifest.json").exists()
    assert dest == f"data/partial/A3/point_select/{names[1]}.superseded-{tag}"
    assert reuse.supersede(rel[1], tag) is None  # already moved: nothing to do
    said = []
    assert reuse.replot_cells(cfg, LOCK, "point_select", [rel[0], rel[2]], said.append) == [rel[0], rel[2]]
    assert len(said) == 1 and "no settings digest" in said[0]


def test_a_unit_measured_again_sets_its_current_cells_aside_too(cfg, tmp_path, monkeypatch):
    """A group or duet unit is one job: when one of its cells is to do (stale, legacy or
    missing), the job measures every one again, so a current sibling gets a supersede marker
    too and is moved aside, never deleted by the job (nothing measured is lost)."""
    monkeypatch.chdir(tmp_path)
    smoke = E.load_profile([str(ROOT / "config/smoke.yaml")], ROOT, cpus=[0, 1])
    names = [CELL, CELL.replace("_u4_", "_u16_"), CELL.replace("_u4_", "_u64_")]
    _cell(tmp_path, cfg, names[0], {"settings_digest": _digest(cfg)})
    _cell(tmp_path, cfg, names[1], {"settings_digest": _digest(cfg, name=names[1])})
    assert reuse.stale_inputs(cfg, LOCK, "point_select", names[:2]) == {}  # all current: nothing
    assert sorted(reuse.stale_inputs(cfg, LOCK, "point_select", names)) == [  # one missing: the rest aside
        f"supersede_{n}" for n in sorted(names[:2])]
    _cell(tmp_path, cfg, names[2], {"settings_digest": _digest(smoke, name=names[2])})
    inputs = reuse.stale_inputs(cfg, LOCK, "point_select", names)
    assert sorted(inputs) == [f"supersede_{n}" for n in sorted(names)]
    cur = cells.cell_dir(cfg, "point_select", names[0])
    assert inputs[f"supersede_{names[0]}"].endswith(f".superseded-{reuse.manifest_tag(cur)}")
    assert reuse.stale_inputs(cfg, LOCK, "point_select", names[:1]) == {}  # alone, a current cell stays


def test_the_estimates_to_do_counts_a_units_current_cells_measured_again(cfg, tmp_path, monkeypatch):
    """The estimate's "to do" is what the run measures: a group whose one cell is to do is
    measured again whole (stale_inputs), so its current siblings count too; a current cell of
    another group, or one that runs alone, does not (it counted only the cells not current)."""
    monkeypatch.chdir(tmp_path)
    grouped = _with(cfg, lambda c: c["sysbench"].__setitem__("users_on_one_server", True))
    assert cells.grouped(grouped, "point_select")
    users = grouped["experiments"]["point_select"]["users"]
    mine = [CELL.replace("_u4_", f"_u{u}_") for u in users]
    other = [n.replace("_InnoDB_", "_MyISAM_") for n in mine]
    for n in mine[:-1] + other:   # one group whole and current; the other's last users value missing
        _cell(tmp_path, grouped, n, {"settings_digest": _digest(grouped, name=n)})
    dirs = [cells.cell_dir(grouped, "point_select", n) for n in mine + other]
    assert reuse.todo(grouped, LOCK, "point_select", dirs) == dirs[:len(mine)]
    assert reuse.units_of(grouped, "point_select", mine + other) == [tuple(mine), tuple(other)]
    assert not cells.grouped(cfg, "point_select")   # each cell its own job: only the missing one
    for n in mine[:-1]:
        shutil.rmtree(cells.cell_dir(cfg, "point_select", n))
        _cell(tmp_path, cfg, n, {"settings_digest": _digest(cfg, name=n)})
    assert reuse.todo(cfg, LOCK, "point_select", dirs[:len(mine)]) == dirs[len(mine) - 1:len(mine)]


def test_an_experiment_with_only_cells_of_other_settings_says_so_not_that_it_was_not_run(cfg, tmp_path,
                                                                                         monkeypatch):
    """A replot whose experiment holds only cells of another digest (here smoke's) marks it not
    run; its reason (the claims' and the tidy data's) says the cells were measured under other
    settings, where they were set aside, and how to measure them again; once a measuring run
    moved them to data/partial/, it says that place; with no cell at all, nothing to say."""
    from harness.analysis import claimresult, tidyread
    monkeypatch.chdir(tmp_path)
    smoke = E.load_profile([str(ROOT / "config/smoke.yaml")], ROOT, cpus=[0, 1])
    names = [CELL, CELL.replace("_r1", "_r2")]
    rel = [str(_cell(tmp_path, cfg, n, {"settings_digest": _digest(smoke, name=n)}).relative_to(tmp_path))
           for n in names]
    planned = rel + [rel[0].replace("_r1", "_r3")]            # a planned cell never measured
    why = reuse.left_out(cfg, LOCK, "point_select", planned)
    prof = cfg["profile"]
    assert why.startswith("experiment: point_select: its 2 cell(s) in data/raw/A3/point_select/ were measured "
                          f"under other settings than profile {prof} plans")
    assert "set aside, not read by this replot" in why and f"./artifact paper with config/{prof}.yaml measures them again" in why
    spec = {**cfg["experiments"]["point_select"], "enabled": False, "not_planned": why}
    assert reuse.planned_digest({**cfg, "experiments": {**cfg["experiments"], "point_select": spec}}, LOCK,
                                "point_select", CELL) == _digest(cfg)   # no input of the digest
    tidy = tidyread.Tidy({"profile": prof, "experiments": {"point_select": spec}}, {})
    res = claimresult.missing(*tidy.missing("point_select"))
    assert res.reason == why and "not run in this profile" not in res.reason
    for d in rel:
        reuse.supersede(d, reuse.manifest_tag(d))
    moved = reuse.left_out(cfg, LOCK, "point_select", planned)
    assert "its 2 cell(s) measured under other settings" in moved and "set aside in data/partial/A3/point_select/" in moved
    import shutil
    shutil.rmtree("data/partial")
    assert reuse.left_out(cfg, LOCK, "point_select", planned) is None


def test_a_disabled_experiment_s_tidy_files_of_another_profile_are_not_read(tmp_path):
    """The paper step's check: smoke's fts_provenance.json beside a profile that does not
    run fts is no mismatch; an enabled experiment's of another profile still is."""
    conf = tmp_path / "config.resolved.yaml"
    conf.write_text(yaml.safe_dump({"profile": "mine", "experiments": {
        "fts": {"enabled": False}, "point_select": {"enabled": True}}}))
    gen = tmp_path / "gen"
    gen.mkdir()
    (gen / "runinfo.tex").write_text(r"\newcommand{\RunProfile}{mine}")
    (gen / "macros.tex").write_text(r"\newcommand{\ConfigProfile}{mine}")
    tidy = tmp_path / "tidy"
    tidy.mkdir()
    (tidy / "fts_provenance.json").write_text(json.dumps({"profile": "smoke"}))
    (tidy / "point_select_provenance.json").write_text(json.dumps({"profile": "mine"}))
    assert runinfo.profile_mismatches(str(conf), str(tidy), str(gen)) == []
    (tidy / "point_select_provenance.json").write_text(json.dumps({"profile": "smoke"}))
    bad = runinfo.profile_mismatches(str(conf), str(tidy), str(gen))
    assert len(bad) == 1 and "point_select_provenance.json" in bad[0]
