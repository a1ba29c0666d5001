"""Study A's sysbench parts (A2, A3): the kinds of claim their rows need beyond
harness.analysis.claims' (harness.studies.a2_a3 re-exports these names)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from harness.analysis import claims as C
from harness.analysis import tidyread as T
from harness.analysis.claimtext import interval_text


def cv_by_rep(ctx, experiment: str, cell) -> dict:
    """{rep: coefficient of variation of the cell's per-second QPS} (the intervals table)."""
    keys = ("build", "engine", "variant", "tables", "cores", "users")
    per = {}
    for r in ctx.tidy.extra("intervals", experiment):
        if all(r.get(k, "") == cell[k] for k in keys):
            v = T.number(r.get("qps"))
            if v is not None:
                per.setdefault(r.get("rep", ""), []).append(v)
    return {rep: statistics.stdev(v) / statistics.mean(v) for rep, v in per.items()
            if len(v) >= 2 and statistics.mean(v) > 0}


@dataclass(frozen=True)
class SpinStability(C.LevelRatio):
    """'More stable': the per-second QPS coefficient of variation at level a ÷ at level b,
    each repetition's own, paired by repetition; a block's value at a level is the geometric
    mean of its CVs over the loads (users, cores) both levels measured, so no load is chosen
    from the data it is judged on."""

    def judge(self, ctx, la, pa, lb, pb):
        def key(c):
            return (c.int("users"), c.int("cores"))
        loads = {key(c) for c in pa} & {key(c) for c in pb}
        ca = sorted((c for c in pa if key(c) in loads), key=key)
        cb = sorted((c for c in pb if key(c) in loads), key=key)
        cvs = [cv_by_rep(ctx, self.experiment_name, c) for c in ca + cb]
        reps, (xa, xb) = C.load_blocks(cvs[:len(ca)], cvs[len(ca):]) if ca and cb else ([], ([], []))
        if not reps or not all(v > 0 for row in xa + xb for v in row):
            return C.missing("data", f"no per-second QPS of {la} and {lb} in {self.experiment_name}")
        va = dict(zip(reps, (statistics.geometric_mean(row) for row in xa)))
        vb = dict(zip(reps, (statistics.geometric_mean(row) for row in xb)))
        j = ctx.judge(self.experiment_name, va, vb, self.rule)
        users = ", ".join(str(u) for u in sorted({u for u, _ in loads}))
        measured = (f"per-second QPS CV {la} {statistics.median(va.values()):.3g} vs {lb} "
                    f"{statistics.median(vb.values()):.3g} (geometric mean over users {users}, "
                    f"{C.fmt_cores({c for _, c in loads})}): {interval_text(j.ci)}")
        return C.Result.judged(measured, j, ca + cb)


HT = ("A3's 64 are 32 cores with both hardware threads (Hyper-Threading); the core plan here gives "
      "mysqld one thread per physical core (harness.measure.cores: no profile plans its SMT point), so no "
      "cell runs the study's 64")


@dataclass(frozen=True)
class SmtRatio(C.CoresRatio):
    """Best on `a` pure cores / best on `b` hardware threads, b the study's SMT point (32
    cores with both threads). The study's claim is about Hyper-Threading: judged only on
    cells placed on SMT siblings (`smt`: the gate; off, the ratio of whatever cells carry
    those counts). The artifact's core plan never places mysqld so: not measurable here."""
    smt: bool = True

    def evaluate(self, ctx, build):
        res = super().evaluate(ctx, build)
        if not self.smt or res.reason.startswith(("data:", "experiment:")):
            return res
        return replace(res, verdict=C.NOT_MEASURABLE, reason=f"host: {HT}" + C.flagged(res.cells))

@dataclass(frozen=True)
class TablesPeakRatio(C.TablesRatio):
    """One engine's peak on `a` tables / its peak on `b` tables: the speed-up the study credits
    to spreading the load over more tables (B4's TablesRatio reads the most cores alone). Each
    side's peak is over the users both measured and over its own core counts as the study ran
    them: `a` tables from min_cores (A3's 16, the gate), `b` tables from `b_min_cores` (the
    setup's 4, A2's one-table runs). Reading `b` only on the cores `a` has would drop its
    lower-core cells, which can only lower its peak and so push the ratio towards the claim."""
    top_cores = False
    load = ("users",)
    b_min_cores: int = 0

    @property
    def read_floor(self):   # harness.plan.reads: the 1-table side is read from its own floor
        return self.b_min_cores

    def evaluate(self, ctx, build):
        # each side gated on its own floor in sides(), not both on min_cores (Comparison's gate)
        gated = C.TablesRatio.evaluate(replace(self, needs=None), ctx, build)
        if not gated.reason.startswith("cores:"):
            return gated
        # below a floor: not measurable, the ratio of whatever cores were held shown beside it
        whole = C.TablesRatio.evaluate(replace(self, needs=None, min_cores=0, b_min_cores=0), ctx, build)
        if whole.verdict == C.NOT_MEASURABLE:
            return gated
        return replace(whole, verdict=C.NOT_MEASURABLE, reason=gated.reason + C.flagged(whole.cells))

    def sides(self, ctx, build, settings):
        out = []
        for tables, floor in ((self.a, self.min_cores), (self.b, self.b_min_cores)):
            every = C.pool(ctx, self.experiment_name, build, settings, engine=self.engine, tables=tables)
            cells = C.at_cores(every, floor)
            if every and not cells:
                have = C.fmt_cores({c.int("cores") for c in every})
                return C.missing("cores", f"the study's {tables}-table runs start at {floor} cores; "
                                          f"{self.engine} on {tables} tables held on {have} here")
            out.append((f"{self.engine} {tables} tables" if tables == self.a else
                        f"{tables} table{'s' if tables != 1 else ''}", cells))
        return tuple(out)
