"""Per-cell statistics over repetitions: median, its order-statistic interval
with the coverage it really has, and the coefficient of variation.

Repetitions are few (2-5 per cell), so nothing here assumes normality and
nothing labels an interval with a confidence it does not reach: the median's
interval comes from order statistics (Hoefler & Belli, SC'15), and its
coverage is computed from the binomial distribution, not taken from `level`.
"""
from __future__ import annotations

import math
import statistics


def binom_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2) (exact integer sum, one division)."""
    if k < 0:
        return 0.0
    return sum(math.comb(n, i) for i in range(0, min(k, n) + 1)) / 2 ** n


def order_coverage(n: int, j: int) -> float:
    """Coverage of [x_(j), x_(n-j+1)] for the median of n values: 1 - 2 P(X <= j-1).

    Exact for a continuous distribution, a lower bound for any distribution
    (the interval is closed, so ties can only help). j=1 is [min, max]:
    1 - 2 * 0.5**n, i.e. 50% at n=2, 75% at 3, 87.5% at 4, 93.75% at 5."""
    if n < 2 or not 1 <= j <= n // 2:
        return 0.0
    return 1.0 - 2.0 * binom_half_cdf(j - 1, n)


def order_rank(n: int, level: float) -> int:
    """The j of the narrowest interval [x_(j), x_(n-j+1)] whose coverage is at
    least `level`; 1 ([min, max], the widest there is) when n is too small for
    `level`; 0 when n < 2 (no interval at all)."""
    if not 0 < level < 1:
        raise ValueError(f"level {level}: must be between 0 and 1 (e.g. 0.95)")
    if n < 2:
        return 0
    j = 1
    for cand in range(2, n // 2 + 1):
        if order_coverage(n, cand) >= level:
            j = cand
        else:
            break
    return j


def median_ci(values, level: float = 0.95) -> tuple[float, float, float]:
    """Order-statistic interval of the median and its real coverage: (lo, hi, coverage).

    [x_(j), x_(n-j+1)] with the largest j whose coverage reaches `level`; with
    too few values for `level`, [min, max] and the (lower) coverage it has --
    callers must report that coverage, not `level`. One value: (x, x, 0.0)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("median_ci: no values")
    j = order_rank(n, level)
    if j == 0:
        return xs[0], xs[0], 0.0
    return xs[j - 1], xs[n - j], order_coverage(n, j)


def cv(values) -> float:
    """Sample standard deviation / mean. NaN with one value (spread unknown,
    not zero), 0.0 when all values are equal, NaN when the mean is 0 but the
    values differ."""
    xs = list(values)
    if not xs:
        raise ValueError("cv: no values")
    if len(xs) < 2:
        return math.nan
    sd = statistics.stdev(xs)
    if sd == 0:
        return 0.0
    m = statistics.fmean(xs)
    return sd / abs(m) if m else math.nan


def summarize(values, cv_threshold: float, metric: str = "qps") -> dict:
    """One cell's summary over its repetitions.

    Keys: n, {metric}_median, {metric}_ci_lo, {metric}_ci_hi,
    {metric}_ci_coverage (the interval's real coverage, see median_ci),
    {metric}_cv (NaN for one value) and unstable.

    `unstable` is True when the CV is above `cv_threshold` -- or when there
    are fewer than two values: a single run says nothing about its own
    spread, so it cannot be shown stable and must not pass as stable."""
    xs = list(values)
    if not xs:
        raise ValueError("summarize: no values")
    lo, hi, coverage = median_ci(xs)
    c = cv(xs)
    return {"n": len(xs), f"{metric}_median": statistics.median(xs), f"{metric}_ci_lo": lo,
            f"{metric}_ci_hi": hi, f"{metric}_ci_coverage": round(coverage, 6),
            f"{metric}_cv": c if math.isnan(c) else round(c, 6),
            "unstable": len(xs) < 2 or c > cv_threshold}
