"""Load, default-fill and validate a pipeline profile.

The defaults are config/default.yaml and nothing else: a profile is merged onto it
(`with_defaults`), each experiment takes experiment_defaults' keys it leaves out
(`apply_experiment_defaults`), and the schema only checks types and ranges.

Every error is one line that names the offending key and says how to fix it,
and is raised before anything is fetched or any server starts.
"""
from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from harness import builds, paths
from harness.analysis import tidywrite
from harness.measure import coreplan, factors, kinds, mycnf, placement
from harness.measure.topology import Cpu, Topology
from harness.plan import repetitions

if TYPE_CHECKING:  # imported where validation runs (validate_schema): its import costs every cell's job
    import jsonschema

DEFAULTS_FILE = paths.CONFIG / "default.yaml"



class ConfigError(Exception):
    """A bad profile: the message is one line naming the key and the fix."""


def _path(parts) -> str:
    return ".".join(str(p) for p in parts) or "<top level>"


def _hint(err: jsonschema.ValidationError) -> str:
    v = err.validator
    if v == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        return f"remove it; allowed keys here: {', '.join(allowed)}" if allowed else "remove it"
    if v == "enum":
        return "use one of: " + ", ".join(str(x) for x in err.validator_value)
    if v == "type":
        return f"give a value of type {err.validator_value}"
    if v in ("minimum", "exclusiveMinimum"):
        return f"use a value above {'or equal to ' if v == 'minimum' else ''}{err.validator_value}"
    if v == "maximum":
        return f"use a value of at most {err.validator_value}"
    if v == "required":
        return "add it (see config/default.yaml for an example)"
    if v == "uniqueItems":
        return "list each value once"
    if v in ("minItems", "minProperties"):
        return "give at least one entry"
    if v == "pattern":
        return f"match the pattern {err.validator_value}"
    if v in ("oneOf", "anyOf"):
        return "give one of the forms workflow/schemas/config.schema.yaml describes (as config/default.yaml)"
    return "see workflow/schemas/config.schema.yaml"


def defaults() -> dict:
    """config/default.yaml: the one place a default value lives."""
    return paths.defaults()


STEP_CHECK_VAR = "MYSQLBENCH_SLURM_STEP_CHECK"  # 0: plan on whatever CPUs the step holds


def _job_cpus_here(env) -> int | None:
    """This node's entry of SLURM_JOB_CPUS_PER_NODE ("64", "64(x2),32"), by SLURM_NODEID."""
    counts: list[int] = []
    for part in env.get("SLURM_JOB_CPUS_PER_NODE", "").split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            return None
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    node = env.get("SLURM_NODEID", "0")
    return counts[int(node)] if node.isdigit() and int(node) < len(counts) else None


def slurm_step_check(n: int, env=None) -> None:
    """Inside a SLURM job, a step bound to fewer CPUs than the job holds on its node
    (this node's entry of SLURM_JOB_CPUS_PER_NODE) would be planned on those alone:
    stop, naming the setting that gives the step the node (a rule's cpus_per_task;
    profiles/slurm reads it from MYSQLBENCH_NODE_CPUS). SLURM_CPUS_ON_NODE is no help: in
    a step it is the step's count. Only on a compute node (an `salloc` shell on the
    submit host has the job's variables but the submit host's CPUs); not when the job
    uses one thread per core (SLURM_HINT=nomultithread, SLURM_THREADS_PER_CORE=1: SLURM
    counts the threads it leaves idle); not with MYSQLBENCH_SLURM_STEP_CHECK=0 (a run
    narrowed on purpose). `n`: the CPUs this process may use."""
    env = os.environ if env is None else env
    if not (env.get("SLURM_JOB_ID") and env.get("SLURMD_NODENAME")) or env.get(STEP_CHECK_VAR) == "0":
        return
    if "nomultithread" in env.get("SLURM_HINT", "") or env.get("SLURM_THREADS_PER_CORE") == "1":
        return
    held = _job_cpus_here(env)
    if held is not None and held > n:
        raise ConfigError(
            f"cpus_per_task: this SLURM job step may use {n} of the {held} CPUs its job holds on node "
            f"{env['SLURMD_NODENAME']} (SLURM_JOB_CPUS_PER_NODE), so the cores plan would see only {n}; "
            f"give the measurement rules cpus_per_task: {held} (profiles/slurm: MYSQLBENCH_NODE_CPUS={held}), "
            f"or set {STEP_CHECK_VAR}=0 to plan on these {n}")


