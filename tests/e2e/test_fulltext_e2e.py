"""Study A1 end-to-end on real servers (MySQL 5.6.24; MariaDB 10.11 where its Debian
package is installed): the stand-in loaded into InnoDB and MyISAM as the study did,
the 30-keyword count gate passing, and failing by name when one planted occurrence is
gone; A1's fts.lua (workflow/harness/studies/a1/) run by the real sysbench 1.0.20."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from harness.studies.a1 import corpusbase
from harness.studies.a1 import standin as generator  # the name `standin` is the fixture

from harness.studies.a1 import fts_server as fulltext

from harness.measure import placement

from harness.measure import sysbench
from harness.measure.server import Server

pytestmark = pytest.mark.e2e

ROWS = generator.MIN_ROWS  # the fewest rows for which MyISAM still matches 'phase': the edge
LUA = sysbench.script_path("fts")  # A1's driver, in its study package


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fts") / "corpus"
    generator.generate(out, rows=ROWS, seed=1)
    return out


def _cpus() -> tuple[list[int], list[int]]:
    allowed = sorted(os.sched_getaffinity(0))
    return placement.split(allowed, 1, 1) if len(allowed) > 1 else (allowed, allowed)


@pytest.fixture(scope="module", params=["mysql-5.6.24", "mariadb-10.11"])
def loaded(request, standin, tmp_path_factory):
    """A real server of the build with the stand-in in InnoDB and MyISAM (db fts)."""
    if request.param == "mysql-5.6.24":
        name, entry = "mysql-5.6.24", request.getfixturevalue("lock_entry")
        build_dir, template = request.getfixturevalue("build_dir"), request.getfixturevalue("template")
    else:
        name, entry, build_dir, template = request.getfixturevalue("mariadb_1011")
    scratch = Path(tempfile.mkdtemp(prefix="mbfts-"))  # short: the socket path
    server_cpus, _ = _cpus()
    try:
        shutil.copytree(template / "datadir", scratch / "datadir", symlinks=True)
        with Server(name=name, entry=entry, build_dir=build_dir, datadir=scratch / "datadir",
                    rundir=scratch / "run", run_id=f"test-fts-{name}-{os.getpid()}", cpus=server_cpus,
                    options=fulltext.server_options(entry["family"])) as srv:
            loads = {e: fulltext.load(srv, e, standin) for e in fulltext.engines_with_fts(entry["family"])}
            yield srv, loads, name
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _tables(loads: dict) -> dict:
    return {e: r["table"] for e, r in loads.items()}


def test_load_and_gate_pass_on_both_engines(loaded, standin):
    srv, loads, name = loaded
    meta = json.loads((standin / "corpus.json").read_text())
    assert set(loads) == {"InnoDB", "MyISAM"}
    for engine, r in loads.items():
        assert r["rows"] == ROWS and r["bytes"] == meta["bytes"] and r["sha256"] == meta["sha256"]
        assert r["load_s"] > 0 and r["index_s"] > 0
        create = srv.query(f"SHOW CREATE TABLE fts.{r['table']}")[0][1]
        assert f"ENGINE={engine}" in create and "FULLTEXT KEY" in create
        assert srv.query(f"SELECT count(*) FROM fts.{r['table']}")[0][0] == ROWS
    rows = fulltext.count_gate(srv, _tables(loads), corpusbase.expected_counts())
    assert len(rows) == 60
    assert {(r["keyword"], r["engine"]) for r in rows} == \
        {(k, e) for k in corpusbase.KEYWORDS for e in ("InnoDB", "MyISAM")}
    assert all(r["measured"] == r["published"] for r in rows)
    # without expected counts (the real corpus): the engines agree
    assert fulltext.count_gate(srv, _tables(loads), None) == rows
    settings = fulltext.tokenizer_settings(srv)
    assert settings["ft_min_word_len"] == "4" and settings["innodb_ft_min_token_size"] == "3"
    assert settings["local_infile"] == "ON"


def _drop_one_occurrence(src: Path, dst: Path, word: str) -> int:
    """Copy the corpus with `word` removed from the first row holding it; corpus.json
    re-hashed, as a generator bug would leave it. Returns that row's docid."""
    shutil.copytree(src, dst)
    lines = (dst / "corpus.tsv").read_text(encoding="latin-1").split("\n")
    rx = re.compile(rf"\b{word}\b", re.I)
    i = next(i for i, l in enumerate(lines) if rx.search(l.split("\t", 1)[-1]))
    lines[i] = rx.sub("", lines[i])
    (dst / "corpus.tsv").write_text("\n".join(lines), encoding="latin-1")
    with pytest.raises(corpusbase.CorpusError, match="the file changed"):
        corpusbase.verify_tsv(dst)  # a changed TSV is refused as it is ...
    data = (dst / "corpus.tsv").read_bytes()
    meta = json.loads((dst / "corpus.json").read_text())
    meta.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (dst / "corpus.json").write_text(json.dumps(meta))  # ... so re-hash it
    return int(lines[i].split("\t", 1)[0])


