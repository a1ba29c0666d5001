"""The plan's odds (harness.analysis.power, harness.plan.odds) and the expected time that
counts the looks (issue 51): the model's figures move the right way, a true 1.00 is rarely
called reproduced, the bench gets the same figures from the same model, and the expected
time lies between the first-look floor and the worst case on recorded topologies."""
from __future__ import annotations

import importlib.util
import math
import re
import sys

import pytest

from conftest import ROOT

from harness.analysis import power
from harness.measure.topology import Topology
from harness.plan import plancmd, estimate, odds as O

ABOVE = ("above", 1.0, None)
HWLOC = ROOT / "tests" / "fixtures" / "topology" / "hwloc"


def test_power_grows_with_the_effect_and_the_blocks():
    for shape, loads in (("plain", 1), ("peak", 4)):
        p = [power.odds(shape, ABOVE, r, 0.05, (6, 12, 2), 20, loads, trials=300).reproduced for r in (1.02, 1.05, 1.10, 1.20)]
        assert p == sorted(p) and p[-1] > p[0] + 0.3, (shape, p)
        more = power.odds(shape, ABOVE, 1.05, 0.05, (6, 24, 2), 20, loads, trials=300).reproduced
        assert more > p[1], (shape, p[1], more)


@pytest.mark.parametrize("shape,loads", [("plain", 1), ("peak", 4), ("scaling", 2)])
def test_a_true_one_is_rarely_reproduced(shape, loads):
    """At a true 1.00 'above 1' is a false verdict: at most the rule's one-sided rate
    (1 - level)/2 = 0.05, plus three standard errors of the trials."""
    n = 300
    o = power.odds(shape, ABOVE, 1.0, 0.05, (6, 12, 2), 20, loads, trials=n)
    assert o.reproduced <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n), o


def test_decided_is_cumulative_over_the_looks():
    o = power.odds("plain", ABOVE, 1.05, 0.05, (6, 24, 3), 20, trials=200)
    assert len(o.decided) == 3 and list(o.decided) == sorted(o.decided)
    assert o.decided[-1] == pytest.approx(o.reproduced + o.not_reproduced)


def test_the_bench_gets_the_same_figures_from_the_same_model():
    """bench/verdict_power.py's peak-sharp-sharp arm (its own trial loop) and the plan's odds
    of a sharp peak over 4 loads agree within simulation error."""
    spec = importlib.util.spec_from_file_location("verdict_power", ROOT / "bench" / "verdict_power.py")
    vp = importlib.util.module_from_spec(spec)
    sys.modules["verdict_power"] = vp
    spec.loader.exec_module(vp)
    assert vp.draw is power.draw and vp.Design is power.Design
    n, s = 300, ("default", 6, 12, 2, 20)
    _, counts, _ = vp.run_cell((("sharp", "sharp"), 0.05, 0.05, 1.10, n, 7, [(s, vp.ONE)], (0.9,), ()))
    key = next(k for k in counts if k[0][1].startswith("signed-rank"))
    bench = counts[key][0] / n
    mine = power.odds("peak", ABOVE, 1.10, 0.05, (6, 12, 2), 20, 4, trials=n, seed=3).reproduced
    se = math.sqrt(max(bench * (1 - bench), 0.01) * 2 / n)
    assert abs(bench - mine) <= 4 * se, (bench, mine)


def test_expected_with_looks_lies_between_floor_and_worst():
    from harness import builds
    from harness.plan import config
    cfg = estimate.load_profile([str(ROOT / "config" / "paper.yaml")], ROOT, cpus=list(range(8)))
    from harness import paths
    lock = builds.load_lock(paths.LOCK)
    est = estimate.estimate(cfg, lock, root=str(ROOT / "tests"), topo=config.topology(list(range(8))), offers=False)
    on = {r["experiment"]: [1.0] * (len(r["looks"]) - 1) for r in est["rows"]}
    off = {e: [0.0] * len(v) for e, v in on.items()}
    half = {e: [0.5] * len(v) for e, v in on.items()}
    assert estimate.expected_with_looks(est, off) == pytest.approx(est["total_s"], rel=1e-6)
    assert estimate.expected_with_looks(est, on) == pytest.approx(est["worst_s"], rel=1e-6)
    assert est["total_s"] < estimate.expected_with_looks(est, half) < est["worst_s"]


@pytest.mark.parametrize("xml", ["32em64t-2n8c2t-pci-noio.xml", "192em64t-12gr2n8c2t.xml"])
def test_plan_prints_odds_and_three_times_on_recorded_topologies(xml):
    cfg = estimate.paths.defaults(ROOT / "config")
    from harness.plan import config
    import yaml
    config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / "paper.yaml").read_text()))
    p = plancmd.build(cfg, Topology.from_hwloc(str(HWLOC / xml)), root=str(ROOT / "tests"))
    out = plancmd.render(p)
    assert "claims' odds" in out and "the profile's stats.cv_threshold" in out
    rows = [r for r in p["odds"]["claims"] if r["shape"]]
    assert rows and all(0 <= a <= b <= 1 for r in rows for a, b in zip(r["decided"], r["decided"][1:]))
    est = p["estimate"]
    assert est["wall_s"] <= est["wall_looks_s"] <= est["wall_worst_s"] * (1 + 1e-9)
    assert est["total_s"] <= est["total_looks_s"] <= est["worst_s"] * (1 + 1e-9)
    m = re.search(r"^wall time on these lanes: floor (\S+) .*expected with looks (\S+) .*worst case (\S+)", out, re.M)
    assert m, out[-2000:]


