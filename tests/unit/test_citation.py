"""The artifact is citable and stands alone, checked offline.

Why each check exists:
- A CITATION.cff that does not validate is silently ignored by the tools
  that read it, so it is validated against the CFF 1.2.0 JSON Schema, a
  local copy (tests/fixtures/cff/schema-1.2.0.json, taken unchanged from the
  cffconvert 2.0.0 package): no network, no cffconvert.
- The three studies must be cited the same way in CITATION.cff and in the
  paper's bibliography, and an inferred author must stay marked as inferred
  in both (docs/studies.md, "Sources").
- The repository must be self-contained: nothing a reader gets (README,
  docs, paper) may point at the developers' notes outside the checkout.
"""
from __future__ import annotations

import copy
import json
import re
import unicodedata
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CFF = ROOT / "CITATION.cff"
BIB = ROOT / "paper" / "references.bib"
SCHEMA = ROOT / "tests" / "fixtures" / "cff" / "schema-1.2.0.json"
STUDY_KEYS = ("studyA", "studyB", "studyC")
# A relative path to the developers' notes next to the checkout.
DEVELOPER_NOTES = re.compile(r"\.\./shared")


# --- helpers ---------------------------------------------------------------

class _CffLoader(yaml.SafeLoader):
    """YAML loader that keeps dates as strings, as the CFF schema expects
    (PyYAML would turn `2026-11-23` into a datetime.date)."""


_CffLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


def load_cff(path: Path) -> dict:
    """CITATION.cff as plain JSON-like data."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_CffLoader)


def cff_errors(data: dict, schema: dict) -> list[str]:
    """Every schema violation of `data`, as 'where: what' lines (formats such
    as `date` checked too)."""
    validator = jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path)))]


def _braced(text: str, start: int) -> tuple[str, int]:
    """The contents of the brace group opening at text[start], and the index
    after its closing brace."""
    depth, i = 0, start
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i + 1
        i += 1
    raise ValueError(f"unbalanced braces from offset {start}")


def parse_bib(text: str) -> dict[str, dict[str, str]]:
    """BibTeX entries as {key: {'ENTRYTYPE': type, field: raw value}}; enough
    for this repository's file (braced, quoted or bare values; no @string)."""
    entries: dict[str, dict[str, str]] = {}
    for m in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,", text):
        body, _ = _braced(text, text.index("{", m.start()))
        body = body[body.index(",") + 1:]
        fields, pos = {"ENTRYTYPE": m.group(1).lower()}, 0
        for f in re.finditer(r"\s*(\w+)\s*=\s*", body):
            if f.start() < pos:
                continue
            name, vstart = f.group(1).lower(), f.end()
            if body[vstart] == "{":
                value, pos = _braced(body, vstart)
            elif body[vstart] == '"':
                end = body.index('"', vstart + 1)
                value, pos = body[vstart + 1:end], end + 1
            else:
                bare = re.match(r"[^,\s}]+", body[vstart:])
                value, pos = bare.group(0), vstart + bare.end()
            fields[name] = value
        if m.group(2) in entries:
            raise ValueError(f"duplicate BibTeX key {m.group(2)}")
        entries[m.group(2)] = fields
    return entries


def norm_title(title: str) -> str:
    """A title compared the way a reader would: LaTeX umlauts resolved,
    braces, case and line breaks ignored."""
    title = re.sub(r'\{?\\"\{?(\w)\}?\}?', lambda m: m.group(1) + "\u0308", title)
    title = title.replace("{", "").replace("}", "")
    return " ".join(unicodedata.normalize("NFC", title).casefold().split())


def developer_note_refs(path: Path) -> list[str]:
    """'file:line: text' for every line of a text file that points at the
    developers' notes outside the checkout."""
    data = path.read_bytes()
    if b"\0" in data:
        return []
    return [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1)
            if DEVELOPER_NOTES.search(line)]


def reader_files() -> list[Path]:
    """Docs and paper sources a reader gets (generated paper output excluded)."""
    files = [p for p in sorted((ROOT / "docs").rglob("*")) if p.is_file()]
    files += [p for p in sorted((ROOT / "paper").rglob("*"))
              if p.is_file() and "generated" not in p.relative_to(ROOT / "paper").parts
              and p.suffix not in {".pdf", ".aux", ".log", ".fls", ".fdb_latexmk",
                                   ".out", ".bbl", ".blg"}]
    return files


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cff() -> dict:
    return load_cff(CFF)


@pytest.fixture(scope="module")
def bib() -> dict[str, dict[str, str]]:
    return parse_bib(BIB.read_text(encoding="utf-8"))


# --- CITATION.cff against the schema ----------------------------------------

def test_schema_fixture_is_cff_1_2_0(schema):
    assert schema["$id"].endswith("/1.2.0/schema.json")
    jsonschema.Draft7Validator.check_schema(schema)


