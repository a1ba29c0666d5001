"""The tidy data of a run as the report and the claims read it (docs/data-contracts.md).

Read-only and metric-agnostic. A throughput experiment's `<experiment>.csv`
holds one row per repetition: key columns, then `rep`, then the metrics. The
key columns are read from the header (everything before `rep`), and the
factor columns are those between `variant` and `tables` -- the same contract
the R scripts use -- so nothing here names a factor: harness.measure.factors gives
words and baselines where they are needed.

A `Cell` is one key (a cell without its repetition) with its repetitions; a
comparison takes the repetitions of the cells it compares, never the
summary's medians alone.
"""
from __future__ import annotations

import csv
import glob
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from typing import NamedTuple

import yaml

from harness.measure import factors

EXTRA_KINDS = ("explain", "keycaches", "waits", "status", "intervals")
PROVENANCE_LISTS = ("builds", "hosts", "sysbench", "placement")
INT_KEYS = ("tables", "cores", "users")


def read_csv(path) -> list[dict]:
    """Rows as dicts of strings; a repeated column name gets '#2', '#3', ...
    (so that a factor column and a capture column of the same name both survive)."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return []
        seen, names = {}, []
        for h in header:
            seen[h] = seen.get(h, 0) + 1
            names.append(h if seen[h] == 1 else f"{h}#{seen[h]}")
        return [dict(zip(names, row)) for row in reader if row]


def header(path) -> list[str]:
    with open(path, newline="") as f:
        return next(csv.reader(f), [])


def read_yaml(path) -> dict:
    with open(path) as f:
        return yaml.safe_load(f) or {}


def factor_columns(columns) -> list[str]:
    """The columns between `variant` and `tables` (the contract), [] if either is absent."""
    cols = list(columns)
    if "variant" not in cols or "tables" not in cols:
        return []
    return cols[cols.index("variant") + 1:cols.index("tables")]


def number(x):
    """float(x), or None for an empty / unparsable value."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def flag(x) -> bool:
    return str(x).strip().lower() in ("true", "t", "1", "yes")


class Missing(NamedTuple):
    """Why a claim has no data: what is missing (experiment, data, ...) and the detail;
    `claimresult.missing(*m)` takes it as it is, str(m) is the old one-line text."""
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


@dataclass
class Cell:
    """One cell (a key without its repetition) and its repetitions."""
    key: dict                      # key column -> string value
    runs: list = field(default_factory=list)   # run rows (dicts of strings), one per repetition
    unstable: bool = False
    flags: list = field(default_factory=list)  # why it is flagged (unstable, ...)

    def __getitem__(self, col):
        return self.key.get(col, "")

    def int(self, col) -> int:
        v = number(self.key.get(col))
        return int(v) if v is not None else 0

    @property
    def reps(self) -> int:
        """Repetitions of the cell (a steps cell has several rows per repetition)."""
        return len({r.get("rep") for r in self.runs})

    @property
    def build(self):
        return self.key.get("build", "")

    @property
    def engine(self):
        return self.key.get("engine", "")

    def values(self, metric: str) -> list[float]:
        """The metric of every repetition that has it (empty values left out)."""
        out = []
        for r in sorted(self.runs, key=lambda r: number(r.get("rep")) or 0):
            v = number(r.get(metric))
            if v is not None:
                out.append(v)
        return out

    def by_rep(self, metric: str) -> dict:
        """{rep: the metric} of every repetition that has it (a repetition is a block)."""
        out = {}
        for r in self.runs:
            v = number(r.get(metric))
            if v is not None:
                out[r.get("rep", "")] = v
        return out

    def median(self, metric: str):
        xs = self.values(metric)
        return statistics.median(xs) if xs else None

    @property
    def name(self) -> str:
        """<build>_<engine>_<variant>_t<T>_c<C>_u<U>, the cell's name without its repetition."""
        k = self.key
        parts = [k.get("build", ""), k.get("engine", ""), k.get("variant", "") or "base"]
        tail = "".join(f"_{c[0]}{k[c]}" for c in INT_KEYS if k.get(c, "") != "")
        return "_".join(p for p in parts if p) + tail


