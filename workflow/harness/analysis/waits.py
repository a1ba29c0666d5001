"""Wait events: the lock and synchronisation waits of an engine's busiest
cell (top_waits), ranked per repetition (ranks_by_rep), and two kinds of claim
beside those of harness.analysis.claimkinds: a published wait ranks first
("the main", "dominating": top_n 1) or among the top ones (TopWait), and a
wait's share is lower with more tables (WaitShareDrop).

TopWait's rule: every repetition of the busiest cell is ranked on its own; k of
n repetitions have the published wait in the top `top_n`. With the exact
Clopper-Pearson interval of k/n at claims.level (two-sided, each tail
(1 - level)/2): *reproduced* when its lower bound exceeds 1/2 (the wait ranks
there in most repetitions), *not reproduced* when its upper bound is below 1/2,
*inconclusive* otherwise.

WaitShareDrop's rule: per repetition (a block), the wait's share of the lock and
synchronisation wait time with `b` tables minus its share with `a` tables, at the
busiest load both measured; the exact sign-test interval of the median difference on
the experiment's looks (judge_difference, as B3's): *reproduced* when it lies wholly
above 0, *not reproduced* when wholly at or below 0.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, replace

from harness.analysis import blockverdict as BV
from harness.analysis import intervals as I
from harness.analysis import tidyread as T
from harness.analysis.claimkinds import Claim
from harness.analysis.claimrules import INCONCLUSIVE, NOT_MEASURABLE, NOT_REPRODUCED, REPRODUCED
from harness.analysis.claimresult import Context, Result, flagged, missing
from harness.analysis.claimpick import levels_of
from harness.analysis.claimtext import cell_where
from harness.analysis.verdict import Rule


LOCK_WAITS = re.compile(r"^wait/(synch|lock)/")


def short_event(name: str) -> str:
    return re.sub(r"^synch/", "", re.sub(r"^wait/", "", name))


def event_label(name: str) -> str:
    """'wait/synch/mutex/sql/THD::LOCK_thd_data' -> 'sql/THD::LOCK_thd_data'."""
    return name.split("/", 3)[-1]


# --- exact binomial bounds ---------------------------------------------------------

def _binom_tail_ge(k: int, n: int, p: float) -> float:
    """P(X >= k), X ~ Binomial(n, p), summed exactly term by term."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _solve(f, target: float) -> float:
    """p in [0, 1] with f(p) = target for f increasing in p (bisection to 1e-12)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of a binomial proportion k/n at
    `level`: lo with P(X >= k | lo) = a/2, hi with P(X <= k | hi) = a/2, a = 1 - level
    (lo = 0 when k = 0, hi = 1 when k = n). No normal approximation."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"clopper_pearson: need 0 <= k <= n, n >= 1 (k={k}, n={n})")
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else _solve(lambda p: _binom_tail_ge(k, n, p), a)
    hi = 1.0 if k == n else _solve(lambda p: _binom_tail_ge(k + 1, n, p), 1 - a)   # P(X <= k | hi) = a
    return lo, hi


# --- ranking ---------------------------------------------------------------------------

def _matches(row: dict, levels: dict | None) -> bool:
    """A waits row at the factor levels `levels` (an empty column is the factor's baseline)."""
    for name, value in (levels or {}).items():
        v = row.get(name, "")
        if v == "":
            f = T.factors.FACTORS.get(name)
            v = T.text(f.baseline) if f is not None else ""
        if v != T.text(value):
            return False
    return True


def _busiest(rows):
    def key(r):
        return (T.number(r.get("users")) or 0, T.number(r.get("cores")) or 0)
    top = max(key(r) for r in rows)
    return top, [r for r in rows if key(r) == top]


def _rank(rows) -> list[tuple[str, float]]:
    totals = {}
    for r in rows:
        totals[r["event_name"]] = totals.get(r["event_name"], 0.0) + (T.number(r.get("sum_timer_wait_ps")) or 0)
    total = sum(totals.values())
    if total <= 0:
        return []
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(e, v / total) for e, v in ranked]


