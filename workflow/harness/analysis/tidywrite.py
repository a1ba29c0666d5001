"""Raw cells -> tidy CSVs and a provenance summary (docs/data-contracts.md).

Generic over measurement kinds: each kind names its key columns (KEY_HEAD,
KEY_TAIL), per-run metrics (METRICS) and the metrics summarised over
repetitions (SUMMARY_METRICS); the factor columns between them are the
factor table's (harness.measure.factors), never spelt here. Manifests of schema 1
(before measurement kinds) are throughput cells.
"""
from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path

from harness import atomic

from harness.measure import counters, effective

from harness.measure import factors

from harness.analysis import hosttype

from harness.measure import kinds

from harness.analysis import stats

FACTOR_FIELDS = list(factors.ORDER)
# The files of a raw cell this module reads, each named once here and read by that name: a
# replot needs no other, so `harness export --replot-only` (harness.report.bundle) carries
# only CELL_FILES_READ.
MANIFEST, INTERVALS, WAITS, EXPLAIN = "manifest.json", "intervals.csv", "pfs_waits.tsv", "explain.tsv"
KEY_CACHES, STATUS, STEPS = "key_caches.tsv", "status_delta.tsv", "steps.tsv"
CELL_FILES_READ = (MANIFEST, INTERVALS, WAITS, EXPLAIN, KEY_CACHES, STATUS, STEPS)
_T = kinds.throughput
KEY_FIELDS = [*_T.KEY_HEAD, *FACTOR_FIELDS, *_T.KEY_TAIL]
RUN_FIELDS = [*KEY_FIELDS, "rep", *_T.METRICS, "duration_s", "backend", "mechanism"]


def summary_fields(kind) -> list[str]:
    keys = [*kind.KEY_HEAD, *FACTOR_FIELDS, *kind.KEY_TAIL, *getattr(kind, "ROW_KEYS", [])]
    out = keys + ["n"]
    for m in kind.SUMMARY_METRICS:
        out += [f"{m}_median", f"{m}_ci_lo", f"{m}_ci_hi", f"{m}_ci_coverage", f"{m}_cv"]
    return out + ["unstable"]


SUMMARY_FIELDS = summary_fields(_T)


def load_manifest(cell_dir: Path) -> dict:
    return json.loads((Path(cell_dir) / MANIFEST).read_text())


def kind_of(m: dict):
    return kinds.KINDS[m.get("kind", "throughput")]


def key_row(m: dict) -> dict:
    """The columns that name a cell (without the repetition). The factor columns hold
    each factor's value as the cell's server showed it (the manifest's `effective`
    block, harness.measure.effective), blank where the factor does not apply; a cell
    without that block, or whose server showed another value than its name says, is
    refused (EffectiveError: one line naming the cell and the fix)."""
    kind, f = kind_of(m), m["factors"]
    shown = effective.check(m, kinds.named(m))
    row = {}
    for k in kind.KEY_HEAD:
        row[k] = m[k] if k in ("study", "experiment") else f.get(k, "base" if k == "variant" else "")
    row.update({k: effective.text(shown[k]) if k in shown else "" for k in FACTOR_FIELDS})
    row.update({k: f[k] for k in kind.KEY_TAIL})
    return row


def _status(cell_dir: Path | None) -> dict:
    if cell_dir is None:
        return {}
    return {r["name"]: r for r in _read_tsv(Path(cell_dir) / STATUS)}


def run_row(m: dict, cell_dir: Path | None = None) -> dict:
    """One throughput run: the cell's key, its repetition and metrics. qps_server is the
    server's own count of statements per second (harness.measure.counters), blank without captures."""
    r = m["result"]
    qps_server = ""
    status = _status(cell_dir)
    if status:  # the deltas of the counters that changed: a window starting from zero
        window = r.get("total_time_s") or m["timing"]["duration_s"]
        after = {k: int(float(v["delta"])) for k, v in status.items() if counters.counts_statements(k)}
        if after:
            qps_server = round(counters.server_qps({k: 0 for k in after}, after, window,
                                                   counters.SNAPSHOT_STATEMENTS), 3)
    drv = m.get("driver", {})
    mem = m.get("memory") or {}
    return {**key_row(m), "rep": m["factors"]["rep"], "qps": r["qps"], "qps_server": qps_server,
            "tps": r["tps"], "lat_p95_ms": r["lat_p95_ms"], "errors": r["errors"],
            "client_cpu_util": drv.get("client_cpu_util", ""),
            "client_saturated": drv.get("client_saturated", ""),
            "memory_fits": mem.get("fits", ""), "data_bytes": (mem.get("data_bytes", 0) + mem.get("index_bytes", 0))
            if mem else "", "buffer_bytes": mem.get("buffer_bytes", ""),
            "preloaded": _preloaded(m),
            "duration_s": m["timing"]["duration_s"], "backend": m["placement"]["backend"],
            "mechanism": m["placement"]["mechanism"]}


