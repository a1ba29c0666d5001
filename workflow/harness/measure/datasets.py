"""Datasets: what a server serves, prepared once per (build, dataset, key) and
copied into every cell that uses it. A dataset is independent of the
measurement kind: `sbtest` (sysbench tables) and `fulltext` (a corpus loaded
into one table per engine with a FULLTEXT index) serve throughput cells.

Each dataset module gives `key(spec, cell) -> str`, `parse_key(key) -> dict`,
`server_options(spec_or_params, family) -> dict` (options every server that
serves it needs, at load and at measurement) and `load(srv, params, ...)`; and,
where it needs them, what harness.plan.config checks of an experiment on it
(`check_spec(spec, where)`, `WORKLOAD`: the one workload it serves, `TABLES`: its
table counts, `SPEC_KEYS`: the experiment keys it reads) and `ROW_S` (seconds to
load a row: harness.plan.estimate). harness.plugins.DatasetPlugin states it as a Protocol.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import tempfile
from pathlib import Path

from harness import atomic

from harness.measure import hostlock

from harness import paths
from harness.measure.server import Server
from harness.measure import sbtest
from harness import registry as studies

GENERIC = {"sbtest": sbtest}


def all_datasets() -> dict:
    """{name: dataset module}: the generic ones and every study's (harness.studies)."""
    return {**GENERIC, **studies.datasets()}


def scale_key(spec: dict) -> str | None:
    """The spec key of a dataset's scale (its module's SCALE_KEY; None: it has none)."""
    return getattr(all_datasets().get(spec.get("dataset")), "SCALE_KEY", None)


def for_cell(spec: dict, cell: dict) -> tuple[str, str]:
    """(dataset kind, key) a cell of a kind that copies a dataset (its DATASET) copies its
    datadir from."""
    ds = spec["dataset"]
    return ds, all_datasets()[ds].key(spec, cell)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@contextlib.contextmanager
def scratch(tag: str):
    """A short private directory (unix sockets allow ~107 bytes) for a server's run files."""
    d = Path(tempfile.mkdtemp(prefix=paths.scratch_prefix(tag)))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def prepare(dataset: str, key: str, *, name: str, entry: dict, build_dir: Path, template: Path,
            out: Path, settings: dict, corpus_dir: Path | None = None) -> Path:
    """Template datadir + the dataset's tables, served by a server of the same backend as
    the measurements, shut down cleanly; written atomically to `out`."""
    mod = all_datasets()[dataset]
    params = mod.parse_key(key)
    run_id = f"dataset-{Path(out).name}-{os.getpid()}"
    cpus = sorted(os.sched_getaffinity(0))
    if hasattr(mod, "check_inputs"):  # e.g. the corpus's checksum: refused before anything else
        mod.check_inputs(params, corpus_dir)
    options = {**settings["options"], **mod.server_options(params, entry["family"])}
    # one measurement (or load) on the host at a time, across pipelines (waits, saying so)
    with hostlock.measuring(f"dataset {key}"), atomic.staging_dir(Path(out)) as tmp, scratch("ds") as run:
        datadir = tmp / "datadir"
        shutil.copytree(Path(template) / "datadir", datadir, symlinks=True)
        with Server(name=name, entry=entry, build_dir=build_dir, datadir=datadir, rundir=run,
                    run_id=run_id, cpus=cpus, mechanism=settings["mechanism"],
                    backend=settings["backend"], options=options, max_connections=64,
                    startup_timeout=settings["startup_timeout_s"],
                    shutdown_timeout=settings["shutdown_timeout_s"]) as srv:
            info = mod.load(srv, params, cpus=cpus, run_id=run_id, corpus_dir=corpus_dir, out=tmp)
            backend, where = srv.backend, srv.placement_info()
        (tmp / "dataset.json").write_text(json.dumps({
            "build": name, "dataset": dataset, "key": key, **params, **info,
            "server_options": options, "backend": backend, "placement": where, "created": now()},
            indent=2, default=str) + "\n")
    return Path(out)
