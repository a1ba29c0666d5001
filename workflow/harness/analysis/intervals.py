"""Exact rank-based intervals for ratio claims, and the sequential rule that decides them
(pure functions, standard library only).

A claim "A/B is above t" is judged on an interval for the ratio. Here the interval
comes from all blocks at once -- a block is A and B measured back to back, so
the slow drift of a machine cancels in the per-block log ratio d_i = log(a_i/b_i)
-- instead of multiplying two per-group median intervals (the rule this replaced, kept for
comparison in bench/pergroup.py), which pays the coverage twice and ignores the pairing.

Every interval's coverage is computed from an exact null distribution counted by
dynamic programming (signed-rank sums, Mann-Whitney U, Binomial(n, 1/2)); there is
no normal approximation anywhere. The intervals are closed, [k-th smallest,
k-th largest] of the Walsh averages / differences / log ratios; ties and zeros in
the data are kept, not dropped, and can only raise the coverage: jitter the data
by an arbitrarily small continuous symmetric amount and the counts below and
above the true value can only move into the closed interval, never out of it.
The reported coverage is the achieved one (discrete, >= the requested level where
n allows; below it, with the widest interval, where it does not, so that the
verdict rule says inconclusive). The invariant of harness.analysis.verdict holds: a
verdict is REPRODUCED only when the whole interval is on the published side (verdict.sides)
at coverage >= the level it was asked at.

Sequential stopping (looks after min, ..., max blocks) keeps the overall error
by a Bonferroni split: each of L looks uses two-sided error (1 - level)/L, so the
chance that any look puts the whole interval on the wrong side of the true ratio
is at most (1 - level)/2 per side, however early the procedure stops.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from harness.analysis.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Rule, sides

PAIRED = "exact Wilcoxon signed-rank interval of Walsh averages (Hodges-Lehmann), paired blocks"
SIGN = "exact sign-test (binomial) order-statistic interval of the median log ratio, paired blocks"
UNPAIRED = "exact Mann-Whitney interval of pairwise log differences (Hodges-Lehmann), two groups"
RATIO_OF_RATIOS = ("exact Wilcoxon signed-rank interval of Walsh averages (Hodges-Lehmann) of "
                   "per-block ratios of ratios")


class Interval(NamedTuple):
    """An interval for a ratio. `coverage` is what the interval really has (exact,
    a lower bound with ties), `level` what was asked for; `n` is the number of
    blocks (paired) or (m, n) (two groups)."""
    lo: float
    hi: float
    point: float
    coverage: float
    level: float
    method: str
    n: int | tuple


class Sequential(NamedTuple):
    """Outcome of sequential_decide: the verdict frozen at `look` (1-based) after
    `blocks` blocks, with the interval that decided it (the last one if none did)."""
    verdict: str
    blocks: int
    look: int
    ci: Interval


def _exact(level) -> Fraction:
    """The level as an exact fraction (0.9 -> 9/10), so that a coverage equal to
    the level counts as reaching it."""
    f = level if isinstance(level, Fraction) else Fraction(repr(float(level)))
    if not 0 < f < 1:
        raise ValueError(f"level {float(f)} must be between 0 and 1 (e.g. 0.9)")
    return f


# -- exact null distributions (counts; the total is their sum) --------------------

@lru_cache(maxsize=None)
def signed_rank_counts(n: int) -> tuple:
    """counts[s] = number of subsets of {1..n} with sum s (the signed-rank statistic
    T+ under the null, times 2**n)."""
    counts = [1]
    for r in range(1, n + 1):
        new = counts + [0] * r
        for s, c in enumerate(counts):
            new[s + r] += c
        counts = new
    return tuple(counts)


@lru_cache(maxsize=None)
def mann_whitney_counts(m: int, n: int) -> tuple:
    """counts[u] = number of orderings of m A's and n B's with U = u (the A > B
    pairs), i.e. the Mann-Whitney U null times C(m+n, m)."""
    if m > n:
        return mann_whitney_counts(n, m)  # symmetric in (m, n)
    if m == 0:
        return (1,)
    # f(m, n)[u] = f(m-1, n)[u-n] + f(m, n-1)[u]: the largest value is an A (beating all n B's) or a B
    left, right = mann_whitney_counts(m - 1, n), mann_whitney_counts(m, n - 1) if n else (1,)
    out = [0] * (m * n + 1)
    for u, c in enumerate(left):
        out[u + n] += c
    for u, c in enumerate(right):
        out[u] += c
    return tuple(out)


@lru_cache(maxsize=None)
def binomial_counts(n: int) -> tuple:
    """counts[j] = C(n, j) by Pascal's rule (Binomial(n, 1/2) times 2**n)."""
    row = [1]
    for _ in range(n):
        row = [a + b for a, b in zip([0] + row, row + [0])]
    return tuple(row)


