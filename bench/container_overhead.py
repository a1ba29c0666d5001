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
Arms `host-cpucg`, `host-memcg`, `host-cpumemcg` (both) and `host-allcg`: the bare server moved, once started,
into cgroups two levels deep in the cgroup-v1 `cpu` and `cpuacct` hierarchies, in `memory`
with the containers' memory limit (what it charged before the move stays outside), or in
each of cpu, cpuacct, memory, pids, blkio, devices, freezer and cpuset, as deep as
Docker's containers sit (/mysqlbench-docker/<id>): is a cost the scheduler's group
hierarchy's, memory accounting's, the cgroups' together, or the namespaces'?
Arms `docker-hostcpu`, `docker-hostmem`, `docker-hostall`: the other way round, the
container's mysqld moved, once started, out of the container's cpu and cpuacct, memory,
or cpu, cpuacct, memory, pids, blkio, devices and freezer cgroups into this bench's own
(those a bare server has): does the container cost nothing without them? In every docker
arm sysbench runs its windows in the server's memory cgroup, as the pipeline does on
cgroup v1 (harness.measure.backends.Backend.client_memcg), except arm `docker-apartmem`:
the client in this bench's own memory cgroup, apart from the server's, as the pipeline
ran it before: what does charging a server and its client to two memory cgroups cost?
(Results recorded before that change: their `docker` is today's `docker-apartmem`, their
`docker-clientmem` today's `docker`, and their `docker-hostcpu` and `docker+OPT` arms
had the client apart.) In the `host-*cg` arms the client stays in this bench's memory
cgroup, apart from the server's nested one.

`--alternate N`: a VM's speed drifts over seconds to minutes, so runs a minute apart
differ by more than the cost sought. This mode starts every arm's server at once (all
on CPU 0, all loaded and warmed up), then measures N pairs of short windows, each pair
one window per arm in a shuffled order, seconds apart; the idle servers' background
threads cost both arms alike. The ratios are per pair, medians over the rounds' pairs.
The interval is over rounds, not pairs: a round's servers start once and serve all its
pairs, and what a start draws (memory layout, where the buffer pool lands) is shared by
its pairs, so the unit that can be repeated independently is the round (bench/common.py
per_start: each round's mean log ratio, the exact signed-rank interval over rounds,
none below 6 rounds; with the scatter within a start and between starts, so a run
shows how much the starts differ). The sign interval over all pairs is printed too,
labelled for what it is: a statement about these starts only.

    python bench/container_overhead.py [--rounds 5] [--duration 10] [--engines InnoDB,MyISAM,MEMORY]
                                       [--arms bare,docker,docker+default-seccomp]
    python bench/container_overhead.py --alternate 3 --duration 3 --rounds 10 ...  (>= 6 rounds: an interval)
    python bench/container_overhead.py --syscalls [--rounds 7]   (ns per syscall, per arm)
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import re
import tempfile
from pathlib import Path

from common import BUILD, per_start, per_start_text, pinned_build

from harness.measure import docker as docker_backend
from harness.analysis import intervals
from harness.measure import hostlock, placement, sysbench
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


def start_arm(stack: contextlib.ExitStack, arm: str, engine: str, a, entry: dict, build_dir: Path,
              template: Path, server_cpu, client_cpu) -> tuple:
    """Start an arm's server on a fresh copy of the template (removed when `stack`
    closes), its sysbench tables loaded; (server, sysbench common args)."""
    scratch = Path(tempfile.mkdtemp(prefix="mysqlbench-bench-"))
    stack.callback(shutil.rmtree, scratch, True)
    shutil.copytree(template / "datadir", scratch / "datadir", symlinks=True)
    host = arm in ("bare", "host-cgroup", *NESTED)
    docker_backend.run_argv = arm_argv(arm) if not host else _run_argv
    try:
        srv = stack.enter_context(Server(
            name=BUILD, entry=entry, build_dir=build_dir, datadir=scratch / "datadir", rundir=scratch / "run",
            run_id=f"bench-container-{re.sub(r'[^A-Za-z0-9]', '', arm)}-{os.getpid()}", cpus=server_cpu,
            backend="host" if host else "docker",
            mechanism="taskset" if arm in ("bare", *NESTED) else "auto"))
    finally:
        docker_backend.run_argv = _run_argv
    if arm in NESTED:
        stack.enter_context(nested_cgroups(srv.pid, arm))
    if arm in UNNEST:
        stack.enter_context(unnested_cgroups(srv.pid, arm))
    if arm == "docker-apartmem":
        APART.add(srv.run_id)
    srv.query("CREATE DATABASE IF NOT EXISTS sbtest")
    common = sysbench.common_args(socket=srv.socket, tables=a.tables, table_size=a.table_size, engine=engine)
    sysbench.run(sysbench.command("point_select", common, [], "prepare"), cpus=client_cpu,
                 run_id=srv.run_id, timeout=600)
    return srv, common


