"""harness.measure.topology (hwloc XML) and the core plan on real recorded machines.

The six hosts are hwloc's own test-suite recordings (tests/fixtures/topology/hwloc/,
README there): 2 x 6 x 2 and 2 x 8 x 2 Xeons, a 16-socket host whose NUMA nodes
hold four sockets each, a 384-thread host of 24 sockets and nodes, a restricted
cpuset and a host with offline CPUs; plus this host, read live. On each, every
profile (smoke, default, midsize, paper) is resolved exactly as the pipeline
resolves it, and each planned cell is checked against the XML itself: mysqld and
sysbench never share a physical core, only online allowed CPUs are used, mysqld
stays on one NUMA node while it fits one, and the sweep is the studies' counts
that fit (1 and 2 added below four points).
"""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from harness import cli
from harness.plan import config
from harness.measure import coreplan
from harness.measure.topology import Topology, TopologyError, _Bitmap, read

ROOT = Path(__file__).resolve().parents[2]
HW = Path(__file__).resolve().parents[1] / "fixtures" / "topology" / "hwloc"
HOSTS = ["24em64t-2n6c2t-pci.xml", "32em64t-2n8c2t-pci-noio.xml", "96em64t-4n4d3ca2co-pci.xml",
         "192em64t-12gr2n8c2t.xml", "16amd64-8n2c-cpusets.xml", "16em64t-4s2c2t-offlines.xml"]
LIVE = "live"
PROFILES = ["smoke.yaml", "default.yaml", "midsize.yaml", "paper.yaml"]

# what `cores: auto` sweeps on each host (cores: max is its last): the studies' 4..32
# that fit with sysbench on cores of its own, and 1, 2 while fewer than four fit
SWEEP = {
    "24em64t-2n6c2t-pci.xml": [1, 2, 4, 8],           # 12 cores: 16 does not fit
    "32em64t-2n8c2t-pci-noio.xml": [1, 2, 4, 8],      # 16 cores: all 16 leave sysbench none
    "96em64t-4n4d3ca2co-pci.xml": [4, 8, 16, 24, 32],
    "192em64t-12gr2n8c2t.xml": [4, 8, 16, 24, 32],
    "16amd64-8n2c-cpusets.xml": [1, 2, 4],            # 10 allowed CPUs
    "16em64t-4s2c2t-offlines.xml": [1, 2, 4],         # 7 online CPUs on 6 cores
}
CPUSETS_ALLOWED = {0, 1, 2, 3, 5, 6, 12, 13, 14, 15}   # its allowed_cpuset 0x0000f06f
OFFLINES_ONLINE = {0, 1, 3, 4, 6, 12, 15}               # its cpuset 0x0000905b of 0x0000ffff
# `cores: study` for an A3 experiment: A3's 16, 24, 32 that fit, else the largest that fits
A3_SWEEP = {"24em64t-2n6c2t-pci.xml": [8], "32em64t-2n8c2t-pci-noio.xml": [8],
            "96em64t-4n4d3ca2co-pci.xml": [16, 24, 32], "192em64t-12gr2n8c2t.xml": [16, 24, 32],
            "16amd64-8n2c-cpusets.xml": [4], "16em64t-4s2c2t-offlines.xml": [4]}


@lru_cache(maxsize=None)
def topo(name) -> Topology:
    return Topology.live() if name == LIVE else read(HW / name)


@lru_cache(maxsize=None)
def xml_nodes(name) -> dict[int, int]:
    """PU -> the os_index of the NUMANode its cpuset holds, straight from the XML."""
    out = {}
    for obj in ET.parse(HW / name).iter("object"):
        if obj.get("type") == "NUMANode" and obj.get("cpuset"):
            for pu in _Bitmap(obj.get("cpuset")).bits:
                out[pu] = int(obj.get("os_index"))
    return out


@lru_cache(maxsize=None)
def xml_cores(name) -> dict[int, frozenset]:
    """PU -> every PU of its Core, straight from the XML (independent of harness.measure.topology)."""
    out = {}
    for core in ET.parse(HW / name).iter("object"):
        if core.get("type") == "Core":
            pus = frozenset(int(p.get("os_index")) for p in core.iter("object") if p.get("type") == "PU")
            for p in pus:
                out[p] = pus
    return out


def physical_core(name, cpu) -> frozenset:
    """The physical core a CPU is on: the XML's Core element, or live the kernel's own sibling list."""
    if name == LIVE:
        try:
            text = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text()
        except OSError:
            return frozenset({cpu})
        from harness.measure.placement import parse_cpulist
        return frozenset(parse_cpulist(text)) | {cpu}
    return xml_cores(name).get(cpu, frozenset({cpu}))


