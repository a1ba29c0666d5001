"""Study A1's corpus without a server: the keyword table, the deterministic stand-in
(checked with a tokenizer of its own that cuts words as both engines do), and the
OHSUMED archive checks and parser on a small fake archive built here.
Also the pure parts of harness.studies.a1.fts_server (options per build family)."""
from __future__ import annotations

import hashlib
import io
import json
import math
import re
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from conftest import flip_byte, tmp_siblings

from harness.studies.a1 import corpusbase, fts_dataset, ohsumed
from harness.studies.a1 import standin as generator  # the name `standin` is the fixture

# Both engines' FULLTEXT parsers (MyISAM ft_parser.c, InnoDB's copy of its macros): a word

from harness.studies.a1 import fts_server as fulltext

from harness.measure import mycnf
# is a run of letters, digits and '_'; any other byte separates; the _ci collation folds case.
WORD = re.compile(r"[A-Za-z0-9_]+")
ROWS = generator.MIN_ROWS


def df_of(tsv: Path, words) -> tuple[Counter, int]:
    want = {w.lower() for w in words}
    df, n = Counter(), 0
    for line in tsv.read_text(encoding="latin-1").splitlines():
        docid, content = line.split("\t", 1)
        df.update({t.lower() for t in WORD.findall(content)} & want)
        n += 1
    return df, n


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("standin") / "corpus"
    return out, generator.generate(out, rows=ROWS, seed=1)


# -- the keyword table -------------------------------------------------------------
def test_keyword_table_is_the_study_s_30_in_order():
    counts = corpusbase.expected_counts()
    assert list(counts) == list(corpusbase.KEYWORDS) and len(counts) == 30
    assert corpusbase.KEYWORDS[0] == "Pietersz" and corpusbase.KEYWORDS[-1] == "Abdelhamid"
    assert counts["phase"] == 6676 and counts["REPORTS"] == 4011 and counts["Earlier"] == 2900
    assert counts["Lecso"] == 0 and counts["Gintere"] == 0
    # MyISAM's 50% rule: the most frequent keyword must stay below half of the rows
    assert generator.MIN_ROWS == 2 * max(counts.values()) + 1


@pytest.mark.parametrize("text, what", [
    ("rank,word,rows\n1,a,1\n", "header"),
    ("rank,keyword,rows\n1,Pietersz,6\n2,REPORTS,4011\n", "30 distinct"),
    ("rank,keyword,rows\n1,Pietersz,6\n3,REPORTS,4011\n", "line 3"),
    ("rank,keyword,rows\n1,Pietersz,x\n", "line 2"),
])
def test_a_damaged_keyword_table_is_refused_naming_the_file(tmp_path, text, what):
    bad = tmp_path / "kw.csv"
    bad.write_text(text)
    with pytest.raises(corpusbase.CorpusError, match=re.escape(str(bad))) as e:
        corpusbase._load_keywords(bad)
    assert what in str(e.value) and "\n" not in str(e.value)


# -- the stand-in ---------------------------------------------------------------------
def test_same_seed_same_bytes_other_seed_other_bytes(standin, tmp_path):
    out, meta = standin
    again = generator.generate(tmp_path / "again", rows=ROWS, seed=1)
    assert again["sha256"] == meta["sha256"]
    assert (tmp_path / "again" / "corpus.tsv").read_bytes() == (out / "corpus.tsv").read_bytes()
    other = generator.generate(tmp_path / "other", rows=ROWS, seed=2)
    assert other["sha256"] != meta["sha256"]


def test_manifest_describes_the_tsv(standin):
    out, meta = standin
    data = (out / "corpus.tsv").read_bytes()
    on_disk = json.loads((out / "corpus.json").read_text())
    assert on_disk == meta
    assert meta["kind"] == "standin" and meta["seed"] == 1 and meta["rows"] == ROWS
    assert meta["generator"] == generator.GENERATOR_VERSION
    assert meta["bytes"] == len(data) and meta["sha256"] == hashlib.sha256(data).hexdigest()
    assert corpusbase.verify_tsv(out) == meta
    assert not tmp_siblings(out.parent)


def test_every_keyword_matches_exactly_its_published_rows(standin):
    out, meta = standin
    df, n = df_of(out / "corpus.tsv", corpusbase.KEYWORDS)
    assert n == ROWS
    expected = corpusbase.expected_counts()
    assert {w: df[w.lower()] for w in corpusbase.KEYWORDS} == expected
    assert meta["keywords"] == expected
    assert all(df[w.lower()] < n / 2 for w in corpusbase.KEYWORDS)  # MyISAM's 50% rule keeps all
    assert df["lecso"] == 0 and df["gintere"] == 0
    # the module's own tokenizer agrees with this one
    assert corpusbase.document_frequencies(out / "corpus.tsv", corpusbase.KEYWORDS) == expected


