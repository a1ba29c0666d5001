"""Tests of harness.report (the R figures: test_figures.py; the verdicts: test_claims.py).

Input: tests/fixtures/raw (real smoke cells on MySQL 5.6.24 and, for the
build experiments, MariaDB 10.11; one core; README there) tidied by this
checkout through `python -m harness` (test_retidy_fixture.retidy), so the
report is tested on what the pipeline really writes. Counts are taken from
the fixture's cell directories, not typed in.
"""
from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from harness.analysis import claims as C
from harness import report
from harness.analysis import tidyread as T
from harness.report import deviations, latex, tables
from harness import studies
from test_claims import runs, write_tidy
from test_retidy_fixture import RAW, retidy

ROOT = Path(__file__).resolve().parents[2]
# every recorded cell directory <study>/<experiment>/<cell>_r<rep>: one run each
RECORDED = sorted(d for d in RAW.glob("*/*/*") if d.is_dir())


def recorded_cells() -> dict:
    """{(experiment, cell name without its repetition): number of runs} of the fixture."""
    out = {}
    for d in RECORDED:
        key = (d.parent.name, d.name.rsplit("_r", 1)[0])
        out[key] = out.get(key, 0) + 1
    return out


def recorded_builds() -> set:
    return {d.name.split("_", 1)[0] for d in RECORDED}


def ratio_with_interval(row) -> str:
    """A claim row's ratio and interval as the report prints them ('0.81 [0.77, 0.86]')."""
    return f"{float(row['ratio']):.2f} [{float(row['ratio_lo']):.2f}, {float(row['ratio_hi']):.2f}]"


def claim_row(real, claim_id) -> dict:
    (row,) = [r for r in read_claims_csv(real["generated"]) if r["claim"] == claim_id]
    return row

GENERIC_MACROS = [
    "NumCells", "NumRuns", "NumReps", "NumUnstable", "NumExperiments", "ExperimentsNotRun", "CoresAll",
    "MaxCores", "PrimaryBuild", "PrimaryBuildVersion", "BuildName", "BuildVersion", "HostCPU", "HostCPUs",
    "HostKernel", "SysbenchVersion", "PlacementMechanism", "PlacementBackend", "ClientMemcg", "ConfigProfile", "DurationS",
    "WarmupS", "UsersSweep", "RandSeed", "RandType", "CVThreshold", "NumUnsupported", "NumClaims", "NumClaimsReproduced",
    "NumClaimsNotReproduced", "NumClaimsInconclusive", "NumClaimsNotMeasurable", "ClaimLevel",
    "RepsNeeded", "ContentionCores", "IntervalMethod", "CellCoverage", "MemoryCheck",
]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return retidy(RAW, tmp_path_factory.mktemp("report_real"))


@pytest.fixture()
def tidy_copy(real, tmp_path):
    d = tmp_path / "tidy"
    shutil.copytree(real["tidy"], d)
    return d


def run_report(out, tidy, config=None):
    argv = ["--tidy-dir", str(tidy), "--config", str(config or Path(tidy) / "config.resolved.yaml"),
            "--out", str(out)]
    assert report.main(argv) == 0
    return Path(out)


def write_config(tmp_path, cfg):
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg))
    return path


def macros_of(path):
    text = (Path(path) / "macros.tex").read_text()
    return re.findall(r"\\newcommand\{\\([^}]*)\}\{(.*)\}$", text, re.M)


def flags_of(path):
    return dict(re.findall(r"^\\(Has\w+?)(true|false)$", (Path(path) / "macros.tex").read_text(), re.M))


def read_claims_csv(path):
    with open(Path(path) / "claims.csv", newline="") as f:
        return list(csv.DictReader(f))


def config_of(real):
    return T.read_yaml(real["tidy"] / "config.resolved.yaml")


# --- outputs and macros ----------------------------------------------------------------

def test_outputs_written_without_temp_files(real):
    assert sorted(p.name for p in real["generated"].iterdir()) == sorted(report.OUTPUTS)


def test_every_macro_defined_exactly_once_letters_only(real):
    names = [n for n, _ in macros_of(real["generated"])]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[A-Za-z]+", n) for n in names)
    for name in GENERIC_MACROS:
        assert name in names, name
    for c in studies.claims():
        if c.macro:
            for kind in ("Verdict", "Ratio", "Measured"):
                assert kind + c.macro in names
    for f in report.FIGURES.values():
        assert "Cov" + f["flag"] in names