@lru_cache(maxsize=None)
def _critical(kind: str, size: tuple, level: Fraction) -> tuple[int, Fraction]:
    """(k, coverage) of the narrowest interval [k-th smallest, k-th largest] whose
    coverage 1 - 2 P(S <= k-1) reaches `level`; (1, its coverage) for the widest
    when none does, (0, 0) when there is nothing to order."""
    counts = {"signed-rank": signed_rank_counts, "mann-whitney": mann_whitney_counts,
              "sign": binomial_counts}[kind](*size)
    total, m = sum(counts), len(counts) - 1  # m: the statistic's maximum = how many values are ordered
    if m == 0:
        return 0, Fraction(0)
    k, cum = 0, 0
    while k < (m + 1) // 2 and 1 - Fraction(2 * (cum + counts[k]), total) >= level:
        cum += counts[k]
        k += 1
    if k == 0:
        return 1, max(Fraction(0), 1 - Fraction(2 * counts[0], total))
    return k, 1 - Fraction(2 * cum, total)


def critical_k(kind: str, size, level) -> tuple[int, float]:
    """Public view of the critical rank: kind "signed-rank" (size n), "mann-whitney"
    ((m, n)) or "sign" (n). k - 1 is the tables' two-sided critical value: reject
    when the statistic is <= k - 1. Returns (k, achieved coverage); (0, the
    widest interval's coverage) when no interval reaches `level`."""
    size = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
    level = _exact(level)
    k, cov = _critical(kind, size, level)
    return (k if cov >= level else 0), float(cov)


# -- intervals ------------------------------------------------------------------

def _logs(values, name: str) -> list[float]:
    out = []
    for v in values:
        v = float(v)
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"intervals: {name} has a value {v!r} that is not a positive number; a "
                             "ratio needs positive measurements (report a failed run as failed)")
        out.append(math.log(v))
    if not out:
        raise ValueError(f"intervals: {name} has no values")
    return out


def _median(xs: list[float]) -> float:
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _log_ratios(a, b) -> list[float]:
    la, lb = _logs(a, "A"), _logs(b, "B")
    if len(la) != len(lb):
        raise ValueError(f"intervals: paired blocks need as many A as B values, got {len(la)} and {len(lb)}")
    return [x - y for x, y in zip(la, lb)]


def _from_sorted(vals: list[float], k: int, cov: Fraction, level, method: str, n) -> Interval:
    return Interval(math.exp(vals[k - 1]), math.exp(vals[-k]), math.exp(_median(vals)),
                    float(cov), float(level), method, n)


