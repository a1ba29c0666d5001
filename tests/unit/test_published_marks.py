"""Published marks (harness.report.published, PUBLISHED_MARKS of each study): the
CSV is built from the study modules, every mark names a figure of its study and a
finite positive value, C1's marks are the study's times over InnoDB's (from the
module's constants), and every figure with marks draws them on real tidy data
(the recorded smoke cells of tests/fixtures/raw, retidied: test_figures.smoke).
"""
import csv
import re
import io
import math
import shutil
import subprocess

import pytest

from harness import report
from harness.report import published
from harness import studies
from harness.studies import c as study_c
from test_figures import inputs, rewrite, rscript, smoke  # noqa: F401  (fixture)

ROWS = list(csv.DictReader(io.StringIO(published.published_csv())))
MARKED = sorted({r["figure"] for r in ROWS})


def test_csv_has_the_fixed_columns_and_every_study_mark():
    assert tuple(csv.reader(io.StringIO(published.published_csv())).__next__()) == published.PUBLISHED_FIELDS
    declared = sum(len(getattr(m, "PUBLISHED_MARKS", [])) for m in studies.all_studies().values())
    assert declared > 0 and len(ROWS) == declared


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['figure']}-{r['engine']}-{r['levels']}-{r['tables']}")
def test_mark_names_a_figure_of_its_study_with_a_finite_positive_value(row):
    figures = studies.all_studies()[row["study"]].FIGURES
    assert row["figure"] in figures
    assert published.PUBLISHED_TABLE in figures[row["figure"]].get("extra", [])
    v = float(row["value"])
    assert math.isfinite(v) and v > 0
    assert row["label"] and row["source"]


def test_c1_marks_are_innodbs_published_time_over_each_engines():
    s = study_c.PUBLISHED_INSERT_S
    got = {r["engine"]: float(r["value"]) for r in ROWS if r["figure"] == "c_inserts"}
    want = {(study_c.LEGACY if k == "legacy" else k): s["InnoDB"] / v for k, v in s.items() if k != "InnoDB"}
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-5)


def test_a_mark_for_an_undeclared_figure_is_an_error(monkeypatch):
    mod = studies.all_studies()["c"]
    monkeypatch.setattr(mod, "PUBLISHED_MARKS", [dict(mod.PUBLISHED_MARKS[0], figure="no_such_figure")])
    with pytest.raises(ValueError, match="no_such_figure"):
        published.marks()


def test_a_non_positive_value_is_an_error(monkeypatch):
    mod = studies.all_studies()["c"]
    monkeypatch.setattr(mod, "PUBLISHED_MARKS", [dict(mod.PUBLISHED_MARKS[0], value=float("nan"))])
    with pytest.raises(ValueError, match="finite positive"):
        published.marks()


# --- the figures draw them ------------------------------------------------------------

pytestmark_r = pytest.mark.skipif(not shutil.which("Rscript") or not shutil.which("pdftotext"),
                                  reason="Rscript or pdftotext not installed")


def pdf_text(path):
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True).stdout


def with_cores(src, dst, cores):
    """The summary rows again on each of `cores` (the recorded cells ran on 1 core;
    A1's marks are about 4 and 8 cores)."""
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    return rewrite(src, dst, extra=[dict(r, cores=str(c)) for c in cores for r in rows])


@pytestmark_r
@pytest.mark.parametrize("name", MARKED)
def test_figure_draws_its_marks(tmp_path, smoke, name):  # noqa: F811
    args = inputs(name, smoke)
    if name.startswith("a1_fts_"):
        args = [with_cores(p, tmp_path / "fts_summary.csv", (4, 8)) if p.endswith("fts_summary.csv") else p
                for p in args]
    out = tmp_path / f"{name}.pdf"
    proc = rscript(report.FIGURES[name]["script"], *args, out)
    assert proc.returncode == 0, proc.stderr
    text = pdf_text(out)
    assert "published" in text                     # the legend entry: marks were placed
    # one line per place_published call (fig_knobs: one per panel, each offered every mark)
    placed = re.findall(r"published marks: (\d+) of (\d+) placed", proc.stderr)
    assert placed, proc.stderr
    marks = [r for r in ROWS if r["figure"] == name]
    assert all(int(m) == len(marks) for _, m in placed)
    # every mark whose experiment, engine, tables and cores the recorded cells have is drawn
    rows = [r for p in map(str, args) if p.endswith("_summary.csv") for r in csv.DictReader(open(p, newline=""))]
    def measured(m):
        return any(all(not m[k] or r.get(k) == m[k] for k in ("experiment", "engine", "tables", "cores"))
                   for r in rows)
    assert sum(int(n) for n, _ in placed) == sum(map(measured, marks)) >= 1, proc.stderr
    labels = {r["label"].split(" (")[0] for r in ROWS if r["figure"] == name}
    assert any(l.replace("published ", "") in text for l in labels), (labels, text)


@pytestmark_r
def test_figure_without_published_csv_has_no_marks(tmp_path, smoke):  # noqa: F811
    out = tmp_path / "c.pdf"
    proc = rscript("fig_c_inserts.R", smoke / "test_drive_summary.csv", out)
    assert proc.returncode == 0, proc.stderr
    assert "published" not in pdf_text(out)


@pytestmark_r
def test_published_csv_missing_a_column_is_a_one_line_error(tmp_path, smoke):  # noqa: F811
    bad = tmp_path / "published.csv"
    bad.write_text(published.published_csv().replace(",ref_levels,", ",", 1))
    out = tmp_path / "c.pdf"
    proc = rscript("fig_c_inserts.R", smoke / "test_drive_summary.csv", bad, out)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "published.csv" in lines[0] and "ref_levels" in lines[0]
    assert not out.exists()


def test_a2_mark_says_the_studys_range():
    """The study gives InnoDB x3-6 over MyISAM: the mark at 3 says it is that range's lower end
    (its label was 'published >=3x', a bound the study never stated)."""
    a2 = [r for r in ROWS if r["source"].startswith("A2,")]
    assert a2 and all(float(r["value"]) == 3.0 and r["label"] == "published 3\u20136\u00d7 (lower end)"
                      for r in a2), a2