@lru_cache(maxsize=None)
def resolved(name, profile) -> dict:
    cfg = {}
    for f in ["default.yaml", profile]:
        config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / f).read_text()))
    return config.resolve(cfg, topo=topo(name))


def planned_cells(name, profile):
    """(experiment, Cell) for every core count every enabled experiment of the profile sweeps."""
    r = resolved(name, profile)
    t = topo(name)
    host_plan = coreplan.plan(t, client_min=r["placement"]["client_cpus"])
    for exp, spec in r["experiments"].items():
        if spec.get("enabled", True):
            for n in spec["cores"]:
                yield exp, host_plan.cells.get(n) or coreplan.place(t, n, client_min=host_plan.client_min)


ALL = [(h, p) for h in HOSTS + [LIVE] for p in PROFILES]


# ------------------------------------------------------------- reading hwloc XML

def test_the_fixtures_read_as_the_readme_says():
    got = {h: (len(topo(h).cpus), len(topo(h).cores()), len(topo(h).nodes), len(topo(h).packages))
           for h in HOSTS}
    assert got == {
        "24em64t-2n6c2t-pci.xml": (24, 12, 2, 2),
        "32em64t-2n8c2t-pci-noio.xml": (32, 16, 2, 2),
        "96em64t-4n4d3ca2co-pci.xml": (96, 96, 4, 16),
        "192em64t-12gr2n8c2t.xml": (384, 192, 24, 24),
        "16amd64-8n2c-cpusets.xml": (10, 10, 6, 6),
        "16em64t-4s2c2t-offlines.xml": (7, 6, 1, 4),
    }
    assert topo("32em64t-2n8c2t-pci-noio.xml").summary() == "32 CPUs: 2 sockets x 8 cores x 2 threads, 2 NUMA nodes"
    big = topo("192em64t-12gr2n8c2t.xml")
    assert big.cpu(0).siblings == (0, 192) and big.cpu(200).siblings == (8, 200)  # '0x1,,,,,,0x1' bitmaps
    assert big.cpu(200).package == 1 and big.cpu(200).node == 1


@pytest.mark.parametrize("name", HOSTS)
def test_siblings_are_the_xml_cores(name):
    t = topo(name)
    for c in t.cpus:
        assert set(c.siblings) >= physical_core(name, c.cpu)
        assert c.cpu in c.siblings


def test_restricted_cpuset_keeps_only_allowed_cpus_and_memory_nodes():
    t = topo("16amd64-8n2c-cpusets.xml")
    assert set(t.ids) == CPUSETS_ALLOWED
    assert t.mems == (1, 2, 3, 4, 5)                       # allowed_nodeset 0x3e: 4 and 5 hold no CPU
    assert t.cpu(0).node == 0 and 0 not in t.mems          # a CPU whose own node is not allowed


def test_offline_cpus_are_not_read_but_stay_siblings():
    t = topo("16em64t-4s2c2t-offlines.xml")
    assert set(t.ids) == OFFLINES_ONLINE
    assert t.cpu(0).siblings == (0, 8)                     # 8 is offline: cpu 0's core has one usable thread
    assert (4, 12) in t.cores() and (0,) in t.cores()


@pytest.mark.parametrize("stem", ["16em64t-4s2c2t-offlines", "16amd64-8n2c-cpusets"])
def test_hwloc_1x_xml_reads_the_same_as_2x(stem):
    v1, v2 = read(HW / f"{stem}-v1.xml"), read(HW / f"{stem}.xml")
    assert (v1.cpus, v1.mems) == (v2.cpus, v2.mems)


def test_bitmaps():
    assert _Bitmap("0x0000f06f").bits == CPUSETS_ALLOWED
    assert _Bitmap("0x00000001,,,,,,0x00000002").bits == {1, 192}
    b = _Bitmap("0xf...f,0x00000003")
    assert b.bits == {0, 1} and 2 not in b and 32 in b and 5000 in b


def test_recorded_hwloc_topology_round_trips_through_json(tmp_path):
    t = topo("16amd64-8n2c-cpusets.xml")
    t.record(tmp_path / "t.json")
    assert Topology.load(tmp_path / "t.json") == t
    assert read(tmp_path / "t.json") == t


@pytest.mark.parametrize("text,match", [
    ("not xml", "not hwloc XML"),
    ('<?xml version="1.0"?><topology version="2.0"/>', "no <topology> with a root <object>"),
    ('<topology version="2.0"><object type="Machine" cpuset="0x1"/></topology>', "no online, allowed PU"),
])
def test_bad_xml_is_a_one_line_error_naming_the_file(tmp_path, text, match):
    p = tmp_path / "bad.xml"
    p.write_text(text)
    with pytest.raises(TopologyError, match=match) as e:
        read(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)
    assert issubclass(TopologyError, coreplan.CoresError)     # one error class, as before


