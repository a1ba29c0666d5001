"""The pipeline on a real SLURM scheduler: a two-node cluster (Debian's munge,
slurmctld and two slurmd, `slurmd -N node1` and `-N node2`, each with its own port
and spool directory, both on this host) started by this module for localhost only,
the smoke sweep submitted through Snakemake's SLURM executor (`--profile
profiles/slurm`) to the PDF, its jobs landing on both nodes (a block of cells one
job, back to back on one node), the results gathered in the one working directory
as on a shared filesystem, and its raw cells and manifests compared in structure
with what a local run produces. Also: a dry run of the paper profile under the slurm
profile lists measurements as cluster jobs and analysis as local ones, and a
local `--cores all` run never has two measurement jobs alive at once.

Why a real scheduler: the executor plugin, `--exclusive`, `localrules` and the
job environment (session label, PYTHONPATH) only show they fit together when a
real slurmctld schedules real jobs. Every daemon is started here, in the
foreground, by pid; teardown stops them by that pid and checks that no process
of this cluster (found by its private SLURM_CONF path, never by a name) and no
job is left."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from conftest import BUILD, ROOT, copy_checkout
from test_e2e_pipeline import planned_jobs, smoke_config

pytestmark = [pytest.mark.slurm, pytest.mark.e2e]
# the reduced sweep run twice (on the cluster, then here) is minutes: its three tests are
# marked slow, in the long suite (`./artifact test-long`); the default suite keeps the
# cluster's set-up, a job's allocation and the dry runs
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}
CLIENTS = ("sinfo", "squeue", "scancel", "sbatch", "srun")
# rules that start a mysqld/PostgreSQL (or bootstrap a datadir with one): a whole node each
MEASUREMENT_RULES = {"run_cell", "dataset", "bootstrap_template"}
ANALYSIS_RULES = {"tidy_throughput", "tidy_steps", "unsupported_cells", "resolved_config", "factor_table",
                  "figure_a1", "figure_a2_a3", "figure_b", "figure_c", "paper_figure", "fts_dataset_table",
                  "runinfo", "artifact_appendix", "verdict_power", "generated_tex", "paper", "all", "repetition_done"}


# --------------------------------------------------------------- the cluster

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mem_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 * 9 // 10
    raise RuntimeError("no MemTotal in /proc/meminfo")


def slurm_conf(d: Path, host: str, nodes: tuple[str, ...]) -> str:
    """One controller and `nodes`, all of them this host on 127.0.0.1: each node a
    slurmd of its own (`slurmd -N name`) with its own port, spool directory, pid and
    log file (`%n`: the node's name), its NodeAddr the loopback. (Debian's slurmd runs
    two such daemons on one host as it is, even with one NodeHostname for both: tried
    when this test was written.) Every state, spool, log and pid file is under `d`; no
    cgroups (linuxproc; task/affinity binds a job's tasks to its allocated CPUs by
    sched_setaffinity, no cgroup), so it runs in a container, and each node declares
    this host's CPUs (an --exclusive job's allocation is then the whole host); MinJobAge keeps finished jobs visible to squeue (no accounting database, so
    the executor asks squeue, not sacct)."""
    return "\n".join([
        "ClusterName=mysqlbench-test",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={_free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"AuthInfo=socket={d}/munge/munge.socket",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/affinity",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "ReturnToService=2",
        "MinJobAge=3600",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=5",
        *(f"NodeName={n} NodeAddr=127.0.0.1 Port={_free_port()} CPUs={os.cpu_count()} RealMemory={_mem_mb()}"
          " State=UNKNOWN" for n in nodes),
        f"PartitionName=bench Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def cluster_pids(conf: Path) -> list[int]:
    """Every process of this cluster: daemons, slurmstepd and job processes all
    carry our private SLURM_CONF (the daemons got it from us, jobs from them)."""
    want = f"SLURM_CONF={conf}".encode()
    me, pids = os.getpid(), []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != me:
            try:
                if want in (d / "environ").read_bytes().split(b"\0"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def _wait(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.5)
    raise TimeoutError(what)


NODES = ("node1", "node2")


class Cluster:
    """munged + slurmctld + one slurmd per node in the foreground, children of this process."""

    def __init__(self, d: Path):
        self.d, self.host = d, socket.gethostname().split(".")[0]
        self.conf = d / "slurm.conf"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env["SLURM_CONF"] = str(self.conf)
        self.procs: dict[str, subprocess.Popen] = {}

    def run(self, *cmd, check=True) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def start(self) -> None:
        for sub in ("munge", "state", "spool", "run", "log"):
            (self.d / sub).mkdir(mode=0o711, parents=True, exist_ok=True)
        key = self.d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        for n in NODES:
            (self.d / "spool" / n).mkdir(mode=0o711, exist_ok=True)
        self.conf.write_text(slurm_conf(self.d, self.host, NODES))
        self._client_shims()
        m = self.d / "munge"
        self._spawn("munged", DAEMONS["munged"], "--foreground", "--force", f"--key-file={key}",
                    f"--socket={m}/munge.socket", f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log",
                    f"--seed-file={m}/munged.seed")
        _wait(lambda: (m / "munge.socket").exists(), 30, "munged did not open its socket")
        self._spawn("slurmctld", DAEMONS["slurmctld"], "-D", "-i", "-f", str(self.conf))
        _wait(lambda: self.run("sinfo", "-h", check=False).returncode == 0, 60, "slurmctld did not answer")
        for n in NODES:
            self._spawn(f"slurmd-{n}", DAEMONS["slurmd"], "-D", "-f", str(self.conf), "-N", n)
        try:
            _wait(self.idle, 90, "")
        except TimeoutError:
            raise TimeoutError("the nodes did not become idle: " + self.run("sinfo", "-N", "-l", check=False).stdout
                               + "".join((self.d / "log" / f"slurmd-{n}.out").read_text()[-1500:] for n in NODES))

    def _client_shims(self) -> None:
        """bin/<client> = the real client with this cluster's SLURM_CONF. On a real
        cluster clients find /etc/slurm/slurm.conf; here the conf is private, and the
        executor's job step drops SLURM_* from the environment before it calls srun,
        so the jobs find the conf through PATH (exported with the job) instead."""
        self.bin = self.d / "bin"
        self.bin.mkdir(exist_ok=True)
        for c in (*CLIENTS, "scontrol", "sacct", "sacctmgr", "sshare"):
            real = shutil.which(c)
            if real:
                shim = self.bin / c
                shim.write_text(f'#!/bin/sh\nSLURM_CONF={self.conf} exec {real} "$@"\n')
                shim.chmod(0o755)

    def _spawn(self, name: str, *cmd: str) -> None:
        log = open(self.d / "log" / f"{name}.out", "w")
        self.procs[name] = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        time.sleep(0.3)
        if self.procs[name].poll() is not None:
            raise RuntimeError(f"{name} exited at once: " + (self.d / "log" / f"{name}.out").read_text()[-2000:])

    def idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout.split("\n")
        return sorted(ln.split() for ln in out if ln.strip()) == [[n, "idle"] for n in NODES]

    def jobs(self) -> list[str]:
        """Ids of jobs still pending or running (finished ones stay listed for MinJobAge)."""
        out = self.run("squeue", "-h", "-o", "%i %t", check=False).stdout.split("\n")
        return [ln.split()[0] for ln in out if ln.split()[1:] and ln.split()[1] not in ("CD", "F", "CA", "TO")]

    def stop(self) -> list[str]:
        """Cancel our jobs (by id), stop the daemons (by pid); what was left, if anything."""
        problems = []
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            left = self.jobs()
            if left:
                problems.append(f"jobs still queued or running: {left}")
                self.run("scancel", *left, check=False)
                try:
                    _wait(lambda: not self.jobs(), 30, "jobs did not end")
                except TimeoutError as e:
                    problems.append(str(e))
        for name in (*(f"slurmd-{n}" for n in NODES), "slurmctld", "munged"):
            p = self.procs.get(name)
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    problems.append(f"{name} (pid {p.pid}) ignored SIGTERM")
                    p.kill()
                    p.wait(10)
        try:
            _wait(lambda: not cluster_pids(self.conf), 15, "")
        except TimeoutError:
            left = cluster_pids(self.conf)
            problems.append(f"processes of this cluster left: {left}")
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return problems


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("a two-node SLURM is started as root")
    missing = [p for p in [*DAEMONS.values(), *CLIENTS] if not shutil.which(p)]
    assert not missing, f"{missing} not installed: scripts/setup.sh installs slurm-wlm and munge"
    # short: munge's socket path must fit in sun_path
    d = Path(tmp_path_factory.mktemp("slurm"))
    cluster = Cluster(d)
    try:
        cluster.start()
        yield cluster
    finally:
        problems = cluster.stop()
        assert not problems, "; ".join(problems)


# --------------------------------------------------------------- the sweeps

# The smoke profile reduced to one experiment, so a local run and a SLURM run
# both fit in CI: point_select, InnoDB and MyISAM on 1 and 8 tables, 4 users,
# two blocks (8 cells, 4 datasets), 3 s runs. On the cluster each block is one job
# (group block_point_select_r<n>); both blocks (no look between them) open at once
# and run side by side, one on each node.
ONLY = "point_select"
BLOCKS = 2


def reduced_profile(work: Path) -> Path:
    exps = smoke_config(work)["experiments"]
    prof = {"experiments": {x: ({"users": [4], "repetitions": BLOCKS} if x == ONLY else {"enabled": False})
                            for x in exps}}
    out = work / "slurm-test.yaml"
    out.write_text(json.dumps(prof))
    return out


def copy_repo(dest: Path) -> Path:
    """A copy of the repository as a fresh clone would have it (tracked + new files, no outputs)."""
    copy_checkout(dest)
    # the sweep's one build, if already fetched: the pipeline re-verifies its hashes (else it fetches it)
    build = ROOT / "resources" / "builds" / BUILD
    if build.is_dir():
        shutil.copytree(build, dest / "resources" / "builds" / BUILD, symlinks=True)
    return dest


def snakemake(work: Path, *args, env=None, timeout=3600) -> str:
    t0 = time.monotonic()
    res = subprocess.run([SNAKEMAKE, *args], cwd=work, capture_output=True, text=True, env=env, timeout=timeout)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-5000:]
    print(f"snakemake {' '.join(args)}: {time.monotonic() - t0:.0f} s")
    return out


def sweep_args(work: Path) -> list[str]:
    return ["--configfile", "config/smoke.yaml", str(reduced_profile(work).name)]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The reduced sweep on this host, as `./artifact smoke` runs it (default profile: bench=1)."""
    work = copy_repo(tmp_path_factory.mktemp("local"))
    out = snakemake(work, "--cores", "all", *sweep_args(work))
    return work, out


