"""Measurement kind `steps`: a scripted sequence of timed SQL statements (and
server restarts) in one cell, engines chained inside it (study C). One result
row per (step, engine, metric): seconds, bytes, or pass/fail, from
harness.measure.stepscript' Recorder; the script is a study's (its STEP_SCRIPTS).

Cell name: <build>_<variant>_c<cores>_r<rep>.
"""
from __future__ import annotations


from harness.measure import factors
from harness import registry as studies
from harness.measure import effective
from harness.measure import stepscript
from harness.measure.naming import CellName

NAMING = CellName("{build}_{variant}_c{cores}_r{rep}")
SYSBENCH = False  # its cells run a step script (their cost is in rows), no sysbench driver
NAMED_BY = "script"  # the spec key naming its step script (a study's STEP_SCRIPTS)
DATASET = False   # its script builds its own tables from the empty template
SCALE_KEY = "rows"  # the spec key of its scale


def named_settings(variant: dict, f: dict) -> dict:
    """What its server must show: the variant's step settings (engines vary inside the script)."""
    return factors.step_settings(variant)

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


def script(name: str):
    """The module of steps script `name` (a study's STEP_SCRIPTS: run(ctx), and optionally
    server_options(family, engines) and extra(frame, spec, recorder))."""
    known = studies.step_scripts()
    try:
        return known[name]
    except KeyError:
        raise stepscript.StepError(f"steps script {name!r} is unknown; use one of "
                              f"{', '.join(sorted(known)) or '(none declared)'}") from None


def server_options(spec: dict, d: dict, values: dict, family: str) -> dict:
    """The script's options, then the factors' (which win: a factor's value is the cell's)."""
    mod = script(spec["script"])
    opts = dict(mod.server_options(family, spec["engines"])) if hasattr(mod, "server_options") else {}
    opts.update(factors.server_options(values, family))
    return opts


def measure(fr, spec: dict, d: dict, values: dict, settings: dict) -> dict:
    mod = script(spec["script"])
    rec = stepscript.Recorder()

    def restart(options: dict):
        return fr.restart(options)

    seed = settings["seed"] + d["rep"]  # as a throughput cell's: one per block
    ctx = stepscript.StepContext(server=fr.server, restart=restart, engines=list(spec["engines"]),
                            params={"rows": spec["rows"]}, rec=rec, family=fr.entry["family"], seed=seed)
    ctx.refresh_engines()
    # the server the script's timed steps run on, before any restart of the script's
    ev = effective.evidence(fr.server, values, fr.entry["family"])
    stepscript.run(mod.run, ctx)
    server_version = fr.server.version()
    extra = mod.extra(fr, spec, rec, values) if hasattr(mod, "extra") else {}
    evidence = getattr(mod, "EVIDENCE", {})  # {its extra part: the evidence key its settings go under}
    for name, part in extra.items():  # a second server of the cell, its settings as it showed them
        if isinstance(part, dict) and part.get("effective"):
            ev[evidence.get(name, name)] = part["effective"]
    (fr.tmp / "steps.tsv").write_text(rec.tsv())
    failed = [f"{r['step']}/{r['engine']}" for r in rec.rows
              if r.get("metric") == "check" and str(r.get("ok")).lower() in ("false", "0")]
    return {"captures": ["steps.tsv"], "server_version": server_version,
            "driver": {"tool": "steps", "script": spec["script"], "rows": spec.get("rows"), "seed": seed},
            "result": {"rows": len(rec.rows), "failed_checks": failed},
            "effective": effective.block(values, ev), **extra}
