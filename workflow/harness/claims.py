"""Published claims, checked against the measured tidy data.

Each claim is a small function registered with ``@claim(...)``. It receives
a ``View`` (the tidy data of one build: summaries, EXPLAIN rows, status
counters, ... of the experiments it names) and the ``claims:`` section of
the resolved config, and returns ``(measured, verdict)``: a short
human-readable measured value and one of ``VERDICTS``. Missing data must
give ``NOT_MEASURABLE``, never an exception. To add a claim, write one more
function below.

Published values are quoted from the studies' specification (studies.md);
measured values always come from the data. Thresholds come from the config
(``claims:``), read with defaults (``DEFAULTS``):

    scaling_margin        8 tables must gain more than 1 table by this (relative)
    win_margin            "A beats B" needs A/B > 1 + win_margin
    ratio_tolerance       a published "≥ k×" is met by k × (1 - ratio_tolerance)
    much_faster           "A ≫ B" (and a restored/collapsed throughput) needs A/B ≥ this
    slight_max            "slightly lower" is a ratio in [1 - slight_max, 1 - win_margin)
    memory_gain_tolerance B2: MEMORY/InnoDB must be within 1.08 ± this
    contention_min_cores  claims about contention and scaling need mysqld on at
                          least this many cores; below, "not measurable here"
"""

import csv
from dataclasses import dataclass, field
from typing import Callable

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_MEASURABLE = "not measurable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_MEASURABLE)

CSV_FIELDS = ("id", "study", "experiment", "build", "claim", "published",
              "measured", "verdict")

DEFAULTS = {
    "scaling_margin": 0.1,
    "win_margin": 0.0,
    "ratio_tolerance": 0.1,
    "much_faster": 1.5,
    "slight_max": 0.2,
    "memory_gain_tolerance": 0.1,
    "contention_min_cores": 2,
}
DEFAULT_SCALING_MARGIN = DEFAULTS["scaling_margin"]

A3_TABLES = 8          # Study A3 ran on 8 tables
A2_TABLES = 1          # Study A2 on one
A2_MIN_RATIO = 3.0     # published: InnoDB 3-6x MyISAM
B2_PUBLISHED_RATIO = 1.08  # published: MEMORY ~8% faster than InnoDB


def setting(cfg, key):
    """A `claims:` threshold from the config, or its default."""
    default = DEFAULTS[key]
    try:
        value = (cfg or {}).get(key, default)
        return type(default)(value) if value is not None else default
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class Claim:
    id: str
    study: str
    experiments: tuple  # the experiments whose tidy data it reads
    text: str
    published: str
    evaluate: Callable  # (view, claims_config) -> (measured, verdict)
    macro: str = ""  # letters only: the paper gets \Verdict<macro>

    @property
    def experiment(self):
        return "+".join(self.experiments)


CLAIMS = []


def claim(id, study, experiments, text, published, macro=""):
    """Decorator: register a claim function in CLAIMS."""
    if isinstance(experiments, str):
        experiments = (experiments,)

    def register(fn):
        CLAIMS.append(Claim(id, study, tuple(experiments), text, published, fn, macro))
        return fn
    return register


# --- summary rows ---------------------------------------------------------

INT_COLUMNS = ("tables", "cores", "users", "n")
FLOAT_COLUMNS = ("qps_median", "qps_ci_lo", "qps_ci_hi", "qps_cv")
FACTOR_COLUMNS = ("variant", "trx", "ps", "pfs", "spin_wait_delay", "innodb_read_only",
                  "key_cache")


def parse_flag(value):
    return str(value).strip().lower() in ("true", "t", "1", "yes")


def _number(value, kind):
    try:
        return kind(float(value))
    except (TypeError, ValueError):
        return None


def parse_row(raw):
    """Typed copy of one summary CSV row; unparsable numbers become None,
    factor columns missing from older files become ''."""
    row = dict(raw)
    for col in INT_COLUMNS:
        row[col] = _number(raw.get(col), int)
    for col in FLOAT_COLUMNS:
        row[col] = _number(raw.get(col), float)
    for col in FACTOR_COLUMNS:
        row[col] = "" if raw.get(col) is None else str(raw.get(col)).strip()
    row["unstable"] = parse_flag(raw.get("unstable", ""))
    return row


def read_summary(path):
    with open(path, newline="") as f:
        return [parse_row(r) for r in csv.DictReader(f)]


