"""Study A1 on the real-corpus path (`corpus: {source: ohsumed, archive: …}`), end to end
through Snakemake on real servers (MySQL 5.6.24, the default backend), in a fresh copy of
the repository.

The archive is made here, in the layout and fields of NIST's t9.filtering.tar.gz
(ohsumed.87 and ohsumed.88-91 inside the tar.gz beside files that hold no records; each
record `.I n` then the tags .U .S .M .T .P .W .A alone on a line, each value on the
next; some records without .W), with a few hundred records and some of the 30 keywords
planted at counts of the test's choosing. The profile names that archive's size and
sha256 (corpus.size, corpus.sha256: another copy than NIST's). The pipeline parses it,
loads it into InnoDB and MyISAM, passes the count gate against the corpus's own counts
(the planted ones, not the published ones a corpus this small cannot have) and measures
one FTS cell per engine. A missing archive, a wrong size or sha256 stop the pipeline
with one line naming the key before anything runs."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import copy_checkout, server_pids

from harness.studies.a1 import corpusbase, ohsumed

pytestmark = pytest.mark.e2e
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TARGETS = ["data/tidy/fts_gate.csv", "data/tidy/fts.csv", "paper/generated/fts_counts.tex"]
ENGINES = ("InnoDB", "MyISAM")
FILES = {"ohsu-trec/trec9-train/ohsumed.87": range(1, 121),           # docids as NIST numbers them:
         "ohsu-trec/trec9-test/ohsumed.88-91": range(54711, 54891)}   # the second file continues
# planted rows per keyword (the rest: 0); every count under half the rows (MyISAM's 50% rule)
IN_TEXT = {"phase": 40, "REPORTS": 25, "Earlier": 12, "athletes": 8, "microliter": 6, "jejuni": 5,
           "functionalized": 3, "peroxy": 2, "eburnated": 1}
IN_AUTHORS = {"Meyers": 15, "Tsukamoto": 6, "Pietersz": 4, "Heilbrun": 3, "Couret": 2, "Beria": 1}
IN_MESH_ONLY = "Lecso"  # in .M of some records: a field the corpus does not load, so 0 rows
DECOYS = ["phases", "phase2", "phase_II", "microliters", "APTT", "Meyersson", "athlete"]
FILLER = ("patients study clinical results treatment cells levels increased effect group during "
          "compared serum acute chronic therapy response disease blood cardiac renal tissue plasma "
          "children dose human normal cases analysis function observed significant protein").split()
SURNAMES = "Smith Jones Brown Garcia Miller Davis Wilson Moore Taylor Anderson Thomas White".split()


def plant_plan(rng: random.Random, docids: list[int]) -> dict[int, dict]:
    """docid -> {"text": [keywords], "authors": [surnames], "mesh": bool}."""
    plan = {d: {"text": [], "authors": [], "mesh": False} for d in docids}
    for table, field in ((IN_TEXT, "text"), (IN_AUTHORS, "authors")):
        for word, n in table.items():
            for d in rng.sample(docids, n):
                plan[d][field].append(word)
    for d in rng.sample(docids, 10):
        plan[d]["mesh"] = True
    return plan


def _surface(rng: random.Random, word: str) -> str:
    return rng.choice([word, word.lower(), word.upper(), word.capitalize()])


def _words(rng: random.Random, n: int, planted: list[str]) -> str:
    """n filler words with the planted ones (some twice: a row counts once) and a decoy
    among them, separated as prose is."""
    words = [rng.choice(FILLER) for _ in range(n)]
    for w in planted + [w for w in planted if rng.random() < 0.3]:
        words.insert(rng.randrange(len(words) + 1), _surface(rng, w))
    if rng.random() < 0.4:
        words.insert(rng.randrange(len(words) + 1), rng.choice(DECOYS))
    seps = [rng.choice([" ", " ", " ", ", ", "; ", ". ", "-"]) for _ in words]
    return "".join(w + s for w, s in zip(words, seps)).strip() + "."


def record(rng: random.Random, docid: int, plan: dict, abstract: bool) -> list[str]:
    """One record in OHSUMED's layout: '.I n', then each tag alone, its value on the next line."""
    text, title = plan["text"], []
    if not abstract:  # a title-only record carries its keywords in the title
        title, text = text, []
    authors = [f"{rng.choice(SURNAMES)} {rng.choice('ABCDK')}{rng.choice('JLMR')}" for _ in range(rng.randint(1, 4))]
    authors += [f"{s} {rng.choice('ABCDK')}" for s in plan["authors"]]
    rng.shuffle(authors)
    mesh = "Humans; Adult; Middle Age" + ("; Lecso/*" if plan["mesh"] else "") + "."
    out = [f".I {docid}", ".U", f"88{docid:06d}", ".S", f"J Test Med 88{docid % 12 + 1:02d}; 3(2):{docid}-9",
           ".M", mesh, ".T", _words(rng, rng.randint(6, 14), title), ".P", "JOURNAL ARTICLE."]
    if abstract:
        out += [".W", _words(rng, rng.randint(40, 120), text)]
    return out + [".A", "; ".join(authors) + "."]