def test_docids_are_1_to_rows_and_lines_are_load_data_clean(standin):
    out, _ = standin
    lines = (out / "corpus.tsv").read_text(encoding="latin-1").split("\n")
    assert lines[-1] == ""
    assert [int(l.split("\t", 1)[0]) for l in lines[:-1]] == list(range(1, ROWS + 1))
    assert all(l.count("\t") == 1 and "\\" not in l for l in lines[:-1])


def test_surnames_are_planted_among_the_authors(standin):
    out, _ = standin
    surnames = {w.lower() for w in generator.SURNAMES}
    seen = Counter()
    for line in (out / "corpus.tsv").read_text(encoding="latin-1").splitlines():
        content = line.split("\t", 1)[1]
        head, authors = content.rsplit(". ", 1)  # authors: "Surname XY; Surname Z."
        assert not {t.lower() for t in WORD.findall(head)} & surnames
        seen.update({t.lower() for t in WORD.findall(authors)} & surnames)
    assert sum(seen.values()) == sum(corpusbase.expected_counts()[w] for w in generator.SURNAMES)


def test_decoys_are_present_and_match_no_keyword(standin):
    out, meta = standin
    decoys = generator.DECOYS + generator.AUTHOR_DECOYS
    df, _ = df_of(out / "corpus.tsv", decoys)
    for d in decoys:
        assert df[d.lower()] == meta["decoys"][d] > 0, d
        assert d.lower() not in {k.lower() for k in corpusbase.KEYWORDS}
    # 'phase-II' (hyphen: two words, so it is 'phase') appears among the planted forms
    assert re.search(r"\bphase-II\b", (out / "corpus.tsv").read_text(encoding="latin-1"), re.I)


def test_shape_is_ohsumed_like(standin):
    out, meta = standin
    freq, titles, with_abstract, authors = Counter(), [], 0, []
    for line in (out / "corpus.tsv").read_text(encoding="latin-1").splitlines():
        content = line.split("\t", 1)[1]
        head, names = content.rsplit(". ", 1)
        title = len(WORD.findall(head.split(". ", 1)[0]))
        titles.append(title)
        with_abstract += len(WORD.findall(head)) - title >= 15  # abstracts have >= 20 words
        authors.append(names.count(";") + 1)
        freq.update(t.lower() for t in WORD.findall(content))
    assert 10 <= sum(titles) / ROWS <= 15
    assert 0.55 <= with_abstract / ROWS <= 0.65
    assert 2.9 <= sum(authors) / ROWS <= 3.5
    ranked = sorted(freq.values(), reverse=True)
    xs = [math.log(r) for r in range(10, 10_000)]
    ys = [math.log(ranked[r - 1]) for r in range(10, 10_000)]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    assert -1.4 <= slope <= -1.0, slope
    assert meta["shape"]["share_with_abstract"] == pytest.approx(with_abstract / ROWS, abs=0.02)


@pytest.mark.parametrize("rows", [ROWS - 1, 1000, "20000", 2.5e4])
def test_too_few_or_non_integer_rows_are_refused(tmp_path, rows):
    with pytest.raises(corpusbase.CorpusError, match=r"^rows: ") as e:
        generator.generate(tmp_path / "c", rows=rows)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "c").exists() and not tmp_siblings(tmp_path)


def test_tokens_cut_words_as_the_engines_do():
    assert corpusbase.tokens("Phase-II, phase2 phase_II PHASE's; APTT.APTTL") == \
        ["phase", "ii", "phase2", "phase_ii", "phase", "s", "aptt", "apttl"]
    assert corpusbase.escape("a\tb\\c\nd\re\0") == "a\\tb\\\\c\\nd\\re\\0"


def test_a_changed_tsv_is_refused_naming_both_hashes(standin, tmp_path):
    out, meta = standin
    copy = tmp_path / "c"
    shutil.copytree(out, copy)
    flip_byte(copy / "corpus.tsv")
    with pytest.raises(corpusbase.CorpusError, match=meta["sha256"]):
        corpusbase.verify_tsv(copy)
    with pytest.raises(corpusbase.CorpusError, match="corpus_dir: "):
        corpusbase.verify_tsv(tmp_path / "none")


# -- OHSUMED: a fake archive in the real layout -------------------------------------------
RECORDS_87 = [
    # (I, T, W or None, A)
    ("1", "Refibrillation managed by EMT-Ds.", "Some patients converted\tfrom phase one.", "Stults KR; Brown DD."),
    ("2", "A title-only record.", None, "Pietersz A."),
    ("3", "Back\\slash in title.", "Abstract three with Earlier data.", "Meyers J; Fison P."),
]
RECORDS_88 = [
    ("54711", "Second file first record.", None, "Couret C."),
    ("54712", "Second file, last record.", "Its own abstract.", "Beria L."),
]