@pytest.fixture(scope="module")
def slurm_run(slurm, tmp_path_factory):
    """The same sweep submitted to the two-node cluster through the executor plugin."""
    work = copy_repo(tmp_path_factory.mktemp("cluster"))
    env = {**os.environ, "SLURM_CONF": str(slurm.conf), "PATH": f"{slurm.bin}{os.pathsep}{os.environ['PATH']}",
           "MYSQLBENCH_NODE_CPUS": str(os.cpu_count())}  # each node declares this host's CPUs
    # no accounting database on this cluster: job states come from squeue (MinJobAge keeps them)
    out = snakemake(work, "--profile", "profiles/slurm", *sweep_args(work), "--jobs", "4",
                    "--slurm-status-command", "squeue", "--slurm-no-account",
                    "--slurm-init-seconds-before-status-checks", "5", "--seconds-between-status-checks", "5",
                    env=env)
    return work, out


def cells(work: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted((work / "data/raw").glob("*/*/*")) if p.is_dir()}


def shape(x):
    """A manifest's structure: its keys, recursively, and the kinds of its leaves."""
    if isinstance(x, dict):
        return {k: shape(v) for k, v in x.items()}
    if isinstance(x, list):
        return [shape(x[0])] if x else []
    return "number" if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__


def submitted_rules(out: str) -> tuple[set[str], set[str], list[str]]:
    """(rules submitted to the cluster alone, rules run here, groups submitted) from a
    real run's log (a group job's log directory is group_<group id>_<its rules>)."""
    cluster = set(re.findall(r"submitted with SLURM jobid \d+ \(log: \S*/slurm_logs/rule_(\w+)/", out))
    groups = re.findall(r"submitted with SLURM jobid \d+ \(log: \S*/slurm_logs/group_(\w+)/", out)
    local = set(re.findall(r"^localrule (\w+):", out, re.M))
    return cluster, local, groups


