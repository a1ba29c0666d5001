"""Published claims, judged on the repetitions of the measured cells.

The claims themselves live with their study (harness.studies.<study>); this
module is the machinery every study shares: the kinds of claim, how a
comparison picks its cells, the one gate for claims a small host cannot
test, and the verdict rule.

Verdict rule. A comparison claim declares a side (above / below / within) and
a threshold for the ratio of two settings' medians of the server's own
statement count (`qps_server`, without BEGIN/COMMIT; sysbench's `qps` is a
cross-check column only). The ratio's interval comes from the repetitions of
the compared cells (harness.analysis.verdict.ratio_interval at `claims.level`), every
other factor held fixed; "at best" compares each side's cell with the highest
median (its peak over users and cores). harness.analysis.verdict.decide turns the
interval into *reproduced* / *not reproduced* / *inconclusive*: reproduced
only when the whole interval lies on the published side at a coverage of at
least the level. Cells flagged unstable are named in the reason of every
verdict they feed.

One gate (NEEDS). A claim whose published mechanism is contention between
threads running on several cores (a named lock or mutex) is judged only on
cells where mysqld had at least `claims.contention_min_cores` cores; a
scaling claim also needs two core counts. Without such cells the claim is
*not measurable here*, its reason starting with what is missing: `cores`,
`build`, `experiment`, `scale` or `data`.

The claims code never names a factor: a claim names an experiment and the
LEVELS it compares; which factor those are levels of is read from the
experiment's config (`variants`, in factor-table order) or the data, and the
words for the paper from harness.plan.factors.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field, replace
from typing import Callable

from harness.analysis import stats

from harness.analysis import tidydata as T

from harness.analysis import verdict as V

REPRODUCED, NOT_REPRODUCED = V.REPRODUCED, V.NOT_REPRODUCED
INCONCLUSIVE, NOT_MEASURABLE = V.INCONCLUSIVE, V.NOT_MEASURABLE
VERDICTS = V.VERDICTS

METRIC = "qps_server"     # what verdicts use: the server's own count
CROSS_CHECK = "qps"       # sysbench's count, reported beside it

# Config keys read from `claims:`, and their types (their defaults: config/default.yaml).
SETTINGS = {"level": float, "contention_min_cores": int}

CONTENTION, SCALING = "contention", "scaling"
NEEDS_TEXT = {CONTENTION: "contention: mysqld on several cores",
              SCALING: "scaling: two core counts, mysqld on several cores"}

CSV_FIELDS = ("claim", "study", "statement", "published", "published_ratio", "measured",
              "ratio", "ratio_lo", "ratio_hi", "coverage", "threshold", "threshold_hi", "side",
              "n", "verdict", "reason", "needs", "experiment", "build", "metric", "cross_check")


def setting(config: dict | None, key: str):
    """A `claims:` key of the resolved config; what a config leaves out (a tidy without
    config.resolved.yaml, a test's partial config) is config/default.yaml's."""
    import yaml
    from harness import paths
    claims_cfg = {**yaml.safe_load((paths.CONFIG / "default.yaml").read_text())["claims"],
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
    ci: V.RatioCI | None = None
    cross_check: float | None = None
    ns: tuple = ()
    cells: list = field(default_factory=list)


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


def product_interval(groups, level: float) -> V.RatioCI:
    """Interval for prod(median_i ** e_i) over independent groups [(values, e)], e = +1/-1.

    The generalisation of verdict.ratio_interval to k groups: each group's
    order-statistic median interval at coverage >= level**(1/k) where its n
    allows; the product lies in the product of the intervals with
    probability >= the product of their coverages (reported)."""
    k = len(groups)
    per = level ** (1.0 / k)
    lo = hi = point = cov = 1.0
    ns = []
    for xs, e in groups:
        xs = [float(x) for x in xs]
        if not xs or any(not math.isfinite(x) or x <= 0 for x in xs):
            raise ValueError("product_interval: every group needs positive values")
        l, h, c = stats.median_ci(xs, per)
        m = statistics.median(xs)
        if e > 0:
            lo, hi, point = lo * l, hi * h, point * m
        else:
            lo, hi, point = lo / h, hi / l, point / m
        cov *= c
        ns.append(len(xs))
    return V.RatioCI(lo=lo, hi=hi, point=point, coverage=cov,
                     method=f"product of {k} order-statistic median intervals",
                     n_a=min(ns), n_b=min(ns), level=level)


# --- context ------------------------------------------------------------------

@dataclass
class Context:
    tidy: T.Tidy
    level: float
    min_cores: int

    @classmethod
    def of(cls, tidy: T.Tidy) -> "Context":
        return cls(tidy, setting(tidy.config, "level"), setting(tidy.config, "contention_min_cores"))


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
        values = {T.setting_of(c, name) for c in exp.cells if T.applies(name, c.engine)}
        if len(values) > 1:
            out.append(name)
    return out


def levels_of(tidy: T.Tidy, experiment: str, levels) -> tuple[dict | None, str]:
    """{factor: level} for a claim's LEVELS of an experiment (a tuple in factor-table
    order of the experiment's varied factors; None: each at its baseline), or
    (None, why not) when the experiment does not vary those factors or lacks a level."""
    names = varied_factors(tidy, experiment)
    if levels is None:
        spec = (tidy.spec(experiment).get("variants") or {})
        out = {}
        for n in names:
            base = T.text(T.factors.FACTORS[n].baseline) if n in T.factors.FACTORS else ""
            values = [T.text(v) for v in spec.get(n) or []]
            out[n] = base if not values or base in values else values[0]
        return out, ""
    levels = tuple(T.text(v) for v in levels)
    if len(levels) != len(names):
        varies = ", ".join(T.words(n) for n in names) or "nothing"
        return None, (f"experiment: {experiment} varies {varies}; the claim compares the levels "
                      f"{'/'.join(levels)}")
    out = dict(zip(names, levels))
    spec = tidy.spec(experiment).get("variants") or {}
    for n, v in out.items():
        if spec.get(n) is not None and v not in [T.text(x) for x in spec[n]]:
            return None, f"experiment: {experiment} does not run {T.setting_words(n, v)}"
    return out, ""


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
    """The verdict on median(a)/median(b) from the two cells' repetitions."""
    va, vb = a.values(METRIC), b.values(METRIC)
    try:
        ci = V.ratio_interval(va, vb, ctx.level)
    except ValueError as e:
        return missing("data", str(e))
    verdict, reason = V.decide(ci, rule.threshold, rule.side, rule.threshold_hi)
    cross = _ratio(a.median(CROSS_CHECK), b.median(CROSS_CHECK))
    measured = (f"{label_a} {fmt_k(statistics.median(va))} vs {label_b} {fmt_k(statistics.median(vb))} "
                f"QPS{' (' + where + ')' if where else ''}: {_interval(ci)}")
    return Result(measured, verdict, reason + flagged([a, b]), ci, cross, (len(va), len(vb)), [a, b])


def _ratio(x, y):
    return x / y if x and y else None


def _interval(ci: V.RatioCI) -> str:
    if not ci.coverage:
        return f"{ci.point:.2f}× (one repetition: no interval)"
    return f"{ci.point:.2f}× [{ci.lo:.2f}, {ci.hi:.2f}] at {100 * ci.coverage:.0f}% coverage"


def cell_where(a: T.Cell, b: T.Cell) -> str:
    """'8 tables, 1 core, 4 vs 16 users': where the two compared cells ran."""
    def part(col, word):
        va, vb = a.int(col), b.int(col)
        unit = word if max(va, vb) == 1 else word + "s"
        return f"{va} {unit}" if va == vb else f"{va} vs {vb} {unit}"
    return ", ".join(part(c, w) for c, w in (("tables", "table"), ("cores", "core"), ("users", "user")))


# --- kinds of claim -----------------------------------------------------------------

@dataclass(frozen=True)
class Claim:
    """One published claim, one row per build (a build comparison: one row).

    `statement` may use {levels} (the compared settings in words) and
    {conditions} (the factor settings held fixed). `needs` is the gate
    (CONTENTION / SCALING / None); `mechanism` quotes the study's explanation
    that makes it so. `macro` (letters) names the paper's \\V<macro>/\\R<macro>."""
    id: str
    study: str
    statement: str
    published: str
    experiments: tuple = ()
    rule: Rule | None = None
    published_ratio: float | None = None
    needs: str | None = None
    mechanism: str = ""
    macro: str = ""
    deviation: str = ""   # how the artifact's test differs from the study's (deviations table)

    @property
    def experiment(self) -> str:
        return "+".join(self.experiments)

    def builds(self, ctx: Context) -> list[str]:
        return ctx.tidy.builds(*self.experiments) or [""]

    def words(self, ctx: Context) -> dict:
        """Replacements for {levels} / {conditions} in the statement."""
        return {}

    def text(self, ctx: Context) -> str:
        try:
            return self.statement.format(**self.words(ctx))
        except (KeyError, IndexError):
            return self.statement

    def evaluate(self, ctx: Context, build: str) -> Result:
        raise NotImplementedError

    def gate(self, ctx: Context, cells: list[T.Cell]) -> str | None:
        """The one rule for contention and scaling claims: the reason (cores: ...)
        when the cells never had mysqld on contention_min_cores cores."""
        if self.needs is None or not cells:
            return None
        cores = sorted({c.int("cores") for c in cells})
        if max(cores) < ctx.min_cores:
            why = self.mechanism or NEEDS_TEXT[self.needs]
            return (f"cores: the published mechanism ({why}) needs mysqld on at least "
                    f"{ctx.min_cores} cores (claims.contention_min_cores); measured on {fmt_cores(cores)}")
        if self.needs == SCALING and len([c for c in cores if c >= 1]) < 2:
            return f"cores: scaling needs two core counts; measured on {fmt_cores(cores)} only"
        return None

    def row(self, ctx: Context, build: str) -> dict:
        try:
            res = self.evaluate(ctx, build)
        except (LookupError, ValueError, TypeError, ZeroDivisionError) as e:
            res = missing("data", f"cannot evaluate ({type(e).__name__}: {e})")
        if res.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id}: invalid verdict {res.verdict!r}")
        ci, rule = res.ci, self.rule
        return {
            "claim": self.id, "study": self.study, "statement": self.text(ctx),
            "published": self.published,
            "published_ratio": "" if self.published_ratio is None else f"{self.published_ratio:.4g}",
            "measured": res.measured,
            "ratio": "" if ci is None else f"{ci.point:.6g}",
            "ratio_lo": "" if ci is None else f"{ci.lo:.6g}",
            "ratio_hi": "" if ci is None else f"{ci.hi:.6g}",
            "coverage": "" if ci is None else f"{ci.coverage:.6g}",
            "threshold": "" if rule is None else f"{rule.threshold:.6g}",
            "threshold_hi": "" if rule is None or rule.threshold_hi is None else f"{rule.threshold_hi:.6g}",
            "side": "" if rule is None else rule.side,
            "n": "/".join(str(n) for n in res.ns),
            "verdict": res.verdict, "reason": res.reason, "needs": self.needs or "",
            "experiment": self.experiment, "build": build, "metric": METRIC if rule else "",
            "cross_check": "" if res.cross_check is None else f"{res.cross_check:.6g}",
        }