def test_macro_values_from_the_real_cells(real):
    m = dict(macros_of(real["generated"]))
    cfg, cells = config_of(real), recorded_cells()
    recorded = {e for e, _ in cells}
    # every recorded experiment ran; the profile's other enabled experiments are named as not run
    assert m["NumExperiments"] == str(len(recorded))
    not_run = {e for e, spec in cfg["experiments"].items() if spec["enabled"]} - recorded
    assert "mdl_hash" in not_run
    assert set(re.split(r", | and ", m["ExperimentsNotRun"].replace(r"\_", "_"))) == not_run
    assert m["NumCells"] == str(len(cells)) and m["NumRuns"] == str(len(RECORDED)) and m["NumReps"] == "1--2"
    # one repetition never shows a cell stable; two may agree within the CV threshold
    single = sum(1 for n in cells.values() if n == 1)
    assert single < len(cells) and single <= int(m["NumUnstable"]) <= len(cells)
    assert m["ConfigProfile"] == "smoke" and m["PrimaryBuild"].startswith(r"\texttt{mysql-")
    assert m["PrimaryBuildVersion"] == "5.6.24"
    assert m["ClaimLevel"] == "90" and m["RepsNeeded"] == "5" and m["ContentionCores"].startswith("4 (A1")
    assert "signed-rank" in m["IntervalMethod"] and "Bonferroni" in m["IntervalMethod"]
    assert "sign-test" in m["IntervalMethod"] and "PowerCaption" in m
    assert m["CovPointSelect"] == r"coverage 50\%"    # two repetitions: [min, max] covers the median half the time
    assert m["CellCoverage"] == r"0--50\%"
    # every throughput cell was recorded with the memory check (steps cells have none)
    throughput = sum(1 for e, _ in cells if cfg["experiments"][e]["kind"] == "throughput")
    assert throughput < len(cells)
    assert m["MemoryCheck"].startswith(f"the data fit in the server's buffers in every one of the {throughput} "
                                       f"cells (checked per cell;"), m["MemoryCheck"]
    assert m["MemoryHashType"] == "ALL" and m["MemoryBtreeType"] == "range"
    assert m["MemoryHashRows"] == "1000" and m["MemoryTableSize"] == "1{,}000"
    assert m["MemoryWorkBound"] == "5.2"
    assert m["KeyCachesPerTable"] == "8" and m["SpinDelays"] == "6, 96 and 256"
    counts = [int(m[k]) for k in ("NumClaimsReproduced", "NumClaimsNotReproduced",
                                  "NumClaimsInconclusive", "NumClaimsNotMeasurable")]
    assert sum(counts) == int(m["NumClaims"]) == len(read_claims_csv(real["generated"]))
    assert m["VerdictMemoryHashScan"] == "reproduced"
    # two paired blocks, a peak over users 1 and 4 a side: each pair's [min, max] covers half
    # the time, so the max-min bound over two loads a side guarantees no coverage at all
    ps = claim_row(real, "A3-PS-myisam-wins")
    assert ps["n"] == "2/2" and ps["coverage"] == "0"
    assert m["RatioPSMyISAMWins"] == ratio_with_interval(ps) + r" (0\% coverage)"
    assert m["RatioMdlHash"] == "n/a" and m["VerdictMdlHash"] == "not measurable here"


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


def test_small_formatters():
    with pytest.raises(ValueError):
        report.macro("PSBest2", "1")
    assert report.fmt_int(12345.4) == "12{,}345" and report.fmt_int(None) == "n/a"
    assert report.fmt_pct(8.2, signed=True) == "+8" and report.fmt_pct(-3.4, signed=True) == "$-$3"
    assert latex.macro_name("A3-PS-8") == "AThreePSEight"
    assert latex.fmt_coverage(0.5625) == r"56\%"


# --- provenance --------------------------------------------------------------------------

