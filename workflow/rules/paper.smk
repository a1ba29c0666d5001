# Figures (one R script each, shared theme), generated tables and macros, paper.
# Nothing here depends on a measurement rule's code: re-plotting never re-measures.
#
# Which tidy files a figure reads, and so whether it is drawn at all, is the
# figures table harness.report.FIGURES (gathered from harness.studies): a
# figure whose experiments are all disabled in the profile is not required,
# and the paper says so (\ifHasFig... flags).
import glob  # noqa: E402

from harness import report as hreport  # noqa: E402  (sys.path set in common.smk)
from harness.studies import STUDIES  # noqa: E402

TIDY = "data/tidy"
# the code the generated tables and macros come from (a change re-runs them)
REPORT_CODE = sorted(glob.glob("workflow/harness/report/*.py") + glob.glob("workflow/harness/studies/*.py")) + [
    f"workflow/harness/{m}.py" for m in ("claims", "tidydata", "verdict", "stats", "factors")
]


def figure_csvs(name):
    """The tidy CSVs figure `name` reads, for the experiments this profile runs."""
    return hreport.figure_inputs(name, EXPERIMENTS, TIDY)


def figure_pdfs():
    return [f"figures/{name}.pdf" for name in hreport.FIGURES if figure_csvs(name)]


def figure_input(name):
    return {
        "csvs": figure_csvs(name),
        "script": "workflow/R/" + hreport.FIGURES[name]["script"],
        "theme": "workflow/R/theme.R",
    }


rule factor_table:
    """harness.factors as CSV: the R scripts' words, baselines and value order."""
    input:
        "workflow/harness/factors.py",
    output:
        f"{TIDY}/{hreport.FACTOR_TABLE}",
    log:
        "logs/tidy/factors.log",
    run:
        from harness import atomic

        atomic.write_text(output[0], hreport.factor_table_csv())


rule figure:
    input:
        unpack(lambda wc: figure_input(wc.figure)),
    output:
        "figures/{figure}.pdf",
    log:
        "logs/figures/{figure}.log",
    wildcard_constraints:
        figure="|".join(hreport.FIGURES),
    shell:
        "Rscript {input.script} {input.csvs} {output} 2>&1 | tee {log}"


rule generated_tex:
    input:
        tidy=[
            f"{TIDY}/{e}{suffix}"
            for e in EXPERIMENTS
            for suffix in ["_summary.csv", ".csv", "_provenance.json"]
            + ([f"_{c}.csv" for c in hconfig.tidy_captures()] if EXPERIMENTS[e]["kind"] == "throughput" else [])
        ],
        unsupported=f"{TIDY}/unsupported.csv",
        official=f"{TIDY}/official_check.json",
        config=f"{TIDY}/config.resolved.yaml",
        code=REPORT_CODE,
    output:
        [f"paper/generated/{name}" for name in hreport.OUTPUTS],
    log:
        "logs/generated_tex.log",
    shell:
        "{HARNESS} report --tidy-dir {TIDY} --config {input.config} --out paper/generated > {log} 2>&1"
        " || (tail -5 {log}; exit 1)"


rule paper:
    input:
        tex="paper/main.tex",
        sections=[f"paper/{m.SECTION}" for m in STUDIES.values()],
        generated=rules.generated_tex.output,
        figures=figure_pdfs(),
    output:
        "paper/main.pdf",
    log:
        "logs/paper.log",
    shell:
        "latexmk -pdf -cd -interaction=nonstopmode -halt-on-error {input.tex} > {log} 2>&1"
        " || (tail -30 {log}; exit 1)"