def _gated(claim: Claim, ctx: Context, res: Result, candidates: list[T.Cell]) -> Result:
    """Apply the gate: a measured result on too few cores becomes NOT_MEASURABLE,
    keeping what was measured."""
    why = claim.gate(ctx, candidates)
    if why is None:
        return res
    return replace(res, verdict=NOT_MEASURABLE, reason=why + flagged(res.cells))


@dataclass(frozen=True)
class Comparison(Claim):
    """median(side a) / median(side b) at each side's best cell, every other
    factor held fixed. Subclasses say what the sides are (engines, levels, ...)."""
    experiment_name: str = ""
    tables: int | None = None
    levels: tuple | None = None   # the experiment's varied factors held at these levels (None: baselines)
    same_as: tuple | None = None  # (experiment, levels): the study's conditions the cells must have
    same_tables = True            # tables=None: compare at the most tables both sides have

    def sides(self, ctx: Context, build: str, settings: dict):
        """((label, cells of a), (label, cells of b)) or a Result saying what is missing."""
        raise NotImplementedError

    def settings(self, ctx: Context):
        return levels_of(ctx.tidy, self.experiment_name, self.levels)

    def words(self, ctx):
        settings, _ = self.settings(ctx)
        cond = T.fixed(ctx.tidy.spec(self.experiment_name))
        return {"levels": levels_words(settings or {}) or "at the baselines",
                "conditions": levels_words(cond) or "the baselines"}

    def evaluate(self, ctx: Context, build: str) -> Result:
        if ctx.tidy.experiment(self.experiment_name) is None:
            return missing(*ctx.tidy.missing(self.experiment_name).split(": ", 1))
        settings, why = self.settings(ctx)
        if settings is None:
            return missing("", why)
        sides = self.sides(ctx, build, settings)
        if isinstance(sides, Result):
            return sides
        (la, pa), (lb, pb) = sides
        for label, p in ((la, pa), (lb, pb)):
            if not p:
                return self.absent(ctx, build, label)
        if self.tables is None and self.same_tables:  # held fixed: the most tables both sides have
            both = {c.int("tables") for c in pa} & {c.int("tables") for c in pb}
            if not both:
                return missing("data", f"{la} and {lb} were not measured on the same number of tables")
            pa = [c for c in pa if c.int("tables") == max(both)]
            pb = [c for c in pb if c.int("tables") == max(both)]
        if self.same_as:
            ref, why = levels_of(ctx.tidy, *self.same_as)
            if ref is None:
                return missing("", why)
            pa, pb = [c for c in pa if matches(c, ref)], [c for c in pb if matches(c, ref)]
            if not pa or not pb:
                return missing("experiment", f"{self.experiment_name} did not run under the study's "
                                             f"conditions ({levels_words(ref)}, as in {self.same_as[0]})")
        if self.needs is None:
            return self.judge(ctx, la, pa, lb, pb)
        na, nb = at_cores(pa, ctx.min_cores), at_cores(pb, ctx.min_cores)
        if na and nb:  # the gate: a contention claim is judged on enough cores only
            return self.judge(ctx, la, na, lb, nb)
        res = self.judge(ctx, la, pa, lb, pb)
        why = self.gate(ctx, pa + pb) or (f"cores: only one side has cells with mysqld on at least "
                                          f"{ctx.min_cores} cores (claims.contention_min_cores)")
        return replace(res, verdict=NOT_MEASURABLE, reason=why + flagged(res.cells))

    def judge(self, ctx, la, pa, lb, pb) -> Result:
        a, b = best(pa), best(pb)
        return ratio_result(ctx, a, b, self.rule, la, lb, cell_where(a, b))

    def absent(self, ctx: Context, build: str, label: str) -> Result:
        why = unsupported_reason(ctx, self.experiment_name, build, label.split(" ")[0])
        if why:
            return missing("build", why)
        return self.absent_tables(ctx) or missing("data", f"no {self.experiment_name} cells of {label}")

    def absent_tables(self, ctx: Context) -> Result | None:
        """The profile's design lacks the claim's table count: say so (experiment: ...)."""
        planned = ctx.tidy.spec(self.experiment_name).get("tables") or \
            sorted({c.int("tables") for c in ctx.tidy.cells(self.experiment_name)})
        if self.tables is not None and planned and self.tables not in planned:
            runs = " and ".join(map(str, planned))
            return missing("experiment", f"{self.experiment_name} runs on {runs} "
                                         f"table{'s' if planned != [1] else ''} in this profile; the "
                                         f"claim is about {self.tables}")
        return None

    def where(self, settings: dict) -> dict:
        return {"tables": self.tables} if self.tables is not None else {}


