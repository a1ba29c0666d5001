# Datasets and measured cells (harness.plan.cells names them; harness.measure.kinds measures).
# Lanes (harness.plan.lanes, placement.lanes): each lane is a Snakemake resource `lane<i>`
# of 1, so one job per lane at a time; a block runs wholly on its lane (a wider cell holds
# the span of lanes it takes, a dataset every lane), blocks on different lanes side by
# side. Blocks (harness.plan.blocks):
# repetition r of an experiment is block r; block r opens after block r-<lanes> is done
# (on a cluster at once: each block a job of its own node),
# and inside it every cell runs once, each after its predecessor in the block's
# seeded order (a group's cells together: one job, one server start, run_group_*).
# An interrupted block is re-run whole. On a cluster (profiles/slurm) a block
# is one job (group `block_<experiment>_r<rep>`): its cells run back to back on one node.
# Looks (checkpoint `look`): blocks beyond `repetitions.min` are planned only while the
# experiment is not decided.


# The lanes this run measures on (none on a cluster: there a job holds a whole node).
# A cluster run is known by the slurm profile's resources (harness.plan.cluster: set-resources,
# Snakemake's ResourceSettings.overwrite_resources, with slurm_* keys), so run clusters with
# --profile profiles/slurm.
_CLUSTER = hcluster.on_cluster(workflow.resource_settings.overwrite_resources)
if _CLUSTER and any(c.isspace() for c in sys.executable):
    # the SLURM executor writes its job command with this Python's path unquoted
    sys.exit(f"config error: profiles/slurm: the clone's path holds a space ({sys.executable!r}), which "
             f"Snakemake's SLURM executor does not quote in its job command; clone to a path without spaces")
LANES = None if REPLOT or _CLUSTER else hestimate.run_lanes(CFG, LOCK)
for _i in range(LANES.count if LANES else 0):
    workflow.register_resource(f"lane{_i}", 1)


def cell_lane(experiment, first):
    """The lane of the job measuring cell `first` (and its group): harness.plan.blocks.cell_lane."""
    if LANES is None:
        return None
    return hblocks.cell_lane(CFG, LANES, EXPERIMENTS, experiment, first)


def lane_resources(held):
    """Snakemake resources of a job: lane<i>=1 for each lane `held(wc)` gives, and `lane`,
    run-cell's --lane (a string resource: not a params, so a change of lanes re-runs nothing)."""
    res = {f"lane{i}": (lambda wc, i=i: int(i in held(wc)["lanes"])) for i in range(LANES.count if LANES else 0)}
    res["lane"] = lambda wc: f"--lane '{json.dumps(held(wc))}'" if LANES else ""
    return res


ALL_LANES = {"lanes": list(range(LANES.count if LANES else 0))}


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
        **{k: v for k, v in lane_resources(lambda wc: ALL_LANES).items() if k != "lane"},
    shell:
        "{HARNESS} prepare-dataset --dataset {wildcards.dataset} --key {wildcards.key} --name {wildcards.build}"
        " --build-dir {input.build} --template {input.template} {params.corpus}"
        " --settings '{params.settings}' --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


def _cell_inputs(experiment, first):
    """Inputs of the job measuring cell `first` (and, in a group, the cells after it)."""
    if REPLOT:  # an existing cell is data: no input can make a replot measure it again
        return {}
    cell = hplan.parse_cell(CFG, experiment, first)
    build, rep = cell["build"], cell["rep"]
    ds = hplan.dataset_path(CFG, experiment, first)
    inputs = {"build": f"resources/builds/{build}",
              "source": ds or f"resources/templates/{build}"}
    spec = CFG["experiments"][experiment]
    if spec.get("legacy"):  # study C's PostgreSQL stand-in: its pinned build, fetched like the others
        inputs["legacy_build"] = f"resources/builds/{spec['legacy_build']}"
    names, _ = block_order(experiment, rep)
    st = block_state(experiment, rep)
    opened = hblocks.open_path(experiment, rep, hblocks.attempt(st, experiment, rep))
    # the block's .open: ordering only (ancient), unless the block was interrupted: then its
    # next attempt's .open (not there yet) makes Snakemake re-run every cell of the block
    inputs["open"] = opened if st == hblocks.INTERRUPTED else ancient(opened)
    pos = names.index(first)
    if pos > 0:  # ordering only, on the predecessor's marker (ancient and there even while the
        # predecessor itself is re-measured), so a re-measured cell re-runs nothing else
        inputs["after"] = ancient(f"data/order/{experiment}/{names[pos - 1]}.measured")
    return inputs