def cpus_split() -> tuple[list[int], list[int]]:
    """(the server's CPU, the client's): the first two this process may use."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[:1], cpus[1:2] or cpus[:1]


def one(arm: str, engine: str, a, entry: dict, build_dir: Path, template: Path,
        seed: int) -> tuple[float, float, float, float]:
    """(QPS, mysqld's CPU microseconds per query, its voluntary and involuntary context
    switches per 1,000 queries) of one run of an arm on a server of its own."""
    server_cpu, client_cpu = cpus_split()
    with contextlib.ExitStack() as stack:
        stack.enter_context(hostlock.measuring(f"bench container_overhead {arm} {engine}"))
        srv, common = start_arm(stack, arm, engine, a, entry, build_dir, template, server_cpu, client_cpu)
        window(srv, common, a, a.warmup, seed + 1, client_cpu)
        return window(srv, common, a, a.duration, seed, client_cpu)


_v1_mount = placement.v1_mount  # the cgroup-v1 mount holding a controller, or None


UNNEST = {"docker-hostcpu": ("cpu", "cpuacct"),  # arm: the v1 controllers it leaves for this bench's own
           "docker-hostmem": ("memory",),
           "docker-hostall": ("cpu", "cpuacct", "memory", "pids", "blkio", "devices", "freezer")}


def _own_cgroup(pid: int | str, ctrl: str) -> str:
    """The cgroup-v1 path of process `pid` ("self" for this one) in controller `ctrl`'s hierarchy."""
    path = placement.cgroup_path(pid, ctrl)
    if path is None:
        raise SystemExit(f"no cgroup-v1 {ctrl} hierarchy holds process {pid}")
    return path


@contextlib.contextmanager
def unnested_cgroups(pid: int, arm: str):
    """Move a container's process `pid` (all its threads) out of the container's cgroups
    into this bench's own, for each of the arm's v1 controllers (the cpuset stays the
    container's); back into the container's after, so Docker removes them as usual."""
    moved: list[tuple[Path, Path]] = []
    try:
        for ctrl in UNNEST[arm]:
            root = _v1_mount(ctrl)
            if root is None:
                raise SystemExit(f"--arms {arm}: no cgroup-v1 {ctrl} hierarchy on this host; drop the arm")
            theirs = root / _own_cgroup(pid, ctrl).lstrip("/")
            ours = root / _own_cgroup("self", ctrl).lstrip("/")
            if theirs == ours:  # controllers mounted together
                continue
            (ours / "cgroup.procs").write_text(str(pid))
            moved.append((theirs, ours))
            if root / _own_cgroup(pid, ctrl).lstrip("/") != ours:
                raise SystemExit(f"--arms {arm}: process {pid} did not move to {ours}")
        yield
    finally:
        for theirs, _ in moved:
            if Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    (theirs / "cgroup.procs").write_text(str(pid))


# arm docker-apartmem: the run_ids whose sysbench windows stay in this bench's memory cgroup
APART: set[str] = set()


NESTED = {"host-cpucg": ("cpu", "cpuacct"), "host-memcg": ("memory",),  # arm: its v1 controllers
          "host-cpumemcg": ("cpu", "cpuacct", "memory"),
          "host-allcg": ("cpu", "cpuacct", "memory", "pids", "blkio", "devices", "freezer", "cpuset")}


@contextlib.contextmanager
def nested_cgroups(pid: int, arm: str):
    """Move process `pid` into <controller root>/mysqlbench-bench-<arm>-<our pid>/inner for
    each of the arm's cgroup-v1 controllers (two levels deep, as Docker's containers sit;
    memory with the containers' limit); back to the root and removed after."""
    name = f"mysqlbench-bench-{arm.split('-', 1)[1]}-{os.getpid()}"
    made: list[Path] = []
    try:
        for ctrl in NESTED[arm]:
            root = _v1_mount(ctrl)
            if root is None:
                raise SystemExit(f"--arms {arm}: no cgroup-v1 {ctrl} hierarchy on this host; drop the arm")
            outer = root / name
            if outer in made:  # controllers mounted together
                continue
            inner = outer / "inner"
            made.append(outer)  # before mkdir: removed even if inner cannot be made
            inner.mkdir(parents=True, exist_ok=True)
            if ctrl == "cpuset":  # a v1 cpuset takes no task before its cpus and mems are set;
                # joining one sets the threads' affinity to its cpus: the server's own, then
                own = [ln.split(":", 1)[1].strip() for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                       if ln.startswith(("Cpus_allowed_list:", "Mems_allowed_list:"))]
                for d in (outer, inner):
                    (d / "cpuset.cpus").write_text(own[0])
                    (d / "cpuset.mems").write_text(own[1])
            if ctrl == "memory":
                lim = docker_backend.memory_limit()
                (inner / "memory.limit_in_bytes").write_text(lim.replace("m", "M").replace("g", "G"))
            (inner / "cgroup.procs").write_text(str(pid))
        yield
    finally:
        for outer in made:
            if Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    (outer.parent / "cgroup.procs").write_text(str(pid))
            for d in (outer / "inner", outer):
                if not placement.rmdir_when_empty(d, tries=50):
                    print(f"cannot remove cgroup {d} (tasks still in it): rmdir it by hand", flush=True)