@dataclass(frozen=True)
class EngineRatio(Comparison):
    """Engine a / engine b in one experiment and build."""
    a: str = ""
    b: str = ""

    def sides(self, ctx, build, settings):
        w = self.where(settings)
        return ((self.a, pool(ctx, self.experiment_name, build, settings, engine=self.a, **w)),
                (self.b, pool(ctx, self.experiment_name, build, settings, engine=self.b, **w)))


@dataclass(frozen=True)
class LevelRatio(Comparison):
    """One engine at the LEVELS `a` vs `b` of the factors its experiment varies
    (tuples in factor-table order; the other varied factors, if any, at `levels`)."""
    engine: str = ""
    a: tuple = ()
    b: tuple = ()

    def settings(self, ctx):
        return levels_of(ctx.tidy, self.experiment_name, self.a)

    def words(self, ctx):
        sa, _ = levels_of(ctx.tidy, self.experiment_name, self.a)
        sb, _ = levels_of(ctx.tidy, self.experiment_name, self.b)
        cond = T.fixed(ctx.tidy.spec(self.experiment_name))
        return {"a": levels_words(sa or {}) or "/".join(map(str, self.a)),
                "b": levels_words(sb or {}) or "/".join(map(str, self.b)),
                "levels": "", "conditions": levels_words(cond) or "the baselines"}

    def sides(self, ctx, build, settings):
        sb, why = levels_of(ctx.tidy, self.experiment_name, self.b)
        if sb is None:
            return missing("", why)
        w = self.where(settings)
        la = f"{self.engine} {levels_label(settings)}".strip()
        lb = f"{self.engine} {levels_label(sb)}".strip()
        return ((la, pool(ctx, self.experiment_name, build, settings, engine=self.engine, **w)),
                (lb, pool(ctx, self.experiment_name, build, sb, engine=self.engine, **w)))

    def absent(self, ctx, build, label):
        why = unsupported_reason(ctx, self.experiment_name, build, self.engine)
        if why:
            return missing("build", why)
        return self.absent_tables(ctx) or missing("data", f"no {self.experiment_name} cells of {label}")


