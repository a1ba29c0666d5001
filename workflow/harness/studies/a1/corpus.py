"""Study A1's corpus: the real OHSUMED collection (fetched, verified, parsed) or a
deterministic OHSUMED-like stand-in, both written as one LOAD DATA-ready TSV.

Why a stand-in: OHSUMED may not be redistributed and needs internet, so an
offline host measures a generated corpus shaped like it (title ~12 tokens,
~60% of records with a ~180-token abstract, ~3.2 authors, Zipf-like words) in
which each of the study's 30 keywords matches in exactly its published number
of rows. Both engines must then return exactly those counts (the count gate in
harness.studies.a1.fts_server), which proves the tokenizer settings before any timing.

Output of `generate` and `parse_ohsumed` (a directory, written atomically):
  corpus.tsv   docid<TAB>content, one record a line, `\\`, tab, newline, CR and
               NUL escaped as LOAD DATA's defaults expect; latin-1 bytes
  corpus.json  kind (standin|ohsumed), rows, bytes, sha256 of corpus.tsv, ...
"""
from __future__ import annotations

import bisect
import contextlib
import csv
import hashlib
import itertools
import json
import math
import os
import random
import re
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from array import array
from operator import itemgetter
from pathlib import Path

from harness import atomic

KEYWORDS_CSV = Path(__file__).resolve().parent / "fts_keywords.csv"

# MyISAM drops a word from natural-language results once it is in >= 50% of the
# rows (weight log((N-df)/df) <= 0): "phase" (6,676 rows) needs N >= 2*6676+1.
MIN_ROWS = 13353

GENERATOR_VERSION = "standin-1"
PARSER_VERSION = "ohsumed-1"
ENCODING = "latin-1"  # the studies' default charset; OHSUMED and the stand-in are ASCII

# The TREC-9 Filtering archive, the only official copy of OHSUMED (NIST).
OHSUMED_ARCHIVE = "t9.filtering.tar.gz"
OHSUMED_URL = "https://trec.nist.gov/data/filtering/t9.filtering.tar.gz"
OHSUMED_SIZE = 139_454_017
OHSUMED_SHA256 = "39184391aab6d080699882dbfd87de4cbcb24cce8a0cffd611debf18914481b0"
OHSUMED_RECORDS = 348_566  # ohsumed.87 (54,710) + ohsumed.88-91 (293,856)
NLM_NOTICE = ("OHSUMED (NLM MEDLINE references 1987-1991) is incomplete and out-of-date; "
              "use it for experiments only, never in a clinical, library or other setting.")


class CorpusError(Exception):
    """Bad input or output of this module: one line naming the key or file and the fix."""


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


# Where a keyword is planted: author surnames go into the author list; the
# other words into the abstract (or the title of a record without one).
SURNAMES = frozenset({"Pietersz", "Shvero", "Couret", "Fison", "Grahovac", "Meyers", "Tsukamoto",
                      "Smogorzewski", "Favaro", "Krakuer", "Heilbrun", "Odensten", "Beria",
                      "Abdelhamid", "Lecso", "Gintere"})
# Occurrences per matching row beyond the first ~ Geometric (real term frequencies:
# phase 1.72, reports 1.22, earlier 1.06 per record); 1 for every other keyword.
_EXTRA_TF = {"phase": 0.72, "reports": 0.22, "earlier": 0.06}
# Words that must NOT match any keyword: plural/suffix, digit/underscore-joined,
# prefix and substring forms. Each is planted in `_decoy_rows(rows)` rows.
DECOYS = ("phases", "phase2", "phase_II", "subphase", "APTT", "microliters", "reported",
          "athlete", "Lecsoi", "Ginteres", "earliest")
AUTHOR_DECOYS = ("Meyer", "Meyersohn", "Tsukamot")


