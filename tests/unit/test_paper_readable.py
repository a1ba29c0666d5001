"""The paper as a reviewer reads it (issue READABLE), built from the recorded real
smoke cells (tests/paper_build.py):

- every figure and table is referenced from the text and lies within two pages of
  its first reference (the pages come from the .aux: \\newlabel gives a float's page,
  main.tex's \\ref writes \\RefUsed{label}{page} for every use);
- no "will be added"/TODO text in the PDF;
- no study section says "not measurable here" in more than one sentence (each
  verdict is said once per study: the findings and the verdict table);
- no overfull box wider than 2 pt (tests/unit/test_paper_build.py allows 5 pt);
- the main text (the pages before the first appendix, whose page the .aux gives) is at
  most 12 pages;
- every figure's panel titles and axis labels are whole in its PDF text (pdftotext),
  the expected strings computed from the tidy data and factor table the script reads.
"""
from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import paper_build
from harness import studies
from test_paper_build import overfull_boxes, pdf_text

TOOLS = ("Rscript", "latexmk", "pdftotext")
pytestmark = pytest.mark.skipif(not all(map(shutil.which, TOOLS)), reason=f"needs {', '.join(TOOLS)}")

FLOAT_DISTANCE_PAGES = 2
OVERFULL_LIMIT_PT = 2.0
MAIN_TEXT_PAGES = 12


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    r = paper_build.build(tmp_path_factory.mktemp("readable"))
    assert not r["failed"], r["failed"]
    assert r["latex"].returncode == 0, r["latex"].stdout[-3000:]
    return r


def without_false_ifs(text: str, false: set[str]) -> str:
    """`text` without the \\if<Flag> ... \\fi blocks (an \\else part kept) of the flags
    macros.tex sets false: a figure the profile does not draw is not set."""
    out, pos = [], 0
    for m in re.finditer(r"\\if(%s)(?![A-Za-z])" % "|".join(map(re.escape, sorted(false))) if false else r"(?!)", text):
        if m.start() < pos:
            continue
        depth, i, else_at = 1, m.end(), None
        for t in re.finditer(r"\\(if[A-Za-z]*|else|fi)(?![A-Za-z])", text[m.end():]):
            word = t.group(1)
            if word == "fi":
                depth -= 1
            elif word == "else":
                if depth == 1:
                    else_at = m.end() + t.end()
            else:
                depth += 1
            if depth == 0:
                i = m.end() + t.start()
                break
        out.append(text[pos:m.start()])
        if else_at is not None:
            out.append(text[else_at:i])
        pos = i + len("\\fi")
    out.append(text[pos:])
    return "".join(out)


def test_without_false_ifs_drops_a_false_flags_block():
    text = "a \\ifHasX b \\ifHasY c\\fi d\\else e\\fi f \\ifHasY g\\fi"
    assert without_false_ifs(text, {"HasX"}) == "a  e f \\ifHasY g\\fi"
    assert without_false_ifs(text, set()) == text


def float_labels(tex_dir: Path) -> set[str]:
    """Labels set inside figure/table floats of main.tex, the sections and generated/
    (outside the \\ifHas... blocks that macros.tex switches off)."""
    files = [tex_dir / "main.tex", *sorted((tex_dir / "generated").glob("*.tex"))]
    files += [Path(p) for p in re.findall(r'\\input\{"([^"]+)"\}', (tex_dir / "generated" / "sections.tex").read_text())]
    false = set(re.findall(r"\\(Has[A-Za-z]+)false\b", (tex_dir / "generated" / "macros.tex").read_text()))
    labels = set()
    for f in files:
        text = without_false_ifs(re.sub(r"(?m)(?<!\\)%.*$", "", f.read_text()), false)
        for body in re.findall(r"\\begin\{(?:figure|table)\*?\}(.*?)\\end\{(?:figure|table)\*?\}", text, re.S):
            labels |= set(re.findall(r"\\label\{([^}]+)\}", body))
        for body in re.findall(r"\\captionof\{(?:figure|table)\}.*?\\label\{([^}]+)\}", text, re.S):
            labels.add(body)
    return labels


def pages(aux: str) -> tuple[dict, dict]:
    """(label -> page of the label, label -> first page a \\ref to it was used on)."""
    where = {m[0]: int(m[1]) for m in re.findall(r"\\newlabel\{([^}]+)\}\{\{[^}]*\}\{(\d+)\}", aux)}
    first: dict = {}
    for label, page in re.findall(r"\\RefUsed\{([^}]+)\}\{(\d+)\}", aux):
        first.setdefault(label, int(page))
        first[label] = min(first[label], int(page))
    return where, first


def far_floats(labels, where, first, distance=FLOAT_DISTANCE_PAGES) -> list[str]:
    bad = []
    for lab in sorted(labels):
        if lab not in first:
            bad.append(f"{lab}: never referenced")
        elif lab not in where:
            bad.append(f"{lab}: not placed")
        elif abs(where[lab] - first[lab]) > distance:
            bad.append(f"{lab}: on page {where[lab]}, first referenced on page {first[lab]}")
    return bad


def test_far_floats_sees_a_float_far_from_its_reference():
    aux = ("\\newlabel{fig:a}{{1}{9}{cap}{figure.1}{}}\n\\newlabel{tab:b}{{2}{3}{cap}{table.2}{}}\n"
           "\\RefUsed{fig:a}{3}\n\\RefUsed{tab:b}{2}\n\\RefUsed{fig:a}{8}\n")
    where, first = pages(aux)
    assert first == {"fig:a": 3, "tab:b": 2}
    assert far_floats({"fig:a", "tab:b", "tab:c"}, where, first) == [
        "fig:a: on page 9, first referenced on page 3", "tab:c: never referenced"]


