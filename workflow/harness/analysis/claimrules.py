"""The ground every claim kind stands on: the verdict names and the `claims:`
settings, the published side of a ratio (Rule: above / below / within),
what one claim row says (Result) and how it is formatted, the context a claim
is judged in, and how a comparison picks its cells (levels of an experiment,
pools of cells, the best cell, the ratio of two cells).

harness.analysis.claims explains the verdict rule and re-exports these names;
the kinds of claim are in harness.analysis.claimkinds, the wait-event claim in
harness.analysis.waits.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from harness import paths
from harness.analysis import blockverdict as BV
from harness.analysis import intervals as I
from harness.analysis import tidyread as T
from harness.analysis import verdict as V

REPRODUCED, NOT_REPRODUCED = V.REPRODUCED, V.NOT_REPRODUCED
INCONCLUSIVE, NOT_MEASURABLE = V.INCONCLUSIVE, V.NOT_MEASURABLE
VERDICTS = V.VERDICTS

METRIC = "qps_server"     # what verdicts use: the server's own count
CROSS_CHECK = "qps"       # sysbench's count, reported beside it

# Config keys read from `claims:`, and their types (their defaults: config/default.yaml).
SETTINGS = {"level": float, "decide": bool}

CONTENTION, SCALING = "contention", "scaling"
NEEDS_TEXT = {CONTENTION: "contention: mysqld on several cores",
              SCALING: "scaling: two core counts, mysqld on several cores"}
# A study's "cores" are the hardware threads it gave mysqld (taskset); the count a
# contention or scaling claim needs is its own (Claim.min_cores), from the study's figures.

CSV_FIELDS = ("claim", "study", "statement", "published", "published_ratio", "measured",
              "ratio", "ratio_lo", "ratio_hi", "coverage", "level", "method", "look", "sign_lo",
              "sign_hi", "sign_coverage", "magnitude", "threshold", "threshold_hi", "side",
              "n", "verdict", "reason", "needs", "experiment", "build", "metric", "cross_check")


def setting(config: dict | None, key: str):
    """A `claims:` key of the resolved config; what a config leaves out (a tidy without
    config.resolved.yaml, a test's partial config) is config/default.yaml's."""
    claims_cfg = {**paths.defaults()["claims"],
                  **((config or {}).get("claims") or {})}
    value, cast = claims_cfg[key], SETTINGS[key]
    try:
        value = cast(value)
    except (TypeError, ValueError):
        raise ValueError(f"claims.{key}: {value!r} is not a {cast.__name__}; "
                         f"set it as config/default.yaml does") from None
    if key == "level" and not 0 < value < 1:
        raise ValueError(f"claims.level: {value} must be between 0 and 1 (e.g. 0.9)")
    return value


# --- rules --------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    """The published side of a ratio: side 'above'/'below' `threshold`, or
    'within' [threshold, threshold_hi]. `why` justifies any tolerance in one line."""
    side: str
    threshold: float
    threshold_hi: float | None = None
    why: str = ""

    def __post_init__(self):
        if self.side not in V.SIDES:
            raise ValueError(f"rule side {self.side!r}: one of {V.SIDES}")
        if (self.side == "within") != (self.threshold_hi is not None):
            raise ValueError("rule: threshold_hi is for side 'within' only, and it needs one")

    def text(self) -> str:
        if self.side == "within":
            return f"in [{_g(self.threshold)}, {_g(self.threshold_hi)}]"
        return f"{'>' if self.side == 'above' else '<'} {_g(self.threshold)}"


def above(t, why=""):
    return Rule("above", t, None, why)


def below(t, why=""):
    return Rule("below", t, None, why)


def within(lo, hi, why=""):
    return Rule("within", lo, hi, why)


def _g(x) -> str:
    return f"{x:.4g}"


# --- the tolerances: every band a study's words do not give, stated once here -------------
# (docs/studies.md, "The claims in the studies' words", cites them by these names)

# A figure a study states (a factor "x1.5", a percentage "about 40%"): a band around it,
# x/÷ STATED. Chosen here: the published figures are single runs on hardware long gone, so
# the band is wide; 1.25 is the widest round tolerance for which the band of the smallest
# stated effect judged as a band (x1.33, C1's "33%") still excludes 1, so a band verdict
# says more than a direction does. The one smaller figure, B2's lead of at most 8%, is a
# bound, not a band: [1, 1.08] with only its upper end widened by STATED, so 1 stays out.
STATED = 1.25
# "No difference", "did not help": a band x/÷ EQUIVALENT around 1. Chosen here: 5% is the
# smallest effect any published ratio claim of the studies states (A3's 200K vs 210K, 0.95x),
# so an interval inside it shows no effect of the size the studies talk about.
EQUIVALENT = 1.05
# "Very close" (C1's legacy database against InnoDB, 183.01 s vs 184.75 s): x/÷ CLOSE.
# Chosen here: the study's word is looser than "no difference", so a wider band than
# EQUIVALENT; 10% is half the smallest stated effect that the study calls an improvement
# (ARCHIVE's 33% over MyISAM is x1.49; MyISAM's 40% is x1.68).
CLOSE = 1.10


def stated(x: float, words: str) -> Rule:
    """A stated figure x (a ratio): within [x / STATED, x * STATED]."""
    return within(x / STATED, x * STATED, f"{words}: the stated figure x/÷{STATED:g} "
                                          f"(claimrules.STATED, chosen here)")


def equivalent(words: str) -> Rule:
    """'No difference' / 'did not help': within [1 / EQUIVALENT, EQUIVALENT]."""
    return within(1 / EQUIVALENT, EQUIVALENT, f"{words}: within x/÷{EQUIVALENT:g} of 1 "
                                              f"(claimrules.EQUIVALENT, chosen here)")


def close(words: str) -> Rule:
    """'Very close': within [1 / CLOSE, CLOSE]."""
    return within(1 / CLOSE, CLOSE, f"{words}: within x/÷{CLOSE:g} of 1 (claimrules.CLOSE, chosen here)")


def fmt_k(q) -> str:
    """360000 -> '360K', 22967 -> '23.0K', 3900 -> '3.90K' (published style)."""
    if q is None:
        return "n/a"
    k = q / 1000
    return f"{k:.0f}K" if k >= 100 else f"{k:.1f}K" if k >= 10 else f"{k:.2f}K"


def fmt_cores(cores) -> str:
    cores = sorted(set(cores))
    if not cores:
        return "no cores"
    text = str(cores[0]) if len(cores) == 1 else f"{cores[0]}–{cores[-1]}"
    return f"{text} core" + ("" if cores == [1] else "s")


# --- results ------------------------------------------------------------------

@dataclass
class Result:
    """What one claim row says: the measured text, the verdict and its reason,
    and for a ratio claim its interval and the cells it came from."""
    measured: str
    verdict: str
    reason: str
    ci: I.Interval | V.RatioCI | None = None
    cross_check: float | None = None
    ns: tuple = ()
    cells: list = field(default_factory=list)
    sign: I.Interval | None = None   # the sign-test interval beside ci (not used for the verdict)
    look: str = ""                   # the look that froze the verdict, of the schedule's ("1/2")
    pending: bool = False            # undecided with fewer blocks than max: more blocks may decide it

    @classmethod
    def judged(cls, measured: str, j: "BV.Judged", cells=(), cross_check=None) -> "Result":
        return cls(measured, j.verdict, j.reason + flagged(cells), j.ci, cross_check, j.n, list(cells),
                   j.sign, j.look, j.pending)


def missing(what: str, detail: str, measured: str = "") -> Result:
    """NOT_MEASURABLE whose reason starts with what is missing (cores, build,
    experiment, scale, data)."""
    return Result(measured or "—", NOT_MEASURABLE, f"{what}: {detail}" if what else detail)


def flagged(cells) -> str:
    """'; unstable: <cell>, <cell>' for the flagged cells among `cells` (else '')."""
    parts = {}
    for c in cells:
        for f in c.flags:
            parts.setdefault(f, [])
            if c.name not in parts[f]:
                parts[f].append(c.name)
    return "".join(f"; {f}: {', '.join(names)}" for f, names in parts.items())


# --- context ------------------------------------------------------------------

@dataclass
class Context:
    tidy: T.Tidy
    level: float
    decide: bool = True

    @classmethod
    def of(cls, tidy: T.Tidy) -> "Context":
        return cls(tidy, setting(tidy.config, "level"), setting(tidy.config, "decide"))

    def judge(self, experiment: str, va: dict, vb: dict, rule) -> "BV.Judged":
        """The verdict on two sides' {rep: value}, paired by repetition, looked at on the
        experiment's schedule (harness.analysis.blockverdict)."""
        return BV.judge_sides(va, vb, rule, self.level, BV.bounds_of(self.tidy, experiment), self.decide)


# --- cells of a comparison ------------------------------------------------------

def varied_factors(tidy: T.Tidy, experiment: str) -> list[str]:
    """The factors an experiment varies: from its config, else from its data."""
    spec = tidy.spec(experiment)
    if spec.get("variants") is not None:
        return T.varied(spec)
    exp = tidy.experiment(experiment)
    if exp is None:
        return []
    out = []
    for name in exp.factor_columns:
        values = {T.setting_of(c, name) for c in exp.cells if T.applies(name, c.engine)} - {""}
        if len(values) > 1:
            out.append(name)
    return out


def levels_of(tidy: T.Tidy, experiment: str, levels) -> tuple[dict | None, str]:
    """{factor: level} for a claim's LEVELS of an experiment (a tuple in factor-table
    order of the experiment's varied factors; None: each at its baseline), or
    (None, why not) when the experiment does not vary those factors or lacks a level."""
    return levels_in(varied_factors(tidy, experiment), tidy.spec(experiment), experiment, levels)


def levels_in(names: list[str], spec: dict, experiment: str, levels) -> tuple[dict | None, str]:
    """levels_of on the varied factors `names` and the experiment's config `spec` (the
    plan's view, before any cell exists: names = T.varied(spec))."""
    if levels is None:
        variants = (spec.get("variants") or {})
        out = {}
        for n in names:
            base = T.text(T.factors.FACTORS[n].baseline) if n in T.factors.FACTORS else ""
            values = [T.text(v) for v in variants.get(n) or []]
            out[n] = base if not values or base in values else values[0]
        return out, ""
    levels = tuple(T.text(v) for v in levels)
    if len(levels) != len(names):
        varies = ", ".join(T.words(n) for n in names) or "nothing"
        return None, (f"experiment: {experiment} varies {varies}; the claim compares the levels "
                      f"{'/'.join(levels)}")
    out = dict(zip(names, levels))
    variants = spec.get("variants") or {}
    for n, v in out.items():
        if variants.get(n) is not None and v not in [T.text(x) for x in variants[n]]:
            return None, f"experiment: {experiment} does not run {T.setting_words(n, v)}"
    return out, ""


def planned_levels(spec: dict, experiment: str, *levels) -> list[dict] | None:
    """The factor settings (one {factor: level} per LEVELS given; None: the baselines) of
    the cells a claim reads, from the experiment's config alone (harness.plan.reads plans
    only those cells); None (any cell) when a LEVELS does not fit the config: the claim
    then says why at evaluation."""
    names = T.varied(spec)
    out = []
    for lv in levels:
        settings, _ = levels_in(names, spec, experiment, lv)
        if settings is None:
            return None
        out.append(settings)
    return out


def levels_words(settings: dict) -> str:
    return ", ".join(T.setting_words(n, v) for n, v in settings.items())


def levels_label(settings: dict) -> str:
    """A side's settings in the factor table's codes: '<code>=<value>,...'."""
    codes = {n: (T.factors.FACTORS[n].code if n in T.factors.FACTORS else n) for n in settings}
    return ",".join(f"{codes[n]}={v}" for n, v in settings.items())


def matches(cell: T.Cell, settings: dict, workload: str | None = None) -> bool:
    """Whether a cell has these factor settings (factors that do not apply to its engine match)."""
    return all(not T.applies(n, cell.engine, workload) or T.setting_of(cell, n) == T.text(v)
               for n, v in settings.items())


def pool(ctx: Context, experiment: str, build: str | None, settings: dict, **where) -> list[T.Cell]:
    """Cells of `experiment` (of `build` if given) with the key values `where` and the
    factor `settings` that have the claim's metric."""
    if build:
        where["build"] = build
    return [c for c in ctx.tidy.cells(experiment, **where)
            if matches(c, settings) and c.values(METRIC)]


def best(cells: list[T.Cell]) -> T.Cell | None:
    """The cell with the highest median (the study's 'peak'); ties by name."""
    cells = [c for c in cells if c.values(METRIC)]
    if not cells:
        return None
    return max(sorted(cells, key=lambda c: c.name), key=lambda c: c.median(METRIC))


def at_cores(cells, min_cores: int) -> list[T.Cell]:
    """The cells with mysqld on at least `min_cores` CPUs (hardware threads)."""
    return [c for c in cells if c.int("cores") >= min_cores]


def unsupported_reason(ctx: Context, experiment: str, build: str = "", engine: str = "") -> str | None:
    for r in ctx.tidy.unsupported:
        if r.get("experiment") != experiment:
            continue
        if build and r.get("build") != build:
            continue
        if engine and engine not in (r.get("engine") or "").split("+"):
            continue
        return r.get("reason") or f"{r.get('build')} cannot run it"
    return None


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


def interval_text(ci) -> str:
    if not ci.coverage and ci.lo == ci.hi:   # a peak bound of 0 coverage still has a width
        return f"{ci.point:.2f}× (one repetition: no interval)"
    return f"{ci.point:.2f}× [{ci.lo:.2f}, {ci.hi:.2f}] at {100 * ci.coverage:.0f}% coverage"


KEY_WORDS = (("workload", "workload"), ("tables", "tables"), ("cores", "cores (mysqld)"),
             ("users", "users"))


def cell_settings(cell: T.Cell) -> dict:
    """{setting: value} of a cell: its build, engine, workload, tables, cores, users and
    every factor of the factor table that applies to its engine (an empty column is
    the factor's baseline, harness.analysis.tidyread.setting_of)."""
    out = {"build": cell.build, "engine": cell.engine}
    for col, word in KEY_WORDS:
        if cell[col] != "":
            out[word] = cell[col]
    for name in T.factors.ORDER:
        if T.applies(name, cell.engine, cell["workload"] or None) and name != "replica":
            out[T.words(name).split(" (")[0]] = T.setting_of(cell, name).replace("_", " ")
    return out


def settings_text(cells) -> str:
    """'; settings: <common>; <cell>: <what differs>' -- every setting of the compared
    cells, what they share once and what differs per cell ('' without cells)."""
    cells = [c for c in cells if c is not None and getattr(c, "key", None)]
    if not cells:
        return ""
    seen, uniq = set(), []
    for c in cells:
        if c.name not in seen:
            seen.add(c.name)
            uniq.append(c)
    each = [cell_settings(c) for c in uniq]
    common = {k: v for k, v in each[0].items() if all(e.get(k) == v for e in each[1:])}
    text = "; settings: " + ", ".join(f"{k} {v}" for k, v in common.items())
    if len(uniq) > 1:
        text += "; differing: " + " vs ".join(
            ", ".join(f"{k} {v}" for k, v in e.items() if k not in common) or c.name
            for c, e in zip(uniq, each))
    return text


def cell_where(a: T.Cell, b: T.Cell) -> str:
    """'8 tables, 1 core, 4 vs 16 users': where the two compared cells ran."""
    def part(col, word):
        va, vb = a.int(col), b.int(col)
        unit = word if max(va, vb) == 1 else word + "s"
        return f"{va} {unit}" if va == vb else f"{va} vs {vb} {unit}"
    return ", ".join(part(c, w) for c, w in (("tables", "table"), ("cores", "core"), ("users", "user")))