def _preloaded(m: dict):
    """Were the cell's tables read into memory before its warm-up (manifest['preload'])? True,
    False (an engine that holds them in memory anyway, or a dataset not read so), or blank
    for a cell recorded before cells did this."""
    if "preload" not in m:
        return ""
    return m["preload"] is not None


def step_rows(m: dict, cell_dir: Path) -> list[dict]:
    """A steps cell's rows: one per (step, engine, metric) of its steps.tsv."""
    key = {**key_row(m), "rep": m["factors"]["rep"]}
    out = []
    for r in _read_tsv(Path(cell_dir) / STEPS):
        out.append({**key, **{k: r.get(k, "") for k in ("step", "engine", "metric", "unit", "value", "ok",
                                                          "detail")}})
    return out


def _float(x) -> float | None:
    """A number, or None for blanks and words (a steps row may hold text, e.g. how a table was reset)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def summarize(rows: list[dict], cv_threshold: float, kind=_T) -> list[dict]:
    keys = [*kind.KEY_HEAD, *FACTOR_FIELDS, *kind.KEY_TAIL, *getattr(kind, "ROW_KEYS", [])]
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in keys)].append(r)
    out = []
    for key in sorted(groups, key=lambda k: tuple(str(x).zfill(8) for x in k)):
        runs = groups[key]
        row = dict(zip(keys, key))
        unstable = False
        for metric in kind.SUMMARY_METRICS:
            values = [v for v in (_float(r.get(metric)) for r in runs) if v is not None]
            if not values:
                row.update({f"{metric}_{s}": "" for s in ("median", "ci_lo", "ci_hi", "ci_coverage", "cv")})
                continue
            s = stats.summarize(values, cv_threshold, metric=metric)
            row["n"] = s.pop("n")
            unstable = unstable or s.pop("unstable")
            row.update(s)
        row.setdefault("n", len(runs))
        row["unstable"] = unstable
        out.append(row)
    return out


def _csv(rows: list[dict], fields: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _distinct(items: list[dict]) -> list[dict]:
    seen, out = set(), []
    for it in items:
        k = json.dumps(it, sort_keys=True)
        if k not in seen:
            seen.add(k)
            out.append(it)
    return out


def _driver(m: dict) -> dict:
    d = m.get("driver") or m.get("sysbench") or {}
    return {k: d.get(k) for k in ("tool", "version", "script", "script_sha256") if k in d}


def _placement(m: dict) -> dict:
    """backend, mechanism and, where the manifest records it, whether sysbench was
    charged to the server's memory cgroup (driver.client_memcg: shared or apart), the
    lanes the run measured on (lanes: their count; oversubscribed: they shared CPUs), and
    duet: true where a pair's two sides ran at once on twin lanes (pairing: duet), duet_apart
    where a pair's width had no twins, so its sides ran one after the other."""
    out = {k: m["placement"][k] for k in ("backend", "mechanism")}
    if (m.get("lane") or {}).get("count", 1) > 1:
        out.update(lanes=m["lane"]["count"], oversubscribed=bool(m.get("oversubscribed")))
    d = m.get("duet") or {}
    if d.get("at_once"):  # pairing: duet: a pair's sides at once on twin lanes
        out["duet"] = True
    elif len(d.get("cells") or ()) == 2:  # a pair whose width had no twin lanes: one side after the other
        out["duet_apart"] = True
    memcg = (m.get("driver") or {}).get("client_memcg")
    return {**out, "client_memcg": memcg} if memcg else out


def provenance(manifests: list[dict], profile: str) -> dict:
    return {
        "builds": _distinct([{**{k: m["build"][k] for k in ("name", "version", "provider", "mysqld_sha256")},
                              "server_version": m["server"]["version"]} for m in manifests]),
        "hosts": _distinct([{k: m["host"][k] for k in ("cpu_model", "n_cpus", "kernel", "governor", "smt")}
                            for m in manifests]),
        "sysbench": _distinct([_driver(m) for m in manifests if kinds.of(m).SYSBENCH]),
        "drivers": _distinct([_driver(m) for m in manifests]),
        "placement": _distinct([_placement(m) for m in manifests]),
        "profile": profile,
        "cells": len(manifests),
        "git_commit": sorted({m["harness"]["git_commit"] for m in manifests}),
    }


