"""Lanes: the host cut into disjoint sets of whole physical cores, each able to run one
server and its sysbench at once (`placement.lanes: auto | N`).

A lane of size s: s physical cores for mysqld, all on one NUMA node (its memory bound
there when the node's memory may be used), and whole physical cores for sysbench,
enough threads for client_size(s) CPUs, preferring the server's node. No physical core
is in two lanes; a lane's server gets an L3 cache of its own while the host has an L3
domain per lane: `auto` cuts no more lanes than L3 domains on a host with two or more,
and `lanes: N` beyond that says which lanes share one (`shares_l3`). Offline and
disallowed CPUs are not in the topology, so never in a lane.

A cell runs in a span: `width` consecutive lanes (1, 2, ...; spans aligned to the
width), the smallest width whose merged cores place it by harness.measure.coreplan.place;
a cell that no span of lanes holds takes the whole host (every lane at once). A block
piece (a block's cells of one width) runs wholly on one span.

`lanes: N` asks N lanes: the largest size of which N fit. When N lanes of the smallest
size do not fit (a 2-CPU host asked for 2), lanes repeat the CPUs of the ones that fit:
`oversubscribed`, which the plan and every manifest say.

Duet pairing (`pairing: duet`; Bulej et al., "Duet Benchmarking", ICPE 2020): the two
sides of a compared pair run at once on twin spans, swapped between blocks (twins,
duet_sides). Twins are two spans of the same width and the same layout (threads per
server core, client threads, the server's and client's sockets and NUMA nodes counted
alike, L3 shared or not), on the same socket where the host allows; lanes are disjoint,
so twins share no physical core. A span without a twin runs its pieces as blocks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.measure.placement import cpulist
from harness.measure import coreplan
from harness.measure.topology import Topology


@dataclass(frozen=True)
class Lane:
    id: int
    server_cores: tuple[tuple[int, ...], ...]   # physical cores (their usable threads) for mysqld
    client_cores: tuple[tuple[int, ...], ...]   # physical cores for sysbench
    node: int                                   # the server cores' NUMA node
    mems: tuple[int, ...]                       # memory nodes to bind the server to (its node)
    l3: tuple[int, ...] = ()                    # the server cores' L3 domains
    shares_l3: bool = False                     # another lane's server is on the same L3
    oversubscribed: bool = False                # its CPUs are another lane's too

    @property
    def cpus(self) -> tuple[int, ...]:
        return tuple(sorted(x for c in self.server_cores + self.client_cores for x in c))

    @property
    def size(self) -> int:
        return len(self.server_cores)

    def to_dict(self) -> dict:
        return {"id": self.id, "cpus": cpulist(self.cpus),
                "server_cpus": cpulist([x for c in self.server_cores for x in c]),
                "client_cpus": cpulist([x for c in self.client_cores for x in c]),
                "node": self.node, "mems": list(self.mems), "l3": list(self.l3),
                "shares_l3": self.shares_l3, "oversubscribed": self.oversubscribed}


@dataclass(frozen=True)
class Lanes:
    topology: Topology
    size: int
    lanes: tuple[Lane, ...]
    client_min: int = 1
    client_ratio: float = 0.5
    # width() per (cores, smt): the lanes are fixed, and a plan asks the same few counts
    # hundreds of times (each answer places the cell on every span: most of a plan's time)
    _widths: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def count(self) -> int:
        return len(self.lanes)

    @property
    def oversubscribed(self) -> bool:
        return any(lane.oversubscribed for lane in self.lanes)

    def span_topology(self, lanes) -> Topology:
        cpus = sorted({x for lane in lanes for x in lane.cpus})
        keep = set(cpus)
        return Topology(cpus=tuple(c for c in self.topology.cpus if c.cpu in keep),
                        source=self.topology.source, mems=self.topology.mems)

    def spans(self, width: int) -> list[tuple[Lane, ...]]:
        """The aligned spans of `width` lanes (the last ones left over when it does not divide)."""
        return [self.lanes[i:i + width] for i in range(0, self.count - width + 1, width)]

    def width(self, cores: int, smt: bool = False) -> int:
        """Lanes a cell on `cores` CPUs takes: the smallest width one of whose spans places it;
        every lane (the whole host) when none does."""
        key = (cores, smt)
        if key not in self._widths:
            self._widths[key] = next((w for w in range(1, self.count + 1) for span in self.spans(w)
                                      if _fits(self.span_topology(span), cores, smt, self.client_min,
                                               self.client_ratio)), self.count)
        return self._widths[key]

    def on_whole_host(self, cores: int, smt: bool = False) -> bool:
        """No span of lanes places a cell on `cores` CPUs, so it takes the whole host (`place`):
        e.g. its server spans NUMA nodes while each lane's server keeps to one."""
        return not any(_fits(self.span_topology(span), cores, smt, self.client_min, self.client_ratio)
                       for span in self.spans(self.width(cores, smt)))

    def place(self, cores: int, span: int = 0, smt: bool = False) -> coreplan.Cell:
        """The CPUs of a cell on `cores` CPUs in span number `span` of its width (the core
        plan's rules on the span's cores); on the whole host when no span holds it."""
        w = self.width(cores, smt)
        spans = self.spans(w)
        kw = dict(smt=smt, client_min=self.client_min, client_ratio=self.client_ratio)
        if spans:
            sub = self.span_topology(spans[span % len(spans)])
            if _fits(sub, cores, smt, self.client_min, self.client_ratio):
                return coreplan.place(sub, cores, **kw)
        return coreplan.place(self.topology, cores, **kw)

    def to_dict(self) -> dict:
        return {"size": self.size, "count": self.count, "oversubscribed": self.oversubscribed,
                "lanes": [lane.to_dict() for lane in self.lanes]}