def window(srv, common: dict, a, dur: int, seed: int, client_cpu) -> tuple[float, float, float, float]:
    """One measured sysbench window on `srv`: (QPS, mysqld CPU us per query, voluntary and
    involuntary context switches per 1,000 queries)."""
    c0, s0 = cpu_s(srv.pid), switches(srv.pid)
    out = sysbench.run(sysbench.command("point_select", common, sysbench.run_args(
        threads=a.users, duration=dur, seed=seed, rand_type="uniform", interval=1), "run"),
        cpus=client_cpu, run_id=srv.run_id, timeout=dur + 120,
        memcg=None if srv.run_id in APART else srv.client_memcg())
    c1, s1 = cpu_s(srv.pid), switches(srv.pid)
    rep = sysbench.parse_report(out)
    n = rep["qps"] * rep["total_time_s"]
    if not n:
        raise SystemExit(f"{srv.run_id}: the measured window ran no query")
    return rep["qps"], (c1 - c0) * 1e6 / n, (s1[0] - s0[0]) * 1e3 / n, (s1[1] - s0[1]) * 1e3 / n


def goal_text(ci) -> str:
    if ci is None:
        return "; >= 0.98 not decided (too few starts)"
    return ("; >= 0.98 shown" if ci.lo >= 0.98 else "; < 0.98 shown" if ci.hi < 0.98
            else "; >= 0.98 not decided")


