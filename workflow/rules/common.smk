# Config validation (one line, before anything runs), cell enumeration, and reaping.
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(workflow.basedir, "workflow"))
from harness import config as hconfig, procs as hprocs, variants as hvariants  # noqa: E402

try:
    CFG = hconfig.resolve(config)
except hconfig.ConfigError as e:
    sys.exit(f"config error: {e}")

PY = sys.executable
HARNESS = f"{PY} -m harness"
EXPERIMENTS = hconfig.enabled_experiments(CFG)
LOCK = hconfig.builds.load_lock(hconfig.LOCK)

# Every server this run starts carries this session id, so the clean-up
# below ends only what this run started.
SESSION = os.environ.setdefault(hprocs.SESSION_VAR, uuid.uuid4().hex[:12])
os.environ["PYTHONPATH"] = os.path.join(workflow.basedir, "workflow") + os.pathsep + os.environ.get("PYTHONPATH", "")

wildcard_constraints:
    build=r"[a-z0-9][a-z0-9.-]*",
    engine=r"[A-Za-z]+(?:-[A-Za-z]+)?",
    variant=r"[a-z0-9.-]+",
    experiment="|".join(sorted(EXPERIMENTS, key=len, reverse=True)) or "none",
    workload=r"[a-z][a-z0-9_]*",
    study=r"[A-C][0-9]",
    tables=r"\d+",
    cores=r"\d+",
    users=r"\d+",
    rep=r"\d+",
    size=r"\d+",


def run_settings():
    """What a measured cell depends on besides its own factors (params: a
    change re-measures, a change of plotting never does)."""
    s = dict(CFG["sysbench"])
    s.update(CFG["placement"])
    s["backend"] = CFG["backend"]
    s["options"] = CFG["server"]["options"]
    s["startup_timeout_s"] = CFG["server"]["startup_timeout_s"]
    s["shutdown_timeout_s"] = CFG["server"]["shutdown_timeout_s"]
    return json.dumps(s, sort_keys=True)


def combos(experiment):
    """(build, engine, variant label, reason): reason is None for a cell that runs,
    else why this build cannot run it (shown as absent in the paper, never as zero)."""
    spec = EXPERIMENTS[experiment]
    for b in spec.get("builds", CFG["builds"]):
        for e in spec["engines"]:
            for v in hvariants.expand(spec["variants"]):
                if not hvariants.applies(v, e):
                    continue
                reason = None
                if e.split("-")[0] not in LOCK[b].get("engines", []):  # MEMORY-BTREE is MEMORY
                    reason = f"{b} has no {e} engine"
                else:
                    why = hvariants.unsupported(v, LOCK[b]["family"])
                    reason = f"{b}: {why}" if why else None
                yield b, e, hvariants.label(v), reason


def cells(experiment, rep=None):
    """Every measured cell of an experiment (of one repetition, if given)."""
    spec = EXPERIMENTS[experiment]
    reps = [rep] if rep is not None else range(1, spec["repetitions"] + 1)
    return [
        f"data/raw/{spec['study']}/{experiment}/{b}_{e}_{v}_t{t}_c{c}_u{u}_r{r}"
        for r in reps
        for b, e, v, reason in combos(experiment)
        if reason is None
        for t in spec["tables"]
        for c in spec["cores"]
        for u in spec["users"]
    ]


def reap(_log=None):
    shell(f"{HARNESS} reap --session {SESSION} || true")


onsuccess:
    reap()


onerror:
    reap()
