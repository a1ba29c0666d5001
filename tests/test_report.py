"""Tests of harness.report and harness.claims (the R figures: test_figures.py).

Fixtures:
  tests/fixtures/report/        invented but plausible Point-Selects data in the
                                older tidy layout (no factor columns): one build,
                                InnoDB and MyISAM, 1 and 8 tables, 1 and 2 cores,
                                8..64 users, 3 repetitions; MyISAM wins at 8
                                tables and 8 tables scale better than 1.
  tests/fixtures/report/smoke/  real tidy data of a smoke run on MySQL 5.6.24
                                (every experiment of studies A2, A3 and B, one
                                core; PFS waits cut to the top 12 per cell).
Each claim's three verdict paths are checked on small synthetic rows below.
"""

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import claims, report

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "report"
SMOKE = FIX / "smoke"
SUMMARY = FIX / "point_select_summary.csv"
FIG_SCRIPT = ROOT / "workflow" / "R" / "fig_point_select.R"

REQUIRED_MACROS = [
    "PSBestInnoDB", "PSBestMyISAM", "PSRatioMyISAMInnoDB", "PSBestCores",
    "NumCells", "NumReps", "UsersMax", "CoresList", "BuildVersion", "HostCPU",
    "HostKernel", "HostCPUs", "SysbenchVersion", "PlacementMechanism",
    "ConfigProfile", "DurationS", "NumUnstable",
]
# the per-experiment numbers quoted by paper/main.tex
EXPERIMENT_MACROS = [
    "ATwoRatioOltpRo", "ATwoRatioSimpleRanges", "ATwoRatioPointSelect",
    "OltpRoAutoInnoDB", "OltpRoAutoMyISAM", "OltpRoAutoRatio", "OltpRoTrxInnoDB",
    "OltpRoTrxMyISAM", "OltpRoTrxRatio", "TrxRatioInnoDB", "TrxRatioMyISAM",
    "SimpleRangesRatioEight", "TablesRatioPSInnoDB", "TablesRatioPSMyISAM",
    "PsPfsRatioInnoDB", "PsPfsRatioMyISAM", "PsOnRatioInnoDB", "PsOnRatioMyISAM",
    "PfsOffRatioInnoDB", "PfsOffRatioMyISAM", "TopWaitInnoDB", "TopWaitMyISAM",
    "SpinRatio", "SpinBestDelay", "SpinDelays", "ReadOnlyRatio", "KeyCacheRatio",
    "KeyCachesPerTable", "MemoryHashType", "MemoryHashRows", "MemoryBtreeType",
    "MemoryBtreeRows", "MemoryHashQPS", "MemoryBtreeQPS", "MemoryHashBtreeRatio",
    "MemoryTableSize", "MemoryEngineRO", "MemoryInnoDBRatio", "MemoryInnoDBGainPct",
    "RWRatioMemoryInnoDB", "RWRatioMyISAMInnoDB", "RWLockWaitPctMemory",
    "RWLockWaitPctInnoDB", "RWLockWaitPctMyISAM", "NumUnsupported", "NumExperiments",
    "ExperimentsNotRun", "CoresAll", "MaxCores", "PrimaryBuild", "PrimaryBuildVersion",
    "WinMargin", "RatioTolerance", "MuchFaster", "SlightMax", "MemoryGainTolerance",
    "ContentionMinCores", "ScalingMargin",
]
OUTPUTS = ["builds.tex", "claims.csv", "claims.tex", "explain.tex", "macros.tex", "provenance.tex",
           "unsupported.tex"]


def invented_dir(tmp_path, summary_lines=None):
    """A tidy dir with the invented Point-Selects fixture (optionally another summary)."""
    d = tmp_path / "tidy"
    d.mkdir(exist_ok=True)
    shutil.copy(FIX / "point_select.csv", d / "point_select.csv")
    shutil.copy(FIX / "provenance.json", d / "provenance.json")
    if summary_lines is None:
        shutil.copy(SUMMARY, d / "point_select_summary.csv")
    else:
        (d / "point_select_summary.csv").write_text("".join(summary_lines))
    return d


def run_report(out, tidy=FIX, config=None):
    argv = ["--tidy-dir", str(tidy), "--config", str(config or FIX / "config.yaml"),
            "--out", str(out)]
    assert report.main(argv) == 0
    return out


def smoke_report(out, config=None):
    return run_report(out, SMOKE, config or SMOKE / "config.yaml")


def macros_of(path):
    text = (path / "macros.tex").read_text()
    return re.findall(r"\\newcommand\{\\([^}]*)\}\{(.*)\}$", text, re.M)


def flags_of(path):
    text = (path / "macros.tex").read_text()
    return dict(re.findall(r"^\\(Has\w+?)(true|false)$", text, re.M))


def read_claims_csv(path):
    with open(path / "claims.csv", newline="") as f:
        return list(csv.DictReader(f))


def fixture_rows():
    return claims.read_summary(SUMMARY)


def row(engine, tables, cores, users, qps, build="b1"):
    return claims.parse_row(dict(
        study="A3", experiment="point_select", workload="point_select",
        build=build, engine=engine, tables=tables, cores=cores, users=users,
        n=3, qps_median=qps, qps_ci_lo=qps * 0.98, qps_ci_hi=qps * 1.02,
        qps_cv=0.01, unstable="False"))


def verdicts(rows, config=None):
    return {c["id"]: c for c in claims.evaluate({"point_select": rows}, config)}


