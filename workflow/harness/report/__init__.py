"""LaTeX inputs of the paper, generated from the tidy data of every experiment.

    python -m harness report --tidy-dir data/tidy \\
        --config data/tidy/config.resolved.yaml --out paper/generated

Reads the tidy files of the experiments the resolved config runs
(harness.analysis.tidyread.load). Writes:

    macros.tex       every measured number the text quotes, \\ifHas<Experiment>
                     and \\ifHasFig<Figure> flags, per claim \\Verdict<M>,
                     \\Ratio<M>, \\Measured<M>, the interval method
    claims.tex/.csv  every published claim, measured ratio with its interval,
                     rule, repetitions, verdict (harness.analysis.claims)
    reasons.tex      each claim's full reason (appendix)
    design.tex       the experiments of the profile
    deviations.tex   where the artifact differs from the studies (generated)
    provenance.tex   builds, hosts, load generator, placement, commits
    explain.tex      EXPLAIN per engine x statement of the Simple-Ranges runs
    builds.tex       build versus build
    unsupported.tex  combinations a build cannot run (or a sentence: none)
    sections.tex     \\input of each study's section (harness.studies order)
    power.tex        the verdict power table (harness.report.method, --power: data/power/verdict_power_<level>.csv)
    claims_<study>.tex, findings_<study>.tex, waits_<study>.tex
                     per study package: its verdict table, its findings, its wait
                     rankings (harness.report.studytables)

Formatting: report.latex; the figures table: report.figures; the claims and
numbers of each study: harness.studies.<study>.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import sys

from harness import atomic
from harness.analysis import claims as C
from harness import registry as studies
from harness.analysis import tidyread as T
from harness.report import claimpower, deviations, latex, macros as M, method, studytables, tables
from harness.report.figures import FACTOR_TABLE, FIGURES, PAPER_FIGURES, factor_table_csv, figure_inputs, host_args  # noqa: F401  (rules, tests)
from harness.report.latex import fmt_int, fmt_num, fmt_pct, macro, tex_escape, tex_tt  # noqa: F401

OUTPUTS = ("macros.tex", "claims.tex", "claims.csv", "reasons.tex", "design.tex", "deviations.tex",
           "provenance.tex", "explain.tex", "builds.tex", "unsupported.tex", "sections.tex", "power.tex",
           *studytables.names())


def claims_csv(rows) -> str:
    """claims.csv: every row's CSV_FIELDS and its `host` (C.by_host)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=C.HOST_CSV_FIELDS, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def host_rows(tidy: T.Tidy) -> list[dict]:
    """The claim rows of one host's tidy data (every host's judged by this same code), each
    measurable row with its power on that host (harness.report.claimpower)."""
    rows = studies.annotate(C.Context.of(tidy), C.evaluate(tidy, studies.claims()))
    claimpower.annotate(rows, tidy)
    return rows


def outputs(tidy: T.Tidy, power: str | None = None, host: str = "",
            others: list[tuple[str, T.Tidy]] = ()) -> dict:
    """File name -> text of every generated file (`power`: the verdict power CSV, else
    bench/verdict_power.py's default output if it exists). `tidy` is host `host`'s; `others`
    are the other hosts' (id, tidy), each judged on its own cells: claims.csv, the claims
    table and the reasons show every host's row and each claim's combined row
    (C.by_host); the text's numbers, the figures and the study tables are `host`'s."""
    ctx = C.Context.of(tidy)
    rows = host_rows(tidy)
    every = C.by_host([(host, rows)] + [(h, host_rows(t)) for h, t in others])
    explain = studies.declared_one("EXPLAIN_EXPERIMENT")   # the experiments the two tables are
    compared = studies.declared_one("BUILDS_EXPERIMENT")   # about: a study declares each
    bc = tidy.experiment(compared) if compared else None
    return {
        "macros.tex": M.macros_tex(M.build_macros(ctx, rows) + [("ClaimsNotDrawn", M.not_drawn(every))],
                                   M.flags_tex(tidy)),
        "claims.tex": tables.claims_tex(every, ctx.level, claimpower.method_sentence(claimpower.host_power(tidy))
                                        if any("power_note" in r for r in rows) else ""),
        "claims.csv": claims_csv(every),
        "reasons.tex": tables.reasons_tex(every),
        "design.tex": tables.design_tex(tidy),
        "deviations.tex": deviations.deviations_tex(tidy),
        "provenance.tex": tables.provenance_tex(tidy.provenance, tidy.config,
                                                [(h, t.provenance) for h, t in others], host),
        "explain.tex": tables.explain_tex(tidy.extra("explain", explain) if explain else [],
                                          explain or "(none: no study declares EXPLAIN_EXPERIMENT)"),
        "builds.tex": tables.builds_tex(bc.cells if bc else [], tidy.provenance),
        "unsupported.tex": tables.unsupported_tex(tidy.unsupported),
        "sections.tex": tables.sections_tex(),
        "power.tex": method.power_tex(ctx.level, power),
        **studytables.outputs(rows, ctx.level),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(prog="harness report", description=__doc__.splitlines()[0])
    ap.add_argument("--tidy-dir", required=True, help="directory of the tidy CSVs (data/tidy)")
    ap.add_argument("--config", required=True, help="resolved config YAML")
    ap.add_argument("--out", required=True, help="output directory (paper/generated)")
    ap.add_argument("--host", default="", help="the id of the host whose tidy data --tidy-dir holds (claims.csv's host)")
    ap.add_argument("--host-tidy", action="append", default=[], metavar="ID=DIR",
                    help="another host's tidy directory (data/tidy/hosts/<id>), judged on its own; repeat per host")
    ap.add_argument("--power", help="bench/verdict_power.py's CSV (the pipeline's data/power/verdict_power_<level>.csv)")
    if argv and argv[0] == "--":  # `harness report -- --tidy-dir ...`
        argv = argv[1:]
    args = ap.parse_args(argv)
    if not os.path.isdir(args.tidy_dir):
        ap.error(f"--tidy-dir {args.tidy_dir}: not a directory")
    config = T.read_yaml(args.config)
    try:
        C.setting(config, "level")
    except ValueError as e:
        ap.error(f"{args.config}: {e}")
    tidy = T.load(args.tidy_dir, config, tables=studies.tidy_tables())
    others = []
    for spec in args.host_tidy:
        hid, _, d = spec.partition("=")
        if not hid or not os.path.isdir(d):
            ap.error(f"--host-tidy {spec}: give ID=DIR with DIR a host's tidy directory (data/tidy/hosts/<id>)")
        t = T.load(d, config, tables=studies.tidy_tables())
        # what the plan decides, not the host: the builds' unsupported combinations, the official check
        t.unsupported = tidy.unsupported
        if "official_check" in tidy.provenance:
            t.provenance.setdefault("official_check", tidy.provenance["official_check"])
        others.append((hid, t))
    if args.power and not os.path.isfile(args.power):
        ap.error(f"--power {args.power}: no such file; make it with python bench/verdict_power.py --out FILE")
    for name, text in outputs(tidy, args.power, args.host, others).items():
        atomic.write_text(os.path.join(args.out, name), text)
    for line in studies.warnings(tidy):  # e.g. an A/A control that says the host was not quiet
        print(line, file=sys.stderr)
    return 0


__all__ = ["main", "outputs", "FIGURES", "PAPER_FIGURES", "figure_inputs", "factor_table_csv", "latex", "tables"]