def test_citation_cff_is_valid(cff, schema):
    errors = cff_errors(cff, schema)
    assert not errors, "CITATION.cff is not valid CFF 1.2.0:\n" + "\n".join(errors)


@pytest.mark.parametrize("break_it", [
    lambda d: d.pop("authors"),
    lambda d: d.update({"date-released": "2026-13-45"}),
    lambda d: d.update({"licence": "MIT"}),
    lambda d: d["references"][0].pop("type"),
], ids=["no-authors", "bad-date", "unknown-key", "reference-without-type"])
def test_validation_catches_a_broken_citation(cff, schema, break_it):
    broken = copy.deepcopy(cff)
    break_it(broken)
    assert cff_errors(broken, schema)


def test_the_release_fields_wait_commented_and_validate_once_filled_in(schema):
    """CITATION.cff keeps a place for the repository's address and the archived release's DOI
    (README: how to archive a release): commented until the release exists, and the keys are
    the ones the schema knows, so filling them in gives a valid file."""
    text = CFF.read_text(encoding="utf-8")
    placeholders = {k: re.search(rf"^# ({k}): .*$", text, re.M) for k in ("repository-code", "doi")}
    assert all(placeholders.values()), f"no commented placeholder for {[k for k, m in placeholders.items() if not m]}"
    filled = text.replace("# repository-code: ", "repository-code: ").replace("# doi: ", "doi: ")
    data = yaml.load(filled, Loader=_CffLoader)
    data.update({"repository-code": "https://example.org/mysql-engines", "doi": "10.5281/zenodo.1"})
    assert not cff_errors(data, schema)
    assert cff_errors({**data, "doi": "not a doi"}, schema)  # the check reads the values


def test_artifact_metadata(cff):
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software"
    assert cff["license"] == "MIT"
    assert cff["authors"] == [{"name": "The mysql-engines artifact authors"}]
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License")
    assert "The mysql-engines artifact authors" in licence


# --- CITATION.cff and references.bib agree on the studies -------------------

def test_bib_has_the_studies_and_every_key_the_paper_cites(bib):
    tex = (ROOT / "paper" / "main.tex").read_text(encoding="utf-8")
    cited = {k.strip() for group in re.findall(r"\\(?:no)?cite[tp]?\*?(?:\[[^]]*\])*\{([^}]*)\}", tex)
             for k in group.split(",")}
    missing = sorted((cited | set(STUDY_KEYS)) - set(bib))
    assert not missing, f"paper/references.bib lacks: {missing}"


def test_every_cff_reference_is_a_bib_entry(cff, bib):
    by_title = {norm_title(e.get("title", "")): k for k, e in bib.items()}
    unmatched = [r["title"] for r in cff.get("references", [])
                 if norm_title(r["title"]) not in by_title]
    assert not unmatched, f"CITATION.cff references with no references.bib title: {unmatched}"
    cited = {by_title[norm_title(r["title"])] for r in cff["references"]}
    assert set(STUDY_KEYS) <= cited, f"studies missing from CITATION.cff: {set(STUDY_KEYS) - cited}"


@pytest.mark.parametrize("key", STUDY_KEYS)
def test_study_authorship_is_the_same_in_both(cff, bib, key):
    entry = bib[key]
    ref = next(r for r in cff["references"] if norm_title(r["title"]) == norm_title(entry["title"]))
    persons = [a["family-names"] for a in ref["authors"] if "family-names" in a]
    if persons:  # a printed byline: the same people in the bib entry
        assert "author" in entry, f"{key}: CITATION.cff names {persons}, references.bib no author"
        for family in persons:
            assert family in entry["author"], f"{key}: {family} missing from the bib author"
    else:  # no byline: cited by title, the inferred author only in a note
        assert ref["authors"] == [{"name": "anonymous"}]
        assert "author" not in entry, f"{key}: an inferred author must not be a bib author field"
        assert "inferred" in entry.get("note", "").lower()
        assert "inferred" in ref.get("notes", "").lower()


def test_parse_bib_reads_nested_braces_and_bare_values():
    entries = parse_bib('@misc{k1, title = {{A {B} c}}, month = oct, note = "x, y"}\n'
                        "@book{k2,\n  author = {M{\\\"o}lder, F.},\n  year = {2021}\n}")
    assert entries["k1"] == {"ENTRYTYPE": "misc", "title": "{A {B} c}", "month": "oct",
                             "note": "x, y"}
    assert norm_title(entries["k2"]["author"]) == "mölder, f."


# --- no pointer to the developers' notes ------------------------------------

@pytest.mark.parametrize("name", [
    "README.md",
    *[str(p.relative_to(ROOT)) for p in reader_files()],
])
def test_no_pointer_to_developer_notes(name):
    refs = developer_note_refs(ROOT / name)
    for r in refs:
        print(r)
    assert not refs, "points outside the repository:\n" + "\n".join(refs)
