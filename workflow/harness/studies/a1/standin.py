"""Study A1's offline corpus: a deterministic OHSUMED-like stand-in (title ~12
tokens, ~60% of records with a ~180-token abstract, ~3.2 authors, Zipf-like
words) in which each of the 30 keywords matches in exactly its published number
of rows, and decoys that must match none. See harness.studies.a1.corpusbase.
"""
from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import math
import random
from array import array
from operator import itemgetter
from pathlib import Path

from harness import atomic
from harness.studies.a1.corpusbase import ENCODING, KEYWORDS, CorpusError, escape, expected_counts

# MyISAM drops a word from natural-language results once it is in >= 50% of the
# rows (weight log((N-df)/df) <= 0): "phase" (6,676 rows) needs N >= 2*6676+1.
MIN_ROWS = 13353

GENERATOR_VERSION = "standin-1"


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
