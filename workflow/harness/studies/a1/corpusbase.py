"""What study A1's two corpora share: the 30 keywords and their published row
counts (fts_keywords.csv), the words as the FULLTEXT parsers cut them, the TSV
field escaping, and reading and checking a corpus directory (corpus.tsv +
corpus.json). The corpora themselves: harness.studies.a1.standin (generated)
and harness.studies.a1.ohsumed (the real collection), each written as one LOAD
DATA-ready TSV.

Why a stand-in: OHSUMED may not be redistributed and needs internet, so an
offline host measures a generated corpus shaped like it (title ~12 tokens,
~60% of records with a ~180-token abstract, ~3.2 authors, Zipf-like words) in
which each of the study's 30 keywords matches in exactly its published number
of rows. Both engines must then return exactly those counts (the count gate in
harness.studies.a1.fts_server), which proves the tokenizer settings before any timing.

Output of standin.generate and ohsumed.parse_ohsumed (a directory, written atomically):
  corpus.tsv   docid<TAB>content, one record a line, `\\`, tab, newline, CR and
               NUL escaped as LOAD DATA's defaults expect; latin-1 bytes
  corpus.json  kind (standin|ohsumed), rows, bytes, sha256 of corpus.tsv, ...
"""
from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path

KEYWORDS_CSV = Path(__file__).resolve().parent / "fts_keywords.csv"

ENCODING = "latin-1"  # the studies' default charset; OHSUMED and the stand-in are ASCII


class CorpusError(Exception):
    """Bad input or output of the corpus modules: one line naming the key or file and the fix."""


# -- the 30 keywords ------------------------------------------------------------
def _load_keywords(path: Path = KEYWORDS_CSV) -> list[tuple[int, str, int]]:
    """(rank, keyword, published rows) from the CSV, checked: ranks 1..30 in order."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != ["rank", "keyword", "rows"]:
                raise CorpusError(f"{path}: header is {reader.fieldnames}; it must be rank,keyword,rows")
            out = []
            for i, row in enumerate(reader, start=1):
                try:
                    rank, word, rows = int(row["rank"]), row["keyword"].strip(), int(row["rows"])
                except (TypeError, ValueError):
                    raise CorpusError(f"{path}: line {i + 1} is not rank,keyword,rows "
                                      f"with integer rank and rows; fix that line") from None
                if rank != i or not re.fullmatch(r"[A-Za-z0-9_]+", word) or rows < 0:
                    raise CorpusError(f"{path}: line {i + 1} ({rank},{word},{rows}): ranks must run 1..30 "
                                      f"in order, keywords be single words, rows >= 0; fix that line")
                out.append((rank, word, rows))
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the keyword table ({e.strerror}); restore it from git") from None
    if len(out) != 30 or len({w.lower() for _, w, _ in out}) != 30:
        raise CorpusError(f"{path}: {len(out)} rows; the study has 30 distinct keywords; restore it from git")
    return out


_TABLE = _load_keywords()
KEYWORDS: tuple[str, ...] = tuple(w for _, w, _ in _TABLE)


def expected_counts() -> dict[str, int]:
    """Published matching rows per keyword, in the study's order (identical on both engines)."""
    return {w: n for _, w, n in _TABLE}


def tokens(text: str) -> list[str]:
    """Words as both engines' FULLTEXT parsers cut them (latin-1, MySQL 5.6 /
    MariaDB): runs of letters, digits and '_', case-folded; everything else,
    including '-', '.' and the apostrophe, separates words."""
    return _WORD.findall(text.lower())


_WORD = re.compile(r"[0-9a-z_\xaa\xb5\xba\xc0-\xd6\xd8-\xf6\xf8-\xff]+")


def escape(text: str) -> str:
    """A field as LOAD DATA's defaults read it (ESCAPED BY '\\\\', tab and newline terminated)."""
    return (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r").replace("\0", "\\0"))


def read_meta(corpus_dir: Path) -> dict:
    """corpus.json of a corpus directory, checked to describe a corpus.tsv beside it."""
    corpus_dir = Path(corpus_dir)
    meta_path, tsv = corpus_dir / "corpus.json", corpus_dir / "corpus.tsv"
    if not meta_path.is_file() or not tsv.is_file():
        raise CorpusError(f"corpus_dir: {corpus_dir} has no corpus.tsv + corpus.json; "
                          f"make it with standin.generate or ohsumed.parse_ohsumed")
    try:
        meta = json.loads(meta_path.read_text())
    except ValueError as e:
        raise CorpusError(f"{meta_path}: not JSON ({e}); make the corpus again") from None
    missing = [k for k in ("kind", "rows", "bytes", "sha256") if k not in meta]
    if missing:
        raise CorpusError(f"{meta_path}: lacks {', '.join(missing)}; make the corpus again")
    return meta


def verify_tsv(corpus_dir: Path) -> dict:
    """read_meta, and the TSV's size and sha256 must be the ones corpus.json records."""
    meta = read_meta(corpus_dir)
    check_tsv(corpus_dir, meta, *size_sha256(Path(corpus_dir) / "corpus.tsv"))
    return meta


def check_tsv(corpus_dir: Path, meta: dict, size: int, sha: str | None = None) -> None:
    """Refuse a TSV whose size (and sha256, when given) differ from corpus.json's."""
    if size != meta["bytes"] or (sha is not None and sha != meta["sha256"]):
        tsv = Path(corpus_dir) / "corpus.tsv"
        raise CorpusError(f"{tsv}: {size} bytes, sha256 {sha or '(not computed)'}, but corpus.json says "
                          f"{meta['bytes']} bytes, sha256 {meta['sha256']}; the file changed: make the corpus again")


def document_frequencies(tsv: Path, words) -> dict[str, int]:
    """Rows of a corpus TSV whose content holds each word as a token (see `tokens`):
    what both engines should count; for a real corpus, the reference for the gate."""
    want = {w.lower(): w for w in words}
    df = dict.fromkeys(want.values(), 0)
    with open(tsv, encoding=ENCODING) as f:
        for line in f:
            _, _, content = line.rstrip("\n").partition("\t")
            for tok in set(tokens(content)) & want.keys():
                df[want[tok]] += 1
    return df


def size_sha256(path: Path) -> tuple[int, str]:
    """(bytes, sha256) of a file, read in 1 MiB chunks (hashlib releases the GIL)."""
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()