def _fits(topo: Topology, cores: int, smt: bool, client_min: int, client_ratio: float) -> bool:
    try:
        coreplan.place(topo, cores, smt=smt, client_min=client_min, client_ratio=client_ratio)
        return True
    except coreplan.CoresError:
        return False


def _domains(topo: Topology, cores_list):
    """The free cores grouped by (node, L3): (node, l3) -> cores, usable-memory nodes first."""
    out: dict = {}
    for c in cores_list:
        cpu = topo.cpu(c[0])
        out.setdefault((cpu.node not in topo.mems, cpu.node, cpu.l3), []).append(c)
    return dict(sorted(out.items()))


def _servers(topo: Topology, size: int, share_l3: bool = True) -> list[tuple[tuple, int, bool]]:
    """Candidate server core sets of `size` cores in preference order: one per L3 domain
    first, then (share_l3) more inside L3 domains (sharing them), then across a node's L3
    domains."""
    free = list(topo.cores())
    out = []
    for shares in ((False, True) if share_l3 else (False,)):
        for key, cs in _domains(topo, free).items():
            while len(cs) >= size:
                take, cs = cs[:size], cs[size:]
                out.append((tuple(take), key[1], shares))
                free = [c for c in free if c not in take]
                if not shares:
                    break
    by_node: dict = {}
    for c in free if share_l3 else ():
        by_node.setdefault(topo.cpu(c[0]).node, []).append(c)
    for node, cs in sorted(by_node.items()):
        while len(cs) >= size:
            out.append((tuple(cs[:size]), node, True))
            cs = cs[size:]
    return out


def _clients(topo, servers, need: int):
    """Whole free cores for each server's sysbench (`need` threads each), its node first;
    None when they run out."""
    used = {c for s, _, _ in servers for c in s}
    free = [c for c in topo.cores() if c not in used]
    out = []
    for _, node, _ in servers:
        free.sort(key=lambda c: (topo.cpu(c[0]).node != node, topo.cpu(c[0]).cpu))
        got, n = [], 0
        while n < need and free:
            c = free.pop(0)
            got.append(c)
            n += len(c)
        if n < need:
            return None
        out.append(tuple(got))
    return out


def cut(topo: Topology, size: int, *, client_min: int = 1, client_ratio: float = 0.5,
        want: int | None = None, share_l3: bool = True) -> Lanes:
    """As many lanes of `size` server cores as fit (at most `want`); none when none fits.
    share_l3=False: no two lanes' servers on one L3 domain."""
    need = coreplan.client_size(size, client_min, client_ratio)
    cands = _servers(topo, size, share_l3)
    top = len(cands) if want is None else min(want, len(cands))
    for m in range(top, 0, -1):
        chosen = cands[:m]
        clients = _clients(topo, chosen, need)
        if clients is not None:
            return Lanes(topo, size, _lanes(topo, chosen, clients), client_min, client_ratio)
    return Lanes(topo, size, (), client_min, client_ratio)


