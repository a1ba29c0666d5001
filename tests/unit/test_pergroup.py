"""bench/pergroup.py: the per-group ratio interval the verdicts used before paired blocks
(bench/verdict_power.py's old-median-product arm), and its verdicts that noise cannot reach.

The invariant: REPRODUCED implies the whole interval lies on the published
side (and NOT_REPRODUCED on the other side), at the requested coverage.
"""
import math
import random
import sys

import pytest
from conftest import ROOT

from harness.analysis import stats
from harness.analysis.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, SIDES

sys.path.insert(0, str(ROOT / "bench"))
import pergroup  # noqa: E402
from pergroup import RatioCI, decide, ratio_interval  # noqa: E402


def ci(lo, hi, point=None, coverage=0.96, n_a=7, n_b=7, level=0.95):
    """A hand-made interval for the edge cases of decide()."""
    point = (lo + hi) / 2 if point is None else point
    return RatioCI(lo, hi, point, coverage, pergroup.METHOD, n_a, n_b, level)


# -- ratio_interval ------------------------------------------------------------

def test_ratio_interval_of_three_each_is_min_max_with_its_coverage():
    r = ratio_interval([110, 100, 120], [55, 60, 50])
    assert (r.lo, r.hi, r.point) == pytest.approx((100 / 60, 120 / 50, 2.0))
    assert r.coverage == pytest.approx(0.75 * 0.75)       # [min, max] of 3 covers 75% each
    assert (r.n_a, r.n_b, r.level) == (3, 3, 0.95)
    assert "order-statistic" in r.method


def test_ratio_interval_uses_sqrt_level_per_side_where_n_allows():
    # n=10: [x2, x9] has coverage 1 - 2*11/1024 = 0.9785 >= sqrt(0.95) = 0.9747; [x3, x8] 0.8906 does not
    a = [float(k) for k in range(1, 11)]
    b = [10.0 * k for k in range(1, 11)]
    r = ratio_interval(a, b)
    assert (r.lo, r.hi) == pytest.approx((2 / 90, 9 / 20))
    assert r.coverage == pytest.approx((1 - 2 * 11 / 1024) ** 2)
    assert r.coverage >= 0.95


@pytest.mark.parametrize("n_a,n_b,enough", [(7, 7, True), (6, 7, True), (6, 6, False), (5, 20, False),
                                            (3, 3, False)])
def test_ratio_interval_coverage_is_the_product_of_the_sides(n_a, n_b, enough):
    r = ratio_interval(range(1, n_a + 1), range(1, n_b + 1))
    cov = stats.median_ci(range(n_a), math.sqrt(0.95))[2] * stats.median_ci(range(n_b), math.sqrt(0.95))[2]
    assert r.coverage == pytest.approx(cov)
    assert (r.coverage >= 0.95) is enough


def test_ratio_interval_of_one_value_each_is_a_point_of_no_coverage():
    r = ratio_interval([300.0], [100.0])
    assert (r.lo, r.hi, r.point, r.coverage) == (3.0, 3.0, 3.0, 0.0)


@pytest.mark.parametrize("a,b,match", [
    ([0.0, 1.0], [1.0, 2.0], "group A .* positive"),
    ([1.0, 2.0], [0.0, 0.0], "group B .* positive"),
    ([-5.0, -4.0], [1.0, 2.0], "group A .* positive"),
    ([1.0, float("nan")], [1.0, 2.0], "group A .* positive"),
    ([1.0, 2.0], [float("inf"), 2.0], "group B .* positive"),
    ([], [1.0], "group A has no values"),
])
def test_ratio_interval_refuses_what_is_not_a_positive_measurement(a, b, match):
    with pytest.raises(ValueError, match=match):
        ratio_interval(a, b)


def test_ratio_interval_refuses_a_level_outside_0_1():
    with pytest.raises(ValueError, match="level"):
        ratio_interval([1, 2], [1, 2], level=95)


@pytest.mark.parametrize("level,n", [(0.95, 7), (0.80, 5), (0.5, 3), (0.99, 9)])
def test_reps_needed(level, n):
    # smallest n with 1 - 2 * 0.5**n >= sqrt(level): 0.95 -> 0.9747: n=6 gives 0.96875, n=7 0.984
    assert pergroup.reps_needed(level) == n
    assert stats.order_coverage(n, 1) >= math.sqrt(level) > stats.order_coverage(n - 1, 1)


