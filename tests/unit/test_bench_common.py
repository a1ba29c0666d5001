"""bench/common.py per_start: the benches' intervals take the server start, not the
window, as the unit. Pure statistics on generated values (no server)."""
from __future__ import annotations

import importlib.util
import math
import random

import pytest
from conftest import ROOT


def _common():
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "bench" / "common.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _units(rng, starts, windows, between, within, effect=1.0):
    """Per start: its windows' (a, b); the start draws one level shared by its windows."""
    out = {}
    for s in range(starts):
        level = effect * math.exp(rng.gauss(0, between))
        out[s] = [(1000 * level * math.exp(rng.gauss(0, within)), 1000.0) for _ in range(windows)]
    return out


def test_the_interval_is_over_starts_and_wider_than_one_over_windows():
    common = _common()
    from harness.analysis import intervals
    rng = random.Random(7)
    units = _units(rng, starts=8, windows=16, between=0.05, within=0.01)
    ci, comp = common.per_start(units)
    assert ci.n == 8 and comp["units"] == 8 and comp["windows"] == 128
    pairs = [ab for v in units.values() for ab in v]
    naive = intervals.sign_interval([a for a, _ in pairs], [b for _, b in pairs])
    # the 128 windows as if independent: far narrower than what 8 starts can say
    assert math.log(ci.hi / ci.lo) > 2 * math.log(naive.hi / naive.lo), (ci, naive)
    # the components find the two scatters it was given
    assert 0.007 < comp["within_sd"] < 0.013, comp
    assert 0.02 < comp["between_sd"] < 0.09, comp


def test_over_starts_the_stated_coverage_holds_and_over_windows_it_does_not():
    """No effect, starts that differ by 5 %: how often each interval misses the truth (1)."""
    common = _common()
    from harness.analysis import intervals
    rng = random.Random(5)
    runs, missed_starts, missed_windows = 200, 0, 0
    for _ in range(runs):
        units = _units(rng, starts=8, windows=16, between=0.05, within=0.01)
        ci, _ = common.per_start(units)
        pairs = [ab for v in units.values() for ab in v]
        naive = intervals.sign_interval([a for a, _ in pairs], [b for _, b in pairs])
        missed_starts += not ci.lo <= 1.0 <= ci.hi
        missed_windows += not naive.lo <= 1.0 <= naive.hi
    assert missed_starts / runs <= 0.15, missed_starts  # stated ~92 %: misses ~8 %
    assert missed_windows / runs >= 0.5, missed_windows  # stated ~91 %: misses most of the time


def test_no_between_start_scatter_is_reported_as_about_none():
    common = _common()
    rng = random.Random(3)
    ci, comp = common.per_start(_units(rng, starts=10, windows=8, between=0.0, within=0.03))
    assert comp["between_sd"] < 0.015, comp
    assert ci.lo < 1.0 < ci.hi


def test_a_shifted_ratio_is_found_over_enough_starts():
    common = _common()
    rng = random.Random(11)
    ci, _ = common.per_start(_units(rng, starts=12, windows=4, between=0.01, within=0.01, effect=0.9))
    assert ci.hi < 0.95 and ci.lo > 0.85, ci


@pytest.mark.parametrize("starts", [1, 5])
def test_fewer_than_six_starts_give_no_interval(starts):
    common = _common()
    ci, comp = common.per_start(_units(random.Random(1), starts=starts, windows=5, between=0.02, within=0.02))
    assert ci is None and comp["units"] == starts
    line = common.per_start_text(ci, comp)
    assert "too few starts" in line
    assert ("between starts beyond it n/a" in line) == (starts == 1), line


def test_the_line_names_the_unit_coverage_and_scatters():
    common = _common()
    ci, comp = common.per_start(_units(random.Random(2), starts=7, windows=3, between=0.02, within=0.02))
    line = common.per_start_text(ci, comp, "QPS")
    assert line.startswith("QPS over 7 server starts: ")
    assert f"{ci.coverage:.1%} exact signed-rank interval over starts" in line
    assert "within a start" in line and "between starts" in line


def test_one_window_per_start_cannot_separate_the_scatters():
    common = _common()
    ci, comp = common.per_start(_units(random.Random(4), starts=8, windows=1, between=0.03, within=0.03))
    assert ci.n == 8 and comp["between_sd"] != comp["between_sd"]  # nan: not separable
    assert "between starts beyond it n/a" in common.per_start_text(ci, comp)
