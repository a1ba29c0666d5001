# Datasets and measured cells (harness.plan.cells names them; harness.measure.kinds measures).
# `bench=1` keeps one server on the host at a time. Repetition r of every cell
# of an experiment runs after repetition r-1 of all of them (interleaved).


def dataset_inputs(wc):
    if REPLOT:  # an existing dataset is data, never rebuilt when replotting
        return {}
    inputs = {"build": f"resources/builds/{wc.build}", "template": f"resources/templates/{wc.build}"}
    mod = DATASETS[wc.dataset]
    if hasattr(mod, "extra_inputs"):  # e.g. the fulltext dataset's corpus (its study's rules make it)
        inputs.update(mod.extra_inputs(wc.key))
    return inputs


rule dataset:
    input:
        unpack(dataset_inputs),
    output:
        directory("data/datasets/{build}/{dataset}/{key}"),
    log:
        "logs/dataset/{build}/{dataset}/{key}.log",
    benchmark:
        "benchmarks/dataset/{build}/{dataset}/{key}.tsv"
    params:
        settings=json.dumps(hplan.run_settings(CFG), sort_keys=True),
        corpus=lambda wc, input: f"--corpus {input.corpus}" if "corpus" in input.keys() else "",
    resources:
        bench=1,
    shell:
        "{HARNESS} prepare-dataset --dataset {wildcards.dataset} --key {wildcards.key} --name {wildcards.build}"
        " --build-dir {input.build} --template {input.template} {params.corpus}"
        " --settings '{params.settings}' --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


def cell_inputs(wc):
    if REPLOT:  # an existing cell is data: no input can make a replot measure it again
        return {}
    cell = hplan.parse_cell(CFG, wc.experiment, wc.cell)
    build, rep = cell["build"], cell["rep"]
    ds = hplan.dataset_path(CFG, wc.experiment, wc.cell)
    inputs = {"build": f"resources/builds/{build}",
              "source": ds or f"resources/templates/{build}"}
    if rep > 1:  # ordering only: ancient, so a re-measured cell re-runs nothing else
        inputs["after"] = ancient(f"data/order/{wc.experiment}.r{rep - 1}.done")
    return inputs


rule run_cell:
    input:
        unpack(cell_inputs),
    output:
        directory("data/raw/{study}/{experiment}/{cell}"),
    log:
        "logs/run_cell/{study}/{experiment}/{cell}.log",
    benchmark:
        "benchmarks/run_cell/{study}/{experiment}/{cell}.tsv"
    params:
        spec=lambda wc: hplan.cell_spec(CFG, wc.experiment),
    resources:
        bench=1,
    shell:
        "{HARNESS} run-cell --cell {wildcards.cell} --cell-spec '{params.spec}' --build-dir {input.build}"
        " --source {input.source} --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


rule repetition_done:
    input:
        lambda wc: cells(wc.experiment, int(wc.rep)),
    output:
        touch("data/order/{experiment}.r{rep}.done"),
    log:
        "logs/order/{experiment}.r{rep}.log",
