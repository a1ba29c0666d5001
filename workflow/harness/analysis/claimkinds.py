"""The kinds of published claim (Claim and its one gate; Comparison and its
sides: EngineRatio, LevelRatio, BuildRatio, TablesRatio, CoresRatio, ScalingRatio; Check;
Untestable: a published claim no host can test, with its reason),
on the ground of harness.analysis.claimrules. harness.analysis.claims explains
the verdict rule and re-exports these kinds.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Callable

from harness.analysis import intervals as I
from harness.analysis import tidyread as T
from harness.analysis.claimrules import METRIC, NEEDS_TEXT, NOT_MEASURABLE, SCALING, VERDICTS, Rule
from harness.analysis.claimresult import Context, Result, flagged, missing
from harness.analysis.claimpick import (
    at_cores, best, levels_label, levels_of, levels_words, matches, planned_levels, pool, unsupported_reason)
from harness.analysis.claimmath import peak_result, ratio_or_none, scaling_groups, scaling_judged
from harness.analysis.claimtext import interval_text, fmt_cores, settings_text


@dataclass(frozen=True)
class Claim:
    """One published claim, one row per build (a build comparison: one row).

    `statement` may use {levels} (the compared settings in words) and
    {conditions} (the factor settings held fixed). `needs` is the gate
    (CONTENTION / SCALING / None); `mechanism` quotes the study's explanation
    that makes it so; `min_cores` is the CPU count (hardware threads given to
    mysqld) that mechanism needs, from the study's own figures, and `cores_why`
    says where that count comes from. `macro` (letters) names the paper's
    \\V<macro>/\\R<macro>. The study's own words each rule stands on are quoted
    in docs/studies.md's claims table (tests/unit/test_quotes.py keeps the two equal)."""
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
    min_cores: int = 0    # a contention/scaling claim: the hardware threads mysqld needs for its mechanism
    cores_why: str = ""   # where min_cores comes from ("A1's figures: 4 to 32 cores")
    limits: str = ""      # how a deviation (in `deviation`) limits the verdict: said in every row's reason
    # a claim without a ratio rule whose verdict still reads an interval over the blocks (a per-block
    # difference, harness.analysis.waits.judge_difference): undecided, it asks for more blocks
    # (Result.pending) like a ratio claim; the plan's odds count it undecided until its last look
    by_blocks: bool = False

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

    def rule_words(self) -> str:
        """The rule in words, as docs/studies.md's quote table writes it."""
        return self.rule.text() if self.rule is not None else "pass or fail"

    def read_levels(self, experiment: str, spec: dict) -> list[dict] | None:
        """The factor settings of the cells this claim reads in `experiment`, from its
        config `spec` alone: one {factor: level} per side that differs (harness.plan.reads
        plans only those cells); None: any (the claim does not hold the factors). A claim
        with `levels` (None: the baselines) reads those in its `experiment_name`."""
        if "levels" not in {f.name for f in fields(self)} or experiment != self.experiment_name:
            return None
        return planned_levels(spec, experiment, self.levels)

    def scaling_cores(self, cores) -> list[int]:
        """The core counts a scaling claim scales over, fewest to most: those at or above its
        `min_cores`, where the study measured (A3 ran 16 to 64 hardware threads; a gain from
        fewer cores would judge a range the author never spoke of)."""
        return sorted(c for c in cores if c >= self.scaling_floor())

    def scaling_floor(self) -> int:
        """The fewest cores a scaling claim scales from (its `min_cores`, at least 1)."""
        return max(1, self.min_cores)

    def cores_needed(self) -> str:
        """'16 hardware threads (A3's figures: ...)': the count the gate asks, in words."""
        return f"{self.min_cores} hardware threads" + (f" ({self.cores_why})" if self.cores_why else "")

    def gate(self, ctx: Context, cells: list[T.Cell]) -> str | None:
        """The one rule for contention and scaling claims: the reason (cores: ...)
        when the cells never had mysqld on the claim's own min_cores."""
        if self.needs is None or not cells:
            return None
        cores = sorted({c.int("cores") for c in cells})
        if max(cores) < self.min_cores:
            why = self.mechanism or NEEDS_TEXT[self.needs]
            return (f"cores: the published mechanism ({why}) needs mysqld on at least "
                    f"{self.cores_needed()}; measured on {fmt_cores(cores)}")
        if self.needs == SCALING and len(self.scaling_cores(cores)) < 2:
            return (f"cores: scaling needs two core counts of at least {self.scaling_floor()}; "
                    f"measured on {fmt_cores(cores)}")
        return None

    def row(self, ctx: Context, build: str) -> dict:
        try:
            res = self.evaluate(ctx, build)
        except (LookupError, ValueError, TypeError, ZeroDivisionError) as e:
            res = missing("data", f"cannot evaluate ({type(e).__name__}: {e})")
        if res.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id}: invalid verdict {res.verdict!r}")
        ci, rule = res.ci, self.rule
        reason = res.reason + (f"; limited: {self.limits}" if self.limits else "") \
            + settings_text(res.cells)   # every setting of the cells it read
        return {
            "claim": self.id, "study": self.study, "statement": self.text(ctx),
            "published": self.published,
            "published_ratio": "" if self.published_ratio is None else f"{self.published_ratio:.4g}",
            "measured": res.measured,
            "ratio": "" if ci is None else f"{ci.point:.6g}",
            "ratio_lo": "" if ci is None else f"{ci.lo:.6g}",
            "ratio_hi": "" if ci is None else f"{ci.hi:.6g}",
            "coverage": "" if ci is None else f"{ci.coverage:.6g}",
            "level": "" if ci is None else f"{ci.level:.6g}",
            "method": "" if ci is None else ci.method,
            "look": res.look,
            "sign_lo": "" if res.sign is None else f"{res.sign.lo:.6g}",
            "sign_hi": "" if res.sign is None else f"{res.sign.hi:.6g}",
            "sign_coverage": "" if res.sign is None else f"{res.sign.coverage:.6g}",
            "magnitude": ("" if ci is None or self.published_ratio is None else
                          I.magnitude(self.published_ratio, ci)),
            "threshold": "" if rule is None else f"{rule.threshold:.6g}",
            "threshold_hi": "" if rule is None or rule.threshold_hi is None else f"{rule.threshold_hi:.6g}",
            "side": "" if rule is None else rule.side,
            "n": "/".join(str(n) for n in res.ns),
            "verdict": res.verdict, "reason": reason, "needs": self.needs or "",
            "experiment": self.experiment, "build": build, "metric": METRIC if rule else "",
            "cross_check": "" if res.cross_check is None else f"{res.cross_check:.6g}",
        }


