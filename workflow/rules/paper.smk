# Figures (one R script each, shared theme), generated tables and macros, paper.
# Nothing here depends on a measurement rule's code: re-plotting never re-measures.
#
# Which tidy files a figure reads, and so whether it is drawn at all, is the
# figures table harness.report.FIGURES (gathered from harness.studies): a
# figure whose experiments are all disabled in the profile is not required,
# and the paper says so (\ifHasFig... flags).
import glob  # noqa: E402

from harness import report as hreport  # noqa: E402  (sys.path set in common.smk; STUDIES there)
from harness.analysis.claimrules import setting as _claim_setting  # noqa: E402
from harness.report import method as _power_method  # noqa: E402

TIDY = "data/tidy"
HOST_ID = HOSTS[0][0]   # the first host's id (claims.csv's host column); the others' tidy and raw roots:
HOST_TIDY_ARGS = "".join(f" --host-tidy {shlex.quote(f'{h}={d}')}" for h, d in HOST_TIDY.items())
HOST_RAW_ARGS = "".join(f" --host-raw {shlex.quote(f'{h}={d}')}" for h, d in HOST_RAW.items())
# the code the generated tables and macros come from (a change re-runs them)
# every registered study's package (its claims, marks, macros), wherever it lives
STUDY_CODE = sorted(["workflow/harness/studies/__init__.py"] + [
    p for m in STUDIES.values() for p in glob.glob(os.path.join(os.path.dirname(m.__file__), "*.py"))])
REPORT_CODE = (sorted(glob.glob("workflow/harness/report/*.py") + glob.glob("workflow/harness/analysis/*.py"))
               + STUDY_CODE + ["workflow/harness/measure/factors.py"])


def figure_csvs(name):
    """The tidy CSVs figure `name` reads, for the experiments this profile runs."""
    return hreport.figure_inputs(name, EXPERIMENTS, TIDY)


def figure_pdfs():
    return [f"figures/{name}.pdf" for name in hreport.FIGURES if figure_csvs(name)]


def figure_host_args(name):
    """Several hosts: the script's --host/--host-file options (harness.report.host_args); [] with one."""
    return hreport.host_args(name, HOST_ID, [(h, HOST_TIDY[h], HOST_EXPERIMENTS.get(h, [])) for h in HOST_TIDY],
                             EXPERIMENTS)


def figure_input(name):
    return {
        "csvs": figure_csvs(name),
        "script": hreport.FIGURES[name]["path"],
        "theme": "workflow/R/theme.R",
        # several hosts: the other hosts' tidy files of this figure (data/tidy/hosts/<id>/...)
        "hosts": [a.split("=", 1)[1] for a in figure_host_args(name)[3::2]],   # each --host-file's PATH
    }


rule factor_table:
    """harness.measure.factors as CSV: the R scripts' words, baselines and value order."""
    input:
        "workflow/harness/measure/factors.py",
    output:
        f"{TIDY}/{hreport.FACTOR_TABLE}",
    log:
        "logs/tidy/factors.log",
    benchmark:
        "benchmarks/factor_table.tsv"
    shell:
        "{HARNESS} factor-table --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


rule published_table:
    """Every study's PUBLISHED_MARKS (harness.report.published) as CSV: the published
    numbers the figure scripts draw as labelled marks."""
    input:
        STUDY_CODE,
    output:
        f"{TIDY}/published.csv",
    log:
        "logs/tidy/published.log",
    benchmark:
        "benchmarks/published_table.tsv"
    shell:
        "{HARNESS} published {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


# The report's front page (snakemake --report, ./artifact report): figures grouped by study.
report: "../report/workflow.rst"


# One figure rule per study (same command), so the HTML report groups each
# study's figures under its title.
for _study, _mod in STUDIES.items():
    if not _mod.FIGURES:
        continue

    rule:
        name:
            f"figure_{_study}"
        input:
            unpack(lambda wc: figure_input(wc.figure)),
        output:
            report("figures/{figure}.pdf", caption="../report/figure.rst", category="Figures",
                   subcategory=_mod.TITLE),
        log:
            "logs/figures/{figure}.log",
        benchmark:
            "benchmarks/figure/{figure}.tsv"
        wildcard_constraints:
            figure="|".join(_mod.FIGURES),
        params:
            # several hosts: " --host ID --host-file ID=PATH ..." (theme.R); "" with one host
            hosts=lambda wc: "".join(f" {shlex.quote(a)}" for a in figure_host_args(wc.figure)),
        shell:
            "Rscript {input.script}{params.hosts} {input.csvs} {output} 2>&1 | tee {log}"


# the per-study figure rules stay on the submit host under a cluster executor
workflow.localrules(*(f"figure_{_s}" for _s, _m in STUDIES.items() if _m.FIGURES))


rule paper_figure:
    """The paper's own figures (harness.report.PAPER_FIGURES): the claims figure
    from the generated claims table."""
    input:
        csv=lambda wc: hreport.PAPER_FIGURES[wc.pfigure]["input"],
        script=lambda wc: "workflow/R/" + hreport.PAPER_FIGURES[wc.pfigure]["script"],
        theme="workflow/R/theme.R",
    output:
        report("figures/{pfigure}.pdf", caption="../report/claims_figure.rst", category="Claims"),
    log:
        "logs/figures/{pfigure}.log",
    benchmark:
        "benchmarks/paper_figure/{pfigure}.tsv"
    wildcard_constraints:
        pfigure="|".join(hreport.PAPER_FIGURES),
    shell:
        "Rscript {input.script} {input.csv} {output} 2>&1 | tee {log}"


