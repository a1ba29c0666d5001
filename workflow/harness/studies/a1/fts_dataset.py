"""Study A1's dataset: a corpus (the real OHSUMED collection, or the seeded
offline stand-in) loaded into one table per engine, `docid int PRIMARY KEY,
content text`, then `ALTER TABLE ... ADD FULLTEXT INDEX (content)` as the study
did, and the 30 keywords' counts checked (the gate) before anything is measured.

The corpus itself is built once (data/corpus/<corpus key>/), independent of the
engine and the build.
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from harness.studies.a1 import corpusbase, ohsumed
from harness.studies.a1 import fts_server as fulltext

DB = "fts"
# what harness.plan.config checks of an experiment on it: the one workload it serves (the
# workload's `dataset` says the converse), its tables, and the keys it reads beside a
# throughput experiment's own (kind_keys)
WORKLOAD = "fts"
TABLES = [1]
SPEC_KEYS = ("corpus",)
ROW_S = 1 / 5_000  # seconds to load a row, its FULLTEXT index included (harness.plan.estimate)
# the workload (its sysbench driver, fts.lua beside this file): `dataset`, the one it runs on;
# `with_args` {a driver option: fts.lua's options that go with it}: with sysbench's prepared
# statements, one server-side statement with the word bound
DRIVER = {"script": str(Path(__file__).resolve().parent / "fts.lua"), "args": [], "statements": [],
          "dataset": "fulltext", "with_args": {"--db-ps-mode=auto": ["--fts-ps=on"]}}


def corpus_key(corpus: dict) -> str:
    if corpus["source"] == "ohsumed":
        return "ohsumed"
    return f"standin-n{corpus['rows']}-s{corpus['seed']}"


def archive_identity(c: dict) -> tuple[int, str]:
    """(bytes, sha256) the profile expects of the OHSUMED archive: NIST's t9.filtering.tar.gz
    unless corpus.size and corpus.sha256 name another copy of the collection."""
    return c.get("size", ohsumed.OHSUMED_SIZE), c.get("sha256", ohsumed.OHSUMED_SHA256)


@functools.lru_cache(maxsize=8)
def _size_sha256(path: str, stamp: tuple) -> tuple[int, str]:
    return corpusbase.size_sha256(Path(path))  # once per file state (stamp) in a process


def check_spec(spec: dict, where: str) -> None:
    """The corpus keys of a fulltext experiment (harness.plan.config, before anything
    runs): with source ohsumed, size and sha256 together or neither, and a given archive
    present with that size and sha256. Raises ValueError naming the key and the fix."""
    c, key = spec.get("corpus") or {}, f"{where}.corpus"
    if c.get("source") != "ohsumed":
        return
    if ("size" in c) != ("sha256" in c):
        lacks = "sha256" if "size" in c else "size"
        raise ValueError(f"{key}.{lacks}: size and sha256 name another copy of the archive together; "
                         f"set both, or neither for NIST's {ohsumed.OHSUMED_ARCHIVE}")
    arch = c.get("archive")
    if not arch:
        return  # the corpus rule downloads NIST's archive and verifies it
    if not Path(arch).is_file():
        raise ValueError(f"{key}.archive: {arch} does not exist; give the path of {ohsumed.OHSUMED_ARCHIVE}, "
                         f"or remove it to download the archive")
    size, sha = archive_identity(c)
    st = os.stat(arch)
    got_size, got_sha = (st.st_size, None) if st.st_size != size else \
        _size_sha256(os.path.realpath(arch), (st.st_size, st.st_mtime_ns, st.st_ino))
    if (got_size, got_sha) == (size, sha):
        return
    what, got, want = ("size", f"{got_size:,} bytes", f"{size:,}") if got_size != size else \
        ("sha256", f"sha256 {got_sha}", sha)
    fix = (f"set {key}.{what} to it if this is the copy you mean, or give the archive it names" if what in c
           else f"it is truncated or not NIST's archive: delete it and fetch it again ({ohsumed.OHSUMED_URL})")
    said = f"{key}.{what} says {want}" if what in c else f"NIST's has {want}"
    raise ValueError(f"{key}.archive: {arch} has {got}, {said}; {fix}")


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
    return [f"--mysql-socket={socket}", "--mysql-user=root", f"--mysql-db={DB}",  # fts.lua's connection
            f"--fts-table={table(cell['engine'])}"]                               # and its table


def rows(key: str) -> int:
    c = parse_key(key)["corpus"]
    return ohsumed.OHSUMED_RECORDS if c == "ohsumed" else int(c.split("-")[1][1:])


def extra_inputs(key: str, root: str = "data/corpus") -> dict:
    """What the dataset rule reads besides the build and template: the corpus."""
    return {"corpus": f"{root}/{parse_key(key)['corpus']}"}


def check_inputs(params: dict, corpus_dir) -> None:
    """The corpus is the one its corpus.json describes (size and sha256): a changed or
    truncated corpus.tsv is refused here, before a server starts."""
    if corpus_dir is None:
        raise ValueError("fulltext dataset: no corpus directory given")
    corpusbase.verify_tsv(Path(corpus_dir))


def gate_reference(params: dict, corpus_dir: Path, meta: dict) -> dict[str, int]:
    """The rows each keyword must match: the stand-in's are the published counts (planted);
    a real corpus's are its own, each keyword's rows as the engines' tokenizer cuts the
    words (corpus.json's `keywords`, counted by the parser; counted here for an older corpus)."""
    if params["corpus"].startswith("standin"):
        return corpusbase.expected_counts()
    ref = meta.get("keywords") or corpusbase.document_frequencies(corpus_dir / "corpus.tsv", corpusbase.KEYWORDS)
    return {w: int(ref[w]) for w in corpusbase.KEYWORDS}


def load(srv, params: dict, *, cpus, run_id: str, corpus_dir=None, out=None) -> dict:
    """Bulk load + index build (timed), then the count gate on this engine."""
    if corpus_dir is None:
        raise ValueError("fulltext dataset: no corpus directory given")
    engine = params["engine"]
    srv.query(f"CREATE DATABASE {DB}")
    info = fulltext.load(srv, engine, Path(corpus_dir), db=DB, table=table(engine))
    meta = corpusbase.read_meta(Path(corpus_dir))
    gate = fulltext.count_gate(srv, {engine: table(engine)}, gate_reference(params, Path(corpus_dir), meta), db=DB)
    return {"load": info, "gate": gate, "corpus_manifest": meta,
            "tokenizer": fulltext.tokenizer_settings(srv)}
