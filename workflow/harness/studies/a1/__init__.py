"""Study A (2012), its full-text part A1: InnoDB vs MyISAM FULLTEXT search
over OHSUMED (or its seeded stand-in), 30 keywords in the study's order,
users x cores; every build with FULLTEXT; MyISAM with myisam_use_mmap.

Published numbers are quoted from docs/studies.md (A1). Every comparison is on
the server's own statement count (claims.METRIC) with everything else fixed;
a claim about a core count the host cannot give mysqld is *not measurable
here*, its reason naming the cores.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from harness.analysis import claims as C
from harness.analysis import marks as _marks
from harness.studies.a1 import corpus_stats, fts_dataset
from harness.studies.a1.ohsumed import OHSUMED_RECORDS

NAME = "a1"
CODES = ("A1",)
# mysqld's core counts the study swept (`cores: study`, harness.plan.config.plan_cores)
CORES = {"A1": (4, 8, 16, 24, 32)}

# A1's load: each user loops over the 30 keywords in order (fts.lua: fts_dataset.DRIVER)
# its dataset: the corpus loaded into one FULLTEXT-indexed table per engine
DATASETS = {"fulltext": fts_dataset}
WORKLOADS = {fts_dataset.WORKLOAD: fts_dataset.DRIVER}
# its commands (python -m harness <command>: <module>.main(argv)), which its rules.smk runs
COMMANDS = {
    "corpus": ("harness.studies.a1.corpus_cli", "study A1: the FTS corpus, generated stand-in or parsed OHSUMED"),
    "fts-export": ("harness.studies.a1.fts_export", "study A1: the fulltext datasets' gate and load tables"),
    "fts-counts": ("harness.studies.a1.fts_counts", "study A1: the keyword-count table (LaTeX) from the gate"),
}
TITLE = "Study A1: full-text search, InnoDB vs MyISAM"
SECTION = "section.tex"

EXPERIMENTS = {
    "fts": ("A1", "full-text search, InnoDB vs MyISAM, cores x users"),
    "fts_builds": ("A1", "full-text search on every build with FULLTEXT"),
    "fts_mmap": ("A1", "full-text search, MyISAM myisam_use_mmap off vs on"),
}

# The shared aspects (host, cores, users, builds, ...) are in a2_a3.SETUP, which
# names A1's values too; the corpus has no artifact key there, so its deviation
# is stated on the headline claim instead.
SETUP = []
# its own tidy tables (rules.smk: fts_dataset_table), which the deviations table's corpus row reads
TIDY_TABLES = {corpus_stats.GATE_TABLE: tuple(EXPERIMENTS), corpus_stats.LOAD_TABLE: tuple(EXPERIMENTS)}
CORPUS_DEVIATION = ("OHSUMED (348,566 MEDLINE records) has no redistribution licence: the profile's "
                    "corpus is used, a seeded stand-in with the 30 keywords planted at their published "
                    "counts unless the real archive is given (corpus: source: ohsumed)")

LOCKS = "MyISAM's LOCK_status mutex, InnoDB's dictionary mutex"
BEST_INNODB, BEST_MYISAM = 13000, 3900


@dataclass(frozen=True)
class EngineAtCores(C.EngineRatio):
    """Engine a / engine b, each at its best over users, with mysqld on exactly
    `cores` cores; a host without cells on that many cores cannot say (cores: ...)."""
    cores: int = 0

    def sides(self, ctx, build, settings):
        sides = super().sides(ctx, build, settings)
        if isinstance(sides, C.Result):
            return sides
        return tuple((f"{label} on {self.cores} cores", [c for c in cells if c.int("cores") == self.cores])
                     for label, cells in sides)

    def absent(self, ctx, build, label):
        measured = sorted({c.int("cores") for c in ctx.tidy.cells(self.experiment_name, build=build)})
        if measured and self.cores not in measured:
            return C.missing("cores", f"the published factor is on {self.cores} cores; mysqld was held "
                                      f"on {C.fmt_cores(measured)} here (the host has too few)")
        return super().absent(ctx, build, label.split(" on ")[0])


def _best_at(ctx, experiment, engine, cores):
    return _best(ctx, experiment, engine, cores=cores)


def _best(ctx, experiment, engine, **where):
    """(median server QPS, cell) of an engine's best cell (first build), or (None, None)."""
    builds = ctx.tidy.builds(experiment)
    if not builds:
        return None, None
    cell = C.best(C.pool(ctx, experiment, builds[0], {}, engine=engine, **where))
    return (cell.median(C.METRIC), cell) if cell else (None, None)