def smart(records) -> bytes:
    """Records in OHSUMED's SMART layout: '.I n', then each tag alone, value on the next line."""
    out = []
    for i, t, w, a in records:
        out += [f".I {i}", ".U", f"8700{i}", ".S", "Am J Emerg Med 8703; 4(6):491-5", ".M",
                "Allied Health Personnel/*; Emergency Medical Technicians/*.", ".T", t,
                ".P", "JOURNAL ARTICLE."]
        if w is not None:
            out += [".W", w]
        out += [".A", a]
    return ("\n".join(out) + "\n").encode("latin-1")


def fake_archive(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in [("ohsu-trec/README", b"not a record file\n"),
                           ("ohsu-trec/trec9-train/ohsumed.87", smart(RECORDS_87)),
                           ("ohsu-trec/trec9-train/query.ohsu.1-63", b".I 1\n.B\nnot docs\n"),
                           ("ohsu-trec/trec9-test/ohsumed.88-91", smart(RECORDS_88))]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def archive(tmp_path) -> tuple[Path, int, str]:
    p = fake_archive(tmp_path / "t9.filtering.tar.gz")
    data = p.read_bytes()
    return p, len(data), hashlib.sha256(data).hexdigest()


def test_real_archive_constants():
    assert ohsumed.OHSUMED_ARCHIVE == "t9.filtering.tar.gz"
    assert ohsumed.OHSUMED_SIZE == 139_454_017
    assert ohsumed.OHSUMED_SHA256 == "39184391aab6d080699882dbfd87de4cbcb24cce8a0cffd611debf18914481b0"
    assert ohsumed.OHSUMED_RECORDS == 348_566


def test_fake_archive_verifies_and_parses(archive, tmp_path):
    path, size, sha = archive
    ohsumed.verify_archive(path, size, sha)
    out = tmp_path / "ohsumed"
    meta = ohsumed.parse_ohsumed(path, out, size=size, sha256=sha)
    assert meta["kind"] == "ohsumed" and meta["rows"] == meta["records"] == 5
    assert meta["files"] == {"ohsumed.87": 3, "ohsumed.88-91": 2}
    assert meta["records_without_abstract"] == 2
    assert meta["archive"] == {"name": path.name, "bytes": size, "sha256": sha, "official": False}
    data = (out / "corpus.tsv").read_bytes()
    assert meta["sha256"] == hashlib.sha256(data).hexdigest() and meta["bytes"] == len(data)
    rows = dict(l.split("\t", 1) for l in data.decode("latin-1").splitlines())
    assert list(rows) == ["1", "2", "3", "54711", "54712"]
    # title + abstract + authors; tab and backslash escaped for LOAD DATA
    assert rows["1"] == ("Refibrillation managed by EMT-Ds. Some patients converted\\tfrom phase one. "
                         "Stults KR; Brown DD.")
    assert rows["3"] == "Back\\\\slash in title. Abstract three with Earlier data. Meyers J; Fison P."
    assert corpusbase.verify_tsv(out) == meta
    # each keyword's rows as the engines cut words: the count gate's reference on a real corpus
    found = {"phase": 1, "Earlier": 1, "Pietersz": 1, "Meyers": 1, "Fison": 1, "Couret": 1, "Beria": 1}
    assert meta["keywords"] == dict.fromkeys(corpusbase.KEYWORDS, 0) | found
    assert meta["keywords"] == corpusbase.document_frequencies(out / "corpus.tsv", corpusbase.KEYWORDS)


def test_a_record_without_abstract_does_not_inherit_the_previous_one(archive, tmp_path):
    path, _, _ = archive
    ohsumed.parse_ohsumed(path, tmp_path / "o")
    rows = dict(l.split("\t", 1) for l in (tmp_path / "o/corpus.tsv").read_text("latin-1").splitlines())
    assert rows["2"] == "A title-only record. Pietersz A."
    assert rows["54711"] == "Second file first record. Couret C."
    assert "abstract" not in rows["54711"].lower()


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_damaged_archive_is_refused_before_parsing_naming_both_checksums(archive, tmp_path, damage):
    path, size, sha = archive
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: size // 2])
    else:
        flip_byte(path)
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(corpusbase.CorpusError) as e:
        ohsumed.verify_archive(path, size, sha)
    msg = str(e.value)
    assert sha in msg and actual in msg and str(size) in msg and "\n" not in msg
    with pytest.raises(corpusbase.CorpusError, match=actual):
        ohsumed.parse_ohsumed(path, tmp_path / "o", size=size, sha256=sha)
    assert not (tmp_path / "o").exists()


def test_a_truncated_archive_parsed_unverified_fails_and_leaves_nothing(archive, tmp_path):
    path, size, _ = archive
    path.write_bytes(path.read_bytes()[: size - 40])
    with pytest.raises(corpusbase.CorpusError, match="cannot read the tar.gz"):
        ohsumed.parse_ohsumed(path, tmp_path / "o")
    assert not (tmp_path / "o").exists() and not tmp_siblings(tmp_path)


def test_an_archive_without_ohsumed_files_is_refused(tmp_path):
    p = tmp_path / "x.tar.gz"
    with tarfile.open(p, "w:gz") as tar:
        info = tarfile.TarInfo("README")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(corpusbase.CorpusError, match="no ohsumed"):
        ohsumed.parse_ohsumed(p, tmp_path / "o")


def test_fetch_verifies_and_never_leaves_a_bad_download(archive, tmp_path):
    path, size, sha = archive
    dest = tmp_path / "dl" / ohsumed.OHSUMED_ARCHIVE
    with pytest.raises(corpusbase.CorpusError, match=sha):
        ohsumed.fetch_ohsumed(dest, path.as_uri(), size=size, sha256="0" * 64)
    assert not dest.exists() and list(dest.parent.iterdir()) == []
    with pytest.raises(corpusbase.CorpusError, match="cannot download"):
        ohsumed.fetch_ohsumed(dest, (tmp_path / "missing.tar.gz").as_uri(), size=size, sha256=sha)
    assert list(dest.parent.iterdir()) == []
    assert ohsumed.fetch_ohsumed(dest, path.as_uri(), size=size, sha256=sha) == dest
    assert dest.read_bytes() == path.read_bytes()
    assert list(dest.parent.iterdir()) == [dest]


# -- harness.studies.a1.fts_server without a server ----------------------------------------------------
FAMILIES = ["mysql-5.5", "mysql-5.6", "mariadb-10.2", "mariadb-10.11"]


@pytest.mark.parametrize("family", FAMILIES)
def test_server_options_are_options_of_that_family(family):
    opts = fulltext.server_options(family)
    assert opts["ft_min_word_len"] <= min(len(w) for w in corpusbase.KEYWORDS)
    assert opts["local_infile"] == "ON"
    for name in opts:
        assert mycnf.known_option(family, name), (family, name)
        assert not mycnf.reserved(name)
    if "InnoDB" in fulltext.engines_with_fts(family):
        assert opts["innodb_ft_min_token_size"] <= min(len(w) for w in corpusbase.KEYWORDS)


def test_innodb_fts_only_from_5_6_and_mariadb_10():
    assert fulltext.engines_with_fts("mysql-5.5") == ["MyISAM"]
    for family in FAMILIES[1:]:
        assert fulltext.engines_with_fts(family) == ["InnoDB", "MyISAM"]
    with pytest.raises(fulltext.FulltextError, match="^family: mysql-4.1 "):
        fulltext.server_options("mysql-4.1")


def test_the_study_s_query_text():
    assert fulltext.study_query("t", "phase") == \
        "SELECT count(*) AS cnt FROM t WHERE MATCH(content) AGAINST('phase')"


# -- the profile's corpus keys (fts_dataset.check_spec, called by the config check) ---------
def _spec(**c):
    return {"dataset": "fulltext", "corpus": {"source": "ohsumed", **c}}


def test_the_corpus_keys_are_checked_naming_the_key(archive, tmp_path):
    path, size, sha = archive
    check = fts_dataset.check_spec
    check(_spec(archive=str(path), size=size, sha256=sha), "experiments.fts")  # another copy, named
    check(_spec(), "experiments.fts")  # no archive: downloaded and verified by the corpus rule
    check({"dataset": "fulltext", "corpus": {"source": "standin", "rows": 20000, "seed": 1}}, "x")
    cases = [(_spec(archive=str(tmp_path / "no.tar.gz")), "corpus.archive: ", "does not exist"),
             (_spec(archive=str(path)), "corpus.archive: ", f"has {size:,} bytes, NIST's has 139,454,017"),
             (_spec(archive=str(path), size=size + 1, sha256=sha), "corpus.archive: ",
              f"corpus.size says {size + 1:,}; set experiments.fts.corpus.size"),
             (_spec(archive=str(path), size=size, sha256="0" * 64), "corpus.archive: ",
              f"has sha256 {sha}, experiments.fts.corpus.sha256 says {'0' * 64}"),
             (_spec(archive=str(path), sha256=sha), "corpus.size: ", "set both, or neither")]
    for spec, key, text in cases:
        with pytest.raises(ValueError) as e:
            check(spec, "experiments.fts")
        msg = str(e.value)
        assert msg.startswith(f"experiments.fts.{key}") and text in msg and "\n" not in msg, msg