def with_defaults(cfg: dict) -> dict:
    """`cfg` merged onto config/default.yaml (as Snakemake merges a --configfile onto it), less
    the keys the schema requires of a profile (its name, builds and experiments: a profile's
    own, never filled in). Merging a profile already merged onto default.yaml changes nothing."""
    base = defaults()
    for key in _schema()["required"]:
        base.pop(key, None)
    return _fill(copy.deepcopy(cfg), base)


def _fill(node: dict, base: dict) -> dict:
    """deep_merge(base, node) in node's key order (keys only base has come last)."""
    for k, v in base.items():
        if k not in node:
            node[k] = copy.deepcopy(v)
        elif isinstance(v, dict) and isinstance(node[k], dict):
            _fill(node[k], v)
    return node


# Keys of an experiment each kind uses (experiment_defaults fills only these), beside those
# its dataset or step script brings (kind_keys).
KIND_KEYS = {
    "throughput": {"workload", "dataset", "engines", "tables", "table_size", "cores", "users",
                   "repetitions", "variants", "builds", "enabled"},
    "steps": {"script", "rows", "engines", "cores", "repetitions", "variants", "builds", "enabled"},
}


def kind_keys(kind: str) -> set[str]:
    """The keys an experiment of `kind` uses: KIND_KEYS', and those the datasets or step
    scripts it may name read beside them (their SPEC_KEYS, e.g. a dataset's corpus)."""
    from harness import registry
    from harness.measure import datasets
    own = KIND_KEYS.get(kind, set())
    parts = {"dataset": datasets.all_datasets(), "script": registry.step_scripts()}
    return own | {k for key, mods in parts.items() if key in own
                  for m in mods.values() for k in getattr(m, "SPEC_KEYS", ())}


def _factor_schema() -> dict:
    """experiments.<x>.variants: one property per factor of harness.measure.factors, its values as an enum."""
    props = {}
    for f in factors.FACTORS.values():
        items = {"type": "integer", "minimum": 0} if f.cast is int else {"enum": list(f.values)}
        props[f.name] = {"type": "array", "minItems": 1, "uniqueItems": True, "items": items,
                         "description": f.words}
    return props


def registry_enums() -> dict:
    """The experiment keys whose values the registries list (harness.studies and the
    workloads and datasets they bring): {key: allowed values}. The schema file's enums
    for them are these (tests/unit/test_config.py), here filled in from the registries so that
    a study found on $MYSQLBENCH_STUDY_PATH is accepted too."""
    from harness import registry as studies
    from harness.measure import datasets, sysbench
    return {"study": studies.codes(), "workload": list(sysbench.all_workloads()),
            "dataset": list(datasets.all_datasets()), "script": list(studies.step_scripts())}


def _schema() -> dict:
    schema = yaml.safe_load(paths.SCHEMA.read_text())
    experiment = schema["$defs"]["experiment"]["properties"]
    for key, values in registry_enums().items():
        experiment[key]["enum"] = values
    variants = experiment["variants"]
    variants["properties"] = _factor_schema()
    variants["additionalProperties"] = False
    return schema


def apply_experiment_defaults(cfg: dict) -> dict:
    """Each experiment takes its kind (experiment_defaults.kind unless it sets one), then the
    experiment_defaults keys its kind uses and it does not set; a dict it sets (corpus) takes the
    keys it leaves out. `cfg` is a profile merged onto config/default.yaml."""
    out = copy.deepcopy(cfg)
    defaults = out.get("experiment_defaults")
    if not isinstance(defaults, dict):
        return out
    for name, spec in (out.get("experiments") or {}).items():
        if not isinstance(spec, dict):
            continue
        kind = spec["kind"] if "kind" in spec else defaults.get("kind")
        keys = kind_keys(kind) | {"kind"}
        for k, v in defaults.items():
            if k not in keys:
                continue
            if k not in spec:
                spec[k] = copy.deepcopy(v)
            elif isinstance(v, dict) and isinstance(spec[k], dict):
                spec[k] = deep_merge(copy.deepcopy(v), spec[k])
    return out