A1_CORES = 4
A1_CORES_WHY = "A1's own figures: mysqld on 4, 8, 16, 24 and 32 cores"
A1_GATE = dict(needs=C.CONTENTION, min_cores=A1_CORES, cores_why=A1_CORES_WHY)
DIRECTION = "a reported pair of values: only the direction is judged, the magnitude beside it"
# the study's "(the) main" contention: the published wait ranks first; a wait the study only
# names ("due to", "added") ranks in the top 5, a count chosen here (harness.analysis.waits)
TOP = 5


# "scaling well from 4 to 16 cores, then ... only slightly increased due contention on the
# dictionary mutex": the mutex limits InnoDB beyond 16 cores, first on 24 in the study's sweep
DICT_CORES = 24
DICT_CORES_WHY = "A1's text: InnoDB scales well to 16 cores, the dictionary mutex limits it beyond (24 and 32)"
# The study saw mmap not help on its experimental MyISAM build without LOCK_status, which was
# never published: stock MyISAM is measured (harness.report.deviations lists it)
NOLOCK_DEVIATION = ("the study does not say which build it tried myisam_use_mmap on: its note on it sits "
                    "under the results of its experimental MyISAM without the LOCK_status mutex "
                    "(MyISAM-noLock, never published); stock MyISAM, with LOCK_status, is measured")
NOLOCK_LIMITS = ("stock MyISAM, not the study's MyISAM-noLock: LOCK_status, its top wait, still caps "
                 "throughput, so a tie or an mmap_lock wait here need not hold without it, nor the reverse")


def _wait(engine, pattern, published, macro, cid=None, experiment="fts", levels=None, top_n=TOP,
          min_cores=A1_CORES, cores_why=A1_CORES_WHY, **kw):
    where = "first among" if top_n == 1 else f"among the top {top_n} of"
    return C.TopWait(
        id=cid or f"A1-WAIT-{engine}-{macro.removeprefix('FtsWait')}", study="A1",
        statement=f"Full-text search: {published} {where} {engine}'s lock/synchronisation waits "
                  f"in most repetitions",
        published=published, needs=C.CONTENTION, mechanism="waits show where threads contend",
        min_cores=min_cores, cores_why=cores_why,
        macro=macro, experiments=(experiment,), experiment_name=experiment, engine=engine,
        pattern=pattern, top_n=top_n, levels=levels, **kw)


@dataclass(frozen=True)
class CoresSetRatio(C.Comparison):
    """One engine's peak over the core counts `a` / its peak over every measured core
    count below min(a), the per-block peak over users (the study's "best on 24 or 32"):
    the counts are the study's, fixed before measuring, never chosen from the data."""
    engine: str = ""
    a: tuple = ()
    load = ("users",)

    def sides(self, ctx, build, settings):
        p = C.pool(ctx, self.experiment_name, build, settings, engine=self.engine, **self.where(settings))
        cores = sorted({c.int("cores") for c in p})
        top = [c for c in cores if c in self.a]
        below = [c for c in cores if c < min(self.a)]
        if not top or not below:
            return C.missing("cores", f"{self.engine}'s peak on {' or '.join(map(str, self.a))} cores needs "
                                      f"mysqld on one of them and on fewer; held on {C.fmt_cores(cores)} here "
                                      f"(the host has too few)")
        return ((f"{self.engine} on {'/'.join(map(str, top))} cores", [c for c in p if c.int("cores") in top]),
                (f"on {'/'.join(map(str, below))} cores", [c for c in p if c.int("cores") in below]))

    def absent(self, ctx, build, label):
        return C.missing("data", f"no {self.experiment_name} cells of {label}")