def test_provenance_table(real):
    tex = (real["generated"] / "provenance.tex").read_text()
    # a longtable: it breaks across pages, its caption and label inside
    assert r"\begin{longtable}" in tex and r"\bottomrule" in tex and r"\label{tab:provenance}" in tex
    assert "dfb30bc3cde8" in tex and "dfb30bc3cde88" not in tex
    assert "cgroup-v1" in tex and "smoke" in tex
    for script in ("point_select.lua", "read_only.lua", "read_write.lua"):
        assert report.tex_tt(script) in tex, script
    builds = {b["name"] for p in real["tidy"].glob("*_provenance.json") for b in json.loads(p.read_text())["builds"]}
    assert builds == recorded_builds() and len(builds) >= 2
    assert tex.count("Build}") == len(builds)
    cells = sum(json.loads(p.read_text())["cells"] for p in real["tidy"].glob("*_provenance.json"))
    assert f"measured runs & {cells}" in tex


@pytest.mark.parametrize("commit", ["0123456789abcdef", ["0123456789abcdef"]])
def test_git_commit_string_or_list(commit):
    tex = tables.provenance_tex({"git_commit": commit}, {})
    assert r"git commit & \texttt{01234567\allowbreak{}89abcdef}\\" in tex


def test_provenance_says_where_sysbench_was_charged_for_memory():
    from harness.analysis import tidywrite
    base = {"build": {"name": "b", "version": "5.6.24", "provider": "npm", "mysqld_sha256": "0" * 64},
            "server": {"version": "5.6.24"}, "harness": {"git_commit": "c"},
            "host": {"cpu_model": "x", "n_cpus": 2, "kernel": "k", "governor": "g", "smt": "off"},
            "placement": {"backend": "docker", "mechanism": "docker-cpuset"}}
    ms = [{**base, "kind": "throughput", "driver": {"tool": "sysbench", "client_memcg": v}}
          for v in ("shared", "apart")] + [{**base, "kind": "throughput", "driver": {"tool": "sysbench"}}]
    prov = tidywrite.provenance(ms, "smoke")
    assert [p.get("client_memcg") for p in prov["placement"]] == ["shared", "apart", None]
    tex = tables.provenance_tex(prov, {})
    assert "sysbench's memory cgroup: shared" in tex and "sysbench's memory cgroup: apart" in tex


def test_empty_provenance_and_config_give_na():
    tex = tables.provenance_tex({}, {})
    assert "n/a" in tex and r"\end{longtable}" in tex


# --- claims --------------------------------------------------------------------------------

def test_claims_csv_and_table(real):
    rows = read_claims_csv(real["generated"])
    assert tuple(rows[0]) == C.HOST_CSV_FIELDS   # CSV_FIELDS and the host (one host here: no combined row)
    # a row per build: Study C's test_drive and A1's fts_builds ran on two builds each
    assert list(dict.fromkeys(r["claim"] for r in rows)) == [c.id for c in studies.claims()]
    assert all(r["verdict"] in C.VERDICTS for r in rows)
    assert C.invariant_violations(rows, 0.9) == []
    tex = (real["generated"] / "claims.tex").read_text()
    # one longtable that breaks across pages with its header repeated (no fixed-size floats)
    assert tex.count(r"\begin{longtable}") == 1 and r"\begin{table" not in tex
    assert r"\endfirsthead" in tex and r"\endhead" in tex
    assert tex.count("\\\\\n") >= len(rows)   # a row (ending \\) per claim and build
    assert r"\label{tab:claims}" in tex and "real coverage" in tex
    ps = claim_row(real, "A3-PS-myisam-wins")   # two paired blocks, a peak over two loads a side
    assert ratio_with_interval(ps) + r"\newline{\scriptsize 0\% coverage}" in tex
    assert r"1.71\newline{\scriptsize MyISAM 360K vs InnoDB 210K (1.71$\times$)}\newline{\scriptsize above the interval}" in tex
    assert r"not measurable here$^\dagger$\newline{\scriptsize (cores)}" in tex
    # one repetition, no unstable cell: C's steps claims (the throughput ones are gated on 1 core)
    assert r"inconclusive\newline{\scriptsize (one repetition)}" in tex
    (auto,) = [c.id for c in studies.claims() if c.macro == "OltpRoAuto"]   # one block: a ratio, no interval
    ratio = f"{float(claim_row(real, auto)['ratio']):.2f}"
    assert claim_row(real, auto)["n"] == "1/1"
    assert ratio + r"\newline{\scriptsize no interval (one repetition)}" in tex
    assert dict(macros_of(real["generated"]))["RatioOltpRoAuto"] == ratio + " (one repetition: no interval)"
    reasons = (real["generated"] / "reasons.tex").read_text()
    for r in rows:
        assert report.tex_tt(r["claim"]) in reasons


