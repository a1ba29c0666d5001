"""The studies the paper reproduces: a registry that discovers them.

A study is a package: every folder of this one with an `__init__.py`, plus the
folders of $MYSQLBENCH_STUDY_PATH (os.pathsep-separated directories, each
holding study packages; for a study kept outside the repository). Nothing else
lists the studies: the claim engine, the report, the config schema's enums and
Snakemake's wildcard constraints all ask the registry (harness.registry, in the
base stage), which this package provides with what it discovers when imported.

A study package declares, in its `__init__.py`:

    NAME, TITLE        its key and its title in the paper
    CODES              the config `study:` codes of its experiments (e.g. ("A2", "A3"))
    CORES              (optional) {config code: mysqld's core counts it ran}, which `cores: study`
                       keeps where the host fits them (harness.plan.config.plan_cores)
    SECTION            its paper section, a file of the package (section.tex; main.tex
                       \\input's them in this registry's order: generated/sections.tex)
    EXPERIMENTS        {experiment: (studies, what it measures)} it reads (design table)
    CLAIMS             its claims (harness.analysis.claims kinds), in the order of the table
    FIGURES            {figure: dict(script, flag, inputs, extra)} (harness.report.figures);
                       a script is the package's R/<script>, else a shared one of workflow/R/
    SETUP              what the study used, for the generated deviations table:
                       a list of (aspect, the study's value, key)
    PUBLISHED_MARKS    its published numbers a figure draws (harness.analysis.marks)
    macros(ctx, rows, fmt)  its numbers quoted in the text: [(macro name, LaTeX)]

and, where it brings its own measurement parts:

    TIDY_TABLES        {file: experiments} tidy tables of its own (data/tidy/<file>, made by its
                       rules.smk) the report reads when one of those experiments runs
    WORKLOADS          {name: {"script": path of a sysbench Lua driver, "args": [...],
                       "statements": [...][, "dataset": the one it runs on][, "with_args":
                       {a driver option: its own options that go with it}]}} beside the
                       generic ones (harness.measure.sysbench)
    DATASETS           {name: dataset module} beside `sbtest` (harness.measure.datasets)
    STEP_SCRIPTS       {name: module with run(ctx)[, server_options(family, engines)]
                       [, extra(frame, spec, recorder)][, check_spec(spec, where, lock,
                       lock_file)][, SPEC_KEYS][, EVIDENCE]} for `steps` experiments

and, where it needs commands or clean-up of its own:

    COMMANDS           {command: (module, help)}: `python -m harness <command>` runs
                       <module>.main(argv) (e.g. A1's corpus and its tables)
    reap(run, session) kills the labelled processes of its own (a second server) that
                       `python -m harness reap` must end too; returns their pids

and, where its results bear on the whole run (study AA's A/A controls):

    annotate(ctx, rows)   amends the claims' rows (e.g. a reason) after every study's
                          claims are evaluated (the report calls it)
    warnings(tidy)        lines the report prints on stderr (e.g. a host that was not quiet)
    deviations(tidy)      rows (aspect, the study, this artifact; plain text) the deviations
                          table computes from the run (e.g. A1's corpus statistics)
    INTERVAL_NOTE         a sentence on its intervals, OUTSIDE_COVERAGE what its cells leave
                          outside the stated coverage (the appendix: harness.report.method.limits)

and, where a generic table or the estimate is about one of its experiments:

    EXPLAIN_EXPERIMENT    the experiment of the paper's EXPLAIN table (generated/explain.tex)
    BUILDS_EXPERIMENT     the experiment of the paper's build table (generated/builds.tex)
    STEPS_FIT             {(experiment, build): (fixed s, s per row)}: a steps cell's measured
                          cost (harness.plan.estimate)

harness.plugins.StudyPlugin (and StepScriptPlugin) state the required names as Protocols;
tests/unit/test_plugins.py checks every registered study against them.

Adding a study: a new folder here (or on $MYSQLBENCH_STUDY_PATH), its experiment
block in a config, and its paper section.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
import types
from functools import cache
from pathlib import Path

PATH_VAR = "MYSQLBENCH_STUDY_PATH"
EXTERNAL = "harness_external_studies"


def _external_dirs() -> list[Path]:
    return [Path(d) for d in os.environ.get(PATH_VAR, "").split(os.pathsep) if d]


def _external_parent():
    """The package the outside studies are loaded under (so a study's own modules import
    each other: `from . import mydataset`); an empty namespace, made once."""
    if EXTERNAL not in sys.modules:
        parent = types.ModuleType(EXTERNAL, "the study packages of $" + PATH_VAR)
        parent.__path__ = []
        sys.modules[EXTERNAL] = parent
    return sys.modules[EXTERNAL]


def _load_external(pkg_dir: Path):
    name = f"{EXTERNAL}.{pkg_dir.name}"
    if name in sys.modules:
        return sys.modules[name]
    _external_parent()
    spec = importlib.util.spec_from_file_location(name, pkg_dir / "__init__.py",
                                                  submodule_search_locations=[str(pkg_dir)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@cache
def _discover(extra: tuple[str, ...]) -> dict:
    mods = [importlib.import_module(f"{__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name) if m.ispkg]
    for d in map(Path, extra):
        if not d.is_dir():
            raise ValueError(f"${PATH_VAR}: {d} is not a directory; give directories that hold "
                             f"study packages")
        mods += [_load_external(p) for p in sorted(d.iterdir()) if (p / "__init__.py").is_file()]
    out = {}
    for m in mods:
        if m.NAME in out:
            raise ValueError(f"study {m.NAME!r} is defined twice ({out[m.NAME].__file__}, {m.__file__})")
        out[m.NAME] = m
    return out


def all_studies() -> dict:
    """{NAME: study module}, this package's studies in name order, then the external ones."""
    return _discover(tuple(map(str, _external_dirs())))


def __getattr__(name: str):
    if name == "STUDIES":
        return all_studies()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# the accessors live in harness.registry (the base stage), which the generic stages ask;
# this package provides it with its studies
from harness import registry  # noqa: E402
from harness.registry import (annotate, claims, codes, commands, datasets, deviations,  # noqa: E402,F401
                              figure_script, package_dir, reap, section_path, step_scripts, tidy_tables,
                              warnings, workloads)

registry.provide(all_studies)
