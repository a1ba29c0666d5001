"""The paper as a reviewer reads it, built from the recorded real smoke cells
(tests/paper_build.py: tidy, generated tables, every figure, latexmk):

- the first results figure is the claims figure (one row per claim, verdict
  as colour and word);
- every font of every figure and of the PDF is embedded (pdffonts);
- no overfull box above 5 pt in the final LaTeX run (main.log);
- the figure rules of workflow/R/theme.R hold and are enforced: a line along
  a categorical axis or through one x value, a facet over a single value,
  panels in different units, each stop the figure.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import paper_build

ROOT = Path(__file__).resolve().parents[2]
THEME = ROOT / "workflow" / "R" / "theme.R"

TOOLS = ("Rscript", "latexmk", "pdffonts", "pdftotext")
pytestmark = pytest.mark.skipif(not all(map(shutil.which, TOOLS)),
                                reason=f"needs {', '.join(TOOLS)}")

OVERFULL_LIMIT_PT = 5.0


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    r = paper_build.build(tmp_path_factory.mktemp("paper"))
    assert not r["failed"], r["failed"]
    assert r["latex"].returncode == 0, r["latex"].stdout[-3000:]
    return r


def pdf_text(path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def unembedded_fonts(pdf: Path) -> list[str]:
    """The lines of `pdffonts` whose font is not embedded (its 'emb' column is not 'yes')."""
    out = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    header = lines[0]
    emb = header.index(" emb ") + 1
    return [l for l in lines[2:] if l[emb:emb + 3] != "yes"]


def overfull_boxes(log_text: str, limit: float = OVERFULL_LIMIT_PT) -> list[str]:
    """Overfull \\hbox/\\vbox warnings of a LaTeX log above `limit` points (only the
    last run's log is kept by latexmk, so these are the final run's)."""
    found = re.findall(r"^(Overfull \\[hv]box \(([\d.]+)pt too (?:wide|high)\).*)$", log_text, re.M)
    return [line for line, pt in found if float(pt) > limit]


# --- the claims figure ------------------------------------------------------------

def test_first_results_figure_is_the_claims_figure(built):
    text = pdf_text(built["paper"] / "main.pdf")
    first = re.search(r"Figure 1:\s*(.{0,80})", text, re.S)
    assert first and "published claims" in first.group(1), first and first.group(1)
    # and it comes before any study section's figure
    assert text.index("Figure 1:") < text.index("Figure 2:")


def test_claims_figure_draws_the_judged_rows_and_counts_the_rest_in_its_caption(built):
    import csv
    rows = list(csv.DictReader(open(built["generated"] / "claims.csv", newline="")))
    caption = paper_build.claims_figure_matches(rows, built["figure_dir"] / "claims.pdf", built["paper"] / "main.pdf")
    assert "combined" not in caption   # one host: no combined rows


def test_claims_figure_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "claims.csv"
    bad.write_text("claim,study\nX,A2\n")
    out = tmp_path / "c.pdf"
    p = paper_build.rscript("fig_claims.R", bad, out)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "missing column" in p.stderr and not out.exists()


# --- fonts, boxes -----------------------------------------------------------------------

def test_every_font_embedded_in_every_figure(built):
    figs = sorted(built["figure_dir"].glob("*.pdf"))
    assert len(figs) == len(built["figures"]) + 1   # + the claims figure
    bad = {f.name: unembedded_fonts(f) for f in figs}
    assert not {k: v for k, v in bad.items() if v}


def paper_title_and_authors() -> tuple[str, str]:
    """main.tex's \\PaperTitle and \\PaperAuthors as plain text (its line breaks as spaces)."""
    tex = (ROOT / "paper" / "main.tex").read_text()
    title = re.search(r"\\newcommand\{\\PaperTitle\}\{(.*?)\}\n\\newcommand", tex, re.S).group(1)
    authors = re.search(r"\\newcommand\{\\PaperAuthors\}\{(.*?)\}\n", tex).group(1)
    title = title.replace("\\texorpdfstring{\\\\}{}", " ").replace("~", " ")
    return " ".join(title.split()), authors


@pytest.mark.skipif(not shutil.which("pdfinfo"), reason="needs pdfinfo")
def test_pdf_metadata_has_the_title_and_authors(built):
    info = subprocess.run(["pdfinfo", str(built["paper"] / "main.pdf")], capture_output=True, text=True,
                          check=True).stdout
    meta = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    title, authors = paper_title_and_authors()
    assert title.startswith("Re-running Classic MySQL Storage-Engine Benchmarks: Full-Text Search"), title
    assert meta["Title"].strip() == title.replace("'", "’") or meta["Title"].strip() == title, meta["Title"]
    assert meta["Author"].strip() == authors


