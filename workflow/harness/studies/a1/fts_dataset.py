"""Study A1's dataset: a corpus (the real OHSUMED collection, or the seeded
offline stand-in) loaded into one table per engine, `docid int PRIMARY KEY,
content text`, then `ALTER TABLE ... ADD FULLTEXT INDEX (content)` as the study
did, and the 30 keywords' counts checked (the gate) before anything is measured.

The corpus itself is built once (data/corpus/<corpus key>/), independent of the
engine and the build.
"""
from __future__ import annotations

import re
from pathlib import Path

from harness.measure import sysbench
from harness.studies.a1 import corpus
from harness.studies.a1 import fts_server as fulltext

DB = "fts"


def corpus_key(corpus: dict) -> str:
    if corpus["source"] == "ohsumed":
        return "ohsumed"
    return f"standin-n{corpus['rows']}-s{corpus['seed']}"


def table(engine: str) -> str:
    return f"ohsumed_{engine.lower()}"


def key(spec: dict, cell: dict) -> str:
    return f"{cell['engine']}_{corpus_key(spec.get('corpus') or {})}"


def parse_key(key: str) -> dict:
    m = re.fullmatch(r"(?P<engine>[A-Za-z]+)_(?P<corpus>ohsumed|standin-n\d+-s\d+)", key)
    if not m:
        raise ValueError(f"fulltext dataset key '{key}': expected <engine>_<ohsumed|standin-n<rows>-s<seed>>")
    return {"engine": m["engine"], "corpus": m["corpus"]}


def server_options(params: dict, family: str) -> dict:
    return fulltext.server_options(family)


def unsupported(cell: dict, entry: dict) -> str | None:
    if cell["engine"] not in fulltext.engines_with_fts(entry["family"]):
        return f"no FULLTEXT index on {cell['engine']} in {entry['family']}"
    return None


def driver_args(spec: dict, cell: dict, socket) -> list[str]:
    return sysbench.fts_args(socket=socket, db=DB, table=table(cell["engine"]))


def rows(key: str) -> int:
    c = parse_key(key)["corpus"]
    return corpus.OHSUMED_RECORDS if c == "ohsumed" else int(c.split("-")[1][1:])


def extra_inputs(key: str, root: str = "data/corpus") -> dict:
    """What the dataset rule reads besides the build and template: the corpus."""
    return {"corpus": f"{root}/{parse_key(key)['corpus']}"}


def check_inputs(params: dict, corpus_dir) -> None:
    """The corpus is the one its corpus.json describes (size and sha256): a changed or
    truncated corpus.tsv is refused here, before a server starts."""
    if corpus_dir is None:
        raise ValueError("fulltext dataset: no corpus directory given")
    corpus.verify_tsv(Path(corpus_dir))


def load(srv, params: dict, *, cpus, run_id: str, corpus_dir=None, out=None) -> dict:
    """Bulk load + index build (timed), then the count gate on this engine."""
    if corpus_dir is None:
        raise ValueError("fulltext dataset: no corpus directory given")
    engine = params["engine"]
    srv.query(f"CREATE DATABASE {DB}")
    info = fulltext.load(srv, engine, Path(corpus_dir), db=DB, table=table(engine))
    meta = corpus.read_meta(Path(corpus_dir))
    expected = corpus.expected_counts() if params["corpus"].startswith("standin") else None
    gate = fulltext.count_gate(srv, {engine: table(engine)}, expected, db=DB)
    return {"load": info, "gate": gate, "corpus_manifest": meta,
            "tokenizer": fulltext.tokenizer_settings(srv)}