def test_short_reasons():
    row = {"verdict": C.INCONCLUSIVE, "reason": "ratio 1, interval ... straddles", "coverage": "0.95"}
    assert tables.short_reason(row, 0.9) == "interval straddles"
    assert tables.short_reason(dict(row, coverage="0.5"), 0.9) == "coverage 50% < 90%"
    assert tables.short_reason({"verdict": C.NOT_MEASURABLE, "reason": "scale: too small"}, 0.9) == "scale"
    assert tables.rule_text({"side": "within", "threshold": "1", "threshold_hi": "1.16"}) == "in [1, 1.16]"
    assert tables.rule_text({"side": ""}) == "pass/fail"


def test_study_verdict_table_says_not_measurable_once():
    """The claims not measurable here are one block under the table, grouped by what is
    missing, each claim once with what it needs; the findings count them, never list them."""
    from harness.report import studytables
    nm = C.NOT_MEASURABLE
    rows = [{"claim": "Z-a", "study": "Z1", "build": "b1", "verdict": nm,
             "reason": "cores: the mechanism needs mysqld on at least 16 hardware threads; measured on 1 core"},
            {"claim": "Z-b", "study": "Z1", "build": "b1", "verdict": nm,
             "reason": "cores: scaling of MyISAM needs mysqld on 4 and 8 cores; held on 1 core here"},
            {"claim": "Z-b", "study": "Z1", "build": "b2", "verdict": nm,
             "reason": "cores: scaling of MyISAM needs mysqld on 4 and 8 cores; held on 1 core here"},
            {"claim": "Z-c", "study": "Z1", "build": "", "verdict": nm, "reason": "data: no mdl_hash data"},
            {"claim": "Z-d", "study": "Z1", "build": "b1", "verdict": C.INCONCLUSIVE, "reason": "by design",
             "ratio": "1.5", "ratio_lo": "1.2", "ratio_hi": "1.9", "coverage": "0.9", "published": "2x"},
            {"claim": "Z-d", "study": "Z1", "build": "b2", "verdict": C.REPRODUCED, "reason": "",
             "ratio": "2.5", "ratio_lo": "2.2", "ratio_hi": "2.9", "coverage": "0.9", "published": "2x"}]
    mod = types.SimpleNamespace(NAME="z", TITLE="Study Z", CODES=("Z1",), CLAIMS=[])
    assert studytables.not_measurable_groups(rows) == [
        ("more cores than this host could give mysqld (mysqld had 1 core here)",
         [("Z-a", ">=16 cores"), ("Z-b", "4 and 8 cores")]),
        ("data this run does not have", [("Z-c", "no mdl_hash data")])]
    tex = studytables.claims_tex(rows, mod, 0.9)
    assert tex.count("ot measurable here") == 1 and tex.count(latex.tex_tt("Z-b")) == 1
    # Z-d: one row, each build's value and verdict in it (they differ)
    (row,) = [ln for ln in tex.splitlines() if ln.startswith(latex.tex_tt("Z-d"))]
    assert "1.50 [1.20, 1.90]" in row and "2.50 [2.20, 2.90]" in row and "reproduced" in row
    words = studytables.findings_tex(rows, mod)
    assert "not measurable" not in words and latex.tex_tt("Z-a") not in words
    assert "could not test 3 claims: 2 need more cores" in words and "1 needs data" in words


def test_empty_inputs_give_na_not_errors(tmp_path):
    from harness.analysis import tidywrite
    tidy = tmp_path / "tidy"
    tidy.mkdir()
    (tidy / "point_select_summary.csv").write_text(",".join(tidywrite.SUMMARY_FIELDS) + "\n")
    (tidy / "point_select.csv").write_text(",".join(tidywrite.RUN_FIELDS) + "\n")
    (tidy / "point_select_provenance.json").write_text("{}")
    (tmp_path / "c.yaml").write_text("")
    out = run_report(tmp_path / "gen", tidy, tmp_path / "c.yaml")
    m = dict(macros_of(out))
    assert m["HostCPU"] == m["CoresAll"] == m["NumReps"] == "n/a"
    assert {r["verdict"] for r in read_claims_csv(out)} == {C.NOT_MEASURABLE}
    assert "No EXPLAIN output" in (out / "explain.tex").read_text()
    assert "None:" in (out / "unsupported.tex").read_text()