@dataclass(frozen=True)
class BuildRatio(Comparison):
    """Build a / build b: one engine, the same cells otherwise (one row for both builds)."""
    engine: str = ""
    a: str = ""
    b: str = ""

    def builds(self, ctx):
        return [f"{self.a} vs {self.b}"]

    def sides(self, ctx, build, settings):
        w = self.where(settings)
        return ((self.a, pool(ctx, self.experiment_name, self.a, settings, engine=self.engine, **w)),
                (self.b, pool(ctx, self.experiment_name, self.b, settings, engine=self.engine, **w)))

    def absent(self, ctx, build, label):
        exp = self.experiment_name
        why = unsupported_reason(ctx, exp, label, self.engine)
        if why:
            return missing("build", why)
        if label not in (ctx.tidy.spec(exp).get("builds") or ctx.tidy.config.get("builds") or [label]):
            return missing("build", f"{label} is not a build of experiment {exp} in this profile")
        return missing("build", f"no {exp} cells of {label} {self.engine}")


@dataclass(frozen=True)
class TablesRatio(Comparison):
    """a tables / b tables for one engine at the most cores measured with both."""
    same_tables = False
    engine: str = ""
    a: int = 8
    b: int = 1

    def sides(self, ctx, build, settings):
        pa = pool(ctx, self.experiment_name, build, settings, engine=self.engine, tables=self.a)
        pb = pool(ctx, self.experiment_name, build, settings, engine=self.engine, tables=self.b)
        both = sorted({c.int("cores") for c in pa} & {c.int("cores") for c in pb})
        if not both:
            return ((f"{self.a} tables", []), (f"{self.b} table{'s' if self.b != 1 else ''}", []))
        top = both[-1]
        return ((f"{self.engine} {self.a} tables", [c for c in pa if c.int("cores") == top]),
                (f"{self.b} table{'s' if self.b != 1 else ''}", [c for c in pb if c.int("cores") == top]))

    def absent(self, ctx, build, label):
        return missing("data", f"{self.experiment_name} {self.engine} needs {self.a} and {self.b} "
                               f"tables on the same cores")