def test_the_noise_is_this_hosts_where_cells_were_measured(tmp_path):
    cfg = {"stats": {"cv_threshold": 0.05}}
    assert O.noise(cfg, str(tmp_path))[0] == 0.05
    (tmp_path / "aa_throughput_summary.csv").write_text("cell,qps_server_cv\na,0.02\nb,0.04\nc,0.03\n")
    cov, src = O.noise(cfg, str(tmp_path))
    assert cov == pytest.approx(0.03) and "A/A" in src


def _no_truth_claim():
    """A declared claim with a ratio rule and no published figure (a direction or a bound)."""
    from harness import registry
    return next(c for c in registry.claims()
                if getattr(c, "rule", None) is not None and getattr(c, "published_ratio", None) is None
                and c.experiments)


def test_a_rule_without_a_published_figure_is_not_decided_at_its_first_look():
    """No truth to simulate: its power is unknown, and its interval must still clear the
    rule's bound, so the expected time runs every look of its experiment (issue 51: it was
    counted as decided at its first look, the expected time as if it never went on)."""
    c = _no_truth_claim()
    cfg = {"experiments": {c.experiments[0]: {"repetitions": {"min": 6, "max": 24, "looks": 3}}},
           "claims": {"decide": True, "level": 0.9}}
    o = O.claim_odds(c, cfg, {}, 0.05)
    assert o["decided"][:-1] == [0.0, 0.0], o
    assert O.go_on([o]) == {c.experiments[0]: [1.0, 1.0]}
    assert o["power"] is None and "power unknown" in o["why"] and o["rule"], o
    assert any(o["why"] in line for line in O.render({"trials": 1, "cov": 0.05, "source": "s", "drift": 0.05,
                                                       "claims": [o]}))


def test_a_plan_made_from_any_folder_reads_the_clones_noise(tmp_path, monkeypatch, capsys):
    """`python -m harness plan` reads the odds' noise from the clone's data/tidy
    (paths.TIDY), passed to coreplan.build explicitly: the same CoV from the clone's folder
    and from another one (it read ./data/tidy of the folder it was run from)."""
    import json
    from harness import cli, paths
    tidy = tmp_path / "clone-tidy"
    tidy.mkdir()
    (tidy / "aa_throughput_summary.csv").write_text("cell,qps_server_cv\na,0.02\nb,0.04\nc,0.03\n")
    monkeypatch.setattr(paths, "TIDY", tidy)
    args = ["plan", "--json", "--no-estimate", "--topology", str(HWLOC / "32em64t-2n8c2t-pci-noio.xml"),
            "--configfile", str(ROOT / "config" / "smoke.yaml")]
    seen = []
    for here in (ROOT, tmp_path):
        monkeypatch.chdir(here)
        assert cli.main(args) == 0
        p = json.loads(capsys.readouterr().out)
        seen.append((p["odds"]["cov"], p["odds"]["source"]))
    assert seen[0] == seen[1] and seen[0][0] == pytest.approx(0.03) and str(tidy) in seen[0][1], seen


def _calls_a_block_difference(claim) -> bool:
    """Whether `claim`'s verdict reads a per-block difference's interval: its evaluate, its
    check function, or a function that one names in its own module, calls judge_difference
    (or study B's _decide_difference, which wraps the same)."""
    import inspect
    fns = [type(claim).evaluate]
    fn = getattr(claim, "fn", None)
    if fn is not None:
        fns.append(fn)
        fns += [fn.__globals__[n] for n in fn.__code__.co_names if inspect.isfunction(fn.__globals__.get(n))]
    return any(re.search(r"\b_?(judge|decide)_difference\(", inspect.getsource(f)) for f in fns)


def test_a_check_judged_on_the_blocks_counts_undecided_until_its_last_look():
    """A claim without a ratio rule whose verdict is a per-block difference's interval (a
    WaitShareDrop, B2's readers, B3's lock waits) asks for more blocks while undecided, as a
    ratio claim does; the expected time counted it decided at its first look (issue 51). A
    check or ranking that never asks for more blocks still counts as decided there."""
    from harness import registry
    checks = [c for c in registry.claims() if getattr(c, "rule", None) is None and c.experiments]
    flagged = {c.id for c in checks if c.by_blocks}
    assert flagged == {c.id for c in checks if _calls_a_block_difference(c)}
    assert {"B2-MEMORY-readers-do-not-contend", "B3-MEMORY-table-lock-waits"} <= flagged
    cfg = lambda e: {"experiments": {e: {"repetitions": {"min": 6, "max": 24, "looks": 3}}},  # noqa: E731
                     "claims": {"decide": True, "level": 0.9}}
    for c in checks:
        o = O.claim_odds(c, cfg(c.experiments[0]), {}, 0.05)
        if c.by_blocks:
            assert o["decided"] == [0.0, 0.0, 1.0] and o["why"] == O.BY_BLOCKS and o["power"] is None, o
            assert O.go_on([o]) == {c.experiments[0]: [1.0, 1.0]}
        else:
            assert o["decided"] == [1.0, 1.0, 1.0] and o["why"].endswith(O.NOT_MODELLED), o
