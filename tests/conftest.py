"""Shared fixtures. Every server a test starts carries this session's label,
and the session fails if any of them is still running at the end."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness import builds, config, datasets, placement, procs  # noqa: E402

SESSION = os.environ.setdefault(procs.SESSION_VAR, "test-" + uuid.uuid4().hex[:10])
BUILD = "mysql-5.6.24"


def pytest_sessionfinish(session, exitstatus):
    from harness import docker_backend
    containers = docker_backend.reap(session=SESSION)
    if containers:
        print(f"\nERROR: containers left after the tests (removed now): {containers}", file=sys.stderr)
        session.exitstatus = 1
    left = procs.reap(session=SESSION)
    placement.remove_stale_cgroups()
    if left:
        print(f"\nERROR: labelled servers left running after the tests (reaped now): {left}", file=sys.stderr)
        session.exitstatus = 1


@pytest.fixture(scope="session")
def lock_entry():
    return builds.load_lock(config.LOCK)[BUILD]


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


@pytest.fixture(scope="session")
def template(build_dir, lock_entry):
    d = ROOT / "resources" / "templates" / BUILD
    if not d.exists():
        builds.bootstrap(BUILD, lock_entry, build_dir, d)
    return d


@pytest.fixture(scope="session")
def dataset(build_dir, template, lock_entry, tmp_path_factory):
    """A small real InnoDB dataset (1 table x 1000 rows)."""
    out = tmp_path_factory.mktemp("ds") / "InnoDB_t1_n1000"
    datasets.prepare("sbtest", "InnoDB_t1_n1000", name=BUILD, entry=lock_entry, build_dir=build_dir,
                     template=template, out=out, settings={})
    return out


# A throughput experiment block as harness.plan.cell_spec gives it to `run-cell`.
POINT_SELECT = {"study": "A3", "kind": "throughput", "workload": "point_select", "dataset": "sbtest",
                "engines": ["InnoDB"], "tables": [1], "table_size": 1000, "cores": [1], "users": [2],
                "variants": {}}


def cell_spec(settings: dict, experiment: str = "point_select", **spec) -> dict:
    return {"experiment": experiment, "spec": {**POINT_SELECT, **spec}, "settings": settings}


def flip_byte(path: Path, offset: int | None = None) -> None:
    """Invert one byte in place (the middle one unless told): a tampered artifact or binary."""
    size = path.stat().st_size
    offset = size // 2 if offset is None else offset
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))


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