@dataclass(frozen=True)
class ScalingRatio(Comparison):
    """(best at the most cores / best at the fewest, with a tables) divided by the
    same gain with b tables, for one engine: 'a tables scale better than b'."""
    engine: str = ""
    a: int = 8
    b: int = 1

    def evaluate(self, ctx, build):
        if ctx.tidy.experiment(self.experiment_name) is None:
            return missing(*ctx.tidy.missing(self.experiment_name).split(": ", 1))
        settings, why = self.settings(ctx)
        if settings is None:
            return missing("", why)
        pools = {t: pool(ctx, self.experiment_name, build, settings, engine=self.engine, tables=t)
                 for t in (self.a, self.b)}
        if not pools[self.a] or not pools[self.b]:
            return missing("data", f"{self.experiment_name} {self.engine} needs both {self.a} and "
                                   f"{self.b} tables")
        cores = sorted({c.int("cores") for c in pools[self.a]} & {c.int("cores") for c in pools[self.b]})
        why = self.gate(ctx, pools[self.a] + pools[self.b])
        if why or len(cores) < 2:
            peak = _ratio(best(pools[self.a]).median(METRIC), best(pools[self.b]).median(METRIC))
            return missing("cores", (why or "").removeprefix("cores: ") or
                           f"scaling needs two core counts measured with both table counts; "
                           f"measured on {fmt_cores(cores)}",
                           f"{self.engine}: peak {self.a}/{self.b} tables {peak:.2f}× on "
                           f"{fmt_cores(cores)}")
        lo, hi = cores[0], cores[-1]
        cells = {(t, c): best([x for x in pools[t] if x.int("cores") == c]) for t in (self.a, self.b)
                 for c in (lo, hi)}
        groups = [(cells[(self.a, hi)].values(METRIC), 1), (cells[(self.a, lo)].values(METRIC), -1),
                  (cells[(self.b, hi)].values(METRIC), -1), (cells[(self.b, lo)].values(METRIC), 1)]
        ci = product_interval(groups, ctx.level)
        verdict, reason = V.decide(ci, self.rule.threshold, self.rule.side, self.rule.threshold_hi)
        gain = {t: cells[(t, hi)].median(METRIC) / cells[(t, lo)].median(METRIC) for t in (self.a, self.b)}
        measured = (f"{self.engine}, {lo}→{hi} cores: {gain[self.a]:.2f}× with {self.a} tables, "
                    f"{gain[self.b]:.2f}× with {self.b}: {_interval(ci)}")
        used = list(cells.values())
        return Result(measured, verdict, reason + flagged(used), ci, None,
                      tuple(len(g[0]) for g in groups), used)


