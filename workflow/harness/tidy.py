"""Raw cells -> tidy CSVs and a provenance summary (docs/data-contracts.md)."""
from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path

from . import atomic, stats

RUN_FIELDS = ["study", "experiment", "workload", "build", "engine", "tables", "cores", "users", "rep",
              "qps", "tps", "lat_p95_ms", "errors", "duration_s", "backend", "mechanism"]
KEY_FIELDS = ["study", "experiment", "workload", "build", "engine", "tables", "cores", "users"]
SUMMARY_FIELDS = KEY_FIELDS + ["n", "qps_median", "qps_ci_lo", "qps_ci_hi", "qps_cv", "unstable"]


def load_manifest(cell_dir: Path) -> dict:
    return json.loads((Path(cell_dir) / "manifest.json").read_text())


def run_row(m: dict) -> dict:
    f = m["factors"]
    return {"study": m["study"], "experiment": m["experiment"], "workload": f["workload"],
            "build": f["build"], "engine": f["engine"], "tables": f["tables"], "cores": f["cores"],
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


def tidy(cells: list[Path], runs_out: Path, summary_out: Path, provenance_out: Path,
         cv_threshold: float, profile: str) -> None:
    manifests = [load_manifest(c) for c in cells]
    rows = sorted((run_row(m) for m in manifests), key=lambda r: tuple(r[k] for k in RUN_FIELDS[:9]))
    atomic.write_text(runs_out, _csv(rows, RUN_FIELDS))
    atomic.write_text(summary_out, _csv(summarize(rows, cv_threshold), SUMMARY_FIELDS))
    atomic.write_text(provenance_out, json.dumps(provenance(manifests, profile), indent=2) + "\n")
