"""A/A controls (study AA): a setting compared with itself, in every profile.

Two experiments of config/default.yaml measure one setting as two cells that
differ only in the A/A factor their config varies (harness.measure.factors: its
values a and b set nothing on the server or in the driver; like every claim, this
module never names a factor): `aa_throughput` (InnoDB Point-Selects, one
table) and `aa_steps` (study C's test drive, InnoDB only, its smallest row
count). They are ordinary experiments, so they run in the same blocks as the
claims, and their claims are judged by the same rule as every ratio claim: a
band "no difference" around 1.

What they give the rest of the paper:

- the run's *resolution*: the half-width, in log ratio, of the A/A
  throughput interval at `claims.level`, as a fraction: "this host resolved
  ratios beyond ±x%" (`resolution(tidy)`). A ratio claim whose published effect
  lies inside it says so in its reason (`annotate`, called by the report);
- a *quiet-host check*: an A/A interval that excludes 1 at level 0.99 means the
  host drifted or was disturbed between two cells that should be equal; the
  report prints one line on stderr (`warnings`) and the paper says so
  (\\AAQuietSentence).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from harness.analysis import claims as C
from harness.analysis import tidyread as T
from harness.analysis.claimtext import interval_text

NAME = "aa"
CODES = ("AA",)
TITLE = "A/A controls"
SECTION = "section.tex"

THROUGHPUT, STEPS = "aa_throughput", "aa_steps"
NOISE_EXPERIMENT = THROUGHPUT  # its cells' CoV is the host's noise in the plan's odds (harness.plan.odds)
EXPERIMENTS = {
    THROUGHPUT: ("AA", "A/A control: InnoDB Point-Selects, one table, measured as two cells (a, b)"),
    STEPS: ("AA", "A/A control: the test drive on InnoDB alone, measured as two cells (a, b)"),
}
SETUP = []   # the studies had no A/A control: nothing of theirs to differ from

# 'No difference': within ±5%. The smallest effect any published ratio claim of these
# studies states is 5% (A3's OLTP_RO peaks, 200K vs 210K, 0.95x; several of its other
# ratios lie between 1.05 and 1.19): an A/A pair inside this band shows the host can
# tell apart effects of the size the claims are about.
BAND = C.EQUIVALENT   # stated once, in harness.analysis.claimrules
NO_DIFFERENCE = C.equivalent("'no difference'")
FLAG_LEVEL = 0.99   # an A/A interval excluding 1 at this level flags the run (not quiet)
STEP = ("C1", "InnoDB", "insert_s")   # the steps control's metric: C1's insert time on InnoDB


@dataclass(frozen=True)
class PairStepRatio(C.Claim):
    """median over repetitions of a steps metric (step, engine, metric) at the level `a`
    of the experiment's varied factor ÷ the same at level `b`, one value per repetition (a step timed several times
    in a repetition counts once, by its median), judged as study C's step ratios
    (harness.studies.c.StepRatio) are."""
    experiment_name: str = STEPS
    step: tuple = STEP
    a: str = "a"
    b: str = "b"

    def words(self, ctx):
        out = {}
        for key, level in (("a", self.a), ("b", self.b)):
            settings, _ = C.levels_of(ctx.tidy, self.experiment_name, (level,))
            out[key] = C.levels_words(settings or {}) or level
        return out

    def values(self, ctx, build: str, settings: dict) -> dict:
        step, engine, metric = self.step
        by_rep: dict = {}
        for cell in ctx.tidy.cells(self.experiment_name, build=build):
            if not C.matches(cell, settings):
                continue
            for r in cell.runs:
                v = T.number(r.get("value"))
                if (r.get("step"), r.get("engine"), r.get("metric")) == (step, engine, metric) \
                        and T.flag(r.get("ok", "")) and v is not None:
                    by_rep.setdefault(r.get("rep", ""), []).append(v)
        return {rep: statistics.median(v) for rep, v in by_rep.items()}

    def evaluate(self, ctx, build):
        exp = self.experiment_name
        if ctx.tidy.experiment(exp) is None:
            return C.missing(*ctx.tidy.missing(exp))
        sides = []
        for level in (self.a, self.b):
            settings, why = C.levels_of(ctx.tidy, exp, (level,))
            if settings is None:
                return C.missing("", why)
            sides.append((C.levels_label(settings), self.values(ctx, build, settings)))
        (la, va), (lb, vb) = sides
        for label, v in sides:
            if not v:
                return C.missing("data", f"no passing {' '.join(self.step)} of {label} in {build}")
        j = ctx.judge(exp, va, vb, self.rule)   # paired by repetition, as every ratio claim
        measured = (f"{self.step[1]} {self.step[0]} {la} {statistics.median(va.values()):.3g} s vs "
                    f"{lb} {statistics.median(vb.values()):.3g} s: {interval_text(j.ci)}")
        return C.Result.judged(measured, j)

    def row(self, ctx, build):
        r = super().row(ctx, build)
        r["metric"] = "time_s"
        return r


CLAIMS = [
    C.LevelRatio(
        id="AA-throughput-no-difference", study="AA",
        statement="A/A control: InnoDB Point-Selects on one table, {a} ÷ {b}, two cells of the same "
                  "setting: no difference",
        published="no difference (1×)", published_ratio=1.0, rule=NO_DIFFERENCE, macro="AAThroughput",
        experiments=(THROUGHPUT,), experiment_name=THROUGHPUT, engine="InnoDB", a=("a",), b=("b",)),
    PairStepRatio(
        id="AA-steps-no-difference", study="AA",
        statement="A/A control: the test drive's stored-procedure inserts (C1) on InnoDB, the time of "
                  "{a} ÷ that of {b}, two cells of the same setting: no difference",
        published="no difference (1×)", published_ratio=1.0, rule=NO_DIFFERENCE, macro="AASteps",
        experiments=(STEPS,)),
]
THROUGHPUT_CLAIM, STEPS_CLAIM = CLAIMS

FIGURES = {}
PUBLISHED_MARKS = []


# --- resolution and the quiet-host check ------------------------------------------------

def _ratio_rows(tidy, claims, level: float | None = None) -> list[dict]:
    """The claims' rows (at `level`, else claims.level) that have an interval."""
    ctx = C.Context.of(tidy)
    if level is not None:
        ctx = C.Context(tidy, level)
    rows = [c.row(ctx, build) for c in claims for build in c.builds(ctx)]
    return [r for r in rows if r["ratio_lo"] and r["ratio_hi"] and r["coverage"]]


