"""The figures table: figure name -> its R script, the tidy files it reads and
its study, gathered from the study modules (harness.studies); plus the factor
table as a CSV the R scripts read for words, baselines and value order (they
read factor *columns* from each tidy file's header, never from a list).

Each figure rule of workflow/rules/paper.smk takes its inputs from here; a
figure is drawn when at least one of its experiments runs in the profile.
"""
from __future__ import annotations

import csv
import io

from harness.analysis import tidywrite
from harness.measure import factors
from harness import paths, registry as studies


def _table() -> dict:
    out = {}
    for study, mod in studies.all_studies().items():
        for name, spec in mod.FIGURES.items():
            if name in out:
                raise ValueError(f"figure {name} declared by studies {out[name]['study']} and {study}")
            path = studies.figure_script(mod, spec["script"])
            out[name] = {**spec, "study": study, "path": _repo_relative(path)}
    return out


def _repo_relative(path) -> str:
    """A path inside the repository as Snakemake names it (relative), else absolute."""
    try:
        return str(path.relative_to(paths.ROOT))
    except ValueError:
        return str(path)


# figures/<name>.pdf: script (its study's R/, else workflow/R/) and its path, flag (\ifHasFig<flag>), inputs
# [(experiment, kind)] -> <tidy>/<experiment>_<kind>.csv, extra [tidy files], study
FIGURES = _table()

# The paper's own figures, drawn from the generated claims table rather than
# from one study's tidy files (so not in FIGURES, whose inputs are tidy CSVs):
# name -> script (workflow/R/) and the generated file it reads.
PAPER_FIGURES = {
    "claims": dict(script="fig_claims.R", input="paper/generated/claims.csv"),
}

FACTOR_TABLE = "factors.csv"
# the tidy files of an experiment that every host's tidy step writes (rules tidy_host_*)
HOST_KINDS = ("summary", *tidywrite.CAPTURES)
FACTOR_FIELDS = ("name", "code", "words", "baseline", "values")


def figure_inputs(name, experiments, tidy_dir="data/tidy") -> list[str]:
    """The tidy files figure `name` reads, for the experiments that run ([] if none does, or
    if an experiment the figure declares `required` does not run)."""
    if any(e not in experiments for e in FIGURES[name].get("required", [])):
        return []
    own = [f"{tidy_dir}/{e}_{kind}.csv" for e, kind in FIGURES[name]["inputs"] if e in experiments]
    return own + [f"{tidy_dir}/{f}" for f in FIGURES[name].get("extra", [])] if own else []


def host_args(name, first: str, others, experiments) -> list[str]:
    """A several-host paper: the options a figure script takes before its inputs (theme.R,
    take_host_args): `--host <first>`, then `--host-file ID=PATH` for each other host's tidy
    file of the figure's inputs, for the experiments it measured and the first host drew.
    `others`: (host id, its tidy dir, its experiments). [] with one host (the command as before).
    Only the files each host's tidy step writes (HOST_KINDS); a study's own tables (A1's
    `load`, the `extra` files) are the first host's, its builds then named `@ <first>`."""
    if not others:
        return []
    args = ["--host", first]
    for h, tidy_dir, exps in others:
        args += [a for e, kind in FIGURES[name]["inputs"] if e in experiments and e in exps and kind in HOST_KINDS
                 for a in ("--host-file", f"{h}={tidy_dir}/{e}_{kind}.csv")]
    return args


def factor_table_csv() -> str:
    """harness.measure.factors as CSV (name, code, words, baseline, values '|'-joined in table order)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FACTOR_FIELDS)
    for f in factors.FACTORS.values():
        w.writerow([f.name, f.code, f.words, f.baseline, "|".join(str(v) for v in f.values)])
    return buf.getvalue()


def coverage_range(tidy, name) -> tuple[float, float] | None:
    """(lowest, highest) coverage of the per-cell median intervals a figure draws
    (its summary inputs' qps_server/qps _ci_coverage), None when it draws none."""
    covs = []
    for exp, kind in FIGURES[name]["inputs"]:
        e = tidy.experiment(exp)
        if kind != "summary" or e is None:
            continue
        for r in e.summary:
            for col in ("qps_server_ci_coverage", "qps_ci_coverage"):
                try:
                    covs.append(float(r[col]))
                    break
                except (KeyError, TypeError, ValueError):
                    continue
    return (min(covs), max(covs)) if covs else None