def test_allowed_narrows_a_recorded_topology():
    t = Topology.from_hwloc(HW / "24em64t-2n6c2t-pci.xml", allowed=[0, 1, 12, 13])
    assert t.ids == [0, 1, 12, 13] and t.cores() == [(0, 12), (1, 13)]   # 12 and 13: 0's and 1's SMT siblings
    with pytest.raises(TopologyError, match="none of its online, allowed CPUs"):
        Topology.from_hwloc(HW / "24em64t-2n6c2t-pci.xml", allowed=[99])


@pytest.mark.skipif(shutil.which("hwloc-calc") is None, reason="hwloc-calc not installed (Debian package hwloc)")
@pytest.mark.parametrize("name", HOSTS)
def test_packages_and_nodes_are_what_hwloc_calc_says(name):
    """hwloc's own tool, given the same file, puts the same CPUs in each socket and NUMA node."""
    t = topo(name)

    def calc(obj):
        out = subprocess.run(["hwloc-calc", "--input", str(HW / name), "--physical", "--intersect", "pu", obj],
                             capture_output=True, text=True, check=True).stdout.strip()
        return {int(x) for x in out.split(",") if x}
    for p in t.packages:
        assert calc(f"package:{p}") == {c.cpu for c in t.cpus if c.package == p}, p
    for n in t.mems:
        assert calc(f"numa:{n}") == {c.cpu for c in t.cpus if c.node == n}, n


# ------------------------------------------------------------- live

def test_live_is_hwloc_when_installed_and_agrees_with_sys():
    t = Topology.live()
    assert t.ids == sorted(os.sched_getaffinity(0))
    if shutil.which("lstopo-no-graphics") or shutil.which("lstopo"):
        assert t.source == "this host (lstopo)"
    assert [(c.cpu, c.package, c.node) for c in t.cpus] == \
        [(c.cpu, c.package, c.node) for c in Topology.from_sys().cpus]
    for c in t.cpus:
        assert set(c.siblings) >= physical_core(LIVE, c.cpu)