def test_one_missing_occurrence_fails_the_gate_naming_the_keyword(loaded, standin, tmp_path):
    srv, loads, name = loaded
    if name != "mysql-5.6.24":
        pytest.skip("the gate's logic is build-independent: checked on the default build")
    bad = tmp_path / "bad"
    _drop_one_occurrence(standin, bad, "Couret")
    tables = {e: fulltext.load(srv, e, bad, table=f"bad_{e.lower()}")["table"] for e in loads}
    with pytest.raises(fulltext.GateError) as e:
        fulltext.count_gate(srv, tables, corpusbase.expected_counts())
    msg = str(e.value)
    assert "Couret: InnoDB 1, MyISAM 1, expected 2" in msg and "\n" not in msg
    assert not any(f"{k}:" in msg for k in corpusbase.KEYWORDS if k != "Couret")
    # without expected counts: one engine on the changed corpus disagrees with the other
    with pytest.raises(fulltext.GateError, match=r"engines disagree\): Couret: InnoDB 2, MyISAM 1;"):
        fulltext.count_gate(srv, {"InnoDB": loads["InnoDB"]["table"], "MyISAM": tables["MyISAM"]}, None)


def test_load_refuses_bad_input_before_touching_the_server(loaded, tmp_path):
    srv, loads, _ = loaded
    with pytest.raises(fulltext.FulltextError, match="^engine: MEMORY "):
        fulltext.load(srv, "MEMORY", tmp_path)
    with pytest.raises(corpusbase.CorpusError, match="^corpus_dir: "):
        fulltext.load(srv, "InnoDB", tmp_path / "nothing")


def test_load_refuses_a_changed_tsv_and_drops_what_it_loaded(loaded, standin, tmp_path):
    srv, _, name = loaded
    if name != "mysql-5.6.24":
        pytest.skip("build-independent: checked on the default build")
    copy = tmp_path / "c"
    shutil.copytree(standin, copy)
    data = bytearray((copy / "corpus.tsv").read_bytes())
    i = data.index(b"Couret")
    data[i:i + 6] = b"Couraz"  # same size: only the sha256 tells
    (copy / "corpus.tsv").write_bytes(bytes(data))
    sha = hashlib.sha256(data).hexdigest()
    with pytest.raises(corpusbase.CorpusError, match=f"sha256 {sha}, but corpus.json says"):
        fulltext.load(srv, "MyISAM", copy, table="changed")
    assert srv.query("SHOW TABLES FROM fts LIKE 'changed'") == []
    (copy / "corpus.tsv").write_bytes(bytes(data[:-100]))
    with pytest.raises(corpusbase.CorpusError, match=r"sha256 \(not computed\)"):
        fulltext.load(srv, "MyISAM", copy, table="changed")


def _sysbench(srv, *args, timeout=120) -> str:
    _, client_cpus = _cpus()
    argv = ["sysbench", str(LUA), f"--mysql-socket={srv.socket}", "--mysql-user=root", "--mysql-db=fts",
            *args, "run"]
    return sysbench.run(argv, cpus=client_cpus, run_id=f"test-fts-sb-{os.getpid()}", timeout=timeout)