def half_width(row: dict) -> float:
    """Half the width of a row's interval in log ratio, as a ratio fraction: exp(h) - 1."""
    lo, hi = float(row["ratio_lo"]), float(row["ratio_hi"])
    return math.exp((math.log(hi) - math.log(lo)) / 2) - 1


def resolution_row(tidy) -> dict | None:
    """The A/A throughput row the resolution comes from: the widest interval over the
    builds measured, among those of coverage >= claims.level (None: no such row)."""
    level = C.Context.of(tidy).level
    rows = [r for r in _ratio_rows(tidy, [THROUGHPUT_CLAIM]) if float(r["coverage"]) >= level]
    return max(rows, key=half_width) if rows else None


def resolution(tidy) -> float | None:
    """This run's resolution: the half-width of the A/A throughput interval (log ratio)
    at claims.level, as a ratio fraction (0.04: ratios beyond ±4% are resolved). None
    when the run has no A/A throughput interval of that coverage."""
    row = resolution_row(tidy)
    return None if row is None else half_width(row)


def inside(published_ratio: float, res: float) -> bool:
    """Whether a published ratio lies inside ±res around 1 (in log ratio)."""
    return abs(math.log(published_ratio)) <= math.log1p(res)


def annotate(ctx, rows: list[dict]) -> list[dict]:
    """Each ratio claim whose published effect lies inside this run's resolution says so
    in its reason (the A/A rows themselves excepted). Rows are changed in place."""
    res = resolution(ctx.tidy)
    if res is None:
        return rows
    for r in rows:
        if r["study"] in CODES or not r.get("side") or not r.get("published_ratio"):
            continue
        p = float(r["published_ratio"])
        if p > 0 and inside(p, res):
            r["reason"] += (f"; the published effect ({p:.3g}×) lies inside this run's A/A resolution "
                            f"(±{100 * res:.1f}%): an effect that small is not expected to be resolved here")
    return rows