def test_live_without_hwloc_reads_sys(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    t = Topology.live()
    assert t.source == "/sys" and t.ids == sorted(os.sched_getaffinity(0))


def test_the_2cpu_host_plans_as_before():
    t = Topology.live()
    if len(t.cpus) != 2 or t.threads_per_core != 1:
        pytest.skip("not the 2-CPU reference VM")
    p = coreplan.plan(t)
    assert p.counts == [1] and coreplan.cpus_for(1, p) == ([0], [1])
    assert resolved(LIVE, "paper.yaml")["experiments"]["point_select"]["cores"] == [1]


# ------------------------------------------------------------- the plan on every host and profile

@pytest.mark.parametrize("name,profile", ALL)
def test_mysqld_and_sysbench_never_share_a_physical_core(name, profile):
    for exp, cell in planned_cells(name, profile):
        server_cores = {physical_core(name, c) for c in cell.server}
        client_cores = {physical_core(name, c) for c in cell.client}
        assert not server_cores & client_cores, (exp, cell)
        assert not set(cell.server) & set(cell.client)
        if cell.threads_per_core == 1:
            assert len(server_cores) == cell.cores, (exp, cell)      # one thread per core


@pytest.mark.parametrize("name,profile", ALL)
def test_only_online_allowed_cpus_are_planned(name, profile):
    usable = set(topo(name).ids)
    if name == "16amd64-8n2c-cpusets.xml":
        assert usable == CPUSETS_ALLOWED
    if name == "16em64t-4s2c2t-offlines.xml":
        assert usable == OFFLINES_ONLINE
    if name == LIVE:
        assert usable == os.sched_getaffinity(0)
    for exp, cell in planned_cells(name, profile):
        assert set(cell.server) | set(cell.client) <= usable, (exp, cell)


@pytest.mark.parametrize("name,profile", ALL)
def test_mysqld_sits_on_one_numa_node_while_it_fits_one(name, profile):
    t = topo(name)
    per_node = {}
    for core in t.cores():
        per_node.setdefault(t.cpu(core[0]).node, []).append(core)
    for exp, cell in planned_cells(name, profile):
        assert cell.nodes == tuple(sorted({t.cpu(c).node for c in cell.server}))
        if any(len(v) >= cell.cores for v in per_node.values()):
            assert len(cell.nodes) == 1, (exp, cell)
        assert set(cell.mems) <= set(t.mems) and set(cell.mems) <= set(cell.nodes)
        if len(t.nodes) > 1 and set(cell.nodes) <= set(t.mems):
            assert cell.mems == cell.nodes                    # the --cpuset-mems mysqld gets


@pytest.mark.parametrize("name,profile", ALL)
def test_the_sweep_is_the_studies_counts_that_fit_plus_1_and_2_on_small_hosts(name, profile):
    expected = SWEEP[name] if name in SWEEP else coreplan.plan(topo(name)).counts   # live: test_the_2cpu_host_...
    raw = config.apply_experiment_defaults(config.deep_merge(
        yaml.safe_load((ROOT / "config" / "default.yaml").read_text()),
        yaml.safe_load((ROOT / "config" / profile).read_text())))["experiments"]
    r = resolved(name, profile)
    assert r["host"]["counts"] == expected
    for exp, spec in r["experiments"].items():
        asked = raw[exp].get("cores", "max")
        if asked == "study" and spec["study"] == "A3":
            want = A3_SWEEP.get(name, expected[-1:])    # live (2 CPUs): the largest, 1
        elif asked == "study":    # A1, A2 (the setup's sweep, issue 52), B3: study A's 4..32 that fit, never 1, 2
            assert spec["study"] in ("A1", "A2", "B3"), exp
            want = [n for n in expected if n >= 4] or expected[-1:]
        else:
            want = expected if asked == "auto" else expected[-1:] if asked == "max" else asked
        assert spec["cores"] == want, exp


def test_numa_placement_on_the_big_hosts():
    p = coreplan.plan(topo("96em64t-4n4d3ca2co-pci.xml"))
    assert p.cells[16].nodes == (0,) and len(p.cells[16].sockets) == 3    # one node holds four 6-core sockets
    assert p.cells[24].nodes == (0,) and len(p.cells[24].sockets) == 4
    assert p.cells[32].nodes == (0, 1) and len(p.cells[32].sockets) == 6  # no node holds 32: the fewest sockets
    p = coreplan.plan(topo("192em64t-12gr2n8c2t.xml"))
    assert [p.cells[n].sockets for n in (8, 16, 32)] == [(0,), (0, 1), (0, 1, 2, 3)]
    assert p.cells[16].client == tuple(range(16, 24))                     # sysbench on the next socket


@pytest.mark.parametrize("name,spans", [("32em64t-2n8c2t-pci-noio.xml", {}),
                                        ("96em64t-4n4d3ca2co-pci.xml", {32: (0, 1)}),
                                        ("24em64t-2n6c2t-pci.xml", {8: (0, 1)}),
                                        ("192em64t-12gr2n8c2t.xml", {16: (0, 1), 24: (0, 1, 2), 32: (0, 1, 2, 3),
                                                                64: (0, 1, 2, 3)})])
def test_each_cells_memory_is_bound_to_its_one_node_or_its_allowed_nodes_when_it_spans(name, spans):
    """The memory-binding rule on multi-node hosts, against the XML's own node of each PU:
    a server whose CPUs sit on one NUMA node is bound to that node (the server gets it as
    --cpuset-mems / cpuset.mems under placement.mems: plan); one that spans nodes is bound
    to the nodes it runs on that this process may use."""
    t = topo(name)
    node_of = xml_nodes(name)
    p = coreplan.plan(t, smt=True)
    assert p.cells, name
    for n, cell in p.cells.items():
        nodes = tuple(sorted({node_of[c] for c in cell.server}))
        if len(nodes) == 1:
            assert cell.mems == nodes, (n, cell)
        else:
            assert cell.mems == tuple(k for k in nodes if k in t.mems), (n, cell)
        assert (cell.mems if len(nodes) > 1 else None) == spans.get(n), (n, cell)
        assert coreplan.mems_for("plan", cell) == list(cell.mems)
        assert coreplan.mems_for("all", cell) is None and coreplan.mems_for([1, 0], cell) == [0, 1]


def test_a_cell_spanning_a_node_whose_memory_is_not_allowed_is_bound_to_the_allowed_one():
    p = coreplan.plan(topo("16amd64-8n2c-cpusets.xml"))
    assert p.cells[4].nodes == (0, 1) and p.cells[4].mems == (1,)       # node 0's memory is not allowed


def test_a_one_node_host_binds_nothing_so_the_server_gets_every_allowed_node():
    t = topo("16em64t-4s2c2t-offlines.xml")
    for cell in coreplan.plan(t).cells.values():
        assert cell.mems == () and coreplan.mems_for("plan", cell) is None


def test_a_cpu_whose_node_memory_is_not_allowed_is_used_last():
    p = coreplan.plan(topo("16amd64-8n2c-cpusets.xml"))
    assert p.cells[1].server == (2,) and p.cells[1].mems == (1,)          # not cpu 0: node 0 is not allowed
    assert p.cells[2].server == (2, 3) and p.cells[2].mems == (1,)


# ------------------------------------------------------------- python -m harness plan

def test_plan_command_on_a_recorded_host(capsys):
    f = HW / "32em64t-2n8c2t-pci-noio.xml"
    assert cli.main(["plan", "--topology", str(f), "--configfile", str(ROOT / "config" / "paper.yaml"),
                     "--no-estimate"]) == 0
    out = capsys.readouterr().out
    assert "host: 32 CPUs: 2 sockets x 8 cores x 2 threads, 2 NUMA nodes" in out
    assert "core counts that fit: 1, 2, 4, 8" in out
    assert ("  16 does not fit: need 16 CPUs for mysqld and 8 for sysbench on other physical cores, "
            "this host has 32, 0 of them on cores mysqld leaves free") in out
    assert ("    8 cores: mysqld on cpus 0-7 (socket 0, NUMA node 0, memory on node 0); "
            "sysbench on cpus 8-11 (socket 1, NUMA node 1)") in out
    # users 8-256; 360 before A2's Point-Selects row was gated at the setup's 4 cores (issue 52):
    # it is measurable on this host's 8 and reads the one-table cells too
    assert "  point_select (A3, throughput; cores: study): 468 cells at most" in out
    assert ("    kept (cells at most) 8 (468); dropped 1, 2, 4: cores: study: none of the study's own counts "
            "(16, 24, 32) fits, so the largest that does; 16, 24, 32: do not fit") in out
    assert "  fts (A1, throughput; cores: study): 864 cells at most" in out
    assert ("    kept (cells at most) 4 (432), 8 (432); dropped 1, 2: cores: study keeps the study's own "
            "counts that fit (4, 8, 16, 24, 32); 16, 24, 32: do not fit") in out
    assert "dropped 1, 2, 4: cores: max keeps only the largest count that fits" in out
    assert "  build_compare (A3, throughput; cores: study): 192 cells at most" in out
    assert ("    kept (cells at most) 8 (192); dropped 1, 2, 4: cores: study: none of the study's own counts "
            "(16, 24, 32) fits, so the largest that does; 16, 24, 32: do not fit") in out


def test_plan_command_json_and_estimate(capsys):
    f = HW / "192em64t-12gr2n8c2t.xml"
    assert cli.main(["plan", "--topology", str(f), "--configfile", str(ROOT / "config" / "paper.yaml"),
                     "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fits"] == [4, 8, 16, 24, 32] and d["estimate"]["total_s"] > 0
    fts = next(e for e in d["experiments"] if e["experiment"] == "fts")   # cores: study, A1's 4..32
    assert list(fts["kept"]) == ["4", "8", "16", "24", "32"] and fts["estimate_s"] > 0
    assert fts["dropped"]["1"].startswith("not needed")
    ps = next(e for e in d["experiments"] if e["experiment"] == "oltp_ro")   # cores: study, A2's setup sweep
    assert list(ps["kept"]) == ["4", "8", "16", "24", "32"] and ps["estimate_s"] > 0
    bc = next(e for e in d["experiments"] if e["experiment"] == "build_compare")
    assert list(bc["kept"]) == ["16", "24", "32"]                              # cores: study, A3's own
    assert bc["dropped"]["4"].startswith("cores: study keeps the study's own counts that fit (16, 24, 32)")
    # expected: repetitions.min blocks; worst case: max blocks, those after the first look
    # with only the cells claims read (harness.plan.estimate's rows)
    lo, hi = ps["blocks"]
    assert lo < hi and ps["cells_expected"] * hi > ps["cells"] * lo
    assert ps["worst_s"] == pytest.approx(ps["estimate_s"] * ps["cells"] / ps["cells_expected"])
    assert ps["late"].startswith(f"blocks {lo + 1}-{hi}: only the ")
    assert d["estimate"]["worst_s"] > d["estimate"]["total_s"]


def test_the_readme_shows_the_plans_it_would_print_now():
    """scripts/plan-table.py --check: the README's two plans are what the code prints today."""
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "plan-table.py"), "--check"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")})
    assert res.returncode == 0, res.stderr


def test_plan_command_names_a_bad_topology_in_one_line(capsys, tmp_path):
    assert cli.main(["plan", "--topology", str(tmp_path / "none.xml"), "--no-estimate"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "none.xml" in err and err.count("\n") == 1
