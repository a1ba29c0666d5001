"""bench/variance_components.py's estimator on synthetic data with known components
(fixed seeds): pure statistics, no server (the bench itself measures real servers)."""
from __future__ import annotations

import importlib.util
import math
import statistics
import random
import sys

import pytest
from conftest import ROOT


def _vc():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_variance_components", ROOT / "bench" / "variance_components.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


VC = _vc()
BLOCK, START, WINDOW = 0.05, 0.03, 0.02   # sds of log QPS
POSITION = [0.04, 0.01, 0.0, 0.0]         # window k's offset (a warm-up transient)


def _ar1(rng: random.Random, n: int, rho: float, sd: float) -> list[float]:
    """A stationary AR(1) series of n points with marginal sd `sd`."""
    x = [rng.gauss(0, sd)]
    e = sd * math.sqrt(1 - rho * rho)
    while len(x) < n:
        x.append(rho * x[-1] + rng.gauss(0, e))
    return x


def _design(seed: int, blocks: int, starts: int, secs: int = 0, rho: float = 0.0, sd: float = 0.0):
    """y[b][s][k] = log QPS of a window; with secs, also each window's 1 s series."""
    rng = random.Random(seed)
    y, series = [], []
    for _ in range(blocks):
        bb = rng.gauss(0, BLOCK)
        y.append([])
        series.append([])
        for _ in range(starts):
            ss = rng.gauss(0, START)
            row, srow = [], []
            for p in POSITION:
                level = 9.0 + bb + ss + rng.gauss(0, WINDOW) + p
                if secs:
                    xs = [level + v for v in _ar1(rng, secs, rho, sd)]
                    srow.append([math.exp(v) for v in xs])
                    level = sum(xs) / secs
                row.append(level)
            y[-1].append(row)
            series[-1].append(srow)
    return y, series


def test_nested_recovers_each_component_and_the_positions():
    y, _ = _design(seed=3, blocks=300, starts=4)
    n = VC.nested(y)
    for key, sd in (("window", WINDOW), ("start", START), ("block", BLOCK)):
        assert math.sqrt(max(0.0, n[key]["est"])) == pytest.approx(sd, rel=0.15), key
    assert n["position"] == pytest.approx([p - POSITION[-1] for p in POSITION], abs=0.004)


def test_within_recovers_the_scatter_and_the_autocorrelation():
    rng = random.Random(5)
    ws = [[math.exp(v) for v in _ar1(rng, 30, 0.5, 0.06)] for _ in range(600)]
    w = VC.within(ws)
    # about each window's own mean: E[s2] ~= sd^2 (1 - (1 + rho)/((1 - rho) T)) for this AR(1)
    assert math.sqrt(w["s2"]) == pytest.approx(0.06 * math.sqrt(1 - 3 / 30), rel=0.06)
    assert w["rho_raw"] < 0.47  # the raw estimate is biased low by the window's mean
    assert w["rho"] == pytest.approx(0.5, abs=0.05)


def test_window_component_is_left_after_the_within_scatter():
    """From 1 s series: the windows' residual minus s2_within / n_eff(T) is s2_window."""
    y, series = _design(seed=11, blocks=200, starts=3, secs=20, rho=0.3, sd=0.08)
    w = VC.within([x for blk in series for st in blk for x in st])
    vm = w["s2"] / VC.n_eff(20, w["rho"])
    n = VC.nested(y, vm)
    assert vm > WINDOW ** 2  # the within part dominates: not subtracting it would fail below
    assert math.sqrt(max(0.0, n["window"]["est"])) == pytest.approx(WINDOW, rel=0.3)
    assert math.sqrt(max(0.0, n["start"]["est"])) == pytest.approx(START, rel=0.2)


def test_satterthwaite_interval_covers_the_truth_at_its_nominal_rate():
    hits = 0
    for seed in range(60):
        y, _ = _design(seed=100 + seed, blocks=8, starts=3)
        lo, hi, _ = VC.satterthwaite(VC.nested(y)["window"], level=0.9)
        hits += lo <= WINDOW ** 2 <= hi
    assert 48 <= hits <= 60  # 90 % nominal: 54 expected of 60


