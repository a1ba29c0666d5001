# Config validation (one line, before anything runs), the plan of cells
# (harness.plan: every name and input is its answer), and reaping.
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(workflow.basedir, "workflow"))
from harness import config as hconfig, plan as hplan, procs as hprocs  # noqa: E402

try:
    CFG = hconfig.resolve(config)
except hconfig.ConfigError as e:
    sys.exit(f"config error: {e}")

PY = sys.executable
HARNESS = f"{PY} -m harness"
EXPERIMENTS = hplan.experiments(CFG)
LOCK = hconfig.builds.load_lock(hconfig.LOCK)


def experiments_of(kind):
    return [x for x, spec in EXPERIMENTS.items() if spec["kind"] == kind]


# Every server this run starts carries this session id, so the clean-up
# below ends only what this run started.
SESSION = os.environ.setdefault(hprocs.SESSION_VAR, uuid.uuid4().hex[:12])
os.environ["PYTHONPATH"] = os.path.join(workflow.basedir, "workflow") + os.pathsep + os.environ.get("PYTHONPATH", "")


def _alternatives(names):
    return "|".join(sorted(names, key=len, reverse=True)) or "none"


wildcard_constraints:
    build=r"[a-z0-9][a-z0-9.-]*",
    experiment=_alternatives(EXPERIMENTS),
    study=r"[A-C][0-9]",
    cell=r"[A-Za-z0-9_.-]+",
    dataset="sbtest|fulltext",
    key=r"[A-Za-z0-9_.-]+",
    corpus=r"[a-z0-9-]+",
    rep=r"\d+",


REPLOT = CFG["replot"]


def cells(experiment, rep=None):
    """Every measured cell of an experiment (of one repetition, if given); when
    replotting, only the ones that exist (the others are listed, never measured)."""
    wanted = hplan.cells(CFG, LOCK, experiment, rep)
    if not REPLOT:
        return wanted
    return [c for c in wanted if os.path.isdir(c)]


if REPLOT:
    _missing = {x: [c for c in hplan.cells(CFG, LOCK, x) if not os.path.isdir(c)] for x in EXPERIMENTS}
    _n = sum(map(len, _missing.values()))
    if _n:
        print(f"replot: {_n} cell(s) of profile {CFG['profile']} are not measured and stay out "
              f"(./artifact paper measures them):", file=sys.stderr)
        for x, cs in _missing.items():
            if cs:
                print(f"  {x}: {len(cs)} missing, e.g. {cs[0]}", file=sys.stderr)
    EXPERIMENTS = {x: s for x, s in EXPERIMENTS.items() if any(os.path.isdir(c) for c in hplan.cells(CFG, LOCK, x))}


def reap(_log=None):
    shell(f"{HARNESS} reap --session {SESSION} || true")


onsuccess:
    reap()


onerror:
    reap()


# Before a sweep: how long it will take and the disk it needs (harness.estimate:
# cells x (warm-up + duration) x repetitions + the per-cell overhead measured
# from earlier benchmark files). Not when replotting: nothing is measured then.
onstart:
    if not REPLOT:
        from harness import estimate as _estimate

        try:
            print(_estimate.render(_estimate.estimate(CFG, LOCK)), file=sys.stderr)
        except Exception as _e:  # an estimate never stops a run
            print(f"estimate unavailable: {_e}", file=sys.stderr)
