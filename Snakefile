# MySQL storage-engine studies, re-run end to end: pinned builds -> datasets
# -> measured cells -> tidy data -> figures and generated tables -> paper.
# Main entry: `snakemake --cores all` (profile: --configfile config/<name>.yaml).
configfile: "config/default.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/builds.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/tidy.smk"
# each study's own rules (harness.studies: a study package's rules.smk, if it has one)
for _study in STUDIES.values():
    if os.path.isfile(_rules := os.path.join(os.path.dirname(_study.__file__), "rules.smk")):

        include: _rules


include: "workflow/rules/paper.smk"


# On a cluster (profiles/slurm) only jobs that start a server are submitted (and cell_measured,
# which runs inside its block's job: a group with a local rule would run on the submit host);
# these run here.
localrules: all, fetch_build, official_check, block_open, repetition_done, look, tidy_throughput, tidy_steps, unsupported_cells, resolved_config, factor_table, published_table, paper_figure, verdict_power, generated_tex, runinfo, artifact_appendix, paper


rule all:
    default_target: True
    input:
        "paper/main.pdf",
        expand("data/tidy/{experiment}_summary.csv", experiment=EXPERIMENTS),
        "data/tidy/unsupported.csv",