def slurm_jobs(slurm: Cluster) -> list[dict]:
    """Every job of the cluster (finished ones too): id, comment (rule_<rule or group
    name>_wildcards_…), state, node, exclusive or not, start and end (aware, local time)."""
    out = []
    for line in slurm.run("squeue", "-h", "-t", "all", "-o", "%i|%k|%t|%N").stdout.splitlines():
        jid, comment, state, node = line.split("|")
        info = slurm.run("scontrol", "show", "job", jid).stdout
        t = {k: datetime.fromisoformat(v).astimezone()
             for k, v in re.findall(r"\b(SubmitTime|StartTime|EndTime)=(\S+)", info)}
        out.append({"id": jid, "comment": comment, "state": state, "node": node,
                    "exclusive": "OverSubscribe=NO" in info, **t})
    return out


@pytest.mark.slow
def test_slurm_sweep_ends_in_the_paper(slurm, slurm_run):
    work, out = slurm_run
    pdf = work / "paper/main.pdf"
    assert pdf.read_bytes()[:4] == b"%PDF"
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Point-Selects" in text
    cluster, local, groups = submitted_rules(out)
    assert "dataset" in cluster and not {"run_cell", "cell_measured"} & cluster, (cluster, groups)
    assert sorted(groups) == [f"block_{ONLY}_r{r}_cell_measured_run_cell" for r in range(1, BLOCKS + 1)], groups
    assert not cluster & ANALYSIS_RULES, cluster
    assert {"tidy_throughput", "generated_tex", "paper"} <= local, local
    jobs = slurm_jobs(slurm)
    datasets = [j for j in jobs if j["comment"].startswith("rule_dataset_")]
    blocks = {r: [j for j in jobs if j["comment"].startswith(f"rule_block_{ONLY}_r{r}_")] for r in range(1, BLOCKS + 1)}
    assert len(datasets) == 4 and all(len(b) == 1 for b in blocks.values()), [j["comment"] for j in jobs]
    measured = datasets + [b[0] for b in blocks.values()]
    # every measurement a finished SLURM job on a whole node of its own (--exclusive)
    assert all(j["state"] == "CD" and j["exclusive"] for j in measured), measured
    # the jobs landed on both nodes, each node running one measurement at a time ...
    assert {j["node"] for j in measured} == set(NODES), [(j["comment"], j["node"]) for j in measured]
    for node in NODES:
        spans = sorted((j["StartTime"], j["EndTime"], j["id"]) for j in measured if j["node"] == node)
        for (s1, e1, a), (s2, e2, b) in zip(spans, spans[1:]):
            assert e1 <= s2, f"SLURM jobs {a} and {b} shared {node}"
    # ... while Snakemake had more queued than the nodes could hold at once (no `bench` slot)
    assert any(j["SubmitTime"] < k["EndTime"] <= j["StartTime"] for j in measured for k in measured
               if j["node"] == k["node"] and j is not k), measured
    # each block's cells ran inside its one job, back to back in the block's order
    for r, (job,) in blocks.items():
        mans = [json.loads((c / "manifest.json").read_text()) for c in cells(work).values()]
        mine = sorted((m for m in mans if m["block"]["id"] == r), key=lambda m: m["block"]["position"])
        assert [m["block"]["position"] for m in mine] == [1, 2, 3, 4], (r, [m["block"] for m in mine])
        started = [datetime.fromisoformat(m["timing"]["started"]) for m in mine]
        assert started == sorted(started), (r, started)
        assert job["StartTime"] <= started[0] and started[-1] <= job["EndTime"], (r, job, started)
    # the two block jobs (one phase: no look between them) overlapped, one on each node (both
    # test nodes are this host, so the cells inside them still take turns on its lock files)
    (b1,), (b2,) = blocks[1], blocks[2]
    assert b1["node"] != b2["node"] and b1["StartTime"] < b2["EndTime"] and b2["StartTime"] < b1["EndTime"], \
        (b1, b2)
    for name, c in cells(work).items():
        host = json.loads((c / "manifest.json").read_text())["host"]
        assert host["hostname"].split(".")[0] == slurm.host and host["cpu_model"], (name, host)
    assert not slurm.jobs()


