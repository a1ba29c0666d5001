"""Benchmark (prints figures, asserts nothing): does harness.studies.a1.fts_server.load load the
A1 corpus as fast as the study's statements typed by hand?

On one real MySQL 5.6.24 server (tokenizer options of harness.studies.a1.fts_server), for InnoDB
and MyISAM, alternate
  (a) fulltext.load(...): corpus checks (size; sha256 on the client CPU during the
      load), CREATE TABLE + LOAD DATA LOCAL through PyMySQL, then ADD FULLTEXT INDEX;
  (b) the mysql command-line client run by hand on the same file, twice:
      `mysql --local-infile=1 -e "CREATE TABLE ...; LOAD DATA LOCAL INFILE ..."`, then
      `mysql -e "ALTER TABLE ... ADD FULLTEXT INDEX (content)"`,
and print the median MB/s of the load phase (create + LOAD DATA) and of the whole
(load + index) for each, and their ratios. The goal is >= 0.9. Before each round the
previous table is dropped and InnoDB's dirty pages are flushed, untimed, so no round
pays for the one before.

usage: python bench/fts_load.py [--rows 20000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUILD, pinned_build  # noqa: E402

from harness.studies.a1 import standin  # noqa: E402

from harness.studies.a1 import fts_server as fulltext

from harness.measure import placement
from harness.measure.server import Server  # noqa: E402


def quiesce(srv: Server, table: str, timeout: float = 60) -> None:
    """Drop `table` and flush InnoDB's dirty pages (innodb_max_dirty_pages_pct=0 meanwhile)."""
    srv.query(f"DROP TABLE IF EXISTS fts.{table}")
    old = srv.query("SELECT @@global.innodb_max_dirty_pages_pct")[0][0]
    srv.query("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if int(srv.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")[0][1]) < 10:
                break
            time.sleep(0.2)
    finally:
        srv.query(f"SET GLOBAL innodb_max_dirty_pages_pct = {old}")


def hand_load(client: str, srv: Server, engine: str, tsv: Path, table: str) -> tuple[float, float]:
    """(seconds of CREATE + LOAD DATA, seconds of ADD FULLTEXT INDEX) by the mysql client."""
    base = [client, "--no-defaults", "--local-infile=1", f"--socket={srv.socket}", "--user=root", "fts", "-e"]
    load = (f"CREATE TABLE {table} (docid int NOT NULL PRIMARY KEY, content text) "
            f"ENGINE={engine} DEFAULT CHARSET={fulltext.CHARSET}; "
            f"LOAD DATA LOCAL INFILE '{tsv}' INTO TABLE {table} CHARACTER SET {fulltext.CHARSET} "
            r"FIELDS TERMINATED BY '\t' ESCAPED BY '\\' LINES TERMINATED BY '\n' (docid, content)")
    t0 = time.perf_counter()
    subprocess.run([*base, load], check=True)
    t1 = time.perf_counter()
    subprocess.run([*base, f"ALTER TABLE {table} ADD FULLTEXT INDEX (content)"], check=True)
    return t1 - t0, time.perf_counter() - t1


def harness_load(srv: Server, engine: str, corpus_dir: Path, table: str) -> tuple[float, float]:
    """(seconds of fulltext.load before its index build, seconds of the index build)."""
    t0 = time.perf_counter()
    r = fulltext.load(srv, engine, corpus_dir, table=table)
    total = time.perf_counter() - t0
    return total - r["index_s"], r["index_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    client = shutil.which("mysql") or shutil.which("mariadb")
    if client is None:
        print("error: no mysql/mariadb command-line client on PATH (apt-get install mariadb-client)",
              file=sys.stderr)
        return 1
    entry, build_dir, template = pinned_build()
    allowed = sorted(os.sched_getaffinity(0))
    server_cpus, client_cpus = placement.split(allowed, 1, 1) if len(allowed) > 1 else (allowed, allowed)
    with tempfile.TemporaryDirectory(prefix="mbfts-") as tmp:
        tmp = Path(tmp)
        meta = standin.generate(tmp / "corpus", rows=a.rows, seed=1)
        tsv = tmp / "corpus" / "corpus.tsv"
        mb = meta["bytes"] / 1e6
        shutil.copytree(template / "datadir", tmp / "datadir", symlinks=True)
        with Server(name=BUILD, entry=entry, build_dir=build_dir, datadir=tmp / "datadir",
                    rundir=tmp / "run", run_id=f"bench-fts-load-{os.getpid()}", cpus=server_cpus,
                    options=fulltext.server_options(entry["family"])) as srv:
            srv.query("CREATE DATABASE IF NOT EXISTS fts")
            os.sched_setaffinity(0, client_cpus)  # this process and the mysql client: the client CPU
            print(f"{BUILD}, server CPUs {placement.cpulist(server_cpus)}, client CPUs "
                  f"{placement.cpulist(client_cpus)}, {a.rows} rows, {mb:.1f} MB, {a.rounds} rounds; "
                  f"client {client}; median MB/s")
            for engine in fulltext.ENGINES:
                got = {k: [] for k in ("harness_load", "harness_all", "hand_load", "hand_all")}
                for r in range(a.rounds):
                    for kind in (("harness", "hand") if r % 2 == 0 else ("hand", "harness")):
                        table = f"{kind}_{engine.lower()}"
                        quiesce(srv, table)
                        if kind == "harness":
                            load_s, index_s = harness_load(srv, engine, tmp / "corpus", table)
                        else:
                            load_s, index_s = hand_load(client, srv, engine, tsv, table)
                        got[f"{kind}_load"].append(mb / load_s)
                        got[f"{kind}_all"].append(mb / (load_s + index_s))
                m = {k: statistics.median(v) for k, v in got.items()}
                print(f"{engine:6s} load phase: fulltext.load {m['harness_load']:6.1f}  hand {m['hand_load']:6.1f}  "
                      f"ratio {m['harness_load'] / m['hand_load']:.3f}   load + index: fulltext.load "
                      f"{m['harness_all']:5.2f}  hand {m['hand_all']:5.2f}  ratio "
                      f"{m['harness_all'] / m['hand_all']:.3f}  (goal >= 0.9)")
                print(f"       load phase rounds: harness {', '.join(f'{x:.1f}' for x in got['harness_load'])}; "
                      f"hand {', '.join(f'{x:.1f}' for x in got['hand_load'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