def by_experiment(rows):
    out = {}
    for r in rows:
        out.setdefault(r.get("experiment", ""), []).append(r)
    return out


# --- helpers for claim functions ------------------------------------------

def select(rows, **factors):
    return [r for r in rows
            if r.get("qps_median") is not None
            and all(r.get(k) == v for k, v in factors.items())]


def best(rows, **factors):
    """Highest median QPS over the rows matching `factors`, or None."""
    values = [r["qps_median"] for r in select(rows, **factors)]
    return max(values) if values else None


def values_of(rows, column, **factors):
    return sorted({r[column] for r in select(rows, **factors) if r.get(column) is not None})


def fmt_k(qps):
    """360000 -> '360K', 22967 -> '23.0K', 3900 -> '3.90K' (published style)."""
    k = qps / 1000
    return f"{k:.0f}K" if k >= 100 else f"{k:.1f}K" if k >= 10 else f"{k:.2f}K"


def fmt_cores(cores):
    cores = sorted(set(cores))
    if not cores:
        return "no cores"
    text = str(cores[0]) if len(cores) == 1 else f"{cores[0]}–{cores[-1]}"
    return f"{text} core" + ("" if cores == [1] else "s")


def ratio(a, b):
    return a / b if a is not None and b else None


def enabled_experiments(config):
    """Names of the experiments the resolved config runs, or None if it says nothing."""
    exps = (config or {}).get("experiments")
    if not isinstance(exps, dict):
        return None
    return {k for k, v in exps.items() if not isinstance(v, dict) or v.get("enabled", True)}


@dataclass
class View:
    """The tidy data of one build, as a claim function sees it.

    `summaries`: experiment -> parsed summary rows; `extras`: kind
    ('explain', 'status', 'keycaches', 'waits') -> experiment -> rows (dicts
    of strings); `config`: the resolved config (may be empty)."""
    build: str
    summaries: dict
    extras: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)

    def all_rows(self, experiment):
        return [r for r in self.summaries.get(experiment) or []
                if r.get("build", "") == self.build]

    def rows(self, experiment, **factors):
        return select(self.all_rows(experiment), **factors)

    def best(self, experiment, **factors):
        return best(self.all_rows(experiment), **factors)

    def values(self, experiment, column, **factors):
        return values_of(self.all_rows(experiment), column, **factors)

    def extra(self, kind, experiment):
        return [r for r in (self.extras.get(kind) or {}).get(experiment) or []
                if r.get("build", "") == self.build]

    def cores(self, *experiments):
        return sorted({c for e in experiments for c in self.values(e, "cores")})

    def table_size(self, experiment):
        spec = ((self.config or {}).get("experiments") or {}).get(experiment) or {}
        return spec.get("table_size")

    def missing(self, experiment):
        """Why there is no data for `experiment`."""
        enabled = enabled_experiments(self.config)
        if enabled is not None and experiment not in enabled:
            return f"experiment {experiment} not run in this profile"
        return f"no {experiment} data"


def oltp_rows_trx(view, experiment, trx):
    """OLTP_RO factors for a transaction mode: trx='on' also matches cells of
    an experiment that does not vary trx (sysbench's default is BEGIN/COMMIT)."""
    if view.rows(experiment, trx=trx):
        return {"trx": trx}
    if trx == "on" and view.rows(experiment, trx=""):
        return {"trx": ""}
    return None


# --- measured quantities (shared with harness.report's macros) ------------

def engine_ratio(view, experiment, a, b, **factors):
    """(best QPS of engine a, of engine b, a/b) over rows matching factors."""
    qa = view.best(experiment, engine=a, **factors)
    qb = view.best(experiment, engine=b, **factors)
    return qa, qb, ratio(qa, qb)


def a2_ratio(view, experiment):
    """InnoDB vs MyISAM on one table (OLTP_RO: transactions on)."""
    factors = {"tables": A2_TABLES}
    if experiment == "oltp_ro":
        trx = oltp_rows_trx(view, experiment, "on")
        if trx is None:
            return None, None, None
        factors.update(trx)
    return engine_ratio(view, experiment, "InnoDB", "MyISAM", **factors)


