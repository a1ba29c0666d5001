# Raw cells -> tidy CSVs (docs/data-contracts.md) and provenance.


rule tidy:
    input:
        lambda wc: cells(wc.experiment),
    output:
        runs="data/tidy/{experiment}.csv",
        summary="data/tidy/{experiment}_summary.csv",
        provenance="data/tidy/{experiment}_provenance.json",
        extra=multiext(
            "data/tidy/{experiment}_",
            "intervals.csv",
            "waits.csv",
            "explain.csv",
            "keycaches.csv",
            "status.csv",
        ),
    params:
        cv=CFG["stats"]["cv_threshold"],
        profile=CFG["profile"],
    shell:
        "{HARNESS} tidy --cells {input} --runs {output.runs} --summary {output.summary}"
        " --provenance {output.provenance} --cv-threshold {params.cv} --profile {params.profile}"
        " --extra-dir data/tidy"


rule unsupported_cells:
    output:
        "data/tidy/unsupported.csv",
    params:
        rows=json.dumps(
            [
                [x, b, e, v, why]
                for x in EXPERIMENTS
                for b, e, v, why in combos(x)
                if why is not None
            ]
        ),
    run:
        import csv, io
        from harness import atomic

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["experiment", "build", "engine", "variant", "reason"])
        w.writerows(json.loads(params.rows))
        atomic.write_text(output[0], buf.getvalue())


rule resolved_config:
    output:
        "data/tidy/config.resolved.yaml",
    params:
        cfg=json.dumps(CFG, sort_keys=True),
    run:
        import yaml
        from harness import atomic

        atomic.write_text(output[0], yaml.safe_dump(json.loads(params.cfg), sort_keys=False))