def wait_rows(ctx: Context, experiment: str, build: str, engine: str, tables: int | None = None,
              levels: dict | None = None, min_cores: int = 0) -> list[dict]:
    """The lock/synch wait rows of an engine (at `tables` and the factor `levels`) on cells
    with mysqld on at least `min_cores` CPUs."""
    return [r for r in ctx.tidy.extra("waits", experiment)
            if r.get("build", "") == build and r.get("engine") == engine
            and LOCK_WAITS.match(r.get("event_name") or "")
            and (tables is None or r.get("tables") == str(tables)) and _matches(r, levels)
            and (T.number(r.get("cores")) or 0) >= min_cores]


def _cells_of(ctx, experiment, build, engine, rows, top):
    cell_keys = {(r.get("variant"), r.get("tables")) for r in rows}
    return [c for c in ctx.tidy.cells(experiment, build=build, engine=engine)
            if (c["variant"], c["tables"]) in cell_keys and (c.int("users"), c.int("cores")) == top]


def top_waits(ctx: Context, experiment: str, build: str, engine: str, tables: int | None = None,
              levels: dict | None = None):
    """(cells, [(event, share of lock+synch wait time)] descending) of an engine's
    cell with the most users, then cores (timers summed over its repetitions);
    cells with the Performance Schema off have no wait rows and do not count."""
    rows = wait_rows(ctx, experiment, build, engine, tables, levels)
    if not rows:
        return [], []
    top, rows = _busiest(rows)
    return _cells_of(ctx, experiment, build, engine, rows, top), _rank(rows)


def ranks_by_rep(rows) -> dict:
    """{rep: [(event, share)] descending}: each repetition ranked on its own."""
    reps = {}
    for r in rows:
        reps.setdefault(r.get("rep", ""), []).append(r)
    return {rep: _rank(rs) for rep, rs in sorted(reps.items())}


def _experiment_levels(ctx, claim):
    """(the levels the claim reads in its experiment, None), or (None, the Result saying what
    is missing: the experiment, or its levels)."""
    if ctx.tidy.experiment(claim.experiment_name) is None:
        return None, missing(*ctx.tidy.missing(claim.experiment_name))
    levels, why = levels_of(ctx.tidy, claim.experiment_name, claim.levels)
    return (levels, None) if levels is not None else (None, missing("", why))