def test_ratio_interval_covers_at_least_what_it_reports():
    """Different shapes on each side (exponential vs uniform), medians known:
    the true ratio lies in the interval at least as often as reported."""
    rng = random.Random(7)
    true_ratio = math.log(2) / 10.0            # median Exp(1) / median U(5, 15)
    for n_a, n_b in [(3, 3), (5, 4), (7, 7), (12, 9)]:
        draws, hits = 4000, 0
        for _ in range(draws):
            r = ratio_interval([rng.expovariate(1.0) for _ in range(n_a)],
                               [rng.uniform(5, 15) for _ in range(n_b)])
            hits += r.lo <= true_ratio <= r.hi
        # 3 binomial sd below the bound would still be failing coverage: allow 0.02
        assert hits / draws >= r.coverage - 0.02, (n_a, n_b, hits / draws, r.coverage)


# -- decide: edge cases --------------------------------------------------------

def test_decide_whole_interval_above_reproduces():
    v, why = decide(ci(1.2, 1.5, point=1.3), 1.0, "above")
    assert v == REPRODUCED
    assert "1.3" in why and "[1.2, 1.5]" in why and "96.0%" in why


def test_decide_interval_touching_the_threshold_is_inconclusive():
    v, why = decide(ci(1.0, 1.5), 1.0, "above")
    assert v == INCONCLUSIVE
    assert "straddles" in why and "[1, 1.5]" in why and "do not tell which side" in why
    assert decide(ci(0.5, 1.0), 1.0, "below")[0] == INCONCLUSIVE


def test_decide_whole_interval_on_the_other_side_is_not_reproduced():
    assert decide(ci(0.7, 0.9), 1.0, "above")[0] == NOT_REPRODUCED
    assert decide(ci(0.7, 1.0), 1.0, "above")[0] == NOT_REPRODUCED   # all of it <= 1: not above
    assert decide(ci(1.1, 1.4), 1.0, "below")[0] == NOT_REPRODUCED
    assert decide(ci(1.0, 1.4), 1.0, "below")[0] == NOT_REPRODUCED


def test_decide_straddling_is_inconclusive_with_the_interval_coverage_and_reps():
    v, why = decide(ci(0.9, 1.3, point=1.1, coverage=0.9229, n_a=5, n_b=7), 1.0, "above")
    assert v == INCONCLUSIVE
    assert "straddles" in why and "[0.9, 1.3]" in why and "92.3%" in why and "n = 5 vs 7" in why
    assert "7 repetitions per side" in why
    v, why = decide(ci(0.9, 1.3, point=1.1, coverage=0.9536, n_a=6, n_b=7), 1.0, "above")
    assert v == INCONCLUSIVE
    assert "95.4%" in why and "do not tell which side" in why


@pytest.mark.parametrize("lo,hi,expected", [
    (1.0, 1.1, REPRODUCED), (1.02, 1.15, REPRODUCED), (0.98, 1.1, INCONCLUSIVE),
    (1.1, 1.25, INCONCLUSIVE), (0.8, 0.99, NOT_REPRODUCED), (1.16, 1.4, NOT_REPRODUCED),
    (0.8, 1.4, INCONCLUSIVE)])
def test_decide_within_a_band(lo, hi, expected):
    v, why = decide(ci(lo, hi), 1.0, "within", threshold_hi=1.15)
    assert v == expected, why


def test_decide_below_coverage_is_inconclusive_even_when_clear_of_the_threshold():
    # 3 vs 3 repetitions: the interval is [min, max]-based, 56% coverage
    r = ratio_interval([300, 310, 320], [100, 105, 110])
    assert r.lo > 2.5
    v, why = decide(r, 1.0, "above")
    assert v == INCONCLUSIVE
    assert "entirely above 1" in why and "coverage is below 95%" in why and "56.2%" in why
    assert "7 repetitions per side" in why


@pytest.mark.parametrize("a,b", [([300.0], [100.0, 110.0]), ([300.0, 310.0], [100.0]), ([1.0], [1.0])])
def test_decide_one_repetition_is_inconclusive(a, b):
    v, why = decide(ratio_interval(a, b, level=0.5), 1.0, "above")
    assert v == INCONCLUSIVE
    assert why.startswith("one repetition: spread unknown")


def test_decide_two_repetitions_each_is_inconclusive():
    v, why = decide(ratio_interval([300.0, 301.0], [100.0, 101.0]), 1.0, "above")
    assert v == INCONCLUSIVE and "25.0% coverage" in why


