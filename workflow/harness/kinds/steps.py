"""Measurement kind `steps`: a scripted sequence of timed SQL statements (and
server restarts) in one cell, engines chained inside it (study C). One result
row per (step, engine, metric): seconds, bytes, or pass/fail, from
harness.steps' Recorder; the script is one module of harness.stepscripts.

Cell name: <build>_<variant>_c<cores>_r<rep>.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from .. import factors
from .naming import CellName

NAMING = CellName("{build}_{variant}_c{cores}_r{rep}")

KEY_HEAD = ["study", "experiment", "script", "build", "variant"]
KEY_TAIL = ["cores"]
ROW_KEYS = ["step", "engine", "metric", "unit"]
METRICS = ["value", "ok"]
SUMMARY_METRICS = ["value"]


def combos(spec: dict, build: str, variant: dict):
    for c in spec["cores"]:
        yield {"build": build, "variant": factors.label(variant), "cores": c}


def unsupported(spec: dict, d: dict, entry: dict) -> str | None:
    return None  # an engine a build lacks is a recorded row of the cell, never a missing cell


def name(d: dict) -> str:
    return NAMING.name(d)


def parse(text: str) -> dict:
    return NAMING.parse(text)


def _script(spec: dict):
    from .. import steps
    return steps, steps.script(spec["script"])


def server_options(spec: dict, d: dict, values: dict, family: str) -> dict:
    opts = factors.server_options(values, family)
    _, script = _script(spec)
    mod = __import__(script.__module__, fromlist=["server_options"])
    if hasattr(mod, "server_options"):
        opts.update(mod.server_options(family, spec["engines"]))
    return opts


LEGACY_ENGINE = "PostgreSQL (legacy stand-in)"


def _enterable_by_others(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents])


@contextlib.contextmanager
def _pg_parent(work: Path):
    """A directory PostgreSQL's own user can enter for its datadir: the cell's work dir
    when every parent lets others through (o+x), else a private one under /var/tmp
    (the repository may sit in a home directory only root can enter)."""
    os.chmod(work, 0o711)
    if _enterable_by_others(work):
        yield work
        return
    d = Path(tempfile.mkdtemp(prefix="mysqlbench-pg-", dir="/var/tmp"))
    try:
        os.chmod(d, 0o711)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def legacy(fr, spec: dict, rec) -> dict:
    """The study's "legacy commercial RDBMS" row, stood in for by a real PostgreSQL
    (Debian's) on the same CPUs: its PL/pgSQL loop inserting the same rows one
    statement each, committed per row, then the same scan. Labelled as a stand-in."""
    from .. import postgres
    from ..datasets import scratch
    rows = spec.get("rows", 10000)
    with scratch("pg") as run, _pg_parent(fr._work) as parent:
        pgdata = parent / "pgdata"
        with postgres.PgServer(datadir=pgdata, rundir=run, run_id=fr.run_id + "-pg", cpus=fr.server_cpus,
                               mechanism=fr.settings.get("mechanism", "auto"),
                               startup_timeout=fr.settings.get("startup_timeout_s", 120)) as pg:
            version = pg.server_version()
            secs = postgres.legacy_insert(pg, rows)
            rec.value("C1", LEGACY_ENGINE, "insert_s", round(secs, 6), "s",
                      detail=f"PostgreSQL {version}, PL/pgSQL loop, commit per row")
            scan_s, n = postgres.legacy_scan(pg)
            rec.value("C2", LEGACY_ENGINE, "scan_s", round(scan_s, 6), "s", detail=postgres.scan_plan(pg))
            rec.check("C2", LEGACY_ENGINE, n == rows, f"{n} of {rows} rows match c1 = 1", metric="matched")
    return {"engine": LEGACY_ENGINE, "version": version}


def measure(fr, spec: dict, d: dict, values: dict, settings: dict) -> dict:
    steps, _ = _script(spec)
    rec = steps.Recorder()

    def restart(options: dict):
        return fr.restart(options)

    ctx = steps.StepContext(server=fr.server, restart=restart, engines=list(spec["engines"]),
                            params={"rows": spec.get("rows", 10000)}, rec=rec, family=fr.entry["family"])
    ctx.refresh_engines()
    steps.run(spec["script"], ctx)
    server_version = fr.server.version()
    extra = {"legacy": legacy(fr, spec, rec)} if spec.get("legacy") else {}
    (fr.tmp / "steps.tsv").write_text(rec.tsv())
    failed = [f"{r['step']}/{r['engine']}" for r in rec.rows
              if r.get("metric") == "check" and str(r.get("ok")).lower() in ("false", "0")]
    return {"captures": ["steps.tsv"], "server_version": server_version,
            "driver": {"tool": "steps", "script": spec["script"], "rows": spec.get("rows")},
            "result": {"rows": len(rec.rows), "failed_checks": failed}, **extra}