def variant_ratio(view, experiment, engine, num, den, tables=A3_TABLES):
    """(best QPS with factors `num`, with `den`, ratio) for one engine."""
    qn = view.best(experiment, engine=engine, tables=tables, **num)
    qd = view.best(experiment, engine=engine, tables=tables, **den)
    return qn, qd, ratio(qn, qd)


def variant_wins(view, cfg, experiment, better, base, needs):
    """'Setting `better` beats `base`' for InnoDB and MyISAM on 8 tables: reproduced
    when it does for every engine measured with both (ratio above 1 + win_margin)."""
    margin = setting(cfg, "win_margin")
    parts, outcomes = [], []
    for engine in ("InnoDB", "MyISAM"):
        q_better, q_base, r = variant_ratio(view, experiment, engine, better, base)
        if not r:
            parts.append(f"{engine}: needs {needs} on 8 tables")
            continue
        outcomes.append(r > 1 + margin)
        parts.append(f"{engine} {fmt_k(q_better)} vs {fmt_k(q_base)} ({r:.2f}×)")
    verdict = (NOT_MEASURABLE if not outcomes
               else REPRODUCED if all(outcomes) else NOT_REPRODUCED)
    return "; ".join(parts), verdict


def memory_engine(view, experiment):
    """The MEMORY flavour measured in a read-only experiment (BTREE preferred)."""
    for e in ("MEMORY-BTREE", "MEMORY"):
        if view.rows(experiment, engine=e):
            return e
    return None


def status_totals(view, experiment, engine):
    """Summed status counter deltas over an engine's cells, name -> value."""
    out = {}
    for r in view.extra("status", experiment):
        if r.get("engine") != engine:
            continue
        try:
            out[r["name"]] = out.get(r["name"], 0.0) + float(r["delta"])
        except (KeyError, TypeError, ValueError):
            continue
    return out


def lock_wait_pct(view, experiment, engine):
    """Table_locks_waited as % of all table locks over the engine's cells, or None."""
    s = status_totals(view, experiment, engine)
    waited, immediate = s.get("Table_locks_waited", 0.0), s.get("Table_locks_immediate", 0.0)
    if waited + immediate <= 0:
        return None
    return 100.0 * waited / (waited + immediate)


def explain_of(view, experiment, engine, statement_filter="range"):
    """Distinct (type, key, rows) of an engine's EXPLAINed statements whose
    name contains `statement_filter`."""
    out = []
    for r in view.extra("explain", experiment):
        if r.get("engine") == engine and statement_filter in (r.get("statement") or ""):
            t = (r.get("type") or "", r.get("key") or "", r.get("rows") or "")
            if t not in out:
                out.append(t)
    return out


def tables_ratio(view, experiment, engine):
    """8 vs 1 tables at the most cores measured with both: (cores, q8, q1, ratio)."""
    both = sorted(set(view.values(experiment, "cores", engine=engine, tables=A3_TABLES))
                  & set(view.values(experiment, "cores", engine=engine, tables=1)))
    if not both:
        return None, None, None, None
    c = both[-1]
    q8 = view.best(experiment, engine=engine, tables=A3_TABLES, cores=c)
    q1 = view.best(experiment, engine=engine, tables=1, cores=c)
    return c, q8, q1, ratio(q8, q1)


def _too_few_cores(view, cfg, experiments, measured, why):
    """(measured, NOT_MEASURABLE) when mysqld never had contention_min_cores cores."""
    need = setting(cfg, "contention_min_cores")
    cores = view.cores(*experiments)
    if cores and max(cores) < need:
        return (f"{measured}; {why} needs mysqld on ≥ {need} cores, measured on "
                f"{fmt_cores(cores)}", NOT_MEASURABLE)
    return None


# --- Study A2: sysbench read-only, one table ---------------------------------

def _a2_claim(view, cfg, experiment, label):
    qi, qm, r = a2_ratio(view, experiment)
    missing = [e for e, v in (("InnoDB", qi), ("MyISAM", qm)) if not v]
    if missing:
        return f"no 1-table {label} QPS for {' and '.join(missing)}", NOT_MEASURABLE
    threshold = A2_MIN_RATIO * (1 - setting(cfg, "ratio_tolerance"))
    measured = (f"InnoDB {fmt_k(qi)} vs MyISAM {fmt_k(qm)} QPS ({r:.2f}×), 1 table, "
                f"{fmt_cores(view.values(experiment, 'cores', tables=A2_TABLES))}")
    return measured, REPRODUCED if r >= threshold else NOT_REPRODUCED


