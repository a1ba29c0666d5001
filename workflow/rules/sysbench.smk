# sysbench experiments (config: experiments.<name>): prepared datasets, then
# one measured cell per (build, engine, variant, tables, cores, users, rep).
# `bench=1` keeps one server on the host at a time. Repetition r of every
# cell runs after repetition r-1 of all of them (interleaved, not back to back).


rule dataset:
    input:
        build="resources/builds/{build}",
        template="resources/templates/{build}",
    output:
        directory("data/datasets/{build}/sbtest/{engine}_t{tables}_n{size}"),
    log:
        "logs/dataset/{build}/{engine}_t{tables}_n{size}.log",
    params:
        settings=run_settings(),
    resources:
        bench=1,
    shell:
        "{HARNESS} prepare-dataset --name {wildcards.build} --build-dir {input.build}"
        " --template {input.template} --workload point_select --engine {wildcards.engine}"
        " --tables {wildcards.tables} --table-size {wildcards.size} --settings '{params.settings}'"
        " --out {output} 2>&1 | tee {log}"


def cell_inputs(wc):
    size = EXPERIMENTS[wc.experiment]["table_size"]
    inputs = {
        "build": f"resources/builds/{wc.build}",
        "dataset": f"data/datasets/{wc.build}/sbtest/{wc.engine}_t{wc.tables}_n{size}",
    }
    if int(wc.rep) > 1:  # ordering only: ancient, so a re-measured cell re-runs nothing else
        inputs["after"] = ancient(f"data/order/{wc.experiment}.r{int(wc.rep) - 1}.done")
    return inputs


rule run_cell:
    input:
        unpack(cell_inputs),
    output:
        directory(
            "data/raw/{study}/{experiment}/{build}_{engine}_{variant}_t{tables}_c{cores}_u{users}_r{rep}"
        ),
    log:
        "logs/run_cell/{study}/{experiment}/{build}_{engine}_{variant}_t{tables}_c{cores}_u{users}_r{rep}.log",
    params:
        settings=run_settings(),
        workload=lambda wc: EXPERIMENTS[wc.experiment]["workload"],
        size=lambda wc: EXPERIMENTS[wc.experiment]["table_size"],
    resources:
        bench=1,
    shell:
        "{HARNESS} run-cell --study {wildcards.study} --experiment {wildcards.experiment}"
        " --workload {params.workload} --name {wildcards.build} --build-dir {input.build}"
        " --dataset {input.dataset} --engine {wildcards.engine} --variant {wildcards.variant}"
        " --tables {wildcards.tables} --table-size {params.size} --cores {wildcards.cores}"
        " --users {wildcards.users} --rep {wildcards.rep} --settings '{params.settings}'"
        " --out {output} 2>&1 | tee {log}"


rule repetition_done:
    input:
        lambda wc: cells(wc.experiment, int(wc.rep)),
    output:
        touch("data/order/{experiment}.r{rep}.done"),
