"""Measurement kind `steps`: a scripted sequence of timed SQL statements (and
server restarts) in one cell, engines chained inside it (study C). One result
row per (step, engine, metric): seconds, bytes, or pass/fail, from
harness.steps' Recorder; the script is one module of harness.stepscripts.

Cell name: <build>_<variant>_c<cores>_r<rep>.
"""
from __future__ import annotations

import re

from .. import factors

NAME = re.compile(r"(?P<build>[a-z0-9][a-z0-9.-]*)_(?P<variant>[a-z0-9.-]+)_c(?P<cores>\d+)_r(?P<rep>\d+)")

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
    return f"{d['build']}_{d['variant']}_c{d['cores']}_r{d['rep']}"


def parse(text: str) -> dict:
    m = NAME.fullmatch(text)
    if not m:
        raise ValueError(f"cell name '{text}': expected <build>_<variant>_c<C>_r<R>")
    d = m.groupdict()
    d["cores"], d["rep"] = int(d["cores"]), int(d["rep"])
    return d


def _script(spec: dict):
    from .. import stepscripts  # noqa: F401  (registers the scripts)
    from .. import steps
    return steps, steps.SCRIPTS[spec["script"]]


def server_options(spec: dict, d: dict, values: dict, family: str) -> dict:
    opts = factors.server_options(values, family)
    steps, script = _script(spec)
    mod = __import__(script.__module__, fromlist=["server_options"])
    if hasattr(mod, "server_options"):
        opts.update(mod.server_options(family, spec["engines"]))
    return opts


def measure(fr, spec: dict, d: dict, values: dict, settings: dict) -> dict:
    steps, _ = _script(spec)
    rec = steps.Recorder()
    available = [r[0] for r in fr.server.query("SHOW ENGINES") if str(r[1]).upper() in ("YES", "DEFAULT")]

    def restart(options: dict):
        return fr.restart(options)

    ctx = steps.StepContext(server=fr.server, restart=restart, engines=list(spec["engines"]),
                            params={"rows": spec.get("rows", 10000), "rep": d["rep"],
                                    "seed": settings.get("seed", 42) + d["rep"],
                                    "cpus": fr.client_cpus, "run_id": fr.run_id, "cell": fr},
                            rec=rec, family=fr.entry["family"], available_engines=available)
    steps.run(spec["script"], ctx)
    (fr.tmp / "steps.tsv").write_text(rec.tsv())
    server_version = fr.server.version()
    return {"captures": ["steps.tsv"], "server_version": server_version,
            "driver": {"tool": "steps", "script": spec["script"], "rows": spec.get("rows")},
            "result": {"rows": len(rec.rows), "failed_checks": sum(1 for r in rec.rows if r.get("ok") is False)}}
