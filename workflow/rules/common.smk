# Config validation (one line, before anything runs), helpers, and reaping.
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(workflow.basedir, "workflow"))
from harness import config as hconfig, procs as hprocs  # noqa: E402

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
    experiment=r"[a-z0-9_]+",
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


def cells(experiment, study):
    """Every measured cell of an experiment; a build without an engine has no cell."""
    spec = EXPERIMENTS[experiment]
    return [
        f"data/raw/{study}/{experiment}/{b}_{e}_t{t}_c{c}_u{u}_r{r}"
        for b in CFG["builds"]
        for e in spec["engines"]
        if e in LOCK[b].get("engines", [])
        for t in spec["tables"]
        for c in spec["cores"]
        for u in spec["users"]
        for r in range(1, spec["repetitions"] + 1)
    ]


def reap(_log=None):
    shell(f"{HARNESS} reap --session {SESSION} || true")


onsuccess:
    reap()


onerror:
    reap()
