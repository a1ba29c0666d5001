# sysbench experiments: prepared datasets, then one measured cell per
# (build, engine, tables, cores, users, repetition). `bench=1` keeps one
# server on the host at a time.

EXPERIMENT_WORKLOAD = {"point_select": "point_select"}


rule dataset:
    input:
        build="resources/builds/{build}",
        template="resources/templates/{build}",
    output:
        directory("data/datasets/{build}/{workload}/{engine}_t{tables}_n{size}"),
    log:
        "logs/dataset/{build}/{workload}/{engine}_t{tables}_n{size}.log",
    params:
        settings=run_settings(),
    resources:
        bench=1,
    shell:
        "{HARNESS} prepare-dataset --name {wildcards.build} --build-dir {input.build}"
        " --template {input.template} --workload {wildcards.workload} --engine {wildcards.engine}"
        " --tables {wildcards.tables} --table-size {wildcards.size} --settings '{params.settings}'"
        " --out {output} 2>&1 | tee {log}"


def dataset_for(wc):
    size = EXPERIMENTS[wc.experiment]["table_size"]
    workload = EXPERIMENT_WORKLOAD[wc.experiment]
    return f"data/datasets/{wc.build}/{workload}/{wc.engine}_t{wc.tables}_n{size}"


rule run_cell:
    input:
        build="resources/builds/{build}",
        dataset=dataset_for,
    output:
        directory("data/raw/{study}/{experiment}/{build}_{engine}_t{tables}_c{cores}_u{users}_r{rep}"),
    log:
        "logs/run_cell/{study}/{experiment}/{build}_{engine}_t{tables}_c{cores}_u{users}_r{rep}.log",
    params:
        settings=run_settings(),
        workload=lambda wc: EXPERIMENT_WORKLOAD[wc.experiment],
        size=lambda wc: EXPERIMENTS[wc.experiment]["table_size"],
    resources:
        bench=1,
    shell:
        "{HARNESS} run-cell --study {wildcards.study} --experiment {wildcards.experiment}"
        " --workload {params.workload} --name {wildcards.build} --build-dir {input.build}"
        " --dataset {input.dataset} --engine {wildcards.engine} --tables {wildcards.tables}"
        " --table-size {params.size} --cores {wildcards.cores} --users {wildcards.users}"
        " --rep {wildcards.rep} --settings '{params.settings}' --out {output} 2>&1 | tee {log}"