# --- report.py on the invented fixture ----------------------------------------

def test_outputs_written_without_temp_files(tmp_path):
    out = run_report(tmp_path / "gen")
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS


def test_every_macro_defined_exactly_once(tmp_path):
    names = [n for n, _ in macros_of(run_report(tmp_path))]
    for name in REQUIRED_MACROS + EXPERIMENT_MACROS:
        assert names.count(name) == 1, name
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[A-Za-z]+", n) for n in names)


def test_macro_values_from_fixture(tmp_path):
    m = dict(macros_of(run_report(tmp_path)))
    assert m["PSBestInnoDB"] == "22{,}967"
    assert m["PSBestMyISAM"] == "27{,}107"
    assert m["PSRatioMyISAMInnoDB"] == "1.18"
    assert m["PSBestCores"] == "2"
    assert m["NumCells"] == "32"
    assert m["NumReps"] == "3"
    assert m["UsersMax"] == "64"
    assert m["CoresList"] == "1 and 2"
    assert m["HostCPUs"] == "2"
    assert m["SysbenchVersion"] == "1.0.20"
    assert m["PlacementMechanism"] == "cgroup-v1"
    assert m["ConfigProfile"] == r"quick\_test"
    assert m["DurationS"] == "60"
    assert m["NumUnstable"] == "1"
    assert m["HostCPU"] == "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz"
    assert m["RandSeed"] == "42"
    assert m["CVThreshold"] == "0.05"
    assert m["PSTableSize"] == "100{,}000"
    assert m["VerdictPSMyISAMWins"] == "reproduced"
    assert m["TablesRatioPSInnoDB"] != "n/a"
    # experiments the profile does not run: numbers n/a, listed as not run
    assert m["ATwoRatioOltpRo"] == m["MemoryInnoDBRatio"] == "n/a"
    assert m["NumExperiments"] == "1"
    assert "simple\\_ranges" in m["ExperimentsNotRun"]


def test_engine_without_data_gives_na(tmp_path):
    lines = SUMMARY.read_text().splitlines(keepends=True)
    tidy = invented_dir(tmp_path, [lines[0]] + [ln for ln in lines[1:] if ",InnoDB," in ln])
    m = dict(macros_of(run_report(tmp_path / "gen", tidy)))
    assert m["PSBestMyISAM"] == "n/a"
    assert m["PSRatioMyISAMInnoDB"] == "n/a"
    assert m["PSBestInnoDB"] == "22{,}967"


@pytest.mark.parametrize("raw, tex", [
    ("quick_test", r"quick\_test"),
    ("100% & #1 {x} $5", r"100\% \& \#1 \{x\} \$5"),
    ("a~b^c\\d", r"a\textasciitilde{}b\textasciicircum{}c\textbackslash{}d"),
    ("Intel(R) Xeon(R) @ 2.40GHz", "Intel(R) Xeon(R) @ 2.40GHz"),
    ("1.71×", r"1.71$\times$"),
    ("Core™ i7 café", r"Core\texttrademark{} i7 cafe"),
    ("InnoDB ≫ MyISAM ±10", r"InnoDB $\gg$ MyISAM $\pm$10"),
])
def test_tex_escape(raw, tex):
    assert report.tex_escape(raw) == tex


def test_macro_name_must_be_letters():
    with pytest.raises(ValueError):
        report.macro("PSBest2", "1")


def test_fmt_int():
    assert report.fmt_int(12345.4) == "12{,}345"
    assert report.fmt_int(None) == "n/a"


def test_fmt_pct_signed():
    assert report.fmt_pct(8.2, signed=True) == "+8"
    assert report.fmt_pct(-3.4, signed=True) == "$-$3"
    assert report.fmt_pct(None) == "n/a"


def test_provenance_table(tmp_path):
    tex = (run_report(tmp_path) / "provenance.tex").read_text()
    assert r"\begin{tabularx}" in tex and r"\bottomrule" in tex
    assert "dfb30bc3cde8" in tex and "dfb30bc3cde88" not in tex
    assert r"mysql-\allowbreak{}5.\allowbreak{}6.\allowbreak{}24\_" in tex
    assert "cgroup-v1" in tex and r"quick\_test" in tex
    assert r"\texttt{01234567\allowbreak{}89abcdef" in tex


@pytest.mark.parametrize("commit", ["0123456789abcdef", ["0123456789abcdef"]])
def test_git_commit_string_or_list(commit):
    tex = report.provenance_tex({"git_commit": commit}, {})
    assert r"git commit & \texttt{01234567\allowbreak{}89abcdef}\\" in tex


def test_empty_provenance_and_config_give_na():
    tex = report.provenance_tex({}, {})
    assert "n/a" in tex and r"\end{tabularx}" in tex


def test_claims_csv_matches_evaluation(tmp_path):
    out = run_report(tmp_path)
    rows = read_claims_csv(out)
    assert [r["id"] for r in rows] == [c.id for c in claims.CLAIMS]
    assert all(r["verdict"] in claims.VERDICTS for r in rows)
    by_id = {r["id"]: r for r in rows}
    assert by_id["A3-PS-myisam-wins"]["verdict"] == claims.REPRODUCED
    # the invented profile runs point_select only: the rest says why
    assert by_id["B2-MEMORY-8pct-over-InnoDB"]["measured"] == \
        "experiment oltp_ro not run in this profile"
    assert r"A3-\allowbreak{}PS-\allowbreak{}myisam-" in (out / "claims.tex").read_text()


