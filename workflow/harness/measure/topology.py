"""The CPU topology a core plan is made on: which CPUs this process may use,
and for each its socket, physical core, hardware-thread siblings and NUMA node.

Why hwloc: hand-reading /sys misses what hwloc already knows and records in
one portable file (offline CPUs, a container's or an allocation's allowed
cpuset, NUMA nodes that are not one per socket, nodes with no memory we may
use), and an `lstopo --of xml` file recorded on any host can be replayed
here, so the planner is proved on hosts the development machines are not.

Where a Topology comes from:
- `Topology.live()`: this host, as `lstopo --of xml` reports it (Debian
  package hwloc), kept to this process's affinity; the kernel's /sys
  (`from_sys`) only when hwloc is not installed.
- `Topology.from_hwloc(FILE.xml)`: a recorded host; hwloc 1.x and 2.x XML.
- `Topology.from_sys(root)`: a /sys tree (the fallback reader).
- `read(path)`: a .xml file as hwloc XML, anything else as the JSON
  snapshot `record`/`load` write (format mysqlbench-topology/1).

Kept: the CPUs that are online and allowed (and in `allowed`, live: the
affinity). A CPU's `siblings` are every hardware thread of its physical core,
offline or disallowed ones included, so two CPUs on one core are never taken
for two cores. `mems`: the NUMA nodes whose memory this process may use
(hwloc's allowed nodeset), for a container's --cpuset-mems.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

from harness import atomic
from harness.measure.placement import PlacementError, cpulist, parse_cpulist, status_list

FORMAT = "mysqlbench-topology/1"
LSTOPO = ("lstopo-no-graphics", "lstopo")   # Debian's hwloc package has both; -no-graphics needs no X/cairo
PACKAGE_TYPES = ("Package", "Socket")       # hwloc 1.x before 1.11 said Socket


class TopologyError(PlacementError):
    """A topology that cannot be read or a plan that cannot be made; one line naming the file,
    command or key (harness.measure.coreplan.CoresError is this class)."""


@dataclass(frozen=True)
class Cpu:
    cpu: int                  # the kernel's CPU number (hwloc: the PU's os_index)
    package: int              # physical_package_id (socket)
    core: int                 # core_id (unique only within a package)
    siblings: tuple[int, ...]  # the hardware threads of this core, itself included
    node: int                 # NUMA node
    l3: int = -1              # the L3 cache domain (hwloc's L3 object, numbered in document order); -1 unknown


@dataclass(frozen=True)
class Topology:
    """The CPUs this process may use, with where each one sits.

    `cpus` holds only the usable CPUs; `siblings` may name CPUs outside them (a
    container's cpuset may hold one thread of a core). A physical core is
    identified by its package and sibling list, not by core_id, which repeats
    across packages and dies. `mems`: memory nodes this process may use; empty
    when given as such, it becomes the nodes the CPUs sit on.
    """
    cpus: tuple[Cpu, ...]
    source: str = ""
    mems: tuple[int, ...] = ()

    def __post_init__(self):
        if not self.mems:
            object.__setattr__(self, "mems", tuple(sorted({c.node for c in self.cpus})))

    # --- reading

    @classmethod
    def live(cls, allowed=None) -> "Topology":
        """This host's CPUs that this process may use (its affinity, or `allowed`):
        hwloc's view when lstopo is installed, else /sys."""
        allowed = set(os.sched_getaffinity(0) if allowed is None else allowed)
        text = lstopo_xml()
        if text is None:
            return cls.from_sys(allowed=allowed)
        return cls.from_hwloc_text(text, source="this host (lstopo)", allowed=allowed)

    @classmethod
    def from_hwloc(cls, path, allowed=None) -> "Topology":
        """A recorded `lstopo --of xml` file; `allowed` narrows its allowed CPUs further."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise TopologyError(f"{path}: cannot read it ({e.strerror}); give an `lstopo --of xml` file") from None
        return cls.from_hwloc_text(text, source=str(path), allowed=allowed)

    @classmethod
    def from_hwloc_text(cls, text: str, source: str = "hwloc XML", allowed=None) -> "Topology":
        cpus, mems = _parse_hwloc(text, source)
        if allowed is not None:
            allowed = set(allowed)
            cpus = [c for c in cpus if c.cpu in allowed]
        if not cpus:
            raise TopologyError(f"{source}: none of its online, allowed CPUs is in {cpulist(allowed or [])}")
        return cls(cpus=tuple(cpus), source=source, mems=mems)

    @classmethod
    def from_sys(cls, root: str | os.PathLike = "/sys", allowed=None) -> "Topology":
        """Read root/devices/system/{cpu,node} (the fallback without hwloc). `allowed`:
        the CPUs to keep; None means this process's affinity when reading the live
        /sys, else every online CPU of the tree. Files a VM or container does not
        expose fall back to: package 0, core_id = cpu number, no siblings, node 0."""
        root = Path(root)
        cpu_dir = root / "devices" / "system" / "cpu"
        if not cpu_dir.is_dir():
            raise TopologyError(f"{cpu_dir}: no such directory; give the root of a /sys tree")
        live = root.resolve() == Path("/sys")
        online_file = cpu_dir / "online"
        if online_file.is_file():
            online = parse_cpulist(online_file.read_text())
        else:
            online = sorted(int(m.group(1)) for p in cpu_dir.iterdir()
                            if (m := re.fullmatch(r"cpu(\d+)", p.name)))
        if allowed is None:
            allowed = os.sched_getaffinity(0) if live else online
        keep = sorted(set(allowed) & set(online))
        if not keep:
            raise TopologyError(f"{root}: none of the allowed CPUs {cpulist(allowed)} is online "
                                f"(online: {cpulist(online)})")
        nodes = _node_map(root / "devices" / "system" / "node")
        out = []
        for n in keep:
            topo = cpu_dir / f"cpu{n}" / "topology"
            package = _read_int(topo / "physical_package_id", 0)
            siblings = (_read_list(topo / "thread_siblings_list")
                        or _read_list(topo / "core_cpus_list") or [n])
            out.append(Cpu(cpu=n, package=max(package, 0), core=_read_int(topo / "core_id", n),
                           siblings=tuple(sorted(set(siblings) | {n})), node=nodes.get(n, 0)))
        mems = sorted(set(nodes.values()))
        if live and mems:
            allowed_mems = _mems_allowed()
            mems = [m for m in mems if allowed_mems is None or m in allowed_mems]
        return cls(cpus=tuple(out), source=str(root), mems=tuple(mems))

    # --- the JSON snapshot

    def to_dict(self) -> dict:
        return {"format": FORMAT, "source": self.source, "mems": list(self.mems),
                "cpus": [{**asdict(c), "siblings": list(c.siblings)} for c in self.cpus]}

    def record(self, path) -> None:
        """Write the snapshot as JSON, one CPU a line (atomically)."""
        d = self.to_dict()
        lines = [json.dumps(c, separators=(", ", ": ")) for c in d["cpus"]]
        text = ("{\n" f'  "format": {json.dumps(d["format"])},\n  "source": {json.dumps(d["source"])},\n'
                f'  "mems": {json.dumps(d["mems"])},\n'
                '  "cpus": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n")
        atomic.write_text(Path(path), text)

    @classmethod
    def load(cls, path) -> "Topology":
        path = Path(path)
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise TopologyError(f"{path}: not a readable topology snapshot ({e}); "
                                f"write one with Topology.live().record(path)") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise TopologyError(f"{path}: format is {d.get('format') if isinstance(d, dict) else None!r}, "
                                f"expected {FORMAT!r}; re-record it with Topology.record")
        try:
            cpus = tuple(Cpu(cpu=int(c["cpu"]), package=int(c["package"]), core=int(c["core"]),
                             siblings=tuple(sorted(int(s) for s in c["siblings"])), node=int(c["node"]),
                             l3=int(c.get("l3", -1)))
                         for c in d["cpus"])
            mems = tuple(sorted(int(m) for m in d.get("mems") or []))
        except (KeyError, TypeError, ValueError) as e:
            raise TopologyError(f"{path}: cpus: every entry needs integer cpu, package, core, node and a "
                                f"siblings list ({type(e).__name__}: {e})") from None
        if not cpus or len({c.cpu for c in cpus}) != len(cpus):
            raise TopologyError(f"{path}: cpus: empty or a CPU listed twice")
        return cls(cpus=tuple(sorted(cpus, key=lambda c: c.cpu)), source=d.get("source", str(path)), mems=mems)

    # --- questions

    @property
    def ids(self) -> list[int]:
        return [c.cpu for c in self.cpus]

    @functools.cached_property
    def _by_id(self) -> dict[int, Cpu]:
        return {c.cpu: c for c in self.cpus}

    def cores(self) -> list[tuple[int, ...]]:
        """The physical cores, each as its usable hardware threads (lowest first),
        ordered by package, NUMA node, then lowest CPU number."""
        return list(self._cores)

    @functools.cached_property
    def _cores(self) -> tuple[tuple[int, ...], ...]:
        by_key: dict = {}
        for c in self.cpus:
            by_key.setdefault((c.package, c.siblings), []).append(c)
        groups = [sorted(cs, key=lambda c: c.cpu) for cs in by_key.values()]
        groups.sort(key=lambda cs: (cs[0].package, cs[0].node, cs[0].cpu))
        return tuple(tuple(c.cpu for c in cs) for cs in groups)

    def cpu(self, n: int) -> Cpu:
        return self._by_id[n]

    @property
    def packages(self) -> list[int]:
        return sorted({c.package for c in self.cpus})

    @property
    def nodes(self) -> list[int]:
        """The NUMA nodes the usable CPUs sit on."""
        return sorted({c.node for c in self.cpus})

    @property
    def threads_per_core(self) -> int:
        return max(len(t) for t in self.cores())

    def summary(self) -> str:
        """'64 CPUs: 2 sockets x 16 cores x 2 threads, 2 NUMA nodes'."""
        cores = self.cores()
        per_pkg = sorted({sum(1 for t in cores if self.cpu(t[0]).package == p) for p in self.packages})
        shape = "/".join(str(k) for k in per_pkg)
        s = "s" if len(self.packages) > 1 else ""
        tpc = self.threads_per_core
        return (f"{len(self.cpus)} CPU{'s' if len(self.cpus) > 1 else ''}: {len(self.packages)} socket{s} x "
                f"{shape} core{'s' if per_pkg[-1] > 1 else ''} x {tpc} thread{'s' if tpc > 1 else ''}, "
                f"{len(self.nodes)} NUMA node{'s' if len(self.nodes) > 1 else ''}")


def read(path) -> Topology:
    """A recorded topology: hwloc XML (FILE.xml, or any file starting with '<'), else the JSON snapshot."""
    try:
        with open(path, "rb") as f:
            xml = str(path).endswith(".xml") or f.read(64).lstrip().startswith(b"<")
    except OSError:
        xml = str(path).endswith(".xml")
    return Topology.from_hwloc(path) if xml else Topology.load(path)


def lstopo_xml() -> str | None:
    """This host's `lstopo --of xml` (I/O devices left out), or None when hwloc is not installed."""
    exe = next((p for p in map(shutil.which, LSTOPO) if p), None)
    if exe is None:
        return None
    cmd = [exe, "--of", "xml", "--no-io", "-"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TopologyError(f"{' '.join(cmd)}: {e}; fix hwloc or uninstall it to read /sys") from None
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise TopologyError(f"{' '.join(cmd)} exited {res.returncode}: {last}")
    return res.stdout


# ---------------------------------------------------------------- hwloc XML

class _Bitmap:
    """An hwloc bitmap attribute: '0x0000f06f', '0xffffffff,0x00000003' (32-bit words,
    highest first; an empty word is a zero one: '0x00000001,,,,,,0x0'), '0xf...f,0x...'
    (every bit above the given words set too)."""

    def __init__(self, text: str):
        words = [w.strip() for w in text.strip().split(",")]
        self.above = None
        if words and words[0].lower() == "0xf...f":
            words = words[1:]
            self.above = 32 * len(words)
        value = 0
        for w in words:
            value = value << 32 | (int(w, 16) if w else 0)
        self.bits = frozenset(i for i in range(value.bit_length()) if value >> i & 1)

    def __contains__(self, i: int) -> bool:
        return i in self.bits or (self.above is not None and i >= self.above)


def _bitmap(el, *names) -> _Bitmap | None:
    """The first of `names` the element has, as a bitmap; None when it has none of them."""
    for name in names:
        text = el.get(name)
        if text is not None:
            return _Bitmap(text)
    return None


def _memory_nodes(el) -> list[int]:
    """The NUMA nodes attached to an object as memory children (2.x), through memory-side caches."""
    out = []
    for c in el.findall("object"):
        if c.get("type") == "NUMANode":
            out.append(int(c.get("os_index", 0)))
        elif c.get("type") == "MemCache":
            out += _memory_nodes(c)
    return out


def _parse_hwloc(text: str, source: str) -> tuple[list[Cpu], tuple[int, ...]]:
    """(usable CPUs, allowed memory nodes) of hwloc XML, 1.x or 2.x.

    A PU is usable when the root object's cpuset (2.x: online PUs that are
    allowed, or with --disallowed, all online ones), online_cpuset (1.x) and
    allowed_cpuset hold it. Its node: the nearest NUMA node above it (2.x:
    attached as a memory child of an ancestor; 1.x: an ancestor), else the
    lowest node of its own nodeset (a node that holds no memory we may use),
    else 0.
    """
    try:
        top = ET.fromstring(text)
    except ET.ParseError as e:
        raise TopologyError(f"{source}: not hwloc XML ({e}); record one with `lstopo --of xml FILE.xml`") from None
    root = top.find("object")
    if top.tag != "topology" or root is None:
        raise TopologyError(f"{source}: not hwloc XML (no <topology> with a root <object>); "
                            f"record one with `lstopo --of xml FILE.xml`")
    v2 = top.get("version", "1").split(".")[0] not in ("", "0", "1")   # 1.x wrote no version
    filters = [b for b in (_bitmap(root, "cpuset"), _bitmap(root, "online_cpuset"),
                           _bitmap(root, "allowed_cpuset")) if b is not None]
    node_ids = sorted({int(o.get("os_index", 0)) for o in top.iter("object") if o.get("type") == "NUMANode"})
    allowed_nodes = _bitmap(root, "allowed_nodeset", "nodeset")
    mems = tuple(n for n in node_ids if allowed_nodes is None or n in allowed_nodes)
    packages: dict[int, int] = {}   # id(element) -> package number
    cpus: dict[int, Cpu] = {}

    l3s: dict[int, int] = {}        # id(element) -> L3 domain number

    def walk(el, package, core_el, node, l3=-1):
        kind = el.get("type")
        if kind == "L3Cache" or (kind == "Cache" and el.get("depth") == "3"):
            l3 = l3s.setdefault(id(el), len(l3s))
        if kind in PACKAGE_TYPES:
            package = int(el.get("os_index", -1))
            if package < 0:
                package = packages.setdefault(id(el), len(packages))
        elif kind == "Core":
            core_el = el
        elif kind == "NUMANode":       # 1.x: cores sit below their node
            node = int(el.get("os_index", 0))
        here = _memory_nodes(el) if v2 else []
        if here:                       # 2.x: nodes are memory children of the object they are local to
            node = min(here)
        if kind == "PU":
            n = int(el.get("os_index", -1))
            if n < 0 or not all(n in f for f in filters):
                return
            if n in cpus:
                raise TopologyError(f"{source}: PU {n} appears twice")
            sib = {n}
            if core_el is not None:
                cs = _bitmap(core_el, "complete_cpuset", "cpuset")
                sib |= set(cs.bits) if cs is not None else set()
            own = _bitmap(el, "complete_nodeset", "nodeset")
            if node is None and own is not None and own.bits:
                node = min(own.bits)
            cpus[n] = Cpu(cpu=n, package=max(package, 0),
                          core=int(core_el.get("os_index", n)) if core_el is not None else n,
                          siblings=tuple(sorted(sib)), node=node if node is not None else 0, l3=l3)
            return
        for child in el.findall("object"):
            walk(child, package, core_el, node, l3)

    walk(root, 0, None, None)
    if not cpus:
        raise TopologyError(f"{source}: no online, allowed PU in it")
    return sorted(cpus.values(), key=lambda c: c.cpu), mems


# ---------------------------------------------------------------- /sys

def _read_int(path: Path, default: int) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return default


def _read_list(path: Path) -> list[int]:
    try:
        return parse_cpulist(path.read_text())
    except (OSError, ValueError):
        return []


def _node_map(node_dir: Path) -> dict[int, int]:
    out = {}
    if node_dir.is_dir():
        for p in node_dir.iterdir():
            m = re.fullmatch(r"node(\d+)", p.name)
            if m:
                for c in _read_list(p / "cpulist"):
                    out[c] = int(m.group(1))
    return out


def _mems_allowed() -> set[int] | None:
    """This process's Mems_allowed_list (/proc/self/status), None when unreadable."""
    try:
        found = status_list("self", "Mems_allowed_list")
    except (OSError, ValueError):
        return None
    return None if found is None else set(found)
