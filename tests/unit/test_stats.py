"""harness.analysis.stats (median CI by order statistics, CV, the unstable flag) and
harness.analysis.tidywrite.summarize (grouping runs into cells)."""
import math
import random

import pytest

from harness.analysis import stats

from harness.analysis import tidywrite


def xs(n):
    """n distinct values, shuffled, so x_(k) (the k-th smallest, 1-based) is 10*k."""
    vals = [10 * k for k in range(1, n + 1)]
    return vals[1::2] + vals[0::2][::-1]


# Coverage of [x_(j), x_(n-j+1)] is 1 - 2*P(Bin(n, 1/2) <= j-1); the largest j
# with coverage >= 95%:
#   n=10: P(X<=1) = 11/1024 = 0.0107 <= 0.025, P(X<=2) = 56/1024 = 0.0547 > 0.025 -> j=2: (x2, x9)
#   n=9:  P(X<=1) = 10/512  = 0.0195 <= 0.025, P(X<=2) = 46/512  = 0.0898      -> j=2: (x2, x8)
#   n=20: P(X<=5) = 21700/2**20 = 0.0207, P(X<=6) = 60460/2**20 = 0.0577       -> j=6: (x6, x15)
#   n=6:  P(X<=0) = 1/64 = 0.0156 <= 0.025                                       -> j=1: (x1, x6)
#   n=5:  P(X<=0) = 1/32 = 0.0313 > 0.025: too few for 95%                       -> (min, max)
@pytest.mark.parametrize("n,lo,hi,coverage", [
    (10, 2, 9, 1 - 2 * 11 / 1024), (9, 2, 8, 1 - 2 * 10 / 512), (20, 6, 15, 1 - 2 * 21700 / 2 ** 20),
    (6, 1, 6, 1 - 2 / 64), (5, 1, 5, 1 - 2 / 32)])
def test_median_ci_95_is_the_textbook_order_statistics(n, lo, hi, coverage):
    got = stats.median_ci(xs(n))
    assert got[:2] == (10 * lo, 10 * hi)
    assert got[2] == pytest.approx(coverage, abs=1e-12)


@pytest.mark.parametrize("n,coverage", [(2, 0.5), (3, 0.75), (4, 0.875), (5, 0.9375), (6, 0.96875)])
def test_median_ci_at_small_n_is_min_max_with_its_real_coverage(n, coverage):
    # too few values for 95% (n <= 5) or just enough (n = 6): [min, max], coverage 1 - 2 * 0.5**n
    assert stats.median_ci(xs(n)) == (10, 10 * n, coverage)


def test_median_ci_is_the_narrowest_reaching_the_level_and_says_when_none_does():
    for n in range(2, 40):
        lo, hi, coverage = stats.median_ci(xs(n), level=0.95)
        j = lo // 10                                     # lo is x_(j)
        assert hi == 10 * (n - j + 1), n                 # symmetric: x_(n-j+1)
        assert coverage == stats.order_coverage(n, j), n
        assert (coverage >= 0.95) == (n >= 6), n         # [min, max] reaches 95% from n = 6 on
        assert stats.order_coverage(n, j + 1) < 0.95, n  # the next narrower one would not


def test_median_ci_80_percent_is_narrower():
    # n=10, alpha=0.1: P(X<=2) = 0.0547 <= 0.1, P(X<=3) = 176/1024 = 0.172 > 0.1 -> j=3: (x3, x8)
    assert stats.median_ci(xs(10), level=0.80) == (30, 80, pytest.approx(1 - 2 * 56 / 1024))


def test_median_ci_of_one_value_is_that_value_with_no_coverage():
    assert stats.median_ci([1234.5]) == (1234.5, 1234.5, 0.0)


def test_median_ci_of_nothing_raises():
    with pytest.raises(ValueError, match="no values"):
        stats.median_ci([])


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1])
def test_median_ci_refuses_a_level_outside_0_1(level):
    with pytest.raises(ValueError, match="level"):
        stats.median_ci([1, 2, 3], level=level)


@pytest.mark.parametrize("n", [5, 10, 20])
def test_median_ci_coverage_matches_simulation(n):
    """The reported coverage is the real one: draw from a skewed continuous
    distribution with a known median (exponential, median ln 2) and count."""
    rng = random.Random(1000 + n)
    draws, hits = 20000, 0
    coverage = stats.median_ci(range(n))[2]
    for _ in range(draws):
        lo, hi, _ = stats.median_ci([rng.expovariate(1.0) for _ in range(n)])
        hits += lo <= math.log(2) <= hi
    # binomial sd at 20000 draws is <= 0.0036; 0.012 is more than 3 sd
    assert hits / draws == pytest.approx(coverage, abs=0.012)