@dataclass(frozen=True)
class TopWait(Claim):
    """Does the published wait (a regular expression on the event name) rank among the
    top `top_n` lock/synchronisation waits of the engine's busiest cell (at `tables`
    and the factor `levels`), in most repetitions? (The module's rule.)"""
    experiment_name: str = ""
    engine: str = ""
    tables: int | None = None
    pattern: str = ""
    top_n: int = 5
    levels: tuple | None = None   # LEVELS of the experiment's varied factors (None: their baselines)

    def rule_words(self) -> str:
        where = "first" if self.top_n == 1 else f"in the top {self.top_n}"
        return f"ranks {where} in most repetitions"

    def evaluate(self, ctx, build):
        levels, gap = _experiment_levels(ctx, self)
        if gap is not None:
            return gap
        rows = wait_rows(ctx, self.experiment_name, build, self.engine, self.tables, levels)
        if not rows:
            return missing("data", f"no lock or synchronisation waits of {self.engine} in "
                                   f"{self.experiment_name} (Performance Schema off, or no wait time)")
        enough = wait_rows(ctx, self.experiment_name, build, self.engine, self.tables, levels,
                           self.min_cores) if self.needs else rows
        top, busiest = _busiest(enough or rows)
        cells = _cells_of(ctx, self.experiment_name, build, self.engine, busiest, top)
        res = self.judge(ctx, busiest, cells)
        if self.needs and not enough:
            why = self.gate(ctx, cells) or (f"cores: the published mechanism ({self.mechanism}) needs "
                                             f"mysqld on at least {self.cores_needed()}")
            return replace(res, verdict=NOT_MEASURABLE, reason=why + flagged(res.cells))
        return res

    def judge(self, ctx, rows, cells) -> Result:
        ranked = _rank(rows)
        per_rep = {rep: r for rep, r in ranks_by_rep(rows).items() if r}
        if not ranked or not per_rep:
            return missing("data", f"no wait time of {self.engine} in {self.experiment_name}")
        ranks = {rep: next((i for i, (e, _) in enumerate(r, 1) if re.search(self.pattern, e)), None)
                 for rep, r in per_rep.items()}
        n = len(ranks)
        k = sum(1 for x in ranks.values() if x is not None and x <= self.top_n)
        lo, hi = clopper_pearson(k, n, ctx.level)
        rank = next((i for i, (e, _) in enumerate(ranked, 1) if re.search(self.pattern, e)), None)
        c = cells[0] if cells else None
        listed = ", ".join(f"{event_label(e)} {100 * s:.0f}%" for e, s in ranked[:max(self.top_n, 3)])
        found = (f"{event_label(ranked[rank - 1][0])} ranks {rank} of {len(ranked)} "
                 f"({100 * ranked[rank - 1][1]:.0f}%) over the repetitions" if rank
                 else "not among the measured waits")
        per = ", ".join("–" if x is None else str(x) for x in ranks.values())
        where = "first" if self.top_n == 1 else f"in the top {self.top_n}"
        measured = (f"{found}; {where} in {k} of {n} repetitions (ranks {per}); top "
                    f"{min(max(self.top_n, 3), len(ranked))} of {self.engine}" +
                    (f" ({cell_where(c, c)})" if c else "") + f": {listed}")
        bounds = (f"{k} of {n} repetitions rank it {where}; exact Clopper-Pearson "
                  f"interval of that share [{lo:.3g}, {hi:.3g}] at {100 * ctx.level:g}%")
        if lo > 0.5:
            verdict, why = REPRODUCED, f"{bounds} lies above 1/2"
        elif hi < 0.5:
            verdict, why = NOT_REPRODUCED, f"{bounds} lies below 1/2"
        else:
            verdict, why = INCONCLUSIVE, f"{bounds} contains 1/2: too few repetitions to say"
        return Result(measured, verdict, why + flagged(cells), cells=cells, ns=(n,))


# --- a difference per block, on the experiment's looks ------------------------------------

def judge_difference(ctx: Context, experiment: str, d: list[float], side: str, threshold: float):
    """(verdict, reason, interval, look, pending) for per-block differences d (in block
    order) against `side` ('above'/'below') `threshold`: the exact sign-test interval of
    their median (intervals.sequential_decide, its sign-difference method) on the
    experiment's looks, each at the per-look level (Bonferroni), frozen at the first look
    that decides -- the rule of B3's table-lock waits."""
    lo, hi, looks = BV.bounds_of(ctx.tidy, experiment)
    schedule = I.look_schedule(lo, hi, looks)
    look_level = I.per_look_level(ctx.level, len(schedule))
    n = len(d)
    if not ctx.decide:
        return INCONCLUSIVE, BV.BY_DESIGN, I.difference_sign_interval(d, ctx.level), "", False
    if n < schedule[0]:
        return (INCONCLUSIVE, f"{n} blocks measured, the first look is at {schedule[0]} (of max {hi}): "
                f"more blocks may decide it", I.difference_sign_interval(d, look_level),
                f"0/{len(schedule)}", True)
    s = I.sequential_decide(d, [0.0] * n, Rule(side, threshold), ctx.level, schedule,
                            method="sign-difference")
    look = f"{s.look}/{len(schedule)}"
    at = (f"look {look} after {s.blocks} blocks, each look at level {look_level:.4g} "
          f"(Bonferroni over {len(schedule)} looks for {ctx.level:g})")
    bound = f"{'above' if side == 'above' else 'below'} {threshold:g}"
    if s.verdict == REPRODUCED:
        return REPRODUCED, f"the interval lies wholly {bound}, {at}", s.ci, look, False
    if s.verdict == NOT_REPRODUCED:
        return NOT_REPRODUCED, f"the interval lies wholly on the other side of {threshold:g}, {at}", \
            s.ci, look, False
    pending = n < hi
    more = (f"{n} blocks measured of max {hi}: more blocks may decide it" if pending
            else f"all {hi} blocks measured: the data do not tell")
    return INCONCLUSIVE, f"the interval, {at}, straddles {threshold:g}; {more}", s.ci, look, pending