def _decoy_rows(rows: int) -> int:
    return max(3, rows // 500)


def tokens(text: str) -> list[str]:
    """Words as both engines' FULLTEXT parsers cut them (latin-1, MySQL 5.6 /
    MariaDB): runs of letters, digits and '_', case-folded; everything else,
    including '-', '.' and the apostrophe, separates words."""
    return _WORD.findall(text.lower())


_WORD = re.compile(r"[0-9a-z_\xaa\xb5\xba\xc0-\xd6\xd8-\xf6\xf8-\xff]+")


# -- the stand-in ------------------------------------------------------------------
# The most frequent types of real MEDLINE title/abstract text, in rough rank order
# (function words first, as in any English text); pseudo-words follow.
_TOP_WORDS = (
    "the of and in with to a was were for patients by is that on as 1 from or are 2 after this at "
    "be these p an than which not 3 two been between had but we no results study there it more have "
    "during has other 10 all both 5 significantly increased may treatment who cases 4 also however cell "
    "their levels clinical only disease into those one 6 group compared cells effect years blood "
    "normal associated high 20 most each three found patient use function less used response "
    "total such 12 activity age data 8 effects did when children months mean rate can risk 100 therapy "
    "cancer time can serum women present factors factor studies important analysis 15 evidence"
).split()
_ONSETS = ("b c d f g h j k l m n p r s t v w z br ch cl cr dr fl gl gr ph pl pr sc sk sl sp st "
           "th tr").split()
_VOWELS = ("a e i o u a e i o ae ia io ou y ei").split()
_CODAS = ("", "", "", "", "n", "r", "s", "l", "m", "t", "x", "ct", "st", "nt", "rm", "ph")
_NAME_ENDINGS = ("", "", "", "son", "sen", "ez", "ov", "man", "ski", "oto", "elli", "er", "berg", "ic",
                 "ova", "ier", "ard", "ing")
_SYLLABLES = tuple(o + v for o in _ONSETS for v in _VOWELS)
_SYLLABLE_COUNTS = (1, 2, 3, 4, 5)
_SYLLABLE_CUM = tuple(itertools.accumulate((0.12, 0.34, 0.32, 0.15, 0.07)))

ZIPF_S = 1.2         # rank-frequency slope of the real text (ranks 10..10^4)
ZIPF_Q = 2.7         # Zipf-Mandelbrot offset: flattens the very top ranks
TITLE_MEDIAN, TITLE_SIGMA = 12.0, 0.45        # p10 6, p50 12, p90 20 tokens
ABSTRACT_SHARE = 0.6
ABSTRACT_MEDIAN, ABSTRACT_SIGMA = 176.0, 0.36  # p10 80, p50 176, p90 272 tokens
AUTHORS_EXTRA_MEAN = 2.2                      # 1 + Poisson(2.2): mean 3.2, capped at 10
_BATCH = 2000
_MAX_VOCABULARY = 400_000  # ~2.2M rows; OHSUMED's 348,566 rows need ~180,000 types


def _forbidden() -> set[str]:
    """Case-folded words the random vocabulary must never produce."""
    return {w.lower() for w in KEYWORDS} | {w.lower() for w in DECOYS + AUTHOR_DECOYS}


def _pseudo_word(rng: random.Random, name: bool = False) -> str:
    n = rng.choices(_SYLLABLE_COUNTS, cum_weights=_SYLLABLE_CUM)[0]
    w = "".join(rng.choices(_SYLLABLES, k=n)) + rng.choice(_CODAS)
    if name:
        w = (w + rng.choice(_NAME_ENDINGS)).capitalize()
    return w


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    """`size` distinct types in rank order: real function words, then pseudo-words with a
    number every 16th rank; none equals a keyword or decoy after case folding."""
    forbidden = _forbidden()
    seen = set(forbidden)
    vocab = []
    for w in _TOP_WORDS:
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    numbers = itertools.chain((str(y) for y in range(1991, 1900, -1)), (str(n) for n in itertools.count(7)))
    while len(vocab) < size:
        w = next(numbers) if len(vocab) % 16 == 0 else _pseudo_word(rng)
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    return vocab


def _surnames(rng: random.Random, size: int) -> list[str]:
    """Distinct 'Surname XY' authors (initials are too short for either engine to index)."""
    forbidden = _forbidden()
    seen, out = set(), []
    while len(out) < size:
        s = _pseudo_word(rng, name=True)
        if s.lower() in forbidden or s in seen:
            continue
        seen.add(s)
        initials = "".join(chr(65 + rng.randrange(26)) for _ in range(rng.choice((1, 2, 2))))
        out.append(f"{s} {initials}")
    return out


class _Sampler:
    """Draws many items at C speed instead of one Python call per token: a table of
    2**bits slots holding each item about p * 2**bits times (at least once), indexed
    by random bytes whose high bits are masked off (itemgetter does the lookups)."""

    def __init__(self, items: list[str], s: float, q: float):
        self.bits = min(24, max(22, (32 * len(items) - 1).bit_length()))
        slots = 1 << self.bits
        weights = [1.0 / (r + q) ** s for r in range(1, len(items) + 1)]
        total = sum(weights)
        counts = [max(1, round(w / total * slots)) for w in weights]
        counts[0] += slots - sum(counts)  # the top item absorbs the rounding
        self.table = list(itertools.chain.from_iterable(itertools.repeat(it, c) for it, c in zip(items, counts)))
        self._mask = bytes(min(255, b) & ((1 << (self.bits - 16)) - 1) for b in range(256))

    def draw(self, rng: random.Random, k: int) -> tuple:
        if k <= 0:
            return ()
        raw = bytearray(rng.randbytes(4 * k))
        raw[3::4] = bytes(k)                          # little-endian uint32 < 2**24 ...
        raw[2::4] = raw[2::4].translate(self._mask)   # ... < 2**bits
        idx = array("I", raw)
        if k == 1:
            return (self.table[idx[0]],)
        return itemgetter(*idx)(self.table)


def _poisson_cdf(mean: float, cap: int) -> list[float]:
    p, cdf, acc = math.exp(-mean), [], 0.0
    for k in range(cap + 1):
        acc += p
        cdf.append(acc)
        p *= mean / (k + 1)
    return cdf


def _surface(rng: random.Random, word: str) -> str:
    """A keyword as it may appear in text: any case (the collation folds it) and
    followed by a space, comma, period or semicolon; 'phase' also as 'phase-II'
    (the hyphen separates words, so it matches)."""
    if word in SURNAMES:
        return word
    w = word.lower()
    form = rng.random()
    if form < 0.2:
        w = w.upper()
    elif form < 0.5:
        w = w.capitalize()
    if word == "phase" and rng.random() < 0.1:
        w += "-II"
    return w + rng.choice(("", "", ",", ".", ";"))


def _plant_plan(rng: random.Random, rows: int) -> tuple[dict, dict, dict]:
    """docid -> [(surface, where)] for every keyword and decoy, where is 'author' or 'text';
    plus the planted row counts of keywords and decoys."""
    plan: dict[int, list[tuple[str, str]]] = {}
    planted, decoys = {}, {}
    docids = range(1, rows + 1)
    for word, k in expected_counts().items():
        where = "author" if word in SURNAMES else "text"
        extra = _EXTRA_TF.get(word.lower(), 0.0)
        p_more = extra / (1 + extra)  # Geometric extra occurrences with mean `extra`
        for doc in rng.sample(docids, k):
            n = 1
            while rng.random() < p_more:
                n += 1
            plan.setdefault(doc, []).extend((_surface(rng, word), where) for _ in range(n))
        planted[word] = k
    for word in DECOYS + AUTHOR_DECOYS:
        where = "author" if word in AUTHOR_DECOYS else "text"
        n = _decoy_rows(rows)
        for doc in rng.sample(docids, n):
            plan.setdefault(doc, []).append((word, where))
        decoys[word] = n
    return plan, planted, decoys


def escape(text: str) -> str:
    """A field as LOAD DATA's defaults read it (ESCAPED BY '\\\\', tab and newline terminated)."""
    return (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r").replace("\0", "\\0"))


def _check_rows(rows) -> int:
    if isinstance(rows, bool) or not isinstance(rows, int):
        raise CorpusError(f"rows: {rows!r} is not an integer; use an integer >= {MIN_ROWS}")
    if rows < MIN_ROWS:
        raise CorpusError(f"rows: {rows} is below {MIN_ROWS}, the fewest for which MyISAM's 50% rule still "
                          f"matches 'phase' (6,676 rows); use rows >= {MIN_ROWS}")
    return rows


def generate(out: Path, *, rows: int = 20000, seed: int = 1) -> dict:
    """Write the deterministic OHSUMED-like stand-in (same rows and seed, same bytes) to
    out/corpus.tsv + out/corpus.json, atomically; return the corpus.json content."""
    rows = _check_rows(rows)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise CorpusError(f"seed: {seed!r} is not an integer; use an integer such as 1")
    rng = random.Random(seed)
    expected_tokens = rows * (TITLE_MEDIAN + ABSTRACT_SHARE * ABSTRACT_MEDIAN)
    # Heaps' law of the real text (capped where the sampler's 2**24 slots would get too coarse)
    vocab_size = min(_MAX_VOCABULARY, max(5000, int(33.6 * expected_tokens ** 0.49)))
    vocab = _vocabulary(rng, vocab_size)
    words = _Sampler(vocab, ZIPF_S, ZIPF_Q)
    names = _Sampler(_surnames(rng, min(_MAX_VOCABULARY, max(3000, rows // 3))), 1.0, 1.0)
    plan, planted, decoys = _plant_plan(rng, rows)
    authors_cdf = _poisson_cdf(AUTHORS_EXTRA_MEAN, 9)
    stats = {"title_tokens": 0, "with_abstract": 0, "abstract_tokens": 0, "authors": 0}
    h = hashlib.sha256()
    size = 0
    with atomic.staging_dir(Path(out)) as tmp:
        with open(tmp / "corpus.tsv", "wb") as f:
            for start in range(1, rows + 1, _BATCH):
                docs = range(start, min(rows, start + _BATCH - 1) + 1)
                shape = []
                for _ in docs:
                    nt = min(40, max(2, round(rng.lognormvariate(math.log(TITLE_MEDIAN), TITLE_SIGMA))))
                    na = 0
                    if rng.random() < ABSTRACT_SHARE:
                        na = min(600, max(20, round(rng.lognormvariate(math.log(ABSTRACT_MEDIAN), ABSTRACT_SIGMA))))
                    nau = 1 + bisect.bisect_left(authors_cdf, rng.random() * authors_cdf[-1])
                    shape.append((nt, na, nau, rng.randint(12, 30)))
                toks = words.draw(rng, sum(nt + na for nt, na, _, _ in shape))
                auths = names.draw(rng, sum(s[2] for s in shape))
                lines, t, a = [], 0, 0
                for doc, (nt, na, nau, sentence) in zip(docs, shape):
                    title, abstract = list(toks[t:t + nt]), list(toks[t + nt:t + nt + na])
                    authors = list(auths[a:a + nau])
                    t, a = t + nt + na, a + nau
                    for surface, where in plan.get(doc, ()):
                        if where == "author":
                            initials = chr(65 + rng.randrange(26))
                            authors.insert(rng.randrange(len(authors) + 1), f"{surface} {initials}")
                        else:
                            target = abstract if abstract else title
                            target.insert(rng.randrange(len(target) + 1), surface)
                    content = " ".join(title) + "."
                    if abstract:
                        content += " " + ". ".join(" ".join(abstract[i:i + sentence])
                                                   for i in range(0, len(abstract), sentence)) + "."
                    content += " " + "; ".join(authors) + "."
                    lines.append(f"{doc}\t{escape(content)}\n")
                    stats["title_tokens"] += nt
                    stats["with_abstract"] += na > 0
                    stats["abstract_tokens"] += na
                    stats["authors"] += len(authors)
                data = "".join(lines).encode(ENCODING)
                h.update(data)
                size += len(data)
                f.write(data)
        meta = {
            "kind": "standin", "generator": GENERATOR_VERSION, "seed": seed, "rows": rows,
            "bytes": size, "sha256": h.hexdigest(), "encoding": ENCODING,
            "format": "docid<TAB>content, LOAD DATA default escapes",
            "content": "title + abstract + authors",
            "keywords": planted, "decoys": decoys,
            "shape": {
                "vocabulary_types": len(vocab), "zipf_s": ZIPF_S, "zipf_q": ZIPF_Q,
                "mean_title_tokens": round(stats["title_tokens"] / rows, 2),
                "share_with_abstract": round(stats["with_abstract"] / rows, 3),
                "mean_abstract_tokens": round(stats["abstract_tokens"] / max(1, stats["with_abstract"]), 1),
                "mean_authors": round(stats["authors"] / rows, 2),
            },
        }
        (tmp / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def read_meta(corpus_dir: Path) -> dict:
    """corpus.json of a corpus directory, checked to describe a corpus.tsv beside it."""
    corpus_dir = Path(corpus_dir)
    meta_path, tsv = corpus_dir / "corpus.json", corpus_dir / "corpus.tsv"
    if not meta_path.is_file() or not tsv.is_file():
        raise CorpusError(f"corpus_dir: {corpus_dir} has no corpus.tsv + corpus.json; "
                          f"make it with corpus.generate or corpus.parse_ohsumed")
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


# -- the real OHSUMED ---------------------------------------------------------------
def size_sha256(path: Path) -> tuple[int, str]:
    """(bytes, sha256) of a file, read in 1 MiB chunks (hashlib releases the GIL)."""
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def verify_archive(path: Path, size: int = OHSUMED_SIZE, sha256: str = OHSUMED_SHA256) -> None:
    """Refuse a missing, truncated or corrupted archive before anything parses it."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such archive; fetch it with corpus.fetch_ohsumed "
                          f"(needs internet) or copy {OHSUMED_ARCHIVE} there")
    actual_size, actual_sha = size_sha256(path)
    if actual_size != size or actual_sha != sha256:
        raise CorpusError(f"{path}: {actual_size} bytes, sha256 {actual_sha}; expected {size} bytes, "
                          f"sha256 {sha256}: truncated or corrupted, delete it and fetch it again")


_MEMBER = re.compile(r"(?:^|/)ohsumed\.\d\d(?:-\d\d)?$")
_TAG = re.compile(r"^\.([IUSMTPWA])(?: +(.*))?$")


class _Hashing:
    """A read-only file wrapper that hashes what passes through (the archive is read once)."""

    def __init__(self, f):
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def read(self, n=-1):
        b = self.f.read(n)
        self.h.update(b)
        self.n += len(b)
        return b


def _records(stream):
    """Records of one OHSUMED file: dicts tag -> value. A tag sits alone on its line
    ('.I <seq>' carries its value) and its value is the next line; every record starts
    empty, so one without .W has no abstract (never the previous record's)."""
    rec, tag = None, None
    expect_value = False
    for raw in stream:
        line = raw.decode(ENCODING).rstrip("\r\n")
        if expect_value:
            rec[tag] = line
            expect_value = False
            continue
        m = _TAG.match(line)
        if m and m.group(1) == "I":
            if rec is not None:
                yield rec
            rec, tag = {"I": (m.group(2) or "").strip()}, "I"
        elif m:
            if rec is None:
                raise CorpusError(f"tag .{m.group(1)} before the first .I record; not an OHSUMED file")
            tag = m.group(1)
            if m.group(2):
                rec[tag] = m.group(2)
            else:
                expect_value = True
        elif line.strip() and rec is not None and tag is not None:
            rec[tag] = (rec.get(tag, "") + " " + line).strip()  # a continuation line
    if rec is not None:
        yield rec


def parse_ohsumed(archive: Path, out: Path, *, size: int | None = None, sha256: str | None = None) -> dict:
    """Stream ohsumed.87 .. ohsumed.88-91 out of the tar.gz into out/corpus.tsv +
    corpus.json (content = title + abstract + authors, docid = .I), atomically.
    With `size`/`sha256` the archive is verified first; the real archive (recognised by
    its sha256) must hold exactly 348,566 records."""
    archive = Path(archive)
    if size is not None or sha256 is not None:
        verify_archive(archive, size if size is not None else OHSUMED_SIZE,
                       sha256 if sha256 is not None else OHSUMED_SHA256)
    if not archive.is_file():
        raise CorpusError(f"{archive}: no such archive; fetch it with corpus.fetch_ohsumed")
    files, seen = {}, set()
    no_abstract = 0
    h, nbytes = hashlib.sha256(), 0
    with atomic.staging_dir(Path(out)) as tmp, open(archive, "rb") as raw, \
            open(tmp / "corpus.tsv", "wb") as f:
        src = _Hashing(raw)
        try:
            with tarfile.open(fileobj=src, mode="r|gz") as tar:
                for member in tar:
                    if not member.isfile() or not _MEMBER.search(member.name):
                        continue
                    name = member.name.rsplit("/", 1)[-1]
                    n = 0
                    for rec in _records(tar.extractfile(member)):
                        try:
                            docid = int(rec["I"])
                        except ValueError:
                            raise CorpusError(f"{archive}: {name}: record .I {rec['I']!r} is not a number; "
                                              f"not an OHSUMED file") from None
                        if docid in seen:
                            raise CorpusError(f"{archive}: {name}: .I {docid} appears twice; "
                                              f"the archive is damaged, fetch it again")
                        seen.add(docid)
                        no_abstract += "W" not in rec
                        content = " ".join(rec[k] for k in ("T", "W", "A") if rec.get(k))
                        data = f"{docid}\t{escape(content)}\n".encode(ENCODING)
                        h.update(data)
                        nbytes += len(data)
                        f.write(data)
                        n += 1
                    files[name] = n
                while src.read(1 << 20):  # hash the whole archive, also past the tar's end
                    pass
        except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as e:
            raise CorpusError(f"{archive}: cannot read the tar.gz ({type(e).__name__}: {e}); "
                              f"verify it (corpus.verify_archive) and fetch it again") from None
        records = sum(files.values())
        if not files:
            raise CorpusError(f"{archive}: holds no ohsumed.* file; is it {OHSUMED_ARCHIVE}?")
        archive_sha = src.h.hexdigest()
        if archive_sha == OHSUMED_SHA256 and records != OHSUMED_RECORDS:
            raise CorpusError(f"{archive}: parsed {records} records, the real OHSUMED has {OHSUMED_RECORDS}; "
                              f"the parser is wrong for this archive, report it")
        meta = {
            "kind": "ohsumed", "parser": PARSER_VERSION, "rows": records, "records": records,
            "bytes": nbytes, "sha256": h.hexdigest(), "encoding": ENCODING,
            "format": "docid<TAB>content, LOAD DATA default escapes",
            "content": "title + abstract + authors (.T .W .A)",
            "archive": {"name": archive.name, "bytes": src.n, "sha256": archive_sha,
                        "official": archive_sha == OHSUMED_SHA256},
            "files": files, "records_without_abstract": no_abstract, "notice": NLM_NOTICE,
        }
        (tmp / "corpus.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def fetch_ohsumed(dest: Path, url: str = OHSUMED_URL, *, size: int = OHSUMED_SIZE,
                  sha256: str = OHSUMED_SHA256, timeout: float = 60) -> Path:
    """Download the archive to `dest` (needs internet) and verify it; a partial or
    wrong download is never left at `dest`. An already verified `dest` is kept."""
    dest = Path(dest)
    if dest.is_file():
        verify_archive(dest, size, sha256)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    print(f"note: {NLM_NOTICE}", file=sys.stderr)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.part-", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as resp:
                    for chunk in iter(lambda: resp.read(1 << 20), b""):
                        f.write(chunk)
            except (urllib.error.URLError, OSError, ValueError) as e:
                why = getattr(e, "reason", None) or e
                raise CorpusError(f"fetch_ohsumed: cannot download {url} ({why}); on a host without "
                                  f"internet, download it elsewhere and put it at {dest}") from None
        verify_archive(Path(tmp), size, sha256)
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return dest