def alternate(arms: list[str], engine: str, a, entry: dict, build_dir: Path, template: Path,
              seed: int, rng: random.Random) -> dict[str, list[tuple]]:
    """One round of --alternate: every arm's server up at once on CPU 0, each loaded and
    warmed up; then a.alternate pairs of windows (one per arm, shuffled). Returns per arm
    its windows' (QPS, CPU us per query, voluntary, involuntary switches per 1,000)."""
    server_cpu, client_cpu = cpus_split()
    got: dict = {arm: [] for arm in arms}
    with contextlib.ExitStack() as stack:
        stack.enter_context(hostlock.measuring(f"bench container_overhead --alternate {engine}"))
        servers = {arm: start_arm(stack, arm, engine, a, entry, build_dir, template, server_cpu, client_cpu)
                   for arm in arms}
        for arm in arms:  # warm-ups after every server is up, so none idles cold for long
            srv, common = servers[arm]
            window(srv, common, a, a.warmup, seed + 1, client_cpu)
        for k in range(a.alternate):
            order = arms[:]
            rng.shuffle(order)
            for arm in order:
                srv, common = servers[arm]
                got[arm].append(window(srv, common, a, a.duration, seed + 2 + k, client_cpu))
    return got


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
    p.add_argument("--tsv", metavar="FILE", help="also write every window (engine, round, pair, arm, qps, "
                   "cpu_us_per_query, voluntary, involuntary per 1,000) to FILE (a new file: an older "
                   "one without the round column is refused)")
    p.add_argument("--alternate", type=int, default=0, metavar="N",
                   help="per round, every arm's server up at once and N pairs of windows seconds apart")
    p.add_argument("--syscalls", action="store_true",
                   help="only the cost of one syscall bare and in containers with and without seccomp")
    a = p.parse_args()
    if a.tsv and Path(a.tsv).exists() and "\tround\t" not in Path(a.tsv).open().readline():
        p.error(f"--tsv {a.tsv}: an older layout without the round column; give a new file")
    if a.alternate and a.rounds < 6:
        print(f"note: --alternate with --rounds {a.rounds}: the interval is over rounds (server starts) "
              f"and needs 6; only the medians and the pairs' interval given these starts are printed",
              flush=True)
    if a.syscalls:
        syscalls(a.rounds)
        return
    arms = a.arms.split(",")
    if "bare" not in arms:
        p.error("--arms: include bare (the ratios are to it)")
    if "docker-apartmem" in arms and placement.memcg_of(os.getpid()) is None:
        p.error("--arms docker-apartmem: here no client joins a server's memory cgroup (it needs "
                "cgroup v1 with memory in a hierarchy of its own, as root), so it is arm docker; drop it")
    for arm in set(arms) & (set(NESTED) | set(UNNEST)):
        ctrls = {**NESTED, **UNNEST}[arm]
        if not all((m := _v1_mount(c)) is not None and os.access(m, os.W_OK) for c in ctrls):
            p.error(f"--arms {arm}: needs writable cgroup-v1 {' and '.join(ctrls)} hierarchies "
                    f"(as root); drop the arm")
    known = {"bare", "docker", "host-cgroup", "docker-apartmem", *NESTED, *UNNEST}
    for arm in arms:
        if arm not in known and not arm.startswith("docker+"):
            p.error(f"--arms {arm}: no such arm; use {', '.join(sorted(known))} or docker+OPTION")
    if "host-cgroup" in arms:
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
    if a.alternate:
        print(f"--alternate {a.alternate}: per round every arm's server up at once, then "
              f"{a.alternate} pairs of {a.duration} s windows (one per arm, shuffled); ratios per pair")
    for engine in a.engines.split(","):
        runs: dict = {arm: [] for arm in arms}  # per arm: (qps, cpu us/query, vol, inv) per window
        for r in range(a.rounds):
            if a.alternate:
                for arm, got in alternate(arms, engine, a, entry, build_dir, template,
                                          seed=a.seed + 100 * r, rng=rng).items():
                    runs[arm].extend(got)
                continue
            order = arms[:]
            rng.shuffle(order)
            for arm in order:
                runs[arm].append(one(arm, engine, a, entry, build_dir, template, seed=a.seed + r))

        def start_of(k: int) -> int:  # the round (server starts) of the k-th window of an arm
            return k // a.alternate if a.alternate else k

        if a.tsv:
            new = not Path(a.tsv).exists()
            with open(a.tsv, "a") as f:
                if new:
                    f.write("engine\tround\tpair\tarm\tqps\tcpu_us_per_query\tvoluntary_per_1000"
                            "\tinvoluntary_per_1000\n")
                for arm in arms:
                    for k, x in enumerate(runs[arm]):
                        f.write("\t".join([engine, str(start_of(k)), str(k), arm, *(f"{v:.4f}" for v in x)])
                                + "\n")

        def med(arm, i):
            return statistics.median(x[i] for x in runs[arm])
        print(f"{engine}: bare {med('bare', 0):,.0f} qps, mysqld {med('bare', 1):.1f} CPU-us per query, "
              f"context switches per 1,000 queries {med('bare', 2):.1f} voluntary, "
              f"{med('bare', 3):.1f} involuntary", flush=True)
        for arm in arms:
            if arm == "bare":
                continue
            ratios = [x[0] / b[0] for x, b in zip(runs[arm], runs["bare"])]
            cratios = [x[1] / b[1] for x, b in zip(runs[arm], runs["bare"])]
            print(f"  {arm}: {med(arm, 0):,.0f} qps, {arm} / bare QPS "
                  f"{statistics.median(ratios):.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f}, "
                  f"{sum(x < 1 for x in ratios)} of {len(ratios)} lower); mysqld CPU per query "
                  f"{med(arm, 1):.1f} us, {arm} / bare {statistics.median(cratios):.3f} "
                  f"(pairs {min(cratios):.3f}-{max(cratios):.3f}); context switches per 1,000 queries "
                  f"{med(arm, 2):.1f} voluntary, {med(arm, 3):.1f} involuntary", flush=True)
            for what, i in (("QPS", 0), ("CPU per query", 1)):
                if a.alternate:
                    # the unit is the round: its servers start once and serve all its pairs, so
                    # the pairs of a round are not independent of each other (common.per_start)
                    units: dict = {}
                    for k, (x, b) in enumerate(zip(runs[arm], runs["bare"])):
                        units.setdefault(start_of(k), []).append((x[i], b[i]))
                    ci, comp = per_start(units)
                    print(f"    {per_start_text(ci, comp, what)}{goal_text(ci) if i == 0 else ''}", flush=True)
                    if len(ratios) >= 6:
                        pci = intervals.sign_interval([x[i] for x in runs[arm]], [b[i] for b in runs["bare"]])
                        print(f"      (the median pair given these {comp['units']} starts: {pci.point:.3f} "
                              f"[{pci.lo:.3f}, {pci.hi:.3f}], {pci.coverage:.1%} sign test over "
                              f"{len(ratios)} pairs, a statement about these starts only)", flush=True)
                elif len(ratios) >= 6:  # one start per arm and pair: the median pair's sign interval
                    ci = intervals.sign_interval([x[i] for x in runs[arm]], [b[i] for b in runs["bare"]])
                    print(f"    median pair {what}: {ci.point:.3f} [{ci.lo:.3f}, {ci.hi:.3f}] "
                          f"({ci.coverage:.1%} {ci.method}, {len(ratios)} pairs, one start each)"
                          f"{goal_text(ci) if i == 0 else ''}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f} (other users' work on this host is not excluded)")


if __name__ == "__main__":
    main()
