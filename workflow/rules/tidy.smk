# Raw cells -> tidy CSVs (docs/data-contracts.md) and provenance.
# Throughput experiments also get their per-cell captures as long tables.


def tidy_outputs(kind):
    out = {
        "runs": "data/tidy/{experiment}.csv",
        "summary": "data/tidy/{experiment}_summary.csv",
        "provenance": "data/tidy/{experiment}_provenance.json",
    }
    if kind == "throughput":
        out["extra"] = multiext("data/tidy/{experiment}_", *[f"{c}.csv" for c in hconfig.tidy_captures()])
    return out


for _kind in ("throughput", "steps"):

    rule:
        name:
            f"tidy_{_kind}"
        input:
            cells=lambda wc: cells(wc.experiment),
            blocks=lambda wc: block_dones(wc.experiment),
        output:
            **tidy_outputs(_kind),
        log:
            f"logs/tidy/{{experiment}}.log",
        benchmark:
            f"benchmarks/tidy_{_kind}/{{experiment}}.tsv"
        wildcard_constraints:
            experiment=_alternatives(experiments_of(_kind)),
        params:
            cv=CFG["stats"]["cv_threshold"],
            profile=CFG["profile"],
        shell:
            "{HARNESS} tidy --cells {input.cells} --runs {output.runs} --summary {output.summary}"
            " --provenance {output.provenance} --cv-threshold {params.cv} --profile {params.profile}"
            " --extra-dir data/tidy > {log} 2>&1 || (tail -3 {log}; exit 1)"


# Several hosts (a replot of raw_host all): each other host's cells tidied apart, by the same
# command, into data/tidy/hosts/<host>/ (never two hosts' cells in one table or interval).
for _kind in ("throughput", "steps") if HOST_RAW else ():

    rule:
        name:
            f"tidy_host_{_kind}"
        input:
            cells=lambda wc: host_cells(wc.host, wc.experiment),
        output:
            **{k: (v.replace("data/tidy/", "data/tidy/hosts/{host}/") if isinstance(v, str) else
                   multiext("data/tidy/hosts/{host}/{experiment}_", *[f"{c}.csv" for c in hconfig.tidy_captures()]))
               for k, v in tidy_outputs(_kind).items()},
        log:
            "logs/tidy/hosts/{host}/{experiment}.log",
        benchmark:
            f"benchmarks/tidy_host_{_kind}/{{host}}/{{experiment}}.tsv"
        wildcard_constraints:
            experiment=_alternatives([x for x, sp in EXPERIMENTS_ALL.items() if sp["kind"] == _kind]),
            host=_alternatives(HOST_RAW),
        params:
            cv=CFG["stats"]["cv_threshold"],
            profile=CFG["profile"],
            extra=lambda wc: HOST_TIDY[wc.host],
        shell:
            "{HARNESS} tidy --cells {input.cells} --runs {output.runs} --summary {output.summary}"
            " --provenance {output.provenance} --cv-threshold {params.cv} --profile {params.profile}"
            " --extra-dir {params.extra} > {log} 2>&1 || (tail -3 {log}; exit 1)"


def host_tidy_files():
    """Every other host's tidy files the report reads (data/tidy/hosts/<host>/...)."""
    return [f"{HOST_TIDY[h]}/{e}{suffix}" for h, exps in HOST_EXPERIMENTS.items() for e in exps
            for suffix in ["_summary.csv", ".csv", "_provenance.json"]
            + ([f"_{c}.csv" for c in hconfig.tidy_captures()] if EXPERIMENTS_ALL[e]["kind"] == "throughput" else [])]


rule unsupported_cells:
    output:
        "data/tidy/unsupported.csv",
    log:
        "logs/tidy/unsupported.log",
    benchmark:
        "benchmarks/unsupported_cells.tsv"
    params:
        rows=json.dumps(hplan.unsupported(CFG, LOCK)),
    shell:
        "{HARNESS} unsupported --rows {params.rows:q} --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


rule resolved_config:
    output:
        "data/tidy/config.resolved.yaml",
    log:
        "logs/tidy/config.log",
    benchmark:
        "benchmarks/resolved_config.tsv"
    params:
        cfg=json.dumps(CFG, sort_keys=True),
    shell:
        "{HARNESS} resolved-config --config-json {params.cfg:q} --out {output} > {log} 2>&1"
        " || (tail -3 {log}; exit 1)"