@claim("A2-RO-innodb-3x-oltp-ro", "A2", "oltp_ro",
       "OLTP_RO (BEGIN/COMMIT), 1 table: InnoDB 3–6× faster than MyISAM",
       "InnoDB 3–6× MyISAM", macro="ATwoOltpRo")
def a2_oltp_ro(view, cfg):
    return _a2_claim(view, cfg, "oltp_ro", "OLTP_RO")


@claim("A2-RO-innodb-3x-simple-ranges", "A2", "simple_ranges",
       "Simple-Ranges, 1 table: InnoDB 3–6× faster than MyISAM",
       "InnoDB 3–6× MyISAM", macro="ATwoSimpleRanges")
def a2_simple_ranges(view, cfg):
    return _a2_claim(view, cfg, "simple_ranges", "Simple-Ranges")


@claim("A2-RO-innodb-3x-point-select", "A2", "point_select",
       "Point-Selects, 1 table: InnoDB 3–6× faster than MyISAM",
       "InnoDB 3–6× MyISAM", macro="ATwoPointSelect")
def a2_point_select(view, cfg):
    return _a2_claim(view, cfg, "point_select", "Point-Selects")


# --- Study A3: sysbench read-only, 8 tables ----------------------------------

@claim("A3-OLTP-RO-innodb-peak", "A3", "oltp_ro",
       "OLTP_RO, 8 tables: InnoDB peaks above MyISAM, in autocommit and with transactions",
       "InnoDB 215K vs MyISAM 200K (1.08×); trx on: 250K vs 220K (1.14×)",
       macro="OltpRoInnoDBPeak")
def a3_oltp_ro_peaks(view, cfg):
    margin = setting(cfg, "win_margin")
    parts, outcomes = [], []
    for trx, label in (("off", "autocommit"), ("on", "trx on")):
        factors = oltp_rows_trx(view, "oltp_ro", trx)
        if factors is None:
            continue
        qi, qm, r = engine_ratio(view, "oltp_ro", "InnoDB", "MyISAM", tables=A3_TABLES, **factors)
        if not r:
            continue
        outcomes.append(r > 1 + margin)
        parts.append(f"{label}: InnoDB {fmt_k(qi)} vs MyISAM {fmt_k(qm)} ({r:.2f}×)")
    if not outcomes:
        return "needs InnoDB and MyISAM on 8 tables", NOT_MEASURABLE
    parts.append(fmt_cores(view.values("oltp_ro", "cores", tables=A3_TABLES)))
    return "; ".join(parts), REPRODUCED if all(outcomes) else NOT_REPRODUCED


@claim("A3-SR-innodb-much-faster", "A3", "simple_ranges",
       "Simple-Ranges, 8 tables: InnoDB ≫ MyISAM",
       "InnoDB 170K vs MyISAM 95K QPS (1.79×)", macro="SimpleRangesInnoDB")
def a3_simple_ranges(view, cfg):
    qi, qm, r = engine_ratio(view, "simple_ranges", "InnoDB", "MyISAM", tables=A3_TABLES)
    if not r:
        tables = view.values("simple_ranges", "tables")
        where = (f"measured on {' and '.join(map(str, tables))} "
                 f"table{'' if tables == [1] else 's'} only" if tables else "no QPS")
        return f"needs InnoDB and MyISAM on 8 tables; {where}", NOT_MEASURABLE
    need = setting(cfg, "much_faster")
    measured = f"InnoDB {fmt_k(qi)} vs MyISAM {fmt_k(qm)} QPS ({r:.2f}×; ≫ means ≥ {need:g}×)"
    return measured, REPRODUCED if r >= need else NOT_REPRODUCED


@claim("A3-PS-myisam-wins", "A3", "point_select",
       "Point-Selects is the workload where MyISAM beats InnoDB "
       "(best median QPS, 8 tables)",
       "MyISAM 360K vs InnoDB 210K QPS (1.71×)", macro="PSMyISAMWins")
def myisam_beats_innodb(view, cfg):
    myisam = view.best("point_select", engine="MyISAM", tables=A3_TABLES)
    innodb = view.best("point_select", engine="InnoDB", tables=A3_TABLES)
    missing = [e for e, v in (("MyISAM", myisam), ("InnoDB", innodb)) if not v]
    if missing:
        return f"no 8-table QPS for {' and '.join(missing)}", NOT_MEASURABLE
    r = myisam / innodb
    measured = f"MyISAM {fmt_k(myisam)} vs InnoDB {fmt_k(innodb)} QPS ({r:.2f}×)"
    return measured, REPRODUCED if r > 1 + setting(cfg, "win_margin") else NOT_REPRODUCED


