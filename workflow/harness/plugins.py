"""What a plugin module must define: one typing.Protocol per kind of plugin (base stage:
it imports no stage).

The harness grows by modules, not subclasses: a measurement kind (harness.measure.kinds),
a dataset (harness.measure.datasets), a study (harness.studies) and a study's step script
(a `steps` experiment's) are modules the generic stages look up by name. As BenchExec's
tool-info modules implement its BaseTool2 (executable, version, name, cmdline,
determine_result), each of these implements the Protocol below: the names every one of
its kind defines, with the parameters the callers pass. Optional names (asked for with
getattr/hasattr where they are used) are listed in each docstring, not in the Protocol.

The Protocols are runtime_checkable, so `isinstance(module, KindPlugin)` says whether a
module defines every name; tests/unit/test_plugins.py checks every registered plugin against
its Protocol, names and parameters. Nothing at run time checks them: the registries and
their callers behave as before.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class KindPlugin(Protocol):
    """A measurement kind (harness.measure.kinds.KINDS): what a cell measures inside the
    shared frame (harness.measure.frame).

    Optional: GROUP_BY (the factor a group of cells on one server differs in) with
    group_name(d) and GROUP_NAMING; ROW_KEYS (the tidy columns of a cell's several rows)."""

    KEY_HEAD: list[str]         # tidy key columns before the factor columns
    KEY_TAIL: list[str]         # tidy key columns after them
    METRICS: list[str]          # tidy metric columns
    SUMMARY_METRICS: list[str]  # the metrics summarised per setting
    SYSBENCH: bool              # its cells run a sysbench driver for the timed windows
    DATASET: bool               # its cells copy a prepared dataset's datadir
    SCALE_KEY: str | None       # the spec key of its own scale (None: its dataset's)
    NAMED_BY: str               # the spec key naming its driver or script

    def combos(self, spec: dict, build: str, variant: dict) -> Any:
        """The cells of one build and variant, without rep (dicts of factor values)."""

    def unsupported(self, spec: dict, d: dict, entry: dict) -> str | None:
        """Why cell `d` cannot run on the build of lock entry `entry`, or None."""

    def name(self, d: dict) -> str:
        """The cell's directory name."""

    def parse(self, text: str) -> dict:
        """The cell a name says (the inverse of name)."""

    def server_options(self, spec: dict, d: dict, values: dict, family: str) -> dict:
        """The mysqld options the cell's server needs beyond the profile's."""

    def measure(self, fr: Any, spec: dict, d: dict, values: dict, settings: dict) -> dict:
        """Measure cell `d` in frame `fr`: its part of the manifest."""

    def named_settings(self, variant: dict, f: dict) -> dict:
        """The settings a cell's name says, which its server must show."""


@runtime_checkable
class DatasetPlugin(Protocol):
    """A dataset (harness.measure.datasets.all_datasets): what a server serves, prepared once
    per (build, dataset, key) and copied into every cell that uses it.

    Optional: check_spec(spec, where) and SPEC_KEYS (harness.plan.config's checks of an
    experiment on it), WORKLOAD (the one workload it serves), TABLES (its table counts),
    ROW_S (seconds to load a row: harness.plan.estimate), SCALE_KEY, extra_inputs(key) (a
    rule input it needs: the Snakefile's dataset rule), check_inputs(...)."""

    def key(self, spec: dict, cell: dict) -> str:
        """The dataset key a cell of experiment `spec` copies its datadir from."""

    def parse_key(self, key: str) -> dict:
        """The parameters a key says (the inverse of key)."""

    def server_options(self, params: dict, family: str) -> dict:
        """Options every server that serves it needs, at load and at measurement."""

    def load(self, srv: Any, params: dict, *, cpus: Any, run_id: str, corpus_dir: Any = None,
             out: Any = None) -> dict:
        """Load it into running server `srv`; what was loaded (the dataset's record)."""


@runtime_checkable
class StudyPlugin(Protocol):
    """A study package (harness.studies): the names harness.studies' docstring lists as
    every study's. Optional: CORES, TIDY_TABLES, WORKLOADS, DATASETS, STEP_SCRIPTS,
    COMMANDS, reap(run, session), annotate(ctx, rows), warnings(tidy), deviations(tidy),
    INTERVAL_NOTE, OUTSIDE_COVERAGE, and what a generic module asks of one of its experiments
    (EXPLAIN_EXPERIMENT, BUILDS_EXPERIMENT, STEPS_FIT)."""

    NAME: str
    TITLE: str
    CODES: tuple
    SECTION: str
    EXPERIMENTS: dict
    CLAIMS: list
    FIGURES: dict
    SETUP: list
    PUBLISHED_MARKS: list

    def macros(self, ctx: Any, rows: Any, fmt: Any) -> list:
        """Its numbers quoted in the text: [(macro name, LaTeX)]."""


@runtime_checkable
class StepScriptPlugin(Protocol):
    """A step script (a study's STEP_SCRIPTS) of a `steps` experiment.

    Optional: server_options(family, engines), extra(frame, spec, recorder, values),
    check_spec(spec, where, lock, lock_file), SPEC_KEYS, EVIDENCE."""

    def run(self, ctx: Any) -> None:
        """Run the script's steps on the cell's server (ctx: harness.measure.stepscript)."""