def test_every_font_embedded_in_the_paper(built):
    assert unembedded_fonts(built["paper"] / "main.pdf") == []


def test_pdffonts_check_sees_an_unembedded_font(tmp_path):
    """The check itself: R's plain pdf() device does not embed Helvetica."""
    out = tmp_path / "plain.pdf"
    subprocess.run(["Rscript", "-e", f"pdf('{out}'); plot(1, main='x'); invisible(dev.off())"], check=True)
    assert unembedded_fonts(out)


def test_no_overfull_box_above_5pt(built):
    log = (built["paper"] / "main.log").read_text(errors="replace")
    assert overfull_boxes(log) == []


def test_overfull_parser():
    log = ("Overfull \\hbox (82.91429pt too wide) in paragraph at lines 2--258\n"
           "Overfull \\hbox (1.2pt too wide) in paragraph at lines 3--4\n"
           "Overfull \\vbox (455.9pt too high) has occurred while \\output is active []\n")
    assert [l[:22] for l in overfull_boxes(log)] == ["Overfull \\hbox (82.914", "Overfull \\vbox (455.9p"]


# --- the figure rules of theme.R ---------------------------------------------------------

def hygiene(plot_code: str) -> subprocess.CompletedProcess:
    code = (f"source('{THEME}'); d <- data.frame(x = c(1, 2, 1, 2), s = c('a', 'a', 'b', 'b'),"
            " y = c(1, 2, 3, 4), f = c('one', 'one', 'one', 'one'), g = c('p', 'p', 'q', 'q'));"
            f" out <- tempfile(fileext = '.pdf'); {plot_code}")
    return subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("code, message", [
    ("save_figure(ggplot(d, aes(s, y, group = 1)) + geom_line(), out)", "categorical"),
    ("save_figure(ggplot(d[d$x == 1, ], aes(x, y, group = s)) + geom_line(), out)", "fewer than two"),
    ("save_figure(ggplot(d, aes(x, y)) + geom_point() + facet_grid(. ~ f), out)", "takes one value"),
    ("save_figure(arrange_panels(list(ggplot(d, aes(x, y)) + geom_point() + scale_y_kqps(),"
     " ggplot(d, aes(x, y)) + geom_point() + scale_y_continuous('Throughput (QPS)'))), out)", "units"),
])
def test_theme_rejects(code, message):
    p = hygiene(code)
    assert p.returncode != 0 and "figure hygiene" in p.stderr and message in p.stderr, p.stderr


def test_theme_accepts_a_clean_figure():
    p = hygiene("save_figure(ggplot(d, aes(x, y, colour = s)) + line_if_continuous(d$x) + geom_point()"
                " + facet_varying(d, cols = c('f', 'g')), out); cat(file.exists(out))")
    assert p.returncode == 0 and p.stdout.strip() == "TRUE", p.stderr


# --- which run the PDF shows ------------------------------------------------------------

