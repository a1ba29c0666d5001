"""Study A1's datasets as tidy tables: the 30-keyword count gate and the load.

    python -m harness fts-export --datasets DIR... \\
        --gate-out data/tidy/fts_gate.csv --load-out data/tidy/fts_load.csv

Every prepared `fulltext` dataset (data/datasets/<build>/fulltext/<engine>_<corpus>/)
records in its dataset.json the gate rows it passed, its load and index-build
times and the tokenizer settings the server reported. The paper's count table,
the load figure and the section's corpus sentence read these two CSVs, never
the dataset directories (which hold a whole datadir).

Its options are parsed here (main(argv)); `python -m harness fts-export` calls it.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys

from harness import atomic

GATE_FIELDS = ("build", "engine", "corpus", "source", "keyword", "rank", "published", "planted", "measured")
LOAD_FIELDS = ("build", "engine", "corpus", "source", "rows", "bytes", "vocabulary", "load_s", "index_s")
TOKENIZER_PREFIX = "tok_"   # load columns: tok_<server variable> (union over the datasets)


class DatasetError(ValueError):
    """A dataset directory without a usable dataset.json (names the file and the fix)."""


def read_dataset(path: str) -> dict:
    """dataset.json of one prepared fulltext dataset directory (or a copy of that
    file itself, as the recorded test fixtures keep it)."""
    f = path if path.endswith(".json") and not os.path.isdir(path) else os.path.join(path, "dataset.json")
    try:
        with open(f) as fh:
            d = json.load(fh)
    except FileNotFoundError:
        raise DatasetError(f"{f}: missing; prepare the dataset first "
                           f"(snakemake {path})") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{f}: not JSON ({e}); delete {path} and prepare it again") from None
    for key in ("build", "engine", "corpus", "load", "gate"):
        if key not in d:
            raise DatasetError(f"{f}: no '{key}'; is this a fulltext dataset? "
                               f"Prepare it again with the current harness")
    return d


def source_of(d: dict) -> str:
    """'standin' or 'ohsumed': what the corpus was (load.kind, else the key's prefix)."""
    return str((d.get("load") or {}).get("kind") or d["corpus"].split("-", 1)[0])


def gate_rows(d: dict) -> list[dict]:
    """One row per keyword, in the study's order (rank 1..30); `planted` is the
    stand-in's own count of the keyword (its manifest), blank for the real corpus."""
    planted = ((d.get("corpus_manifest") or {}).get("keywords") or {}) if source_of(d) == "standin" else {}
    out = []
    for rank, g in enumerate(d["gate"], 1):
        out.append({"build": d["build"], "engine": d.get("engine") or g.get("engine", ""),
                    "corpus": d["corpus"], "source": source_of(d), "keyword": g["keyword"],
                    "rank": rank, "published": g.get("published", ""),
                    "planted": planted.get(g["keyword"], ""), "measured": g.get("measured", "")})
    return out


def load_row(d: dict) -> dict:
    """The dataset's load: rows, bytes, the stand-in's vocabulary (the generator's word types;
    blank for the real corpus, whose terms are not counted), load and index-build seconds,
    tokenizer settings."""
    ld = d["load"]
    shape = (d.get("corpus_manifest") or {}).get("shape") or {}
    row = {"build": d["build"], "engine": d["engine"], "corpus": d["corpus"], "source": source_of(d),
           "rows": ld.get("rows", ""), "bytes": ld.get("bytes", ""),
           "vocabulary": shape.get("vocabulary_types", "") if source_of(d) == "standin" else "",
           "load_s": ld.get("load_s", ""), "index_s": ld.get("index_s", "")}
    for k, v in sorted((d.get("tokenizer") or {}).items()):
        row[TOKENIZER_PREFIX + k] = v
    return row


def _sort_key(r):
    return (r["build"], r["engine"], r["corpus"], int(r.get("rank") or 0))


def _csv(rows: list[dict], fields) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n", restval="")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def tables(dirs: list[str]) -> tuple[str, str]:
    """(gate CSV, load CSV) of the datasets `dirs` (order of rows: build, engine, corpus, rank)."""
    ds = [read_dataset(p) for p in dirs]
    gate = sorted((r for d in ds for r in gate_rows(d)), key=_sort_key)
    load = sorted((load_row(d) for d in ds), key=_sort_key)
    tok = sorted({k for r in load for k in r if k.startswith(TOKENIZER_PREFIX)})
    return _csv(gate, GATE_FIELDS), _csv(load, LOAD_FIELDS + tuple(tok))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness fts-export", description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=[], help="fulltext dataset directories (or their dataset.json files)")
    ap.add_argument("--gate-out", required=True, help="the count-gate CSV (data/tidy/fts_gate.csv)")
    ap.add_argument("--load-out", required=True, help="the load CSV (data/tidy/fts_load.csv)")
    args = ap.parse_args(argv)
    try:
        gate, load = tables(args.datasets)
    except DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    atomic.write_text(args.gate_out, gate)
    atomic.write_text(args.load_out, load)
    return 0