def test_missing_tidy_dir_or_bad_level_is_an_error(tmp_path, real):
    with pytest.raises(SystemExit):
        report.main(["--tidy-dir", str(tmp_path / "nope"), "--config", str(real["tidy"] / "config.resolved.yaml"),
                     "--out", str(tmp_path / "gen")])
    cfg = config_of(real)
    cfg["claims"]["level"] = 95
    with pytest.raises(SystemExit):
        run_report(tmp_path / "gen", real["tidy"], write_config(tmp_path, cfg))
    assert not (tmp_path / "gen").exists()


def test_disabled_experiments_flags_and_stale_files_ignored(tmp_path, real):
    cfg = config_of(real)
    disabled = ("read_write", "ps_pfs", "spin_wait", "read_only", "key_cache", "build_compare", "test_drive")
    for e in disabled:
        cfg["experiments"][e]["enabled"] = False
    out = run_report(tmp_path / "gen", real["tidy"], write_config(tmp_path, cfg))
    flags = flags_of(out)
    assert flags["HasReadWrite"] == "false" and flags["HasFigKnobs"] == "false"
    assert flags["HasFigMemory"] == "true" and flags["HasFigPsPfs"] == "false" and flags["HasFigWaits"] == "true"
    assert flags["HasMdlHash"] == "false"
    m = dict(macros_of(out))
    assert m["NumExperiments"] == str(len({e for e, _ in recorded_cells()} - set(disabled)))
    by_id = {r["claim"]: r for r in read_claims_csv(out)}
    assert by_id["B3-MEMORY-writes-limited"]["reason"] == "experiment: read_write not run in this profile"
    assert r"\emph{not run in this profile}" in (out / "design.tex").read_text()


def test_several_builds(tmp_path, tidy_copy, real):
    """Two builds: one claim row per build, the table names the builds, macros join them."""
    for p in tidy_copy.glob("*.csv"):
        if p.name in ("unsupported.csv", "factors.csv") or p.name.startswith("build_compare"):
            continue
        lines = p.read_text().splitlines(keepends=True)
        p.write_text("".join(lines) + "".join(ln.replace("mysql-5.6.24", "mysql-5.5.9") for ln in lines[1:]))
    cfg = config_of(real)
    cfg["builds"] = ["mysql-5.6.24", "mysql-5.5.9"]
    out = run_report(tmp_path / "gen", tidy_copy, write_config(tmp_path, cfg))
    rows = read_claims_csv(out)
    per_build = [c for c in studies.claims() if not isinstance(c, C.BuildRatio)]
    with_data = {r["claim"] for r in rows if r["build"] == "mysql-5.5.9"}
    assert len(with_data) > 20 and with_data <= {c.id for c in per_build}
    assert r"{\scriptsize (\texttt{mysql-" in (out / "claims.tex").read_text()
    m = dict(macros_of(out))
    assert m["PrimaryBuild"].startswith(r"\texttt{mysql-\allowbreak{}5.\allowbreak{}6")
    assert "mysql-5.5.9)" in m["VerdictMemoryHashScan"]   # each verdict once, with its builds


# --- design, deviations, sections ------------------------------------------------------------

def test_design_table(real, tmp_path):
    tex = (real["generated"] / "design.tex").read_text()
    for e in config_of(real)["experiments"]:
        assert report.tex_tt(e) in tex, e
    assert report.tex_tt("mdl_hash") + " & A3: Point-Selects, MDL hash instances" in tex
    # mdl_hash is an experiment of the recorded profile without a recorded cell
    assert "mdl_hash" not in {e for e, _ in recorded_cells()}
    assert re.search(r"\\texttt\{mdl\\_\\allowbreak\{\}hash\} & [^\n]*\\emph\{not run in this profile\}", tex)
    assert "innodb\\_spin\\_wait\\_delay 6/96/256" in tex
    # a study experiment the profile does not have at all
    cfg = config_of(real)
    del cfg["experiments"]["mdl_hash"]
    out = run_report(tmp_path / "gen", real["tidy"], write_config(tmp_path, cfg))
    assert r"\emph{not an experiment of this profile}" in (out / "design.tex").read_text()


