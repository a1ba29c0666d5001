"""harness.analysis.intervals: exact rank intervals for ratios and the sequential verdict rule.

Critical values are checked against the published tables, every interval's
coverage against its level, and the rule against the invariant of
harness.analysis.verdict: REPRODUCED only with the whole interval on the published side
at coverage >= the level asked.
"""
import itertools
import math
import random

import pytest

from harness.analysis import intervals as I
from harness.analysis import stats
from harness.analysis.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

# Two-sided critical values of the Wilcoxon signed-rank statistic (reject when the
# smaller rank sum is <= c), from the standard tables (e.g. Conover, Practical
# Nonparametric Statistics, Table A12; the same in most textbooks). None: no test
# at that level with so few pairs.
WILCOXON = {
    0.10: {5: 0, 6: 2, 7: 3, 8: 5, 9: 8, 10: 10, 11: 13, 12: 17, 13: 21, 14: 25, 15: 30, 20: 60},
    0.05: {5: None, 6: 0, 7: 2, 8: 3, 9: 5, 10: 8, 11: 10, 12: 13, 13: 17, 14: 21, 15: 25, 20: 52},
    0.02: {6: None, 7: 0, 8: 1, 9: 3, 10: 5, 12: 9, 15: 19},
    0.01: {7: None, 8: 0, 9: 1, 10: 3, 12: 7, 15: 15},
}
# Two-sided critical values of the Mann-Whitney U (reject when U <= c).
MANN_WHITNEY = {
    0.05: {(3, 3): None, (3, 4): None, (3, 5): 0, (3, 8): 2, (4, 4): 0, (4, 5): 1, (4, 8): 4,
           (5, 5): 2, (5, 6): 3, (6, 6): 5, (6, 8): 8, (7, 7): 8, (8, 8): 13, (10, 10): 23},
    0.10: {(3, 3): 0, (4, 4): 1, (5, 5): 4, (6, 6): 7, (7, 7): 11, (8, 8): 15, (10, 10): 27},
}


@pytest.mark.parametrize("alpha,n,crit", [(a, n, c) for a, t in WILCOXON.items() for n, c in t.items()])
def test_signed_rank_critical_values_match_the_tables(alpha, n, crit):
    k, cov = I.critical_k("signed-rank", n, 1 - alpha)
    assert k - 1 == (-1 if crit is None else crit)
    if crit is None:
        assert cov == pytest.approx(1 - 2 / 2 ** n) and cov < 1 - alpha


@pytest.mark.parametrize("alpha,mn,crit", [(a, mn, c) for a, t in MANN_WHITNEY.items() for mn, c in t.items()])
def test_mann_whitney_critical_values_match_the_tables(alpha, mn, crit):
    assert I.critical_k("mann-whitney", mn, 1 - alpha)[0] - 1 == (-1 if crit is None else crit)
    assert I.critical_k("mann-whitney", mn[::-1], 1 - alpha)[0] - 1 == (-1 if crit is None else crit)


def test_null_counts_are_the_exact_distributions():
    for n in range(0, 16):
        c = I.signed_rank_counts(n)
        assert sum(c) == 2 ** n and len(c) == n * (n + 1) // 2 + 1 and c == c[::-1]
        # brute force: sums of all subsets of {1..n}
        if n <= 10:
            brute = [0] * len(c)
            for mask in range(2 ** n):
                brute[sum(r + 1 for r in range(n) if mask >> r & 1)] += 1
            assert list(c) == brute
        assert I.binomial_counts(n) == tuple(math.comb(n, j) for j in range(n + 1))
    for m, n in [(1, 1), (2, 3), (4, 4), (3, 7)]:
        c = I.mann_whitney_counts(m, n)
        assert sum(c) == math.comb(m + n, m) and len(c) == m * n + 1 and c == c[::-1]
        brute = [0] * len(c)   # U = number of (A, B) pairs with A ranked above B
        for pos in itertools.combinations(range(m + n), m):
            brute[sum(sum(1 for q in range(p) if q not in pos) for p in pos)] += 1
        assert list(c) == brute