def test_chi2_quantiles_and_the_optimal_window():
    assert VC.chi2_quantile(0.95, 1) == pytest.approx(3.8415, abs=1e-3)
    assert VC.chi2_quantile(0.05, 10) == pytest.approx(3.9403, abs=1e-3)
    c, w, a, b = 4.0, 3.0, 0.004, 0.0005
    best = min(range(1, 200), key=lambda t: VC.relative_cost(t, w, c, a, b))
    assert VC.optimal_window(c + w, a, b, 600) == pytest.approx(best, abs=1)


def _starts(seed: int, pairs: int, slow_s: int, slow: float, sd: float = 0.01):
    """A run of `pairs` start pairs (2 blocks): every start's warm-up run (30 s) and window 1
    (60 s) per second, then windows 2-3 (their means only); InnoDB's first `slow_s` seconds
    run `slow` below its level (a warm-up transient the short cells must see)."""
    rng = random.Random(seed)
    data = {}
    for i in range(pairs):
        b, s = 1 + i % 2, 1 + i // 2
        for e, level in (("InnoDB", 1.0), ("MyISAM", 1.25)):
            secs = [level * math.exp(rng.gauss(0, sd)) * ((1 - slow) if e == "InnoDB" and k < slow_s else 1.0)
                    for k in range(90)]
            data[(b, s, e)] = {"seconds": {0: secs[:30], 1: secs[30:]},
                               "qps": {0: statistics.fmean(secs[:30]), 1: statistics.fmean(secs[30:]),
                                       2: level, 3: level}}
    return {"data": data}


def test_shorter_cells_see_a_warm_up_transient_and_choose_a_cell_after_it():
    sc = {"warmup_s": 30, "duration_s": 60}
    m = {"a": 1e-4, "b": 1e-4, "b_lo": 5e-5, "b_hi": 2e-4}
    rows = {(r["w"], r["t"]): r for r in VC.shorter_cells(sc, _starts(1, 8, 12, 0.5), 3, m, c=2.0)}
    assert not rows[(5, 10)]["eligible"] and rows[(5, 10)]["bias"][2] < -0.03   # inside the transient
    assert rows[(15, 15)]["bias"][1] > -0.03 and rows[(15, 15)]["eligible"]     # after it
    best = VC.print_shorter(sc, list(rows.values()), 2.0)
    assert best["w"] >= 15 and best["saves"][1] >= 1.15


def test_no_shorter_cell_without_enough_start_pairs_or_when_every_one_is_biased():
    sc = {"warmup_s": 30, "duration_s": 60}
    m = {"a": 1e-4, "b": 1e-4, "b_lo": 5e-5, "b_hi": 2e-4}
    few = VC.shorter_cells(sc, _starts(2, 4, 0, 0.0), 3, m, c=2.0)
    assert few and not any(r["eligible"] for r in few)          # 4 pairs: no interval, nothing chosen
    slow = VC.shorter_cells(sc, _starts(3, 8, 90, 0.2), 3, m, c=2.0)
    assert not any(r["eligible"] for r in slow)                 # biased throughout against the later windows
    assert VC.print_shorter(sc, slow, 2.0) is None


def test_the_tsv_keeps_what_it_measured_and_on_what_shape(tmp_path):
    """--tsv then --from-tsv: the same per-second and per-window figures, and the cell's shape
    (mysqld's cores, the users), so a file measured on a many-core host is re-analysed as such."""
    run = {**_starts(4, 6, 12, 0.3), "load": [0.5, 1.5], "lock_wait_s": 3.0, "shape": {"cores": 16, "users": 128}}
    for v in run["data"].values():  # as measured: every window has its seconds, every start its phases
        v["seconds"].update({k: [q] * 60 for k, q in v["qps"].items() if k not in v["seconds"]})
        v.setdefault("phases", {"copy_s": 0.3, "start_s": 0.6})
    VC.write_tsv(tmp_path / "vc.tsv", {"paper": run})
    back = VC.read_tsv(tmp_path / "vc.tsv")["paper"]
    assert back["shape"] == {"cores": 16, "users": 128} and back["load"] == [0.5, 1.5]
    assert back["lock_wait_s"] == 3.0 and back["data"].keys() == run["data"].keys()
    for key, v in run["data"].items():
        assert back["data"][key]["qps"] == pytest.approx(v["qps"])
        assert back["data"][key]["seconds"] == {k: pytest.approx(x) for k, x in v["seconds"].items()}
        assert back["data"][key]["phases"] == v["phases"]
