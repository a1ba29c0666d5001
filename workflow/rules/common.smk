# Config validation (one line, before anything runs), the plan of cells
# (harness.plan.cells: every name and input is its answer), the Docker engine of the
# docker backend, and reaping.
import atexit
import json
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(workflow.basedir, "workflow"))
from harness.plan import config as hconfig  # noqa: E402
from harness.plan import cells as hplan
from harness.measure import procs as hprocs
from harness import studies as hstudies
from harness.measure import datasets as hdatasets

try:
    CFG = hconfig.resolve(config)
except hconfig.ConfigError as e:
    sys.exit(f"config error: {e}")

PY = sys.executable
RUN_STARTED = time.time()  # reset in onstart
ESTIMATE_S = None  # the estimate onstart prints
HARNESS = f"{PY} -m harness"
EXPERIMENTS = hplan.experiments(CFG)
LOCK = hconfig.builds.load_lock(hconfig.LOCK)
# the registries (harness.studies): the studies (each may bring a rules.smk) and the datasets
STUDIES = hstudies.all_studies()
DATASETS = hdatasets.all_datasets()


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
    study=_alternatives(hstudies.codes()),
    cell=r"[A-Za-z0-9_.-]+",
    dataset=_alternatives(DATASETS),
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


# backend docker (or auto): the pipeline starts its own Docker engine when none
# answers (scripts/dockerd.sh: no bridge network, its own socket and data root),
# and stops it at the end only if this run started it (dockerd.sh --owner: the
# session id is recorded when it starts one), never an engine that was running.
DOCKERD = os.path.join(workflow.basedir, "scripts", "dockerd.sh")


def _dockerd(action):
    return subprocess.run(["bash", DOCKERD, action, "--owner", SESSION], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=180)


def start_engine():
    if CFG["backend"] not in ("docker", "auto"):
        return
    res = _dockerd("start")
    line = ((res.stdout + res.stderr).strip().splitlines() or ["no output"])[-1]
    if res.returncode == 0:
        print(line, file=sys.stderr)
        atexit.register(stop_engine)  # also after Ctrl-C, which may skip onerror
    elif CFG["backend"] == "docker":
        sys.exit(f"error: backend docker: cannot start a Docker engine ({line}); run as root "
                 f"(scripts/dockerd.sh), start one yourself, or use --config backend=host")
    else:
        print(f"warning: backend auto: cannot start a Docker engine ({line}); servers run on the host",
              file=sys.stderr)


def stop_engine():
    if CFG["backend"] not in ("docker", "auto") or getattr(stop_engine, "done", False):
        return
    stop_engine.done = True
    res = _dockerd("stop")
    if res.stdout.startswith("dockerd: stopped") or res.returncode != 0:
        print(((res.stdout + res.stderr).strip().splitlines() or [""])[-1], file=sys.stderr)


# Before a sweep: how long it will take and the disk it needs (harness.plan.estimate:
# cells x (warm-up + duration) x repetitions + the per-cell overhead measured
# from earlier benchmark files), then the Docker engine if the backend needs one.
# Not when replotting: nothing is measured then.
onstart:
    global RUN_STARTED, ESTIMATE_S
    RUN_STARTED = time.time()
    if not REPLOT:
        from harness.plan import estimate as _estimate

        try:
            _est = _estimate.estimate(CFG, LOCK)
            ESTIMATE_S = _est["total_s"]
            print(_estimate.render(_est), file=sys.stderr)
        except Exception as _e:  # an estimate never stops a run
            print(f"estimate unavailable: {_e}", file=sys.stderr)
        start_engine()


onsuccess:
    reap()
    stop_engine()
    if not REPLOT:  # what this run took, per profile: the README's time table reads it
        from harness.report import runlog as _runlog

        try:
            _runlog.record(CFG, LOCK, RUN_STARTED, time.time(),
                           _runlog.newer_than("run_cell/*/*/*.tsv", RUN_STARTED),
                           _runlog.newer_than("dataset/**/*.tsv", RUN_STARTED), ESTIMATE_S)
        except Exception as _e:  # a record never fails a finished run
            print(f"run record not written: {_e}", file=sys.stderr)


onerror:
    reap()
    stop_engine()
