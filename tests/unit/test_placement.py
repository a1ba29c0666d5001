"""harness.measure.placement: CPU list format, the server/client split, which
mechanism holds mysqld to its cores, and the memory nodes a run is bound to (a
real cgroup here holds a `sleep`; tests that put a server in a cgroup live
elsewhere)."""
import os
import subprocess
from pathlib import Path

import pytest

from harness.measure import placement, procs

MECHANISMS = {"cgroup-v1", "cgroup-v2", "taskset"}


@pytest.mark.parametrize("cpus,text", [
    ([0, 1, 2, 5], "0-2,5"),
    ([3], "3"),
    ([0, 1], "0-1"),
    ([0, 2, 4], "0,2,4"),
    ([0, 1, 2, 5, 7, 8, 9, 63], "0-2,5,7-9,63"),
    ([], ""),
])
def test_cpulist_round_trip(cpus, text):
    assert placement.cpulist(cpus) == text
    assert placement.parse_cpulist(text) == cpus


def test_cpulist_sorts_and_dedups():
    assert placement.cpulist([5, 2, 0, 1, 1]) == "0-2,5"


def test_parse_cpulist_reads_the_kernel_format_with_newline():
    assert placement.parse_cpulist("0-3,8-9\n") == [0, 1, 2, 3, 8, 9]


def test_observed_cpus_of_this_process_is_its_affinity():
    assert placement.observed_cpus(os.getpid()) == sorted(os.sched_getaffinity(0))


@pytest.mark.parametrize("allowed,cores,client,server_cpus,client_cpus", [
    ([0, 1, 2, 3, 4, 5, 6, 7], 2, 1, [0, 1], [7]),
    ([0, 1], 1, 1, [0], [1]),
    ([6, 2, 4, 0], 2, 2, [0, 2], [4, 6]),   # unsorted input; exactly full
    ([0, 1, 2, 3], 1, 2, [0], [2, 3]),
])
def test_split_gives_disjoint_server_and_client_cpus(allowed, cores, client, server_cpus, client_cpus):
    server, cl = placement.split(allowed, cores, client)
    assert (server, cl) == (server_cpus, client_cpus)
    assert not set(server) & set(cl)
    assert set(server) | set(cl) <= set(allowed)


def test_split_of_this_hosts_cpus_is_disjoint():
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs 2 CPUs")
    server, client = placement.split(allowed, len(allowed) - 1, 1)
    assert len(server) == len(allowed) - 1 and len(client) == 1
    assert not set(server) & set(client)


@pytest.mark.parametrize("allowed,cores,client", [([0, 1], 2, 1), ([0, 1, 2, 3], 3, 2), ([0], 1, 1)])
def test_split_asking_too_many_raises(allowed, cores, client):
    with pytest.raises(placement.PlacementError, match=f"exceed the {len(allowed)} allowed"):
        placement.split(allowed, cores, client)


def test_detect_auto_is_one_of_the_three():
    assert placement.detect("auto") in MECHANISMS


def test_detect_taskset_is_always_usable():
    assert placement.detect("taskset") == "taskset"


@pytest.fixture
def no_cgroups(monkeypatch):
    """A host whose /proc/self/mounts has no cgroup at all."""
    monkeypatch.setattr(placement, "_mounts", lambda: [("/", "ext4", "rw,relatime")])


@pytest.mark.parametrize("mechanism", ["cgroup-v1", "cgroup-v2"])
def test_detect_of_an_unusable_mechanism_raises(no_cgroups, mechanism):
    with pytest.raises(placement.PlacementError, match=rf"^placement\.mechanism: {mechanism} is not usable"):
        placement.detect(mechanism)


def test_detect_auto_falls_back_to_taskset_without_cgroups(no_cgroups):
    assert placement.detect("auto") == "taskset"


def test_detect_of_an_unknown_mechanism_raises():
    with pytest.raises(placement.PlacementError):
        placement.detect("cgroups")


# -- memory nodes ------------------------------------------------------------------
def test_allowed_mems_are_what_the_kernel_lets_this_process_use():
    assert placement.allowed_mems() == placement.observed_mems(os.getpid()) != []


def test_run_mems_unbound_is_every_allowed_node_and_a_binding_stays_within_them():
    assert placement.run_mems(None, [0, 1, 2, 3]) == [0, 1, 2, 3]
    assert placement.run_mems([], [0, 1]) == [0, 1]
    assert placement.run_mems([2, 1, 2], [0, 1, 2, 3]) == [1, 2]
    assert placement.run_mems(None) == placement.allowed_mems()