def test_deviations_table_is_generated_from_studies_factors_and_claims(real):
    tex = (real["generated"] / "deviations.tex").read_text()
    for mod in studies.all_studies().values():
        for aspect, studied, _ in mod.SETUP:
            assert report.tex_escape(aspect) in tex
    from harness.measure import factors
    for f in factors.FACTORS.values():
        assert report.tex_escape(f.words) in tex
    for c in studies.claims():
        if c.deviation:
            assert report.tex_escape(c.deviation) in tex
    hosts = {h["cpu_model"] for p in real["tidy"].glob("*_provenance.json")
             for h in json.loads(p.read_text()).get("hosts") or []}
    assert hosts and all(report.tex_escape(h) in tex for h in hosts)   # the recording host(s)
    assert "1 (mysqld and sysbench on disjoint CPUs; host backend" in tex and "1{,}000" in tex
    assert "1\\,s discarded warm-up, then 3\\,s" in tex
    assert "data in memory & not stated & the data fit in the server's buffers" in tex
    # the fixture's run predates groups (no users_on_one_server): a server per cell
    assert "server starts & not stated & one per cell" in tex


def test_memory_sentence_only_from_the_check(tmp_path, tidy_copy, real):
    from harness.analysis import tidywrite
    cfg = config_of(real)
    for p in tidy_copy.glob("*.csv"):
        if p.stem in cfg["experiments"]:
            with open(p, newline="") as f:
                rows = list(csv.DictReader(f))
            fields = list(rows[0]) + ["memory_fits", "data_bytes", "buffer_bytes"]
            for r in rows:
                r.update(memory_fits="True", data_bytes=str(3 * 2**20), buffer_bytes=str(128 * 2**20))
            with open(p, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
                w.writeheader()
                w.writerows(rows)
    tidy = T.load(tidy_copy, cfg)
    n = len(recorded_cells())
    assert deviations.memory_sentence(tidy) == (f"the data fit in the server's buffers in every one of the {n} cells "
                                            "(checked per cell; at most 3 MB of data, buffers up to 128 MB)")
    tidy.all_cells()[0].runs[0]["memory_fits"] = "False"
    assert deviations.memory_sentence(tidy).endswith(f"did not fit in 1 of {n} cells")
    tidy.all_cells()[1].runs[0]["memory_fits"] = ""    # a cell recorded without the check
    assert deviations.memory_sentence(tidy).endswith(f"did not fit in 1 of {n} cells and 1 of {n} cells were not checked")
    assert tidywrite  # the check reads run columns the tidy step adds from manifest['memory']


def test_preload_sentence_only_from_the_column(tidy_copy, real):
    """The deviations row on caches says what the cells' manifests said: the recorded fixture
    predates the preload (blank column: named as such), and read/not-read cells are counted."""
    cfg = config_of(real)
    tidy = T.load(tidy_copy, cfg)
    cells = [c for c in tidy.all_cells() if any("qps" in r for r in c.runs)]
    n = len(cells)
    assert n > 2
    assert deviations.preload_sentence(tidy) == (f"{n} cells were recorded before cells read their tables in "
                                                 "(an InnoDB cell's buffer pool then filled during its warm-up)")
    for c in cells:
        for r in c.runs:
            r["preloaded"] = "True"
    cells[0].runs[0]["preloaded"] = "False"
    got = deviations.preload_sentence(tidy)
    assert got.startswith(f"{n - 1} cells read their tables into memory before the warm-up")
    assert "; 1 cell read nothing in first" in got and "recorded before" not in got


def test_sections_follow_the_registry(real):
    tex = (real["generated"] / "sections.tex").read_text()
    assert re.findall(r'\\input\{"(.*)"\}', tex) == [str(studies.section_path(m)) for m in studies.all_studies().values()]


def test_a_study_plugs_in_with_one_registration(tmp_path, real, monkeypatch):
    """A study is a module: its claims, macros and section appear with no other change."""
    claim = C.EngineRatio(id="Z1-new-claim", study="Z1", statement="new", published="p",
                          experiments=("point_select",), experiment_name="point_select", tables=8,
                          a="MyISAM", b="InnoDB", rule=C.above(1.0), macro="ZNew")
    study = types.SimpleNamespace(NAME="z", TITLE="Study Z: new", SECTION="section.tex",
                                  __file__=str(tmp_path / "z" / "__init__.py"),
                                  EXPERIMENTS={"point_select": ("Z1", "again")}, CLAIMS=[claim],
                                  FIGURES={}, SETUP=[("zeta", "z", "users")],
                                  macros=lambda ctx, rows, fmt: [("ZNumber", "42")])
    monkeypatch.setitem(studies.all_studies(), "z", study)
    out = run_report(tmp_path / "gen", real["tidy"])
    assert read_claims_csv(out)[-1]["claim"] == "Z1-new-claim"
    m = dict(macros_of(out))
    assert m["ZNumber"] == "42" and m["VerdictZNew"] == "inconclusive"
    assert (out / "sections.tex").read_text().endswith(
        f'\\input{{"{tmp_path / "z" / "section.tex"}"}}\n')   # the new study's section comes last
    assert "zeta" in (out / "deviations.tex").read_text()


# --- EXPLAIN, builds, unsupported, figures table -------------------------------------------------

def test_explain_table(real):
    tex = (real["generated"] / "explain.tex").read_text()
    lines = {ln.split(" & ")[0]: ln for ln in tex.splitlines() if " & " in ln}
    assert " & ALL & " in lines["MEMORY"] and " & range & " in lines["MEMORY-BTREE"]
    assert [k for k in lines if k != "Engine"] == ["InnoDB", "MyISAM", "MEMORY", "MEMORY-BTREE"]


def test_unsupported_list(tmp_path, tidy_copy):
    (tidy_copy / "unsupported.csv").write_text(
        "experiment,build,engine,variant,reason\n"
        "ps_pfs,mariadb-10.2.11,InnoDB,ps-on.pfs-off,performance_schema_x is not an option\n"
        "other,b,e,v,not an experiment of this profile\n")
    out = run_report(tmp_path / "gen", tidy_copy)
    tex = (out / "unsupported.tex").read_text()
    assert r"\begin{itemize}" in tex and tex.count("\\item ") == 1
    assert r"performance\_schema\_x" in tex
    assert dict(macros_of(out))["NumUnsupported"] == "1"


def test_builds_table_lists_each_build_and_absent_engines(tmp_path):
    d = write_tidy(tmp_path / "t", {"bc": runs("InnoDB", [1000, 1002], build="b1", experiment="bc")
                                    + runs("MyISAM", [900, 901], build="b1", experiment="bc")
                                    + runs("InnoDB", [1500, 1501], build="b2", experiment="bc")})
    cells = T.load(d, {}).experiment("bc").cells
    tex = tables.builds_tex(cells, {"builds": [{"name": "b1", "server_version": "5.6.24"}]})
    line_b2 = next(ln for ln in tex.splitlines() if "{b2}" in ln)
    assert r"\emph{absent}" in line_b2 and "1{,}500" in line_b2
    assert "5.6.24" in next(ln for ln in tex.splitlines() if "{b1}" in ln)
    assert "not measured" in tables.builds_tex([], {})


def test_keycaches_with_repeated_column_name(tmp_path):
    p = tmp_path / "k.csv"
    p.write_text("variant,key_cache,table,key_cache\nkc-pertable,per_table,sbtest1,sbtest1_kc\n")
    assert T.read_csv(p) == [{"variant": "kc-pertable", "key_cache": "per_table", "table": "sbtest1",
                              "key_cache#2": "sbtest1_kc"}]


def test_figure_inputs_follow_enabled_experiments():
    assert report.figure_inputs("b_memory", {"oltp_ro"}) == ["data/tidy/oltp_ro_summary.csv",
                                                             "data/tidy/factors.csv",
                                                             "data/tidy/published.csv"]
    assert report.figure_inputs("a3_knobs", {"oltp_ro"}) == []
    assert report.figure_inputs("a3_timeseries", {"point_select"}, "t") == ["t/point_select_intervals.csv"]
    for name, f in report.FIGURES.items():
        assert (ROOT / f["path"]).is_file() and Path(f["path"]).name == f["script"], name
        assert re.fullmatch(r"[A-Za-z]+", f["flag"]) and f["study"] in studies.all_studies()


def test_factor_table_csv():
    from harness.measure import factors
    rows = list(csv.DictReader(report.factor_table_csv().splitlines()))
    assert [r["name"] for r in rows] == list(factors.FACTORS)
    assert all(r["values"].split("|") == [str(v) for v in factors.FACTORS[r["name"]].values] for r in rows)


# --- generated LaTeX compiles -------------------------------------------------------------------

needs_latex = pytest.mark.skipif(not shutil.which("pdflatex"), reason="pdflatex not installed")


def pdflatex(cwd, name):
    return subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name],
                          cwd=cwd, capture_output=True, text=True, timeout=180)