def test_a_jobs_plan_sees_its_allocation_not_the_nodes_other_cpus(slurm):
    """The planner reads the live topology kept to the process's affinity
    (harness.measure.topology.Topology.live), and slurmd's task/affinity sets a job's
    affinity to the CPUs SLURM allocated it: a job given one CPU is planned on that CPU
    alone (refused in one line: mysqld and sysbench need two), a whole node
    (--exclusive) on all of its CPUs when the step asks for them, as the executor's
    `srun -n1 --cpu-bind=q --cpus-per-task=<cpus_per_task>` does with the profile's
    $MYSQLBENCH_NODE_CPUS; without it (the executor's step with no --cpus-per-task) the
    step holds one CPU of the whole node, which stops naming cpus_per_task
    (SLURM_JOB_CPUS_PER_NODE says what the job holds there)."""
    plan = (f"grep Cpus_allowed_list /proc/self/status; cd {ROOT} && PYTHONPATH=workflow "
            f"{sys.executable} -m harness plan --configfile config/smoke.yaml")
    one = slurm.run("srun", "-N1", "-n1", "-c1", "--cpu-bind=cores", "bash", "-c", plan, check=False)
    # and the executor's own step in a whole node, without the profile's cpus_per_task: one CPU too
    step = slurm.run("srun", "-N1", "-n1", "--exclusive", "--cpu-bind=q", "bash", "-c", plan, check=False)
    n = os.cpu_count()  # what each node declares; the profile's cpus_per_task ($MYSQLBENCH_NODE_CPUS)
    for res, why in ((one, "this host lets the pipeline use 1 CPU"),  # the job holds one CPU: too few
                     # the job holds the node, its step one CPU of it: the step's cpus_per_task is named
                     (step, f"cpus_per_task: this SLURM job step may use 1 of the {n} CPUs its job holds")):
        allowed = re.search(r"Cpus_allowed_list:\s*(\S+)", res.stdout)
        assert allowed and "," not in allowed.group(1) and "-" not in allowed.group(1), res.stdout + res.stderr
        assert res.returncode != 0 and why in res.stderr, res.stdout + res.stderr
    whole = slurm.run("srun", "-N1", "-n1", "--exclusive", f"--cpus-per-task={n}", "--cpu-bind=q", "bash", "-c",
                      plan, check=False)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert f"usable CPUs 0-{n - 1}," in whole.stdout, whole.stdout