@claim("A3-PS-8-tables-scale", "A3", "point_select",
       "8 tables scale far better than 1 (best QPS on the most cores "
       "÷ best QPS on the fewest, per engine)",
       "qualitative: 8 tables scale far better than 1", macro="PSTablesScale")
def eight_tables_scale_better(view, cfg):
    rows = view.all_rows("point_select")
    margin = setting(cfg, "scaling_margin")
    parts, outcomes = [], []
    for engine in sorted({r["engine"] for r in select(rows)}):
        peak8, peak1 = best(rows, engine=engine, tables=8), best(rows, engine=engine, tables=1)
        if not peak8 or not peak1:
            parts.append(f"{engine}: needs both 1 and 8 tables")
            continue
        peak = f"peak 8/1 tables {peak8 / peak1:.2f}×"
        cores = sorted(set(values_of(rows, "cores", engine=engine, tables=8))
                       & set(values_of(rows, "cores", engine=engine, tables=1)))
        if len(cores) < 2:
            parts.append(f"{engine}: {peak}; only one core count measured")
            continue
        lo, hi = cores[0], cores[-1]
        gain = {}
        for t in (8, 1):
            at_lo = best(rows, engine=engine, tables=t, cores=lo)
            gain[t] = best(rows, engine=engine, tables=t, cores=hi) / at_lo if at_lo else None
        if not gain[8] or not gain[1]:
            parts.append(f"{engine}: {peak}; no QPS on {lo} cores")
            continue
        outcomes.append(gain[8] > gain[1] * (1 + margin))
        parts.append(f"{engine}: {lo}→{hi} cores gives {gain[8]:.2f}× with 8 tables, "
                     f"{gain[1]:.2f}× with 1; {peak}")
    if not parts:
        parts.append("no data")
    verdict = (NOT_MEASURABLE if not outcomes
               else REPRODUCED if all(outcomes) else NOT_REPRODUCED)
    return "; ".join(parts), verdict


@claim("A3-TRX-beats-autocommit", "A3", "oltp_ro",
       "OLTP_RO, 8 tables: transactions on (BEGIN/COMMIT) beat autocommit",
       "InnoDB 250K vs 215K (1.16×); MyISAM 220K vs 200K (1.10×)",
       macro="TrxBeatsAutocommit")
def trx_beats_autocommit(view, cfg):
    return variant_wins(view, cfg, "oltp_ro", {"trx": "on"}, {"trx": "off"}, "trx on and off")


@claim("A3-PS-PFS-off-faster", "A3", "ps_pfs",
       "Point-Selects, 8 tables: Performance Schema off + prepared statements "
       "faster than the default (PFS on, no prepared statements)",
       "InnoDB 250K vs 210K (1.19×); MyISAM 430K vs 360K (1.19×)", macro="PsPfsFaster")
def ps_pfs_faster(view, cfg):
    return variant_wins(view, cfg, "ps_pfs", {"ps": "on", "pfs": "off"}, {"ps": "off", "pfs": "on"},
                        "PS on/PFS off and PS off/PFS on")


@claim("A3-SPIN-256-slightly-lower", "A3", "spin_wait",
       "Point-Selects, InnoDB, 8 tables: innodb_spin_wait_delay=256 slightly lower than 96",
       "200K vs 210K QPS (0.95×)", macro="SpinLower")
def spin_256_lower(view, cfg):
    hi, base, r = variant_ratio(view, "spin_wait", "InnoDB", {"spin_wait_delay": "256"},
                                {"spin_wait_delay": "96"})
    if not r:
        return "needs InnoDB with spin_wait_delay 96 and 256 on 8 tables", NOT_MEASURABLE
    lo = 1 - setting(cfg, "slight_max")
    measured = f"256: {fmt_k(hi)} vs 96: {fmt_k(base)} QPS ({r:.2f}×; slightly = {lo:g}–1)"
    ok = lo <= r < 1 - setting(cfg, "win_margin")
    return measured, REPRODUCED if ok else NOT_REPRODUCED