def check_dataset(spec: dict, where: str) -> None:
    """The dataset's own check of an experiment's keys (a dataset module's `check_spec`,
    e.g. a corpus archive: present, its size and sha256), before anything runs."""
    from harness.measure import datasets
    check = getattr(datasets.all_datasets().get(spec["dataset"]), "check_spec", None)
    if check is not None:
        try:
            check(spec, where)
        except ValueError as e:
            raise ConfigError(str(e)) from None


def validate_schema(cfg: dict) -> dict:
    import jsonschema  # here, not at the top: every cell's job imports this module, and
    #                   jsonschema's import (~0.25 s) is a cost per cell that only validation needs
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: (len(e.absolute_path), e.path))
    if errors:
        err = errors[0]
        path = list(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            path = path + extra[:1]
            msg = "unknown key"
        elif err.validator == "required":
            missing = [k for k in err.validator_value if k not in err.instance]
            path = path + missing[:1]
            msg = "required key is missing"
        else:
            msg = err.message
        raise ConfigError(f"{_path(path)}: {msg}; {_hint(err)}")
    return copy.deepcopy(cfg)


def deep_merge(base: dict, over: dict) -> dict:
    """Merge `over` into `base` in place: nested dicts merge, other values replace."""
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def host_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def resolve(cfg: dict, lock_path: Path = paths.LOCK, cpus: list[int] | None = None,
            topo: "Topology | None" = None) -> dict:
    """Defaults (config/default.yaml), schema check, then the checks that need the host and the lock."""
    cfg = _merged_profile(cfg)
    out = validate_schema(apply_experiment_defaults(cfg))
    check_pairing(out)
    cpus_given = cpus is not None
    cpus = host_cpus() if cpus is None else cpus
    if topo is not None:
        cpus = list(topo.ids)
    client = out["placement"]["client_cpus"]
    _check_cpus(cpus, client, slurm=not cpus_given and topo is None)
    lock = _load_lock(lock_path)
    topo = topo if topo is not None else topology(cpus if cpus_given else None)
    host_plan = coreplan.plan(topo, client_min=client)
    _check_mems(out["placement"]["mems"], topo)
    _check_builds(out, lock, lock_path)
    _check_server_options(out, lock)
    for exp, spec in out["experiments"].items():
        _check_experiment(out, exp, cfg["experiments"][exp], lock, lock_path)
        try:
            spec["cores"] = plan_cores(spec["cores"], host_plan, topo, f"experiments.{exp}.cores", client,
                                       study=spec["study"])
        except coreplan.CoresError as e:
            raise ConfigError(str(e)) from None
    mark_unread(out, lock, topo)
    out["host"] = {"cpus": len(cpus), "plan": host_plan.describe(), "counts": host_plan.counts}
    return out


def _merged_profile(cfg: dict) -> dict:
    """The profile merged onto the defaults, its experiment_defaults' keys and placement.lanes
    checked (before the schema, whose messages for them say less)."""
    if not isinstance(cfg, dict) or not cfg:
        raise ConfigError("<top level>: empty config; pass a profile, e.g. --configfile config/smoke.yaml")
    cfg = with_defaults(cfg)
    if isinstance(cfg.get("experiment_defaults"), dict):
        allowed = set().union(*map(kind_keys, KIND_KEYS)) | {"kind"}
        for k in cfg["experiment_defaults"]:
            if k not in allowed:
                raise ConfigError(f"experiment_defaults.{k}: unknown key; allowed: {', '.join(sorted(allowed))}")
    lanes = cfg["placement"]["lanes"]
    if lanes != "auto" and (not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1):
        raise ConfigError(f"placement.lanes: {lanes!r} is neither auto nor a positive number of lanes; "
                          f"write lanes: auto (harness.plan.lanes) or e.g. lanes: 2")
    return cfg


def _check_cpus(cpus: list[int], client: int, slurm: bool) -> None:
    """At least one CPU for mysqld and one for sysbench (and, in a SLURM step, all its node's)."""
    if slurm:
        slurm_step_check(len(cpus))
    if len(cpus) < 2:
        raise ConfigError(f"placement: this host lets the pipeline use {len(cpus)} CPU; it needs at least 2 "
                          f"(one for mysqld, one for sysbench): run on a bigger host or widen the affinity")
    if len(cpus) - client < 1:
        raise ConfigError(
            f"placement.client_cpus: {client} leaves no CPU for mysqld on this host's {len(cpus)} CPUs; "
            f"use at most {len(cpus) - 1}")


def _load_lock(lock_path: Path) -> dict:
    try:
        return builds.load_lock(lock_path)
    except builds.BuildError as e:
        raise ConfigError(str(e)) from None


def _check_mems(mems, topo) -> None:
    """placement.mems, before any server starts: nodes this host (its plan's topology) allows."""
    if isinstance(mems, list):
        try:
            placement.run_mems(mems, list(topo.mems) or None)
        except placement.PlacementError as e:
            raise ConfigError(str(e)) from None


def _check_builds(out: dict, lock: dict, lock_path: Path) -> None:
    """The profile's builds and each experiment's: in the lock, and fetched if a download."""
    _check_build_names(out["builds"], "builds", lock, lock_path)
    for exp, spec in out["experiments"].items():
        if "builds" in spec:
            _check_build_names(spec["builds"], f"experiments.{exp}.builds", lock, lock_path)


def _check_build_names(names, where: str, lock: dict, lock_path: Path) -> None:
    for i, name in enumerate(names):
        if name not in lock:
            raise ConfigError(
                f"{where}.{i}: '{name}' is not in {lock_path.name}; use one of: {', '.join(sorted(lock))}")
        if lock[name].get("available_offline") is False and not (paths.BUILDS / name).exists():
            raise ConfigError(
                f"{where}.{i}: '{name}' is a download from the internet, not fetched yet; run "
                f"`python -m harness fetch-build --name {name} --out resources/builds/{name}` on a host with "
                f"internet (or add --artifact FILE for a file downloaded elsewhere), or remove it")


def _check_server_options(out: dict, lock: dict) -> None:
    """server.options: none the harness sets itself, each a mysqld option of every build used."""
    used = set(out["builds"]) | {b for spec in out["experiments"].values() for b in spec.get("builds", out["builds"])}
    for key in out["server"]["options"]:
        if mycnf.reserved(key):
            raise ConfigError(f"server.options.{key}: is set by the harness for every instance; remove it")
        for name in sorted(used):
            family = lock[name]["family"]
            if not mycnf.known_option(family, key):
                raise ConfigError(
                    f"server.options.{key}: not a mysqld option of build family {family} ({name}); "
                    f"check the spelling against `mysqld --verbose --help` or remove it")


def _check_experiment(out: dict, exp: str, raw: dict, lock: dict, lock_path: Path) -> None:
    """One experiment: its repetitions decide at claims.level, its keys are its kind's, its
    variants mean something for it, its dataset, workload or step script accept it."""
    spec, kind, where = out["experiments"][exp], out["experiments"][exp]["kind"], f"experiments.{exp}"
    claims = out["claims"]
    reps_key = f"{where}.repetitions" if "repetitions" in raw else "experiment_defaults.repetitions"
    # a disabled experiment's repetitions need only make a look schedule (it decides nothing)
    why = (repetitions.check(spec["repetitions"], claims["level"], reps_key, claims["decide"]) if spec["enabled"]
           else repetitions.check_bounds(spec["repetitions"], reps_key))
    if why:
        raise ConfigError(why)
    keys = kind_keys(kind)
    for key in raw:
        if key not in keys | {"kind", "study"}:
            raise ConfigError(f"{where}.{key}: not a key of a {kind} experiment; remove it "
                              f"(a {kind} experiment uses: {', '.join(sorted(keys))})")
    for name in spec["variants"]:
        _check_variant(spec, kind, exp, name)
    _check_parts(spec, where, lock, lock_path)


def _check_variant(spec: dict, kind: str, exp: str, name: str) -> None:
    f, where = factors.FACTORS[name], f"experiments.{exp}.variants.{name}"
    if not kinds.KINDS[kind].SYSBENCH and not (f.engines is None or f.steps):
        raise ConfigError(f"{where}: is not set in steps cells; remove it "
                          f"(steps cells take: {', '.join(factors.step_settings({}))})")
    if f.workloads is not None and spec.get("workload") not in f.workloads:
        raise ConfigError(f"{where}: means nothing for the {spec.get('workload', kind)} workload; remove it "
                          f"or use one of: {', '.join(f.workloads)}")
    if f.engines is not None and not any(e.split("-")[0] in f.engines for e in spec["engines"]):
        raise ConfigError(f"{where}: applies only to {', '.join(f.engines)}; "
                          f"add one to experiments.{exp}.engines or remove it")


def _check_parts(spec: dict, where: str, lock: dict, lock_path: Path) -> None:
    """What the experiment's workload and dataset (a throughput experiment) or step script
    (a steps one) say of it: a workload that runs on one dataset only, a dataset that serves
    one workload or fixed tables, and their own checks (`check_spec`)."""
    if "dataset" in spec:
        _check_workload_dataset(spec, where)
        check_dataset(spec, where)
    if "script" in spec:
        from harness import registry
        check = getattr(registry.step_scripts().get(spec["script"]), "check_spec", None)
        if check is not None:
            try:
                check(spec, where, lock, lock_path.name)
            except ValueError as e:
                raise ConfigError(str(e)) from None


def _check_workload_dataset(spec: dict, where: str) -> None:
    from harness.measure import datasets, sysbench
    workload, dataset = spec["workload"], spec["dataset"]
    wants = sysbench.all_workloads().get(workload, {}).get("dataset")
    serves = getattr(datasets.all_datasets().get(dataset), "WORKLOAD", None)
    for w, d in ((workload, wants), (serves, dataset)):
        if w and d and (workload, dataset) != (w, d):
            raise ConfigError(f"{where}.dataset: the {w} workload runs on the {d} dataset and only it; "
                              f"set workload {w} with dataset {d}, or neither")
    tables = getattr(datasets.all_datasets().get(dataset), "TABLES", None)
    if tables is not None and spec["tables"] != tables:
        what = "one table" if tables == [1] else f"tables {', '.join(map(str, tables))}"
        raise ConfigError(f"{where}.tables: the {dataset} dataset is {what} per engine; remove tables")


def check_pairing(cfg: dict) -> None:
    """pairing: duet runs a pair's two sides at once, each on its own server start: not with
    sysbench.users_on_one_server (a group sweeps its users on one server)."""
    if cfg.get("pairing") == "duet" and cfg["sysbench"].get("users_on_one_server") and not cfg.get("replot"):
        raise ConfigError("pairing: duet runs each side of a pair on its own server start, but "
                          "sysbench.users_on_one_server: true sweeps users on one; set pairing: block "
                          "or users_on_one_server: false")


def mark_unread(out: dict, lock: dict, topo) -> None:
    """An experiment that claims or figures name but none this host can use reads is not
    planned: `enabled: false` and `not_planned` (why) in the resolved profile, so nothing
    downstream waits for it and its claims say why (harness.plan.reads)."""
    from harness.plan import reads
    for exp, why in reads.unread(out, lock, topo).items():
        out["experiments"][exp]["enabled"] = False
        out["experiments"][exp]["not_planned"] = why


def plan_cores(value, host_plan, topo, key: str, client_min: int, study: str | None = None) -> list[int]:
    """`auto`: every core count the host plan has (the studies' where they fit); `max`: its largest;
    `study`: those the experiment's study ran (its CORES), else the largest; a list: checked to fit."""
    if value == "auto":
        return list(host_plan.counts)
    if value == "max":
        return host_plan.counts[-1:]
    if value == "study":
        from harness import registry
        own = registry.study_cores(study) if study else None
        odd = sorted(set(own or ()) - set(coreplan.PLANNED))  # counts a plan never has
        if not own or odd:
            why = (f"declares core counts {odd} that no core plan makes (fix its CORES)" if own else
                   "declares no core counts of its own (CORES)")
            raise ConfigError(f"{key}: study: {study} {why}; use cores: auto, max or a list here (or in "
                              f"experiment_defaults.cores, if it came from there)")
        return [n for n in host_plan.counts if n in own] or host_plan.counts[-1:]
    return coreplan.resolve_cores(value, topo, key=key, client_min=client_min)


def topology(cpus: list[int] | None = None) -> Topology:
    """This host's topology (hwloc, else sysfs: harness.measure.topology), or a flat one of `cpus` (one
    core each, one socket) for a host described only by its CPU list."""
    if cpus is None:
        return Topology.live()
    return Topology(cpus=tuple(Cpu(cpu=c, package=0, core=c, siblings=(c,), node=0)
                                         for c in cpus), source="cpu list")


def tidy_captures() -> list[str]:
    """The long tables a throughput experiment's tidy step writes beside its runs."""
    return list(tidywrite.CAPTURES)


def enabled_experiments(cfg: dict) -> dict:
    return {k: v for k, v in cfg["experiments"].items() if v["enabled"]}
