"""Hold a process to a set of CPUs and memory nodes: a cgroup cpuset (v1 or
v2), else taskset (CPUs only).

The cgroup is created per run, named after the run, entered by the child
before it execs (so the server never runs outside it), and removed after.
Its cpuset.mems is the run's memory nodes (`mems`: the plan's, see
harness.measure.coreplan; None = every node this process may use).
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

PREFIX = "mysqlbench-"


class PlacementError(Exception):
    pass


def cpulist(cpus) -> str:
    """[0,1,2,5] -> '0-2,5' (the kernel's list format)."""
    cpus = sorted(set(cpus))
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(f"{start}-{c}" if c != start else f"{c}")
            start = None
    return ",".join(out)


def parse_cpulist(text: str) -> list[int]:
    out = []
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def _mounts() -> list[tuple[str, str, str]]:
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        dev, mnt, fstype, opts, *_ = line.split()
        out.append((mnt, fstype, opts))
    return out


def v1_mount(ctrl: str) -> Path | None:
    """The cgroup-v1 mount holding controller `ctrl` (cpuset, cpu, memory, ...), or None."""
    for mnt, fstype, opts in _mounts():
        if fstype == "cgroup" and ctrl in opts.split(","):
            return Path(mnt)
    return None


def _proc_cgroups(pid: int | str) -> list[tuple[str, str]]:
    """(controllers, path) for each line of /proc/<pid>/cgroup: "cpu,cpuacct" for a v1
    hierarchy, "" for the v2 one ("0::"); [] when the process is gone."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    return [tuple(ln.split(":", 2)[1:]) for ln in lines]


def _v1_line(pid: int | str, ctrl: str) -> tuple[str, str] | None:
    return next(((c, path) for c, path in _proc_cgroups(pid) if ctrl in c.split(",")), None)


def cgroup_path(pid: int | str, ctrl: str) -> str | None:
    """The cgroup-v1 path of process `pid` ("self": this one) in controller `ctrl`'s
    hierarchy ("/docker/<id>"), or None when no v1 hierarchy holds `ctrl` for it."""
    line = _v1_line(pid, ctrl)
    return line[1] if line else None


def memory_cgroup(pid: int | str) -> str | None:
    """Where process `pid` is charged for memory: its cgroup-v1 memory path, else its
    cgroup-v2 path (the "0::" line), else None."""
    lines = _proc_cgroups(pid)
    return (next((path for c, path in lines if "memory" in c.split(",")), None)
            or next((path for c, path in lines if c == ""), None))


def memcg_of(pid: int) -> Path | None:
    """The cgroup-v1 memory cgroup directory of process `pid`, if another process may join
    it here and be moved in nothing else: a v1 hierarchy holding the memory controller
    alone (its line in /proc/<pid>/cgroup names no other), writable (root); else None. On
    cgroup v2 memory shares one hierarchy with cpuset, so no process can join a server's
    memory cgroup without its CPUs: None."""
    root, line = v1_mount("memory"), _v1_line(pid, "memory")
    if root is None or line is None or line[0] != "memory":
        return None
    d = root / line[1].lstrip("/")
    return d if os.access(d / "cgroup.procs", os.W_OK) else None


def _v1_root() -> Path | None:
    return v1_mount("cpuset")


def _v2_root() -> Path | None:
    for mnt, fstype, _ in _mounts():
        if fstype != "cgroup2":
            continue
        try:
            if "cpuset" in (Path(mnt) / "cgroup.controllers").read_text().split():
                return Path(mnt)
        except OSError:
            continue
    return None


def _writable(p: Path) -> bool:
    return p.is_dir() and os.access(p, os.W_OK)


def detect(preference: str = "auto") -> str:
    """The mechanism to use: the preferred one if usable, else the first that is."""
    usable = []
    v1, v2 = _v1_root(), _v2_root()
    if v1 is not None and _writable(v1) and (v1 / "cpuset.cpus").exists():
        usable.append("cgroup-v1")
    if v2 is not None and _writable(v2) and os.access(v2 / "cgroup.subtree_control", os.W_OK):
        usable.append("cgroup-v2")
    usable.append("taskset")
    if preference == "auto":
        return usable[0]
    if preference not in usable:
        raise PlacementError(f"placement.mechanism: {preference} is not usable on this host "
                             f"(usable: {', '.join(usable)}); use auto")
    return preference


def allowed_mems() -> list[int]:
    """The memory nodes this process may use (Mems_allowed_list): what a run gets when
    its memory is not bound, and the set a binding must stay within."""
    try:
        found = status_list("self", "Mems_allowed_list")
    except (OSError, ValueError):
        found = None
    return [0] if found is None else found


def run_mems(asked, allowed: list[int] | None = None, key: str = "placement.mems") -> list[int]:
    """The memory nodes a run is bound to: `asked` (None or empty: every allowed node),
    checked to be among `allowed` (default: this process's) before anything starts."""
    allowed = sorted(set(allowed_mems() if allowed is None else allowed))
    mems = sorted(set(asked)) if asked else allowed
    outside = [m for m in mems if m not in allowed]
    if outside:
        raise PlacementError(f"{key}: memory node{'s' if len(outside) > 1 else ''} {cpulist(outside)} "
                             f"{'are' if len(outside) > 1 else 'is'} not among those this host lets the pipeline use "
                             f"({cpulist(allowed)}); use plan (the server's own nodes), all, or nodes within "
                             f"{cpulist(allowed)}")
    return mems


class Placement:
    """A cpuset for one run. Use as a context manager; pass `preexec` to Popen.
    `mems`: the memory nodes (None: every node this process may use); taskset holds
    only CPUs, so it refuses a binding to fewer nodes than that."""

    def __init__(self, run_id: str, cpus, mechanism: str = "auto", mems=None):
        self.cpus = sorted(set(cpus))
        self.mechanism = detect(mechanism)
        self.mems = run_mems(mems)
        if self.mechanism == "taskset" and self.mems != run_mems(None):
            raise PlacementError(f"placement.mems: taskset cannot bind memory to node"
                                 f"{'s' if len(self.mems) > 1 else ''} {cpulist(self.mems)}; use "
                                 f"placement.mechanism: auto where a cgroup cpuset is writable "
                                 f"(as root), or placement.mems: all")
        self.name = PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)
        self.path: Path | None = None

    def __enter__(self):
        if self.mechanism == "cgroup-v1":
            root = _v1_root()
            self.path = root / self.name
            self.path.mkdir(exist_ok=True)
            # cpus first, then mems: a v1 cpuset accepts no task until both are set
            (self.path / "cpuset.cpus").write_text(cpulist(self.cpus))
            (self.path / "cpuset.mems").write_text(cpulist(self.mems))
        elif self.mechanism == "cgroup-v2":
            root = _v2_root()
            ctl = root / "cgroup.subtree_control"
            if "cpuset" not in ctl.read_text().split():
                ctl.write_text("+cpuset")
            self.path = root / self.name
            self.path.mkdir(exist_ok=True)
            (self.path / "cpuset.cpus").write_text(cpulist(self.cpus))
            (self.path / "cpuset.mems").write_text(cpulist(self.mems))
        return self

    def preexec(self) -> None:
        """Runs in the child between fork and exec."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))
        else:
            os.sched_setaffinity(0, self.cpus)

    def __exit__(self, *exc):
        self.remove()
        return False

    def remove(self) -> None:
        if self.path is None or not self.path.exists():
            return
        if not rmdir_when_empty(self.path):  # the killed server may take a moment to leave
            raise PlacementError(f"cannot remove cgroup {self.path}: tasks still in it")


def rmdir_when_empty(path: Path, tries: int = 100, wait: float = 0.1) -> bool:
    """rmdir a cgroup a killed process may take a moment to leave: up to `tries` times,
    `wait` s apart. True once it is gone (or was already), False if it never emptied."""
    for _ in range(tries):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(wait)
    return False


def status_list(pid, key: str) -> list[int] | None:
    """A CPU or node list of /proc/<pid>/status (`key`: Cpus_allowed_list, Mems_allowed_list;
    pid "self" for this process); None when the file has no such line."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return parse_cpulist(line.split(":", 1)[1])
    return None


def observed_cpus(pid: int) -> list[int]:
    """The CPUs the kernel lets `pid` run on (Cpus_allowed_list)."""
    return status_list(pid, "Cpus_allowed_list") or []


def observed_mems(pid: int) -> list[int]:
    """The memory nodes the kernel lets `pid` allocate on (Mems_allowed_list: its
    cpuset's cpuset.mems.effective, a container's or our cgroup's)."""
    return status_list(pid, "Mems_allowed_list") or []


def stale_cgroups() -> list[Path]:
    out = []
    for root in (_v1_root(), _v2_root()):
        if root is not None and root.is_dir():
            out.extend(p for p in root.iterdir() if p.is_dir() and p.name.startswith(PREFIX))
    return out


def _owner_alive(cg: Path) -> bool:
    """A cgroup is named after its run id, which ends in the harness's pid: while that
    process lives the cgroup is another run's, being filled right now (created, tasks
    not yet in it), never stale. Without a pid in the name, a young cgroup is spared."""
    m = re.search(r"-(\d+)$", cg.name)
    if m:
        return Path(f"/proc/{m.group(1)}").exists()
    try:
        return time.time() - cg.stat().st_mtime < 120
    except OSError:
        return False


def remove_stale_cgroups() -> None:
    """rmdir every leftover cgroup of ours whose run is gone; one still in use (not
    empty) or whose run still lives (a concurrent pipeline's) is left alone."""
    for cg in stale_cgroups():
        if _owner_alive(cg):
            continue
        try:
            cg.rmdir()
        except OSError:
            pass


def remove_run(run_id: str) -> None:
    """rmdir the cgroup(s) of one run whose starter was killed while the caller that
    named the run lives on (its pid in the name keeps remove_stale_cgroups away)."""
    name = PREFIX + re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)
    for cg in stale_cgroups():
        if cg.name == name and not rmdir_when_empty(cg):
            raise PlacementError(f"cannot remove cgroup {cg}: tasks still in it")


def split(allowed: list[int], cores: int, client_cpus: int) -> tuple[list[int], list[int]]:
    """Server gets the first `cores` CPUs, the client the last `client_cpus`: disjoint."""
    allowed = sorted(allowed)
    if cores + client_cpus > len(allowed):
        raise PlacementError(f"{cores} server + {client_cpus} client CPUs exceed the {len(allowed)} allowed")
    return allowed[:cores], allowed[-client_cpus:]
