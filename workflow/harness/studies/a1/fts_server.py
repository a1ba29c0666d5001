"""Study A1 on a running server: tokenizer options, loading a corpus (harness.studies.a1.corpusbase)
into an engine as the study did, and the count gate that must pass before any
FTS timing means anything.

Works with any `srv` that has `.query(sql, db=None) -> list[tuple]` and
`.connect(db=None)` returning a PyMySQL connection (harness.measure.server.Server).
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import time
from pathlib import Path

import pymysql

from harness.studies.a1 import corpusbase

ENGINES = ("InnoDB", "MyISAM")

# Engines with FULLTEXT indexes per build family (config/builds.lock.yaml `family`):
# MyISAM always; InnoDB from MySQL 5.6 and MariaDB 10.0 on.
_FTS_ENGINES = {
    "mysql-5.5": ("MyISAM",),
    "mysql-5.6": ENGINES,
    "mysql-5.7": ENGINES,
    "mysql-8.0": ENGINES,
    "mysql-8.4": ENGINES,
    "mariadb-10.2": ENGINES,
    "mariadb-10.11": ENGINES,
}

# The tokenizer as MySQL 5.6 ships it, stated explicitly so every cell's my.cnf records it
# and a build with other defaults cannot change the counts: all 30 keywords are 5-14
# characters, inside both engines' limits, and none is a stopword of either (checked on
# MySQL 5.6.24 and MariaDB 10.11.19: MyISAM's built-in list has "later", not "earlier";
# InnoDB's 36-word default list has none of them) — so the study's default stopword lists
# stay on, and `tokenizer_settings` re-checks all of it on the running server.
_MYISAM_OPTIONS = {"ft_min_word_len": 4, "ft_max_word_len": 84}
_INNODB_OPTIONS = {"innodb_ft_min_token_size": 3, "innodb_ft_max_token_size": 84,
                   "innodb_ft_enable_stopword": "ON"}
# LOAD DATA LOCAL: the client reads the file, so it works with a server in a container
_LOAD_OPTIONS = {"local_infile": "ON"}

_NOT_ALLOWED = 1148  # ER_NOT_ALLOWED_COMMAND: LOAD DATA LOCAL is off on the server or client

CHARSET = "latin1"  # the 5.6 default (latin1_swedish_ci: case-insensitive), explicit for MariaDB


class FulltextError(Exception):
    """One line naming the key, engine or table and the fix."""


class GateError(FulltextError):
    """The engines' keyword counts differ from the expected ones (or from each other)."""


def engines_with_fts(family: str) -> list[str]:
    try:
        return list(_FTS_ENGINES[family])
    except KeyError:
        raise FulltextError(f"family: {family} is not known to have FULLTEXT indexes; "
                            f"use one of {', '.join(_FTS_ENGINES)}") from None


def server_options(family: str) -> dict:
    """my.cnf options under which every FTS engine of `family` indexes all 30 keywords."""
    opts = dict(_MYISAM_OPTIONS)
    if "InnoDB" in engines_with_fts(family):
        opts.update(_INNODB_OPTIONS)
    opts.update(_LOAD_OPTIONS)
    return opts


def study_query(table: str, word: str) -> str:
    """The study's statement (natural-language mode), exactly."""
    return f"SELECT count(*) AS cnt FROM {table} WHERE MATCH(content) AGAINST('{word}')"


_SETTINGS = ("ft_min_word_len", "ft_max_word_len", "ft_stopword_file", "innodb_ft_min_token_size",
             "innodb_ft_max_token_size", "innodb_ft_enable_stopword", "innodb_ft_server_stopword_table",
             "local_infile", "character_set_server", "collation_server")


