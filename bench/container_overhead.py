"""What the Docker backend costs in throughput: the same mysqld, same my.cnf, same CPU,
run in the pipeline's container and bare under `taskset`, with stock sysbench
oltp_point_select on the other CPU. Per engine (InnoDB, MyISAM, MEMORY): interleaved
rounds, each one run per arm in a shuffled order; each run starts its server on a
fresh copy of the template, loads the tables (MEMORY tables do not survive a
restart), warms up, then measures. Prints per engine the median QPS per arm and the
median of the per-round ratios container / bare, and mysqld's CPU time per query
(utime + stime of its host pid over the measured window) and its threads' context
switches per 1,000 queries: throughput on a host others
load moves with their load, CPU per query much less, so a container's own cost (e.g.
syscall filtering, cgroup accounting) shows there first. Asserts nothing.

Arms: `bare` (Server backend host, mechanism taskset), `docker` (the backend as the
pipeline runs it: harness.measure.docker.run_argv), `host-cgroup` (the host backend in
a cgroup cpuset of its own, as the pipeline's host backend runs it: is a cost the
cgroup's or the container's?), and, to find where a cost comes from, `docker+OPT` arms that add one `docker run` option (e.g. docker+seccomp=unconfined
adds `--security-opt seccomp=unconfined`). Each run holds the host's measurement lock
(harness.measure.hostlock), so pipeline cells never overlap it; other load on the
host (other users' processes) is not excluded: say so next to any figure.

    python bench/container_overhead.py [--rounds 5] [--duration 10] [--engines InnoDB,MyISAM,MEMORY]
                                       [--arms bare,docker,docker+default-seccomp]
    python bench/container_overhead.py --syscalls [--rounds 7]   (ns per syscall, per arm)
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
    "default-seccomp": [],  # the pipeline's --security-opt removed: Docker's default profile (below)
    "no-init": [],  # --init removed (below)
    "no-memory": [],  # --memory/--memory-swap removed (below)
}
_run_argv = docker_backend.run_argv


def arm_argv(arm: str):
    """docker.run_argv for an arm: the pipeline's own, or with one option changed."""
    opt = arm.split("+", 1)[1] if "+" in arm else None

    def argv(**kw):
        a = _run_argv(**kw)
        if opt == "default-seccomp":
            i = a.index("--security-opt")
            del a[i:i + 2]
        elif opt == "no-init":
            a.remove("--init")
        elif opt == "no-memory":
            i = a.index("--memory")
            del a[i:i + 4]
        elif opt:
            a[1:1] = EXTRA.get(opt) or ["--security-opt", opt]
        return a
    return argv


def cpu_s(pid: int) -> float:
    """utime + stime of a process (/proc/<pid>/stat), in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    f = stat[stat.rindex(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of all of a process's threads so far."""
    vol = inv = 0
    for st in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            for line in st.read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    vol += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    inv += int(line.split()[1])
        except OSError:  # a thread that ended meanwhile
            continue
    return vol, inv


def one(arm: str, engine: str, a, entry: dict, build_dir: Path, template: Path,
        seed: int) -> tuple[float, float, float, float]:
    """(QPS, mysqld's CPU microseconds per query, its voluntary and involuntary context
    switches per 1,000 queries) of one run of an arm."""
    scratch = Path(tempfile.mkdtemp(prefix="mysqlbench-bench-"))
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, client_cpu = cpus[:1], cpus[1:2] or cpus[:1]
    try:
        shutil.copytree(template / "datadir", scratch / "datadir", symlinks=True)
        host = arm in ("bare", "host-cgroup")
        docker_backend.run_argv = arm_argv(arm) if not host else _run_argv
        with hostlock.measuring(f"bench container_overhead {arm} {engine}"):
            with Server(name=BUILD, entry=entry, build_dir=build_dir, datadir=scratch / "datadir",
                        rundir=scratch / "run", run_id=f"bench-container-{os.getpid()}", cpus=server_cpu,
                        backend="host" if host else "docker",
                        mechanism="taskset" if arm == "bare" else "auto") as srv:
                srv.query("CREATE DATABASE IF NOT EXISTS sbtest")
                common = sysbench.common_args(socket=srv.socket, tables=a.tables, table_size=a.table_size,
                                              engine=engine)
                rid = srv.run_id
                sysbench.run(sysbench.command("point_select", common, [], "prepare"), cpus=client_cpu,
                             run_id=rid, timeout=600)
                for dur, s in ((a.warmup, seed + 1), (a.duration, seed)):
                    c0, s0 = cpu_s(srv.pid), switches(srv.pid)
                    out = sysbench.run(sysbench.command("point_select", common, sysbench.run_args(
                        threads=a.users, duration=dur, seed=s, rand_type="uniform", interval=1), "run"),
                        cpus=client_cpu, run_id=rid, timeout=dur + 120)
                    c1, s1 = cpu_s(srv.pid), switches(srv.pid)
                rep = sysbench.parse_report(out)
                n = rep["qps"] * rep["total_time_s"]
                if not n:
                    raise SystemExit(f"{arm} {engine}: the measured window ran no query")
                return rep["qps"], (c1 - c0) * 1e6 / n, (s1[0] - s0[0]) * 1e3 / n, (s1[1] - s0[1]) * 1e3 / n
    finally:
        docker_backend.run_argv = _run_argv
        shutil.rmtree(scratch, ignore_errors=True)


