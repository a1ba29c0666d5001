"""Benchmark (prints figures, asserts nothing): does the harness cost QPS?

Against one real MySQL 5.6.24 server held to the same cpuset, alternate
  (a) the sysbench invocation a pipeline cell makes (harness.measure.sysbench: the
      Lua wrapper with CSV intervals, labelled, pinned by the harness), and
  (b) a bare run typed by hand: `taskset -c <client cpus> sysbench
      oltp_point_select ...` with the stock script and the same options,
and print the ratio of their median QPS. The goal is >= 0.98.

usage: python bench/harness_overhead.py [--rounds 5] [--duration 10] [--users 4]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BUILD, pinned_build, run_settings  # noqa: E402

from harness.measure import datasets  # noqa: E402

from harness.measure import placement

from harness.measure import sysbench
from harness.measure.server import Server  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--tables", type=int, default=8)
    ap.add_argument("--table-size", type=int, default=10000)
    a = ap.parse_args()

    entry, build_dir, template = pinned_build()
    server_cpus, client_cpus = placement.split(sorted(os.sched_getaffinity(0)), 1, 1)

    with tempfile.TemporaryDirectory(prefix="mb-bench-") as tmp:
        tmp = Path(tmp)
        ds = tmp / "ds"
        datasets.prepare("sbtest", f"InnoDB_t{a.tables}_n{a.table_size}", name=BUILD, entry=entry,
                         build_dir=build_dir, template=template, out=ds, settings=run_settings())
        shutil.copytree(ds / "datadir", tmp / "datadir")
        with Server(name=BUILD, entry=entry, build_dir=build_dir, datadir=tmp / "datadir",
                    rundir=tmp / "run", run_id=f"bench-{os.getpid()}", cpus=server_cpus,
                    max_connections=a.users + 16) as srv:
            common = sysbench.common_args(socket=srv.socket, tables=a.tables, table_size=a.table_size)
            opts = sysbench.run_args(threads=a.users, duration=a.duration, seed=42, rand_type="uniform",
                                     interval=1)
            harness_argv = sysbench.command("point_select", common, opts, "run")
            bare_argv = ["taskset", "-c", placement.cpulist(client_cpus), "sysbench",
                         "oltp_point_select", *common, *opts, "run"]
            sysbench.run(harness_argv[:-1] + ["--time=5", "run"], cpus=client_cpus,
                         run_id="bench-warmup", timeout=600)
            got = {"harness": [], "bare": []}
            for r in range(a.rounds):
                for kind in (("harness", "bare") if r % 2 == 0 else ("bare", "harness")):
                    if kind == "harness":
                        text = sysbench.run(harness_argv, cpus=client_cpus, run_id="bench", timeout=600)
                    else:
                        text = subprocess.run(bare_argv, capture_output=True, text=True, check=True).stdout
                    got[kind].append(sysbench.parse_report(text)["qps"])
    h, b = statistics.median(got["harness"]), statistics.median(got["bare"])
    print(f"server CPUs {placement.cpulist(server_cpus)}, client CPUs {placement.cpulist(client_cpus)}, "
          f"{a.users} users, {a.tables} tables x {a.table_size} rows, {a.rounds} rounds x {a.duration} s")
    print(f"harness QPS: median {h:,.0f}  ({', '.join(f'{x:,.0f}' for x in got['harness'])})")
    print(f"bare    QPS: median {b:,.0f}  ({', '.join(f'{x:,.0f}' for x in got['bare'])})")
    print(f"ratio harness/bare: {h / b:.3f}  (goal >= 0.98)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
