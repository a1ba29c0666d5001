# Config validation (one line, before anything runs), the plan of cells
# (harness.plan.cells: every name and input is its answer), the Docker engine of the
# docker backend, and reaping.
import atexit
import json
import os
import shlex
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(workflow.basedir, "workflow"))
from harness.plan import config as hconfig  # noqa: E402
from harness.plan import cells as hplan
from harness.plan import blocks as hblocks
from harness.plan import cluster as hcluster
from harness.plan import duet as hduet
from harness.plan import estimate as hestimate
from harness.analysis import intervals as hintervals
from harness.measure import procs as hprocs
from harness import builds as hbuilds
from harness import paths as hpaths
from harness import studies as hstudies
from harness.measure import datasets as hdatasets
from harness.report import bundle as hbundle
from harness.report import bundleimport as himport
from harness.measure import digest as hdigest
from harness.plan import reuse as hreuse

try:
    CFG = hconfig.resolve(config)
    # the one raw root every reader of cells uses: data/raw, or in a replot an imported
    # host's data/hosts/<id>/raw (config raw_host; docs/results.md)
    # several hosts (raw_host all, or auto with more than one): (id, raw root) of each, the
    # first drawn by the figures and the text (data/tidy), the others tidied apart
    # (data/tidy/hosts/<id>) and judged on their own (harness.analysis.claims.by_host)
    HOSTS = himport.host_roots(CFG["raw_host"], CFG["replot"], CFG["profile"], workflow.basedir)
    RAW = HOSTS[0][1]
    himport.check_profile(RAW, CFG["profile"])
except (hconfig.ConfigError, hbundle.BundleError) as e:
    sys.exit(f"config error: {e}")



def host_data(path):
    """A path under data/ as the first host has it: the local data/... for data/raw, an
    imported host's copy under data/hosts/<id>/... (its bundle's dataset records)."""
    top = os.path.dirname(RAW)
    return top + path[len("data"):] if top != "data" and path.startswith("data/") else path


PY = shlex.quote(sys.executable)  # a shell word: the clone's path may hold a space (.venv/bin/python)
RUN_STARTED = time.time()  # reset in onstart
ESTIMATE_S = None  # the estimate onstart prints
HARNESS = f"{PY} -m harness"
EXPERIMENTS = hplan.experiments(CFG)
EXPERIMENTS_ALL = dict(EXPERIMENTS)   # before a replot keeps the first host's only (other hosts' tidy rules)
LOCK = hbuilds.load_lock(hpaths.LOCK)
# the registries (harness.studies): the studies (each may bring a rules.smk) and the datasets
STUDIES = hstudies.all_studies()
DATASETS = hdatasets.all_datasets()


def experiments_of(kind):
    return [x for x, spec in EXPERIMENTS.items() if spec["kind"] == kind]


# Every server this run starts carries this session id, so the clean-up
# below ends only what this run started.
SESSION = os.environ.setdefault(hprocs.SESSION_VAR, uuid.uuid4().hex[:12])
# every cell this run measures records the profile beside its settings digest (harness.measure.digest)
os.environ[hdigest.PROFILE_VAR] = str(CFG["profile"])
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
    look=r"\d+",
    attempt=r"\d+",


REPLOT = CFG["replot"]


def look_schedule(experiment):
    """Block counts at which an experiment is looked at (its repetitions' min, max, looks)."""
    return hintervals.look_schedule(*hplan.repetition_bounds(EXPERIMENTS[experiment]))


def planned_blocks(experiment):
    """Blocks 1..n the DAG measures: n = repetitions.min (the first look), then each look
    that found the experiment not decided adds the blocks up to the next (checkpoint
    `look`: an unanswered look raises Snakemake's IncompleteCheckpointException, so the
    DAG is re-evaluated once it has run). Replotting: every block, never a look. An
    experiment no measurable claim reads: blocks 1..repetitions.figures only (later
    blocks would have no cell), never a look."""
    sched = look_schedule(experiment)
    if REPLOT:
        return sched[-1]
    if not hplan.claim_read(CFG, LOCK, experiment):
        return min(sched[0], hplan.figure_blocks(EXPERIMENTS[experiment]))
    n = sched[0]
    for k in range(1, len(sched)):
        with open(checkpoints.look.get(experiment=experiment, look=k).output[0]) as f:
            if json.load(f)["decided"]:
                break
        n = sched[k]
    return n


def cells(experiment, rep=None):
    """The measured cells of an experiment (of one block if given, else of its planned
    blocks); when replotting, only the ones that exist (the others are listed, never measured)."""
    wanted = hplan.cells(CFG, LOCK, experiment, rep, raw=RAW, blocks=None if rep else planned_blocks(experiment))
    if not REPLOT:
        return wanted
    if experiment not in _REPLOT_CELLS:  # a cell of other settings (its digest) is none of this profile's
        _REPLOT_CELLS[experiment] = set(hreuse.replot_cells(CFG, LOCK, experiment, [c for c in hplan.cells(
            CFG, LOCK, experiment, raw=RAW, blocks=planned_blocks(experiment)) if os.path.isdir(c)]))
    return [c for c in wanted if c in _REPLOT_CELLS[experiment]]