# The core counts of the two published bests (InnoDB's 13,000 QPS "on 24 or 32 cores",
# MyISAM's 3,900 "on 8"): the best-over-cores claim needs a cell on one of each.
BEST_CORES = {"InnoDB": (24, 32), "MyISAM": (8,)}


@dataclass(frozen=True)
class BestsRatio(C.EngineRatio):
    """Engine a at its best / engine b at its best over every load (users x cores) both
    measured, gated on the core counts the study's two bests were on (`bests`: engine ->
    counts, one of which each engine must have been measured on): a host that cannot give
    mysqld those counts compares other peaks (on 8 cores the published factor is 1.5, not
    3), so its row is not measurable. The gate is fixed by the published figures, never
    by the data judged; `min_cores` is the first count of engine a's (the plan's gate)."""
    bests: tuple = ()     # ((engine, (core counts of its published best)), ...)
    read_floor = 0        # reads every core count (harness.plan.reads): each side's peak is over all

    def evaluate(self, ctx, build):
        res = C.EngineRatio.evaluate(replace(self, needs=None), ctx, build)   # peaks over every core count
        if res.verdict == C.NOT_MEASURABLE:
            return res
        lacking = []
        for engine, counts in self.bests:
            have = sorted({c.int("cores") for c in ctx.tidy.cells(self.experiment_name, build=build,
                                                                   engine=engine)})
            if not set(have) & set(counts):
                lacking.append(f"{engine}'s best was on {' or '.join(map(str, counts))} cores, "
                               f"measured here on {C.fmt_cores(have)}")
        if not lacking:
            return res
        return replace(res, verdict=C.NOT_MEASURABLE,
                       reason="cores: the published bests need mysqld on those core counts (" +
                              "; ".join(lacking) + ")" + C.flagged(res.cells))