def test_empty_inputs_give_na_not_errors(tmp_path):
    tidy = tmp_path / "tidy"
    tidy.mkdir()
    (tidy / "point_select_summary.csv").write_text(SUMMARY.read_text().splitlines()[0] + "\n")
    (tidy / "point_select.csv").write_text(
        (FIX / "point_select.csv").read_text().splitlines()[0] + "\n")
    (tidy / "point_select_provenance.json").write_text("{}")
    (tmp_path / "c.yaml").write_text("")
    out = run_report(tmp_path / "gen", tidy, tmp_path / "c.yaml")
    m = dict(macros_of(out))
    assert m["PSBestInnoDB"] == m["HostCPU"] == m["CoresList"] == m["NumReps"] == "n/a"
    assert {r["verdict"] for r in read_claims_csv(out)} == {claims.NOT_MEASURABLE}
    assert "No EXPLAIN output" in (out / "explain.tex").read_text()
    assert "None:" in (out / "unsupported.tex").read_text()


def test_missing_tidy_dir_is_an_error(tmp_path):
    with pytest.raises(SystemExit):
        report.main(["--tidy-dir", str(tmp_path / "nope"), "--config",
                     str(FIX / "config.yaml"), "--out", str(tmp_path / "gen")])


# --- report.py on the real smoke data -------------------------------------------

def test_smoke_outputs_and_macros(tmp_path):
    out = smoke_report(tmp_path / "gen")
    assert sorted(p.name for p in out.iterdir()) == OUTPUTS
    names = [n for n, _ in macros_of(out)]
    assert len(names) == len(set(names))
    m = dict(macros_of(out))
    for name in REQUIRED_MACROS + EXPERIMENT_MACROS:
        assert name in m, name
    assert m["NumExperiments"] == "9" and m["ExperimentsNotRun"] == "none"
    assert m["NumCells"] == "50" and m["NumRuns"] == "58" and m["NumReps"] == "1--2"
    assert m["ConfigProfile"] == "smoke"
    assert m["MemoryHashType"] == "ALL" and m["MemoryBtreeType"] == "range"
    assert m["MemoryHashRows"] == "1000" and m["MemoryTableSize"] == "1{,}000"
    assert m["KeyCachesPerTable"] == "8"
    assert m["SpinDelays"] == "6, 96 and 256"
    assert m["MemoryEngineRO"] == "MEMORY-BTREE"
    assert m["ATwoRatioSimpleRanges"] == "1.63"   # 7705.38 / 4717.19
    assert m["ReadOnlyRatio"] == "2.56"           # 30717.88 / 11985.61
    assert m["KeyCacheRatio"] == "0.84"           # 25273.95 / 30036.35
    assert m["SimpleRangesRatioEight"] == "n/a"   # Simple-Ranges ran on 1 table
    assert m["RWLockWaitPctInnoDB"] == "0.0"
    assert m["TopWaitMyISAM"].startswith(r"\texttt{")
    assert m["PrimaryBuild"].startswith(r"\texttt{mysql-")


def test_smoke_provenance_merged(tmp_path):
    tex = (smoke_report(tmp_path) / "provenance.tex").read_text()
    for script in ("point_select.lua", "read_only.lua", "read_write.lua"):
        assert report.tex_tt(script) in tex, script
    builds = {b["name"] for p in SMOKE.glob("*_provenance.json") for b in json.loads(p.read_text())["builds"]}
    assert tex.count("Build}") == len(builds) == 4      # each build listed once
    m = dict(macros_of(tmp_path))
    cells = sum(json.loads(p.read_text())["cells"] for p in SMOKE.glob("*_provenance.json"))
    assert f"measured runs & {cells}" in tex
    assert m["NumRuns"] == str(cells)


def test_smoke_flags_all_true(tmp_path):
    flags = flags_of(smoke_report(tmp_path))
    assert flags["HasOltpRo"] == flags["HasReadWrite"] == "true"
    assert all(flags["HasFig" + f["flag"]] == "true" for f in report.FIGURES.values())


def test_disabled_experiment_flags_and_stale_files_ignored(tmp_path):
    cfg = report.read_yaml(SMOKE / "config.yaml")
    for e in ("read_write", "ps_pfs", "spin_wait", "read_only", "key_cache", "build_compare"):
        cfg["experiments"][e]["enabled"] = False
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg))
    out = smoke_report(tmp_path / "gen", path)
    flags = flags_of(out)
    assert flags["HasReadWrite"] == "false" and flags["HasFigKnobs"] == "false"
    assert flags["HasFigMemory"] == "true"      # simple_ranges and oltp_ro still run
    assert flags["HasFigPsPfs"] == "false" and flags["HasFigWaits"] == "true"
    m = dict(macros_of(out))
    assert m["RWRatioMemoryInnoDB"] == "n/a"    # its tidy files exist but are not read
    assert m["NumExperiments"] == "3"
    by_id = {r["id"]: r for r in read_claims_csv(out)}
    assert by_id["B3-MEMORY-writes-limited"]["measured"] == \
        "experiment read_write not run in this profile"