# How often the verdict rule is right (P(reproduced) by true ratio, the profiles' repetitions, this
# run's claims.level): bench/verdict_power.py's simulation through the project's own interval code,
# so the paper states the power of the rule it uses, not a figure from another build. The peak and
# scaling arms run 200 trials here (~0.03 sd on a rate); docs/benchmarks-record.md records a 2000-trial run.
# The paper's table reads the one-lane rows (--designs 1:block); the lanes and duet rows are
# docs/benchmarks-record.md's. The level is in the file's name: a run at another claims.level (replot included, whose
# rerun trigger is mtime) makes its own table instead of reading one of another level.
POWER_LEVEL = f"{_claim_setting(CFG, 'level'):g}"
POWER_CSV = f"data/power/verdict_power_{POWER_LEVEL}.csv"


rule verdict_power:
    input:
        script="bench/verdict_power.py",
        old_rule="bench/pergroup.py",   # the old-median-product arm's per-group interval
        code=["workflow/harness/analysis/intervals.py", "workflow/harness/analysis/verdict.py",
              "workflow/harness/analysis/blockverdict.py", "workflow/harness/analysis/claimmath.py"],
        # the repetitions (min:max:looks) and block sizes the table shows are these profiles'
        profiles=[f"config/{p}.yaml" for p in _power_method.PROFILES] + ["config/builds.lock.yaml"],
    output:
        POWER_CSV,
        POWER_CSV.replace(".csv", "_aa.csv"),
    params:
        level=POWER_LEVEL,
        settings=_power_method.power_settings(),
    threads: 2
    log:
        "logs/verdict_power.log",
    benchmark:
        "benchmarks/verdict_power.tsv"
    shell:
        "{PY} {input.script} --trials 2000 --shape-trials 200 --seed 1 --levels {params.level} --designs 1:block "
        "--settings {params.settings} "
        "--jobs {threads} "
        "--out {output[0]} > {log} 2>&1 || (tail -5 {log}; exit 1)"


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
        # a study's own tidy tables (its TIDY_TABLES, e.g. A1's corpus: the deviations table)
        study_tables=[f"{TIDY}/{name}" for name in hstudies.tidy_tables(EXPERIMENTS)],
        code=REPORT_CODE,
        power=POWER_CSV,
        hosts=host_tidy_files(),   # several hosts: the others' tidy data (data/tidy/hosts/<id>)
    output:
        [
            report(f"paper/generated/{name}", caption="../report/claims.rst", category="Claims")
            if name == "claims.csv"
            else f"paper/generated/{name}"
            for name in hreport.OUTPUTS
        ],
    log:
        "logs/generated_tex.log",
    benchmark:
        "benchmarks/generated_tex.tsv"
    shell:
        "{HARNESS} report --tidy-dir {TIDY} --config {input.config} --power {input.power} --out paper/generated"
        " --host {HOST_ID:q}{HOST_TIDY_ARGS}"
        " > {log} 2>&1"
        " || (tail -5 {log}; exit 1)"


rule runinfo:
    """Profile, host and dates of the run for the PDF's title page (harness.report.runinfo)."""
    input:
        config=f"{TIDY}/config.resolved.yaml",
        provenance=[f"{TIDY}/{e}_provenance.json" for e in EXPERIMENTS],
        code="workflow/harness/report/runinfo.py",
    output:
        "paper/generated/runinfo.tex",
    log:
        "logs/runinfo.log",
    benchmark:
        "benchmarks/runinfo.tsv"
    shell:
        "{HARNESS} runinfo write --config {input.config} --raw-dir {RAW:q} --host {HOST_ID:q}{HOST_RAW_ARGS}"
        " --out {output}"
        " > {log} 2>&1 || (tail -5 {log}; exit 1)"


rule artifact_appendix:
    """The artifact appendix (harness.report.artifact): claims <-> experiments <->
    commands <-> measured time (the benchmark files), requirements, profiles."""
    input:
        claims="paper/generated/claims.csv",
        config=f"{TIDY}/config.resolved.yaml",
        summaries=[f"{TIDY}/{e}_summary.csv" for e in EXPERIMENTS],
        code=["workflow/harness/report/artifact.py", "workflow/harness/plan/estimate.py"],
    output:
        "paper/generated/artifact.tex",
    log:
        "logs/artifact_appendix.log",
    benchmark:
        "benchmarks/artifact_appendix.tsv"
    shell:
        "{HARNESS} artifact --config {input.config} --claims {input.claims} --out {output}"
        " > {log} 2>&1 || (tail -5 {log}; exit 1)"


rule paper:
    input:
        tex="paper/main.tex",
        sections=[str(hstudies.section_path(m)) for m in STUDIES.values()],
        generated=rules.generated_tex.output,
        study_tex=[f"paper/generated/{name}" for m in STUDIES.values()
                   for name, exp in getattr(m, "GENERATED_TEX", {}).items() if exp in EXPERIMENTS],
        figures=figure_pdfs(),
        paper_figures=[f"figures/{name}.pdf" for name in hreport.PAPER_FIGURES],
        runinfo="paper/generated/runinfo.tex",
        artifact="paper/generated/artifact.tex",
        config=f"{TIDY}/config.resolved.yaml",
    output:
        report("paper/main.pdf", caption="../report/paper.rst", category="Paper"),
    log:
        "logs/paper.log",
    benchmark:
        "benchmarks/paper.tsv"
    shell:
        # the generated files and the resolved config must be of one profile
        "{HARNESS} runinfo check --config {input.config} --tidy-dir {TIDY}"
        " --generated paper/generated && "
        # latexmk's whole output in {log}; on failure no PDF and an error naming the log
        "{HARNESS} latex --tex {input.tex} --log {log}"