def _status(srv, name: str) -> int:
    return int(srv.query(f"SHOW GLOBAL STATUS LIKE '{name}'")[0][1])


@pytest.mark.parametrize("ps", ["off", "on"])
@pytest.mark.parametrize("engine", ["InnoDB", "MyISAM"])
def test_fts_lua_runs_3s_at_2_threads_with_csv_intervals(loaded, engine, ps):
    srv, loads, _ = loaded
    before = _status(srv, "Com_stmt_execute")
    out = _sysbench(srv, f"--fts-table={loads[engine]['table']}", "--threads=2", "--time=3",
                    "--report-interval=1", f"--fts-ps={ps}")
    rep = sysbench.parse_report(out)
    assert rep["events"] > 0 and rep["qps"] > 0 and rep["errors"] == 0
    assert rep["reads"] == rep["events"] and rep["writes"] == 0  # one SELECT per event
    ivals = sysbench.parse_intervals(out, threads=2)
    assert len(ivals) >= 2 and all(r["qps"] > 0 and r["threads"] == 2 for r in ivals)
    executed = _status(srv, "Com_stmt_execute") - before
    assert executed == (rep["events"] if ps == "on" else 0)  # a real server-side statement, or none


@contextlib.contextmanager
def _statement_history(srv):
    """performance_schema's statement history, on for the block: what the server ran, in order."""
    consumer = "UPDATE performance_schema.setup_consumers SET ENABLED='{}' WHERE NAME='events_statements_history_long'"
    srv.query(consumer.format("YES"))
    srv.query("TRUNCATE performance_schema.events_statements_history_long")
    try:
        yield lambda: [r[0] for r in srv.query(
            "SELECT SQL_TEXT FROM performance_schema.events_statements_history_long "
            "WHERE SQL_TEXT LIKE 'SELECT count(*) AS cnt FROM %' ORDER BY THREAD_ID, EVENT_ID")]
    finally:
        srv.query(consumer.format("NO"))


@pytest.mark.parametrize("how", ["default", "file", "option"])
def test_fts_lua_queries_the_keywords_in_order(loaded, tmp_path, how):
    srv, loads, name = loaded
    if name != "mysql-5.6.24":
        pytest.skip("the driver is build-independent: checked on the default build")
    table = loads["InnoDB"]["table"]
    words, args = list(corpusbase.KEYWORDS), []
    if how == "file":  # ranks out of line order: the driver orders by rank
        words = ["Beria", "phase", "Earlier"]
        f = tmp_path / "kw.csv"
        f.write_text("rank,keyword,rows\n2,phase,6676\n3,Earlier,2900\n1,Beria,1\n")
        args = [f"--fts-keywords-file={f}"]
    elif how == "option":
        words = ["phase", "Beria"]
        args = ["--fts-keywords=phase,Beria"]
    n = len(words) + 5
    with _statement_history(srv) as history:
        _sysbench(srv, f"--fts-table={table}", "--threads=1", "--time=0", f"--events={n}", *args)
        ran = history()
    expect = [fulltext.study_query(table, words[i % len(words)]) for i in range(n)]
    assert ran == expect


@pytest.mark.parametrize("args, message", [
    (["--fts-keywords=phase,Be'ria"], "--fts-keywords: \"Be'ria\" is not a single word"),
    (["--fts-keywords-file=/nonexistent/kw.csv"], "--fts-keywords-file: cannot open /nonexistent/kw.csv"),
    (["--fts-table=fts_innodb;DROP"], "--fts-table: \"fts_innodb;DROP\" is not a plain table name"),
    (["--fts-ps=on", "--db-ps-mode=disable"], "--fts-ps=on needs --db-ps-mode=auto"),
])
def test_fts_lua_refuses_bad_options_in_one_line(loaded, args, message):
    srv, _, name = loaded
    if name != "mysql-5.6.24":
        pytest.skip("the driver is build-independent: checked on the default build")
    with pytest.raises(sysbench.SysbenchError) as e:
        _sysbench(srv, "--time=1", *args)
    assert message in str(e.value)
