"""harness.measure.coreplan: the topology read from /sys (live and recorded), and the core
plan on recorded hosts: a 2-CPU VM (this machine, recorded for real), a
2-socket 32-core/64-thread Intel host, a 1-socket 128-core/256-thread AMD
host (NPS4: 4 NUMA nodes) and a 16-vCPU cloud VM (8 cores x 2 threads).
The larger hosts are /sys trees written by `sys_tree` below as the kernel
lays them out; tests/fixtures/topology/README.md says how each was made."""
import json
import math
import os
from pathlib import Path

import pytest
import yaml

from harness.measure import coreplan
from harness.measure.coreplan import CoresError
from harness.measure.topology import Topology
from harness.measure.placement import PlacementError, cpulist

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parents[1] / "fixtures" / "topology"


# ------------------------------------------------------------- /sys trees

def sys_tree(root: Path, cpus, online=None, nodes=True) -> Path:
    """Write root/devices/system/{cpu,node} for `cpus`: (cpu, package, core_id,
    siblings, node) tuples, the files and list formats the kernel uses."""
    cpu_dir = root / "devices" / "system" / "cpu"
    cpu_dir.mkdir(parents=True)
    ids = [c[0] for c in cpus]
    (cpu_dir / "online").write_text(cpulist(online if online is not None else ids) + "\n")
    by_node = {}
    for n, pkg, core, sib, node in cpus:
        t = cpu_dir / f"cpu{n}" / "topology"
        t.mkdir(parents=True)
        (t / "physical_package_id").write_text(f"{pkg}\n")
        (t / "core_id").write_text(f"{core}\n")
        # the kernel writes e.g. "0,32" for non-adjacent siblings, "0-1" for adjacent ones
        (t / "thread_siblings_list").write_text(cpulist(sib) + "\n")
        by_node.setdefault(node, []).append(n)
    if nodes:
        for node, ns in by_node.items():
            d = root / "devices" / "system" / "node" / f"node{node}"
            d.mkdir(parents=True)
            (d / "cpulist").write_text(cpulist(ns) + "\n")
    return root


