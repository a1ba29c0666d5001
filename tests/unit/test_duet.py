"""Duet pairing (`pairing: duet`, harness.plan.duet, harness.plan.lanes.twins): twin lanes
on the recorded hwloc topologies, their swap between blocks, which cells are a pair and
the blocks' order under duet, the wall-time estimate, and the config: duet runs, but not
with users on one server (refused in one line). The run itself: tests/e2e/test_duet_e2e.py."""
from __future__ import annotations

import dataclasses

import pytest
import yaml

from harness import builds
from harness.measure.topology import Topology
from harness.plan import blocks, config, plancmd, duet, estimate, lanes as L, schedule
from harness.plan import cells as plan_cells

from conftest import HWLOC as HW, RECORDED as ALL, ROOT, recorded_topology as topo  # noqa: E402
from harness import paths


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


def test_no_twin_for_a_lone_lane_and_oversubscribed_twins_only_where_every_lane_is():
    eight = L.cut(topo("32em64t-2n8c2t-pci-noio"), 8, share_l3=False)
    assert eight.count == 1 and L.twins(eight, 1) == []
    two_cpus = Topology.from_hwloc(HW / "16em64t-4s2c2t-offlines.xml", allowed={0, 1})
    over = L.for_count(two_cpus, 2, [1])   # 2 CPUs asked for 2 lanes: both share them
    assert over.oversubscribed and L.twins(over, 1) == [(0, 1)]
    mixed = dataclasses.replace(over, lanes=(over.lanes[0], dataclasses.replace(over.lanes[1], oversubscribed=False)))
    assert L.twins(mixed, 1) == []   # one lane oversubscribed, the other not: no twins
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
    p = plancmd.build(paper("192em64t-12gr2n8c2t", "duet"), t, root=str(tmp_path),
                       bench_dir="b", raw="r")
    text = plancmd.render(p)
    assert "pairing: duet: a compared pair's sides run at once on twin lanes" in text
    assert "  cells on 1 lane: twins lane 0 + lane 1 (" in text
    assert "  point_select: pairs of engine InnoDB (side A) and MyISAM (side B)" in text
    assert "  aa_throughput: an A/A control" in text
    assert "  oltp_ro: 3 engines: no one pair of sides (runs as blocks)" in text
    assert "  test_drive: a steps experiment" in text
    assert "duet: a piece takes twin spans" in text
    block = plancmd.render(plancmd.build(paper("192em64t-12gr2n8c2t", "block"), t, root=str(tmp_path),
                                           bench_dir="b", raw="r"))
    assert "twins" not in block


def test_a_run_takes_duet_but_not_with_users_on_one_server():
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / "smoke.yaml").read_text()))
    cfg["pairing"] = "duet"
    assert cfg["sysbench"]["users_on_one_server"] is True   # smoke's groups
    with pytest.raises(config.ConfigError, match=r"^pairing: duet runs each side .*users_on_one_server: true "
                                                 r".*; set pairing: block or users_on_one_server: false") as e:
        config.resolve(cfg)
    assert "\n" not in str(e.value)
    cfg["sysbench"]["users_on_one_server"] = False
    assert config.resolve(cfg)["pairing"] == "duet"
    cfg["pairing"] = "twin"
    with pytest.raises(config.ConfigError, match=r"^pairing: 'twin' is not one of .*; use one of: block, duet"):
        config.resolve(cfg)


def test_duet_pieces_take_twin_spans_for_half_the_time(tmp_path):
    t = topo("192em64t-12gr2n8c2t")
    lock = builds.load_lock(paths.LOCK)
    out = {}
    for pairing in ("block", "duet"):
        r = config.resolve(paper("", pairing), paths.LOCK, topo=t)
        est = estimate.estimate(r, lock, bench_dir=str(tmp_path / "b"), raw=str(tmp_path / "r"), topo=t)
        out[pairing] = schedule.pieces(r, lock, est["rows"], est["lanes_obj"], worst=False)
    assert len(out["block"]) == len(out["duet"])
    paired = {x for x in r["experiments"] if duet.active(r, x)}
    assert {"point_select", "fts", "key_cache"} <= paired and not {"oltp_ro", "test_drive", "aa_throughput"} & paired
    for b, d in zip(out["block"], out["duet"]):   # a pair's cells two at a time: ceil(n / 2) cells long
        if b.experiment in paired:
            assert d.width == 2 * b.width and b.seconds / 2 - 1e-9 <= d.seconds <= b.seconds + 1e-9
        else:   # an experiment without a duet factor runs as blocks
            assert d == b


