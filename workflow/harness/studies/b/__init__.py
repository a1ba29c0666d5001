"""Study B (about 2011): the MEMORY engine under sysbench -- B1 HASH indexes
turn ranges into full scans, B2 MEMORY as the server layer's yardstick (its
readers do not contend), B3 MEMORY single-threaded on writes (table locks: the
artifact's own hypothesis, the study names no mechanism), B4 single-table
bottlenecks (InnoDB; the study involves no MyISAM).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from harness.analysis import claims as C
from harness.analysis import intervals as I
from harness.analysis import tidyread as T
from harness.analysis import marks as _marks
from harness.analysis import blockverdict as BV
from harness.analysis.claimrules import STATED
from harness.analysis.claimtext import interval_text

NAME = "b"
CODES = ("B1", "B2", "B3", "B4")
TITLE = "Study B: the MEMORY engine"
SECTION = "section.tex"
EXPLAIN_EXPERIMENT = "simple_ranges"  # the experiment of the paper's EXPLAIN table (generated/explain.tex)

EXPERIMENTS = {
    "simple_ranges_scale": ("B1", "Simple-Ranges, MEMORY HASH vs BTREE on tables where a full scan costs"),
    "read_write": ("B3", "the read-write mix, table locks"),
}

SETUP = [
    ("host", "not stated", "hardware"),
    ("rows per table", "not stated", "table_size"),
    ("load generator", "sysbench of about 2011", "load"),
    ("key distribution", "as A", "rand_type"),
    ("Performance Schema instruments", "not stated", "pfs_instruments"),
    ("log flush per commit", "not stated (B3's InnoDB side: the server's default, a flush per commit)", "log_flush"),
]

COLLAPSE = 10.0
# Study B states no core count; its mechanisms are contention between threads, so its
# claims need mysqld on several hardware threads: 4, chosen here (the least of Study A's sweep).
B_CORES = 4
B_CORES_WHY = "chosen here: Study B states no core count; the least of Study A's sweep"
GATE = dict(needs=C.CONTENTION, min_cores=B_CORES, cores_why=B_CORES_WHY)
# `cores: study` for B3's read-write mix: B3 is a scaling claim (MEMORY gains less from added
# cores than InnoDB), so it needs two counts of at least B_CORES; with no count of its own,
# Study A's sweep from B_CORES up (4, 8, 16, 24, 32 where they fit)
CORES = {"B3": (4, 8, 16, 24, 32)}
SERVER_LAYER = "every engine is limited by the server layer's own contention"
WRITES = "MEMORY more or less single-threaded for writes (the study names no mechanism)"
TABLE_LOCKS = "table locks serialise MEMORY's writes (the artifact's hypothesis)"
# 'concurrent readers don't contend': at most one table lock in READERS_WAIT waited. Chosen
# here: the study says none; a share that small is no contention worth the name (B3's
# read-write cells show what contention looks like).
READERS_WAIT = 0.001
SINGLE_TABLE = "LOCK_open, metadata locks and InnoDB's index mutex on a single table"


def explain_of(ctx, experiment, build, engine, statement="range", tables=None):
    """Distinct (type, key, rows) of an engine's EXPLAINed statements whose name contains
    `statement` (of its cells on `tables` tables; None: any)."""
    out = []
    for r in ctx.tidy.extra("explain", experiment):
        if tables is not None and r.get("tables") != str(tables):
            continue
        if r.get("build", "") == build and r.get("engine") == engine and statement in (r.get("statement") or ""):
            t = (r.get("type") or "", r.get("key") or "", r.get("rows") or "")
            if t not in out:
                out.append(t)
    return out


def _plans(plans):
    return "/".join(f"{t or '?'}" + (f" ({rows} rows)" if rows else "") for t, _, rows in plans)


def full_scan(ctx, build, experiment="simple_ranges"):
    hash_plans = explain_of(ctx, experiment, build, "MEMORY")
    btree_plans = explain_of(ctx, experiment, build, "MEMORY-BTREE")
    if not hash_plans or not btree_plans:
        gone = [e for e, p in (("MEMORY", hash_plans), ("MEMORY-BTREE", btree_plans)) if not p]
        return C.missing("data", f"no EXPLAIN of a range statement for {' and '.join(gone)}")
    measured = f"MEMORY (HASH): {_plans(hash_plans)}; MEMORY-BTREE: {_plans(btree_plans)}"
    ok = {t for t, _, _ in hash_plans} == {"ALL"} and {t for t, _, _ in btree_plans} == {"range"}
    return C.Result(measured, C.REPRODUCED if ok else C.NOT_REPRODUCED,
                    "EXPLAIN types as published" if ok else "EXPLAIN types differ from the published ALL / range")


def work_bound(ctx, build, experiment="simple_ranges", tables=None):
    """(rows a HASH range query scans, rows the BTREE range examines): the slowdown a
    full scan can cause is at most their ratio (the query's fixed cost only lowers it),
    on the claim's own table count (the cells it reads)."""
    def rows(engine, kind):
        vals = [T.number(r) for t, _, r in explain_of(ctx, experiment, build, engine, tables=tables) if t == kind]
        vals = [v for v in vals if v]
        return max(vals) if vals else None
    return rows("MEMORY", "ALL"), rows("MEMORY-BTREE", "range")


@dataclass(frozen=True)
class Collapse(C.EngineRatio):
    """B1's throughput collapse, with the scale gate: when a full scan examines fewer
    than `rule.threshold` times the rows of the BTREE range, no collapse of that
    size can show, whatever the engine does -- not measurable here (scale)."""

    def evaluate(self, ctx, build):
        res = super().evaluate(ctx, build)
        if res.verdict == C.NOT_MEASURABLE:
            return res
        scan, rng = work_bound(ctx, build, self.experiment_name, self.tables)
        if not scan or not rng:
            return replace(res, verdict=C.NOT_MEASURABLE,
                           reason="data: no EXPLAIN row estimates to tell whether a full scan can cost "
                                  "this much" + C.flagged(res.cells))
        bound = scan / rng
        if bound < self.rule.threshold:
            return replace(res, verdict=C.NOT_MEASURABLE, reason=(
                f"scale: a full scan examines {scan:,.0f} rows against the range's {rng:,.0f} "
                f"({bound:.1f}×), so it cannot make a query {self.rule.threshold:g}× slower; that "
                f"needs tables of at least {self.rule.threshold * rng:,.0f} rows") + C.flagged(res.cells))
        return res


@dataclass(frozen=True)
class EngineScaling(C.Comparison):
    """(engine a's peak on the most cores ÷ on the fewest at or above min_cores) ÷ (the same
    for engine b), peaks over the users all four measured, paired by repetition, no cell
    chosen from the data (claimmath.scaling_judged): 'a gains less from added cores than b'."""
    a: str = ""
    b: str = ""

    def evaluate(self, ctx, build):
        if ctx.tidy.experiment(self.experiment_name) is None:
            return C.missing(*ctx.tidy.missing(self.experiment_name))
        settings, why = self.settings(ctx)
        if settings is None:
            return C.missing("", why)
        pools = {e: C.pool(ctx, self.experiment_name, build, settings, engine=e, **self.where(settings))
                 for e in (self.a, self.b)}
        if not pools[self.a] or not pools[self.b]:
            return C.missing("data", f"{self.experiment_name} needs {self.a} and {self.b} cells")
        both = {c.int("cores") for c in pools[self.a]} & {c.int("cores") for c in pools[self.b]}
        cores = self.scaling_cores(both)
        why = self.gate(ctx, pools[self.a] + pools[self.b])
        if why or len(cores) < 2:
            return C.missing("cores", (why or "").removeprefix("cores: ") or
                             f"scaling needs two core counts of at least {self.scaling_floor()} "
                             f"measured with both engines; measured on {C.fmt_cores(sorted(both))}")
        lo, hi = cores[0], cores[-1]
        groups = C.scaling_groups(pools, self.a, self.b, lo, hi)
        if not all(groups):
            return C.missing("data", f"no users measured with both engines on {lo} and {hi} cores")
        j = C.scaling_judged(ctx, self.experiment_name, groups, self.rule)
        measured = (f"{lo}→{hi} cores, users {', '.join(c['users'] for c in groups[0])}: {self.a}'s gain ÷ "
                    f"{self.b}'s: {interval_text(j.ci)}")
        return C.Result.judged(measured, j, [c for g in groups for c in g])


def lock_waits(ctx, build):
    """B3: the share of table locks that had to wait, MEMORY vs InnoDB, per repetition (a
    block: both engines' cells of it, at B_CORES or more, counters summed), and the exact
    sign-test interval of the median difference over the blocks (a share can be 0, so no
    log ratio): reproduced when the whole interval is above 0, not reproduced when it is
    at or below 0 (MEMORY waits no more often), else inconclusive."""
    cells = [c for c in ctx.tidy.cells("read_write", build=build) if c.engine in ("MEMORY", "InnoDB")]
    if not cells:
        return C.missing("data", "no MEMORY and InnoDB cells in read_write")
    # the cells at B_CORES or more; with none, all (the gate then says what is missing, the
    # measured text what the cells below it showed)
    gated_cells = [c for c in cells if c.int("cores") >= B_CORES] or cells
    cols = list(gated_cells[0].key)
    keep = {tuple(c.key.get(k, "") for k in cols) for c in gated_cells}
    counts: dict = {}  # (engine, rep) -> {status name: summed delta}
    for r in ctx.tidy.extra("status", "read_write"):
        if r.get("build", "") != build or r.get("engine") not in ("MEMORY", "InnoDB"):
            continue
        if tuple(r.get(k, "") for k in cols) not in keep:
            continue
        v = T.number(r.get("delta"))
        if v is not None:
            s = counts.setdefault((r["engine"], r.get("rep", "")), {})
            s[r["name"]] = s.get(r["name"], 0.0) + v

    def share(engine, rep):
        s = counts.get((engine, rep)) or {}
        w, i = s.get("Table_locks_waited", 0.0), s.get("Table_locks_immediate", 0.0)
        return 100.0 * w / (w + i) if w + i > 0 else None
    reps = sorted({rep for _, rep in counts}, key=lambda x: T.number(x) or 0)
    pairs = [(share("MEMORY", r), share("InnoDB", r)) for r in reps]
    pairs = [(m, i) for m, i in pairs if m is not None and i is not None]
    if not pairs:
        return C.missing("data", "no table-lock counters for MEMORY and InnoDB in read_write")
    d = [m - i for m, i in pairs]
    blocks = f"{len(pairs)} block{'s' if len(pairs) != 1 else ''}"
    med_m, med_i = statistics.median(m for m, _ in pairs), statistics.median(i for _, i in pairs)

    def result(verdict, reason, ci, look="", pending=False):
        measured = (f"table locks that waited: MEMORY {med_m:.2f}%, InnoDB {med_i:.2f}% (medians of "
                    f"{blocks}); MEMORY - InnoDB {ci.point:+.2f} points [{ci.lo:+.2f}, {ci.hi:+.2f}] "
                    f"({ci.coverage:.1%} {ci.method}, {ci.n} blocks)")
        return C.Result(measured, verdict, reason + C.flagged(gated_cells), cells=gated_cells, look=look,
                        pending=pending)
    return _decide_difference(ctx, d, result)


def lock_wait_share(ctx, experiment, build, cells) -> dict:
    """{rep: percent of the table locks that waited}, the status counters of `cells` summed
    per repetition (a block)."""
    cols = list(cells[0].key)
    keep = {tuple(c.key.get(k, "") for k in cols) for c in cells}
    counts: dict = {}
    for r in ctx.tidy.extra("status", experiment):
        if r.get("build", "") == build and tuple(r.get(k, "") for k in cols) in keep:
            v = T.number(r.get("delta"))
            if v is not None:
                s = counts.setdefault(r.get("rep", ""), {})
                s[r["name"]] = s.get(r["name"], 0.0) + v
    out = {}
    for rep, s in counts.items():
        w, i = s.get("Table_locks_waited", 0.0), s.get("Table_locks_immediate", 0.0)
        if w + i > 0:
            out[rep] = 100.0 * w / (w + i)
    return dict(sorted(out.items(), key=lambda kv: T.number(kv[0]) or 0))


def readers_wait(ctx, build, experiment="oltp_ro", engine="MEMORY-BTREE"):
    """B2's readers: the share of MEMORY's table locks that waited, per block, at the
    baselines on 1 table and B_CORES or more: reproduced when the exact sign-test interval
    of its median lies below READERS_WAIT, not reproduced when wholly above it."""
    settings, why = C.levels_of(ctx.tidy, experiment, None)
    if settings is None:
        return C.missing("", why)
    cells = C.pool(ctx, experiment, build, settings, engine=engine, tables=1)
    if not cells:
        return C.missing("data", f"no {engine} cells on 1 table in {experiment}")
    cells = [c for c in cells if c.int("cores") >= B_CORES] or cells
    shares = lock_wait_share(ctx, experiment, build, cells)
    if not shares:
        return C.missing("data", f"no table-lock counters of {engine} in {experiment}", )
    d = list(shares.values())
    verdict, reason, ci, look, pending = C.judge_difference(ctx, experiment, d, "below", 100 * READERS_WAIT)
    measured = (f"table locks that waited, {engine}: median {statistics.median(d):.3f}% of {len(d)} blocks "
                f"[{ci.lo:.3f}, {ci.hi:.3f}] ({ci.coverage:.1%} {ci.method}); bound {100 * READERS_WAIT:g}%")
    return C.Result(measured, verdict, reason + C.flagged(cells), cells=cells, ns=(len(d),), look=look,
                    pending=pending)


def _decide_difference(ctx, d: list[float], result):
    """The experiment's looks on the per-block differences d (in block order), by the ratio
    claims' own sequential rule (intervals.sequential_decide, its sign-difference method):
    each look on the first n blocks at the per-look level (Bonferroni), the verdict frozen
    at the first look whose interval lies wholly above 0 (reproduced) or at or below it."""
    lo, hi, looks = BV.bounds_of(ctx.tidy, "read_write")
    schedule = I.look_schedule(lo, hi, looks)
    look_level = I.per_look_level(ctx.level, len(schedule))
    n = len(d)
    if not ctx.decide:
        return result(C.INCONCLUSIVE, BV.BY_DESIGN, I.difference_sign_interval(d, ctx.level))
    if n < schedule[0]:
        return result(C.INCONCLUSIVE, f"{n} blocks measured, the first look is at {schedule[0]} (of max {hi}): "
                      f"more blocks may decide it", I.difference_sign_interval(d, look_level),
                      f"0/{len(schedule)}", True)
    s = I.sequential_decide(d, [0.0] * n, C.Rule("above", 0.0), ctx.level, schedule, method="sign-difference")
    look = f"{s.look}/{len(schedule)}"
    at = (f"look {look} after {s.blocks} blocks, each look at level {look_level:.4g} "
          f"(Bonferroni over {len(schedule)} looks for {ctx.level:g})")
    if s.verdict == C.REPRODUCED:
        return result(C.REPRODUCED, f"MEMORY waits on table locks more often than InnoDB: the interval "
                      f"lies wholly above 0, {at}", s.ci, look)
    if s.verdict == C.NOT_REPRODUCED:
        return result(C.NOT_REPRODUCED, f"MEMORY does not wait on table locks more often than InnoDB: "
                      f"the interval lies at or below 0, {at}", s.ci, look)
    pending = n < hi
    why = "its coverage is below the look's level" if s.ci.coverage < s.ci.level else "it straddles 0"
    more = (f"{n} blocks measured of max {hi}: more blocks may decide it" if pending
            else f"all {hi} blocks measured: the data do not tell")
    return result(C.INCONCLUSIVE, f"the interval of the difference, {at}: {why}; {more}", s.ci, look, pending)


CLAIMS = [
    C.Check(
        id="B1-HASH-range-full-scan", study="B1",
        statement="Range queries on MEMORY's default HASH index are full scans (EXPLAIN type ALL); "
                  "an index USING BTREE restores range scans",
        published="EXPLAIN: ALL with HASH, range with BTREE", macro="MemoryHashScan",
        experiments=("simple_ranges",), fn=full_scan, reads={"engine": ["MEMORY", "MEMORY-BTREE"]}),
    *[Collapse(
        id=f"B1-HASH-range-throughput{suffix}", study="B1",
        statement=f"Simple-Ranges{where}: with HASH, MEMORY collapses (full scans); BTREE restores "
                  f"throughput (BTREE ÷ HASH)",
        published="0–2 TPS with HASH", published_ratio=None,
        rule=C.above(COLLAPSE, "chosen here: the study gives 0–2 TPS against a normal rate it does "
                               "not state; a collapse to that is at least an order of magnitude"),
        macro=macro, experiments=(exp,), experiment_name=exp, tables=tables, a="MEMORY-BTREE", b="MEMORY")
      for exp, suffix, where, macro, tables in (
          ("simple_ranges", "", ", 1 table (the study's sysbench used one)", "MemoryHashGap", 1),
          ("simple_ranges", "-8-tables", ", 8 tables (an extra row: the study used one table)",
           "MemoryHashGapEight", 8),
          ("simple_ranges_scale", "-at-scale", " on the larger tables of simple_ranges_scale, 1 table",
           "MemoryHashGapScale", 1))],
    *[C.EngineRatio(
        id=f"B2-MEMORY-8pct-over-InnoDB{suffix}", study="B2",
        statement=f"Read-only (OLTP_RO, {{levels}}), {where}: MEMORY-BTREE about 8% faster than InnoDB "
                  f"(MEMORY-BTREE ÷ InnoDB about 1.08)",
        published="+8% (1.08×), 'limited to 8% more'", published_ratio=1.08,
        rule=C.within(1.0, 1.08 * STATED,
                      "the study bounds MEMORY's lead over InnoDB at 8%: never behind it (1), and "
                      "above it by at most 1.08, that end widened x1.25 so a measured +8% can read "
                      "reproduced (claimrules.STATED, chosen here)"),
        mechanism=SERVER_LAYER, macro=macro, **GATE, tables=tables,
        experiments=("oltp_ro",), experiment_name="oltp_ro", a="MEMORY-BTREE", b="InnoDB")
      for suffix, where, macro, tables in (
          ("", "1 table (the study's sysbench used one)", "MemoryEightPct", 1),
          ("-8-tables", "8 tables (an extra row: the study used one table)", "MemoryEightPctEight", 8))],
    C.Check(
        id="B2-MEMORY-readers-do-not-contend", study="B2",
        statement=f"Read-only (OLTP_RO, autocommit, 1 table): MEMORY's concurrent readers do not "
                  f"contend: at most {READERS_WAIT:.1%} of its table locks waited",
        published="qualitative: no limiting locks, concurrent readers don't contend", **GATE,
        mechanism="readers of a MEMORY table share its lock", macro="MemoryReaders",
        rule_text=f"median share of waited table locks below {READERS_WAIT:.1%}",
        experiments=("oltp_ro",), fn=lambda ctx, build: readers_wait(ctx, build), by_blocks=True,
        reads={"engine": ["MEMORY-BTREE"], "tables": [1], "levels": None}),
    EngineScaling(
        id="B3-MEMORY-writes-limited", study="B3",
        statement="Read-write mix: MEMORY more or less single-threaded for writes, so it gains less "
                  f"from added cores than InnoDB (MEMORY's gain ÷ InnoDB's, from the fewest cores at or "
                  f"above {B_CORES} to the most)",
        published="qualitative: 'more or less a single threaded engine for any write workload'",
        rule=C.below(1.0, "'single threaded': MEMORY gains less from cores; a direction"),
        mechanism=WRITES, macro="MemoryWrites", needs=C.SCALING, min_cores=B_CORES,
        cores_why=B_CORES_WHY,
        experiments=("read_write",), experiment_name="read_write", a="MEMORY", b="InnoDB"),
    C.Check(
        id="B3-MEMORY-table-lock-waits", study="B3",
        statement="The artifact's own hypothesis, not a published claim: in the read-write mix MEMORY's "
                  "table locks wait more often than InnoDB's (Table_locks_waited), which would explain "
                  "B3's single-threaded writes",
        published="none: the study names no mechanism for B3", **GATE,
        mechanism=TABLE_LOCKS, macro="MemoryLockWaits", experiments=("read_write",), fn=lock_waits,
        by_blocks=True, reads={"engine": ["MEMORY", "InnoDB"]},
        rule_text="MEMORY minus InnoDB share of waited table locks: above 0"),
    *[C.TablesRatio(
        id=f"B4-single-table-bottleneck-{exp.replace('_', '-')}-{engine}", study="B4",
        statement=f"{label}, {engine}: 8 tables faster than 1 at the most cores measured (a single "
                  f"table provokes server bottlenecks)",
        published="qualitative: LOCK_open, MDL, index mutex with 1 table",
        rule=C.above(1.0, "'faster' is any ratio above 1; the interval keeps noise out"),
        mechanism=SINGLE_TABLE, macro=f"SingleTable{macro}{engine}", **GATE,
        experiments=(exp,), experiment_name=exp, engine=engine, a=8, b=1)
      for exp, label, macro in (("point_select", "Point-Selects", "PS"), ("oltp_ro", "OLTP_RO", "RO"))
      for engine in ("InnoDB",)],
]

FIGURES = {
    "b_memory": dict(script="fig_memory.R", flag="Memory",
                     inputs=[("simple_ranges", "summary"), ("simple_ranges_scale", "summary"),
                             ("oltp_ro", "summary"), ("read_write", "summary")],
                     extra=["factors.csv", "published.csv"]),
}

# Published numbers b_memory draws (harness.analysis.marks): B2's +8%, MEMORY-BTREE on
# InnoDB's measured peak on 8 tables (the figure's panel; the 1-table claim is the headline row). Not drawn: B1's 0-2 TPS (an absolute rate of unknown
# hardware and table size) and B3/B4 (qualitative).
PUBLISHED_MARKS = [_marks.from_claim(next(c for c in CLAIMS if c.id == "B2-MEMORY-8pct-over-InnoDB-8-tables"),
                                     "b_memory")]


def macros(ctx, rows, fmt):
    build = (ctx.tidy.builds("simple_ranges") or [""])[0]
    plans = {e: explain_of(ctx, "simple_ranges", build, e) for e in ("MEMORY", "MEMORY-BTREE")}
    out = []
    for e, name in (("MEMORY", "Hash"), ("MEMORY-BTREE", "Btree")):
        p = plans[e]
        out += [(f"Memory{name}Type", fmt.tex_escape("/".join(fmt.distinct(t for t, _, _ in p))) if p else fmt.NA),
                (f"Memory{name}Rows", fmt.tex_escape("/".join(fmt.distinct(r for _, _, r in p))) if p else fmt.NA)]
    out.append(("MemoryCollapse", fmt.fmt_num(COLLAPSE)))
    for exp, name in (("simple_ranges", ""), ("simple_ranges_scale", "Scale")):
        b = (ctx.tidy.builds(exp) or [""])[0]
        scan, rng = work_bound(ctx, b, exp)
        size = ctx.tidy.spec(exp).get("table_size")
        out += [(f"MemoryTableSize{name}", fmt.fmt_int(size) if size else fmt.NA),
                (f"MemoryWorkBound{name}", fmt.fmt_ratio(scan / rng if scan and rng else None, 1))]
    return out