CLAIMS = [
    BestsRatio(
        id="A1-FTS-innodb-3x-best", study="A1",
        statement="Full-text search: InnoDB at least 3× MyISAM, each at its best over users and cores "
                  "(only on a host that measured InnoDB on 24 or 32 cores and MyISAM on 8)",
        published="InnoDB 13,000 vs MyISAM 3,900 QPS at best (≥ 3×)", published_ratio=BEST_INNODB / BEST_MYISAM,
        rule=C.above(3.0, "the study's own 'at least 3×'; no tolerance"),
        needs=C.CONTENTION, mechanism=LOCKS, min_cores=BEST_CORES["InnoDB"][0],
        cores_why="the study's bests: InnoDB's on 24 or 32 cores, MyISAM's on 8",
        macro="FtsBest", deviation=CORPUS_DEVIATION,
        experiments=("fts",), experiment_name="fts", a="InnoDB", b="MyISAM", bests=tuple(BEST_CORES.items())),
    *[EngineAtCores(
        id=f"A1-FTS-innodb-{cores}-cores", study="A1",
        statement=f"Full-text search on {cores} cores: InnoDB about x{pub:g} MyISAM (each at its best "
                  f"over users)",
        published=f"x{pub:g} on {cores} cores", published_ratio=pub,
        rule=C.stated(pub, f"the study's x{pub:g}"),
        needs=C.CONTENTION, mechanism=LOCKS, min_cores=cores, cores_why=f"the study's figure on {cores} cores",
        macro=macro, experiments=("fts",), experiment_name="fts", a="InnoDB", b="MyISAM", cores=cores)
      for cores, pub, macro in ((8, 1.5, "FtsEightCores"), (4, 2.0, "FtsFourCores"))],
    C.CoresRatio(
        id="A1-FTS-MyISAM-stops-at-8", study="A1",
        statement="Full-text search, MyISAM: loses throughput beyond 8 cores (best on the most cores "
                  "measured above 8 ÷ best on 8)",
        published="MyISAM scales 4→8 cores, loses throughput beyond (best 3,900 QPS on 8)",
        rule=C.below(1.0, "'regression with more cores': below 1"),
        mechanism="MyISAM's LOCK_status mutex", **A1_GATE, macro="FtsMyISAMStops",
        experiments=("fts",), experiment_name="fts", engine="MyISAM", a=None, b=8),
    C.CoresRatio(
        id="A1-FTS-MyISAM-4-to-8", study="A1",
        statement="Full-text search, MyISAM: scales from 4 to 8 cores (best on 8 ÷ best on 4)",
        published="MyISAM scales only from 4 to 8 cores", rule=C.above(1.0, "'scales': above 1"),
        mechanism="MyISAM's LOCK_status mutex", **A1_GATE, macro="FtsMyISAMFourEight",
        experiments=("fts",), experiment_name="fts", engine="MyISAM", a=8, b=4),
    C.CoresRatio(
        id="A1-FTS-InnoDB-scales-4-16", study="A1",
        statement="Full-text search, InnoDB: scales from 4 to 16 cores (best on 16 ÷ best on 4)",
        published="InnoDB scales 4→16 cores (best 13,000 QPS on 24–32)",
        rule=C.above(1.0, "'scales': above 1"),
        mechanism="InnoDB's dictionary mutex limits it beyond 16", **A1_GATE, macro="FtsInnoDBScales",
        experiments=("fts",), experiment_name="fts", engine="InnoDB", a=16, b=4),
    C.CoresRatio(
        id="A1-FTS-InnoDB-no-regression-32", study="A1",
        statement="Full-text search, InnoDB: no regression up to 32 cores (best on 32 ÷ best on 16)",
        published="InnoDB does not regress up to 32 cores (best 13,000 QPS on 24 or 32)",
        rule=C.above(1.0, "'does not regress': not below 16 cores' best; a flat curve stays inconclusive"),
        mechanism="InnoDB's dictionary mutex", **A1_GATE, macro="FtsInnoDBNoRegression",
        experiments=("fts",), experiment_name="fts", engine="InnoDB", a=32, b=16),
    C.CoresRatio(
        id="A1-FTS-InnoDB-slight-gain-beyond-16", study="A1",
        statement="Full-text search, InnoDB: beyond 16 cores only a slight gain (best on the most "
                  "cores measured above 16 ÷ best on 16, under ×1.10)",
        published="InnoDB: only slightly increased beyond 16 cores (no figure)",
        rule=C.below(C.CLOSE, f"'only slightly increased': a gain under ×{C.CLOSE:g} (claimrules.CLOSE, "
                              f"chosen here); the increase itself is A1-FTS-InnoDB-no-regression-32's"),
        mechanism="InnoDB's dictionary mutex", **A1_GATE, macro="FtsInnoDBSlight",
        experiments=("fts",), experiment_name="fts", engine="InnoDB", a=None, b=16),
    CoresSetRatio(
        id="A1-FTS-InnoDB-peak-24-32", study="A1",
        statement="Full-text search, InnoDB: its peak is on 24 or 32 cores (best on 24/32 ÷ best on "
                  "fewer cores)",
        published="InnoDB's best, 13,000 QPS, on 24 or 32 cores",
        rule=C.above(1.0, "'the best result ... on 24 or 32 cores': above the fewer cores' best; "
                          "a plateau from 16 on stays inconclusive"),
        mechanism="InnoDB's dictionary mutex", **A1_GATE, macro="FtsInnoDBPeak",
        experiments=("fts",), experiment_name="fts", engine="InnoDB", a=(24, 32)),
    _wait("MyISAM", r"LOCK_status", "MyISAM LOCK_status mutex", "FtsWaitLockStatus", top_n=1),
    _wait("InnoDB", r"dict_sys_mutex", "InnoDB dictionary mutex (dict_sys_mutex)", "FtsWaitDict",
          min_cores=DICT_CORES, cores_why=DICT_CORES_WHY),
    C.LevelRatio(
        id="A1-FTS-mmap-no-gain", study="A1",
        statement="Full-text search, MyISAM: {a} brings no gain over {b} (at most x1.05; a loss is no "
                  "help either)",
        published="no gain, more contention (mmap_lock)", published_ratio=1.0,
        rule=C.below(C.EQUIVALENT, "'did not help': no gain beyond x1.05 (claimrules.EQUIVALENT, chosen "
                                   "here); a loss does not help either"), needs=C.CONTENTION, mechanism="MyISAM's mmap_lock",
        min_cores=A1_CORES, cores_why=A1_CORES_WHY, macro="FtsMmap", experiments=("fts_mmap",), experiment_name="fts_mmap", engine="MyISAM",
        a=("on",), b=("off",), deviation=NOLOCK_DEVIATION, limits=NOLOCK_LIMITS),
    _wait("MyISAM", r"mmap_lock", "MyISAM mmap_lock (myisam_use_mmap on)", "FtsWaitMmap",
          cid="A1-WAIT-MyISAM-mmap-lock", experiment="fts_mmap", levels=("on",),
          deviation=NOLOCK_DEVIATION, limits=NOLOCK_LIMITS),
    C.EngineRatio(
        id="A1-FTS-builds-innodb-wins", study="A1",
        statement="Full-text search, every build with InnoDB FULLTEXT: InnoDB beats MyISAM at best",
        published="InnoDB ≥ 3× MyISAM on MySQL 5.6", published_ratio=BEST_INNODB / BEST_MYISAM,
        rule=C.above(1.0, "other builds than the study's: only the direction is checked"),
        needs=C.CONTENTION, mechanism=LOCKS, min_cores=A1_CORES, cores_why=A1_CORES_WHY,
        macro="FtsBuilds", experiments=("fts_builds",), experiment_name="fts_builds", a="InnoDB", b="MyISAM",
        deviation="the study measured one MySQL 5.6 build; here every pinned build with FULLTEXT"),
    C.Untestable(
        id="A1-patched-build-data-file-waits", study="A1",
        statement="A MyISAM build with LOCK_status taken out of the code: waits on reading the data "
                  "file become the top wait", published="data-file read waits on top",
        macro="FtsPatchedWaits",
        why="build: the study's patched MyISAM build (LOCK_status removed) was never published; no "
            "pinned build lacks LOCK_status, and patching one would test a different patch"),
    C.Untestable(
        id="A1-patched-build-4050-qps", study="A1",
        statement="The MyISAM build without LOCK_status: best 4,050 QPS on 8 cores, vs 3,900",
        published="4,050 vs 3,900 QPS (1.04×)", published_ratio=4050 / 3900, macro="FtsPatchedQps",
        why="build: the no-LOCK_status build was never published (see A1-patched-build-data-file-waits)"),
    C.Untestable(
        id="A1-MyISAM-XFS-vs-EXT4", study="A1",
        statement="MyISAM full-text search with the data on XFS vs on EXT4",
        published="XFS vs EXT4 (as reported)", macro="FtsFilesystems",
        why="host: every cell's data directory is on the host's one filesystem under Docker; "
            "comparing XFS with EXT4 needs two filesystems, which the artifact does not create"),
]