def test_sign_critical_matches_the_order_statistics_of_harness_stats():
    for n in range(2, 40):
        for level in (0.8, 0.9, 0.95, 0.99):
            k, cov = I.critical_k("sign", n, level)
            j = stats.order_rank(n, level)
            if k:
                assert (k, cov) == (j, pytest.approx(stats.order_coverage(n, j)))
            else:
                assert stats.order_coverage(n, 1) < level


@pytest.mark.parametrize("kind,sizes", [("signed-rank", [(n,) for n in range(1, 30)]),
                                        ("sign", [(n,) for n in range(1, 40)]),
                                        ("mann-whitney", [(m, n) for m in range(1, 9) for n in range(1, 9)])])
def test_achieved_coverage_reaches_the_level_and_k_is_the_narrowest(kind, sizes):
    counts = {"signed-rank": I.signed_rank_counts, "sign": I.binomial_counts,
              "mann-whitney": I.mann_whitney_counts}[kind]
    for size in sizes:
        c = counts(*size)
        total = sum(c)
        for level in (0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995):
            k, cov = I.critical_k(kind, size, level)
            if k == 0:
                assert 1 - 2 * c[0] / total < level
                continue
            assert cov >= level
            assert cov == pytest.approx(1 - 2 * sum(c[:k]) / total)
            assert 2 * k <= len(c) - 1               # the k-th smallest is not above the k-th largest
            assert 1 - 2 * sum(c[:k + 1]) / total < level or 2 * (k + 1) > len(c) - 1


# -- intervals ------------------------------------------------------------------

def blocks_with_log_ratios(d, base=1000.0):
    return [base * math.exp(x) for x in d], [base] * len(d)


def test_paired_interval_is_the_kth_walsh_averages_and_the_hodges_lehmann_point():
    d = [0.05, 0.12, -0.02, 0.08, 0.10, 0.03]
    a, b = blocks_with_log_ratios(d)
    ci = I.paired_interval(a, b, 0.90)
    walsh = sorted((d[i] + d[j]) / 2 for i in range(6) for j in range(i, 6))
    assert len(walsh) == 21
    # n=6, two-sided 0.10: critical value 2 -> k = 3; coverage 1 - 2*P(T <= 2) = 1 - 2*3/64
    assert (math.log(ci.lo), math.log(ci.hi)) == pytest.approx((walsh[2], walsh[-3]))
    assert math.log(ci.point) == pytest.approx(walsh[10])
    assert ci.coverage == pytest.approx(1 - 6 / 64)
    assert (ci.level, ci.n) == (0.90, 6)
    assert "signed-rank" in ci.method and "Walsh" in ci.method


def test_walsh_averages_invert_the_signed_rank_test():
    """Tukey's identity behind the interval: T+(theta), the rank sum of the positive
    d - theta, is the number of Walsh averages above theta."""
    rng = random.Random(3)
    for _ in range(50):
        d = [rng.gauss(0.0, 1.0) for _ in range(rng.randint(2, 12))]
        theta = rng.gauss(0.0, 1.0)
        ranked = sorted(d, key=lambda x: abs(x - theta))
        t_plus = sum(r + 1 for r, x in enumerate(ranked) if x > theta)
        above = sum(1 for i in range(len(d)) for j in range(i, len(d)) if (d[i] + d[j]) / 2 > theta)
        assert t_plus == above


def test_sign_interval_is_order_statistics_of_the_log_ratios():
    d = [0.3, -0.1, 0.2, 0.5, 0.0, 0.1, 0.4, 0.25, 0.15, 0.35]
    ci = I.sign_interval(*blocks_with_log_ratios(d), level=0.95)
    s = sorted(d)
    # n=10 at 95%: P(Bin <= 1) = 11/1024 -> j = 2
    assert (math.log(ci.lo), math.log(ci.hi)) == pytest.approx((s[1], s[-2]))
    assert ci.coverage == pytest.approx(1 - 22 / 1024)
    assert "sign" in ci.method