def cell_inputs(wc):
    return {**_cell_inputs(wc.experiment, wc.cell), **stale_inputs(wc.experiment, [wc.cell])}


def stale_inputs(experiment, names):
    """A cell on disk measured with other settings (its digest, harness.plan.reuse): the
    marker of rule supersede, which sets it aside first; the job then measures it again."""
    return {} if REPLOT else hreuse.stale_inputs(CFG, LOCK, experiment, names)


def _rep(wc):
    if hasattr(wc, "rep"):
        return int(wc.rep)
    return hplan.parse_cell(CFG, wc.experiment, wc.cell if hasattr(wc, "cell") else wc.unit)["rep"]


def block_group(wc):
    """The group of a cell's block (run_cell, run_group_* and cell_measured): on a cluster
    the block's cells, chained by their markers, are one job on one node, run back to back
    in the block's order (Snakemake runs a group as one job; run locally, groups are ignored)."""
    return f"block_{wc.experiment}_r{_rep(wc)}"


def cell_block(wc):
    rep = hplan.parse_cell(CFG, wc.experiment, wc.cell)["rep"]
    names, seed = block_order(wc.experiment, rep)
    return json.dumps(hblocks.info(names, wc.cell, rep, seed))


# Experiments whose cells differ in their users run as groups (harness.plan.cells.grouped):
# one job per group, one server start, the users swept inside it (rules run_group_*).
GROUPED = [x for x in EXPERIMENTS if hplan.grouped(CFG, x)]
# pairing: duet (harness.plan.duet): an experiment with a duet factor runs its blocks as
# units, one job each (run_duet): a pair's two cells, at once on twin lanes where their
# width has twins, else one after the other, or a lone cell; the job writes a temporary
# unit directory, whose cells duet_cell links (cp -al) to their data/raw paths.
DUET = [x for x in EXPERIMENTS if hduet.active(CFG, x) and x not in GROUPED]


rule run_cell:
    input:
        unpack(cell_inputs),
    output:
        directory("data/raw/{study}/{experiment}/{cell}"),
    log:
        "logs/run_cell/{study}/{experiment}/{cell}.log",
    benchmark:
        "benchmarks/run_cell/{study}/{experiment}/{cell}.tsv"
    wildcard_constraints:
        experiment=_alternatives([x for x in EXPERIMENTS if x not in GROUPED and x not in DUET]),
    params:
        spec=lambda wc: hplan.cell_spec(CFG, wc.experiment),
        block=cell_block,
    group:
        block_group
    resources:
        **lane_resources(lambda wc: cell_lane(wc.experiment, wc.cell)),
    shell:
        "{HARNESS} run-cell --cell {wildcards.cell} --cell-spec '{params.spec}' --block '{params.block}' {resources.lane}"
        " --build-dir {input.build} --source {input.source} --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"


def group_run(wc):
    """(cell names of a group in their block order, their output dirs, the first's block info)."""
    rep = int(wc.rep)
    names, seed = block_order(wc.experiment, rep)
    run = hblocks.group_run(CFG, wc.experiment, wc.head, rep, names)
    return run, [hplan.cell_dir(CFG, wc.experiment, n) for n in run], json.dumps(hblocks.info(names, run[0], rep, seed))


def group_inputs(wc):
    return {**_cell_inputs(wc.experiment, group_run(wc)[0][0]), **stale_inputs(wc.experiment, group_run(wc)[0])}


