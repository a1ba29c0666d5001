"""Study C (2005): MySQL 5.0's pluggable storage engines, a test drive --
C1 inserts from a stored procedure, C2 real scans and engine conversions,
C3 ARCHIVE's storage, C4 pluggability -- read from the `test_drive` steps
experiment (harness.studies.c.test_drive).

Its tidy rows are one per (step, engine, metric) and repetition, so this module reads
them itself (`values`) and judges times as ratios in the published direction (above 1:
the first-named engine took longer). The engines run in one cell, in a random order
per repetition, so a repetition holds both sides of a ratio: paired by repetition (a
step timed several times counts once, by its median) and judged like every ratio claim
(harness.analysis.blockverdict); too few repetitions: inconclusive, saying how many.
Published numbers: docs/studies.md (Study C). `reap`: its labelled stand-ins (`harness reap`).
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from harness.analysis import blockverdict as BV, claims as C, intervals as I, tidyread as T
from harness.analysis import marks as _marks
from harness.analysis.claimtext import interval_text
from harness.studies.c import legacy_pg, percommit, test_drive
# reading the steps rows and formatting them (names the claims, tables and tests use from here)
from harness.studies.c.steprows import (  # noqa: F401
    by_rep, fmt_bytes, fmt_s, median, ok, rows_loaded, setup_value, step_rows, values)
from harness.studies.c.legacy_pg import reap  # noqa: F401

NAME = "c"
CODES = ("C1",)
TITLE = "Study C: MySQL 5.0's pluggable storage engines, a test drive"
SECTION = "section.tex"

EXPERIMENT = "test_drive"
STEP_SCRIPTS = {test_drive.SCRIPT: test_drive}
# The estimate's fit of a test_drive cell (harness.registry.steps_fits; here, not in the step script,
# whose hash is in every cell's settings digest): seconds = fixed + rows x per-row, per build, by
# bench/steps_rate.py on the real cell (paper spec, Docker), 2026-11-28, 2-CPU VM, load 0.6-2.9
# (docs/benchmarks-record.md). `fixed`: the intercept of the cells at 10,000-400,000 rows; per-row:
# the chord from it to the paper's 3,000,000 rows (rates fall as tables grow: exact there, long below).
_FIT = {
    "mysql-5.6.24": (5.6, 4.35e-05),    # 3,000,000 rows: 136 s
    "mariadb-10.11": (2.9, 4.25e-04),   # 3,000,000 rows: 1,278 s (Aria 2,660 rows/s)
}
STEPS_FIT = {(EXPERIMENT, b): fit for b, fit in _FIT.items()}
OUTSIDE_COVERAGE = ("Study C's engine order before it was drawn per block (steps cells without C1 position "
                    "rows); the PostgreSQL stand-in, last in every block")  # report.method.limits
EXPERIMENTS = {
    EXPERIMENT: ("C1--C4", "stored-procedure inserts, scans, conversions, ARCHIVE size, pluggability "
                           "(+ PostgreSQL as the legacy stand-in)"),
    percommit.EXPERIMENT: ("C1", "the inserts with a log flush at every commit (the baseline relaxes it)"),
}

SETUP = [
    ("host", "one Pentium 4, 3.0 GHz with Hyper-Threading, 1 GB RAM (C)", "hardware"),
    ("server builds", "MySQL 5.0 (C)", "builds"),
    ("repetitions per point", "one run shown (C)", "repetitions"),
    ("Performance Schema instruments", "none: MySQL 5.0 had no Performance Schema (C)", "pfs_instruments"),
    percommit.SETUP_ROW, percommit.ROWS_ROW]

LEGACY = "PostgreSQL (legacy stand-in)"
STUDY_ENGINES = ("InnoDB", "MyISAM", "ARCHIVE")
# Published times (s) for 3,000,000 rows, docs/studies.md.
PUBLISHED_INSERT_S = {"legacy": 183.01, "InnoDB": 184.75, "MyISAM": 109.88, "ARCHIVE": 73.83}
PUBLISHED_SCAN_S = {"legacy": 1.43, "ARCHIVE": 1.98, "MyISAM": 1.86, "InnoDB": 4.05}
PUBLISHED_CONVERT_S = {"ARCHIVE>MyISAM": 5.86, "MyISAM>InnoDB": 35.89}
PUBLISHED_SAVING = 0.80
# C4's steps whose rows are pass/fail answers of the server (C4.engines* are captures).
C4_CHECK_STEPS = ("C4.feature", "C4.skip_innodb", "C4.restart")
SETUP_SHOWN = ("innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin", "autocommit")


# --- kinds of claim ------------------------------------------------------------------------

@dataclass(frozen=True)
class StepRatio(C.Claim):
    """median(a) / median(b) of two (step, engine, metric) series of the same build, one
    value per repetition; `b_any`: b is, per block, the highest of these engines' values
    ('InnoDB is the slowest': against the slowest other in each block, not noise's pick)."""
    a: tuple = ()                  # (step, engine, metric)
    b: tuple = ()
    b_any: tuple = ()              # engines to pick b's engine from (b's step and metric)
    unit: str = "s"                # "s" or "bytes" (the metric column of the row)

    def series(self, ctx, build):
        """({rep: a}, b's (step, engine, metric), {rep: b}): the engines run in one cell, so
        a repetition holds both sides (a block)."""
        a = by_rep(ctx, build, *self.a)
        if not self.b_any:
            return a, self.b, by_rep(ctx, build, *self.b)
        step, _, metric = self.b
        cands = [(e, by_rep(ctx, build, step, e, metric)) for e in self.b_any]
        cands = [(e, v) for e, v in cands if v]
        if not cands:
            return a, self.b, {}
        if len(cands) == 1:
            return a, (step, cands[0][0], metric), cands[0][1]
        reps, names = set.intersection(*(set(v) for _, v in cands)), " and ".join(e for e, _ in cands)
        if not reps:  # no block has them all
            return a, (step, f"{names} in one block", metric), {}
        return a, (step, f"the slower of {names} per block", metric), {r: max(v[r] for _, v in cands) for r in reps}

    def evaluate(self, ctx, build):
        if ctx.tidy.experiment(EXPERIMENT) is None:
            return C.missing(*ctx.tidy.missing(EXPERIMENT))
        if LEGACY in (self.a[1], self.b[1]):   # C2's scans read the table the C1 loop loaded
            gap = legacy_loop_gap(ctx, build)
            if gap:
                return gap
        va, b, vb = self.series(ctx, build)
        for (step, engine, metric), v in ((self.a, va), (b, vb)):
            if not v:
                why = [r.get("detail") for r in step_rows(ctx, build, None, engine, "skipped")]
                if why:
                    return C.missing("build", why[0])
                return C.missing("data", f"no passing {step} {metric} of {engine} in {build}")
        j = ctx.judge(EXPERIMENT, va, vb, self.rule)
        fmt = fmt_s if self.unit == "s" else fmt_bytes
        rows = f" ({rows_loaded(ctx):,} rows)" if rows_loaded(ctx) else ""
        measured = (f"{self.a[1]} {fmt(statistics.median(va.values()))} vs {b[1]} "
                    f"{fmt(statistics.median(vb.values()))}{rows}: {interval_text(j.ci)}")
        return C.Result.judged(measured, j)

    def row(self, ctx, build):
        r = super().row(ctx, build)
        r["metric"] = "time_s" if self.unit == "s" else "datadir_bytes"
        return r


def legacy_loop_gap(ctx, build) -> C.Result | None:
    """NOT_MEASURABLE when the stand-in's C1 rows of `build` were not the study's loop (one
    transaction): cells measured before the loop ran so (a COMMIT per row), kept as data by a
    replot, judge another procedure than the study's, and C2 scans the table that loop loaded
    (one transaction id a row); None when every row says the loop."""
    want = legacy_pg.LOOP_WORDS[legacy_pg.ONCE]
    other = [r for r in step_rows(ctx, build, "C1", LEGACY, "insert_s") if want not in (r.get("detail") or "")]
    if not other:
        return None
    return C.missing("data", f"the PostgreSQL stand-in's C1 loop in {build}, which loads the table C2 scans, "
                             f"did not run as the study's, one "
                             f"transaction ({len(other)} row(s) say: {(other[0].get('detail') or '?')[:90]}); "
                             f"re-measure {EXPERIMENT} (legacy_commit: once)")


def pluggability(ctx, build) -> C.Result:
    """C4: every pass/fail answer of the server (features per engine, InnoDB off and
    back) passed, in every repetition; skipped engines (not in the build) do not count."""
    rows = [r for s in C4_CHECK_STEPS for r in step_rows(ctx, build, s)]
    rows = [r for r in rows if r.get("metric") != "skipped"]
    if not rows:
        return C.missing("data", f"no C4 pass/fail rows of {build}")
    failed = [r for r in rows if not ok(r)]
    checks = {(r.get("step"), r.get("engine"), r.get("metric")) for r in rows}
    engines = sorted({e for s, e, _ in checks if s == "C4.feature"})
    measured = (f"{len(rows) - len(failed)} of {len(rows)} checks passed ({len(checks)} distinct: "
                f"procedure, trigger, view on {', '.join(engines)}; InnoDB disabled and back)")
    if failed:
        names = "; ".join(f"{r.get('engine')} {r.get('metric')}: {r.get('detail', '')[:80]}" for r in failed[:3])
        return C.Result(measured, C.NOT_REPRODUCED, f"failed: {names}")
    return C.Result(measured, C.REPRODUCED, "every feature worked on every engine and after each "
                                            "ALTER TABLE ... ENGINE=; InnoDB was disabled and came back")


def _published(times: dict, a: str, b: str) -> dict:
    """A claim's published text and ratio, a's published seconds over b's, from the study's table:
    '184.75 s vs 109.88 s (1.68×)'."""
    r = times[a] / times[b]
    return {"published": f"{times[a]:g} s vs {times[b]:g} s ({r:.2f}×)", "published_ratio": r}


SECOND_HAND = ("a second-hand figure ('reported ... in some cases'): only the direction is judged, "
               "the 80% beside it")
SCAN_ORDER = ("legacy", "MyISAM", "ARCHIVE", "InnoDB")   # the published scan times, fastest first
# "less than half a second" behind the legacy's 1.43 s scan, as a ratio to it
HALF_SECOND = (PUBLISHED_SCAN_S["legacy"] + 0.5) / PUBLISHED_SCAN_S["legacy"]


@dataclass(frozen=True)
class ScanOrder(C.Claim):
    """C2's published order of scan times, fastest first: each neighbouring pair judged
    like a StepRatio (slower time ÷ faster time above 1), each at the Bonferroni level
    over the pairs so the conjunction keeps the claims' level; reproduced when every
    pair is, not reproduced when any pair is, inconclusive otherwise."""
    order: tuple = SCAN_ORDER
    pair_rule: C.Rule = C.above(1.0, "a reported order of times: each neighbouring pair's direction")

    def evaluate(self, ctx, build):
        if ctx.tidy.experiment(EXPERIMENT) is None:
            return C.missing(*ctx.tidy.missing(EXPERIMENT))
        if "legacy" in self.order:
            gap = legacy_loop_gap(ctx, build)
            if gap:
                return gap
        pairs = list(zip(self.order, self.order[1:]))
        strict = C.Context(ctx.tidy, 1 - (1 - ctx.level) / len(pairs), ctx.decide)
        parts, verdicts = [], []
        for fast, slow in pairs:
            va = by_rep(ctx, build, "C2", _engine(slow), "scan_s")
            vb = by_rep(ctx, build, "C2", _engine(fast), "scan_s")
            if not va or not vb:
                gone = _engine(slow) if not va else _engine(fast)
                return C.missing("data", f"no passing C2 scan_s of {gone} in {build}"
                                         + (" (experiment: legacy is false)" if gone == LEGACY else ""))
            j = strict.judge(EXPERIMENT, va, vb, self.pair_rule)
            verdicts.append(j.verdict)
            parts.append(f"{slow}/{fast} {interval_text(j.ci)}")
        measured = "; ".join(parts)
        if all(v == C.REPRODUCED for v in verdicts):
            verdict = C.REPRODUCED
        elif any(v == C.NOT_REPRODUCED for v in verdicts):
            verdict = C.NOT_REPRODUCED
        else:
            verdict = C.INCONCLUSIVE
        reason = (f"each neighbouring pair at level {strict.level:.4g} (Bonferroni over {len(pairs)} "
                  f"pairs for {ctx.level:g}): " + ", ".join(f"{s}/{f} {v}" for (f, s), v in zip(pairs, verdicts)))
        return C.Result(measured, verdict, reason)


def switching(ctx, build) -> C.Result:
    """C2's 'easy and quick' engine switching: every ALTER TABLE ... ENGINE= of the chain
    passed and kept every row (easy); the times are reported (quick states no bound)."""
    rows = step_rows(ctx, build, "C2.convert")
    alters = [r for r in rows if r.get("metric") == "alter_s"]
    kept = [r for r in rows if r.get("metric") == "rows_kept"]
    if not alters:
        return C.missing("data", f"no C2.convert rows of {build}")
    failed = [r for r in alters + kept if not ok(r)]
    times = "; ".join(f"{e} {fmt_s(median(ctx, build, 'C2.convert', e, 'alter_s'))}"
                      for e in dict.fromkeys(r.get("engine") for r in alters))
    measured = f"{len(alters)} conversions, {len(kept)} row-count checks; median times: {times}"
    if failed:
        return C.Result(measured, C.NOT_REPRODUCED, "a conversion failed or lost rows: "
                        + "; ".join(f"{r.get('engine')} {r.get('metric')}" for r in failed[:3]))
    return C.Result(measured, C.REPRODUCED, "every conversion was one ALTER TABLE ... ENGINE= that kept "
                                            "every row; 'quick' states no bound, the times are beside it")

def _engine(key):
    return LEGACY if key == "legacy" else key


def _insert(cid, slow, fast, words, macro, **kw):
    """C1: a stated gain ("about 40%"): a band around the published times' ratio."""
    pub = _published(PUBLISHED_INSERT_S, slow, fast)
    # the stand-in runs the study's loop as one transaction (LEGACY_DEVIATION), MySQL in autocommit
    how = "MySQL in autocommit, the stand-in in one transaction" if "legacy" in (slow, fast) else "autocommit"
    return StepRatio(
        id=cid, study="C1",
        statement=f"Stored-procedure inserts, {how}: {_engine(fast)} {words} faster than "
                  f"{_engine(slow)}, i.e. {slow} time ÷ {fast} time about {pub['published_ratio']:.2f}",
        **pub, rule=C.stated(pub["published_ratio"], f"the study's '{words}'"),
        macro=macro, experiments=(EXPERIMENT,),
        a=("C1", _engine(slow), "insert_s"), b=("C1", _engine(fast), "insert_s"), **kw)


LEGACY_DEVIATION = ("PostgreSQL from Debian, running the study's procedure loop in PL/pgSQL as one "
                    "transaction (no COMMIT in the loop, as the study's PL/SQL), stands in for the study's "
                    "commercial database")

CLAIMS = [
    _insert("C1-MyISAM-inserts-faster-than-InnoDB", "InnoDB", "MyISAM", "about 40%", "CInsertMyisam"),
    _insert("C1-ARCHIVE-inserts-faster-than-MyISAM", "MyISAM", "ARCHIVE", "33%", "CInsertArchive"),
    _insert("C1-ARCHIVE-vs-InnoDB", "InnoDB", "ARCHIVE", "about 60%", "CInsertArchiveInnodb"),
    _insert("C1-ARCHIVE-vs-legacy", "legacy", "ARCHIVE", "about 60%", "CInsertArchiveLegacy",
            deviation=LEGACY_DEVIATION),
    _insert("C1-MyISAM-vs-legacy", "legacy", "MyISAM", "about 40%", "CInsertMyisamLegacy",
            deviation=LEGACY_DEVIATION),
    StepRatio(
        id="C1-legacy-close-to-InnoDB", study="C1",
        statement="The legacy RDBMS's loop very close to InnoDB (InnoDB time ÷ legacy time; here "
                  "PostgreSQL's PL/pgSQL loop stands in for the commercial database)",
        **_published(PUBLISHED_INSERT_S, "InnoDB", "legacy"),
        rule=C.close("'very close' (the published pair is 1.01×)"), macro="CInsertLegacy", experiments=(EXPERIMENT,),
        deviation=LEGACY_DEVIATION,
        a=("C1", "InnoDB", "insert_s"), b=("C1", LEGACY, "insert_s")),
    StepRatio(
        id="C2-InnoDB-scan-slowest", study="C2",
        statement="Full scan (count(*) WHERE c1 = 1, EXPLAIN type ALL): InnoDB the slowest engine "
                  "(InnoDB time ÷ the slower of MyISAM and ARCHIVE)",
        **_published(PUBLISHED_SCAN_S, "InnoDB", "ARCHIVE"),
        rule=C.above(1.0, "'slowest' is any ratio above 1 against the slower other engine"),
        macro="CScanInnodb", experiments=(EXPERIMENT,),
        a=("C2", "InnoDB", "scan_s"), b=("C2", "", "scan_s"), b_any=("MyISAM", "ARCHIVE")),
    ScanOrder(
        id="C2-scan-order", study="C2",
        statement="Full scan times in the published order: legacy < MyISAM < ARCHIVE < InnoDB",
        published="1.43 s < 1.86 s < 1.98 s < 4.05 s",
        macro="CScanOrder", experiments=(EXPERIMENT,), deviation=LEGACY_DEVIATION),
    StepRatio(
        id="C2-MyISAM-scan-within-half-second-of-legacy", study="C2",
        statement="Full scan: MyISAM behind the legacy RDBMS, by less than half a second, as a ratio of the "
                  "study's times (MyISAM time ÷ legacy time from 1, the legacy ahead, to (1.43 s + 0.5 s) ÷ "
                  "1.43 s; here PostgreSQL stands in)",
        published="1.86 s vs 1.43 s: 'less than half a second' (bound 1.35×)", published_ratio=1.86 / 1.43,
        rule=C.within(1.0, HALF_SECOND,
                      "the legacy ahead (the study has its scan a little faster), MyISAM less than half a "
                      "second behind its 1.43 s; the seconds turned into a ratio to the legacy time, chosen "
                      "here, since this host's rows and disk are not 2005's"),
        macro="CScanHalfSecond", experiments=(EXPERIMENT,), deviation=LEGACY_DEVIATION,
        a=("C2", "MyISAM", "scan_s"), b=("C2", LEGACY, "scan_s")),
    StepRatio(
        id="C2-ARCHIVE-scan-close-to-MyISAM", study="C2",
        statement="Full scan: ARCHIVE follows MyISAM closely (ARCHIVE time ÷ MyISAM time)",
        **_published(PUBLISHED_SCAN_S, "ARCHIVE", "MyISAM"),
        rule=C.close("'followed closely' (the published pair is 1.06×)"),
        macro="CScanArchiveClose", experiments=(EXPERIMENT,),
        a=("C2", "ARCHIVE", "scan_s"), b=("C2", "MyISAM", "scan_s")),
    C.Check(
        id="C2-engine-switching-easy", study="C2",
        statement="Switching a loaded table's engine is easy and quick: one ALTER TABLE ... ENGINE= "
                  "that keeps every row",
        published="qualitative: 'easy and quick' (5.86 s, 35.89 s)", macro="CSwitching",
        experiments=(EXPERIMENT,), fn=switching),
    StepRatio(
        id="C3-ARCHIVE-saves-80pct-identical-rows", study="C3",
        statement="ARCHIVE smaller than MyISAM on the study's identical rows (MyISAM bytes ÷ ARCHIVE "
                  "bytes on disk; the reported 80% is 5×)",
        published="about 80% saved (5×), reported second-hand", published_ratio=1 / (1 - PUBLISHED_SAVING),
        rule=C.above(1.0, SECOND_HAND),
        macro="CSaveIdentical", experiments=(EXPERIMENT,), unit="bytes",
        a=("C3", "MyISAM", "identical_datadir_bytes"), b=("C3", "ARCHIVE", "identical_datadir_bytes")),
    StepRatio(
        id="C3-ARCHIVE-saves-80pct-varied-rows", study="C3",
        statement="ARCHIVE smaller than MyISAM on varied rows too, so the saving is not an artefact "
                  "of identical rows (MyISAM bytes ÷ ARCHIVE bytes)",
        published="about 80% saved (5×), reported second-hand", published_ratio=1 / (1 - PUBLISHED_SAVING),
        rule=C.above(1.0, SECOND_HAND),
        macro="CSaveVaried", experiments=(EXPERIMENT,), unit="bytes",
        deviation="a second, varied row set (the study inserted identical rows only)",
        a=("C3", "MyISAM", "varied_datadir_bytes"), b=("C3", "ARCHIVE", "varied_datadir_bytes")),
    C.Untestable(
        id="C4-unplug-unused-engines", study="C4",
        statement="Disabling engines an application does not use saves the overhead some carry unused",
        published="qualitative: unplugging unused engines keeps resources to what is needed", macro="CUnplug",
        why="experiment: the study gives no resource, figure or workload to compare with, and no step "
            "here measures the server's resources with and without an engine (C4's skip-innodb "
            "restart checks only that InnoDB is disabled and the other engines work)"),
    C.Check(
        id="C4-pluggability", study="C4",
        statement="Stored procedures, triggers (aes_encrypt) and views work on every engine and after "
                  "ALTER TABLE ... ENGINE=; skip-innodb disables InnoDB",
        published="qualitative: all work", macro="CPluggability", experiments=(EXPERIMENT,),
        fn=pluggability),
]

FIGURES = {
    "c_inserts": dict(script="fig_c_inserts.R", flag="CInserts", inputs=[(EXPERIMENT, "summary")],
                      extra=["published.csv"]),
    "c_scans": dict(script="fig_c_scans.R", flag="CScans", inputs=[(EXPERIMENT, "summary")],
                    extra=["published.csv"]),
    "c_storage": dict(script="fig_c_storage.R", flag="CStorage", inputs=[(EXPERIMENT, "summary")],
                      extra=["published.csv"]),
    **percommit.FIGURE,
}


# Published numbers the figures draw (harness.analysis.marks). c_inserts plots InnoDB's
# time divided by each engine's (the claims' direction, slower over faster, as
# c_per_commit), so its marks are InnoDB's published time divided by each engine's
# (InnoDB itself, 1 by definition, is the grey line). c_scans and
# c_storage plot seconds and bytes of this host's row count: their marks are the
# published ratios placed on a measured reference (InnoDB's scan; MyISAM's bytes), never
# 2005's seconds. The conversions have none: the study gave two times (5.86 s, 35.89 s) of
# different conversions, never their ratio, and 2005's seconds are not this host's.
PUBLISHED_MARKS = [
    *[_marks.mark("c_inserts", PUBLISHED_INSERT_S["InnoDB"] / s,
                  _marks.ratio_label(PUBLISHED_INSERT_S["InnoDB"] / s), "C1, 3,000,000 inserts",
                  step="C1", metric="insert_s", engine=_engine(e))
      for e, s in PUBLISHED_INSERT_S.items() if e != "InnoDB"],
    *[_marks.mark("c_scans", s / PUBLISHED_SCAN_S["InnoDB"],
                  _marks.ratio_label(s / PUBLISHED_SCAN_S["InnoDB"]), "C2, full scan (ratio to InnoDB)",
                  step="C2", metric="scan_s", engine=_engine(e), ref_engine="InnoDB")
      for e, s in PUBLISHED_SCAN_S.items() if e != "InnoDB"],
    _marks.mark("c_storage", 1 - PUBLISHED_SAVING, f"published \u2212{100 * PUBLISHED_SAVING:.0f}%",
                "C3, about 80% saved", step="C3", metric="identical_datadir_bytes", engine="ARCHIVE",
                ref_engine="MyISAM"),
    *percommit.PUBLISHED_MARKS,
]


# --- generated tables and numbers ---------------------------------------------------------

def engines_of(ctx, build, step="C1", metric="insert_s") -> list[str]:
    """Engines with a row of `step`/`metric` in `build`, the study's order first."""
    seen = list(dict.fromkeys(e for e in (r.get("engine") for r in step_rows(ctx, build, step, None, metric))
                               if e not in (None, "")))
    order = list(STUDY_ENGINES) + ["MEMORY", "Aria"]
    return sorted(seen, key=lambda e: (order.index(e) if e in order else len(order), e))


def scan_table(ctx, fmt) -> str:
    """Per build and engine: EXPLAIN type, rows examined (Handler_read_rnd_next per
    scan), the count's check and the median scan time; PostgreSQL's plan too."""
    lines = [r"\begin{tabular}{@{}llllr@{}}", r"\toprule",
             r"build & engine & EXPLAIN type & rows examined & median scan \\", r"\midrule"]
    for build in ctx.tidy.builds(EXPERIMENT):
        for e in engines_of(ctx, build, "C2", "scan_s"):
            t = fmt.tex_escape(fmt_s(median(ctx, build, "C2", e, "scan_s")))
            if e == LEGACY:  # PostgreSQL: its plan and the rows its count matched
                scan = step_rows(ctx, build, "C2", e, "scan_s")
                plan = "Seq Scan" if scan and "Seq Scan" in (scan[0].get("detail") or "") else fmt.NA
                m = [re.match(r"(\d+) of", r.get("detail") or "") for r in step_rows(ctx, build, "C2", e, "matched")]
                seen = fmt.distinct(fmt.fmt_int(int(x.group(1))) + " matched" for x in m if x)
                lines.append(f"{fmt.tex_tt(build)} & PostgreSQL (stand-in) & {plan} & "
                             f"{'/'.join(seen) or fmt.NA} & {t} \\\\")
                continue
            types = fmt.distinct(r.get("value") for r in step_rows(ctx, build, "C2", e, "explain_type"))
            rnd = fmt.distinct(fmt.fmt_int(T.number(r.get("value")))
                             for r in step_rows(ctx, build, "C2", e, "rnd_next") if T.number(r.get("value")))
            lines.append(f"{fmt.tex_tt(build)} & {fmt.tex_escape(e)} & {fmt.tex_escape('/'.join(types)) or fmt.NA}"
                         f" & {'/'.join(rnd) or fmt.NA} & {t} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def pluggability_rows(ctx) -> list[tuple[str, str, str, str]]:
    """(build, feature, engine, 'pass'/'fail'/'not in build') from the C4 rows."""
    out = []
    for build in ctx.tidy.builds(EXPERIMENT):
        for step in C4_CHECK_STEPS:
            for r in step_rows(ctx, build, step):
                if r.get("metric") == "skipped":
                    continue
                key = (build, r.get("metric", ""), r.get("engine", ""))
                res = "pass" if ok(r) else "fail"
                prev = next((i for i, x in enumerate(out) if x[:3] == key), None)
                if prev is None:
                    out.append(key + (res,))
                elif res == "fail":  # any failing repetition fails the row
                    out[prev] = key + ("fail",)
        for r in step_rows(ctx, build, "C4.feature", None, "skipped"):
            out.append((build, "(all features)", r.get("engine", ""), "not in build"))
    return out


FEATURE_WORDS = {"procedure": "stored procedure", "trigger": "BEFORE INSERT trigger (aes_encrypt)",
                 "view": "view", "innodb_disabled": "skip-innodb disables InnoDB",
                 "myisam_works": "MyISAM works without InnoDB", "innodb_back": "InnoDB back after restart"}


def pluggability_table(ctx, fmt) -> str:
    lines = [r"\begin{tabular}{@{}lllc@{}}", r"\toprule", r"build & feature & engine & result \\",
             r"\midrule"]
    for build, feature, engine, res in pluggability_rows(ctx):
        word = FEATURE_WORDS.get(feature, feature)
        shown = r"\textbf{fail}" if res == "fail" else res
        lines.append(f"{fmt.tex_tt(build)} & {fmt.tex_escape(word)} & {fmt.tex_escape(engine)} & "
                     f"{shown} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def flush_settings(ctx, fmt) -> str:
    """The flush and binary-log settings the script recorded, per build (LaTeX)."""
    parts = []
    for build in ctx.tidy.builds(EXPERIMENT):
        kv = [f"{k}={setup_value(ctx, build, k)}" for k in SETUP_SHOWN if setup_value(ctx, build, k)]
        fs = median(ctx, build, "setup", "", "fsync_ms_median")
        text = fmt.tex_escape(", ".join(kv)) or fmt.NA
        if fs is not None:
            text += f", a median fsync of {fs:.2g}\\,ms"
        parts.append(f"{fmt.tex_tt(build)}: {text}")
    return "; ".join(parts) or fmt.NA


def postgres_version(ctx) -> str:
    for build in ctx.tidy.builds(EXPERIMENT):
        for r in step_rows(ctx, build, "C1", LEGACY, "insert_s"):
            m = re.match(r"(PostgreSQL [0-9.]+)", r.get("detail") or "")
            if m:
                return m.group(1)
    return ""


def saving(ctx, build, which) -> float | None:
    a = median(ctx, build, "C3", "ARCHIVE", f"{which}_datadir_bytes")
    m = median(ctx, build, "C3", "MyISAM", f"{which}_datadir_bytes")
    return 100 * (1 - a / m) if a and m else None


def macros(ctx, rows, fmt):
    builds = ctx.tidy.builds(EXPERIMENT)
    reps = sorted({c.reps for c in ctx.tidy.cells(EXPERIMENT)})
    out = [
        ("CRows", fmt.fmt_int(rows_loaded(ctx)) if rows_loaded(ctx) else fmt.NA),
        ("CBuilds", ", ".join(fmt.tex_tt(b) for b in builds) or fmt.NA),
        ("CReps", fmt.join_words(reps) if reps else fmt.NA),
        ("CRepsNeeded", str(I.min_blocks(ctx.level, BV.bounds_of(ctx.tidy, EXPERIMENT)[2]))),
        ("CPostgres", fmt.tex_escape(postgres_version(ctx)) or fmt.NA),
        ("CDurability", flush_settings(ctx, fmt)),
        ("CScanTable", scan_table(ctx, fmt)),
        ("CPluggabilityTable", pluggability_table(ctx, fmt)),
    ]
    for which, name in (("identical", "Identical"), ("varied", "Varied")):
        s = [(b, saving(ctx, b, which)) for b in builds]
        out.append((f"CSaving{name}", "; ".join(f"{fmt.fmt_pct(v)}\\% ({fmt.tex_tt(b)})" for b, v in s
                                                if v is not None) or fmt.NA))
    return out + percommit.macros(ctx, fmt)