def gated(claim: Claim, ctx: Context, res: Result, candidates: list[T.Cell]) -> Result:
    """Apply the gate: a measured result on too few cores becomes NOT_MEASURABLE,
    keeping what was measured."""
    why = claim.gate(ctx, candidates)
    if why is None:
        return res
    return replace(res, verdict=NOT_MEASURABLE, reason=why + flagged(res.cells))


@dataclass(frozen=True)
class Comparison(Claim):
    """Side a at its peak / side b at its peak over the loads both measured (one load:
    the two cells' paired ratio; claimmath.peak_result), every other factor held fixed.
    Subclasses say what the sides are (engines, levels, ...)."""
    experiment_name: str = ""
    tables: int | None = None
    levels: tuple | None = None   # the experiment's varied factors held at these levels (None: baselines)
    same_as: tuple | None = None  # (experiment, levels): the study's conditions the cells must have
    same_tables = True            # tables=None: compare at the most tables both sides have
    load = ("users", "cores")     # what a load is: peaks are compared over the loads both sides measured

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
            return missing(*ctx.tidy.missing(self.experiment_name))
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
        na, nb = at_cores(pa, self.min_cores), at_cores(pb, self.min_cores)
        if na and nb:  # the gate: a contention claim is judged on enough cores only
            return self.judge(ctx, la, na, lb, nb)
        res = self.judge(ctx, la, pa, lb, pb)
        why = self.gate(ctx, pa + pb) or (f"cores: only one side has cells with mysqld on at least "
                                          f"{self.cores_needed()}")
        return replace(res, verdict=NOT_MEASURABLE, reason=why + flagged(res.cells))

    def judge(self, ctx, la, pa, lb, pb) -> Result:
        return peak_result(ctx, pa, pb, self.rule, la, lb, self.load)

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

    def read_levels(self, experiment, spec):
        return planned_levels(spec, experiment, self.a, self.b) if experiment == self.experiment_name else None

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
    top_cores = True   # reads only the most cores planned (harness.plan.reads)
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
class CoresRatio(Comparison):
    """One engine's best on `a` cores / its best on `b` cores (a=None: the most cores
    measured above b). Both core counts must have been measured (cores: ...)."""
    engine: str = ""
    a: int | None = None
    b: int = 0
    load = ("users",)   # the sides differ in cores: peaks over the users both measured

    def _cores(self, ctx, build):
        return sorted({c.int("cores") for c in ctx.tidy.cells(self.experiment_name, build=build,
                                                                engine=self.engine)})

    def sides(self, ctx, build, settings):
        cores = self._cores(ctx, build)
        if not cores:
            why = unsupported_reason(ctx, self.experiment_name, build, self.engine)
            return missing("build", why) if why else self.absent(ctx, build, self.engine)
        a = self.a if self.a is not None else next((c for c in reversed(cores) if c > self.b), None)
        if self.b not in cores or a is None or a not in cores:
            want = f"{self.b} and {self.a} cores" if self.a else f"{self.b} and more than {self.b} cores"
            return missing("cores", f"scaling of {self.engine} needs mysqld on {want}; held on "
                                      f"{fmt_cores(cores)} here (the host has too few)")
        p = pool(ctx, self.experiment_name, build, settings, engine=self.engine, **self.where(settings))
        return ((f"{self.engine} on {a} cores", [c for c in p if c.int("cores") == a]),
                (f"on {self.b} cores", [c for c in p if c.int("cores") == self.b]))

    def absent(self, ctx, build, label):
        return missing("data", f"no {self.experiment_name} cells of {label}")