# profiles/slurm gives a measurement's job step the node's CPUs (cpus_per_task:
# $MYSQLBENCH_NODE_CPUS): with fewer, SLURM binds the step to them and the cores plan
# sees only those. Without a positive count there: stop before anything runs.
_NODE_CPUS_PROBLEM = hcluster.node_cpus_problem(workflow.resource_settings.overwrite_resources,
                                                os.environ.get(hcluster.NODE_CPUS, ""))
if _NODE_CPUS_PROBLEM:
    raise WorkflowError(_NODE_CPUS_PROBLEM)


# One rule per users sweep of the grouped experiments: its outputs are the group's cells.
# Each takes the resources a profile sets for run_cell (profiles/slurm: a whole node).
# Snakemake has no public way to give a rule another rule's set-resources (they match rule
# names exactly, and these names are made here): its parsed mapping is what both a rule's
# declaration and a cluster job's own --set-resources read, so run_cell's entry is copied there.
_SET = getattr(workflow.resource_settings, "_parsed_overwrite_resources", None)
for _users in sorted({tuple(CFG["experiments"][x]["users"]) for x in GROUPED}):
    _name = "run_group_u" + "_".join(map(str, _users))
    if isinstance(_SET, dict) and "run_cell" in _SET:
        _SET.setdefault(_name, _SET["run_cell"])

    rule:
        name:
            _name
        input:
            unpack(group_inputs),
        output:
            [directory(f"data/raw/{{study}}/{{experiment}}/{{head}}_u{u}_r{{rep}}") for u in _users],
        log:
            "logs/run_group/{study}/{experiment}/{head}_r{rep}.log",
        benchmark:
            "benchmarks/run_group/{study}/{experiment}/{head}_r{rep}.tsv"
        wildcard_constraints:
            experiment=_alternatives([x for x in GROUPED if tuple(CFG["experiments"][x]["users"]) == _users]),
            head=r"[A-Za-z0-9.-]+(?:_[A-Za-z0-9.-]+)*",
        params:
            spec=lambda wc: hplan.cell_spec(CFG, wc.experiment),
            cells=lambda wc: " ".join(group_run(wc)[0]),
            outs=lambda wc: " ".join(group_run(wc)[1]),
            block=lambda wc: group_run(wc)[2],
        group:
            block_group
        resources:
            **lane_resources(lambda wc: cell_lane(wc.experiment, group_run(wc)[0][0])),
        shell:
            "{HARNESS} run-cell --cell {params.cells} --cell-spec '{params.spec}' --block '{params.block}' {resources.lane}"
            " --build-dir {input.build} --source {input.source} --out {params.outs} > {log} 2>&1"
            " || (tail -3 {log}; exit 1)"


_DUET = {}


_DUET_UNITS = {}


def duet_unit(experiment, cell):
    """The unit (pair or lone cell, in block order) of `cell`: each block's units computed once."""
    rep = hplan.parse_cell(CFG, experiment, cell)["rep"]
    if (experiment, rep) not in _DUET_UNITS:
        _DUET_UNITS[experiment, rep] = hduet.unit_index(CFG, experiment, block_order(experiment, rep)[0])
    return _DUET_UNITS[experiment, rep][cell]


def duet_run(wc):
    """(the unit's cells in block order, each one's run-cell --lane JSON ('' without lanes), at once or
    not, the lanes the job holds): harness.plan.duet.unit_lanes, computed once per unit."""
    key = (wc.experiment, wc.unit)
    if key not in _DUET:
        unit = duet_unit(wc.experiment, wc.unit)
        if unit[0] != wc.unit:
            raise ValueError(f"{wc.unit} of {wc.experiment} is not the first cell of its duet unit {unit}")
        cell = hplan.parse_cell(CFG, wc.experiment, wc.unit)
        rep, cores = cell["rep"], int(cell.get("cores") or 1)
        if LANES is None:
            out = (unit, [""] * len(unit), False, [])
        else:
            per, at_once, held = hduet.unit_lanes(CFG, LANES, EXPERIMENTS, wc.experiment, unit, rep, cores)
            out = (unit, [json.dumps(x) for x in per], at_once, held)
        _DUET[key] = out
    return _DUET[key]


