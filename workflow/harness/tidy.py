"""Raw cells -> tidy CSVs and a provenance summary (docs/data-contracts.md)."""
from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path

from . import atomic, stats

FACTOR_FIELDS = ["trx", "ps", "pfs", "spin_wait_delay", "innodb_read_only", "key_cache"]
KEY_FIELDS = ["study", "experiment", "workload", "build", "engine", "variant", *FACTOR_FIELDS,
              "tables", "cores", "users"]
RUN_FIELDS = [*KEY_FIELDS, "rep", "qps", "tps", "lat_p95_ms", "errors", "duration_s", "backend", "mechanism"]
SUMMARY_FIELDS = KEY_FIELDS + ["n", "qps_median", "qps_ci_lo", "qps_ci_hi", "qps_cv", "unstable"]


def load_manifest(cell_dir: Path) -> dict:
    return json.loads((Path(cell_dir) / "manifest.json").read_text())


def key_row(m: dict) -> dict:
    """The factors that name a cell (without the repetition)."""
    f = m["factors"]
    return {"study": m["study"], "experiment": m["experiment"], "workload": f["workload"],
            "build": f["build"], "engine": f["engine"], "variant": f.get("variant", "base"),
            **{k: f.get(f"variant_{k}", "") for k in FACTOR_FIELDS},
            "tables": f["tables"], "cores": f["cores"], "users": f["users"]}


def run_row(m: dict) -> dict:
    f = m["factors"]
    return {**key_row(m),
            "users": f["users"], "rep": f["rep"], "qps": m["result"]["qps"], "tps": m["result"]["tps"],
            "lat_p95_ms": m["result"]["lat_p95_ms"], "errors": m["result"]["errors"],
            "duration_s": m["timing"]["duration_s"], "backend": m["placement"]["backend"],
            "mechanism": m["placement"]["mechanism"]}


def summarize(rows: list[dict], cv_threshold: float) -> list[dict]:
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in KEY_FIELDS)].append(float(r["qps"]))
    out = []
    for key in sorted(groups):
        out.append({**dict(zip(KEY_FIELDS, key)), **stats.summarize(groups[key], cv_threshold)})
    return out


def _csv(rows: list[dict], fields: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
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


def provenance(manifests: list[dict], profile: str) -> dict:
    return {
        "builds": _distinct([{**{k: m["build"][k] for k in ("name", "version", "provider", "mysqld_sha256")},
                              "server_version": m["server"]["version"]} for m in manifests]),
        "hosts": _distinct([{k: m["host"][k] for k in ("cpu_model", "n_cpus", "kernel", "governor", "smt")}
                            for m in manifests]),
        "sysbench": _distinct([{k: m["sysbench"][k] for k in ("version", "script", "script_sha256")}
                               for m in manifests]),
        "placement": _distinct([{k: m["placement"][k] for k in ("backend", "mechanism")} for m in manifests]),
        "profile": profile,
        "cells": len(manifests),
        "git_commit": sorted({m["harness"]["git_commit"] for m in manifests}),
    }


# SHOW GLOBAL STATUS counters kept in <experiment>_status.csv (deltas over the measured run)
STATUS_KEPT = ["Questions", "Com_select", "Com_begin", "Com_commit", "Handler_read_key",
               "Handler_read_next", "Handler_read_rnd_next", "Opened_tables", "Table_locks_waited",
               "Table_locks_immediate", "Key_read_requests", "Key_reads", "Innodb_rows_read",
               "Innodb_buffer_pool_read_requests", "Select_scan", "Select_range"]


def _read_tsv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def captures(cells: list[Path], manifests: list[dict]) -> dict[str, tuple[list[str], list[dict]]]:
    """The per-cell captures as long tables, each row keyed by the cell's factors and rep."""
    out = {name: [] for name in ("intervals", "waits", "explain", "keycaches", "status")}
    for cdir, m in zip(cells, manifests):
        key = {**key_row(m), "rep": m["factors"]["rep"]}
        with open(Path(cdir) / "intervals.csv", newline="") as f:
            for r in csv.DictReader(f):
                out["intervals"].append({**key, "time": r["time"], "threads": r["threads"], "qps": r["qps"],
                                         "tps": r["tps"], "lat_pct_ms": r["lat_pct_ms"]})
        for rank, r in enumerate(_read_tsv(Path(cdir) / "pfs_waits.tsv"), 1):
            out["waits"].append({**key, "rank": rank, **r})
        for r in _read_tsv(Path(cdir) / "explain.tsv"):
            out["explain"].append({**key, "statement": r["statement"], "type": r.get("type", ""),
                                   "key": r.get("key", ""), "rows": r.get("rows", ""),
                                   "extra": r.get("Extra", "")})
        for r in _read_tsv(Path(cdir) / "key_caches.tsv"):
            out["keycaches"].append({**key, **r})
        for r in _read_tsv(Path(cdir) / "status_delta.tsv"):
            if r["name"] in STATUS_KEPT:
                out["status"].append({**key, "name": r["name"], "delta": r["delta"]})
    head = KEY_FIELDS + ["rep"]
    fields = {"intervals": head + ["time", "threads", "qps", "tps", "lat_pct_ms"],
              "waits": head + ["rank", "event_name", "count_star", "sum_timer_wait_ps"],
              "explain": head + ["statement", "type", "key", "rows", "extra"],
              "keycaches": head + ["table", "cache", "key_buffer_size", "load_index"],
              "status": head + ["name", "delta"]}
    return {k: (fields[k], v) for k, v in out.items()}


def tidy(cells: list[Path], runs_out: Path, summary_out: Path, provenance_out: Path,
         cv_threshold: float, profile: str, extra_dir: Path | None = None) -> None:
    """Write the tidy tables; with `extra_dir`, also <experiment>_{intervals,waits,...}.csv there."""
    manifests = [load_manifest(c) for c in cells]
    rows = sorted((run_row(m) for m in manifests), key=lambda r: tuple(str(r[k]).zfill(8) for k in KEY_FIELDS + ["rep"]))
    atomic.write_text(runs_out, _csv(rows, RUN_FIELDS))
    atomic.write_text(summary_out, _csv(summarize(rows, cv_threshold), SUMMARY_FIELDS))
    atomic.write_text(provenance_out, json.dumps(provenance(manifests, profile), indent=2) + "\n")
    if extra_dir is not None:
        stem = Path(runs_out).stem
        for name, (fields, rows) in captures(cells, manifests).items():
            atomic.write_text(Path(extra_dir) / f"{stem}_{name}.csv", _csv(rows, fields))