SYSCALLS = 300_000  # dd's reads and writes of one byte each: 2 x this many syscalls


def syscall_ns(arm: str, image: str) -> float:
    """ns per syscall of `dd bs=1` on CPU 0: bare (taskset), or in a container as the
    pipeline runs one (--network none, the cpuset), with Docker's default seccomp profile
    (docker+default-seccomp) or without any (docker, the pipeline's own)."""
    import subprocess
    sh = (f"s=$(date +%s%N); dd if=/dev/zero of=/dev/null bs=1 count={SYSCALLS} 2>/dev/null; "
          f"e=$(date +%s%N); echo $((e - s))")
    if arm == "bare":
        argv = ["taskset", "-c", "0", "sh", "-c", sh]
    else:
        argv = [docker_backend.docker_bin(), "run", "--rm", "--network", "none", "--cpuset-cpus", "0",
                *[x for k, v in docker_backend.labels(f"bench-syscalls-{os.getpid()}").items()
                  for x in ("--label", f"{k}={v}")]]
        if arm == "docker":
            argv += ["--security-opt", f"seccomp={docker_backend.SECCOMP}"]
        argv += [image, "sh", "-c", sh]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=docker_backend.cli_env()).stdout
    return int(out.split()[-1]) / (2 * SYSCALLS)


def syscalls(rounds: int) -> None:
    image = docker_backend.image(build=True)["id"]
    arms = ["bare", "docker", "docker+default-seccomp"]
    got: dict = {a: [] for a in arms}
    rng = random.Random(1)
    with hostlock.measuring("bench container_overhead --syscalls"):
        for _ in range(rounds):
            order = arms[:]
            rng.shuffle(order)
            for arm in order:
                got[arm].append(syscall_ns(arm, image))
    for arm in arms:
        v = sorted(got[arm])
        print(f"{arm:24s} {statistics.median(v):6.0f} ns per syscall (min {v[0]:.0f}, max {v[-1]:.0f}; "
              f"{rounds} runs of dd bs=1 count={SYSCALLS:,} on CPU 0)")


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
    p.add_argument("--syscalls", action="store_true",
                   help="only the cost of one syscall bare and in containers with and without seccomp")
    a = p.parse_args()
    if a.syscalls:
        syscalls(a.rounds)
        return
    arms = a.arms.split(",")
    if "bare" not in arms:
        p.error("--arms: include bare (the ratios are to it)")
    if "host-cgroup" in arms:
        from harness.measure import placement
        if not placement.detect("auto").startswith("cgroup"):
            p.error("--arms host-cgroup: no writable cgroup cpuset on this host; run as root or drop the arm")
    if a.users > 8:  # switches(): a thread that ends inside the window takes its switches with it
        p.error("--users: at most 8, so every connection's thread outlives the window "
                "(mysqld's thread cache keeps them)")
    entry, build_dir, template = pinned_build()
    rng = random.Random(a.seed)
    print(f"{BUILD}, sysbench {sysbench.version()} oltp_point_select, {a.tables} x {a.table_size:,} rows, "
          f"{a.users} users, {a.warmup} s warm-up + {a.duration} s; mysqld on CPU 0, sysbench on CPU 1; "
          f"{a.rounds} rounds, arms in a shuffled order per round; load average before: "
          f"{os.getloadavg()[0]:.2f}")
    for engine in a.engines.split(","):
        qps: dict = {arm: [] for arm in arms}
        cpu: dict = {arm: [] for arm in arms}
        vol: dict = {arm: [] for arm in arms}
        inv: dict = {arm: [] for arm in arms}
        for r in range(a.rounds):
            order = arms[:]
            rng.shuffle(order)
            for arm in order:
                q, c, v, i = one(arm, engine, a, entry, build_dir, template, seed=a.seed + r)
                qps[arm].append(q)
                cpu[arm].append(c)
                vol[arm].append(v)
                inv[arm].append(i)
        print(f"{engine}: bare {statistics.median(qps['bare']):,.0f} qps, mysqld "
              f"{statistics.median(cpu['bare']):.1f} CPU-us per query, context switches per 1,000 "
              f"queries {statistics.median(vol['bare']):.1f} voluntary, "
              f"{statistics.median(inv['bare']):.1f} involuntary", flush=True)
        for arm in arms:
            if arm == "bare":
                continue
            ratios = [x / b for x, b in zip(qps[arm], qps["bare"])]
            cratios = [x / b for x, b in zip(cpu[arm], cpu["bare"])]
            print(f"  {arm}: {statistics.median(qps[arm]):,.0f} qps, {arm} / bare QPS "
                  f"{statistics.median(ratios):.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f}, "
                  f"{sum(x < 1 for x in ratios)} of {len(ratios)} lower); mysqld CPU per query "
                  f"{statistics.median(cpu[arm]):.1f} us, {arm} / bare {statistics.median(cratios):.3f} "
                  f"(pairs {min(cratios):.3f}-{max(cratios):.3f}); context switches per 1,000 queries "
                  f"{statistics.median(vol[arm]):.1f} voluntary, {statistics.median(inv[arm]):.1f} "
                  f"involuntary", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f} (other users' work on this host is not excluded)")


if __name__ == "__main__":
    main()