def test_smoke_claims(tmp_path):
    rows = read_claims_csv(smoke_report(tmp_path))
    assert [r["id"] for r in rows] == [c.id for c in claims.CLAIMS]
    assert {r["build"] for r in rows} == {"mysql-5.6.24"}
    v = {r["id"]: r for r in rows}
    # one core: scaling and contention claims are not measurable, with the reason
    for cid in ("A3-PS-8-tables-scale", "B3-MEMORY-writes-limited", "B4-single-table-bottleneck"):
        assert v[cid]["verdict"] == claims.NOT_MEASURABLE, cid
    assert "measured on 1 core" in v["B3-MEMORY-writes-limited"]["measured"]
    assert "MEMORY 18.0K vs InnoDB 12.4K" in v["B3-MEMORY-writes-limited"]["measured"]
    assert v["A3-SR-innodb-much-faster"]["verdict"] == claims.NOT_MEASURABLE
    assert "1 table only" in v["A3-SR-innodb-much-faster"]["measured"]
    assert v["B1-HASH-range-full-scan"]["verdict"] == claims.REPRODUCED
    assert v["B1-HASH-range-full-scan"]["measured"] == \
        "MEMORY (HASH): ALL (1000 rows); MEMORY-BTREE: range (194 rows)"
    assert v["A3-RO-innodb-read-only-faster"]["verdict"] == claims.REPRODUCED
    assert v["A2-RO-innodb-3x-point-select"]["verdict"] == claims.NOT_REPRODUCED


def test_smoke_explain_table(tmp_path):
    tex = (smoke_report(tmp_path) / "explain.tex").read_text()
    assert r"\begin{tabular}" in tex and r"\bottomrule" in tex
    lines = {ln.split(" & ")[0]: ln for ln in tex.splitlines() if " & " in ln}
    assert " & ALL & " in lines["MEMORY"]
    assert " & range & " in lines["MEMORY-BTREE"]
    assert [k for k in lines if k != "Engine"] == ["InnoDB", "MyISAM", "MEMORY", "MEMORY-BTREE"]


def test_unsupported_list(tmp_path):
    tidy = tmp_path / "tidy"
    shutil.copytree(SMOKE, tidy)
    (tidy / "unsupported.csv").write_text(
        "experiment,build,engine,variant,reason\n"
        "ps_pfs,mariadb-10.2.11,InnoDB,ps-on.pfs-off,performance_schema_x is not an option\n"
        "other,b,e,v,not an experiment of this profile\n")
    out = run_report(tmp_path / "gen", tidy, SMOKE / "config.yaml")
    tex = (out / "unsupported.tex").read_text()
    assert r"\begin{itemize}" in tex and tex.count("\\item ") == 1
    assert r"performance\_schema\_x" in tex
    assert dict(macros_of(out))["NumUnsupported"] == "1"


def test_keycaches_with_repeated_column_name(tmp_path):
    p = tmp_path / "k.csv"
    p.write_text("variant,key_cache,table,key_cache\nkc-pertable,per_table,sbtest1,sbtest1_kc\n")
    assert report.read_csv(p) == [{"variant": "kc-pertable", "key_cache": "per_table",
                                   "table": "sbtest1", "key_cache#2": "sbtest1_kc"}]


