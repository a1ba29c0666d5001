"""Benchmark (prints figures, asserts nothing): is the A1 load generator light enough
to measure the server, not itself?

On one real MySQL 5.6.24 server with the stand-in corpus loaded (InnoDB and MyISAM),
run workflow/lua/fts.lua with sysbench (plain queries and prepared statements) and
read, from /proc/<pid>/stat, the CPU time (user + system) of sysbench and of mysqld
over the run; print each one's CPU per query and their ratio. The goal is
client/server <= 0.1.

usage: python bench/fts_client_cpu.py [--rows 20000] [--duration 10] [--users 4]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUILD, pinned_build  # noqa: E402

from harness.studies.a1 import corpusbase, standin  # noqa: E402

from harness.studies.a1 import fts_server as fulltext

from harness.measure import placement

from harness.measure import procs

from harness.measure import sysbench
from harness.measure.server import Server  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of a process (all its threads) from /proc/<pid>/stat, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK  # fields 14 and 15 of stat(5)


def run_sysbench(argv: list[str], cpus: list[int], out: Path) -> tuple[tuple[float, float], str]:
    """Run sysbench pinned to `cpus`; return ((user, system) CPU seconds, its output). The CPU time is
    read from /proc while it is a zombie: exited, not yet reaped (waitid WNOWAIT)."""
    env = procs.labelled_env(f"bench-fts-cpu-{os.getpid()}", {"LUA_PATH": f"{sysbench.LUA_DIR}/?.lua;;"})

    def preexec():
        procs.die_with_parent()
        os.sched_setaffinity(0, cpus)

    with open(out, "w") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env, preexec_fn=preexec)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        cpu = cpu_seconds(proc.pid)
        proc.wait()
    text = out.read_text()
    if proc.returncode != 0:
        raise SystemExit(f"error: sysbench exit {proc.returncode}: {text.strip().splitlines()[-1:]}")
    return cpu, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--users", type=int, default=4)
    a = ap.parse_args()
    entry, build_dir, template = pinned_build()
    allowed = sorted(os.sched_getaffinity(0))
    server_cpus, client_cpus = placement.split(allowed, 1, 1) if len(allowed) > 1 else (allowed, allowed)
    with tempfile.TemporaryDirectory(prefix="mbfts-") as tmp:
        tmp = Path(tmp)
        standin.generate(tmp / "corpus", rows=a.rows, seed=1)
        shutil.copytree(template / "datadir", tmp / "datadir", symlinks=True)
        with Server(name=BUILD, entry=entry, build_dir=build_dir, datadir=tmp / "datadir",
                    rundir=tmp / "run", run_id=f"bench-fts-cpu-{os.getpid()}", cpus=server_cpus,
                    max_connections=a.users + 16, options=fulltext.server_options(entry["family"])) as srv:
            tables = {e: fulltext.load(srv, e, tmp / "corpus")["table"] for e in fulltext.ENGINES}
            fulltext.count_gate(srv, tables, corpusbase.expected_counts())
            # the floor: the same driver on a 3-row table, where the server has almost nothing to do
            srv.query("CREATE TABLE fts.floor (docid int NOT NULL PRIMARY KEY, content text, "
                      "FULLTEXT (content)) ENGINE=MyISAM")
            srv.query("INSERT INTO fts.floor VALUES (1, 'phase one'), (2, 'Beria two'), (3, 'three')")
            print(f"{BUILD}, server CPUs {placement.cpulist(server_cpus)}, client CPUs "
                  f"{placement.cpulist(client_cpus)}, {a.rows} rows, {a.users} users, {a.duration} s per run; "
                  f"CPU per query in us (user+system)")
            for engine, table in [*tables.items(), ("floor", "floor")]:
                for ps in ("off", "on"):
                    argv = ["sysbench", str(sysbench.LUA_DIR / "fts.lua"), f"--mysql-socket={srv.socket}",
                            "--mysql-user=root", "--mysql-db=fts", f"--fts-table={table}", f"--fts-ps={ps}",
                            f"--threads={a.users}", f"--time={a.duration}", "--report-interval=1", "run"]
                    before = cpu_seconds(srv.pid)
                    (cu, cs), text = run_sysbench(argv, client_cpus, tmp / "sysbench.out")
                    after = cpu_seconds(srv.pid)
                    su, ss = after[0] - before[0], after[1] - before[1]
                    q = sysbench.parse_report(text)["events"]
                    c_us, s_us = (cu + cs) / q * 1e6, (su + ss) / q * 1e6
                    goal = "  (goal <= 0.1)" if engine != "floor" else "  (3-row table: the client's floor)"
                    print(f"{engine:6s} ps={ps:3s} {q:7d} queries  client {c_us:6.1f} ({cu / q * 1e6:.1f}+"
                          f"{cs / q * 1e6:.1f})  server {s_us:7.1f} ({su / q * 1e6:.1f}+{ss / q * 1e6:.1f})  "
                          f"ratio {c_us / s_us:.3f}{goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
