"""Published claims, checked against the measured summaries.

Each claim is a small function registered with ``@claim(...)``. It receives
the summary rows of one experiment and one build (dicts as returned by
``read_summary``) plus the ``claims:`` section of the resolved config, and
returns ``(measured, verdict)``: a short human-readable measured value and
one of ``VERDICTS``. Missing data must give ``NOT_MEASURABLE``, never an
exception. To add a claim for another study, write one more function below.

Published values are quoted from the studies' specification (studies.md);
measured values always come from the data.
"""

import csv
from dataclasses import dataclass
from typing import Callable

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_MEASURABLE = "not measurable here"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_MEASURABLE)

CSV_FIELDS = ("id", "study", "experiment", "build", "claim", "published",
              "measured", "verdict")

DEFAULT_SCALING_MARGIN = 0.1


@dataclass(frozen=True)
class Claim:
    id: str
    study: str
    experiment: str  # the `experiment` column of the summary it reads
    text: str
    published: str
    evaluate: Callable  # (rows, claims_config) -> (measured, verdict)
    macro: str = ""  # letters only: the paper gets \Verdict<macro>


CLAIMS = []


def claim(id, study, experiment, text, published, macro=""):
    """Decorator: register a claim function in CLAIMS."""
    def register(fn):
        CLAIMS.append(Claim(id, study, experiment, text, published, fn, macro))
        return fn
    return register


# --- summary rows ---------------------------------------------------------

INT_COLUMNS = ("tables", "cores", "users", "n")
FLOAT_COLUMNS = ("qps_median", "qps_ci_lo", "qps_ci_hi", "qps_cv")


def parse_flag(value):
    return str(value).strip().lower() in ("true", "t", "1", "yes")


def _number(value, kind):
    try:
        return kind(float(value))
    except (TypeError, ValueError):
        return None


def parse_row(raw):
    """Typed copy of one summary CSV row; unparsable numbers become None."""
    row = dict(raw)
    for col in INT_COLUMNS:
        row[col] = _number(raw.get(col), int)
    for col in FLOAT_COLUMNS:
        row[col] = _number(raw.get(col), float)
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
    return sorted({r[column] for r in select(rows, **factors)})


def fmt_k(qps):
    """360000 -> '360K', 22967 -> '23.0K', 3900 -> '3.90K' (published style)."""
    k = qps / 1000
    return f"{k:.0f}K" if k >= 100 else f"{k:.1f}K" if k >= 10 else f"{k:.2f}K"


# --- Study A3: sysbench read-only, 8 tables, Point-Selects ------------------

@claim("A3-PS-myisam-wins", "A3", "point_select",
       "Point-Selects is the workload where MyISAM beats InnoDB "
       "(best median QPS, 8 tables)",
       "MyISAM 360K vs InnoDB 210K QPS (1.71×)", macro="PSMyISAMWins")
def myisam_beats_innodb(rows, cfg):
    myisam = best(rows, engine="MyISAM", tables=8)
    innodb = best(rows, engine="InnoDB", tables=8)
    missing = [e for e, v in (("MyISAM", myisam), ("InnoDB", innodb)) if not v]
    if missing:
        return f"no 8-table QPS for {' and '.join(missing)}", NOT_MEASURABLE
    ratio = myisam / innodb
    measured = f"MyISAM {fmt_k(myisam)} vs InnoDB {fmt_k(innodb)} QPS ({ratio:.2f}×)"
    return measured, REPRODUCED if ratio > 1 else NOT_REPRODUCED


@claim("A3-PS-8-tables-scale", "A3", "point_select",
       "8 tables scale far better than 1 (best QPS on the most cores "
       "÷ best QPS on the fewest, per engine)",
       "qualitative: 8 tables scale far better than 1", macro="PSTablesScale")
def eight_tables_scale_better(rows, cfg):
    margin = float(cfg.get("scaling_margin", DEFAULT_SCALING_MARGIN))
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


# --- evaluation -------------------------------------------------------------

def evaluate(summaries, config=None):
    """One result dict (CSV_FIELDS) per claim and build.

    `summaries` maps experiment name -> parsed summary rows; `config` is the
    resolved config (its `claims:` section is passed to the claim functions).
    """
    cfg = (config or {}).get("claims") or {}
    results = []
    for c in CLAIMS:
        rows = summaries.get(c.experiment) or []
        builds = sorted({r.get("build", "") for r in rows}) or [""]
        for build in builds:
            sub = [r for r in rows if r.get("build", "") == build]
            if not sub:
                measured, verdict = "no data", NOT_MEASURABLE
            else:
                try:
                    measured, verdict = c.evaluate(sub, cfg)
                except (LookupError, ValueError, TypeError, ZeroDivisionError) as e:
                    measured, verdict = f"cannot evaluate ({type(e).__name__})", NOT_MEASURABLE
            if verdict not in VERDICTS:
                raise ValueError(f"claim {c.id}: invalid verdict {verdict!r}")
            results.append(dict(id=c.id, study=c.study, experiment=c.experiment,
                                build=build, claim=c.text, published=c.published,
                                measured=measured, verdict=verdict))
    return results