@dataclass
class Experiment:
    name: str
    columns: list            # header of <experiment>.csv
    cells: list              # Cell
    summary: list            # summary rows (dicts of strings)
    extras: dict             # kind -> rows

    @property
    def factor_columns(self) -> list[str]:
        return factor_columns(self.columns)


def _cells(runs: list[dict], columns: list[str], summary: list[dict]) -> list[Cell]:
    key_cols = columns[:columns.index("rep")] if "rep" in columns else list(columns)
    by_key = {}
    for r in runs:
        k = tuple(r.get(c, "") for c in key_cols)
        by_key.setdefault(k, Cell(dict(zip(key_cols, k)))).runs.append(r)
    for s in summary:
        k = tuple(s.get(c, "") for c in key_cols)
        if k in by_key and flag(s.get("unstable", "")):
            by_key[k].unstable = True
            by_key[k].flags.append("unstable")
    for cell in by_key.values():
        if any(flag(r.get("client_saturated", "")) for r in cell.runs):
            cell.flags.append("client saturated")
    return list(by_key.values())


def enabled_experiments(config) -> set | None:
    """Names of the experiments the resolved config runs, or None if it names none."""
    exps = (config or {}).get("experiments")
    if not isinstance(exps, dict):
        return None
    return {k for k, v in exps.items() if not isinstance(v, dict) or v.get("enabled", True)}


@dataclass
class Tidy:
    """Every tidy file of the experiments a resolved config runs."""
    config: dict
    experiments: dict                  # name -> Experiment
    unsupported: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)   # a study's own tidy tables: file name -> rows

    def experiment(self, name) -> Experiment | None:
        return self.experiments.get(name)

    def cells(self, experiment, **where) -> list[Cell]:
        """Cells of `experiment` whose key columns equal `where` (values compared as text)."""
        exp = self.experiments.get(experiment)
        if exp is None:
            return []
        want = {k: str(v) for k, v in where.items()}
        return [c for c in exp.cells if all(c.key.get(k, "") == v for k, v in want.items())]

    def extra(self, kind, experiment) -> list[dict]:
        exp = self.experiments.get(experiment)
        return list((exp.extras.get(kind) if exp else None) or [])

    def builds(self, *experiments) -> list[str]:
        out = sorted({c.build for e in experiments for c in self.cells(e)})
        first = [b for b in (self.config.get("builds") or []) if b in out]
        return first + [b for b in out if b not in first]

    def spec(self, experiment) -> dict:
        s = ((self.config or {}).get("experiments") or {}).get(experiment)
        return s if isinstance(s, dict) else {}

    def missing(self, experiment) -> Missing:
        """Why there are no cells of `experiment` (what is missing, then the detail)."""
        exps = (self.config or {}).get("experiments")
        why = self.spec(experiment).get("not_planned")   # harness.plan.reads: nobody here reads it;
        if why:                                          # harness.plan.reuse.left_out: other settings only
            what, _, detail = str(why).partition(": ")
            return Missing(what, detail) if detail else Missing("", what)
        if isinstance(exps, dict) and experiment not in exps:
            return Missing("experiment", f"{experiment} is not an experiment of this profile")
        enabled = enabled_experiments(self.config)
        if enabled is not None and experiment not in enabled:
            return Missing("experiment", f"{experiment} not run in this profile")
        return Missing("data", f"no {experiment} data")

    def all_cells(self) -> list[Cell]:
        return [c for e in self.experiments.values() for c in e.cells]


def merge_provenance(provs: list[dict]) -> dict:
    out = {k: [] for k in PROVENANCE_LISTS}
    seen = {k: set() for k in PROVENANCE_LISTS}
    commits, cells, profile = [], 0, None
    for p in provs:
        for k in PROVENANCE_LISTS:
            for item in p.get(k) or []:
                key = json.dumps(item, sort_keys=True)
                if key not in seen[k]:
                    seen[k].add(key)
                    out[k].append(item)
        gc = p.get("git_commit")
        for c in [gc] if isinstance(gc, str) else list(gc or []):
            if c and c not in commits:
                commits.append(c)
        try:
            cells += int(p.get("cells") or 0)
        except (TypeError, ValueError):
            pass
        profile = profile or p.get("profile")
    out.update(profile=profile, cells=cells if provs else None, git_commit=sorted(commits))
    return out


