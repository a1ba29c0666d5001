"""Duet pairing in the plan (`pairing: duet`, harness.plan.lanes.twins): twin lanes on the
recorded hwloc topologies, their swap between blocks, the wall-time estimate, and the
config: the plan accepts duet, a run refuses it (planned only) in one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import builds
from harness.measure.topology import Topology
from harness.plan import config, coreplan, estimate, lanes as L, schedule

from conftest import HWLOC as HW, RECORDED as ALL, ROOT, recorded_topology as topo  # noqa: E402


def cuts(t):
    return L.candidates(t, [1, 2, 4, 8, 16, 24, 32]) + [L.cut(t, 1, share_l3=True), L.cut(t, 2, share_l3=True)]


def physical(t, span):
    return {tuple(t.cpu(c[0]).siblings) for lane in span for c in lane.server_cores + lane.client_cores}


@pytest.mark.parametrize("name", ALL)
def test_twins_share_no_physical_core_and_have_one_layout(name):
    t = topo(name)
    for lanes in cuts(t):
        for w in (1, 2):
            spans = lanes.spans(w)
            pairs = L.twins(lanes, w)
            used = [i for p in pairs for i in p]
            assert len(used) == len(set(used))   # a span is in one pair at most
            for a, b in pairs:
                assert not physical(t, spans[a]) & physical(t, spans[b]), (name, lanes.size, w, a, b)
                assert L.layout(lanes, spans[a]) == L.layout(lanes, spans[b])
                assert [x.size for x in spans[a]] == [x.size for x in spans[b]]


@pytest.mark.parametrize("name", ["32em64t-2n8c2t-pci-noio", "24em64t-2n6c2t-pci", "96em64t-4n4d3ca2co-pci"])
def test_twins_sit_on_one_socket_where_it_holds_two_lanes(name):
    """Many 1-core lanes a socket: every pair of twins on the same socket(s) (a lane whose
    layout differs, e.g. its client on the other socket, has no twin); two sockets with
    one lane each (auto's cut on the 32-thread host): twins across them."""
    t = topo(name)
    lanes = L.cut(t, 1, share_l3=True)
    pairs = L.twins(lanes, 1)
    from collections import Counter
    key = lambda i: (L.layout(lanes, [lanes.lanes[i]]), L._sockets(lanes, [lanes.lanes[i]]))  # noqa: E731
    possible = sum(n // 2 for n in Counter(key(i) for i in range(lanes.count)).values())
    same = [(a, b) for a, b in pairs if key(a) == key(b)]
    assert len(same) == possible   # every pair a socket could hold is made
    if t.summary().startswith("2 sockets") or name.startswith(("32em", "24em")):
        assert possible >= lanes.count // 2 - 2
    two = L.cut(topo("32em64t-2n8c2t-pci-noio"), 4, share_l3=False)
    assert L.twins(two, 1) == [(0, 1)] and L.twins(two, 2) == []


def test_no_twin_for_a_lone_or_oversubscribed_lane():
    eight = L.cut(topo("32em64t-2n8c2t-pci-noio"), 8, share_l3=False)
    assert eight.count == 1 and L.twins(eight, 1) == []
    two_cpus = Topology.from_hwloc(HW / "16em64t-4s2c2t-offlines.xml", allowed={0, 1})
    assert L.twins(L.for_count(two_cpus, 2, [1]), 1) == []
    assert "none (no two spans alike); without a twin (run as blocks): lane 0" in L.describe_twins(eight)[0]


def test_sides_swap_between_blocks():
    assert [L.duet_sides((4, 5), b) for b in (1, 2, 3, 4)] == [(4, 5), (5, 4), (4, 5), (5, 4)]


def paper(name, pairing):
    cfg = {}
    for f in ("default.yaml", "paper.yaml"):
        config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / f).read_text()))
    cfg["pairing"] = pairing
    return cfg


def test_the_plan_accepts_duet_and_says_which_lanes_are_twins(tmp_path):
    t = topo("192em64t-12gr2n8c2t")
    p = coreplan.build(paper("192em64t-12gr2n8c2t", "duet"), t, root=str(tmp_path),
                       bench_dir="b", raw="r")
    text = coreplan.render(p)
    assert "pairing: duet (planned only" in text
    assert "  cells on 1 lane: twins lane 0 + lane 1 (" in text
    assert "duet: a piece takes twin spans" in text
    block = coreplan.render(coreplan.build(paper("192em64t-12gr2n8c2t", "block"), t, root=str(tmp_path),
                                           bench_dir="b", raw="r"))
    assert "twins" not in block


def test_a_run_refuses_duet_in_one_line():
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()))
    cfg["pairing"] = "duet"
    with pytest.raises(config.ConfigError, match=r"^pairing: duet is planned only .*; .*use pairing: block") as e:
        config.resolve(cfg)
    assert "\n" not in str(e.value)
    assert config.resolve(cfg, plan_only=True)["pairing"] == "duet"
    cfg["pairing"] = "twin"
    with pytest.raises(config.ConfigError, match=r"^pairing: 'twin' is not one of .*; use one of: block, duet"):
        config.resolve(cfg, plan_only=True)


def test_duet_pieces_take_twin_spans_for_half_the_time(tmp_path):
    t = topo("192em64t-12gr2n8c2t")
    lock = builds.load_lock(config.LOCK)
    out = {}
    for pairing in ("block", "duet"):
        r = config.resolve(paper("", pairing), config.LOCK, topo=t, plan_only=True)
        est = estimate.estimate(r, lock, bench_dir=str(tmp_path / "b"), raw=str(tmp_path / "r"), topo=t)
        out[pairing] = schedule.pieces(r, lock, est["rows"], est["lanes_obj"], worst=False)
    assert len(out["block"]) == len(out["duet"])
    for b, d in zip(out["block"], out["duet"]):   # its cells two at a time: ceil(n / 2) cells long
        assert d.width == 2 * b.width and b.seconds / 2 - 1e-9 <= d.seconds <= b.seconds + 1e-9
    assert sum(d.seconds for d in out["duet"]) < 0.6 * sum(b.seconds for b in out["block"])
