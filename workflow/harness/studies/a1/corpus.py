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

# Where it lives: harness.studies.a1.corpusbase (keywords, tokens, the TSV and its
# corpus.json), harness.studies.a1.standin (the generator) and
# harness.studies.a1.ohsumed (fetch, verify, parse); their names are used as corpus.<name>.
from harness.studies.a1.corpusbase import (  # noqa: F401
    ENCODING, KEYWORDS, KEYWORDS_CSV, CorpusError, _load_keywords, check_tsv, document_frequencies,
    escape, expected_counts, read_meta, size_sha256, tokens, verify_tsv)
from harness.studies.a1.ohsumed import (  # noqa: F401
    NLM_NOTICE, OHSUMED_ARCHIVE, OHSUMED_RECORDS, OHSUMED_SHA256, OHSUMED_SIZE, OHSUMED_URL,
    PARSER_VERSION, fetch_ohsumed, parse_ohsumed, verify_archive)
from harness.studies.a1.standin import (  # noqa: F401
    AUTHOR_DECOYS, DECOYS, GENERATOR_VERSION, MIN_ROWS, SURNAMES, generate)