def test_decide_equal_values_are_neither_above_nor_below():
    r = ratio_interval([100.0] * 7, [100.0] * 7)
    assert (r.lo, r.hi, r.point) == (1.0, 1.0, 1.0)
    assert decide(r, 1.0, "above")[0] == NOT_REPRODUCED
    assert decide(r, 1.0, "below")[0] == NOT_REPRODUCED
    assert decide(r, 0.95, "within", threshold_hi=1.05)[0] == REPRODUCED


def test_decide_a_clear_effect_with_enough_repetitions_reproduces():
    rng = random.Random(3)
    a = [2000 * rng.uniform(0.97, 1.03) for _ in range(7)]
    b = [1000 * rng.uniform(0.97, 1.03) for _ in range(7)]
    r = ratio_interval(a, b)
    assert decide(r, 1.5, "above")[0] == REPRODUCED
    assert decide(r, 1.5, "below")[0] == NOT_REPRODUCED
    assert decide(ratio_interval(b, a), 0.6, "below")[0] == REPRODUCED


@pytest.mark.parametrize("args,match", [
    ((1.0, "over"), "side 'over'"),
    ((1.0, "within"), "threshold_hi"),
    ((1.2, "within", 1.0), "threshold < threshold_hi"),
    ((1.0, "above", 2.0), "only for side 'within'"),
    ((float("nan"), "above"), "finite"),
])
def test_decide_refuses_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        decide(ci(1.0, 2.0), *args)


def test_decide_refuses_a_point_outside_its_interval():
    with pytest.raises(ValueError, match="outside its interval"):
        decide(ci(1.0, 2.0, point=3.0), 1.0, "above")


# -- decide: randomized properties --------------------------------------------

def _entirely(lo, hi, threshold, side, threshold_hi):
    """(on the published side, on the other side), written out independently of decide()."""
    if side == "above":
        return lo > threshold, hi <= threshold
    if side == "below":
        return hi < threshold, lo >= threshold
    return threshold <= lo and hi <= threshold_hi, hi < threshold or lo > threshold_hi


def test_invariant_on_random_groups():
    rng = random.Random(20240611)
    seen = {REPRODUCED: 0, NOT_REPRODUCED: 0, INCONCLUSIVE: 0}
    for _ in range(4000):
        level = rng.choice([0.5, 0.8, 0.9, 0.95])
        n_a, n_b = rng.randint(1, 12), rng.randint(1, 12)
        mu_a, mu_b, sd = rng.uniform(5, 10), rng.uniform(5, 10), rng.uniform(0.001, 0.5)
        r = ratio_interval([math.exp(rng.gauss(mu_a, sd)) for _ in range(n_a)],
                           [math.exp(rng.gauss(mu_b, sd)) for _ in range(n_b)], level=level)
        assert r.lo <= r.point <= r.hi
        side = rng.choice(SIDES)
        t = r.point * math.exp(rng.gauss(0, 0.3))
        hi = t * rng.uniform(1.01, 1.5) if side == "within" else None
        v, why = decide(r, t, side, hi)
        seen[v] += 1
        on, other = _entirely(r.lo, r.hi, t, side, hi)
        if v == REPRODUCED:
            assert on and r.coverage >= level and min(n_a, n_b) >= 2, why
        elif v == NOT_REPRODUCED:
            assert other and r.coverage >= level and min(n_a, n_b) >= 2, why
        else:
            assert v == INCONCLUSIVE, why
            if min(n_a, n_b) >= 2 and r.coverage >= level:
                assert not on and not other, why            # inconclusive only for a straddle then
    assert all(seen.values()), seen                         # every verdict was exercised


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 10])
def test_same_distribution_essentially_never_reproduces_a_win(n):
    """A and B from the same distribution, claim 'A beats B' (ratio above 1):
    reproduced is a false positive; its rate must stay below the nominal
    one-sided error 2.5%. (Without the coverage gate, [min, max] of 2 vs 2
    would say 'reproduced' in 1 draw of 6.)"""
    rng = random.Random(n)
    draws, false = 3000, 0
    for _ in range(draws):
        shape = rng.choice(["lognormal", "exponential", "uniform"])
        if shape == "lognormal":
            draw = lambda: math.exp(rng.gauss(10, 0.05))   # noqa: E731
        elif shape == "exponential":
            draw = lambda: 1000 + rng.expovariate(0.01)   # noqa: E731
        else:
            draw = lambda: rng.uniform(900, 1100)         # noqa: E731
        r = ratio_interval([draw() for _ in range(n)], [draw() for _ in range(n)])
        false += decide(r, 1.0, "above")[0] == REPRODUCED
    assert false / draws < 0.025, false
