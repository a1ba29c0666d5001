"""What both benchmark scripts need: the pinned default build, fetched,
verified and bootstrapped the way the pipeline does (cached in resources/)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness import builds  # noqa: E402

from harness.plan import config

BUILD = "mysql-5.6.24"


def run_settings(**over) -> dict:
    """Run settings as the pipeline passes them (harness.plan.cells.run_settings: every key,
    config/default.yaml's values), on the host backend unless `over` says otherwise."""
    from harness.plan import cells
    return {**cells.run_settings(config.with_defaults({})), "backend": "host", **over}


def pinned_build(name: str = BUILD) -> tuple[dict, Path, Path]:
    """(lock entry, build dir, template dir) of `name`, ready to start."""
    entry = builds.load_lock(config.LOCK)[name]
    build_dir = ROOT / "resources/builds" / name
    template = ROOT / "resources/templates" / name
    if not build_dir.exists():
        builds.fetch(name, entry, build_dir)
    if not template.exists():
        builds.bootstrap(name, entry, build_dir, template)
    return entry, build_dir, template