# figures/<name>.pdf: R script, \ifHasFig<flag>, tidy inputs (experiment, kind), extra tidy files
FIGURES = {
    "a1_fts_users": dict(script="fig_fts_users.R", flag="FtsUsers", inputs=[("fts", "summary")],
                         extra=["published.csv"]),
    "a1_fts_cores": dict(script="fig_fts_cores.R", flag="FtsCores", inputs=[("fts", "summary")],
                         extra=["published.csv"]),
    "a1_fts_load": dict(script="fig_fts_load.R", flag="FtsLoad", inputs=[("fts", "load")]),
    "a1_fts_waits": dict(script="fig_waits.R", flag="FtsWaits", inputs=[("fts", "waits")]),
}

_CLAIM = {c.id: c for c in CLAIMS}
# Published numbers the figures draw (harness.analysis.marks): the factors on 8 and 4
# cores, as InnoDB's best = the factor x MyISAM's measured best on those cores. Not
# drawn: the best-over-cores 3x (the two bests are on different core counts) and
# the absolute 13,000/3,900 QPS of 2012 hardware; the keyword counts are the
# published column of the count table (harness.studies.a1.fts_counts, from the corpus gate).
# paper/generated/<file> a study writes besides the report's -> the experiment it needs
GENERATED_TEX = {"fts_counts.tex": "fts"}
PUBLISHED_MARKS = [
    _marks.from_claim(_CLAIM[f"A1-FTS-innodb-{cores}-cores"], figure)
    for figure in ("a1_fts_users", "a1_fts_cores") for cores in (8, 4)
]