@claim("A3-RO-innodb-read-only-faster", "A3", "read_only",
       "Point-Selects, InnoDB, 8 tables: the read-only path (innodb_read_only=1) is faster",
       "450K vs 210K QPS (2.14×)", macro="ReadOnlyFaster")
def read_only_faster(view, cfg):
    on, off, r = variant_ratio(view, "read_only", "InnoDB", {"innodb_read_only": "on"},
                               {"innodb_read_only": "off"})
    if not r:
        return "needs InnoDB with innodb_read_only off and on, 8 tables", NOT_MEASURABLE
    measured = f"on {fmt_k(on)} vs off {fmt_k(off)} QPS ({r:.2f}×)"
    return measured, REPRODUCED if r > 1 + setting(cfg, "win_margin") else NOT_REPRODUCED


# --- Study B: the MEMORY engine ----------------------------------------------

def _explain_text(plans):
    return "/".join(f"{t or '?'}" + (f" ({rows} rows)" if rows else "") for t, _, rows in plans)


@claim("B1-HASH-range-full-scan", "B1", "simple_ranges",
       "Range queries on MEMORY's default HASH index are full scans (EXPLAIN type ALL); "
       "an index USING BTREE restores range scans",
       "EXPLAIN: ALL with HASH, range with BTREE", macro="MemoryHashScan")
def hash_range_full_scan(view, cfg):
    hash_plans = explain_of(view, "simple_ranges", "MEMORY")
    btree_plans = explain_of(view, "simple_ranges", "MEMORY-BTREE")
    if not hash_plans or not btree_plans:
        missing = [e for e, p in (("MEMORY", hash_plans), ("MEMORY-BTREE", btree_plans)) if not p]
        return f"no EXPLAIN of a range statement for {' and '.join(missing)}", NOT_MEASURABLE
    measured = (f"MEMORY (HASH): {_explain_text(hash_plans)}; "
                f"MEMORY-BTREE: {_explain_text(btree_plans)}")
    ok = ({t for t, _, _ in hash_plans} == {"ALL"}
          and {t for t, _, _ in btree_plans} == {"range"})
    return measured, REPRODUCED if ok else NOT_REPRODUCED


@claim("B1-HASH-range-throughput", "B1", "simple_ranges",
       "Simple-Ranges: with HASH, MEMORY collapses (full scans); BTREE restores throughput",
       "0–2 TPS with HASH", macro="MemoryHashGap")
def hash_range_throughput(view, cfg):
    qb, qh, r = engine_ratio(view, "simple_ranges", "MEMORY-BTREE", "MEMORY")
    if not r:
        missing = [e for e, v in (("MEMORY", qh), ("MEMORY-BTREE", qb)) if not v]
        return f"no Simple-Ranges QPS for {' and '.join(missing)}", NOT_MEASURABLE
    need = setting(cfg, "much_faster")
    size = view.table_size("simple_ranges")
    measured = (f"MEMORY-BTREE {fmt_k(qb)} vs MEMORY (HASH) {fmt_k(qh)} QPS ({r:.2f}×; "
                f"collapse means ≥ {need:g}×)" + (f", tables of {size:,} rows" if size else ""))
    return measured, REPRODUCED if r >= need else NOT_REPRODUCED


@claim("B2-MEMORY-8pct-over-InnoDB", "B2", "oltp_ro",
       "Read-only (OLTP_RO): MEMORY only about 8% faster than InnoDB (server layer is the limit)",
       "+8% (1.08×)", macro="MemoryEightPct")
def memory_eight_percent(view, cfg):
    mem = memory_engine(view, "oltp_ro")
    qm = view.best("oltp_ro", engine=mem) if mem else None
    qi = view.best("oltp_ro", engine="InnoDB")
    r = ratio(qm, qi)
    if not r:
        missing = [e for e, v in (("MEMORY", qm), ("InnoDB", qi)) if not v]
        return f"no OLTP_RO QPS for {' and '.join(missing)}", NOT_MEASURABLE
    tol = setting(cfg, "memory_gain_tolerance")
    measured = (f"{mem} {fmt_k(qm)} vs InnoDB {fmt_k(qi)} QPS (peaks, {r:.2f}× = "
                f"{(r - 1) * 100:+.0f}%; tolerance ±{tol * 100:g} points), "
                f"{fmt_cores(view.cores('oltp_ro'))}")
    return measured, REPRODUCED if abs(r - B2_PUBLISHED_RATIO) <= tol else NOT_REPRODUCED