@pytest.mark.slow
def test_slurm_cells_and_manifests_equal_a_local_run_in_structure(local_run, slurm_run):
    local, cluster = cells(local_run[0]), cells(slurm_run[0])
    assert local and sorted(local) == sorted(cluster)
    for name in local:
        assert sorted(p.name for p in local[name].iterdir()) == sorted(p.name for p in cluster[name].iterdir()), name
        a, b = (json.loads((d[name] / "manifest.json").read_text()) for d in (local, cluster))
        assert shape(a) == shape(b), name
        assert a["placement"]["server_cpus"] == b["placement"]["server_cpus"], name  # planned on the node
    for f in ("point_select.csv", "point_select_summary.csv"):
        header = [(w / "data/tidy" / f).read_text().splitlines()[0] for w in (local_run[0], slurm_run[0])]
        assert header[0] == header[1], f


def job_times(work: Path) -> dict[str, list[tuple[float, float, str]]]:
    """Snakemake's own record of every job: rule -> [(start, end, output)] (.snakemake/metadata)."""
    out: dict[str, list] = {}
    for f in (work / ".snakemake/metadata").iterdir():
        m = json.loads(f.read_text())
        if m.get("starttime") and m.get("endtime"):
            out.setdefault(m["rule"], []).append((m["starttime"], m["endtime"], f.name))
    return out


@pytest.mark.slow
def test_local_cores_all_never_runs_two_measurements_at_once(local_run):
    work, out = local_run
    times = job_times(work)
    spans = sorted(t for rule in ("run_cell", "dataset") for t in times.get(rule, []))
    assert len(times.get("run_cell", [])) == len(cells(work)) == 4 * BLOCKS and len(times.get("dataset", [])) == 4, \
        {k: len(v) for k, v in times.items()}
    for (s1, e1, a), (s2, e2, b) in zip(spans, spans[1:]):
        assert e1 <= s2, f"two measurement jobs alive at once: {a} ({s1}-{e1}) and {b} ({s2}-{e2})"