def default(pairing="duet"):
    cfg = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    cfg["pairing"] = pairing
    return config.resolve(cfg, paths.LOCK, topo=topo("32em64t-2n8c2t-pci-noio"))


@pytest.mark.parametrize("spec, want", [
    ({"engines": ["InnoDB", "MyISAM"]}, "engine"),
    ({"engines": ["InnoDB", "MyISAM"], "variants": {"pfs": ["on", "default_instruments", "off"]}}, "engine"),
    ({"engines": ["InnoDB"], "variants": {"replica": ["a", "b"]}}, None),   # an A/A control: blocks
    ({"engines": ["MyISAM"], "variants": {"key_cache": ["shared", "per_table"]}}, "key_cache"),
    ({"engines": ["InnoDB"], "variants": {"innodb_read_only": ["off", "on"], "ps": ["on"]}}, "innodb_read_only"),
    ({"engines": ["InnoDB", "MyISAM", "MEMORY"]}, None),
    ({"engines": ["InnoDB"], "variants": {"spin_wait_delay": [6, 96, 256]}}, None),
    ({"engines": ["InnoDB"], "variants": {"ps": ["on", "off"], "pfs": ["on", "off"]}}, None),
    ({"engines": ["InnoDB"]}, None),
    ({"kind": "steps", "engines": ["InnoDB", "MyISAM"]}, None),
])
def test_the_duet_factor_is_the_one_thing_with_two_sides(spec, want):
    name, why = duet.factor({"kind": "throughput", **spec})
    assert name == want and (why == "") == (want is not None)


@pytest.mark.parametrize("exp", ["point_select", "ps_pfs", "mdl_hash", "key_cache", "fts_builds"])
def test_a_block_under_duet_is_the_seeded_order_with_each_pair_together(exp):
    """Under duet a block has the same cells as under block pairing; each pair (cells that
    differ only in the duet factor) comes together, the units in the seeded order of
    their first cell, a pair's two cells in the order the shuffle gave them; side A is
    the factor's first level."""
    lock = builds.load_lock(paths.LOCK)
    cd, cb = default("duet"), default("block")
    assert duet.active(cd, exp) and not duet.active(cb, exp)
    for rep in (1, 2):
        seeded, ordered = blocks.order(cb, lock, exp, rep), blocks.order(cd, lock, exp, rep)
        assert sorted(seeded) == sorted(ordered)
        units = duet.units(cd, exp, ordered)
        assert [c for u in units for c in u] == ordered       # a unit's cells are adjacent
        assert [u[0] for u in units] == [c for c in seeded if any(c == u[0] for u in units)]
        for u in units:
            assert list(u) == sorted(u, key=seeded.index)     # the shuffle's order inside a pair
        spec = cd["experiments"][exp]
        name, _ = duet.factor(spec)
        a, b = duet.levels(spec, name)
        pairs = [u for u in units if len(u) == 2]
        assert pairs
        for u in pairs:
            sa, sb = duet.sides(cd, exp, u)
            da, db = (blocks.plan.parse_cell(cd, exp, c) for c in (sa, sb))
            assert (duet._level(da, name), duet._level(db, name)) == (a, b)
            assert duet._key(da, name) == duet._key(db, name)
        lone = [u for u in units if len(u) == 1]
        if exp == "fts_builds":   # MySQL 5.5.9 has no InnoDB FULLTEXT: its MyISAM cells run alone
            assert lone and all("_MyISAM_" in u[0] and u[0].startswith("mysql-5.5.9") for u in lone)
        else:
            assert not lone


def test_an_experiment_without_a_duet_factor_keeps_its_seeded_order():
    lock = builds.load_lock(paths.LOCK)
    cd, cb = default("duet"), default("block")
    for exp in ("oltp_ro", "spin_wait", "test_drive", "aa_throughput"):
        assert not duet.active(cd, exp)
        assert blocks.order(cd, lock, exp, 1) == blocks.order(cb, lock, exp, 1)