def test_cv_of_one_value_is_unknown_not_zero():
    assert math.isnan(stats.cv([5.0]))


def test_cv_of_nothing_raises():
    with pytest.raises(ValueError):
        stats.cv([])


@pytest.mark.parametrize("values,expected", [
    ([1, 2, 3], 0.5),                       # sd 1, mean 2
    ([10, 10, 10], 0.0),
    ([100, 110], math.sqrt(50) / 105),      # sample sd: sqrt(((-5)^2 + 5^2) / 1)
    ([2, 4, 4, 4, 5, 5, 7, 9], math.sqrt(32 / 7) / 5),
])
def test_cv_known_values(values, expected):
    assert stats.cv(values) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("threshold,unstable", [(0.05, True), (0.0673, True), (0.0674, False), (0.1, False)])
def test_summarize_flags_unstable_above_threshold(threshold, unstable):
    # cv([100, 110]) = 0.067343
    assert stats.summarize([100.0, 110.0], threshold)["unstable"] is unstable


def test_summarize_at_exactly_the_threshold_is_stable():
    assert stats.summarize([1.0, 2.0, 3.0], 0.5)["unstable"] is False   # cv is exactly 0.5
    assert stats.summarize([1.0, 2.0, 3.0], 0.499)["unstable"] is True


def test_summarize_fields():
    s = stats.summarize([30.0, 10.0, 20.0], 0.05)
    assert s == {"n": 3, "qps_median": 20.0, "qps_ci_lo": 10.0, "qps_ci_hi": 30.0,
                 "qps_ci_coverage": 0.75, "qps_cv": 0.5, "unstable": True}


def test_summarize_names_keys_after_the_metric():
    s = stats.summarize([2.0, 4.0], 0.5, metric="tps")
    assert s == {"n": 2, "tps_median": 3.0, "tps_ci_lo": 2.0, "tps_ci_hi": 4.0,
                 "tps_ci_coverage": 0.5, "tps_cv": round(math.sqrt(2) / 3, 6), "unstable": False}


def test_summarize_of_one_value_is_unstable_whatever_the_threshold():
    # one run says nothing about its spread: it must not pass as stable
    s = stats.summarize([100.0], cv_threshold=10.0)
    assert s["unstable"] is True and s["n"] == 1
    assert math.isnan(s["qps_cv"]) and s["qps_ci_coverage"] == 0.0


def test_summarize_of_equal_values_is_stable():
    assert stats.summarize([7.0, 7.0, 7.0], 0.01)["unstable"] is False


def _row(engine, users, rep, qps, tables=1):
    return {"study": "A3", "experiment": "point_select", "workload": "point_select",
            "build": "mysql-5.6.24", "engine": engine, "variant": "base",
            **{f: "" for f in tidywrite.FACTOR_FIELDS}, "tables": tables, "cores": 1,
            "users": users, "rep": rep, "qps": qps}


def test_tidy_summarize_groups_by_cell_over_reps():
    rows = [_row("MyISAM", 4, 1, 100.0), _row("InnoDB", 4, 2, 210.0), _row("InnoDB", 4, 1, 190.0),
            _row("InnoDB", 1, 1, 50.0), _row("InnoDB", 4, 3, 200.0)]
    out = tidywrite.summarize(rows, cv_threshold=0.05)
    keys = [(r["engine"], r["users"]) for r in out]
    assert keys == [("InnoDB", 1), ("InnoDB", 4), ("MyISAM", 4)]  # one per cell, sorted
    innodb4 = out[1]
    assert innodb4["n"] == 3
    assert innodb4["qps_median"] == 200.0
    assert (innodb4["qps_ci_lo"], innodb4["qps_ci_hi"]) == (190.0, 210.0)
    assert innodb4["unstable"] is False                    # cv = 10/200 = 0.05, not above
    assert innodb4["qps_ci_coverage"] == 0.75
    assert out[0]["unstable"] is True                      # InnoDB at 1 user: one run only
    assert set(stats.summarize([1.0], 0.05)) <= set(out[0]) - set(tidywrite.KEY_FIELDS)


def test_tidy_writes_every_field_summarize_gives():
    assert set(stats.summarize([1.0, 2.0], 0.05)) <= set(tidywrite.SUMMARY_FIELDS)


def test_tidy_summarize_keeps_tables_apart():
    rows = [_row("InnoDB", 1, 1, 10.0, tables=1), _row("InnoDB", 1, 1, 80.0, tables=8)]
    out = tidywrite.summarize(rows, cv_threshold=0.05)
    assert [(r["tables"], r["n"], r["qps_median"]) for r in out] == [(1, 1, 10.0), (8, 1, 80.0)]