# SHOW GLOBAL STATUS counters kept in <experiment>_status.csv (deltas over the measured run)
STATUS_KEPT = ["Questions", "Com_select", "Com_begin", "Com_commit", "Com_stmt_execute", "Handler_read_key",
               "Handler_read_next", "Handler_read_rnd_next", "Opened_tables", "Table_locks_waited",
               "Table_locks_immediate", "Key_read_requests", "Key_reads", "Innodb_rows_read",
               "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads", "Select_scan", "Select_range"]


def _read_tsv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


# A throughput cell's captures as long tables, each row keyed by the cell and rep.
CAPTURES = {
    "intervals": ["time", "threads", "qps", "tps", "lat_pct_ms"],
    "waits": ["rank", "event_name", "count_star", "sum_timer_wait_ps"],
    "explain": ["statement", "type", "key", "rows", "extra"],
    "keycaches": ["table", "cache", "key_buffer_size", "load_index"],
    "status": ["name", "delta"],
}


def captures(cells: list[Path], manifests: list[dict]) -> dict[str, tuple[list[str], list[dict]]]:
    out = {name: [] for name in CAPTURES}
    for cdir, m in zip(cells, manifests):
        key = {**key_row(m), "rep": m["factors"]["rep"]}
        if (Path(cdir) / INTERVALS).exists():
            with open(Path(cdir) / INTERVALS, newline="") as f:
                for r in csv.DictReader(f):
                    out["intervals"].append({**key, **{k: r[k] for k in CAPTURES["intervals"]}})
        for rank, r in enumerate(_read_tsv(Path(cdir) / WAITS), 1):
            out["waits"].append({**key, "rank": rank, **r})
        for r in _read_tsv(Path(cdir) / EXPLAIN):
            out["explain"].append({**key, "statement": r["statement"], "type": r.get("type", ""),
                                   "key": r.get("key", ""), "rows": r.get("rows", ""),
                                   "extra": r.get("Extra", "")})
        for r in _read_tsv(Path(cdir) / KEY_CACHES):
            out["keycaches"].append({**key, **r})
        for r in _read_tsv(Path(cdir) / STATUS):
            if r["name"] in STATUS_KEPT:
                out["status"].append({**key, "name": r["name"], "delta": r["delta"]})
    head = KEY_FIELDS + ["rep"]
    return {k: (head + CAPTURES[k], v) for k, v in out.items()}


def tidy(cells: list[Path], runs_out: Path, summary_out: Path, provenance_out: Path,
         cv_threshold: float, profile: str, extra_dir: Path | None = None) -> None:
    """Write the tidy tables; for throughput cells with `extra_dir`, also
    <experiment>_{intervals,waits,explain,keycaches,status}.csv there."""
    manifests = [load_manifest(c) for c in cells]
    hosttype.refuse_mixed(cells, manifests)  # never average cells of different CPU models
    kind = kind_of(manifests[0]) if manifests else _T
    if any(kind_of(m) is not kind for m in manifests):
        raise ValueError("tidy: cells of different measurement kinds in one experiment")
    if kind is _T:
        rows = [run_row(m, c) for m, c in zip(manifests, cells)]
        fields = RUN_FIELDS
        order = KEY_FIELDS + ["rep"]
    else:
        rows = [r for m, c in zip(manifests, cells) for r in step_rows(m, c)]
        keys = [*kind.KEY_HEAD, *FACTOR_FIELDS, *kind.KEY_TAIL]
        fields = [*keys, "rep", *kind.ROW_KEYS, "value", "ok", "detail"]
        order = [*keys, "rep"]
    rows.sort(key=lambda r: tuple(str(r[k]).zfill(8) for k in order))
    atomic.write_text(runs_out, _csv(rows, fields))
    atomic.write_text(summary_out, _csv(summarize(rows, cv_threshold, kind), summary_fields(kind)))
    atomic.write_text(provenance_out, json.dumps(provenance(manifests, profile), indent=2) + "\n")
    if extra_dir is not None and kind is _T:
        stem = Path(runs_out).stem
        for name, (flds, rws) in captures(cells, manifests).items():
            atomic.write_text(Path(extra_dir) / f"{stem}_{name}.csv", _csv(rws, flds))