def test_every_float_is_referenced_and_near_its_first_reference(built):
    paper = built["paper"]
    labels = float_labels(paper)
    assert {"fig:claims", "tab:claims-a1", "tab:claims-c", "tab:fts-counts"} <= labels, sorted(labels)
    where, first = pages((paper / "main.aux").read_text())
    assert far_floats(labels, where, first) == []


def main_text_pages(aux: str) -> int:
    """The pages before the first appendix: the page of the first label named app:*
    (the appendices start on a page of their own, after \\onecolumn), less one."""
    first = re.search(r"\\newlabel\{app:[^}]+\}\{\{[^}]*\}\{(\d+)\}", aux)
    assert first, "no appendix label in the .aux"
    return int(first.group(1)) - 1


def test_main_text_pages_reads_the_first_appendix():
    aux = ("\\newlabel{sec:a}{{1}{2}{}{}{}}\n\\newlabel{app:setup}{{A}{14}{}{}{}}\n"
           "\\newlabel{app:cells}{{B}{15}{}{}{}}\n")
    assert main_text_pages(aux) == 13


def test_main_text_is_at_most_12_pages(built):
    assert main_text_pages((built["paper"] / "main.aux").read_text()) <= MAIN_TEXT_PAGES


def test_no_overfull_box_wider_than_2pt(built):
    log = (built["paper"] / "main.log").read_text(errors="replace")
    assert overfull_boxes(log, OVERFULL_LIMIT_PT) == []


def test_no_unfinished_text(built):
    text = re.sub(r"\s+", " ", pdf_text(built["paper"] / "main.pdf"))
    for words in ("will be added", "TODO", "TBD", "Part I"):
        assert words not in text, words


def section_heads() -> list[str]:
    """Each registered study's section title up to its colon ("Study B", "A/A controls"):
    the registry's, so a study added needs no pattern here."""
    out = []
    for m in studies.all_studies().values():
        title = re.search(r"\\section\{([^}]*)\}", studies.section_path(m).read_text())[1]
        out.append(title.split(":")[0])
    return out


def section_texts(pdf: Path) -> dict:
    """Numbered section title -> its text (pdftotext; sections start '<n> <Title>' on a line)."""
    # reading order (no -layout): a two-column page's section titles stay on their own lines
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    text = text.split("\nReferences\n")[0]
    # a section's number may sit on the line before its title
    heads = "|".join(map(re.escape, section_heads()))
    parts = re.split(rf"(?m)^(?:\d+\s*\n)?((?:\d+ )?(?:{heads})[^\n]*)$", text)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_not_measurable_said_once_per_study_section(built):
    sections = section_texts(built["paper"] / "main.pdf")
    assert len(sections) >= 5, list(sections)
    for title, body in sections.items():
        # sentences of the running text (table rows hold one verdict each, not sentences)
        flat = re.sub(r"-\n", "", body)
        flat = re.sub(r"\s+", " ", flat)
        sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", flat) if "not measurable here" in s]
        repeated = [s for s in sentences if s.count("not measurable here") > 1]
        assert repeated == [], (title, repeated)


# --- figures: every panel title and axis label whole ---------------------------------------

def figure_words(pdf: Path) -> str:
    return re.sub(r"\s+", "", pdf_text(pdf))


def test_knobs_panel_titles_are_whole(built):
    """a3_knobs' panel titles name the factor each experiment varies (factor table words):
    each title's words appear whole in the figure's text (wrapped lines joined)."""
    factors = {r["name"]: r for r in csv.DictReader(open(built["tidy"] / "factors.csv", newline=""))}
    got = figure_words(built["figure_dir"] / "a3_knobs.pdf")
    varied = []
    for exp in ("spin_wait", "read_only", "key_cache", "mdl_hash"):
        path = built["tidy"] / f"{exp}_summary.csv"
        if not path.exists():
            continue
        rows = list(csv.DictReader(open(path, newline="")))
        for name in factors:
            if name in rows[0] and len({r[name] for r in rows}) > 1:
                varied.append(re.sub(r" *\(.*\)$", "", factors[name]["words"]))
    assert varied, "no knob experiment in the fixture"
    for i, words in enumerate(varied):
        # a wrapped title's lines may come out apart: each of its words whole
        for token in f"({chr(97 + i)}) {words}".split():
            assert token in got, (token, got[:400])


AXIS = {  # figure -> the axis titles its script writes (fixed words, not data values)
    "a3_ps_pfs": ["PeakmedianQPS(thousands)"],
    "b_memory": ["Peakmedian(kQPS,log)", "Peakmedian(kQPS)"],   # short: a panel's height holds it
    "c_storage": ["KiBondisk(logscale)"],
}


@pytest.mark.parametrize("name", sorted(AXIS))
def test_axis_titles_are_whole(built, name):
    got = figure_words(built["figure_dir"] / f"{name}.pdf")
    for label in AXIS[name]:
        assert label in got, (name, label)


def test_wrap_label_breaks_long_words_at_underscores():
    theme = paper_build.ROOT / "workflow" / "R" / "theme.R"
    code = (f"suppressMessages(source('{theme}')); "
            "cat(wrap_label('(a) innodb_spin_wait_delay', 12), sep = '|')")
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert all(len(l) <= 12 for l in lines) and "".join(lines).replace(" ", "") == "(a)innodb_spin_wait_delay"