def test_several_builds(tmp_path):
    """Two builds: one claim row per build, the ids name the build, macros use the
    profile's first build."""
    tidy = tmp_path / "tidy"
    shutil.copytree(SMOKE, tidy)
    for p in tidy.glob("*.csv"):
        if p.name == "unsupported.csv":
            continue
        lines = p.read_text().splitlines(keepends=True)
        p.write_text("".join(lines) + "".join(ln.replace("mysql-5.6.24", "mysql-5.5.9")
                                             for ln in lines[1:]))
    cfg = report.read_yaml(SMOKE / "config.yaml")
    cfg["builds"] = ["mysql-5.6.24", "mysql-5.5.9"]
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    out = run_report(tmp_path / "gen", tidy, tmp_path / "c.yaml")
    rows = read_claims_csv(out)
    assert len(rows) == 2 * len(claims.CLAIMS)
    assert r"\newline{\footnotesize \texttt{mysql-" in (out / "claims.tex").read_text()
    m = dict(macros_of(out))
    assert m["PrimaryBuild"].startswith(r"\texttt{mysql-\allowbreak{}5.\allowbreak{}6")
    assert m["PrimaryBuildVersion"] == "5.6.24"
    assert "(mysql-5.5.9)" in m["VerdictMemoryHashScan"]
    # table* floats of at most CLAIMS_PER_FLOAT rows
    assert (out / "claims.tex").read_text().count(r"\begin{table*}") == \
        -(-len(rows) // report.CLAIMS_PER_FLOAT)


def test_figure_inputs_follow_enabled_experiments():
    assert report.figure_inputs("b_memory", {"oltp_ro"}) == ["data/tidy/oltp_ro_summary.csv"]
    assert report.figure_inputs("a3_knobs", {"oltp_ro"}) == []
    assert report.figure_inputs("a3_timeseries", {"point_select"}, "t") == \
        ["t/point_select_intervals.csv"]
    for name, f in report.FIGURES.items():
        assert (ROOT / "workflow" / "R" / f["script"]).exists(), name
        assert re.fullmatch(r"[A-Za-z]+", f["flag"])


# --- claims.py: the published Point-Selects claims ------------------------------

def test_myisam_wins_reproduced_on_fixture():
    c = verdicts(fixture_rows())["A3-PS-myisam-wins"]
    assert c["verdict"] == claims.REPRODUCED
    assert c["measured"] == "MyISAM 27.1K vs InnoDB 23.0K QPS (1.18×)"
    assert c["published"] == "MyISAM 360K vs InnoDB 210K QPS (1.71×)"


def test_innodb_wins_not_reproduced():
    rows = [row("InnoDB", 8, 2, 16, 30000), row("MyISAM", 8, 2, 16, 20000)]
    assert verdicts(rows)["A3-PS-myisam-wins"]["verdict"] == claims.NOT_REPRODUCED


def test_missing_engine_not_measurable():
    rows = [row("InnoDB", 8, 2, 16, 30000), row("MyISAM", 1, 2, 16, 40000)]
    c = verdicts(rows)["A3-PS-myisam-wins"]
    assert c["verdict"] == claims.NOT_MEASURABLE
    assert "MyISAM" in c["measured"]


def test_no_data_at_all_not_measurable():
    results = claims.evaluate({}, None)
    assert {c["verdict"] for c in results} == {claims.NOT_MEASURABLE}
    assert len(results) == len(claims.CLAIMS)


def test_scaling_reproduced_on_fixture():
    c = verdicts(fixture_rows())["A3-PS-8-tables-scale"]
    assert c["verdict"] == claims.REPRODUCED
    assert "peak 8/1 tables 1.66×" in c["measured"]


def test_scaling_not_reproduced_when_gains_equal():
    rows = [row(e, t, c, 16, q * c) for e in ("InnoDB", "MyISAM")
            for t, q in ((1, 10000), (8, 12000)) for c in (1, 4)]
    c = verdicts(rows)["A3-PS-8-tables-scale"]
    assert c["verdict"] == claims.NOT_REPRODUCED
    assert "peak 8/1 tables 1.20×" in c["measured"]


def test_scaling_margin_from_config():
    rows = [row("InnoDB", 1, 1, 16, 10000), row("InnoDB", 1, 4, 16, 20000),
            row("InnoDB", 8, 1, 16, 10000), row("InnoDB", 8, 4, 16, 25000)]
    assert verdicts(rows)["A3-PS-8-tables-scale"]["verdict"] == claims.REPRODUCED
    strict = {"claims": {"scaling_margin": 0.5}}
    assert verdicts(rows, strict)["A3-PS-8-tables-scale"]["verdict"] == claims.NOT_REPRODUCED


@pytest.mark.parametrize("rows", [
    [row("InnoDB", t, 2, 16, 10000 * t) for t in (1, 8)],       # one cores value
    [row("InnoDB", 8, c, 16, 10000 * c) for c in (1, 2)],       # no 1-table data
    [],
])
def test_scaling_not_measurable(rows):
    c = verdicts(rows)["A3-PS-8-tables-scale"]
    assert c["verdict"] == claims.NOT_MEASURABLE


def test_one_result_per_build():
    rows = [row("InnoDB", 8, 2, 16, 30000, "a"), row("MyISAM", 8, 2, 16, 20000, "a"),
            row("InnoDB", 8, 2, 16, 20000, "b"), row("MyISAM", 8, 2, 16, 30000, "b")]
    res = [c for c in claims.evaluate({"point_select": rows}) if c["id"] == "A3-PS-myisam-wins"]
    assert [(c["build"], c["verdict"]) for c in res] == [
        ("a", claims.NOT_REPRODUCED), ("b", claims.REPRODUCED)]


def test_unparsable_numbers_do_not_raise():
    r = row("MyISAM", 8, 2, 16, 1000)
    r["qps_median"] = None
    c = verdicts([r, row("InnoDB", 8, 2, 16, 1000)])["A3-PS-myisam-wins"]
    assert c["verdict"] == claims.NOT_MEASURABLE


def test_settings_default_and_bad_values():
    assert claims.setting({}, "much_faster") == 1.5
    assert claims.setting({"much_faster": "x"}, "much_faster") == 1.5
    assert claims.setting({"contention_min_cores": 4}, "contention_min_cores") == 4
    assert claims.setting(None, "win_margin") == 0.0


# --- claims.py: every claim's three verdict paths --------------------------------

def srow(experiment, engine, qps, tables=8, cores=1, users=4, build="b1", **factors):
    raw = dict(study="X", experiment=experiment, workload=experiment, build=build,
               engine=engine, tables=tables, cores=cores, users=users, n=1, qps_median=qps,
               qps_ci_lo=qps, qps_ci_hi=qps, qps_cv=0, unstable="False")
    raw.update({k: str(v) for k, v in factors.items()})
    return claims.parse_row(raw)


def explain(engine, type_, rows_, statement="simple_range", build="b1"):
    return dict(build=build, engine=engine, statement=statement, type=type_,
                key="PRIMARY" if type_ != "ALL" else "", rows=str(rows_))


def status(engine, name, delta, build="b1"):
    return dict(build=build, engine=engine, name=name, delta=str(delta))


def ro(i, m, tables=1, trx="on"):
    return {"oltp_ro": [srow("oltp_ro", "InnoDB", i, tables, trx=trx),
                        srow("oltp_ro", "MyISAM", m, tables, trx=trx)]}


def a3ro(off_i, off_m, on_i, on_m):
    rows = [srow("oltp_ro", e, q, 8, trx=t) for e, q, t in (
        ("InnoDB", off_i, "off"), ("MyISAM", off_m, "off"),
        ("InnoDB", on_i, "on"), ("MyISAM", on_m, "on")) if q]
    return {"oltp_ro": rows}


def two(experiment, a, qa, b, qb, tables=1, **factors):
    return {experiment: [srow(experiment, a, qa, tables, **factors),
                         srow(experiment, b, qb, tables, **factors)]}


def variants(experiment, engine, pairs, tables=8):
    return {experiment: [srow(experiment, engine, q, tables, **f) for f, q in pairs]}


def rw(mem, inno, cores, waited_mem=300, waited_inno=0):
    summ = {"read_write": [srow("read_write", "MEMORY", mem, 1, cores),
                           srow("read_write", "InnoDB", inno, 1, cores)]}
    st = {"status": {"read_write": [
        status("MEMORY", "Table_locks_waited", waited_mem),
        status("MEMORY", "Table_locks_immediate", 700),
        status("InnoDB", "Table_locks_waited", waited_inno),
        status("InnoDB", "Table_locks_immediate", 1000)]}}
    return summ, st


def tables_rows(q1, q8, cores):
    return {"point_select": [srow("point_select", e, q, t, cores)
                             for e in ("InnoDB", "MyISAM") for t, q in ((1, q1), (8, q8))]}


PS_FAST = {"ps": "on", "pfs": "off"}
PS_BASE = {"ps": "off", "pfs": "on"}
R, NR, NM = claims.REPRODUCED, claims.NOT_REPRODUCED, claims.NOT_MEASURABLE

# (claim id, summaries, extras, claims config, expected verdict)
CASES = [
    ("A2-RO-innodb-3x-oltp-ro", ro(30000, 9000), None, {}, R),
    ("A2-RO-innodb-3x-oltp-ro", ro(15000, 9000), None, {}, NR),
    ("A2-RO-innodb-3x-oltp-ro", ro(30000, 9000, trx="off"), None, {}, NM),   # no trx-on cells
    ("A2-RO-innodb-3x-oltp-ro", ro(30000, 9000, trx=""), None, {}, R),       # trx not varied
    ("A2-RO-innodb-3x-oltp-ro", ro(25000, 9000), None, {"ratio_tolerance": 0.2}, R),  # 2.78 >= 2.4
    ("A2-RO-innodb-3x-oltp-ro", ro(25000, 9000), None, {"ratio_tolerance": 0.0}, NR),
    ("A2-RO-innodb-3x-simple-ranges", two("simple_ranges", "InnoDB", 50000, "MyISAM", 10000), None, {}, R),
    ("A2-RO-innodb-3x-simple-ranges", two("simple_ranges", "InnoDB", 5000, "MyISAM", 4000), None, {}, NR),
    ("A2-RO-innodb-3x-simple-ranges", two("simple_ranges", "InnoDB", 5000, "MEMORY", 4000), None, {}, NM),
    ("A2-RO-innodb-3x-point-select", two("point_select", "InnoDB", 60000, "MyISAM", 10000), None, {}, R),
    ("A2-RO-innodb-3x-point-select", two("point_select", "InnoDB", 6000, "MyISAM", 10000), None, {}, NR),
    ("A2-RO-innodb-3x-point-select", two("point_select", "InnoDB", 6000, "MyISAM", 10000, tables=8),
     None, {}, NM),
    ("A3-OLTP-RO-innodb-peak", a3ro(215, 200, 250, 220), None, {}, R),
    ("A3-OLTP-RO-innodb-peak", a3ro(215, 200, 200, 220), None, {}, NR),
    ("A3-OLTP-RO-innodb-peak", ro(215, 200, tables=1), None, {}, NM),
    ("A3-OLTP-RO-innodb-peak", a3ro(215, 200, 250, 220), None, {"win_margin": 0.1}, NR),
    ("A3-SR-innodb-much-faster", two("simple_ranges", "InnoDB", 170, "MyISAM", 95, tables=8), None, {}, R),
    ("A3-SR-innodb-much-faster", two("simple_ranges", "InnoDB", 120, "MyISAM", 100, tables=8), None, {}, NR),
    ("A3-SR-innodb-much-faster", two("simple_ranges", "InnoDB", 170, "MyISAM", 95, tables=1), None, {}, NM),
    ("A3-SR-innodb-much-faster", two("simple_ranges", "InnoDB", 170, "MyISAM", 95, tables=8), None,
     {"much_faster": 2}, NR),
    ("A3-TRX-beats-autocommit", a3ro(215, 200, 250, 220), None, {}, R),
    ("A3-TRX-beats-autocommit", a3ro(215, 230, 250, 220), None, {}, NR),
    ("A3-TRX-beats-autocommit", a3ro(None, None, 250, 220), None, {}, NM),
    ("A3-PS-PFS-off-faster", {"ps_pfs": variants("ps_pfs", "InnoDB", [(PS_FAST, 250), (PS_BASE, 210)])["ps_pfs"]
                              + variants("ps_pfs", "MyISAM", [(PS_FAST, 430), (PS_BASE, 360)])["ps_pfs"]},
     None, {}, R),
    ("A3-PS-PFS-off-faster", variants("ps_pfs", "InnoDB", [(PS_FAST, 200), (PS_BASE, 210)]), None, {}, NR),
    ("A3-PS-PFS-off-faster", variants("ps_pfs", "InnoDB", [(PS_FAST, 250)]), None, {}, NM),
    ("A3-SPIN-256-slightly-lower", variants("spin_wait", "InnoDB", [({"spin_wait_delay": 256}, 200),
                                                                   ({"spin_wait_delay": 96}, 210)]),
     None, {}, R),
    ("A3-SPIN-256-slightly-lower", variants("spin_wait", "InnoDB", [({"spin_wait_delay": 256}, 230),
                                                                   ({"spin_wait_delay": 96}, 210)]),
     None, {}, NR),
    ("A3-SPIN-256-slightly-lower", variants("spin_wait", "InnoDB", [({"spin_wait_delay": 256}, 100),
                                                                   ({"spin_wait_delay": 96}, 210)]),
     None, {}, NR),  # far lower is not "slightly"
    ("A3-SPIN-256-slightly-lower", variants("spin_wait", "InnoDB", [({"spin_wait_delay": 6}, 200),
                                                                   ({"spin_wait_delay": 96}, 210)]),
     None, {}, NM),
    ("A3-RO-innodb-read-only-faster", variants("read_only", "InnoDB", [({"innodb_read_only": "on"}, 450),
                                                                      ({"innodb_read_only": "off"}, 210)]),
     None, {}, R),
    ("A3-RO-innodb-read-only-faster", variants("read_only", "InnoDB", [({"innodb_read_only": "on"}, 200),
                                                                      ({"innodb_read_only": "off"}, 210)]),
     None, {}, NR),
    ("A3-RO-innodb-read-only-faster", variants("read_only", "InnoDB", [({"innodb_read_only": "off"}, 210)]),
     None, {}, NM),
    ("B1-HASH-range-full-scan", two("simple_ranges", "MEMORY", 2, "MEMORY-BTREE", 6000),
     {"explain": {"simple_ranges": [explain("MEMORY", "ALL", 1000), explain("MEMORY-BTREE", "range", 99)]}},
     {}, R),
    ("B1-HASH-range-full-scan", two("simple_ranges", "MEMORY", 2, "MEMORY-BTREE", 6000),
     {"explain": {"simple_ranges": [explain("MEMORY", "range", 99), explain("MEMORY-BTREE", "range", 99)]}},
     {}, NR),
    ("B1-HASH-range-full-scan", two("simple_ranges", "MEMORY", 2, "MEMORY-BTREE", 6000),
     {"explain": {"simple_ranges": [explain("MEMORY", "ALL", 1000)]}}, {}, NM),
    ("B1-HASH-range-throughput", two("simple_ranges", "MEMORY", 2, "MEMORY-BTREE", 6000), None, {}, R),
    ("B1-HASH-range-throughput", two("simple_ranges", "MEMORY", 6782, "MEMORY-BTREE", 6555), None, {}, NR),
    ("B1-HASH-range-throughput", two("simple_ranges", "InnoDB", 6782, "MEMORY-BTREE", 6555), None, {}, NM),
    ("B2-MEMORY-8pct-over-InnoDB", two("oltp_ro", "MEMORY-BTREE", 108, "InnoDB", 100), None, {}, R),
    ("B2-MEMORY-8pct-over-InnoDB", two("oltp_ro", "MEMORY-BTREE", 154, "InnoDB", 100), None, {}, NR),
    ("B2-MEMORY-8pct-over-InnoDB", two("oltp_ro", "MEMORY-BTREE", 154, "MyISAM", 100), None, {}, NM),
    ("B2-MEMORY-8pct-over-InnoDB", two("oltp_ro", "MEMORY-BTREE", 125, "InnoDB", 100), None,
     {"memory_gain_tolerance": 0.2}, R),
    ("B3-MEMORY-writes-limited", *rw(5000, 12000, cores=4), {}, R),
    ("B3-MEMORY-writes-limited", *rw(18000, 12000, cores=4), {}, NR),
    ("B3-MEMORY-writes-limited", *rw(5000, 12000, cores=4, waited_mem=0, waited_inno=50), {}, NR),
    ("B3-MEMORY-writes-limited", *rw(5000, 12000, cores=1), {}, NM),
    ("B3-MEMORY-writes-limited", *rw(5000, 12000, cores=1), {"contention_min_cores": 1}, R),
    ("B4-single-table-bottleneck", tables_rows(10000, 30000, cores=8), None, {}, R),
    ("B4-single-table-bottleneck", tables_rows(30000, 10000, cores=8), None, {}, NR),
    ("B4-single-table-bottleneck", tables_rows(10000, 30000, cores=1), None, {}, NM),
]


@pytest.mark.parametrize("cid, summaries, extras, cfg, expected", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_claim_verdict_paths(cid, summaries, extras, cfg, expected):
    res = [c for c in claims.evaluate(summaries, {"claims": cfg}, extras) if c["id"] == cid]
    assert len(res) == 1
    assert res[0]["verdict"] == expected, res[0]["measured"]
    assert res[0]["measured"]


def test_every_claim_has_all_three_verdict_paths():
    seen = {}
    for cid, *_, expected in CASES:
        seen.setdefault(cid, set()).add(expected)
    covered_elsewhere = {"A3-PS-myisam-wins", "A3-PS-8-tables-scale"}  # tests above
    for c in claims.CLAIMS:
        if c.id in covered_elsewhere:
            continue
        assert seen.get(c.id) == {R, NR, NM}, c.id


def test_not_measurable_says_why():
    summ, st = rw(5000, 12000, cores=1)
    c = {r["id"]: r for r in claims.evaluate(summ, {}, st)}["B3-MEMORY-writes-limited"]
    assert c["measured"] == (
        "MEMORY 5.00K vs InnoDB 12.0K QPS (0.42×); table-lock waits MEMORY 30.0%, "
        "InnoDB 0.0%; telling table-lock serialisation from a CPU limit needs mysqld "
        "on ≥ 2 cores, measured on 1 core")


def test_claim_ids_unique_and_macros_letters():
    ids = [c.id for c in claims.CLAIMS]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Za-z]+", c.macro) for c in claims.CLAIMS)


# --- generated LaTeX compiles -------------------------------------------------

needs_latex = pytest.mark.skipif(not shutil.which("pdflatex"), reason="pdflatex not installed")


def pdflatex(cwd, name):
    return subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name],
                          cwd=cwd, capture_output=True, text=True, timeout=180)


