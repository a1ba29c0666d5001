# MySQL storage-engine studies, re-run end to end: pinned builds -> datasets
# -> measured cells -> tidy data -> figures and generated tables -> paper.
# Main entry: `snakemake --cores all` (profile: --configfile config/<name>.yaml).
configfile: "config/default.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/builds.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/tidy.smk"
include: "workflow/rules/fts.smk"
include: "workflow/rules/paper.smk"


# On a cluster (profiles/slurm) only jobs that start a server are submitted; these run here.
localrules: all, fetch_build, corpus, official_check, repetition_done, tidy_throughput, tidy_steps, unsupported_cells, resolved_config, factor_table, published_table, fts_dataset_table, paper_figure, generated_tex, runinfo, artifact_appendix, paper


rule all:
    default_target: True
    input:
        "paper/main.pdf",
        expand("data/tidy/{experiment}_summary.csv", experiment=EXPERIMENTS),
        "data/tidy/unsupported.csv",