def test_unpaired_interval_is_the_kth_pairwise_differences():
    la = [0.1, 0.3, 0.2, 0.5, 0.45, 0.35]
    lb = [0.0, -0.1, 0.15, 0.05, 0.12]
    ci = I.unpaired_interval([math.exp(x) for x in la], [math.exp(y) for y in lb], 0.90)
    diffs = sorted(x - y for x in la for y in lb)
    k, cov = I.critical_k("mann-whitney", (6, 5), 0.90)
    assert k == 6   # table: (5, 6) two-sided 0.10 critical value 5
    assert (math.log(ci.lo), math.log(ci.hi)) == pytest.approx((diffs[k - 1], diffs[-k]))
    assert math.log(ci.point) == pytest.approx((diffs[14] + diffs[15]) / 2)
    assert (ci.n, ci.coverage) == ((6, 5), cov)


def test_ratio_of_ratios_is_one_paired_interval_of_per_block_ratios():
    rng = random.Random(5)
    a1, b1, a2, b2 = ([rng.uniform(50, 150) for _ in range(9)] for _ in range(4))
    ci = I.ratio_of_ratios(a1, b1, a2, b2, 0.9)
    ref = I.paired_interval([x / y for x, y in zip(a1, b1)], [x / y for x, y in zip(a2, b2)], 0.9)
    assert ci[:5] == pytest.approx(ref[:5])
    assert ci.n == 9 and "ratios of ratios" in ci.method
    # a machine twice as fast in block 3 changes nothing
    a1[3], b1[3], a2[3], b2[3] = 2 * a1[3], 2 * b1[3], 2 * a2[3], 2 * b2[3]
    assert I.ratio_of_ratios(a1, b1, a2, b2, 0.9)[:4] == pytest.approx(ci[:4])


def test_too_few_blocks_give_the_widest_interval_with_its_true_coverage():
    a, b = blocks_with_log_ratios([0.4, 0.5, 0.6])
    ci = I.paired_interval(a, b, 0.90)
    assert (math.log(ci.lo), math.log(ci.hi)) == pytest.approx((0.4, 0.6))
    assert ci.coverage == pytest.approx(0.75) and ci.coverage < ci.level
    assert I.rule_verdict(ci, ("above", 1.0)) == INCONCLUSIVE       # wholly above 1, but at 75%
    one = I.paired_interval([2.0], [1.0], 0.9)
    assert (one.lo, one.hi, one.coverage) == (pytest.approx(2.0), pytest.approx(2.0), 0.0)
    u = I.unpaired_interval([2.0, 2.1], [1.0, 1.1], 0.9)           # 1 - 2/C(4,2) = 2/3
    assert u.coverage == pytest.approx(2 / 3) and u.lo == pytest.approx(2.0 / 1.1)


def test_ties_and_zeros_are_kept_and_the_interval_stays_exact():
    # all blocks equal: every Walsh average is 0, the interval the point ratio 1
    ci = I.paired_interval([100.0] * 8, [100.0] * 8, 0.9)
    assert (ci.lo, ci.hi, ci.point) == (1.0, 1.0, 1.0) and ci.coverage >= 0.9
    # zeros are not dropped: five zeros and three positives
    d = [0.0] * 5 + [0.1, 0.2, 0.3]
    ci = I.paired_interval(*blocks_with_log_ratios(d), level=0.9)
    walsh = sorted((d[i] + d[j]) / 2 for i in range(8) for j in range(i, 8))
    k, _ = I.critical_k("signed-rank", 8, 0.9)
    assert (math.log(ci.lo), math.log(ci.hi)) == pytest.approx((walsh[k - 1], walsh[-k]))
    assert ci.lo == 1.0 and I.rule_verdict(ci, ("above", 1.0)) == INCONCLUSIVE