@pytest.mark.parametrize("asked,allowed,named", [([1], [0], "1"), ([0, 2, 3], [0, 1], "2-3"), ([0], [1, 2], "0")])
def test_run_mems_outside_the_allowed_nodes_is_one_line_naming_the_key_and_the_fix(asked, allowed, named):
    with pytest.raises(placement.PlacementError) as e:
        placement.run_mems(asked, allowed)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("placement.mems: memory node")
    assert f" {named} " in msg and f"nodes within {placement.cpulist(allowed)}" in msg


def test_a_cgroup_cpuset_holds_the_process_to_its_memory_nodes():
    """A real per-run cgroup (v1 or v2, as root): cpuset.mems is the run's nodes, and the
    kernel applies them to the process in it (Mems_allowed_list)."""
    mechanism = placement.detect("auto")
    if mechanism == "taskset":
        pytest.skip("no writable cgroup cpuset on this host (not root?)")
    mems = placement.allowed_mems()[:1]
    cpus = sorted(os.sched_getaffinity(0))[:1]
    run_id = f"test-mems-{os.getpid()}"
    with placement.Placement(run_id, cpus, mechanism, mems=mems) as p:
        assert placement.parse_cpulist((p.path / "cpuset.mems").read_text()) == mems
        proc = subprocess.Popen(["sleep", "30"], preexec_fn=p.preexec, env=procs.labelled_env(run_id, None))
        try:
            assert placement.observed_mems(proc.pid) == mems
            assert placement.observed_cpus(proc.pid) == cpus
        finally:
            proc.kill()
            proc.wait()
    assert not p.path.exists()


def test_taskset_refuses_to_bind_memory_it_cannot_hold(monkeypatch):
    """taskset holds CPUs only: on a host with two memory nodes it refuses a binding to one
    (before anything starts) and accepts none (every node)."""
    monkeypatch.setattr(placement, "allowed_mems", lambda: [0, 1])
    with pytest.raises(placement.PlacementError, match=r"^placement\.mems: taskset cannot bind memory to node 0; "):
        placement.Placement("test-taskset-mems", [0], "taskset", mems=[0])
    assert placement.Placement("test-taskset-mems", [0], "taskset", mems=None).mems == [0, 1]
    assert placement.Placement("test-taskset-mems", [0], "taskset", mems=[0, 1]).mems == [0, 1]


def test_cgroup_path_reads_the_process_own_cgroup_file():
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v1 = [ln.split(":", 2) for ln in lines if ln.split(":", 2)[1]]
    for _, ctrls, path in v1:
        for ctrl in ctrls.split(","):
            assert placement.cgroup_path("self", ctrl) == path
    assert placement.cgroup_path("self", "no-such-controller") is None
    assert placement.cgroup_path(2 ** 22 + 1, "memory") is None  # no such process


def test_memcg_of_is_the_memory_cgroup_a_process_may_join():
    got = placement.memcg_of(os.getpid())
    root = placement.v1_mount("memory")
    if root is None:
        assert got is None  # cgroup v2: memory beside cpuset, nobody joins one without the other
        return
    d = root / placement.cgroup_path("self", "memory").lstrip("/")
    alone = [ln.split(":", 2)[1] for ln in Path("/proc/self/cgroup").read_text().splitlines()
             if "memory" in ln.split(":", 2)[1].split(",")] == ["memory"]
    if not os.access(d / "cgroup.procs", os.W_OK) or not alone:
        assert got is None  # not root, or memory co-mounted with other controllers
        return
    assert got == d and str(os.getpid()) in (got / "cgroup.procs").read_text().split()
    assert placement.memory_cgroup("self") == placement.cgroup_path("self", "memory")


def test_memory_cgroup_reads_the_unified_line_without_a_v1_memory_hierarchy(tmp_path, monkeypatch):
    real = Path.read_text
    fake = {"/proc/4242/cgroup": "0::/system.slice/docker-abc.scope\n",
            "/proc/4343/cgroup": "4:memory:/docker/abc\n0::/\n"}
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: fake.get(str(self)) or real(self, *a, **k))
    assert placement.memory_cgroup(4242) == "/system.slice/docker-abc.scope"
    assert placement.memory_cgroup(4343) == "/docker/abc"


def test_sysbench_in_a_memory_cgroup_that_is_gone_is_one_line(tmp_path):
    from harness.measure import sysbench
    with pytest.raises(sysbench.SysbenchError, match=r"^sysbench could not join memory cgroup \S+: it is gone"):
        sysbench.run(["true"], cpus=sorted(os.sched_getaffinity(0))[:1], run_id="test-memcg-gone",
                     timeout=10, memcg=tmp_path / "gone")
