# Figures (one R script each, shared theme), generated tables and macros, paper.
# Nothing here depends on a measurement rule's code: re-plotting never re-measures.


rule figure_point_select:
    input:
        summary="data/tidy/point_select_summary.csv",
        script="workflow/R/fig_point_select.R",
        theme="workflow/R/theme.R",
    output:
        "figures/a3_point_select.pdf",
    log:
        "logs/figures/a3_point_select.log",
    shell:
        "Rscript {input.script} {input.summary} {output} 2>&1 | tee {log}"


rule generated_tex:
    input:
        summary="data/tidy/point_select_summary.csv",
        runs="data/tidy/point_select.csv",
        provenance="data/tidy/point_select_provenance.json",
        config="data/tidy/config.resolved.yaml",
    output:
        macros="paper/generated/macros.tex",
        provenance="paper/generated/provenance.tex",
        claims="paper/generated/claims.tex",
        claims_csv="paper/generated/claims.csv",
    shell:
        "{HARNESS} report --summary {input.summary} --runs {input.runs}"
        " --provenance {input.provenance} --config {input.config} --out paper/generated"


rule paper:
    input:
        tex="paper/main.tex",
        generated=rules.generated_tex.output,
        figures=["figures/a3_point_select.pdf"],
    output:
        "paper/main.pdf",
    log:
        "logs/paper.log",
    shell:
        "latexmk -pdf -cd -interaction=nonstopmode -halt-on-error {input.tex} > {log} 2>&1"
        " || (tail -30 {log}; exit 1)"