def _lanes(topo, chosen, clients) -> tuple[Lane, ...]:
    l3_of = [tuple(sorted({topo.cpu(c[0]).l3 for c in s})) for s, _, _ in chosen]
    out = []
    for i, ((server, node, _), client) in enumerate(zip(chosen, clients)):
        shared = any(j != i and set(l3_of[i]) & set(l3_of[j]) and -1 not in l3_of[i]
                     for j in range(len(chosen)))
        mems = (node,) if node in topo.mems and len(set(topo.nodes) | set(topo.mems)) > 1 else ()
        out.append(Lane(i, server, client, node, mems, l3_of[i], shared))
    return tuple(out)


def oversubscribe(lanes: Lanes, n: int) -> Lanes:
    """n lanes from fewer: lane i repeats lane i mod count's CPUs, every lane marked; n of
    them or fewer: the first n, unmarked (they share no CPU)."""
    base = lanes.lanes
    if n <= len(base):
        return Lanes(lanes.topology, lanes.size, base[:n], lanes.client_min, lanes.client_ratio)
    out = tuple(Lane(i, base[i % len(base)].server_cores, base[i % len(base)].client_cores,
                     base[i % len(base)].node, base[i % len(base)].mems, base[i % len(base)].l3,
                     base[i % len(base)].shares_l3, True) for i in range(n))
    return Lanes(lanes.topology, lanes.size, out, lanes.client_min, lanes.client_ratio)


def l3_domains(topo: Topology) -> int:
    """How many L3 domains the usable CPUs sit on (0: the topology does not say)."""
    ids = {c.l3 for c in topo.cpus}
    return 0 if -1 in ids else len(ids)


def candidates(topo: Topology, counts, **kw) -> list[Lanes]:
    """One cut per server size among `counts` (the profile's planned core counts), each
    with at least one lane, smallest size first. Where the topology allows (two L3 domains
    or more), no two lanes' servers share an L3; on a host with one L3, or none recorded,
    lanes share it (and the plan says so)."""
    share = l3_domains(topo) < 2
    out = []
    for s in sorted({n for n in counts if isinstance(n, int) and n >= 1}):
        lanes = cut(topo, s, share_l3=share, **kw)
        if lanes.count:
            out.append(lanes)
    return out


def for_count(topo: Topology, n: int, counts, **kw) -> Lanes:
    """`lanes: N`: N lanes of the largest planned size of which N fit, else oversubscribed."""
    best = None
    for s in sorted({c for c in counts if isinstance(c, int) and c >= 1}, reverse=True):
        lanes = cut(topo, s, want=n, **kw)
        if lanes.count == n:
            return lanes
        if lanes.count and (best is None or lanes.count > best.count):
            best = lanes
    if best is None:
        best = cut(topo, 1, **kw)
        if not best.count:
            raise coreplan.CoresError("placement.lanes: not even one lane of 1 core and its client fits here")
    return oversubscribe(best, n)


def describe(lanes: Lanes) -> list[str]:
    """One line per lane, for the plan."""
    out = []
    for lane in lanes.lanes:
        l3 = ("" if -1 in lane.l3 or not lane.l3 else
              f", L3 {cpulist(lane.l3)}{' shared with another lane' if lane.shares_l3 else ' of its own'}")
        mem = f", memory on node {cpulist(lane.mems)}" if lane.mems else ""
        over = ", oversubscribed (its CPUs are another lane's too)" if lane.oversubscribed else ""
        d = lane.to_dict()
        out.append(f"  lane {lane.id}: mysqld's cores cpus {d['server_cpus']} (node {lane.node}{mem}{l3}), "
                   f"sysbench's cores cpus {d['client_cpus']}{over}")
    return out


def layout(lanes: Lanes, span) -> tuple:
    """What two spans must have alike to be twins: per lane, its server cores' thread counts,
    its client threads, how many sockets and nodes its server and client take, whether
    the client sits on the server's socket, whether its L3 is shared."""
    topo, out = lanes.topology, []
    for lane in span:
        server = [x for c in lane.server_cores for x in c]
        client = [x for c in lane.client_cores for x in c]
        sockets = {topo.cpu(x).package for x in server}
        out.append((tuple(len(c) for c in lane.server_cores), len(client), len(sockets),
                    len({topo.cpu(x).node for x in server}), len({topo.cpu(x).package for x in client}),
                    {topo.cpu(x).package for x in client} <= sockets, lane.shares_l3))
    return tuple(out)


def _sockets(lanes: Lanes, span) -> tuple:
    return tuple(sorted({lanes.topology.cpu(x).package for lane in span for x in lane.cpus}))