@needs_latex
@pytest.mark.parametrize("smoke", [False, True])
def test_generated_tex_compiles(tmp_path, smoke):
    smoke_report(tmp_path) if smoke else run_report(tmp_path)
    (tmp_path / "doc.tex").write_text(r"""\documentclass{article}
\usepackage[T1]{fontenc}\usepackage{booktabs,tabularx}
\input{macros.tex}
\begin{document}
\PSBestInnoDB{} \PSRatioMyISAMInnoDB{} \HostCPU{} \ConfigProfile{} \CoresList{}
\MemoryInnoDBGainPct{} \TopWaitInnoDB{} \DesignOltpRo{} \ifHasOltpRo yes\else no\fi
\input{provenance.tex}
\input{claims.tex}
\input{explain.tex}
\input{unsupported.tex}
\end{document}
""")
    proc = pdflatex(tmp_path, "doc.tex")
    assert proc.returncode == 0, proc.stdout[-2000:]


@needs_latex
@pytest.mark.parametrize("disabled", [(), ("read_write", "ps_pfs", "spin_wait", "point_select")])
def test_paper_compiles_with_generated_inputs(tmp_path, disabled):
    """paper/main.tex with the smoke fixture's generated files (and placeholder
    figures): no undefined macro, and a profile without some experiments still
    compiles, saying they were not run."""
    cfg = report.read_yaml(SMOKE / "config.yaml")
    for e in disabled:
        cfg["experiments"][e]["enabled"] = False
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    paper = tmp_path / "paper"
    paper.mkdir()
    smoke_report(paper / "generated", tmp_path / "c.yaml")
    shutil.copy(ROOT / "paper" / "main.tex", paper / "main.tex")
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "dummy.tex").write_text(
        r"\documentclass{article}\pagestyle{empty}\begin{document}x\end{document}")
    assert pdflatex(figures, "dummy.tex").returncode == 0
    enabled = set(cfg["experiments"]) - set(disabled)
    for name in report.FIGURES:
        if report.figure_inputs(name, enabled):
            shutil.copy(figures / "dummy.pdf", figures / f"{name}.pdf")
    proc = pdflatex(paper, "main.tex")
    assert proc.returncode == 0, proc.stdout[-3000:]
    log = (paper / "main.log").read_text(errors="replace")
    assert "Undefined control sequence" not in log
    text = subprocess.run(["pdftotext", str(paper / "main.pdf"), "-"], capture_output=True,
                          text=True).stdout if shutil.which("pdftotext") else ""
    if disabled and text:
        assert "was not run in this profile" in text