def _loaded_rows(ctx, source, fmt) -> str:
    """The corpus rows the fulltext datasets loaded (A1's tidy load table; distinct values
    joined), else the real corpus's published size for source ohsumed, else n/a. Not the
    config's corpus.rows: a profile's defaults keep it for the real corpus too, which loads
    all its records whatever it says."""
    vals = sorted({int(r["rows"]) for r in ctx.tidy.tables.get(corpus_stats.LOAD_TABLE) or []
                   if str(r.get("rows") or "").isdigit()})
    if vals:
        return ", ".join(fmt.fmt_int(v) for v in vals)
    return fmt.fmt_int(OHSUMED_RECORDS) if source == "ohsumed" else fmt.NA


def macros(ctx, rows, fmt):
    """Numbers the section quotes besides the claims' own (Verdict/Ratio/Measured per claim)."""
    spec = ctx.tidy.spec("fts")
    corpus = spec.get("corpus") or {}
    cells = ctx.tidy.cells("fts")
    cores = sorted({c.int("cores") for c in cells})
    users = sorted({c.int("users") for c in cells})
    out = []
    for engine in ("InnoDB", "MyISAM"):
        q, cell = _best(ctx, "fts", engine)
        out += [(f"FtsBestQps{engine}", fmt.fmt_int(q)),
                (f"FtsBestCores{engine}", C.fmt_cores([cell.int("cores")]) if cell else fmt.NA)]
    source = corpus.get("source", "standin")
    out += [
        ("FtsCorpus", "the real OHSUMED corpus" if source == "ohsumed" else "the seeded offline stand-in"),
        ("FtsCorpusRows", _loaded_rows(ctx, source, fmt)),
        ("FtsCoresMeasured", fmt.join_words([str(c) for c in cores]) + (" core" if cores == [1] else " cores")
         if cores else fmt.NA),
        ("FtsUsersMeasured", fmt.join_words([str(u) for u in users]) + (" user" if users == [1] else " users")
         if users else fmt.NA),
        ("FtsPubBestInnoDB", fmt.fmt_int(BEST_INNODB)),
        ("FtsPubBestMyISAM", fmt.fmt_int(BEST_MYISAM)),
    ]
    return out


def deviations(tidy):
    """The corpus row of the deviations table: OHSUMED as published vs the run's corpus
    (harness.studies.a1.corpus_stats, from fts_gate.csv and fts_load.csv)."""
    here = corpus_stats.artifact_text(tidy.tables.get(corpus_stats.GATE_TABLE) or [],
                                      tidy.tables.get(corpus_stats.LOAD_TABLE) or [])
    return [("corpus statistics (A1)", "A1: " + corpus_stats.studies_text(),
             here or "no full-text dataset in this run")]