@claim("B3-MEMORY-writes-limited", "B3", "read_write",
       "MEMORY is effectively single-threaded for writes (table locks): its read-write "
       "throughput is limited (below InnoDB, with table-lock waits)",
       "qualitative: read-write mix limited by table locks", macro="MemoryWrites")
def memory_writes_limited(view, cfg):
    qm = view.best("read_write", engine="MEMORY")
    qi = view.best("read_write", engine="InnoDB")
    r = ratio(qm, qi)
    if not r:
        missing = [e for e, v in (("MEMORY", qm), ("InnoDB", qi)) if not v]
        return f"no read-write QPS for {' and '.join(missing)}", NOT_MEASURABLE
    wm = lock_wait_pct(view, "read_write", "MEMORY")
    wi = lock_wait_pct(view, "read_write", "InnoDB")
    locks = ("table-lock waits " + ", ".join(
        f"{e} {w:.1f}%" for e, w in (("MEMORY", wm), ("InnoDB", wi)) if w is not None)
        if wm is not None or wi is not None else "no table-lock counters")
    measured = f"MEMORY {fmt_k(qm)} vs InnoDB {fmt_k(qi)} QPS ({r:.2f}×); {locks}"
    few = _too_few_cores(view, cfg, ("read_write",), measured,
                         "telling table-lock serialisation from a CPU limit")
    if few:
        return few
    ok = r < 1 - setting(cfg, "win_margin") and (wm is None or wi is None or wm > wi)
    return measured, REPRODUCED if ok else NOT_REPRODUCED


@claim("B4-single-table-bottleneck", "B4", ("point_select", "oltp_ro"),
       "A single sysbench table provokes server bottlenecks that several tables avoid "
       "(8 tables faster than 1 at the most cores)",
       "qualitative: LOCK_open, MDL, index mutex with 1 table", macro="SingleTable")
def single_table_bottleneck(view, cfg):
    margin = setting(cfg, "win_margin")
    parts, outcomes = [], []
    for experiment in ("point_select", "oltp_ro"):
        for engine in sorted({r["engine"] for r in view.rows(experiment)}):
            c, q8, q1, r = tables_ratio(view, experiment, engine)
            if not r:
                continue
            outcomes.append(r > 1 + margin)
            parts.append(f"{experiment} {engine} 8/1 tables {r:.2f}×")
    if not outcomes:
        return "needs 1 and 8 tables on the same cores", NOT_MEASURABLE
    measured = "; ".join(parts)
    few = _too_few_cores(view, cfg, ("point_select", "oltp_ro"), measured, "mutex contention")
    if few:
        return few
    return measured + f" ({fmt_cores(view.cores('point_select', 'oltp_ro'))})", \
        REPRODUCED if all(outcomes) else NOT_REPRODUCED


# --- evaluation -------------------------------------------------------------

def evaluate(summaries, config=None, extras=None):
    """One result dict (CSV_FIELDS) per claim and build.

    `summaries` maps experiment name -> parsed summary rows; `config` is the
    resolved config (its `claims:` section is passed to the claim functions);
    `extras` maps kind ('explain', 'status', ...) -> experiment -> rows.
    """
    config = config or {}
    cfg = config.get("claims") or {}
    results = []
    for c in CLAIMS:
        rows = [r for e in c.experiments for r in summaries.get(e) or []]
        builds = sorted({r.get("build", "") for r in rows}) or [""]
        for build in builds:
            view = View(build, summaries, extras or {}, config)
            if not any(view.all_rows(e) for e in c.experiments):
                measured = "; ".join(view.missing(e) for e in c.experiments)
                verdict = NOT_MEASURABLE
            else:
                try:
                    measured, verdict = c.evaluate(view, cfg)
                except (LookupError, ValueError, TypeError, ZeroDivisionError) as e:
                    measured, verdict = f"cannot evaluate ({type(e).__name__})", NOT_MEASURABLE
            if verdict not in VERDICTS:
                raise ValueError(f"claim {c.id}: invalid verdict {verdict!r}")
            results.append(dict(id=c.id, study=c.study, experiment=c.experiment,
                                build=build, claim=c.text, published=c.published,
                                measured=measured, verdict=verdict))
    return results