@dataclass(frozen=True)
class Check(Claim):
    """A pass/fail claim (no ratio): `fn(ctx, build) -> Result`, gated on the
    cells it returns like any other claim."""
    fn: Callable | None = None

    def evaluate(self, ctx, build):
        for e in self.experiments:
            if ctx.tidy.experiment(e) is None:
                return missing(*ctx.tidy.missing(e).split(": ", 1))
        res = self.fn(ctx, build)
        return _gated(self, ctx, res, res.cells) if res.verdict != NOT_MEASURABLE else res


# --- wait events ----------------------------------------------------------------------

LOCK_WAITS = re.compile(r"^wait/(synch|lock)/")


def short_event(name: str) -> str:
    return re.sub(r"^synch/", "", re.sub(r"^wait/", "", name))


def event_label(name: str) -> str:
    """'wait/synch/mutex/sql/THD::LOCK_thd_data' -> 'sql/THD::LOCK_thd_data'."""
    return name.split("/", 3)[-1]


def top_waits(ctx: Context, experiment: str, build: str, engine: str, tables: int | None = None):
    """(cells, [(event, share of lock+synch wait time)] descending) of an engine's
    cell with the most users, then cores (timers summed over its repetitions);
    cells with the Performance Schema off have no wait rows and do not count."""
    rows = [r for r in ctx.tidy.extra("waits", experiment)
            if r.get("build", "") == build and r.get("engine") == engine
            and LOCK_WAITS.match(r.get("event_name") or "")
            and (tables is None or r.get("tables") == str(tables))]
    if not rows:
        return [], []

    def key(r):
        return (T.number(r.get("users")) or 0, T.number(r.get("cores")) or 0)
    top = max(key(r) for r in rows)
    rows = [r for r in rows if key(r) == top]
    cell_keys = {(r.get("variant"), r.get("tables")) for r in rows}
    cells = [c for c in ctx.tidy.cells(experiment, build=build, engine=engine)
             if (c["variant"], c["tables"]) in cell_keys and (c.int("users"), c.int("cores")) == top]
    totals = {}
    for r in rows:
        totals[r["event_name"]] = totals.get(r["event_name"], 0.0) + (T.number(r.get("sum_timer_wait_ps")) or 0)
    total = sum(totals.values())
    if total <= 0:
        return cells, []
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return cells, [(e, v / total) for e, v in ranked]


