"""Tests of harness.report, harness.claims and workflow/R/fig_point_select.R.

Fixtures in tests/fixtures/report/ are small invented but plausible data:
one build, InnoDB and MyISAM, 1 and 8 tables, 1 and 2 cores, 8..64 users,
3 repetitions; MyISAM wins at 8 tables and 8 tables scale better than 1.
"""

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import claims, report

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "report"
SUMMARY = FIX / "point_select_summary.csv"
FIG_SCRIPT = ROOT / "workflow" / "R" / "fig_point_select.R"

REQUIRED_MACROS = [
    "PSBestInnoDB", "PSBestMyISAM", "PSRatioMyISAMInnoDB", "PSBestCores",
    "NumCells", "NumReps", "UsersMax", "CoresList", "BuildVersion", "HostCPU",
    "HostKernel", "HostCPUs", "SysbenchVersion", "PlacementMechanism",
    "ConfigProfile", "DurationS", "NumUnstable",
]


def run_report(out, summary=SUMMARY):
    argv = ["--summary", str(summary), "--runs", str(FIX / "point_select.csv"),
            "--provenance", str(FIX / "provenance.json"),
            "--config", str(FIX / "config.yaml"), "--out", str(out)]
    assert report.main(argv) == 0
    return out


def macros_of(path):
    text = (path / "macros.tex").read_text()
    return re.findall(r"\\newcommand\{\\([^}]*)\}\{(.*)\}$", text, re.M)


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


# --- report.py -------------------------------------------------------------

def test_outputs_written_without_temp_files(tmp_path):
    out = run_report(tmp_path / "gen")
    assert sorted(p.name for p in out.iterdir()) == [
        "claims.csv", "claims.tex", "macros.tex", "provenance.tex"]


def test_every_macro_defined_exactly_once(tmp_path):
    names = [n for n, _ in macros_of(run_report(tmp_path))]
    for name in REQUIRED_MACROS:
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


def test_engine_without_data_gives_na(tmp_path):
    only_innodb = tmp_path / "s.csv"
    with open(SUMMARY) as f, open(only_innodb, "w") as g:
        lines = f.readlines()
        g.writelines([lines[0]] + [ln for ln in lines[1:] if ",InnoDB," in ln])
    m = dict(macros_of(run_report(tmp_path / "gen", only_innodb)))
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
])
def test_tex_escape(raw, tex):
    assert report.tex_escape(raw) == tex


def test_macro_name_must_be_letters():
    with pytest.raises(ValueError):
        report.macro("PSBest2", "1")


def test_fmt_int():
    assert report.fmt_int(12345.4) == "12{,}345"
    assert report.fmt_int(None) == "n/a"


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
    with open(out / "claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ["A3-PS-myisam-wins", "A3-PS-8-tables-scale"]
    assert all(r["verdict"] in claims.VERDICTS for r in rows)
    assert r"A3-\allowbreak{}PS-\allowbreak{}myisam-" in (out / "claims.tex").read_text()


# --- claims.py ---------------------------------------------------------------

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


# --- generated LaTeX compiles -------------------------------------------------

@pytest.mark.skipif(not shutil.which("pdflatex"), reason="pdflatex not installed")
def test_generated_tex_compiles(tmp_path):
    run_report(tmp_path)
    (tmp_path / "doc.tex").write_text(r"""\documentclass{article}
\usepackage[T1]{fontenc}\usepackage{booktabs,tabularx}
\input{macros.tex}
\begin{document}
\PSBestInnoDB{} \PSRatioMyISAMInnoDB{} \HostCPU{} \ConfigProfile{} \CoresList{}
\input{provenance.tex}
\input{claims.tex}
\end{document}
""")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]


# --- R figure -------------------------------------------------------------------

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


def test_empty_inputs_give_na_not_errors(tmp_path):
    header = SUMMARY.read_text().splitlines()[0] + "\n"
    (tmp_path / "s.csv").write_text(header)
    (tmp_path / "r.csv").write_text((FIX / "point_select.csv").read_text().splitlines()[0] + "\n")
    (tmp_path / "p.json").write_text("{}")
    (tmp_path / "c.yaml").write_text("")
    assert report.main(["--summary", str(tmp_path / "s.csv"), "--runs", str(tmp_path / "r.csv"),
                        "--provenance", str(tmp_path / "p.json"), "--config",
                        str(tmp_path / "c.yaml"), "--out", str(tmp_path / "gen")]) == 0
    m = dict(macros_of(tmp_path / "gen"))
    assert m["PSBestInnoDB"] == m["HostCPU"] == m["CoresList"] == m["NumReps"] == "n/a"
    with open(tmp_path / "gen" / "claims.csv", newline="") as f:
        assert {r["verdict"] for r in csv.DictReader(f)} == {claims.NOT_MEASURABLE}
