"""What the Docker backend costs in throughput: the same mysqld, same my.cnf, same CPU,
run in the pipeline's container and bare under `taskset`, with stock sysbench
oltp_point_select on the other CPU. Per engine (InnoDB, MyISAM, MEMORY): interleaved
rounds, each one run per arm in a shuffled order; each run starts its server on a
fresh copy of the template, loads the tables (MEMORY tables do not survive a
restart), warms up, then measures. Prints per engine the median QPS per arm and the
median of the per-round ratios container / bare; asserts nothing.

Arms: `bare` (Server backend host, mechanism taskset), `docker` (the backend as the
pipeline runs it: harness.measure.docker.run_argv), and, to find where a cost comes
from, `docker+OPT` arms that add one `docker run` option (e.g. docker+seccomp=unconfined
adds `--security-opt seccomp=unconfined`). Each run holds the host's measurement lock
(harness.measure.hostlock), so pipeline cells never overlap it; other load on the
host (other users' processes) is not excluded: say so next to any figure.

    python bench/container_overhead.py [--rounds 5] [--duration 10] [--engines InnoDB,MyISAM,MEMORY]
                                       [--arms bare,docker]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
from pathlib import Path

from common import BUILD, pinned_build

from harness.measure import docker as docker_backend
from harness.measure import hostlock, sysbench
from harness.measure.server import Server

EXTRA = {  # docker+NAME arms: one `docker run` option each
    "seccomp=unconfined": ["--security-opt", "seccomp=unconfined"],
    "no-init": [],  # --init removed (below)
    "no-memory": [],  # --memory/--memory-swap removed (below)
}
_run_argv = docker_backend.run_argv


def arm_argv(arm: str):
    """docker.run_argv for an arm: the pipeline's own, or with one option changed."""
    opt = arm.split("+", 1)[1] if "+" in arm else None

    def argv(**kw):
        a = _run_argv(**kw)
        if opt == "no-init":
            a.remove("--init")
        elif opt == "no-memory":
            i = a.index("--memory")
            del a[i:i + 4]
        elif opt:
            a[1:1] = EXTRA.get(opt) or ["--security-opt", opt]
        return a
    return argv


def one(arm: str, engine: str, a, entry: dict, build_dir: Path, template: Path, seed: int) -> float:
    scratch = Path(tempfile.mkdtemp(prefix="mysqlbench-bench-"))
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, client_cpu = cpus[:1], cpus[1:2] or cpus[:1]
    try:
        shutil.copytree(template / "datadir", scratch / "datadir", symlinks=True)
        docker_backend.run_argv = arm_argv(arm) if arm != "bare" else _run_argv
        with hostlock.measuring(f"bench container_overhead {arm} {engine}"):
            with Server(name=BUILD, entry=entry, build_dir=build_dir, datadir=scratch / "datadir",
                        rundir=scratch / "run", run_id=f"bench-container-{os.getpid()}", cpus=server_cpu,
                        backend="host" if arm == "bare" else "docker",
                        mechanism="taskset" if arm == "bare" else "auto") as srv:
                srv.query("CREATE DATABASE IF NOT EXISTS sbtest")
                common = sysbench.common_args(socket=srv.socket, tables=a.tables, table_size=a.table_size,
                                              engine=engine)
                rid = srv.run_id
                sysbench.run(sysbench.command("point_select", common, [], "prepare"), cpus=client_cpu,
                             run_id=rid, timeout=600)
                for dur, s in ((a.warmup, seed + 1), (a.duration, seed)):
                    out = sysbench.run(sysbench.command("point_select", common, sysbench.run_args(
                        threads=a.users, duration=dur, seed=s, rand_type="uniform", interval=1), "run"),
                        cpus=client_cpu, run_id=rid, timeout=dur + 120)
                return sysbench.parse_report(out)["qps"]
    finally:
        docker_backend.run_argv = _run_argv
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--users", type=int, default=4)
    p.add_argument("--tables", type=int, default=8)
    p.add_argument("--table-size", type=int, default=1000)
    p.add_argument("--engines", default="InnoDB,MyISAM,MEMORY")
    p.add_argument("--arms", default="bare,docker")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    arms = a.arms.split(",")
    if "bare" not in arms:
        p.error("--arms: include bare (the ratios are to it)")
    entry, build_dir, template = pinned_build()
    rng = random.Random(a.seed)
    print(f"{BUILD}, sysbench {sysbench.version()} oltp_point_select, {a.tables} x {a.table_size:,} rows, "
          f"{a.users} users, {a.warmup} s warm-up + {a.duration} s; mysqld on CPU 0, sysbench on CPU 1; "
          f"{a.rounds} rounds, arms in a shuffled order per round; load average before: "
          f"{os.getloadavg()[0]:.2f}")
    for engine in a.engines.split(","):
        qps: dict = {arm: [] for arm in arms}
        for r in range(a.rounds):
            order = arms[:]
            rng.shuffle(order)
            for arm in order:
                qps[arm].append(one(arm, engine, a, entry, build_dir, template, seed=a.seed + r))
        line = [f"{engine:7s} bare {statistics.median(qps['bare']):9,.0f} qps"]
        for arm in arms:
            if arm == "bare":
                continue
            ratios = [x / b for x, b in zip(qps[arm], qps["bare"])]
            lower = sum(x < 1 for x in ratios)
            line.append(f"{arm} {statistics.median(qps[arm]):9,.0f} qps, ratio {statistics.median(ratios):.3f} "
                        f"(rounds {min(ratios):.3f}-{max(ratios):.3f}, {lower} of {len(ratios)} lower)")
        print("; ".join(line), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f} (other users' work on this host is not excluded)")


if __name__ == "__main__":
    main()