@needs_latex
def test_generated_tex_compiles(real, tmp_path):
    for p in real["generated"].iterdir():
        shutil.copy(p, tmp_path / p.name)
    (tmp_path / "doc.tex").write_text(r"""\documentclass{article}
\usepackage[T1]{fontenc}\usepackage{booktabs,tabularx,longtable}
\input{macros.tex}
\begin{document}
\NumCells{} \HostCPU{} \ConfigProfile{} \CoresAll{} \IntervalMethod{} \MemoryCheck{}
\RatioPSMyISAMWins{} \VerdictPSMyISAMWins{} \MeasuredWaitTrxSys{} \DesignOltpRo{}
\ifHasOltpRo yes\else no\fi
\input{provenance.tex}
\input{claims.tex}
\input{reasons.tex}
\input{design.tex}
\input{deviations.tex}
\input{explain.tex}
\input{builds.tex}
\input{unsupported.tex}
\end{document}
""")
    proc = pdflatex(tmp_path, "doc.tex")
    assert proc.returncode == 0, proc.stdout[-2000:]


@needs_latex
@pytest.mark.parametrize("disabled", [(), ("read_write", "ps_pfs", "spin_wait", "point_select")])
def test_paper_compiles_with_generated_inputs(real, tmp_path, disabled):
    """paper/main.tex and the study sections with the generated files (and placeholder
    figures): no undefined macro, and a profile without some experiments still compiles,
    saying they were not run."""
    cfg = config_of(real)
    for e in disabled:
        cfg["experiments"][e]["enabled"] = False
    paper = tmp_path / "paper"
    paper.mkdir()
    run_report(paper / "generated", real["tidy"], write_config(tmp_path, cfg))
    shutil.copy(ROOT / "paper" / "main.tex", paper / "main.tex")
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "dummy.tex").write_text(r"\documentclass{article}\pagestyle{empty}\begin{document}x\end{document}")
    assert pdflatex(figures, "dummy.tex").returncode == 0
    enabled = {e for e, s in cfg["experiments"].items() if s.get("enabled", True)}
    for name in report.FIGURES:
        if report.figure_inputs(name, enabled):
            shutil.copy(figures / "dummy.pdf", figures / f"{name}.pdf")
    for name in report.PAPER_FIGURES:   # drawn from the generated claims table, always
        shutil.copy(figures / "dummy.pdf", figures / f"{name}.pdf")
    proc = pdflatex(paper, "main.tex")
    assert proc.returncode == 0, proc.stdout[-3000:]
    log = (paper / "main.log").read_text(errors="replace")
    assert "Undefined control sequence" not in log
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(paper / "main.pdf"), "-"], capture_output=True,
                              text=True).stdout
        assert "not checked" in text and "coverage" in text
        if disabled:
            assert "was not run in this profile" in text


def test_one_repetition_figure_caption_says_no_interval():
    from harness.report import macros as RM
    assert RM.figure_coverage((0.0, 0.0)) == "one repetition: no interval"
    assert RM.figure_coverage((0.5, 0.75)) == r"coverage 50--75\%"


def test_a_verdict_over_several_builds_is_said_once():
    from harness.report import macros as RM
    rows = [{"verdict": "not measurable here", "build": b} for b in ("a", "b", "c")]
    rows.append({"verdict": "reproduced", "build": "d"})
    assert RM.verdicts_text(rows) == "not measurable here (a, b, c); reproduced (d)"