# --- R figure: fig_point_select.R on the invented fixture --------------------------

needs_r = pytest.mark.skipif(not shutil.which("Rscript"), reason="Rscript not installed")


def rscript(*args):
    return subprocess.run(["Rscript", str(FIG_SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@needs_r
def test_figure_pdf(tmp_path):
    out = tmp_path / "fig" / "a3_point_select.pdf"
    proc = rscript(SUMMARY, out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"%PDF"
    assert out.stat().st_size > 5000
    assert [p.name for p in out.parent.iterdir()] == ["a3_point_select.pdf"]


@needs_r
def test_figure_single_users_and_cores(tmp_path):
    lines = SUMMARY.read_text().splitlines(keepends=True)
    subset = tmp_path / "s.csv"
    subset.write_text(lines[0] + "".join(ln for ln in lines[1:]
                                         if ",2,16,3," in ln and ",InnoDB,1," not in ln))
    proc = rscript(subset, tmp_path / "f.pdf")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"


@needs_r
@pytest.mark.parametrize("case", ["missing_column", "no_rows"])
def test_figure_bad_input(tmp_path, case):
    lines = SUMMARY.read_text().splitlines()
    bad = tmp_path / "bad.csv"
    if case == "missing_column":  # drop the last column, `unstable`
        bad.write_text("\n".join(ln.rsplit(",", 1)[0] for ln in lines) + "\n")
    else:
        bad.write_text(lines[0] + "\n")
    out = tmp_path / "f.pdf"
    proc = rscript(bad, out)
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "error" in proc.stderr
    assert not out.exists()


def test_builds_table_lists_each_build_and_absent_engines():
    rows = [{"build": "b1", "engine": "InnoDB", "qps_median": 1000.0},
            {"build": "b1", "engine": "MyISAM", "qps_median": 900.0},
            {"build": "b2", "engine": "InnoDB", "qps_median": 1500.0}]
    tex = report.builds_tex(rows, {"builds": [{"name": "b1", "server_version": "5.6.24"}]})
    line_b2 = next(l for l in tex.splitlines() if "b2" in l)
    assert r"\emph{absent}" in line_b2 and "1{,}500" in line_b2
    assert "5.6.24" in next(l for l in tex.splitlines() if "{b1}" in l)
    assert "not measured" in report.builds_tex([], {})