def test_paper_profile_dry_run_lists_measurements_as_cluster_jobs(tmp_path):
    """The published sweep under the slurm profile: the executor plugin validates the
    profile, every measurement is a cluster job asking for a whole node, every
    analysis job runs on the submit host. (A dry run prints every job as `rule`:
    Snakemake's dry-run executor is local, so which jobs are local is read from the
    workflow Snakemake loaded, the same `localrules` the real run obeys.)"""
    work = copy_repo(tmp_path)
    # the nodes' CPU count is the user's to give: without it, one line naming it, before anything runs
    for bad in (None, "0", "abc"):  # unset, or no positive count (0 would bind the step to one CPU again)
        env = {k: v for k, v in os.environ.items() if k != "MYSQLBENCH_NODE_CPUS"}
        if bad is not None:
            env["MYSQLBENCH_NODE_CPUS"] = bad
        res = subprocess.run([SNAKEMAKE, "-n", "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml"],
                             cwd=work, capture_output=True, text=True, timeout=600, env=env)
        said = res.stdout + res.stderr  # (Snakemake prints a workflow error on stdout)
        assert res.returncode != 0 and "run with MYSQLBENCH_NODE_CPUS=<CPUs per node>" in said, said[-3000:]
        assert ("unset" if bad is None else repr(bad)) in said, said[-3000:]
    env = {**os.environ, "MYSQLBENCH_NODE_CPUS": "64"}
    out = snakemake(work, "-n", "--profile", "profiles/slurm", "--configfile", "config/paper.yaml", env=env)
    planned = planned_jobs(out)
    assert planned.get("run_cell", 0) > 100 and planned.get("dataset"), planned
    # smoke runs a setting's users as one job (run_group_u<users>): it takes run_cell's resources
    smoke = snakemake(work, "-n", "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml", env=env)
    groups = {k for k in planned_jobs(smoke) if k.startswith("run_group_")}
    assert groups, planned_jobs(smoke)
    for job in re.split(r"^\s*(?:local)?rule ", smoke, flags=re.M):
        if job.split(":")[0] in groups:
            res = re.search(r"^\s*resources: (.*)$", job, re.M).group(1)
            assert "bench=0" in res and "--exclusive" in res and "cpus_per_task=64" in res, res
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from snakemake.api import SnakemakeApi\n"
        "from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings\n"
        "with SnakemakeApi(OutputSettings()) as api:\n"
        "    wf = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path('Snakefile'),\n"
        "                      config_settings=ConfigSettings(configfiles=[Path('config/paper.yaml')]))\n"
        "    w = wf._workflow\n"
        "    print(json.dumps(sorted(r.name for r in w.rules if r.name in w._localrules or r.norun)))\n")
    res = subprocess.run([sys.executable, "-c", script], cwd=work, capture_output=True, text=True, check=True)
    local = set(json.loads(res.stdout.strip().splitlines()[-1]))
    cluster = set(planned) - local
    assert MEASUREMENT_RULES & set(planned) <= cluster, (cluster, local)
    assert ANALYSIS_RULES & set(planned) <= local, (cluster, local)
    assert {"run_cell", "dataset", "paper", "generated_tex", "figure_a2_a3", "paper_figure"} <= set(planned), planned
    prof = yaml.safe_load((work / "profiles/slurm/config.v8+.yaml").read_text())
    assert prof["executor"] == "slurm"
    for rule in MEASUREMENT_RULES:
        assert "--exclusive" in prof["set-resources"][rule]["slurm_extra"], rule
        assert prof["set-resources"][rule]["cpus_per_task"] == "$MYSQLBENCH_NODE_CPUS", rule  # the whole node
        # the one-host slot (profiles/default's bench=1, applied as the workflow profile) is not taken
        assert prof["set-resources"][rule].get("bench", 0) == 0, rule


def test_duet_on_a_cluster_is_a_whole_node_job_without_lanes(tmp_path):
    """`pairing: duet` under the slurm profile: a pair's job (run_duet) takes run_cell's
    resources (a whole node, --exclusive, no one-host slot), and holds no lanes, since lanes
    are cut only on one host: its two cells run back to back on the node, as a block's do."""
    work = copy_repo(tmp_path)
    (work / "duet.yaml").write_text("pairing: duet\nsysbench: {users_on_one_server: false}\n")  # smoke groups users
    env = {**os.environ, "MYSQLBENCH_NODE_CPUS": "64"}
    out = snakemake(work, "-n", "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml", "duet.yaml",
                    env=env)
    jobs = [j for j in re.split(r"^\s*(?:local)?rule ", out, flags=re.M) if j.split(":")[0] == "run_duet"]
    assert jobs, planned_jobs(out)
    # every pair's job sits in its block's one cluster job: a group job's header, then its jobs indented
    group, seen = None, 0
    for line in out.splitlines():
        if m := re.search(r"\] Group job (\S+)", line):
            group = m.group(1)
        elif re.match(r"(local)?rule ", line):   # a job of no group: flush left
            group = None
            assert not line.startswith("rule run_duet:"), "a run_duet job outside any block's group job"
        elif re.match(r"\s+rule run_duet:", line):
            assert group and re.fullmatch(r"block_[a-z0-9_]+_r\d+", group), group
            seen += 1
    assert seen == len(jobs), (seen, len(jobs))
    for job in jobs:
        res = re.search(r"^\s*resources: (.*)$", job, re.M).group(1)
        assert "bench=0" in res and "--exclusive" in res and "cpus_per_task=64" in res, res
        assert not re.search(r"\blane\d+=1\b", res) and "--lane" not in res and "--at-once" not in res, res