def runinfo(*args):
    import os
    import sys
    return subprocess.run([sys.executable, "-m", "harness", "runinfo", *map(str, args)],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")})


def test_first_page_names_profile_host_and_dates(built):
    first = subprocess.run(["pdftotext", "-l", "1", str(built["paper"] / "main.pdf"), "-"],
                           capture_output=True, text=True, check=True).stdout
    first = re.sub(r"\s+", " ", first)
    assert "Profile smoke" in first and "host vm (2 CPUs)" in first, first[:600]
    assert re.search(r"\b\d+ runs \(a run: one cell measured once, in one block\) measured "
                     r"2026-\d\d-\d\d \d\d:\d\d UTC to 2026-", first), first[:600]


def test_each_count_of_cells_runs_and_claim_rows_says_what_it_counts(built):
    """The header's runs, the abstract's cells and runs, its claim rows and the artifact
    appendix's runs: each number with its unit in words, and the same number for the same thing."""
    import csv
    raw = subprocess.run(["pdftotext", str(built["paper"] / "main.pdf"), "-"], capture_output=True, text=True,
                         check=True).stdout
    text = re.sub(r"\s+", " ", raw.replace("-\n", "").replace("\u2019", "'"))
    header = re.search(r"(\d+) runs \(a run: one cell measured once, in one block\) measured", text)
    abstract = re.search(r"experiments measured (\d+) cells in (\d+) runs\.", text)
    assert header and abstract, text[:2000]
    # the title page counts the runs the paper reads (one manifest each, of the cells the profile
    # plans: harness.report.runinfo.manifests); the abstract the tidy data's runs. In the pipeline
    # tidy reads those same cells; this fixture's tidy reads all of tests/fixtures/raw, which holds
    # A1 cells today's planner no longer plans on its 1 core (fts_mmap, fts_builds), so here the two
    # differ by those (test_paper_subsets checks them equal on the subsets without A1)
    import yaml
    from harness.report import runinfo
    config = yaml.safe_load((paper_build.RAW / "config.resolved.yaml").read_text())
    assert int(header.group(1)) == len(runinfo.manifests(str(paper_build.RAW), config))
    assert int(abstract.group(2)) == len(list(paper_build.RAW.glob("*/*/*/manifest.json")))
    rows = list(csv.DictReader(open(built["generated"] / "claims.csv", newline="")))
    assert f"of the {len(rows)} claim rows (claim \u00d7 build) checked" in text
    assert "Runs: the runs the profile plans on this host to its first look" in text
    assert "stated defaults (README's time table gives those alone)" in text


def test_profile_check_agrees_then_sees_a_mismatch(built, tmp_path):
    cfg = built["tidy"] / "config.resolved.yaml"
    gen = built["paper"] / "generated"
    ok = runinfo("check", "--config", cfg, "--tidy-dir", built["tidy"], "--generated", gen)
    assert ok.returncode == 0, ok.stderr
    other = tmp_path / "config.resolved.yaml"
    other.write_text(cfg.read_text().replace("profile: smoke", "profile: default"))
    bad = runinfo("check", "--config", other, "--tidy-dir", built["tidy"], "--generated", gen)
    assert bad.returncode == 1
    assert "runinfo.tex: profile 'smoke'" in bad.stderr and "macros.tex: profile 'smoke'" in bad.stderr
    assert "point_select_provenance.json: profile 'smoke'" in bad.stderr


def test_artifact_appendix_is_generated(built):
    tex = (built["paper"] / "generated" / "artifact.tex").read_text()
    for exp in ("point_select", "oltp_ro", "build_compare"):
        assert r"\texttt{%s}" % exp.replace("_", r"\_\allowbreak{}") in tex
    assert r"\texttt{A3-\allowbreak{}PS-\allowbreak{}myisam-\allowbreak{}wins}" in tex   # claims <-> experiment
    assert "./artifact paper --configfile config/smoke.yaml" in tex
    text = re.sub(r"\s+", " ", pdf_text(built["paper"] / "main.pdf"))
    assert "Artifact appendix" in text and "What each profile covers" in text
    assert "config/smoke.yaml" in text.replace("/ ", "/")


def test_a_series_measured_at_one_x_is_drawn_as_points(built, tmp_path):
    """MyISAM without its users=1 cells: InnoDB keeps its line, MyISAM is points only,
    and the figure is drawn (the hygiene check does not stop it)."""
    import csv
    rows = list(csv.DictReader(open(built["tidy"] / "point_select_summary.csv", newline="")))
    part = tmp_path / "point_select_summary.csv"
    with open(part, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(r for r in rows if not (r["engine"] == "MyISAM" and r["users"] == "1"))
    for script in ("workflow/harness/studies/a2_a3/R/fig_point_select.R",
                   "workflow/harness/studies/a2_a3/R/fig_sysbench_ro.R"):
        out = tmp_path / f"{Path(script).name}.pdf"
        p = paper_build.rscript(script, part, out)
        assert p.returncode == 0 and out.exists(), p.stderr


def test_deviations_rows_and_multiplicity_sentence_are_in_the_paper(built):
    """The PDF shows the deviations table's computed rows and the multiplicity sentence,
    whose count follows from the generated claims.csv and the run's claims.level."""
    import csv
    import yaml
    # reading order, not layout: the sentence runs across the columns' lines
    raw = subprocess.run(["pdftotext", str(built["paper"] / "main.pdf"), "-"], capture_output=True, text=True,
                         check=True).stdout
    text = re.sub(r"\s+", " ", raw.replace("-\n", "-"))
    for aspect in ("log flush per commit", "Performance Schema instruments", "rows per table", "rows inserted",
                   "key distribution", "buffers", "corpus statistics (A1)"):
        assert aspect in text, aspect
    with open(built["paper"] / "generated" / "claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    level = yaml.safe_load((built["tidy"] / "config.resolved.yaml").read_text())["claims"]["level"]
    n = sum(1 for r in rows if r["threshold"] and r["side"] in ("above", "below", "within"))
    assert f"about {n * (1 - level) / 2:.1f} of the {n} would be reproduced by chance alone" in text