def quiet_check(tidy) -> tuple[list[str], list[str]]:
    """(flags, unchecked): one line per A/A row whose interval at FLAG_LEVEL excludes 1
    (the host was not quiet), and one per A/A row whose repetitions cannot give an
    interval of that coverage (not checked)."""
    flags, unchecked = [], []
    for r in _ratio_rows(tidy, CLAIMS, FLAG_LEVEL):
        lo, hi, cov = float(r["ratio_lo"]), float(r["ratio_hi"]), float(r["coverage"])
        where = f"{r['claim']} ({r['build']})" if r["build"] else r["claim"]
        if cov < FLAG_LEVEL:
            unchecked.append(f"{where}: n = {r['n']}, at most {100 * cov:.1f}% coverage")
        elif lo > 1 or hi < 1:
            flags.append(f"{where}: a ÷ b in [{lo:.4g}, {hi:.4g}] at {100 * cov:.1f}% "
                         f"coverage excludes 1")
    return flags, unchecked


def warnings(tidy) -> list[str]:
    """Lines for stderr at report time: a run whose A/A interval excludes 1 at 0.99."""
    flags, _ = quiet_check(tidy)
    return [f"WARNING: the host was not quiet: A/A control {f} at level {FLAG_LEVEL:g}; "
            f"verdicts of this run may rest on drift, not on the settings" for f in flags]


def macros(ctx, rows, fmt):
    res_row = resolution_row(ctx.tidy)
    res = None if res_row is None else half_width(res_row)
    flags, unchecked = quiet_check(ctx.tidy)
    any_aa = bool(_ratio_rows(ctx.tidy, CLAIMS))
    inside_n = sum(1 for r in rows if "inside this run's A/A resolution" in r.get("reason", ""))
    if res is None:
        sentence = ("This run has no A/A throughput interval of coverage at least "
                    f"{100 * ctx.level:.0f}\\%, so it states no resolution (Section~\\ref{{sec:aa}}).")
    else:
        sentence = (f"From its A/A control (Section~\\ref{{sec:aa}}), this host resolved ratios beyond "
                    f"$\\pm${fmt.fmt_num(round(100 * res, 1))}\\% at level "
                    f"{fmt.fmt_coverage(float(res_row['coverage']))}: {inside_n} claim(s) whose "
                    f"published effect lies inside that say so in their reason.")
    if flags:
        quiet = ("\\textbf{The host was not quiet}: an A/A interval at level "
                 f"{100 * FLAG_LEVEL:.0f}\\% excludes 1 ({fmt.tex_escape('; '.join(flags))}), so "
                 "differences between cells of this run may be drift rather than the settings.")
    elif not any_aa:
        quiet = "No A/A control was measured in this run, so whether the host was quiet is not known."
    elif unchecked:
        quiet = (f"Whether the host was quiet could not be checked at level {100 * FLAG_LEVEL:.0f}\\%: "
                 f"the A/A controls have too few repetitions for that coverage "
                 f"({fmt.tex_escape('; '.join(unchecked))}).")
    else:
        quiet = (f"No A/A interval at level {100 * FLAG_LEVEL:.0f}\\% excludes 1: the host was quiet "
                 f"as far as the controls can tell.")
    return [
        ("AAResolution", fmt.NA if res is None else fmt.fmt_num(round(100 * res, 1))),
        ("AAResolutionLevel", fmt.NA if res_row is None else fmt.fmt_coverage(float(res_row["coverage"]))),
        ("AAResolutionSentence", sentence),
        ("AABand", fmt.fmt_num(round(100 * (BAND - 1)))),
        ("AAFlagLevel", f"{100 * FLAG_LEVEL:.0f}"),
        ("AAQuietSentence", quiet),
        ("AAStepsRows", fmt.fmt_int(ctx.tidy.spec(STEPS)["rows"]) if ctx.tidy.spec(STEPS).get("rows") else fmt.NA),
    ]
