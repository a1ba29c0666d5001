"""Study A1 (full-text search): its dataset tables, claims, figures and section.

Real data: the recorded smoke cells of A1 and their datasets' dataset.json in
tests/fixtures/raw (A1/, datasets/), tidied and reported by this checkout
(test_retidy_fixture.retidy), exactly as the pipeline does. The claims that
need several core counts, which the recording host (2 CPUs) cannot give,
are also judged on constructed cells written with harness.analysis.tidywrite's own
columns (test_claims.write_tidy), so every verdict path is exercised.
"""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.analysis import claims as C

from harness.studies.a1 import fts_export

from harness import report

from harness.analysis import tidyread as T
from harness import studies
from harness.studies import a1
from test_claims import config, runs, write_tidy
from test_retidy_fixture import RAW, retidy

ROOT = Path(__file__).resolve().parents[2]
DATASETS = sorted((RAW / "datasets").glob("*.json"))
A1_IDS = [c.id for c in a1.CLAIMS]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The recorded cells retidied, with the published marks the pipeline writes beside them."""
    from harness.report import published
    out = retidy(RAW, tmp_path_factory.mktemp("a1_real"))
    (out["tidy"] / published.PUBLISHED_TABLE).write_text(published.published_csv())
    return out


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# --- dataset tables (harness.studies.a1.fts_export) -----------------------------------------------------

def test_gate_and_load_tables_from_the_recorded_datasets(tmp_path):
    gate_csv, load_csv = fts_export.tables([str(p) for p in DATASETS])
    (tmp_path / "g.csv").write_text(gate_csv)
    (tmp_path / "l.csv").write_text(load_csv)
    gate, load = read_csv(tmp_path / "g.csv"), read_csv(tmp_path / "l.csv")
    assert list(gate[0]) == list(fts_export.GATE_FIELDS)
    assert len(load) == len(DATASETS) and len(gate) == 30 * len(DATASETS)
    for key in {(r["build"], r["engine"], r["corpus"]) for r in gate}:
        rows = [r for r in gate if (r["build"], r["engine"], r["corpus"]) == key]
        assert [int(r["rank"]) for r in rows] == list(range(1, 31))
        assert rows[0]["keyword"] == "Pietersz" and rows[-1]["keyword"] == "Abdelhamid"
        # the stand-in passed its gate: planted = published = what the engine counted
        assert all(r["source"] == "standin" and r["planted"] == r["published"] == r["measured"] for r in rows)
    assert {(r["build"], r["engine"]) for r in load} == {(b, e) for b in ("mysql-5.6.24", "mariadb-10.11")
                                                         for e in ("InnoDB", "MyISAM")}
    for r in load:
        assert float(r["load_s"]) > 0 and float(r["index_s"]) > 0 and int(r["rows"]) >= 13353
        assert r["tok_ft_min_word_len"] == "4"
    assert all(r["tok_innodb_ft_min_token_size"] == "3" for r in load if r["engine"] == "InnoDB")


def test_export_cli_writes_both_and_refuses_a_dir_without_dataset_json(tmp_path):
    env_py = [sys.executable, "-m", "harness", "fts-export"]
    env = {"PYTHONPATH": str(ROOT / "workflow")}
    ok = subprocess.run(env_py + ["--datasets", *map(str, DATASETS[:2]), "--gate-out", str(tmp_path / "g.csv"),
                                  "--load-out", str(tmp_path / "l.csv")], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert len(read_csv(tmp_path / "l.csv")) == 2
    empty = tmp_path / "mysql-5.6.24" / "fulltext" / "InnoDB_x"
    empty.mkdir(parents=True)
    bad = subprocess.run(env_py + ["--datasets", str(empty), "--gate-out", str(tmp_path / "g2.csv"),
                                   "--load-out", str(tmp_path / "l2.csv")], capture_output=True, text=True, env=env)
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "dataset.json: missing" in bad.stderr
    assert not (tmp_path / "g2.csv").exists()


def test_export_refuses_a_dataset_that_is_not_fulltext(tmp_path):
    d = json.loads(DATASETS[0].read_text())
    del d["gate"]
    p = tmp_path / "x.json"
    p.write_text(json.dumps(d))
    with pytest.raises(fts_export.DatasetError, match="no 'gate'"):
        fts_export.tables([str(p)])


# --- claims on the real cells ----------------------------------------------------------------

def test_a1_claims_in_claims_csv_with_verdicts(real):
    rows = read_csv(real["generated"] / "claims.csv")
    assert C.invariant_violations(rows, 0.9) == []
    mine = [r for r in rows if r["study"] == "A1"]
    assert {r["claim"] for r in mine} == set(A1_IDS)
    assert all(r["verdict"] in C.VERDICTS and r["reason"] for r in mine)
    by = {(r["claim"], r["build"]): r for r in mine}
    # one core on the recording host: every core-specific claim says which cores it needs
    for cid, needs in (("A1-FTS-innodb-8-cores", "8 cores"), ("A1-FTS-innodb-4-cores", "4 cores"),
                       ("A1-FTS-MyISAM-stops-at-8", "8 and more than 8 cores"),
                       ("A1-FTS-InnoDB-scales-4-16", "4 and 16 cores")):
        r = by[(cid, "mysql-5.6.24")]
        assert r["verdict"] == C.NOT_MEASURABLE and r["reason"].startswith("cores:") and needs in r["reason"]
    best = by[("A1-FTS-innodb-3x-best", "mysql-5.6.24")]
    assert best["ratio"] and best["measured"].startswith("InnoDB") and best["verdict"] == C.NOT_MEASURABLE
    waits = by[("A1-WAIT-MyISAM-LockStatus", "mysql-5.6.24")]
    assert "LOCK_status" in waits["measured"]
    # every build of fts_builds on the recording host has InnoDB FULLTEXT: a row each
    # (a build without it, MySQL 5.5.9, gets a "build:" reason: tests/unit/test_claims.py)
    assert {b for c, b in by if c == "A1-FTS-builds-innodb-wins"} == {"mysql-5.6.24", "mariadb-10.11"}
    mmap = by[("A1-FTS-mmap-no-gain", "mysql-5.6.24")]
    assert mmap["ratio"] and mmap["metric"] == "qps_server"


def test_a1_section_is_first_and_its_figures_are_registered():
    assert list(studies.all_studies())[0] == "a1" and a1.SECTION == "section.tex"
    assert studies.section_path(a1).is_file()
    for name, spec in a1.FIGURES.items():
        assert report.FIGURES[name]["study"] == "a1"
        assert studies.figure_script(a1, spec["script"]).is_file()
    assert "a1_fts_counts" not in report.FIGURES   # a LaTeX table now: harness.studies.a1.fts_counts


# --- claims on constructed cells of several core counts ---------------------------------------

# 12 blocks: a peak over 3 core counts a side splits each look's error in three
# (intervals.max_min_interval), which the default profile's first look (6 blocks) cannot reach
HI = [300 + i % 7 for i in range(12)]
MID = [150 + i % 7 for i in range(12)]
LO = [100 + i % 7 for i in range(12)]


def scale(values, f):
    return [v * f for v in values]


def fts_rows(innodb: dict, myisam: dict):
    """cores -> values, per engine, as fts cells on one table."""
    out = []
    for engine, by_cores in (("InnoDB", innodb), ("MyISAM", myisam)):
        for cores, values in by_cores.items():
            out += runs(engine, values, experiment="fts", tables=1, cores=cores)
    return out


def judge(tmp_path, rows, ids):
    cfg = config({"fts": {"study": "A1", "workload": "fts", "variants": {}, "tables": [1]}})
    tidy = T.load(write_tidy(tmp_path / "tidy", {"fts": rows}), cfg)
    out = C.evaluate(tidy, [c for c in a1.CLAIMS if c.id in ids])
    assert C.invariant_violations(out, C.setting(cfg, "level")) == []
    return {r["claim"]: r for r in out}


def test_published_shape_is_reproduced_on_enough_cores(tmp_path):
    # InnoDB: 4 -> 8 -> 16 cores x1 / x1.5 / x3 of LO*2; MyISAM: best on 8, less on 16
    innodb = {4: scale(LO, 2), 8: scale(LO, 3), 16: scale(LO, 12)}
    myisam = {4: LO, 8: scale(LO, 2), 16: scale(LO, 1.5)}
    # (the best-over-cores 3x needs InnoDB on 24 or 32 cores: tests/unit/test_faithful_rows.py)
    r = judge(tmp_path, fts_rows(innodb, myisam), {
        "A1-FTS-innodb-8-cores", "A1-FTS-innodb-4-cores",
        "A1-FTS-MyISAM-stops-at-8", "A1-FTS-InnoDB-scales-4-16"})
    for cid in r:
        assert r[cid]["verdict"] == C.REPRODUCED, (cid, r[cid]["measured"], r[cid]["reason"])
    assert "on 8 cores" in r["A1-FTS-innodb-8-cores"]["measured"]
    assert "16 cores" in r["A1-FTS-MyISAM-stops-at-8"]["measured"]


def test_the_opposite_shape_is_not_reproduced(tmp_path):
    innodb = {4: LO, 8: LO, 16: LO}                       # InnoDB flat, below MyISAM
    myisam = {4: MID, 8: scale(MID, 2), 16: scale(MID, 4)}  # MyISAM keeps scaling
    r = judge(tmp_path, fts_rows(innodb, myisam), {
        "A1-FTS-innodb-4-cores", "A1-FTS-MyISAM-stops-at-8", "A1-FTS-InnoDB-scales-4-16"})
    for cid in r:
        assert r[cid]["verdict"] == C.NOT_REPRODUCED, (cid, r[cid]["measured"], r[cid]["reason"])


def test_two_cores_only_names_the_missing_cores(tmp_path):
    r = judge(tmp_path, fts_rows({1: LO, 2: HI}, {1: LO, 2: MID}), {
        "A1-FTS-innodb-8-cores", "A1-FTS-InnoDB-scales-4-16", "A1-FTS-innodb-3x-best"})
    assert r["A1-FTS-innodb-8-cores"]["verdict"] == C.NOT_MEASURABLE
    assert "1–2 cores" in r["A1-FTS-innodb-8-cores"]["reason"]
    assert r["A1-FTS-InnoDB-scales-4-16"]["reason"].startswith("cores: scaling of InnoDB needs mysqld on 4 and 16")
    # at best needs the cores of the two published bests (InnoDB's 24 or 32, MyISAM's 8): named,
    # what was measured kept
    assert r["A1-FTS-innodb-3x-best"]["verdict"] == C.NOT_MEASURABLE
    assert "InnoDB's best was on 24 or 32 cores" in r["A1-FTS-innodb-3x-best"]["reason"]
    assert r["A1-FTS-innodb-3x-best"]["ratio"]


def test_macros_quote_the_real_best_and_the_corpus(real):
    text = (real["generated"] / "macros.tex").read_text()
    for name in ("FtsBestQpsInnoDB", "FtsBestQpsMyISAM", "FtsCorpus", "FtsCorpusRows", "FtsCoresMeasured",
                 "VerdictFtsBest", "RatioFtsMmap", "MeasuredFtsWaitDict"):
        assert f"\\newcommand{{\\{name}}}" in text or f"\\def\\{name}" in text, name
    assert "seeded offline stand-in" in text and "13{,}353" in text


# --- figures and the section ------------------------------------------------------------------

needs_r = pytest.mark.skipif(not shutil.which("Rscript"), reason="Rscript not installed")


def rscript(script, *args):
    """One of A1's figure scripts (its package's R/, else the shared workflow/R/), by name."""
    return subprocess.run(["Rscript", str(studies.figure_script(a1, script)), *map(str, args)],
                          capture_output=True, text=True, timeout=180)


@needs_r
@pytest.mark.parametrize("name", sorted(a1.FIGURES))
def test_a1_figures_render_on_the_real_cells(real, tmp_path, name):
    out = tmp_path / f"{name}.pdf"
    proc = rscript(a1.FIGURES[name]["script"], *report.figure_inputs(name, {"fts"}, str(real["tidy"])), out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"%PDF" and out.stat().st_size > 4000


@needs_r
def test_cores_figure_with_several_core_counts(real, tmp_path):
    """One engine on three core counts (a line) and the other on one (a point only)."""
    rows = read_csv(real["tidy"] / "fts_summary.csv")
    extra = []
    for r in rows:
        if r["engine"] == "InnoDB":
            for cores, f in (("4", 2.0), ("8", 3.0)):
                x = dict(r, cores=cores)
                for col in ("qps_server_median", "qps_server_ci_lo", "qps_server_ci_hi"):
                    x[col] = str(float(r[col]) * f)
                extra.append(x)
    p = tmp_path / "fts_summary.csv"
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows + extra)
    out = tmp_path / "cores.pdf"
    proc = rscript("fig_fts_cores.R", p, out)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 4000


@pytest.mark.skipif(not shutil.which("latexmk"), reason="latexmk not installed")
def test_section_compiles_in_the_paper(real, tmp_path):
    """paper/main.tex with the generated inputs of the real cells and the A1 figures drawn
    by their scripts where R is present (else placeholders): no undefined macro, and the
    section's text is in the PDF."""
    paper = tmp_path / "paper"
    shutil.copytree(real["generated"], paper / "generated")
    shutil.copy(ROOT / "paper" / "main.tex", paper / "main.tex")
    if (ROOT / "paper" / "references.bib").exists():
        shutil.copy(ROOT / "paper" / "references.bib", paper / "references.bib")
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "dummy.tex").write_text(r"\documentclass{article}\pagestyle{empty}\begin{document}x\end{document}")
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "dummy.tex"], cwd=figures, capture_output=True)
    for name in report.FIGURES:
        if not report.figure_inputs(name, set(T.read_yaml(RAW / "config.resolved.yaml")["experiments"])):
            continue
        drawn = False
        if name in a1.FIGURES and shutil.which("Rscript"):
            drawn = rscript(a1.FIGURES[name]["script"],
                            *report.figure_inputs(name, {"fts"}, str(real["tidy"])),
                            figures / f"{name}.pdf").returncode == 0
        if not drawn:
            shutil.copy(figures / "dummy.pdf", figures / f"{name}.pdf")
    for name in getattr(report, "PAPER_FIGURES", {}):  # the claims figure: drawn from claims.csv
        shutil.copy(figures / "dummy.pdf", figures / f"{name}.pdf")
    proc = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
                          cwd=paper, capture_output=True, text=True, timeout=300)
    log = (paper / "main.log").read_text(errors="replace")
    assert proc.returncode == 0, log[-3000:]
    assert "Undefined control sequence" not in log
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(paper / "main.pdf"), "-"], capture_output=True, text=True).stdout
        assert "Study A1: full-text search" in text
        assert text.index("Study A1: full-text search") < text.index("Study A2/A3: sysbench read-only")
        assert "seeded offline stand-in" in text


def test_corpus_rows_in_the_text_are_the_loaded_ones_not_the_configs(real, tmp_path):
    """A profile's corpus.rows (kept by the defaults even for the real corpus, which loads all
    its records) never reaches the text: the rows come from A1's load table."""
    from harness.report import latex
    d = tmp_path / "tidy"
    shutil.copytree(real["tidy"], d)
    cfg = T.read_yaml(d / "config.resolved.yaml")
    cfg["experiments"]["fts"]["corpus"] = {**(cfg["experiments"]["fts"].get("corpus") or {}), "rows": 20000}
    ctx = C.Context.of(T.load(d, cfg, tables=studies.tidy_tables()))
    assert dict(a1.macros(ctx, [], latex))["FtsCorpusRows"] == "13{,}353"