def build_archive(path: Path, seed: int = 7) -> dict:
    """The archive and what was planted: rows, per-file records, records without abstract,
    keyword -> rows."""
    rng = random.Random(seed)
    docids = [d for r in FILES.values() for d in r]
    with_abstract = {d for d in docids if rng.random() < 0.6}
    plan = plant_plan(rng, docids)
    members = {"ohsu-trec/README.t9.filtering": b"TREC-9 filtering: not a record file\n",
               "ohsu-trec/trec9-train/query.ohsu.1-63": b"<top>\n<num> Number: OHSU1\n</top>\n",
               "ohsu-trec/trec9-train/qrels.ohsu.batch.87": b"1 0 54711 1\n"}
    for name, ids in FILES.items():
        lines = [l for d in ids for l in record(rng, d, plan[d], d in with_abstract)]
        members[name] = ("\n".join(lines) + "\n").encode("latin-1")
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 969_000_000
            tar.addfile(info, io.BytesIO(data))
    keywords = dict.fromkeys(corpusbase.KEYWORDS, 0) | IN_TEXT | IN_AUTHORS
    return {"rows": len(docids), "files": {n.rsplit("/", 1)[1]: len(r) for n, r in FILES.items()},
            "without_abstract": len(docids) - len(with_abstract), "keywords": keywords}


def profile(archive: Path, **corpus_keys) -> dict:
    """A1's fts experiment alone, reduced: both engines at 2 users, 2 s runs, one block."""
    corp = {"source": "ohsumed", "archive": str(archive), **corpus_keys}
    return {"profile": "ohsumed-e2e", "sysbench": {"warmup_s": 0, "duration_s": 2},
            "claims": {"decide": False},
            "experiment_defaults": {"repetitions": 1, "corpus": corp},
            "experiments": {**{k: {"enabled": False} for k in DEFAULT_EXPERIMENTS},
                            "fts": {"engines": list(ENGINES), "users": [2], "cores": "max"}}}


DEFAULT_EXPERIMENTS = list(yaml.safe_load((Path(__file__).resolve().parents[2] / "config/default.yaml")
                                          .read_text())["experiments"])


def snakemake(work: Path, prof: dict, *args) -> subprocess.CompletedProcess:
    (work / "ohsumed.yaml").write_text(yaml.safe_dump(prof))
    return subprocess.run([SNAKEMAKE, *TARGETS, "--cores", "all", *args, "--configfile", "ohsumed.yaml"],
                          cwd=work, capture_output=True, text=True, timeout=3600)


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> tuple[Path, int, str, dict]:
    p = tmp_path_factory.mktemp("nist") / ohsumed.OHSUMED_ARCHIVE
    planted = build_archive(p)
    data = p.read_bytes()
    return p, len(data), hashlib.sha256(data).hexdigest(), planted


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return copy_checkout(tmp_path_factory.mktemp("ohsumed-e2e"))


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Path:
    """A copy of its own for the refused profiles: nothing may appear in it."""
    return copy_checkout(tmp_path_factory.mktemp("ohsumed-bad"))


@pytest.fixture(scope="module")
def run(work, archive):
    path, size, sha, planted = archive
    res = snakemake(work, profile(path, size=size, sha256=sha))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return work, planted


def test_the_test_archive_has_the_real_layout(archive):
    path, _, _, planted = archive
    with tarfile.open(path) as tar:
        names = tar.getnames()
        first = tar.extractfile("ohsu-trec/trec9-train/ohsumed.87").read().decode().splitlines()
    assert set(FILES) <= set(names) and len(names) == len(FILES) + 3
    assert first[:12] == [".I 1", ".U", first[2], ".S", first[4], ".M", first[6], ".T", first[8], ".P",
                          "JOURNAL ARTICLE.", first[11]] and first[11] in (".W", ".A")
    assert 0 < planted["without_abstract"] < planted["rows"] / 2
    # no filler word, surname or decoy is a keyword: only the planted ones count
    keys = {k.lower() for k in corpusbase.KEYWORDS}
    assert not keys & {w.lower() for w in FILLER + SURNAMES + DECOYS}
    assert max(planted["keywords"].values()) < planted["rows"] / 2  # MyISAM's 50% rule keeps them