def load(tidy_dir, config: dict, tables=()) -> Tidy:
    """Every tidy file of the experiments the config runs (all present if it names none).

    Per experiment: `<e>.csv` (runs), `<e>_summary.csv`, `<e>_<kind>.csv` for
    EXTRA_KINDS, `<e>_provenance.json` (merged; a lone provenance.json when no
    experiment has one), plus `unsupported.csv` and `official_check.json`, and
    each of `tables` (file names, e.g. a study's fts_load.csv) that exists."""
    enabled = enabled_experiments(config)
    experiments, provs = {}, []
    names = sorted({os.path.basename(p)[:-len("_summary.csv")]
                    for p in glob.glob(os.path.join(tidy_dir, "*_summary.csv"))})
    for exp in names:
        if enabled is not None and exp not in enabled:
            continue
        runs_path = os.path.join(tidy_dir, f"{exp}.csv")
        summary = read_csv(os.path.join(tidy_dir, f"{exp}_summary.csv"))
        columns = header(runs_path) if os.path.exists(runs_path) else []
        runs = read_csv(runs_path) if columns else []
        extras = {}
        for kind in EXTRA_KINDS:
            p = os.path.join(tidy_dir, f"{exp}_{kind}.csv")
            if os.path.exists(p):
                extras[kind] = read_csv(p)
        experiments[exp] = Experiment(exp, columns, _cells(runs, columns, summary), summary, extras)
        p = os.path.join(tidy_dir, f"{exp}_provenance.json")
        if os.path.exists(p):
            with open(p) as f:
                provs.append(json.load(f) or {})
    lone = os.path.join(tidy_dir, "provenance.json")
    if not provs and os.path.exists(lone):
        with open(lone) as f:
            provs.append(json.load(f) or {})
    prov = merge_provenance(provs)
    check = os.path.join(tidy_dir, "official_check.json")
    if os.path.exists(check):
        with open(check) as f:
            prov["official_check"] = json.load(f)
    unsupported = []
    p = os.path.join(tidy_dir, "unsupported.csv")
    if os.path.exists(p):
        unsupported = [r for r in read_csv(p) if enabled is None or r.get("experiment") in enabled]
    own = {name: read_csv(os.path.join(tidy_dir, name)) for name in tables
           if os.path.exists(os.path.join(tidy_dir, name))}
    return Tidy(config or {}, experiments, unsupported, prov, own)


# --- factors of an experiment, without naming any ---------------------------------

def varied(spec: dict) -> list[str]:
    """The factors an experiment's config varies (two values or more), in factor-table order."""
    v = (spec or {}).get("variants") or {}
    return [n for n in factors.ORDER if len(v.get(n) or []) > 1] + \
        [n for n in v if n not in factors.FACTORS and len(v.get(n) or []) > 1]


def fixed(spec: dict) -> dict:
    """The factors an experiment's config sets to a single value: its conditions."""
    v = (spec or {}).get("variants") or {}
    return {n: vals[0] for n, vals in v.items() if len(vals or []) == 1}


def text(value) -> str:
    """A factor value as tidy writes it (tidy columns hold the config's value as text)."""
    return str(value)


def setting_of(cell: Cell, name: str) -> str:
    """A factor's value in a cell as its server showed it: its column (tidy fills it from
    the manifest's `effective` block and refuses a cell without one). Empty: the factor
    does not apply to the cell (never read as its baseline)."""
    return cell.key.get(name, "")


def applies(name: str, engine: str, workload: str | None = None) -> bool:
    f = factors.FACTORS.get(name)
    return f is None or f.applies(engine, workload)


def words(name: str) -> str:
    return factors.words(name)


def setting_words(name: str, value) -> str:
    """'innodb_spin_wait_delay 256', 'transactions on' (the factor table's words,
    without their parenthesis)."""
    return f"{words(name).split(' (')[0]} {str(value).replace('_', ' ')}"