@dataclass(frozen=True)
class TopWait(Claim):
    """Does the published wait (a regular expression on the event name) appear among
    the top `top_n` lock/synchronisation waits of the engine's busiest cell?"""
    experiment_name: str = ""
    engine: str = ""
    tables: int | None = None
    pattern: str = ""
    top_n: int = 5

    def evaluate(self, ctx, build):
        if ctx.tidy.experiment(self.experiment_name) is None:
            return missing(*ctx.tidy.missing(self.experiment_name).split(": ", 1))
        cells, ranked = top_waits(ctx, self.experiment_name, build, self.engine, self.tables)
        if not ranked:
            return missing("data", f"no lock or synchronisation waits of {self.engine} in "
                                   f"{self.experiment_name} (Performance Schema off, or no wait time)")
        top = ranked[:self.top_n]
        rank = next((i for i, (e, _) in enumerate(ranked, 1) if re.search(self.pattern, e)), None)
        c = cells[0] if cells else None
        listed = ", ".join(f"{event_label(e)} {100 * s:.0f}%" for e, s in top)
        found = (f"{event_label(ranked[rank - 1][0])} ranks {rank} of {len(ranked)} "
                 f"({100 * ranked[rank - 1][1]:.0f}%)" if rank else "not among the measured waits")
        measured = f"{found}; top {len(top)} of {self.engine}" + (f" ({cell_where(c, c)})" if c else "") + \
            f": {listed}"
        if rank and rank <= self.top_n:
            res = Result(measured, REPRODUCED, f"the published wait is number {rank} of the top "
                                              f"{self.top_n}", cells=cells)
        else:
            where = f"number {rank} of {len(ranked)}" if rank else "not among the measured waits"
            res = Result(measured, NOT_REPRODUCED, f"the published wait is {where}, not in the top "
                                                    f"{self.top_n}", cells=cells)
        res.reason += flagged(cells)
        return _gated(self, ctx, res, cells)


# --- evaluation -----------------------------------------------------------------------

def evaluate(tidy: T.Tidy, claims: list[Claim]) -> list[dict]:
    """One row (CSV_FIELDS) per claim and build, in the order given (the studies' order:
    harness.studies.claims())."""
    ctx = Context.of(tidy)
    rows = []
    for c in claims:
        for build in c.builds(ctx):
            rows.append(c.row(ctx, build))
    return rows


def invariant_violations(rows: list[dict], level: float | None = None) -> list[str]:
    """Rows that say reproduced (or not reproduced) without their interval lying
    entirely on the published (other) side at the coverage asked for: must be none."""
    bad = []
    for r in rows:
        if r["verdict"] not in (REPRODUCED, NOT_REPRODUCED) or not r.get("side"):
            continue
        lo, hi, t = float(r["ratio_lo"]), float(r["ratio_hi"]), float(r["threshold"])
        th = float(r["threshold_hi"]) if r.get("threshold_hi") else None
        side = r["side"]
        on = (lo > t if side == "above" else hi < t if side == "below" else t <= lo and hi <= th)
        off = (hi <= t if side == "above" else lo >= t if side == "below" else hi < t or lo > th)
        ok = on if r["verdict"] == REPRODUCED else off
        if level is not None and float(r["coverage"]) < level:
            ok = False
        if not ok:
            bad.append(f"{r['claim']} ({r['build']}): {r['verdict']} with [{lo}, {hi}] vs {side} {t}")
    return bad