def duet_inputs(wc):
    unit = duet_run(wc)[0]
    inputs = {**_cell_inputs(wc.experiment, unit[0]), **stale_inputs(wc.experiment, unit)}
    if len(unit) == 2 and not REPLOT:
        b = hplan.parse_cell(CFG, wc.experiment, unit[1])
        inputs["build_b"] = f"resources/builds/{b['build']}"
        inputs["source_b"] = hplan.dataset_path(CFG, wc.experiment, unit[1]) or f"resources/templates/{b['build']}"
    return inputs


def _duet_words(wc, input, key):
    return " ".join(shlex.quote(str(input[k])) for k in (key, f"{key}_b") if k in input.keys())


if DUET:
    if isinstance(_SET, dict) and "run_cell" in _SET:
        _SET.setdefault("run_duet", _SET["run_cell"])

    rule run_duet:
        input:
            unpack(duet_inputs),
        output:
            temp(directory("data/duet/{experiment}/{unit}")),
        log:
            "logs/run_duet/{experiment}/{unit}.log",
        benchmark:
            "benchmarks/run_duet/{experiment}/{unit}.tsv"
        wildcard_constraints:
            experiment=_alternatives(DUET),
            unit=r"[A-Za-z0-9_.-]+",
        params:
            spec=lambda wc: hplan.cell_spec(CFG, wc.experiment),
            cells=lambda wc: " ".join(duet_run(wc)[0]),
            pair=lambda wc: " ".join(hduet.sides(CFG, wc.experiment, duet_run(wc)[0])),
            blocks=lambda wc: " ".join(shlex.quote(json.dumps(hblocks.info(block_order(wc.experiment, _rep(wc))[0], c,
                                                                          _rep(wc), block_order(wc.experiment, _rep(wc))[1])))
                                       for c in duet_run(wc)[0]),
            logs=lambda wc: " ".join(f"logs/run_cell/{EXPERIMENTS[wc.experiment]['study']}/{wc.experiment}/{c}.log"
                                     for c in duet_run(wc)[0]),
            builds=lambda wc, input: _duet_words(wc, input, "build"),
            sources=lambda wc, input: _duet_words(wc, input, "source"),
        group:
            block_group
        resources:
            # lane<i>: the lanes it holds; lane, at_once: strings (not params: a change of
            # lanes re-runs nothing, as for run_cell)
            **{f"lane{i}": (lambda wc, i=i: int(i in duet_run(wc)[3])) for i in range(LANES.count if LANES else 0)},
            lane=lambda wc: ("--lane " + " ".join(shlex.quote(x) for x in duet_run(wc)[1])) if LANES else "",
            at_once=lambda wc: "--at-once" if duet_run(wc)[2] else "",
        shell:
            "{HARNESS} run-duet --cell {params.cells} --pair {params.pair} --cell-spec '{params.spec}' --block {params.blocks}"
            " {resources.lane} {resources.at_once} --build-dir {params.builds} --source {params.sources}"
            " --log {params.logs} --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"

    # A duet experiment's cell: linked from its unit's directory (hard links: no copy, and
    # the cell stays when the temporary unit directory goes; data/duet and data/raw on one
    # file system), under a temporary name first. Replotting: never measured.
    rule duet_cell:
        input:
            lambda wc: [] if REPLOT else f"data/duet/{wc.experiment}/{duet_unit(wc.experiment, wc.cell)[0]}",
        output:
            directory("data/raw/{study}/{experiment}/{cell}"),
        wildcard_constraints:
            experiment=_alternatives(DUET),
        group:
            block_group
        shell:
            "rm -rf {output}.link-tmp && cp -al {input}/{wildcards.cell} {output}.link-tmp && mv {output}.link-tmp {output}"