_REPLOT_CELLS = {}


HOST_RAW = dict(HOSTS[1:])   # another host's id -> its raw root (a several-host replot only)
HOST_TIDY = {h: f"data/tidy/hosts/{h}" for h in HOST_RAW}


def host_cells(host, experiment):
    """The cells another host holds of an experiment (a replot: only those that exist and
    carry the settings this profile plans, as for the first host: harness.plan.reuse)."""
    key = (host, experiment)
    if key not in _REPLOT_CELLS:
        _REPLOT_CELLS[key] = hreuse.replot_cells(CFG, LOCK, experiment, [
            c for c in hplan.cells(CFG, LOCK, experiment, raw=HOST_RAW[host], blocks=planned_blocks(experiment))
            if os.path.isdir(c)])
    return _REPLOT_CELLS[key]


def block_dones(experiment):
    """The .done markers of an experiment's planned blocks (so every block is closed)."""
    return [] if REPLOT else [hblocks.done_path(experiment, r) for r in range(1, planned_blocks(experiment) + 1)]


_BLOCK_ORDER, _BLOCK_STATE = {}, {}


def block_order(experiment, rep):
    """(cell names of block rep in measuring order, the order's seed), computed once."""
    key = (experiment, rep)
    if key not in _BLOCK_ORDER:
        _BLOCK_ORDER[key] = (hblocks.order(CFG, LOCK, experiment, rep), hblocks.block_seed(CFG, experiment, rep))
    return _BLOCK_ORDER[key]


def block_state(experiment, rep):
    """The block's state on disk when this run first asked (harness.plan.blocks.state): a
    snapshot, so a block this run is measuring never looks interrupted to itself."""
    key = (experiment, rep)
    if key not in _BLOCK_STATE:
        _BLOCK_STATE[key] = hblocks.state(hplan.cells(CFG, LOCK, experiment, rep), experiment, rep)
    return _BLOCK_STATE[key]


HOST_EXPERIMENTS = {}
if REPLOT:  # the cells a replot lacks (harness.plan.cells.replot_missing), of those it reads by digest
    for _x in EXPERIMENTS:
        cells(_x)  # which existing cells are this profile's (harness.plan.reuse.replot_cells), said once
    _missing = {x: hplan.replot_missing(CFG, LOCK, x, exists=_REPLOT_CELLS[x].__contains__, raw=RAW)
                for x in EXPERIMENTS}
    _n = sum(map(len, _missing.values()))
    if _n:
        print(f"replot: {_n} cell(s) of profile {CFG['profile']} are not measured and stay out "
              f"(./artifact paper measures them):", file=sys.stderr)
        for x, cs in _missing.items():
            if cs:
                print(f"  {x}: {len(cs)} missing, e.g. {cs[0]}", file=sys.stderr)
    # every other host's experiments: those it holds a cell of this profile's settings
    HOST_EXPERIMENTS = {h: [x for x in EXPERIMENTS if host_cells(h, x)] for h, _ in HOSTS[1:]}
    EXPERIMENTS = {x: s for x, s in EXPERIMENTS.items() if _REPLOT_CELLS[x]}
    # an experiment no host has a cell of is not in this paper: the resolved config says so
    # (enabled: false), so no reader takes a tidy file an earlier run left of it as this run's
    # (and why, when this host holds its cells only of other settings: harness.plan.reuse.left_out;
    # not_planned is no input of a cell's settings digest)
    for _x in sorted(set(EXPERIMENTS_ALL) - set(EXPERIMENTS) - {x for xs in HOST_EXPERIMENTS.values() for x in xs}):
        _blocks = hintervals.look_schedule(*hplan.repetition_bounds(EXPERIMENTS_ALL[_x]))[-1]   # planned_blocks'
        _why = hreuse.left_out(CFG, LOCK, _x, hplan.cells(CFG, LOCK, _x, raw=RAW, blocks=_blocks), RAW)
        CFG["experiments"][_x] = {**CFG["experiments"][_x], "enabled": False, **({"not_planned": _why} if _why else {})}


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
        try:
            _est = hestimate.estimate(CFG, LOCK)
            ESTIMATE_S = _est["total_s"]
            print(hestimate.render(_est), file=sys.stderr)
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
                           _runlog.cells_newer_than(RUN_STARTED),
                           _runlog.newer_than("dataset/**/*.tsv", RUN_STARTED), ESTIMATE_S)
        except Exception as _e:  # a record never fails a finished run
            print(f"run record not written: {_e}", file=sys.stderr)


onerror:
    reap()
    stop_engine()
