"""Every repository path the harness uses, defined once.

Generated outputs (data/, figures/*.pdf, paper/generated/, resources/) are
never committed; see data/README.md and figures/README.md.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "workflow"
LUA = WORKFLOW / "lua"
R = WORKFLOW / "R"
SCHEMA = WORKFLOW / "schemas" / "config.schema.yaml"
CONFIG = ROOT / "config"
LOCK = CONFIG / "builds.lock.yaml"


def defaults(config_dir: Path = CONFIG) -> dict:
    """config/default.yaml (that of `config_dir`): the defaults layer, read here only;
    harness.plan.config merges a profile onto it, everything else reads the result."""
    return yaml.safe_load((Path(config_dir) / "default.yaml").read_text())
RESOURCES = ROOT / "resources"
BUILDS = RESOURCES / "builds"
TEMPLATES = RESOURCES / "templates"
DATA = ROOT / "data"
RAW = DATA / "raw"
TIDY = DATA / "tidy"
DATASETS = DATA / "datasets"
CORPUS = DATA / "corpus"
ORDER = DATA / "order"
FIGURES = ROOT / "figures"
PAPER = ROOT / "paper"
GENERATED = PAPER / "generated"
DOCKER = ROOT / "docker"
SCRIPTS = ROOT / "scripts"
NIX_PINS = ROOT / "nix" / "builds.json"   # the lock's pins for flake.nix (harness.builds.nix)

WORK_VAR = "MYSQLBENCH_WORK"
WORK_OWNER = ".owner-pid"  # in each work dir: the pid of the harness that made it


def work_dir() -> Path:
    """Where per-cell scratch datadirs live: $MYSQLBENCH_WORK, else data/work
    (inside the repository's data area: /tmp is often a small tmpfs)."""
    d = Path(os.environ.get(WORK_VAR) or DATA / "work")
    d.mkdir(parents=True, exist_ok=True)
    return d


def owned_work_dirs() -> list[tuple[Path, int]]:
    """(work directory, the pid of the harness that made it: its WORK_OWNER file), for each."""
    out = []
    root = work_dir()
    for d in root.iterdir() if root.exists() else []:
        try:
            out.append((d, int((d / WORK_OWNER).read_text().split()[0])))
        except (OSError, ValueError, IndexError):
            continue
    return out


def scratch_prefix(tag: str, pid: int | None = None) -> str:
    """The name prefix of a server's short run directory in the temp dir (its socket, pid
    file, error log): mysqlbench-<tag>-<pid of the process that made it>-, so that the
    watchdog and `harness reap` find what a SIGKILLed process left."""
    return f"mysqlbench-{tag}-{os.getpid() if pid is None else pid}-"


_SCRATCH = re.compile(r"mysqlbench-[a-z]+-([0-9]+)-[A-Za-z0-9_]+")


def owned_scratch_dirs() -> list[tuple[Path, int]]:
    """(run directory in the temp dir, the pid of the process that made it), for each
    named by scratch_prefix()."""
    out = []
    for d in Path(tempfile.gettempdir()).glob("mysqlbench-*-*-*"):
        m = _SCRATCH.fullmatch(d.name)
        if m and d.is_dir():
            out.append((d, int(m.group(1))))
    return out


def stale_scratch_dirs() -> list[Path]:
    """Run directories whose process is gone (left by a SIGKILL: the watchdog removes
    them, else `harness reap`)."""
    return [d for d, pid in owned_scratch_dirs() if not Path(f"/proc/{pid}").exists()]
