"""Per-cell statistics over repetitions: median, distribution-free CI, CV."""
from __future__ import annotations

import math
import statistics


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(0, k + 1)) / 2 ** n


def median_ci(values, level: float = 0.95) -> tuple[float, float]:
    """Order-statistic CI of the median (no normality assumed).

    The interval [x_(j), x_(n-j+1)] with the largest j whose coverage is at
    least `level`; with too few values for that coverage, [min, max].
    """
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    alpha = (1 - level) / 2
    j = 0
    for cand in range(1, n // 2 + 1):
        if _binom_cdf(cand - 1, n) <= alpha:
            j = cand
        else:
            break
    if j == 0:
        return xs[0], xs[-1]
    return xs[j - 1], xs[n - j]


def cv(values) -> float:
    xs = list(values)
    if len(xs) < 2:
        return 0.0
    m = statistics.fmean(xs)
    return statistics.stdev(xs) / m if m else 0.0


def summarize(values, cv_threshold: float, metric: str = "qps") -> dict:
    lo, hi = median_ci(values)
    c = cv(values)
    return {"n": len(values), f"{metric}_median": statistics.median(values), f"{metric}_ci_lo": lo,
            f"{metric}_ci_hi": hi, f"{metric}_ci_coverage": "", f"{metric}_cv": round(c, 6),
            "unstable": c > cv_threshold}
