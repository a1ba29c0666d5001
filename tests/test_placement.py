"""harness.measure.placement: CPU list format, the server/client split, and which
mechanism holds mysqld to its cores. (Tests that put a server in a cgroup
live elsewhere.)"""
import os

import pytest

from harness.measure import placement

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