@dataclass(frozen=True)
class ScalingRatio(Comparison):
    """(peak at the most cores / peak at the fewest at or above min_cores, with a tables)
    divided by the same gain with b tables, for one engine: 'a tables scale better than b';
    peaks over the users all four measured, no cell chosen from the data
    (claimmath.scaling_judged)."""
    engine: str = ""
    a: int = 8
    b: int = 1

    def evaluate(self, ctx, build):
        if ctx.tidy.experiment(self.experiment_name) is None:
            return missing(*ctx.tidy.missing(self.experiment_name))
        settings, why = self.settings(ctx)
        if settings is None:
            return missing("", why)
        pools = {t: pool(ctx, self.experiment_name, build, settings, engine=self.engine, tables=t)
                 for t in (self.a, self.b)}
        if not pools[self.a] or not pools[self.b]:
            return missing("data", f"{self.experiment_name} {self.engine} needs both {self.a} and "
                                   f"{self.b} tables")
        both = {c.int("cores") for c in pools[self.a]} & {c.int("cores") for c in pools[self.b]}
        cores = self.scaling_cores(both)
        why = self.gate(ctx, pools[self.a] + pools[self.b])
        if why or len(cores) < 2:
            peak = ratio_or_none(best(pools[self.a]).median(METRIC), best(pools[self.b]).median(METRIC))
            return missing("cores", (why or "").removeprefix("cores: ") or
                           f"scaling needs two core counts of at least {self.scaling_floor()} "
                           f"measured with both table counts; measured on {fmt_cores(sorted(both))}",
                           f"{self.engine}: peak {self.a}/{self.b} tables {peak:.2f}× on "
                           f"{fmt_cores(sorted(both))}")
        lo, hi = cores[0], cores[-1]
        groups = scaling_groups(pools, self.a, self.b, lo, hi)
        if not all(groups):
            return missing("data", f"{self.engine}: no users measured with both table counts on "
                                   f"{lo} and {hi} cores")
        j = scaling_judged(ctx, self.experiment_name, groups, self.rule)
        measured = (f"{self.engine}, {lo}→{hi} cores, users {', '.join(c['users'] for c in groups[0])}: "
                    f"{self.a} tables ÷ {self.b}: {interval_text(j.ci)}")
        return Result.judged(measured, j, [c for g in groups for c in g])


@dataclass(frozen=True)
class Check(Claim):
    """A pass/fail claim (no ratio): `fn(ctx, build) -> Result`, gated on the
    cells it returns like any other claim; `rule_text` its rule in words, if more than
    pass or fail."""
    fn: Callable | None = None
    rule_text: str = ""
    # the cells fn reads, as a figure's `draws`: {"engine": [...], "build": [...], "tables": [...],
    # "cores": [...], "levels": LEVELS or None (the baselines)}; harness.plan.reads plans only
    # those (tests/unit/test_claim_reads.py checks fn's row is the same without the others); None: all
    reads: dict | None = field(default=None, compare=False)

    def rule_words(self) -> str:
        return self.rule_text or "pass or fail"

    def read_levels(self, experiment, spec):
        return planned_levels(spec, experiment, self.reads["levels"]) if "levels" in (self.reads or {}) else None

    def evaluate(self, ctx, build):
        for e in self.experiments:
            if ctx.tidy.experiment(e) is None:
                return missing(*ctx.tidy.missing(e))
        res = self.fn(ctx, build)
        return gated(self, ctx, res, res.cells) if res.verdict != NOT_MEASURABLE else res


@dataclass(frozen=True)
class Untestable(Claim):
    """A published claim the artifact cannot test on any host (a build that was never
    published, a filesystem comparison on a host with one): a row, *not measurable
    here*, `why` its reason (starting with what is missing: build, host, ...)."""
    why: str = ""

    def builds(self, ctx):
        return [""]

    def evaluate(self, ctx, build):
        return missing("", self.why)

    def rule_words(self) -> str:
        return "not measurable here"
