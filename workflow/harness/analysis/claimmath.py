"""The ratio a claim judges, from the cells picked: two cells' paired ratio
(ratio_result), peak against peak over the loads (peak_result), and the ratio of
two gains (scaling_*), each judged on its blocks by harness.analysis.blockverdict.
Moved whole from harness.analysis.claimrules."""
from __future__ import annotations

import statistics

from harness.analysis import blockverdict as BV
from harness.analysis import tidyread as T
from harness.analysis.claimresult import Context, Result, missing
from harness.analysis.claimrules import CROSS_CHECK, METRIC, Rule
from harness.analysis.claimtext import cell_where, fmt_cores, fmt_k, interval_text


def ratio_result(ctx: Context, a: T.Cell, b: T.Cell, rule: Rule, label_a: str, label_b: str,
                 where: str = "") -> Result:
    """The verdict on median(a)/median(b) from the two cells' blocks, paired by repetition."""
    va, vb = a.values(METRIC), b.values(METRIC)
    try:
        j = ctx.judge(a["experiment"] or b["experiment"], a.by_rep(METRIC), b.by_rep(METRIC), rule)
    except ValueError as e:
        return missing("data", str(e))
    cross = ratio_or_none(a.median(CROSS_CHECK), b.median(CROSS_CHECK))
    measured = (f"{label_a} {fmt_k(statistics.median(va))} vs {label_b} {fmt_k(statistics.median(vb))} "
                f"QPS{' (' + where + ')' if where else ''}: {interval_text(j.ci)}")
    return Result.judged(measured, j, [a, b], cross)


def load_of(cell: T.Cell, load=("users", "cores")) -> tuple:
    return tuple(cell.int(k) for k in load)


def load_blocks(*sides) -> tuple[list, list[list[tuple]]]:
    """(the repetitions every cell of every side has; per side, per such block, the tuple of
    its cells' values): each side a list of {rep: value}, one per load."""
    reps, values = BV.paired(*[d for side in sides for d in side])
    out, i = [], 0
    for side in sides:
        cols, i = values[i:i + len(side)], i + len(side)
        out.append([tuple(c[j] for c in cols) for j in range(len(reps))])
    return reps, out


def peak_result(ctx: Context, pa: list[T.Cell], pb: list[T.Cell], rule: Rule, label_a: str,
                label_b: str, load=("users", "cores")) -> Result:
    """The verdict on 'A at its peak / B at its peak' over the loads (users x cores) both
    sides measured (`load`: the columns a load is; a comparison of core counts passes users
    alone), no load chosen from the data: every block's values at every load go into
    harness.analysis.intervals.max_min_interval, whose error stays within the level for any
    shape of the two curves (a side's per-block maximum, or its cell of the best median,
    does not: a plateau's maximum of near-equal noisy cells is biased up against one sharp
    peak, bench/verdict_power.py). A side with one cell is that cell's values."""
    common = {load_of(c, load) for c in pa} & {load_of(c, load) for c in pb}
    ca = sorted([c for c in pa if load_of(c, load) in common], key=lambda c: (load_of(c), c.name))
    cb = sorted([c for c in pb if load_of(c, load) in common], key=lambda c: (load_of(c), c.name))
    if not ca or not cb:
        return missing("data", f"{label_a} and {label_b} share no load (users and cores) to compare peaks on")
    if len(ca) == 1 and len(cb) == 1:
        return ratio_result(ctx, ca[0], cb[0], rule, label_a, label_b, cell_where(ca[0], cb[0]))
    reps, (va, vb) = load_blocks([c.by_rep(METRIC) for c in ca], [c.by_rep(METRIC) for c in cb])
    if not reps:
        return missing("data", f"no block holds every cell of {label_a} and {label_b} at the loads compared")
    try:
        j = BV.judge(va, vb, rule, ctx.level, BV.bounds_of(ctx.tidy, ca[0]["experiment"] or cb[0]["experiment"]),
                     ctx.decide, peaks=True)
    except ValueError as e:
        return missing("data", str(e))
    _, (xa, xb) = load_blocks([c.by_rep(CROSS_CHECK) for c in ca], [c.by_rep(CROSS_CHECK) for c in cb])
    cross = ratio_or_none(statistics.median(map(max, xa)) if xa else None,
                          statistics.median(map(max, xb)) if xb else None)
    users = sorted({c.int("users") for c in ca + cb})
    cores = sorted({c.int("cores") for c in ca + cb})
    tables = sorted({c.int("tables") for c in ca + cb})
    where = (f"{'/'.join(map(str, tables))} table{'s' if tables != [1] else ''}, {fmt_cores(cores)}, "
             f"users {', '.join(map(str, users))}: peak over {len(ca)} vs {len(cb)} loads")
    measured = (f"{label_a} {fmt_k(statistics.median(map(max, va)))} vs {label_b} "
                f"{fmt_k(statistics.median(map(max, vb)))} QPS ({where}): {interval_text(j.ci)}")
    return Result.judged(measured, j, ca + cb, cross)


SCALING_METHOD = ("max-min bound of per-block ratios of ratios (A's gain / B's gain, each gain the peak "
                  "over users at the most cores / at the fewest at or above the claim's min_cores), every pair "
                  "of users judged: ")


def scaling_judged(ctx: Context, experiment: str, groups: list[list[T.Cell]], rule: Rule) -> "BV.Judged":
    """(max A_hi / max A_lo) / (max B_hi / max B_lo) over users, `groups` the cells of A at
    the most cores, A at the fewest, B at the most, B at the fewest (the users all four
    measured), paired by repetition, no cell chosen from the data: the ratio is
    max(A_hi x B_lo) / max(A_lo x B_hi) over the pairs of users, judged by
    harness.analysis.intervals.max_min_interval on the per-block products. One user a
    group: the per-block ratio of ratios."""
    reps, num, den = scaling_blocks(*([c.by_rep(METRIC) for c in g] for g in groups))
    if not reps:
        raise ValueError("scaling: the four groups of cells share no repetition")
    j = BV.judge(num, den, rule, ctx.level, BV.bounds_of(ctx.tidy, experiment), ctx.decide, peaks=True)
    return j._replace(ci=j.ci._replace(method=SCALING_METHOD + j.ci.method))


def scaling_blocks(a_hi, a_lo, b_hi, b_lo) -> tuple[list, list[tuple], list[tuple]]:
    """(repetitions, per block the products A_hi(u) x B_lo(v), per block A_lo(u) x B_hi(v))
    over the pairs of loads, each argument a list of {rep: value}, one per load."""
    reps, (w, x, y, z) = load_blocks(a_hi, a_lo, b_hi, b_lo)
    num = [tuple(p * q for p in wi for q in zi) for wi, zi in zip(w, z)]
    den = [tuple(p * q for p in xi for q in yi) for xi, yi in zip(x, y)]
    return reps, num, den


def scaling_groups(pools: dict, a, b, lo: int, hi: int) -> list[list[T.Cell]]:
    """The cells of (a, hi), (a, lo), (b, hi), (b, lo) in `pools` ({side: cells}) at the
    users all four measured, in users order."""
    at = {(s, c): [x for x in pools[s] if x.int("cores") == c] for s in (a, b) for c in (lo, hi)}
    users = set.intersection(*({x.int("users") for x in cells} for cells in at.values()))
    return [sorted((x for x in at[k] if x.int("users") in users), key=lambda x: (x.int("users"), x.name))
            for k in ((a, hi), (a, lo), (b, hi), (b, lo))]


def ratio_or_none(x, y):
    return x / y if x and y else None