def tokenizer_settings(srv, keywords=corpusbase.KEYWORDS) -> dict:
    """The server's tokenizer variables (for manifests), after checking that each keyword
    fits both engines' token lengths and is not an InnoDB stopword; MyISAM's built-in
    stopword list cannot be queried: the count gate catches it."""
    names = ", ".join(f"'{n}'" for n in _SETTINGS)
    got = {str(k).lower(): str(v) for k, v in srv.query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")}
    bad = []
    for low, high, engine in (("ft_min_word_len", "ft_max_word_len", "MyISAM"),
                              ("innodb_ft_min_token_size", "innodb_ft_max_token_size", "InnoDB")):
        if low in got:
            lo, hi = int(got[low]), int(got[high])
            bad += [f"{w} ({engine}: {low}={lo}, {high}={hi})" for w in keywords if not lo <= len(w) <= hi]
    if got.get("innodb_ft_enable_stopword", "OFF").upper() in ("ON", "1"):
        table = got.get("innodb_ft_server_stopword_table") or ""
        if table and table.upper() != "NULL":
            db, _, name = table.partition("/")
            stop = srv.query(f"SELECT value FROM `{db}`.`{name}`")
        else:
            stop = srv.query("SELECT value FROM information_schema.INNODB_FT_DEFAULT_STOPWORD")
        words = {str(r[0]).lower() for r in stop}
        bad += [f"{w} (an InnoDB stopword)" for w in keywords if w.lower() in words]
    if bad:
        raise FulltextError(f"server options: keywords not indexable: {'; '.join(bad)}; "
                            f"start the server with fulltext.server_options(family)")
    return got


def _local_infile_connection(srv, db: str | None = None):
    """A connection like srv.connect(db) that may send LOAD DATA LOCAL files (a PyMySQL
    client flag fixed at connect time, so a second connection with the same credentials)."""
    base = srv.connect(db)
    try:
        user = base.user.decode() if isinstance(base.user, bytes) else base.user
        kw = dict(user=user, password=base.password, database=db, autocommit=True, local_infile=True,
                  charset=base.charset, connect_timeout=base.connect_timeout)
        if base.unix_socket:
            kw["unix_socket"] = base.unix_socket
        else:
            kw.update(host=base.host, port=base.port)
    finally:
        base.close()
    return pymysql.connect(**kw)


def default_table(engine: str) -> str:
    return f"fts_{engine.lower()}"


def load(srv, engine: str, corpus_dir: Path, db: str = "fts", table: str | None = None) -> dict:
    """(Re)create `db`.`table` as the study's (docid int NOT NULL PRIMARY KEY, content text)
    in `engine`, LOAD DATA LOCAL the corpus TSV through the client connection, then
    ALTER TABLE ... ADD FULLTEXT INDEX (content); return rows, load_s, index_s, bytes.
    A TSV whose size or sha256 differs from corpus.json's is refused (the table dropped)."""
    if engine not in ENGINES:
        raise FulltextError(f"engine: {engine} has no study A1 table; use one of {', '.join(ENGINES)}")
    meta = corpusbase.read_meta(corpus_dir)
    tsv = (Path(corpus_dir) / "corpus.tsv").resolve()
    corpusbase.check_tsv(corpus_dir, meta, tsv.stat().st_size)  # a truncated TSV is never loaded
    table = table or default_table(engine)
    with contextlib.closing(_local_infile_connection(srv)) as con, con.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{db}`")
        con.select_db(db)
        cur.execute(f"DROP TABLE IF EXISTS `{table}`")
        cur.execute(f"CREATE TABLE `{table}` (docid int NOT NULL PRIMARY KEY, content text) "
                    f"ENGINE={engine} DEFAULT CHARSET={CHARSET}")
        try:
            rows, load_s = _load_data(cur, db, table, corpus_dir, meta)
            t0 = time.perf_counter()
            try:
                cur.execute(f"ALTER TABLE `{table}` ADD FULLTEXT INDEX (content)")
            except pymysql.err.MySQLError as e:
                raise FulltextError(f"engine: {engine} cannot build a FULLTEXT index here ({e.args[-1]}); "
                                    f"use an engine of fulltext.engines_with_fts(family)") from None
            index_s = time.perf_counter() - t0
        except (FulltextError, corpusbase.CorpusError):
            cur.execute(f"DROP TABLE IF EXISTS `{table}`")  # never leave a table that is not the corpus
            raise
    return {"engine": engine, "db": db, "table": table, "kind": meta["kind"], "rows": rows,
            "bytes": meta["bytes"], "sha256": meta["sha256"], "load_s": round(load_s, 3),
            "index_s": round(index_s, 3)}


def _load_data(cur, db: str, table: str, corpus_dir: Path, meta: dict) -> tuple[int, float]:
    """LOAD DATA LOCAL the corpus TSV into the (empty) table, checking the TSV's sha256
    on the client CPU meanwhile, then warnings and row count; (rows, seconds)."""
    tsv, where = (Path(corpus_dir) / "corpus.tsv").resolve(), f"{db}.{table}"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        digest = pool.submit(corpusbase.size_sha256, tsv)
        t0 = time.perf_counter()
        try:
            rows = cur.execute(f"LOAD DATA LOCAL INFILE %s INTO TABLE `{table}` CHARACTER SET {CHARSET} "
                               r"FIELDS TERMINATED BY '\t' ESCAPED BY '\\' LINES TERMINATED BY '\n' "
                               "(docid, content)", (str(tsv),))
        except pymysql.err.MySQLError as e:
            hint = ("the server needs local_infile=ON (fulltext.server_options)" if e.args[0] == _NOT_ALLOWED
                    else "see the server's error log")
            raise FulltextError(f"load {where}: LOAD DATA LOCAL failed ({e.args[-1]}); {hint}") from None
        load_s = time.perf_counter() - t0
        corpusbase.check_tsv(corpus_dir, meta, *digest.result())
    cur.execute("SHOW WARNINGS")
    warnings = cur.fetchall()
    if warnings:
        raise FulltextError(f"load {where}: {len(warnings)} warnings, first: {warnings[0][2]}; "
                            f"fix {tsv} (make the corpus again)")
    if rows != meta["rows"]:
        raise FulltextError(f"load {where}: {rows} rows loaded, corpus.json says {meta['rows']}; "
                            f"make the corpus again")
    return rows, load_s


def count_gate(srv, tables: dict, expected: dict | None, db: str = "fts") -> list[dict]:
    """Run the study's 30 queries on every engine's table ({engine: table}). With
    `expected` ({keyword: rows}: the stand-in's planted counts) every engine must return
    exactly those; without (the real corpus) the engines must agree with each other.
    Raises GateError naming the keywords and engines that differ; returns one row per
    keyword and engine: keyword, published, engine, measured."""
    published = corpusbase.expected_counts()
    words = list(expected) if expected is not None else list(corpusbase.KEYWORDS)
    rows = []
    with contextlib.closing(srv.connect(db)) as con, con.cursor() as cur:
        for engine, table in tables.items():
            for word in words:
                cur.execute(study_query(table, word))
                rows.append({"keyword": word, "published": published.get(word), "engine": engine,
                             "measured": int(cur.fetchone()[0])})
    measured: dict[str, dict[str, int]] = {}
    for r in rows:
        measured.setdefault(r["keyword"], {})[r["engine"]] = r["measured"]
    problems = []
    for word, by_engine in measured.items():
        got = ", ".join(f"{e} {n}" for e, n in by_engine.items())
        if expected is not None and any(n != expected[word] for n in by_engine.values()):
            problems.append(f"{word}: {got}, expected {expected[word]}")
        elif expected is None and len(set(by_engine.values())) > 1:
            problems.append(f"{word}: {got}")
    if problems:
        what = "differ from the corpus" if expected is not None else "engines disagree"
        raise GateError(f"count gate ({what}): {'; '.join(problems)}; check the tokenizer options "
                        f"(fulltext.server_options) and the corpus")
    return rows
