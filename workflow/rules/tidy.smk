# Raw cells -> tidy CSVs (one row per cell, one per cell summary) and provenance.

EXPERIMENT_STUDY = {"point_select": "A3"}


rule tidy:
    input:
        lambda wc: cells(wc.experiment, EXPERIMENT_STUDY[wc.experiment]),
    output:
        runs="data/tidy/{experiment}.csv",
        summary="data/tidy/{experiment}_summary.csv",
        provenance="data/tidy/{experiment}_provenance.json",
    params:
        cv=CFG["stats"]["cv_threshold"],
        profile=CFG["profile"],
    shell:
        "{HARNESS} tidy --cells {input} --runs {output.runs} --summary {output.summary}"
        " --provenance {output.provenance} --cv-threshold {params.cv} --profile {params.profile}"


rule resolved_config:
    output:
        "data/tidy/config.resolved.yaml",
    params:
        cfg=json.dumps(CFG, sort_keys=True),
    run:
        import yaml
        from harness import atomic

        atomic.write_text(output[0], yaml.safe_dump(json.loads(params.cfg), sort_keys=False))
