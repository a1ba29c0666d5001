"""The paper builds whatever ran: from the recorded real smoke cells of some studies only,
as a profile with every other study's experiments `enabled: false` leaves them
(paper_build.subset_raw), the PDF has no unresolved reference ("??" in its text, or
LaTeX's "undefined" warnings in its log).

Which subsets: each study alone and all studies but one (10 builds of about 40 s each,
not the 31 non-empty subsets of the five studies). Why that covers the guards: a
reference is drawn when every study of a set P has run (the \\ifHas<...> flags around it;
none: P is empty), and its label exists when every study of a set Q has run; it reads
"??" when P ran and some study q of Q did not. The build of all studies but q has every
study of P (q is not in P, or the label would be drawn with the reference), so it sees
every such case; the one-study builds add the references that a missing study shows
(an \\else branch). The build of all five is tests/unit/test_paper_build.py's (without A/A cells:
tests/fixtures/raw has none; the subsets take the A/A controls' cells from
tests/fixtures/raw_aa, so every build here but "all but AA" has some).

The build itself: the paper rule's `python -m harness latex` keeps latexmk's whole output
in the log, and a failed build leaves no PDF and an error that names the log.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import paper_build

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("Rscript", "latexmk", "pdftotext")
needs_tools = pytest.mark.skipif(not all(map(shutil.which, TOOLS)), reason=f"needs {', '.join(TOOLS)}")

STUDIES = ("a1", "a2_a3", "aa", "b", "c")
SUBSETS = [(s,) for s in STUDIES] + [tuple(x for x in STUDIES if x != s) for s in STUDIES]


def unresolved(pdf_text: str, log_text: str) -> list[str]:
    """The PDF's '??' (with their context) and the log's undefined-reference warnings."""
    flat = " ".join(pdf_text.split())
    found = [flat[max(0, m.start() - 60):m.end() + 20] for m in re.finditer(r"\?\?", flat)]
    found += re.findall(r"^LaTeX Warning: (?:Reference|Citation) .* undefined.*$", log_text, re.M)
    found += re.findall(r"^LaTeX Warning: There were undefined references.*$", log_text, re.M)
    return found


def test_unresolved_sees_a_missing_label():
    log = ("LaTeX Warning: Reference `fig:knobs' on page 4 undefined on input line 12.\n"
           "LaTeX Warning: There were undefined references.\n")
    assert len(unresolved("as Figure ?? shows", log)) == 3
    assert unresolved("Figure 3 shows (p < 0.01)", "LaTeX Warning: Label(s) may have changed.\n") == []


@needs_tools
@pytest.mark.parametrize("keep", SUBSETS, ids=["+".join(s) for s in SUBSETS])
def test_paper_builds_from_a_subset_of_studies(keep, tmp_path):
    raw = paper_build.subset_raw(tmp_path / "raw", keep)
    r = paper_build.build(tmp_path, raw)
    assert not r["failed"], r["failed"]
    assert r["latex"].returncode == 0, r["latex"].stdout[-3000:]
    pdf = r["paper"] / "main.pdf"
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    log = (r["paper"] / "main.log").read_text(errors="replace")
    assert unresolved(text, log) == []
    if not {"a1", "aa"} & set(keep):   # one count of runs, the same on the title page and in the abstract
        # (the title page counts the cells the profile plans with its settings, the fixture's tidy every
        # cell: A1's hold cells today's planner does not plan, see test_paper_build; the A/A cells of
        # tests/fixtures/raw_aa were measured with settings other than tests/fixtures/raw's config's)
        flat = " ".join(text.replace("-\n", "").split())
        header = re.search(r"(\d+) runs \(a run: one cell measured once, in one block\) measured", flat)
        abstract = re.search(r"experiments measured \d+ cells in (\d+) runs\.", flat)
        assert header and abstract and header.group(1) == abstract.group(1), flat[:1500]


def test_subset_raw_disables_the_other_studies(tmp_path):
    import yaml
    raw = paper_build.subset_raw(tmp_path / "raw", ["b"])
    config = yaml.safe_load((raw / "config.resolved.yaml").read_text())
    on = {e for e, spec in config["experiments"].items() if spec["enabled"]}
    assert on == {e for e, s in paper_build.study_of_experiments(config).items() if s == "b"}
    assert sorted(p.relative_to(raw).as_posix() for p in raw.glob("*/*") if p.is_dir()) == ["B3/read_write"]
    assert not (raw / "datasets").exists()   # A1's
    aa = paper_build.subset_raw(tmp_path / "aa", ["aa", "a1"])
    assert sorted(p.relative_to(aa).as_posix() for p in aa.glob("AA/*")) == ["AA/aa_steps", "AA/aa_throughput"]
    assert len(list(aa.glob("AA/*/*/manifest.json"))) == 4 and (aa / "datasets").is_dir()
    with pytest.raises(AssertionError, match="no such study"):
        paper_build.subset_raw(tmp_path / "x", ["b", "zz"])


# --- the paper rule's latexmk step --------------------------------------------------------

def latex(tex: Path, log: Path):
    import os
    return subprocess.run([sys.executable, "-m", "harness", "latex", "--tex", str(tex), "--log", str(log)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")})


@pytest.mark.skipif(not shutil.which("latexmk"), reason="needs latexmk")
def test_failed_latex_keeps_its_output_in_the_log_and_leaves_no_pdf(tmp_path):
    tex = tmp_path / "paper" / "main.tex"
    tex.parent.mkdir()
    tex.write_text("\\documentclass{article}\n\\begin{document}\nText.\\NoSuchMacro\n\\end{document}\n")
    log = tmp_path / "logs" / "paper.log"
    p = latex(tex, log)
    assert p.returncode == 1
    assert not tex.with_suffix(".pdf").exists()
    body = log.read_text()
    assert "Latexmk" in body and "Undefined control sequence" in body, body[-2000:]
    first = p.stderr.splitlines()[0]
    assert str(log) in first and "main.log" in first and "no PDF" in first, p.stderr
    assert "Undefined control sequence" in p.stderr   # the log's tail follows


@pytest.mark.skipif(not shutil.which("latexmk"), reason="needs latexmk")
def test_latex_builds_the_pdf_and_logs_it(tmp_path):
    tex = tmp_path / "main.tex"
    tex.write_text("\\documentclass{article}\n\\begin{document}\nText.\n\\end{document}\n")
    log = tmp_path / "paper.log"
    p = latex(tex, log)
    assert p.returncode == 0, p.stderr
    assert tex.with_suffix(".pdf").exists() and "Latexmk" in log.read_text()
