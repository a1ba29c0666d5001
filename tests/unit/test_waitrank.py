"""Wait-ranking claims rank every repetition on their own and judge the share that
ranks the published wait in the top k by its exact Clopper-Pearson interval."""
from __future__ import annotations

import math

import pytest

from harness.analysis import waits as W


@pytest.mark.parametrize("k, n, level, lo, hi", [
    (5, 10, 0.95, 0.187086, 0.812914),     # the textbook values
    (0, 10, 0.90, 0.0, 1 - 0.05 ** 0.1),   # k = 0: lo 0, hi closed form
    (10, 10, 0.90, 0.05 ** 0.1, 1.0),      # k = n
    (2, 2, 0.90, 0.05 ** 0.5, 1.0),
])
def test_clopper_pearson_exact_values(k, n, level, lo, hi):
    got = W.clopper_pearson(k, n, level)
    assert got == pytest.approx((lo, hi), abs=1e-6)


def test_clopper_pearson_bounds_are_the_exact_binomial_tails():
    """Each bound solves its binomial tail equation at (1 - level)/2 exactly (no normal
    approximation), checked against a sum written out here."""
    for n in (3, 7, 12):
        for k in range(1, n):
            lo, hi = W.clopper_pearson(k, n, 0.9)
            ge = sum(math.comb(n, i) * lo ** i * (1 - lo) ** (n - i) for i in range(k, n + 1))
            le = sum(math.comb(n, i) * hi ** i * (1 - hi) ** (n - i) for i in range(0, k + 1))
            assert ge == pytest.approx(0.05, abs=1e-9) and le == pytest.approx(0.05, abs=1e-9)


def test_most_repetitions_needs_enough_repetitions():
    """6 of 6 decide 'most' at 0.9 (lo = 0.05^(1/6) = 0.61 > 1/2); 4 of 4 cannot (0.47)."""
    assert W.clopper_pearson(6, 6, 0.9)[0] > 0.5
    assert W.clopper_pearson(4, 4, 0.9)[0] < 0.5
    assert W.clopper_pearson(0, 6, 0.9)[1] < 0.5


def test_each_repetition_is_ranked_on_its_own():
    rows = [{"rep": "1", "event_name": "wait/synch/mutex/a", "sum_timer_wait_ps": "10"},
            {"rep": "1", "event_name": "wait/synch/mutex/b", "sum_timer_wait_ps": "1"},
            {"rep": "2", "event_name": "wait/synch/mutex/a", "sum_timer_wait_ps": "1"},
            {"rep": "2", "event_name": "wait/synch/mutex/b", "sum_timer_wait_ps": "100"}]
    ranks = W.ranks_by_rep(rows)
    assert [e for e, _ in ranks["1"]] == ["wait/synch/mutex/a", "wait/synch/mutex/b"]
    assert [e for e, _ in ranks["2"]] == ["wait/synch/mutex/b", "wait/synch/mutex/a"]