def share_by_rep(rows, pattern: str) -> dict:
    """{rep: the share of lock+synch wait time of the events matching `pattern`}."""
    return {rep: sum(s for e, s in ranked if re.search(pattern, e))
            for rep, ranked in ranks_by_rep(rows).items() if ranked}


@dataclass(frozen=True)
class WaitShareDrop(Claim):
    """'More tables lower this wait': per repetition, the wait's share with `b` tables
    minus its share with `a` tables, an engine's cells at the busiest load (users, cores)
    both table counts measured with mysqld on at least min_cores (the module's rule)."""
    experiment_name: str = ""
    engine: str = ""
    pattern: str = ""
    a: int = 8
    b: int = 1
    levels: tuple | None = None
    by_blocks: bool = True   # judge_difference over the blocks (Claim.by_blocks)

    def rule_words(self) -> str:
        return f"share with {self.b} table{'s' if self.b != 1 else ''} minus with {self.a}: above 0"

    def _rows(self, ctx, build, levels, tables, min_cores):
        return wait_rows(ctx, self.experiment_name, build, self.engine, tables, levels, min_cores)

    def evaluate(self, ctx, build):
        levels, gap = _experiment_levels(ctx, self)
        if gap is not None:
            return gap
        ra, rb = (self._rows(ctx, build, levels, t, self.min_cores) for t in (self.a, self.b))
        if not ra or not rb:
            below = [self._rows(ctx, build, levels, t, 0) for t in (self.a, self.b)]
            if all(below):
                return missing("cores", f"the published mechanism ({self.mechanism}) needs mysqld on at "
                                        f"least {self.cores_needed()}; no wait rows of both table counts there")
            return missing("data", f"no lock or synchronisation waits of {self.engine} with both {self.a} "
                                   f"and {self.b} tables in {self.experiment_name}")
        loads = ({(r.get("users"), r.get("cores")) for r in ra} & {(r.get("users"), r.get("cores")) for r in rb})
        if not loads:
            return missing("data", f"{self.a} and {self.b} tables share no load (users, cores)")
        top = max(loads, key=lambda u: (T.number(u[0]) or 0, T.number(u[1]) or 0))
        sa = share_by_rep([r for r in ra if (r.get("users"), r.get("cores")) == top], self.pattern)
        sb = share_by_rep([r for r in rb if (r.get("users"), r.get("cores")) == top], self.pattern)
        reps = sorted(set(sa) & set(sb), key=lambda x: T.number(x) or 0)
        if not reps:
            return missing("data", f"no repetition holds both {self.a} and {self.b} tables")
        d = [sb[r] - sa[r] for r in reps]
        verdict, reason, ci, look, pending = judge_difference(ctx, self.experiment_name, d, "above", 0.0)
        measured = (f"{self.engine}, {top[0]} users on {top[1]} cores: share of the wait "
                    f"{100 * statistics.median(sb[r] for r in reps):.1f}% with {self.b} table"
                    f"{'s' if self.b != 1 else ''}, {100 * statistics.median(sa[r] for r in reps):.1f}% "
                    f"with {self.a} (medians of {len(reps)} blocks); difference {100 * ci.point:+.1f} "
                    f"points [{100 * ci.lo:+.1f}, {100 * ci.hi:+.1f}] ({ci.coverage:.1%} {ci.method})")
        cells = [c for c in ctx.tidy.cells(self.experiment_name, build=build, engine=self.engine)
                 if (c["users"], c["cores"]) == top and c.int("tables") in (self.a, self.b)]
        return Result(measured, verdict, reason + flagged(cells), cells=cells, ns=(len(reps),), look=look,
                      pending=pending)