def test_coverage_holds_on_coarse_data_full_of_ties():
    """Measurements on a coarse grid (many ties, many zero log ratios): the closed
    intervals still cover the true ratio at least as often as they claim."""
    rng = random.Random(11)
    grid = [-0.1, -0.05, 0.0, 0.0, 0.0, 0.05, 0.1]      # symmetric about 0, atoms at 0
    misses = {"signed-rank": 0, "sign": 0, "unpaired": 0}
    trials = 400
    for _ in range(trials):
        d = [rng.choice(grid) for _ in range(7)]
        e = [rng.choice(grid) for _ in range(7)]
        for name, fn in I.METHODS.items():
            a, b = (blocks_with_log_ratios(d) if name != "unpaired" else
                    ([math.exp(x) for x in d], [math.exp(y) for y in e]))
            ci = fn(a, b, 0.9)
            misses[name] += not ci.lo <= 1.0 <= ci.hi
    for name, m in misses.items():
        assert m / trials <= 0.10 + 0.02, name


def test_values_must_be_positive_and_blocks_paired():
    with pytest.raises(ValueError, match="positive"):
        I.paired_interval([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="as many"):
        I.paired_interval([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="between 0 and 1"):
        I.paired_interval([1.0, 2.0], [1.0, 2.0], 1.0)


# -- levels, looks, rule ------------------------------------------------------------

def test_min_blocks():
    assert I.min_blocks(0.90) == 5            # 1 - 2/32 = 0.9375
    assert I.min_blocks(0.95) == 6            # 1 - 2/64 = 0.96875
    assert I.min_blocks(0.90, 2) == 6         # 0.95 per look
    assert I.min_blocks(0.90, 4) == 7         # 0.975 per look
    assert I.min_blocks(0.99) == 8
    # two groups of 3: 1 - 2/C(6,3) = 0.9 exactly, which reaches 0.90 (exact fractions, no rounding)
    assert I.min_blocks(0.90, method="unpaired") == 3
    assert I.min_blocks(0.95, method="unpaired") == 4   # 1 - 2/C(8,4) = 0.971
    assert I.min_blocks(0.95, method="sign") == 6
    for level in (0.8, 0.9, 0.95, 0.99):
        for looks in (1, 2, 3, 4, 6):
            n = I.min_blocks(level, looks)
            per = I.per_look_level(level, looks)
            assert I.critical_k("signed-rank", n, per)[0] >= 1
            assert I.critical_k("signed-rank", n - 1, per)[0] == 0


def test_per_look_level_is_bonferroni():
    assert I.per_look_level(0.90, 1) == pytest.approx(0.90)
    assert I.per_look_level(0.90, 2) == pytest.approx(0.95)
    assert I.per_look_level(0.90, 4) == pytest.approx(0.975)
    assert I.per_look_level(0.95, 5) == pytest.approx(0.99)
    with pytest.raises(ValueError):
        I.per_look_level(0.9, 0)


def test_look_schedule():
    assert I.look_schedule(6, 24, 4) == [6, 12, 18, 24]
    assert I.look_schedule(6, 24, 3) == [6, 15, 24]
    assert I.look_schedule(6, 12, 2) == [6, 12]
    assert I.look_schedule(5, 8, 4) == [5, 6, 7, 8]
    assert I.look_schedule(6, 24, 1) == [24]
    for bad in ((6, 5, 2), (6, 8, 4), (0, 5, 2), (6, 12, 0)):
        with pytest.raises(ValueError):
            I.look_schedule(*bad)


def ci_of(lo, hi, coverage=0.95, level=0.9):
    return I.Interval(lo, hi, (lo + hi) / 2, coverage, level, I.PAIRED, 8)


@pytest.mark.parametrize("lo,hi,rule,want", [
    (1.05, 1.2, ("above", 1.0), REPRODUCED),
    (1.0, 1.2, ("above", 1.0), INCONCLUSIVE),          # touching the threshold is not above it
    (0.9, 1.0, ("above", 1.0), NOT_REPRODUCED),
    (0.9, 1.1, ("above", 1.0), INCONCLUSIVE),
    (0.8, 0.95, ("below", 1.0), REPRODUCED),
    (1.0, 1.1, ("below", 1.0), NOT_REPRODUCED),
    (0.95, 1.04, ("within", 0.9, 1.1), REPRODUCED),
    (0.9, 1.1, ("within", 0.9, 1.1), REPRODUCED),       # closed band
    (1.15, 1.3, ("within", 0.9, 1.1), NOT_REPRODUCED),
    (0.7, 0.85, ("within", 0.9, 1.1), NOT_REPRODUCED),
    (1.05, 1.2, ("within", 0.9, 1.1), INCONCLUSIVE),
])
def test_rule_verdict(lo, hi, rule, want):
    assert I.rule_verdict(ci_of(lo, hi), rule) == want
    assert I.rule_verdict(ci_of(lo, hi, coverage=0.85), rule) == INCONCLUSIVE   # below the level


def test_rule_verdict_rejects_bad_rules():
    with pytest.raises(ValueError):
        I.rule_verdict(ci_of(1, 2), ("within", 1.1, 0.9))
    with pytest.raises(ValueError):
        I.rule_verdict(ci_of(1, 2), ("sideways", 1.0))


def test_sequential_verdict_is_frozen_at_the_first_decided_look():
    up = [0.30, 0.32, 0.28, 0.35, 0.31, 0.29]
    a, b = blocks_with_log_ratios(up + [-0.3] * 18)           # later blocks say the opposite
    r = I.sequential_decide(a, b, ("above", 1.0), 0.90, [6, 12, 18, 24])
    assert r.verdict == INCONCLUSIVE and r.blocks == 24      # 4 looks: n=6 cannot reach 0.975
    r = I.sequential_decide(a, b, ("above", 1.0), 0.90, [6, 12, 24])
    assert (r.verdict, r.blocks, r.look) == (REPRODUCED, 6, 1)   # 0.9667 per look: decided at 6
    assert r.ci.coverage >= I.per_look_level(0.90, 3) and r.ci.lo > 1.0
    assert I.paired_interval(a, b, I.per_look_level(0.90, 3)).lo < 1.0   # all 24 would not have


def test_sequential_goes_on_until_a_look_decides_or_the_blocks_end():
    rng = random.Random(2)
    d = [rng.choice([-0.05, 0.05]) for _ in range(6)] + [-0.2 - 0.01 * i for i in range(18)]
    a, b = blocks_with_log_ratios(d)
    r = I.sequential_decide(a, b, ("above", 1.0), 0.90, [6, 15, 24])
    assert (r.verdict, r.look) == (NOT_REPRODUCED, 2) and r.blocks == 15 and r.ci.hi <= 1.0
    noise = blocks_with_log_ratios([(-1) ** i * 0.1 for i in range(12)])
    r = I.sequential_decide(*noise, ("above", 1.0), 0.90, [6, 12])
    assert (r.verdict, r.blocks, r.look) == (INCONCLUSIVE, 12, 2)
    r = I.sequential_decide(*noise, ("above", 1.0), 0.90, [6, 12, 24])   # data run out at 12
    assert (r.verdict, r.blocks, r.look) == (INCONCLUSIVE, 12, 2)
    with pytest.raises(ValueError):
        I.sequential_decide(*noise, ("above", 1.0), 0.90, [13, 24])
    with pytest.raises(ValueError):
        I.sequential_decide(*noise, ("above", 1.0), 0.90, [12, 6])


def test_magnitude():
    ci = ci_of(1.1, 1.3)
    assert I.magnitude(1.05, ci) == "below"
    assert I.magnitude(1.1, ci) == "inside"
    assert I.magnitude(1.2, ci) == "inside"
    assert I.magnitude(1.4, ci) == "above"


def test_false_reproduction_at_a_true_ratio_of_one_stays_within_the_level():
    """A against B of the same speed with drifting machine noise and two looks:
    REPRODUCED for "A/B above 1" must happen at most (1 - level)/2 of the time."""
    rng = random.Random(7)
    level, trials, false = 0.80, 500, 0
    for _ in range(trials):
        x, a, b = 0.0, [], []
        for _ in range(12):
            first, x = math.exp(x + 0.05 * rng.gauss(0, 1)), 0.8 * x + 0.03 * rng.gauss(0, 1)
            second, x = math.exp(x + 0.05 * rng.gauss(0, 1)), 0.8 * x + 0.03 * rng.gauss(0, 1)
            if rng.random() < 0.5:
                first, second = second, first
            a.append(first)
            b.append(second)
        false += I.sequential_decide(a, b, ("above", 1.0), level, [6, 12]).verdict == REPRODUCED
    assert false / trials <= (1 - level) / 2 + 0.03


# -- peaks: max over loads A / max over loads B (max_min_interval) --------------------------

def test_max_min_with_one_load_a_side_is_the_paired_interval():
    a, b = [110, 113, 108, 115, 111, 112, 109], [100, 101, 99, 104, 100, 102, 98]
    one = I.max_min_interval([(x,) for x in a], [(y,) for y in b], 0.9)
    assert one == I.paired_interval(a, b, 0.9)


def test_max_min_is_max_over_a_of_min_over_b_of_the_pair_intervals():
    """Each end from the per-pair signed-rank intervals, the lower end at level 1 - 0.1/L
    (L = A's loads), the upper at 1 - 0.1/M (M = B's); coverage the Bonferroni bound."""
    rng = random.Random(3)
    a = [(100 * math.exp(rng.gauss(0, .05)), 90 * math.exp(rng.gauss(0, .05))) for _ in range(12)]
    b = [(95 * math.exp(rng.gauss(0, .05)), 70 * math.exp(rng.gauss(0, .05)), 60.0) for _ in range(12)]
    ci = I.max_min_interval(a, b, 0.9)

    def pair(lv, i, j):
        return I.paired_interval([x[i] for x in a], [y[j] for y in b], lv)
    assert ci.lo == pytest.approx(max(min(pair(1 - 0.1 / 2, i, j).lo for j in range(3)) for i in range(2)))
    assert ci.hi == pytest.approx(max(min(pair(1 - 0.1 / 3, i, j).hi for j in range(3)) for i in range(2)))
    c_lo, c_hi = pair(1 - 0.1 / 2, 0, 0).coverage, pair(1 - 0.1 / 3, 0, 0).coverage
    assert ci.coverage == pytest.approx(1 - (2 * (1 - c_lo) + 3 * (1 - c_hi)) / 2)
    assert ci.coverage >= 0.9 and ci.method == I.MAX_MIN and ci.n == 12


def test_max_min_too_few_blocks_for_the_split_is_inconclusive():
    """Six blocks reach 0.95 for one pair but not 0.975 for two loads a side: coverage
    below the level, so no verdict however far apart."""
    a = [(1000.0 + i, 900.0) for i in range(6)]
    b = [(100.0 + i, 90.0) for i in range(6)]
    ci = I.max_min_interval(a, b, 0.95)
    assert ci.coverage < 0.95 and I.rule_verdict(ci, ("above", 1.0)) == INCONCLUSIVE
    s = I.sequential_decide(a, b, ("above", 1.0), 0.95, [6], method="max-min")
    assert s.verdict == INCONCLUSIVE


def test_max_min_false_reproduction_stays_within_the_level_for_any_shape():
    """Equal true peaks, A flat over three loads, B one sharp peak (the shape that fooled
    the per-block maximum): REPRODUCED for 'A above 1' at most (1 - level)/2 of the time."""
    rng = random.Random(5)
    level, trials, false = 0.8, 300, 0
    for _ in range(trials):
        a = [tuple(math.exp(rng.gauss(0, .05)) for _ in range(3)) for _ in range(12)]
        b = [(math.exp(rng.gauss(0, .05)), .8 * math.exp(rng.gauss(0, .05))) for _ in range(12)]
        false += I.sequential_decide(a, b, ("above", 1.0), level, [6, 12], method="max-min").verdict \
            == REPRODUCED
    assert false / trials <= (1 - level) / 2 + 0.03