def twins(lanes: Lanes, width: int = 1) -> list[tuple[int, int]]:
    """Pairs of span indices (of lanes.spans(width)) that are twins: same layout, the same
    sockets first, then any. Oversubscribed lanes (one CPU set twice) are twins only on a
    host where every lane is (too few CPUs for the lanes asked: the pair then shares CPUs,
    which every manifest says); there a pair runs for its mechanics, not its accuracy."""
    spans = lanes.spans(width)
    every = all(lane.oversubscribed for lane in lanes.lanes)
    free = [i for i, sp in enumerate(spans) if every or not any(lane.oversubscribed for lane in sp)]
    out = []
    for same_socket in (True, False):
        left = []
        for i in free:
            match = next((j for j in left if layout(lanes, spans[j]) == layout(lanes, spans[i])
                          and (not same_socket or _sockets(lanes, spans[j]) == _sockets(lanes, spans[i]))), None)
            if match is None:
                left.append(i)
            else:
                left.remove(match)
                out.append((match, i))
        free = left
    return sorted(out)


def duet_sides(pair: tuple[int, int], block: int) -> tuple[int, int]:
    """The spans (side A's, side B's) of a twin pair in block `block` (1, 2, ...): swapped
    every other block, so each side runs as often on either twin."""
    return pair if block % 2 else pair[::-1]


def describe_twins(lanes: Lanes, widths=(1,)) -> list[str]:
    """The plan's lines for pairing: duet: which spans are twins, per width a cell takes."""
    out = []
    for w in sorted(set(widths)):
        spans, pairs = lanes.spans(w), twins(lanes, w)
        name = (lambda i: f"lane {spans[i][0].id}") if w == 1 else \
            (lambda i: f"lanes {spans[i][0].id}-{spans[i][-1].id}")
        paired = {i for p in pairs for i in p}
        alone = [name(i) for i in range(len(spans)) if i not in paired]
        where = ", ".join(f"{name(a)} + {name(b)} (socket{'s' if len(_sockets(lanes, spans[a])) > 1 else ''} "
                          f"{cpulist(_sockets(lanes, spans[a]))}"
                          f"{'' if _sockets(lanes, spans[a]) == _sockets(lanes, spans[b]) else ' / ' + cpulist(_sockets(lanes, spans[b]))})"
                          for a, b in pairs)
        out.append(f"  cells on {w} lane{'s' if w > 1 else ''}: twins {where or 'none (no two spans alike)'}"
                   + (f"; without a twin (run as blocks): {', '.join(alone)}" if alone else ""))
    return out


def block_lane(experiments, experiment: str, rep: int, count: int) -> int:
    """The lane block `rep` of `experiment` starts on: round robin over the blocks of each
    experiment, each experiment starting one lane further, so blocks of one experiment and
    of different experiments spread over the lanes. A block is never split: its cells
    all run on this lane (or on the span of it that a wider cell takes)."""
    return (list(experiments).index(experiment) + rep - 1) % max(1, count)


def job_span(lanes: Lanes, base: int, cores: int) -> tuple[int, tuple[Lane, ...]]:
    """(span number, its lanes) a cell on `cores` CPUs of a block on lane `base` holds:
    the span of its width that holds lane `base`; every lane when no span places it."""
    w = lanes.width(cores)
    spans = lanes.spans(w)
    if not spans:
        return 0, lanes.lanes
    i = min(base // w, len(spans) - 1)
    return i, spans[i]


def job_lane(lanes: Lanes, base: int, cores: int) -> dict:
    """What a cell's job holds and where it runs (run-cell's --lane; its manifest's `lane`):
    the lane its block is on (`id`), the lanes it holds (`lanes`), their CPUs and memory
    nodes, mysqld's and sysbench's CPUs there (the core plan's rules on the span), and
    whether lanes share CPUs (`oversubscribed`)."""
    i, span = job_span(lanes, base, cores)
    cell = lanes.place(cores, i)
    return {"id": base, "lanes": [lane.id for lane in span], "count": lanes.count,
            "cpus": cpulist(sorted({x for lane in span for x in lane.cpus})),
            "mems": sorted({m for lane in span for m in lane.mems}),
            "server_cpus": cpulist(cell.server), "client_cpus": cpulist(cell.client),
            "cell_mems": list(cell.mems), "oversubscribed": lanes.oversubscribed}