def test_the_deviations_row_names_what_ran_at_once_and_what_did_not():
    """The paper's row (harness.report.deviations.duet_sentence): only when some pair ran at
    once; an experiment's factor where it pairs, blocks where it has none or runs groups
    (users on one server), the pairs without twins only when a manifest shows one."""
    from types import SimpleNamespace
    from harness.report import deviations
    cfg = default("duet")
    cfg["sysbench"]["users_on_one_server"] = True   # a replot may carry both settings
    cfg["experiments"]["point_select"]["users"] = [16]   # one users value: no group, it pairs
    cfg["experiments"]["fts"]["users"] = [4, 16]          # a group of two: runs as blocks
    tidy = SimpleNamespace(experiments=["point_select", "oltp_ro", "fts"], config=cfg,
                           spec=lambda e: cfg["experiments"][e])
    assert deviations.duet_sentence([{"backend": "docker"}], tidy) == ""
    text = deviations.duet_sentence([{"duet": True, "oversubscribed": False}], tidy)
    assert "paired: point_select (engine)" in text and "as blocks, one cell after another: oltp_ro, fts" in text
    assert "whose width had no twin lanes" not in text and "share no physical core" in text
    text = deviations.duet_sentence([{"duet": True, "oversubscribed": True}, {"duet_apart": True}], tidy)
    assert "so did the pairs whose width had no twin lanes" in text and "competed for them" in text


def test_a_unit_takes_one_twin_pair_for_two_blocks_sides_swapped(tmp_path):
    """harness.plan.duet.unit_lanes (run_duet's lanes): blocks 1-2 of an experiment share a
    twin pair, side A on the first twin in block 1 and on the second in block 2; blocks
    3-4 take the next pair (each experiment starting one pair further); a lone cell runs
    on its block's lane, not at once."""
    t = topo("192em64t-12gr2n8c2t")
    lock = builds.load_lock(paths.LOCK)
    r = config.resolve(paper("", "duet"), paths.LOCK, topo=t)
    lanes = estimate.estimate(r, lock, bench_dir=str(tmp_path / "b"), raw=str(tmp_path / "r"), topo=t)["lanes_obj"]
    exps = list(r["experiments"])
    exp = "point_select"

    def cores_of(cell):
        return int(plan_cells.parse_cell(r, exp, cell).get("cores") or 1)

    def pair_of(rep, cores=None):   # a pair of block `rep` (on `cores` cores if given)
        unit = next(u for u in duet.units(r, exp, blocks.order(r, lock, exp, rep))
                    if len(u) == 2 and cores in (None, cores_of(u[0])))
        return duet.sides(r, exp, unit), cores_of(unit[0])

    unit, cores = pair_of(1)
    w = lanes.width(cores)
    pairs, spans = L.twins(lanes, w), lanes.spans(w)
    assert len(pairs) >= 2   # so blocks 1-2 and 3-4 take different pairs
    k = exps.index(exp)

    def ids(pair):
        return spans[pair[0]][0].id, spans[pair[1]][0].id

    got = []
    for rep in (1, 2, 3):
        u, c = pair_of(rep, cores)
        per, at_once, held = duet.unit_lanes(r, lanes, exps, exp, u, rep, c)
        assert at_once and held == sorted(per[0]["lanes"] + per[1]["lanes"])
        assert not set(per[0]["lanes"]) & set(per[1]["lanes"])   # the two sides on disjoint lanes
        got.append((per[0]["id"], per[1]["id"]))
    one, two = pairs[k % len(pairs)], pairs[(k + 1) % len(pairs)]
    assert got == [ids(one), ids(one)[::-1], ids(two)]
    # the unit's cells in the other order: the same lanes for the same sides
    per, _, _ = duet.unit_lanes(r, lanes, exps, exp, unit[::-1], 1, cores)
    assert (per[1]["id"], per[0]["id"]) == ids(one)
    # a lone cell: its block's lane (round robin over the lanes), not at once
    per, at_once, held = duet.unit_lanes(r, lanes, exps, exp, unit[:1], 2, cores)
    assert not at_once and per[0]["id"] == L.block_lane(exps, exp, 2, lanes.count) and held == per[0]["lanes"]