def intel_2s_16c_ht():
    """2 x 16 cores x 2 threads as Linux numbers an Intel Xeon host: cpus 0-15
    socket 0, 16-31 socket 1, then their hyper-threads 32-63 (siblings n, n+32)."""
    out = []
    for n in range(64):
        first = n % 32
        out.append((n, first // 16, first % 16, [first, first + 32], first // 16))
    return out


def amd_1s_128c_smt_nps4():
    """1 socket x 128 cores x 2 threads (an EPYC 9754), NPS4: 4 NUMA nodes of
    32 cores; siblings n, n+128."""
    return [(n, 0, n % 128, [n % 128, n % 128 + 128], (n % 128) // 32) for n in range(256)]


def cloud_16vcpu():
    """A 16-vCPU cloud VM: 1 socket x 8 cores x 2 threads, siblings n, n+8."""
    return [(n, 0, n % 8, [n % 8, n % 8 + 8], 0) for n in range(16)]


HOSTS = {
    "intel-2s-16c-ht.json": intel_2s_16c_ht,
    "amd-1s-128c-smt-nps4.json": amd_1s_128c_smt_nps4,
    "cloud-16vcpu.json": cloud_16vcpu,
}


def load(name) -> Topology:
    return Topology.load(FIX / name)


VM2, INTEL, AMD, CLOUD = (load(n) for n in
                          ("vm-2cpu.json", "intel-2s-16c-ht.json", "amd-1s-128c-smt-nps4.json", "cloud-16vcpu.json"))


def cores_of(topo, cpus):
    """The physical cores (sibling sets) the CPUs sit on."""
    return {topo.cpu(c).siblings for c in cpus}


def check_cell(topo, cell, *, client_min=1, ratio=0.5):
    """The invariants every planned cell keeps."""
    allowed = set(topo.ids)
    assert set(cell.server) <= allowed and set(cell.client) <= allowed
    assert not set(cell.server) & set(cell.client), "server and client share a CPU"
    assert len(cell.server) == cell.cores
    assert len(cell.client) == max(client_min, math.ceil(cell.cores * ratio))
    if cell.threads_per_core == 1:
        assert len(cores_of(topo, cell.server)) == cell.cores, "two server CPUs are SMT siblings"
    assert not cores_of(topo, cell.server) & cores_of(topo, cell.client), "server and client share a core"
    assert cell.client_on_siblings == 0


# ------------------------------------------------------------- topology

def test_live_topology_is_this_process_affinity_and_round_trips(tmp_path):
    t = Topology.from_sys()
    assert t.ids == sorted(os.sched_getaffinity(0))
    for c in t.cpus:
        assert c.cpu in c.siblings
    t.record(tmp_path / "here.json")
    assert Topology.load(tmp_path / "here.json") == t


def test_live_topology_honours_a_narrower_allowed_set():
    first = sorted(os.sched_getaffinity(0))[0]
    t = Topology.from_sys(allowed=[first])
    assert t.ids == [first]


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_recorded_hosts_are_what_from_sys_reads_from_their_tree(tmp_path, name):
    tree = sys_tree(tmp_path, HOSTS[name]())
    assert Topology.from_sys(tree).cpus == load(name).cpus


def test_recorded_intel_host_has_the_kernel_layout():
    assert INTEL.summary() == "64 CPUs: 2 sockets x 16 cores x 2 threads, 2 NUMA nodes"
    assert INTEL.cpu(0).siblings == (0, 32) and INTEL.cpu(47).siblings == (15, 47)
    assert INTEL.cpu(16).package == 1 and INTEL.cpu(48).package == 1
    assert AMD.summary() == "256 CPUs: 1 socket x 128 cores x 2 threads, 4 NUMA nodes"
    assert CLOUD.summary() == "16 CPUs: 1 socket x 8 cores x 2 threads, 1 NUMA node"
    assert VM2.summary() == "2 CPUs: 1 socket x 2 cores x 1 thread, 1 NUMA node"


def test_from_sys_skips_offline_cpus_and_keeps_only_allowed(tmp_path):
    layout = [(n, n // 4, n % 4, [n], n // 4) for n in range(8)]   # 2 sockets x 4 cores, SMT off
    tree = sys_tree(tmp_path, layout, online=[0, 1, 2, 4, 5, 6, 7])
    t = Topology.from_sys(tree)
    assert t.ids == [0, 1, 2, 4, 5, 6, 7]
    assert t.packages == [0, 1] and t.threads_per_core == 1
    assert Topology.from_sys(tree, allowed=[1, 3, 5]).ids == [1, 5]


def test_from_sys_falls_back_where_a_vm_hides_topology_files(tmp_path):
    cpu_dir = tmp_path / "devices" / "system" / "cpu"
    for n in range(3):
        (cpu_dir / f"cpu{n}").mkdir(parents=True)       # no topology/, no online, no node/
    (cpu_dir / "cpu2" / "topology").mkdir()
    (cpu_dir / "cpu2" / "topology" / "physical_package_id").write_text("-1\n")  # as on some arm64 hosts
    t = Topology.from_sys(tmp_path)
    assert [(c.cpu, c.package, c.core, c.siblings, c.node) for c in t.cpus] == [
        (0, 0, 0, (0,), 0), (1, 0, 1, (1,), 0), (2, 0, 2, (2,), 0)]


def test_from_sys_names_a_tree_that_is_not_one(tmp_path):
    with pytest.raises(CoresError, match=str(tmp_path)):
        Topology.from_sys(tmp_path)


@pytest.mark.parametrize("text,match", [
    ("not json", "not a readable topology snapshot"),
    ('{"format": "other", "cpus": []}', "expected 'mysqlbench-topology/1'"),
    ('{"format": "mysqlbench-topology/1", "cpus": [{"cpu": 0}]}', "needs integer cpu, package"),
    ('{"format": "mysqlbench-topology/1", "cpus": []}', "empty or a CPU listed twice"),
])
def test_a_bad_snapshot_is_a_one_line_error_naming_the_file(tmp_path, text, match):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(CoresError, match=match) as e:
        Topology.load(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


def test_the_2cpu_fixture_was_recorded_from_a_live_sys():
    d = json.loads((FIX / "vm-2cpu.json").read_text())
    assert d["source"] == "/sys" and len(d["cpus"]) == 2


# ------------------------------------------------------------- the plan

def test_2cpu_vm_is_one_server_cpu_and_one_client_cpu():
    p = coreplan.plan(VM2)
    assert p.counts == [1]
    assert coreplan.cpus_for(1, p) == ([0], [1])
    text = p.describe()
    assert text.startswith("On this 2-CPU machine")
    assert "mysqld on 1 CPU (cpu 0), sysbench on 1 CPU (cpu 1)" in text
    assert "The studies' 4–32-core sweep does not fit (4 cores need 4 cores, this host has 2)" in text
    assert "\n" not in text


def test_intel_64_thread_host_gets_the_studies_counts_to_24_one_thread_per_core():
    p = coreplan.plan(INTEL)
    assert p.counts == [4, 8, 16, 24]
    for cell in p.cells.values():
        check_cell(INTEL, cell)
        assert cell.threads_per_core == 1
    for n in (4, 8, 16):                                  # fit one socket: there they stay
        assert p.cells[n].sockets == (0,)
        assert {INTEL.cpu(c).package for c in p.cells[n].client} == {1}   # client on the other socket
        assert p.cells[n].client_on_siblings == 0
    assert p.cells[16].server == tuple(range(16))
    # 24 and 32 exceed a socket's 16 cores: the fewest sockets, as the study's taskset did
    assert p.cells[24].sockets == (0, 1) and p.cells[24].server == tuple(range(24))
    assert p.cells[24].client == tuple(range(24, 32)) + tuple(range(56, 60))  # socket 1's 8 free cores
    assert p.cells[24].nodes == (0, 1) and p.cells[24].mems == (0, 1)
    # 32 takes every core: sysbench would sit on mysqld's hyper-threads, which the plan never does
    assert p.missing[32] == ("need 32 CPUs for mysqld and 16 for sysbench on other physical cores, "
                             "this host has 64, 0 of them on cores mysqld leaves free")
    assert "across sockets 0 and 1" in p.describe()


def test_intel_host_with_one_socket_only_stops_at_16():
    p = coreplan.plan(INTEL, cross_socket=False)
    assert p.counts == [2, 4, 8, 16]    # three study counts: 2 is added for a fourth point
    assert p.missing[24] == "need 24 cores, this host has 16 per socket"


def test_intel_host_cannot_hold_64_smt_threads_and_a_disjoint_client():
    """64 (HT) takes all 64 threads: nothing is left for sysbench, so it does not fit."""
    p = coreplan.plan(INTEL, smt=True)
    assert p.counts == [4, 8, 16, 24]
    assert p.missing[64] == ("need 64 CPUs for mysqld and 32 for sysbench on other physical cores, "
                             "this host has 64, 0 of them on cores mysqld leaves free")
    assert sorted(p.missing) == [32, 64]
    assert "64 (SMT) does not fit" in p.describe()


def test_amd_128_core_host_gets_every_study_count_and_the_smt_point():
    p = coreplan.plan(AMD)
    assert p.counts == [4, 8, 16, 24, 32]
    assert not p.missing
    p = coreplan.plan(AMD, smt=True)
    assert p.counts == [4, 8, 16, 24, 32, 64]
    for cell in p.cells.values():
        check_cell(AMD, cell)
        assert cell.sockets == (0,) and cell.client_on_siblings == 0
    ht = p.cells[64]
    assert ht.threads_per_core == 2
    assert len(cores_of(AMD, ht.server)) == 32                 # 32 cores, both threads each
    assert set(ht.server) == set(range(32)) | set(range(128, 160))
    assert ht.nodes == (0,)                                    # one NPS4 node holds them
    assert not cores_of(AMD, ht.server) & cores_of(AMD, ht.client)
    assert p.cells[32].nodes == (0,) and p.cells[32].server == tuple(range(32))


def test_16vcpu_cloud_vm_gets_1_2_4_with_or_without_smt():
    for smt in (False, True):
        p = coreplan.plan(CLOUD, smt=smt)
        assert p.counts == [1, 2, 4]
        for cell in p.cells.values():
            check_cell(CLOUD, cell)
        assert p.cells[4].server == (0, 1, 2, 3) and p.cells[4].client == (4, 5)  # free cores, one thread each
        # 8 cores is every core: sysbench would be on mysqld's hyper-threads, so 8 does not fit
        assert p.missing[8].startswith("need 8 CPUs for mysqld and 4 for sysbench on other physical cores")
        assert "The studies' 8, 16, 24 and 32-core points do not fit" in p.describe()


def test_the_client_rule_is_a_parameter():
    p = coreplan.plan(INTEL, client_min=16)                        # the paper profile's placement.client_cpus
    assert all(len(c.client) == 16 for c in p.cells.values())
    p = coreplan.plan(INTEL, client_ratio=2.0)
    assert len(p.cells[16].client) == 32 and sorted(p.missing) == [24, 32]
    assert p.missing[24] == ("need 24 CPUs for mysqld and 48 for sysbench on other physical cores, "
                             "this host has 64, 16 of them on cores mysqld leaves free")
    assert "max(1, ceil(n x 2))" in p.describe()


def test_client_size_rule():
    assert [coreplan.client_size(n) for n in (1, 2, 3, 4, 24, 32, 64)] == [1, 1, 2, 2, 12, 16, 32]
    assert coreplan.client_size(4, client_min=16) == 16


def test_plan_to_dict_is_json_for_a_manifest():
    d = json.loads(json.dumps(coreplan.plan(INTEL).to_dict()))
    assert d["counts"] == [4, 8, 16, 24]
    assert d["cells"][0] == {"cores": 4, "server_cpus": "0-3", "client_cpus": "16-17", "threads_per_core": 1,
                             "sockets": [0], "nodes": [0], "mems": [0], "client_on_siblings": 0}


# ------------------------------------------------------------- resolve_cores, cpus_for

def test_resolve_auto_gives_the_plans_counts():
    assert coreplan.resolve_cores("auto", VM2) == [1]
    assert coreplan.resolve_cores("auto", CLOUD) == [1, 2, 4]
    assert coreplan.resolve_cores("auto", AMD, smt=True) == [4, 8, 16, 24, 32, 64]


def test_resolve_a_list_that_fits_returns_it():
    assert coreplan.resolve_cores([8, 24], INTEL) == [8, 24]


def test_resolve_a_count_that_does_not_fit_names_the_key_and_the_largest_that_fits():
    with pytest.raises(CoresError) as e:
        coreplan.resolve_cores([4, 8], VM2, key="experiments.point_select.cores")
    msg = str(e.value)
    assert msg.startswith("experiments.point_select.cores: 4, 8 do not fit on this 2-CPU host")
    assert "the largest that fits is 1" in msg and "\n" not in msg
    assert msg.endswith("use cores: auto or counts up to 1")
    with pytest.raises(CoresError, match=r"\(16: need 16 cores, this host has 8\); the largest that fits is 6"):
        coreplan.resolve_cores([16], CLOUD)     # one thread per core, sysbench's 3 CPUs on 2 more cores
    with pytest.raises(CoresError, match="the largest that fits is 25"):
        coreplan.resolve_cores([48], INTEL)     # 25 cores + sysbench's 13 CPUs on the 7 cores left
    with pytest.raises(CoresError, match="the largest that fits is 42"):
        coreplan.resolve_cores([48], INTEL, smt=True)   # 21 cores x 2 threads + 21 for sysbench = 63 of 64


def test_resolve_advises_a_flag_in_the_flags_own_words():
    """A bench's `--cores N` takes one count and no `auto`: its error says what to type."""
    with pytest.raises(CoresError) as e:
        coreplan.resolve_cores([16], CLOUD, key="--cores")
    assert str(e.value).startswith("--cores: 16 does not fit on this 16-CPU host")
    assert str(e.value).endswith("use --cores 6 or fewer") and "auto" not in str(e.value)


@pytest.mark.parametrize("value", ["all", [], [0], [2.5], [True], 8])
def test_resolve_rejects_what_is_neither_auto_nor_a_list(value):
    with pytest.raises(CoresError, match=r"^k: .* is neither auto nor a list of positive integers"):
        coreplan.resolve_cores(value, INTEL, key="k")


def test_resolve_auto_on_a_1cpu_host_says_it_needs_more(tmp_path):
    one = Topology.from_sys(sys_tree(tmp_path, [(0, 0, 0, [0], 0)]))
    with pytest.raises(CoresError, match="cores: auto: no core count fits on this 1-CPU host"):
        coreplan.resolve_cores("auto", one)


def test_paper_profile_counts_fit_the_64_thread_host_and_not_the_2cpu_vm():
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    lists = {f"experiments.{e}.cores": s["cores"] for e, s in paper["experiments"].items() if "cores" in s}
    lists["experiment_defaults.cores"] = paper["experiment_defaults"]["cores"]
    assert lists
    from harness.plan import config
    studies = {e: s.get("study") for e, s in yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
               ["experiments"].items()}
    for key, value in lists.items():
        assert value in ("auto", "max", "study")  # the paper profile plans its cores from the host
        study = studies.get(key.split(".")[1])
        got = config.plan_cores(value, coreplan.plan(INTEL), INTEL, key, 1, study=study)
        own = [16, 24] if study == "A3" else [4, 8, 16, 24]   # A3's / A1's, A2's (the setup's sweep), B3's; 32 does not fit
        assert got == {"auto": [4, 8, 16, 24], "max": [24], "study": own}[value]
        assert config.plan_cores(value, coreplan.plan(VM2), VM2, key, 1, study=study) == [1]
        with pytest.raises(CoresError, match=f"^{key}: .* the largest that fits is 1"):
            coreplan.resolve_cores([4, 8], VM2, key=key)


def test_cpus_for_has_placement_splits_shape_and_the_plans_cpus():
    p = coreplan.plan(INTEL)
    server, client = coreplan.cpus_for(16, p)
    assert (server, client) == (list(range(16)), list(range(16, 24)))
    # a count the plan did not list is placed by the same rules
    server, client = coreplan.cpus_for(2, p)
    assert server == [0, 1] and client == [16]
    with pytest.raises(PlacementError, match="need 64 cores, this host has 32"):
        coreplan.cpus_for(64, p)


def test_cpus_for_on_this_host_is_disjoint_and_allowed():
    t = Topology.from_sys()
    p = coreplan.plan(t)
    for n in p.counts:
        server, client = coreplan.cpus_for(n, p)
        assert not set(server) & set(client)
        assert set(server) | set(client) <= os.sched_getaffinity(0)