def _walsh_interval(d: list[float], level, method: str) -> Interval:
    n = len(d)
    walsh = sorted([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
    k, cov = _critical("signed-rank", (n,), _exact(level))
    return _from_sorted(walsh, max(k, 1), cov, level, method, n)


def paired_interval(a, b, level=0.9) -> Interval:
    """Interval for the ratio A/B from paired blocks (a_i, b_i): the exact
    signed-rank interval of the Walsh averages of d_i = log(a_i/b_i), point the
    Hodges-Lehmann estimate (their median), exponentiated. Assumes the d_i are
    symmetric about their centre (blocks exchangeable in A/B order)."""
    return _walsh_interval(_log_ratios(a, b), level, PAIRED)


def sign_interval(a, b, level=0.9) -> Interval:
    """Interval for the median of A/B over paired blocks, no symmetry assumed:
    order statistics of d_i = log(a_i/b_i) with exact binomial coverage."""
    d = sorted(_log_ratios(a, b))
    k, cov = _critical("sign", (len(d),), _exact(level))
    return _from_sorted(d, max(k, 1), cov, level, SIGN, len(d))


SIGN_DIFFERENCE = "exact sign-test (binomial) order-statistic interval of the median difference, paired blocks"


def difference_sign_interval(d, level=0.9) -> Interval:
    """Interval for the median of paired differences d_i = a_i - b_i, on their own
    scale (for shares that can be 0, where a log ratio cannot be taken): order
    statistics with exact binomial coverage, no symmetry assumed."""
    d = sorted(float(x) for x in d)
    if not d:
        raise ValueError("difference_sign_interval: no blocks")
    k, cov = _critical("sign", (len(d),), _exact(level))
    k = max(k, 1)
    return Interval(d[k - 1], d[-k], _median(d), float(cov), float(level), SIGN_DIFFERENCE, len(d))


def unpaired_interval(a, b, level=0.9) -> Interval:
    """Interval for the ratio A/B (a shift in log scale) from two independent
    groups: the exact Mann-Whitney interval of the m*n differences
    log a_i - log b_j, point their median (Hodges-Lehmann)."""
    la, lb = _logs(a, "A"), _logs(b, "B")
    diffs = sorted([x - y for x in la for y in lb])
    k, cov = _critical("mann-whitney", (len(la), len(lb)), _exact(level))
    return _from_sorted(diffs, max(k, 1), cov, level, UNPAIRED, (len(la), len(lb)))


def ratio_of_ratios(a1, b1, a2, b2, level=0.9) -> Interval:
    """Interval for (A1/B1)/(A2/B2), e.g. a scaling claim "the speed-up at 8 cores
    is k times the one at 1", from blocks holding all four measurements:
    d_i = log((a1_i/b1_i)/(a2_i/b2_i)) into the paired interval (one interval of
    one coverage, not four intervals multiplied)."""
    r1, r2 = _log_ratios(a1, b1), _log_ratios(a2, b2)
    if len(r1) != len(r2):
        raise ValueError(f"ratio_of_ratios: {len(r1)} blocks for the first ratio, {len(r2)} for the second")
    return _walsh_interval([x - y for x, y in zip(r1, r2)], level, RATIO_OF_RATIOS)


MAX_MIN = ("simultaneous bound for max over A's loads / max over B's loads: per pair of loads the exact "
           "Wilcoxon signed-rank interval of Walsh averages, paired blocks; lower end Bonferroni over A's "
           "loads, upper end over B's")


def _walsh_sorted(d: list[float]) -> list[float]:
    n = len(d)
    return sorted([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])


def _columns(rows, name: str) -> list[list[float]]:
    """Per-block tuples of values at each load -> the logs of each load's values, in block order."""
    rows = [tuple(r) for r in rows]
    if not rows or not rows[0] or any(len(r) != len(rows[0]) for r in rows):
        raise ValueError(f"max_min_interval: {name} needs one value per load in every block")
    return [_logs([r[k] for r in rows], f"{name} load {k + 1}") for k in range(len(rows[0]))]


def max_min_interval(a, b, level=0.9) -> Interval:
    """Interval for (max over A's loads) / (max over B's loads) from paired blocks, each a[i]
    (b[i]) the tuple of A's (B's) values at its L (M) loads in block i, for any shape of the
    two curves. max A / max B = max_l min_m A_l/B_m, so from per-pair signed-rank intervals
    [lo_lm, hi_lm] the bound is [max_l min_m lo_lm, max_l min_m hi_lm]. Its lower end is
    too high only if a pair (l, m*) misses from below, m* the load of B's true peak: each
    pair at one-sided error (1 - level)/(2L) keeps that within (1 - level)/2 (Bonferroni over
    A's loads); the upper end likewise over B's loads, at l* A's true peak. `coverage` is
    that bound, 1 - L(1 - c_lo)/2 - M(1 - c_hi)/2 from the achieved per-pair coverages; one
    load a side: the paired interval itself."""
    ca, cb = _columns(a, "A"), _columns(b, "B")
    if len(ca[0]) != len(cb[0]):
        raise ValueError(f"max_min_interval: {len(ca[0])} blocks for A, {len(cb[0])} for B")
    if len(ca) == 1 and len(cb) == 1:
        return _walsh_interval([x - y for x, y in zip(ca[0], cb[0])], level, PAIRED)
    n, alpha = len(ca[0]), 1 - _exact(level)
    k_lo, c_lo = _critical("signed-rank", (n,), 1 - alpha / len(ca))
    k_hi, c_hi = _critical("signed-rank", (n,), 1 - alpha / len(cb))
    lo, hi, point = [], [], []
    for xa in ca:
        walsh = [_walsh_sorted([x - y for x, y in zip(xa, xb)]) for xb in cb]
        lo.append(min(w[max(k_lo, 1) - 1] for w in walsh))
        hi.append(min(w[-max(k_hi, 1)] for w in walsh))
        point.append(min(_median(w) for w in walsh))
    cov = max(Fraction(0), 1 - (len(ca) * (1 - c_lo) + len(cb) * (1 - c_hi)) / 2)
    return Interval(math.exp(max(lo)), math.exp(max(hi)), math.exp(max(point)), float(cov), float(level),
                    MAX_MIN, n)


def max_min_splits(a, b) -> int:
    """How many ways a max_min_interval's error is split on its wider side (the more loads)."""
    return max(len(tuple(a[0])), len(tuple(b[0]))) if a and b else 1


METHODS = {"signed-rank": paired_interval, "sign": sign_interval, "unpaired": unpaired_interval}
# intervals on the scale of the values, not of their ratio (rule thresholds are differences)
# intervals on per-block tuples of values at each side's loads (max over loads A / max over loads B)
PEAK_METHODS = {"max-min": max_min_interval}
DIFFERENCE_METHODS = {"sign-difference": lambda a, b, level=0.9: difference_sign_interval(
    [x - y for x, y in zip(a, b, strict=True)], level)}


# -- verdicts, looks and stopping ----------------------------------------------------

def rule_verdict(ci: Interval, rule) -> str:
    """REPRODUCED when the whole interval is on the published side (verdict.sides) and its
    coverage reaches ci.level; NOT_REPRODUCED when it is wholly on the other side at that
    coverage; INCONCLUSIVE otherwise. `rule`: a verdict.Rule, or its (side, threshold[,
    threshold_hi])."""
    rule = rule if isinstance(rule, Rule) else Rule(*rule)
    if ci.coverage < ci.level:
        return INCONCLUSIVE
    on, off = sides(ci.lo, ci.hi, rule)
    return REPRODUCED if on else NOT_REPRODUCED if off else INCONCLUSIVE


def _look_level(level, looks: int) -> Fraction:
    if looks < 1:
        raise ValueError(f"looks {looks} must be at least 1")
    return 1 - (1 - _exact(level)) / looks


def per_look_level(level, looks: int) -> float:
    """Bonferroni: each of `looks` looks is taken at 1 - (1 - level)/looks, so the
    chance that any look's interval misses the true ratio -- on either side -- is
    at most 1 - level, and at most (1 - level)/2 per side."""
    return float(_look_level(level, looks))


def min_blocks(level=0.9, looks: int = 1, method: str = "signed-rank") -> int:
    """The fewest blocks for which an interval at the per-look level exists at all
    (the widest, [min, max], has coverage 1 - 2/2**n for both the signed-rank and
    the sign interval; for two groups of n each, 1 - 2/C(2n, n)). A config asking
    for fewer repetitions can never reach a verdict. 5 at 0.90, 6 at 0.95, 7 for
    0.90 over 4 looks."""
    target = _look_level(level, looks)
    for n in range(1, 200):
        kind, size = (("mann-whitney", (n, n)) if method == "unpaired" else
                      ("sign" if method == "sign" else "signed-rank", (n,)))
        if _critical(kind, size, target)[1] >= target:
            return n
    raise ValueError(f"min_blocks: level {float(target)} is not reachable with under 200 blocks")


KEYS = ("min", "max", "looks")
OPTIONAL = ("figures",)   # blocks that measure the figures' cells too (default: min)


def figures(value) -> int:
    """`figures` of a `repetitions` value: the blocks that measure every read cell; later
    blocks measure only the cells claims read. Unset (or an int n): min."""
    lo = bounds(value)[0]
    return value.get("figures", lo) if isinstance(value, dict) else lo


def bounds(value) -> tuple[int, int, int]:
    """(min, max, looks) of a `repetitions` value: an int n or {min, max, looks}."""
    if isinstance(value, bool):
        raise ValueError(f"repetitions: {value!r} is not a number of blocks; give an integer or "
                         f"{{min, max, looks}}")
    if isinstance(value, int):
        return value, value, 1
    if isinstance(value, dict) and all(isinstance(value.get(k), int) for k in KEYS):
        return value["min"], value["max"], value["looks"]
    raise ValueError(f"repetitions: {value!r} is neither an integer nor {{min, max, looks}} "
                     f"(integers, as config/default.yaml)")


def schedule_problem(min_blocks: int, max_blocks: int, looks: int) -> str | None:
    """Why (min, max, looks) make no look schedule, with the fix; None when they make one:
    1 <= min <= max, and 1 <= looks <= max - min + 1 (one look: any min and max). The one
    check of a `repetitions` value's bounds (look_schedule, harness.plan.repetitions.check)."""
    if not 1 <= min_blocks <= max_blocks:
        return f"min {min_blocks} and max {max_blocks} need 1 <= min <= max; set max to at least min"
    if looks < 1 or (looks > 1 and looks > max_blocks - min_blocks + 1):
        return (f"{looks} looks do not fit between {min_blocks} and {max_blocks} blocks; use at most "
                f"{max_blocks - min_blocks + 1} looks, or a larger max")
    return None


def look_schedule(min_blocks: int, max_blocks: int, looks: int) -> list[int]:
    """Block counts at which the data are looked at: first at min_blocks, last at
    max_blocks, the others evenly spaced between (rounded). One look: [max_blocks]."""
    why = schedule_problem(min_blocks, max_blocks, looks)
    if why:
        raise ValueError(f"look_schedule: {why}")
    if looks == 1:
        return [max_blocks]
    step = (max_blocks - min_blocks) / (looks - 1)
    return [min_blocks + math.floor(i * step + 0.5) for i in range(looks)]


def sequential_decide(blocks_a, blocks_b, rule, level=0.9, schedule=(6, 12), *,
                      method: str = "signed-rank") -> Sequential:
    """Walk the looks of `schedule` in order, each on the first n blocks at the
    per-look level (per_look_level(level, len(schedule))), and stop at the first
    look whose verdict is not INCONCLUSIVE: that verdict is frozen. Undecided after
    the last look (or when the data run out): INCONCLUSIVE with the last interval.
    `method` is "signed-rank" (paired blocks, default), "sign" or "unpaired"; for a
    ratio of ratios pass the per-block ratios a1/b1 and a2/b2 as the two blocks;
    "sign-difference" judges the paired differences a - b (the rule's threshold a
    difference, e.g. above 0); "max-min" takes per-block tuples of each side's values at
    its loads and judges max A / max B (max_min_interval)."""
    a, b = list(blocks_a), list(blocks_b)
    schedule = list(schedule)
    if not schedule or any(x >= y for x, y in zip(schedule, schedule[1:])):
        raise ValueError(f"sequential_decide: schedule {schedule} must be increasing block counts")
    interval = METHODS.get(method) or PEAK_METHODS.get(method) or DIFFERENCE_METHODS[method]
    look_level = _look_level(level, len(schedule))
    ci, look, used = None, 0, 0
    for look, n in enumerate(schedule, 1):
        if n > min(len(a), len(b)):
            look -= 1
            break
        used = n
        ci = interval(a[:n], b[:n], look_level)
        verdict = rule_verdict(ci, rule)
        if verdict != INCONCLUSIVE:
            return Sequential(verdict, n, look, ci)
    if ci is None:
        raise ValueError(f"sequential_decide: {min(len(a), len(b))} blocks, fewer than the first "
                         f"look's {schedule[0]}")
    return Sequential(INCONCLUSIVE, used, look, ci)


def magnitude(published_ratio: float, ci) -> str:
    """Where the published ratio sits against the measured interval: "below" it
    (the paper claimed less than measured), "inside" (closed), or "above"."""
    if published_ratio < ci.lo:
        return "below"
    if published_ratio > ci.hi:
        return "above"
    return "inside"
