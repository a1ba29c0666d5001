"""Study A1's corpus beside OHSUMED's published figures: the deviations table's corpus row.

The artifact's side is computed from the run's own tidy tables of the fulltext datasets
(data/tidy/fts_load.csv: documents, bytes, vocabulary; data/tidy/fts_gate.csv: the
30 keywords' measured matching rows); the studies' side is OHSUMED_PUBLISHED below,
each figure with its source. Mean postings per keyword is the mean over the 30
keywords of the rows matching each (the count the study's table gives); the density
is that mean per 1,000 documents: planting the published counts into a smaller
corpus keeps the postings and multiplies the density.
"""
from __future__ import annotations

from harness.studies.a1.corpusbase import expected_counts
from harness.studies.a1.ohsumed import OHSUMED_RECORDS

# OHSUMED as published. Documents: the two files of the TREC-9 Filtering track's OHSUMED
# (ohsumed.87, 54,710 records; ohsumed.88-91, 293,856), which this artifact's parser counts
# too (harness.studies.a1.ohsumed). Size: the collection's README (Hersh et al.), "about
# 400 megabytes". Keyword rows: study A1's published table (fts_keywords.csv). Distinct
# terms: not published; the estimate is Heaps' law fitted to a 7,400-record sample of its
# titles and abstracts (V = 33.6 n^0.49 over its ~44M tokens) plus ~10^5 author surnames.
OHSUMED_PUBLISHED = {
    "documents": OHSUMED_RECORDS,
    "size": "about 400 MB",
    "terms": "distinct terms not published (250,000-300,000 estimated)",
    "keyword_rows": expected_counts(),
}

GATE_TABLE, LOAD_TABLE = "fts_gate.csv", "fts_load.csv"


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _thousands(x, digits=0) -> str:
    return f"{x:,.{digits}f}"


def published() -> tuple[float, float]:
    """(mean postings per keyword, per 1,000 documents) of OHSUMED as published."""
    rows = list(OHSUMED_PUBLISHED["keyword_rows"].values())
    mean = sum(rows) / len(rows)
    return mean, 1000 * mean / OHSUMED_PUBLISHED["documents"]


def studies_text() -> str:
    p = OHSUMED_PUBLISHED
    mean, density = published()
    return (f"OHSUMED: {_thousands(p['documents'])} documents, {p['size']}; {p['terms']}; the keywords' "
            f"published rows: {mean:.1f} postings per keyword, {density:.2f} per 1,000 documents")


def corpora(gate: list[dict], load: list[dict]) -> list[dict]:
    """One entry per corpus the run loaded: source, documents, bytes, vocabulary, and the mean
    over keywords and datasets of the measured matching rows."""
    out = {}
    for r in load:
        c = out.setdefault(r["corpus"], {"corpus": r["corpus"], "source": r["source"],
                                         "documents": _num(r.get("rows")), "bytes": _num(r.get("bytes")),
                                         "vocabulary": _num(r.get("vocabulary")), "measured": []})
        c["documents"] = c["documents"] or _num(r.get("rows"))
    for r in gate:
        v = _num(r.get("measured"))
        if r.get("corpus") in out and v is not None:
            out[r["corpus"]]["measured"].append(v)
    return [out[k] for k in sorted(out)]


def artifact_text(gate: list[dict], load: list[dict]) -> str | None:
    """The run's corpora in the studies' terms, or None without any fulltext dataset."""
    _, pub_density = published()
    parts = []
    for c in corpora(gate, load):
        name = "OHSUMED" if c["source"] == "ohsumed" else "stand-in"
        words = [f"{name} {c['corpus']}: " + (f"{_thousands(c['documents'])} documents"
                                              if c["documents"] else "documents not recorded")
                 + (f", {c['bytes'] / 1e6:.1f} MB" if c["bytes"] else "")]
        words.append(f"{_thousands(c['vocabulary'])} generated words plus surnames"
                     if c["vocabulary"] else "distinct terms not counted")
        if c["measured"] and c["documents"]:
            mean = sum(c["measured"]) / len(c["measured"])
            density = 1000 * mean / c["documents"]
            words.append(f"measured: {mean:.1f} postings per keyword, {density:.2f} per 1,000 documents "
                         f"({density / pub_density:.1f}× OHSUMED's density)")
        else:
            words.append("no keyword counts measured")
        parts.append("; ".join(words))
    return "; ".join(parts) or None
