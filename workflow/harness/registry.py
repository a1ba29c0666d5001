"""The study registry the generic stages ask (base stage: it imports no stage).

The studies (harness.studies, a stage above every generic one) discover their
packages and hand this module the function that lists them (`provide`); the
claim engine, the report, the measurement kinds and the config schema ask the
accessors below, so no generic module imports a study. Whoever runs the harness
imports harness.studies first: harness.cli, the Snakefile (workflow/rules/common.smk)
and the tests (tests/conftest.py) do.
"""
from __future__ import annotations

from pathlib import Path

_source = None


def provide(source) -> None:
    """Register the function that returns {NAME: study module} (harness.studies does)."""
    global _source
    _source = source


def all_studies() -> dict:
    """{NAME: study module}, as harness.studies discovers them."""
    if _source is None:
        raise LookupError("no studies registered: import harness.studies before asking the registry "
                          "(harness.cli, the Snakefile and tests/conftest.py do)")
    return _source()


def _merged(attr: str) -> dict:
    out = {}
    for s in all_studies().values():
        for k, v in getattr(s, attr, {}).items():
            if k in out:
                raise ValueError(f"{attr} {k!r} is declared by two studies")
            out[k] = v
    return out


def codes() -> list[str]:
    """Every config `study:` code, in study order."""
    return [c for s in all_studies().values() for c in s.CODES]


def study_cores(code: str) -> tuple | None:
    """The core counts the study of config code `code` ran (its CORES[code]), None when it declares none."""
    for s in all_studies().values():
        if code in s.CODES:
            return tuple(getattr(s, "CORES", {}).get(code, ())) or None
    return None


def workloads() -> dict:
    return _merged("WORKLOADS")


def datasets() -> dict:
    return _merged("DATASETS")


def step_scripts() -> dict:
    return _merged("STEP_SCRIPTS")


def steps_fits() -> dict:
    """{(experiment, build): (fixed seconds, seconds per row)}: the steps cells' fits the
    studies measured (a study's STEPS_FIT; harness.plan.estimate)."""
    return _merged("STEPS_FIT")


def declared_one(attr: str) -> str | None:
    """The first study's `attr` (study order), None when no study declares it: an
    experiment a generic table is about (EXPLAIN_EXPERIMENT, BUILDS_EXPERIMENT)."""
    return next(iter(declared(attr)), None)


def declared(attr: str) -> list:
    """Every study's `attr`, in study order (those that declare it)."""
    return [getattr(s, attr) for s in all_studies().values() if hasattr(s, attr)]


def commands() -> dict:
    """{command: (module, help)}: the studies' own `python -m harness <command>`s (a study's
    COMMANDS), each run as <module>.main(argv) as harness.cli's own-parser commands are."""
    return _merged("COMMANDS")


def reap(run: str | None, session: str | None) -> list:
    """The pids every study's `reap(run, session)` killed (the labelled servers of its own,
    e.g. a second server a step script starts), for `python -m harness reap`."""
    return [pid for s in all_studies().values() if hasattr(s, "reap") for pid in s.reap(run, session)]


def package_dir(study) -> Path:
    return Path(study.__file__).resolve().parent


def section_path(study) -> Path:
    """The study's paper section (a file of its package)."""
    return package_dir(study) / study.SECTION


def figure_script(study, script: str) -> Path:
    """A figure script of the study: its package's R/<script>, else the shared workflow/R/<script>."""
    own = package_dir(study) / "R" / script
    return own if own.is_file() else Path(__file__).resolve().parents[1] / "R" / script


def claims() -> list:
    """Every study's claims, in study order."""
    return [c for s in all_studies().values() for c in s.CLAIMS]


def annotate(ctx, rows: list) -> list:
    """The claims' rows after every study's `annotate` (those that declare one), in study order."""
    for s in all_studies().values():
        if hasattr(s, "annotate"):
            rows = s.annotate(ctx, rows)
    return rows


def warnings(tidy) -> list[str]:
    """Every study's report-time warnings (those that declare `warnings`)."""
    return [w for s in all_studies().values() if hasattr(s, "warnings") for w in s.warnings(tidy)]


def tidy_tables(experiments=None) -> list[str]:
    """The file names of every study's TIDY_TABLES (those of `experiments` only, if given)."""
    out = []
    for s in all_studies().values():
        for name, exps in getattr(s, "TIDY_TABLES", {}).items():
            if (experiments is None or set(exps) & set(experiments)) and name not in out:
                out.append(name)
    return out


def deviations(tidy) -> list:
    """Every study's computed deviation rows (those that declare `deviations`), in study order."""
    return [row for s in all_studies().values() if hasattr(s, "deviations") for row in s.deviations(tidy)]
