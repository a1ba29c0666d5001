"""Core counts planned from the host: which mysqld core counts a sweep can
measure here, and exactly which CPUs mysqld and sysbench get for each.

Why: the studies ran mysqld on 4, 8, 16, 24 and 32 cores of a 32-core /
64-thread host (A3 also on all 64 hardware threads). Writing those counts
into a profile breaks on a laptop and wastes a big host; `cores: auto` asks
this module instead. The plan follows the host's topology (sockets, SMT
siblings, NUMA nodes), never just a CPU count, because two CPUs that are
hyper-threads of one core are not two cores, and a sweep that crosses a
socket boundary halfway measures the interconnect, not the engine.

Rules (each one a docstring below states in full):
- mysqld: one hardware thread per physical core, on one NUMA node while the
  count fits one, else on one socket; a count larger than any one socket's
  cores spans the fewest sockets (on a 2 x 16-core host the study's 24 can
  only run that way) unless `cross_socket=False`.
  With `smt=True`, counts above the studies' largest core count (32) are SMT
  points: n hardware threads on n/2 cores, both threads of each (the study's
  "64 (HT)" is 32 cores with both threads).
- sysbench: max(client_min, ceil(n * client_ratio)) CPUs on physical cores
  mysqld does not use: the two never share a core (SMT siblings stay on one
  side), so a count whose client cannot get that many does not fit.
- Each cell records mysqld's NUMA nodes and `mems`, the memory nodes to bind
  it to: its one node while its cores fit one, else those of its nodes this
  process may use; () on a one-node host (nothing to bind). A cell's server
  gets them (a container's --cpuset-mems, the host cgroup's cpuset.mems) under
  `placement.mems: plan`, the default (mems_for).
- The topology is harness.measure.topology's: hwloc (`lstopo`) on this host, a
  recorded `lstopo --of xml` file or JSON snapshot for another.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from harness.measure.placement import cpulist
from harness.measure.topology import Topology, TopologyError

STUDY_CORES = (4, 8, 16, 24, 32)   # docs/studies.md: A1 32, 24, 16, 8, 4; A3 64 (HT), 32, 24, 16
SMALL_CORES = (1, 2)               # powers of two below 4, for small hosts
PLANNED = SMALL_CORES + STUDY_CORES  # every count a plan without SMT may hold (cores: study checks a study's against it)
SMT_POINT = 64                     # A3's "64 (with Hyper-Threading)": 32 cores x 2 threads
MIN_POINTS = 4                     # add SMALL_CORES until the sweep has this many points


CoresError = TopologyError   # one error for a topology that cannot be read and a plan that cannot be made


# ---------------------------------------------------------------- the plan

@dataclass(frozen=True)
class Cell:
    """mysqld's and sysbench's CPUs for one core count."""
    cores: int                     # mysqld's hardware threads (= physical cores unless smt)
    server: tuple[int, ...]
    client: tuple[int, ...]
    threads_per_core: int          # 1, or 2 (or more) at an SMT point
    sockets: tuple[int, ...]       # packages mysqld runs on
    nodes: tuple[int, ...]         # NUMA nodes mysqld runs on
    client_on_siblings: int        # sysbench CPUs that are SMT siblings of mysqld's cores: 0 by the rule
    mems: tuple[int, ...] = ()     # memory nodes to bind mysqld to (--cpuset-mems); () = no binding

    def to_dict(self) -> dict:
        return {"cores": self.cores, "server_cpus": cpulist(self.server), "client_cpus": cpulist(self.client),
                "threads_per_core": self.threads_per_core, "sockets": list(self.sockets),
                "nodes": list(self.nodes), "mems": list(self.mems),
                "client_on_siblings": self.client_on_siblings}


@dataclass(frozen=True)
class Plan:
    """The core counts this host can measure, each with exact CPU lists.

    `cells`: count -> Cell, ascending. `missing`: count -> why it does not
    fit (the studies' counts, or the wanted ones, that were left out).
    """
    topology: Topology
    cells: dict[int, Cell]
    missing: dict[int, str]
    smt: bool = False
    client_min: int = 1
    client_ratio: float = 0.5
    cross_socket: bool = True
    wanted: tuple[int, ...] | None = None

    @property
    def counts(self) -> list[int]:
        return sorted(self.cells)

    def to_dict(self) -> dict:
        """For a manifest or the paper: the host, the rule's parameters, every cell."""
        return {"topology": self.topology.summary(), "cpus": cpulist(self.topology.ids), "smt": self.smt,
                "client_min": self.client_min, "client_ratio": self.client_ratio,
                "cross_socket": self.cross_socket, "counts": self.counts,
                "cells": [self.cells[n].to_dict() for n in self.counts],
                "missing": {str(n): why for n, why in sorted(self.missing.items())}}

    def describe(self) -> str:
        """One paragraph, for printing before a sweep and for the paper."""
        t = self.topology
        one_socket = len(t.packages) == 1
        head = f"On this {len(t.cpus)}-CPU machine ({t.summary().split(': ', 1)[1]})"
        cells = []
        for n in self.counts:
            c = self.cells[n]
            where = "" if one_socket else (f", socket {c.sockets[0]}" if len(c.sockets) == 1
                                           else f", across sockets {_and(c.sockets)}")
            ht = f", {c.threads_per_core} threads per core" if c.threads_per_core > 1 else ""
            numa = f", NUMA node{'s' if len(c.nodes) > 1 else ''} {_and(c.nodes)}" if len(t.nodes) > 1 else ""
            cells.append(f"mysqld on {_cpus(n)} ({_cpunames(c.server)}{where}{numa}{ht}), "
                         f"sysbench on {_cpus(len(c.client))} ({_cpunames(c.client)})")
        if not cells:
            text = f"{head}: no core count fits (mysqld and sysbench need CPUs on different physical cores)."
        elif len(cells) == 1:
            text = f"{head}: {cells[0]}."
        else:
            text = (f"{head}, the sweep is {_and(self.counts)} cores: "
                    + "; ".join(f"{n}: {c}" for n, c in zip(self.counts, cells)) + ".")
        notes = []
        study = [n for n in STUDY_CORES if n not in self.cells]
        if self.wanted is None and study:
            first = study[0]
            what = (f"the studies' {STUDY_CORES[0]}–{STUDY_CORES[-1]}-core sweep does not fit"
                    if len(study) == len(STUDY_CORES) else
                    f"the studies' {_and(study)}-core point{'s do' if len(study) > 1 else ' does'} not fit")
            notes.append(f"{what} ({first} cores {self.missing.get(first, 'do not fit')})")
        for n, why in sorted(self.missing.items()):
            if n not in STUDY_CORES or self.wanted is not None:
                notes.append(f"{n}{' (SMT)' if self._smt_point(n) else ''} does not fit ({why})")
        if notes:
            notes[0] = notes[0][0].upper() + notes[0][1:]
            text += " " + "; ".join(notes) + "."
        return f"{text} {self.rule()}"

    def rule(self) -> str:
        mins = f"max({self.client_min}, ceil(n x {self.client_ratio:g}))"
        smt = (f"; counts above {max(STUDY_CORES)} use both threads of n/2 cores (SMT)" if self.smt
               else "")
        cross = ", or the fewest sockets when one is too small" if self.cross_socket else ""
        return (f"Rule: mysqld on n physical cores, one thread each, on one NUMA node while they fit, "
                f"else on one socket{cross}{smt}; sysbench on {mins} CPUs on physical cores mysqld "
                f"does not use, preferring sockets mysqld does not use.")

    def _smt_point(self, n: int) -> bool:
        return _is_smt_point(n, self.smt)


def _and(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _cpus(n: int) -> str:
    return f"{n} CPU{'s' if n != 1 else ''}"


def _cpunames(cpus) -> str:
    return f"cpu{'s' if len(cpus) != 1 else ''} {cpulist(cpus)}"


def _is_smt_point(n: int, smt: bool) -> bool:
    return smt and n > max(STUDY_CORES)


def client_size(cores: int, client_min: int = 1, client_ratio: float = 0.5) -> int:
    """sysbench's CPUs for mysqld on `cores` CPUs: max(client_min, ceil(cores x client_ratio)).

    Why half: sysbench's Lua driver spends roughly one CPU per two that
    mysqld spends on point selects (the paper profile's 16 for 32); a
    client that saturates first would measure itself, not the engine.
    """
    return max(client_min, math.ceil(cores * client_ratio))


def place(topology: Topology, cores: int, *, smt: bool = False, client_min: int = 1,
          client_ratio: float = 0.5, cross_socket: bool = True) -> Cell:
    """The CPUs for mysqld on `cores` CPUs and its sysbench; CoresError (with the
    reason) when it does not fit.

    mysqld: `cores` physical cores, one thread each (the lowest-numbered
    usable thread), the first that fits of: one NUMA node of one socket; one
    socket (its largest nodes first); when no socket has enough cores (if
    cross_socket) one NUMA node's cores on the fewest sockets, else the
    fewest sockets, largest first. Nodes whose memory this process may not
    use (outside topology.mems) come last at each step. At an SMT point (smt and cores > 32):
    cores/2 cores with both threads, placed the same way. sysbench:
    client_size() CPUs on the physical cores mysqld does not use, first on
    sockets mysqld does not use; one thread per core before the second.
    `mems`: mysqld's NUMA nodes this process may bind memory to, on a host
    with more than one node.
    """
    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise CoresError(f"cores: {cores!r} is not a positive integer")
    t = topology
    all_cores = t.cores()
    smt_point = _is_smt_point(cores, smt)
    if smt_point:
        usable = [c for c in all_cores if len(c) >= 2]
        if not usable:
            raise CoresError("this host has no SMT siblings among its allowed CPUs: SMT is off or absent")
    else:
        usable = all_cores
    server = _pick_server(t, usable, cores, smt_point, cross_socket)
    n_client = client_size(cores, client_min, client_ratio)
    sset = set(server)
    free = [c for c in all_cores if not sset & set(c)]
    if sum(map(len, free)) < n_client:
        raise CoresError(f"need {cores} CPUs for mysqld and {n_client} for sysbench on other physical cores, "
                         f"this host has {len(t.cpus)}, {sum(map(len, free))} of them on cores mysqld "
                         f"leaves free")
    client = _pick_client(t, server, free, n_client)
    server_cores = [c for c in all_cores if sset & set(c)]
    on_sib = sum(1 for x in client if any(x in c for c in server_cores))
    nodes = tuple(sorted({t.cpu(x).node for x in server}))
    mems = tuple(n for n in nodes if n in t.mems) if len(set(t.nodes) | set(t.mems)) > 1 else ()
    return Cell(cores=cores, server=tuple(sorted(server)), client=tuple(sorted(client)),
                threads_per_core=2 if smt_point else 1,
                sockets=tuple(sorted({t.cpu(x).package for x in server})),
                nodes=nodes, client_on_siblings=on_sib, mems=mems)


def _group(cores_list, key) -> dict:
    out: dict = {}
    for c in cores_list:
        out.setdefault(key(c), []).append(c)
    return out


def _pick_server(t: Topology, usable: list[tuple[int, ...]], n: int, smt_point: bool,
                 cross_socket: bool) -> list[int]:
    per_core = 2 if smt_point else 1
    n_cores = math.ceil(n / per_core)
    pkg, node = (lambda c: t.cpu(c[0]).package), (lambda c: t.cpu(c[0]).node)
    by_pkg = _group(usable, pkg)

    def take(cores_list):
        out = []
        for c in cores_list[:n_cores]:
            out.extend(c[:per_core])
        return out[:n]

    def fewest_sockets(cores_list):   # largest socket first, then by node: the fewest of both
        by = _group(cores_list, pkg)
        order = sorted(by, key=lambda p: (-len(by[p]), far(min(map(node, by[p]))), min(map(node, by[p])), p))
        return [c for p in order for c in by[p]]

    far = lambda k: k not in t.mems             # a node whose memory this process may not use: last
    pairs = _group(usable, lambda c: (pkg(c), node(c)))
    for key in sorted(pairs, key=lambda pn: (far(pn[1]), pn)):   # one node of one socket
        if len(pairs[key]) >= n_cores:
            return take(pairs[key])
    for p in sorted(by_pkg):                       # one socket, its largest nodes first
        if len(by_pkg[p]) >= n_cores:
            by_node = _group(by_pkg[p], node)
            order = sorted(by_node, key=lambda k: (-len(by_node[k]), far(k), k))
            return take([c for k in order for c in by_node[k]])
    biggest = max(len(v) for v in by_pkg.values())
    unit = "cores with SMT siblings" if smt_point else "cores"
    if not cross_socket or len(usable) < n_cores:
        where = f"{biggest} per socket" if len(by_pkg) > 1 and not cross_socket else f"{len(usable)}"
        what = f"{n_cores} {unit}" + (f" ({n} threads)" if smt_point else "")
        raise CoresError(f"need {what}, this host has {where}")
    by_node = _group(usable, node)
    for k in sorted(by_node, key=lambda k: (far(k), k)):               # one node across sockets
        if len(by_node[k]) >= n_cores:
            return take(fewest_sockets(by_node[k]))
    return take(fewest_sockets(usable))


def _pick_client(t: Topology, server: list[int], free: list[tuple[int, ...]], n: int) -> list[int]:
    server_pkgs = {t.cpu(x).package for x in server}
    rank = {}
    for core in free:
        for i, x in enumerate(core):
            rank[x] = (t.cpu(x).package in server_pkgs, i, t.cpu(x).package, t.cpu(x).node, x)
    return sorted(rank, key=rank.get)[:n]


def plan(topology: Topology, *, wanted=None, client_min: int = 1, smt: bool = False,
         client_ratio: float = 0.5, cross_socket: bool = True) -> Plan:
    """Plan a core sweep on `topology`.

    wanted=None: the studies' counts 4, 8, 16, 24, 32 (and 64 = 32 cores x 2
    threads when smt) that fit; when fewer than MIN_POINTS (4) of the
    studies' counts fit, the powers of two below them (2, 1) are added, so a
    small host still gets a short scaling curve (a 16-vCPU VM: 1, 2, 4, 8; a
    2-CPU VM: 1). wanted=[...]: exactly those counts, each checked. Every
    count left out is in `missing` with the reason. See place() for the CPU
    rules and client_size() for sysbench's share.
    """
    kw = dict(smt=smt, client_min=client_min, client_ratio=client_ratio, cross_socket=cross_socket)
    if wanted is None:
        candidates = list(STUDY_CORES) + ([SMT_POINT] if smt else [])
    else:
        candidates = list(dict.fromkeys(wanted))
    cells, missing = {}, {}
    for n in candidates:
        try:
            cells[n] = place(topology, n, **kw)
        except CoresError as e:
            missing[n] = str(e)
    if wanted is None:
        study_fit = [n for n in STUDY_CORES if n in cells]
        below = min(study_fit, default=STUDY_CORES[0])
        for n in sorted(SMALL_CORES, reverse=True):
            if len(study_fit) + sum(1 for m in cells if m in SMALL_CORES) >= MIN_POINTS:
                break
            if n < below:
                try:
                    cells[n] = place(topology, n, **kw)
                except CoresError:
                    pass
    return Plan(topology=topology, cells=dict(sorted(cells.items())), missing=dict(sorted(missing.items())),
                smt=smt, client_min=client_min, client_ratio=client_ratio, cross_socket=cross_socket,
                wanted=None if wanted is None else tuple(candidates))


def largest_fit(topology: Topology, **kw) -> int:
    """The largest core count that fits (0 when none does: a 1-CPU host)."""
    for n in range(len(topology.cpus) - 1, 0, -1):
        try:
            place(topology, n, **kw)
            return n
        except CoresError:
            continue
    return 0


def resolve_cores(value, topology: Topology, *, key: str = "cores", client_min: int = 1,
                  smt: bool = False, client_ratio: float = 0.5, cross_socket: bool = True) -> list[int]:
    """`auto` -> the plan's counts; a list of ints -> the same list, each
    checked to fit. Raises CoresError, one line naming `key` and the largest
    count that fits."""
    kw = dict(client_min=client_min, smt=smt, client_ratio=client_ratio, cross_socket=cross_socket)
    if value == "auto":
        p = plan(topology, **kw)
        if not p.cells:
            raise CoresError(f"{key}: auto: no core count fits on this {len(topology.cpus)}-CPU host "
                             f"(mysqld and sysbench need CPUs on different physical cores, at least {1 + client_min}); "
                             f"run on a bigger host or widen the affinity")
        return p.counts
    if (not isinstance(value, list) or not value
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)):
        raise CoresError(f"{key}: {value!r} is neither auto nor a list of positive integers; "
                         f"write cores: auto or e.g. cores: [4, 8]")
    p = plan(topology, wanted=value, **kw)
    if p.missing:
        bad = list(p.missing)
        best = largest_fit(topology, **kw)
        # a command-line flag (`--cores`) takes one count and no `auto`: advise in its own words
        use = f"use {key} {best} or fewer" if key.startswith("--") else f"use cores: auto or counts up to {best}"
        fix = use if best else "run on a bigger host"
        raise CoresError(f"{key}: {', '.join(map(str, bad))} do{'es' if len(bad) == 1 else ''} not fit on this "
                         f"{len(topology.cpus)}-CPU host ({bad[0]}: {p.missing[bad[0]]}); "
                         f"the largest that fits is {best}; {fix}")
    return list(dict.fromkeys(value))


def cell_for(cores: int, plan: Plan) -> Cell:
    """The Cell of a cell with `cores` cores: the planned one, or placed by the
    plan's rules when the count was not planned. Raises CoresError (a PlacementError)."""
    cell = plan.cells.get(cores)
    if cell is None:
        cell = place(plan.topology, cores, smt=plan.smt, client_min=plan.client_min,
                     client_ratio=plan.client_ratio, cross_socket=plan.cross_socket)
    return cell


def cpus_for(cores: int, plan: Plan) -> tuple[list[int], list[int]]:
    """(server_cpus, client_cpus) for a cell with `cores` cores (cell_for).
    Same shape as placement.split; raises CoresError (a PlacementError)."""
    cell = cell_for(cores, plan)
    return list(cell.server), list(cell.client)


def mems_for(setting, cell: Cell) -> list[int] | None:
    """The memory nodes mysqld is bound to under `placement.mems` (config/default.yaml):
    `plan` = the cell's `mems` (its NUMA node while its cores fit one); `all` = not
    bound; a list = those nodes. None = not bound (every node this process may use)."""
    if setting == "plan":
        return list(cell.mems) or None
    if setting == "all":
        return None
    return sorted(set(setting))