# A cell of other settings than this profile plans (harness.plan.reuse: its digest) is set
# aside under data/partial/ before its job measures it again: nothing measured is lost.
rule supersede:
    localrule: True
    output:
        "data/order/{experiment}/{cell}.superseded-{tag}",
    log:
        "logs/order/{experiment}/{cell}.superseded-{tag}.log",
    wildcard_constraints:
        tag=r"[0-9a-f]{12}",
    params:
        cell_dir=lambda wc: hplan.cell_dir(CFG, wc.experiment, wc.cell),
    shell:
        "{HARNESS} supersede --cell-dir {params.cell_dir} --tag {wildcards.tag} --out {output} > {log} 2>&1"
        " || (tail -3 {log}; exit 1)"


# A cell's marker: the next cell of its block waits for it (not for the cell's directory,
# which is absent while the cell is measured again).
rule cell_measured:
    input:
        lambda wc: hplan.cell_dir(CFG, wc.experiment, wc.cell),
    output:
        touch("data/order/{experiment}/{cell}.measured"),
    group:
        block_group


def open_inputs(wc):
    """Block r opens when block r-n is done, n the lanes: n blocks of an experiment at a time.
    On a cluster every block opens at once: a block is a job of a whole node, the blocks
    between two looks run side by side on as many nodes as are free (those after a look are
    planned only once it has run), and a block's pairs are compared inside it, so a node's
    own offset cancels as a lane's does."""
    if _CLUSTER:
        return []
    after = hblocks.opened_by(int(wc.rep), LANES.count if LANES else 1)
    return [] if after is None else [ancient(hblocks.done_path(wc.experiment, after))]


def open_params(wc):
    rep = int(wc.rep)
    names, seed = block_order(wc.experiment, rep)
    return {"seed": seed, "order": " ".join(names), "cells": " ".join(hplan.cells(CFG, LOCK, wc.experiment, rep))}


# A block opens after block r-<lanes> is done (on a cluster at once); an interrupted block is opened again
# as its next attempt, the cells the interrupted one left set aside under data/partial/.
rule block_open:
    input:
        open_inputs,
    output:
        "data/order/{experiment}.r{rep}.a{attempt}.open",
    log:
        "logs/order/{experiment}.r{rep}.a{attempt}.open.log",
    # No params: the order and cells depend on the profile, and a params change (another
    # profile's run of the experiment left the .open) re-ran block_open and masked the cells
    # that reach it only through their ancient .open (Snakemake planned block_open alone, so
    # a cell asked for as a target was not measured in that run)
    run:
        p = open_params(wildcards)
        shell("{HARNESS} block-open --experiment {wildcards.experiment} --block {wildcards.rep}"
              " --attempt {wildcards.attempt} --seed {p[seed]} --order {p[order]}"
              " --cells {p[cells]} --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)")


# A block is done when all its cells exist.
rule repetition_done:
    input:
        lambda wc: cells(wc.experiment, int(wc.rep)),
    output:
        touch("data/order/{experiment}.r{rep}.done"),
    log:
        "logs/order/{experiment}.r{rep}.log",


def look_inputs(wc):
    n = look_schedule(wc.experiment)[int(wc.look) - 1]
    return {"cells": hplan.cells(CFG, LOCK, wc.experiment, blocks=n),
            "blocks": [hblocks.done_path(wc.experiment, r) for r in range(1, n + 1)]}


# A look after blocks 1..n (harness.analysis.intervals.look_schedule): decided or not
# (harness.analysis.looks); the blocks up to the next look are planned only if not.
checkpoint look:
    input:
        unpack(look_inputs),
    output:
        "data/order/{experiment}.look{look}.json",
    log:
        "logs/order/{experiment}.look{look}.log",
    params:
        blocks=lambda wc: look_schedule(wc.experiment)[int(wc.look) - 1],
        cfg=json.dumps(CFG, sort_keys=True),
    shell:
        "{HARNESS} decided --experiment {wildcards.experiment} --look {wildcards.look}"
        " --blocks {params.blocks} --cells {input.cells} --config-json {params.cfg:q}"
        " --out {output} > {log} 2>&1 || (tail -3 {log}; exit 1)"