@pytest.mark.parametrize("change, key, fix", [
    ("missing", "experiments.fts.corpus.archive", "does not exist"),
    ("size", "experiments.fts.corpus.archive", "corpus.size says"),
    ("sha256", "experiments.fts.corpus.archive", "corpus.sha256 says"),
    ("nist", "experiments.fts.corpus.archive", "NIST's has 139,454,017; it is truncated or not NIST's"),
    ("half", "experiments.fts.corpus.sha256", "set both, or neither"),
])
def test_bad_archive_input_stops_before_anything_runs_in_one_line(bare, archive, tmp_path, change, key, fix):
    path, size, sha, _ = archive
    keys = {"missing": dict(size=size, sha256=sha), "size": dict(size=size + 1, sha256=sha),
            "sha256": dict(size=size, sha256="0" * 64), "nist": {}, "half": dict(size=size)}[change]
    arch = tmp_path / "gone.tar.gz" if change == "missing" else path
    before = server_pids()
    res = snakemake(bare, profile(arch, **keys))
    out = res.stdout + res.stderr
    errors = [l for l in out.splitlines() if l.startswith("config error:")]
    assert res.returncode != 0 and len(errors) == 1, out[-3000:]
    assert errors[0].startswith(f"config error: {key}: ") and fix in errors[0], errors[0]
    assert "Traceback" not in out and server_pids() == before
    assert not (bare / "data/corpus").exists() and not (bare / "data/datasets").exists()


def test_the_archive_is_parsed_as_made(run, archive):
    work, planted = run
    _, size, sha, _ = archive
    meta = json.loads((work / "data/corpus/ohsumed/corpus.json").read_text())
    assert meta["kind"] == "ohsumed" and meta["rows"] == planted["rows"]
    assert meta["files"] == planted["files"]
    assert meta["records_without_abstract"] == planted["without_abstract"]
    assert meta["keywords"] == planted["keywords"]  # the parser's count: the gate's reference
    assert meta["archive"] == {"name": ohsumed.OHSUMED_ARCHIVE, "bytes": size, "sha256": sha, "official": False}
    assert corpusbase.verify_tsv(work / "data/corpus/ohsumed")["rows"] == planted["rows"]


@pytest.mark.parametrize("engine", ENGINES)
def test_each_engine_loaded_it_and_counted_what_was_planted(run, engine):
    work, planted = run
    d = json.loads((work / f"data/datasets/mysql-5.6.24/fulltext/{engine}_ohsumed/dataset.json").read_text())
    assert d["corpus"] == "ohsumed" and d["load"]["rows"] == planted["rows"]
    assert d["load"]["load_s"] > 0 and d["load"]["index_s"] > 0
    assert {g["keyword"]: g["measured"] for g in d["gate"]} == planted["keywords"]
    assert [g["keyword"] for g in d["gate"]] == list(corpusbase.KEYWORDS)  # the study's order
    assert d["tokenizer"]["ft_min_word_len"] == "4" and d["tokenizer"]["innodb_ft_min_token_size"] == "3"


def test_the_gate_table_and_the_paper_s_count_table_show_the_corpus(run):
    work, planted = run
    rows = list(csv.DictReader(open(work / "data/tidy/fts_gate.csv")))
    assert len(rows) == 2 * len(corpusbase.KEYWORDS) and {r["source"] for r in rows} == {"ohsumed"}
    assert all(int(r["measured"]) == planted["keywords"][r["keyword"]] for r in rows)
    assert all(int(r["published"]) == corpusbase.expected_counts()[r["keyword"]] for r in rows)
    tex = (work / "paper/generated/fts_counts.tex").read_text()
    assert f"Corpus: OHSUMED ({planted['rows']} rows)" in tex
    assert r"phase & 6676 & measured & \textbf{40} & \textbf{40}" in tex  # differs from the published


def test_one_fts_cell_per_engine_was_measured_on_it(run):
    work, _ = run
    cells = sorted((work / "data/raw/A1/fts").iterdir())
    assert len(cells) == len(ENGINES)
    for c in cells:
        m = json.loads((c / "manifest.json").read_text())
        assert m["cell"] == c.name and m["kind"] == "throughput"
        assert m["placement"]["backend"] == "docker"
    tidy = list(csv.DictReader(open(work / "data/tidy/fts.csv")))
    assert sorted(r["engine"] for r in tidy) == sorted(ENGINES)
    assert all(float(r["qps"]) > 0 for r in tidy)
