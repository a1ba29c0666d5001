"""What a cell measured, as one digest: `settings_digest` in every manifest.

    from harness.measure import digest
    ins = digest.inputs(req, cell, lock)   # req: harness.plan.cells.cell_spec's JSON, parsed
    digest.of(ins)                         # sha256 of digest.canonical(ins)

The inputs are every setting that changes what a cell measures, and nothing else:

- `cell`: the cell's own levels from its name (build, engine, variant, tables, cores,
  users), without its repetition (two repetitions of a setting measure the same thing);
- `kind` and `spec`: the experiment's block (workload or script, dataset, table size,
  corpus, rows, users swept: a server's max_connections is sized from the most, engines
  chained in a steps cell, legacy), without the lists whose cell's own value is in the
  name (engines of a throughput cell, tables, cores, variants) and without what only
  says how often or whether to measure (SPEC_IGNORED);
- `settings`: the run-wide ones (warm-up and measured window, seed, rand type, report
  interval, client CPUs, placement mechanism and memory nodes, backend, my.cnf options),
  without the server's start and stop timeouts (SETTINGS_IGNORED);
- `fresh_server`: false when the cell's users run on one server start (a group);
- `build` (and `legacy_build` for steps with the PostgreSQL stand-in): the lock entry's
  identity (BUILD_KEYS: version, family and hashes);
- `script_sha256`: the sysbench driver (wrapper and the stock scripts it loads) or the
  step script's module with the modules of its own study package it imports;
- `server` (a build in the lock): what the harness's code sets on the cell's server and
  driver beyond the profile: the build family's my.cnf defaults (harness.measure.mycnf),
  the options its dataset or step script and its factors' values give
  (harness.measure.cell.server_setup, the function the measurement calls), and the
  sysbench options of its factors' values.

Not in it: output paths, the block's order and position, lanes, figures, looks,
repetition bounds, the profile's name, the host (a bundle keys hosts apart). The
same function is called where a cell is measured (`harness run-cell`, from the
--cell-spec it is given) and where the plan asks whether a cell on disk is the one
this profile wants (harness.plan.reuse), so the two agree by construction.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os

VERSION = 2  # of the inputs' rule (2: `server`, and a step script's own imports): a change of this module's rule changes every digest
PROFILE_VAR = "MYSQLBENCH_PROFILE"  # the pipeline sets it (common.smk); run-cell records it
SPEC_IGNORED = ("enabled", "builds", "repetitions", "not_planned", "draws")
SETTINGS_IGNORED = ("startup_timeout_s", "shutdown_timeout_s")
# a name part -> the experiment key listing every level of it (the cell's own level is in `cell`)
NAMED_LISTS = {"engine": "engines", "tables": "tables", "cores": "cores", "variant": "variants"}
BUILD_KEYS = ("version", "family", "mysqld_sha256", "artifact_sha256", "package_version")


def _norm(x):
    """JSON-able and one spelling per value: tuples as lists, integral floats as ints."""
    if isinstance(x, dict):
        return {str(k): _norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_norm(v) for v in x]
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def canonical(inputs: dict) -> str:
    """The canonical JSON of the inputs: keys sorted, no spaces, ASCII."""
    return json.dumps(_norm(inputs), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def of(inputs: dict) -> str:
    """sha256 (hex) of the canonical JSON."""
    return hashlib.sha256(canonical(inputs).encode()).hexdigest()


def build_identity(name: str, entry: dict | None) -> dict:
    return {"name": name, **{k: entry[k] for k in BUILD_KEYS if entry and entry.get(k) is not None}}


def script_sha256(spec: dict) -> str | None:
    """The driver's hash (throughput: harness.measure.sysbench.script_sha256) or the step
    script module's (steps); read once per process (a plan asks for thousands of cells)."""
    return _script_sha256(spec.get("workload"), spec.get("script"))


@functools.lru_cache(maxsize=None)
def _script_sha256(workload: str | None, script: str | None) -> str | None:
    if workload:
        from harness.measure import sysbench
        return sysbench.script_sha256(workload)
    if script:
        from harness import registry
        mod = registry.step_scripts().get(script)
        if mod is None:
            return None
        return _sources_sha256(mod)
    return None


def _sources_sha256(mod) -> str:
    """sha256 of the step script module's source and of every module of its own package it
    imports (a module, or a function or class it took from one), each named, in name order."""
    pkg = mod.__name__.rpartition(".")[0]
    mods = {mod.__name__: mod}
    for v in vars(mod).values():
        m = v if inspect.ismodule(v) else inspect.getmodule(v) if inspect.isfunction(v) or inspect.isclass(v) else None
        if m is not None and pkg and m.__name__.startswith(pkg + "."):
            mods[m.__name__] = m
    h = hashlib.sha256()
    for name in sorted(mods):
        with open(inspect.getsourcefile(mods[name]), "rb") as f:
            h.update(f"{name}\n".encode() + f.read())
    return h.hexdigest()


def server_inputs(spec: dict, cell: dict, family: str) -> dict:
    """The `server` input: the family's my.cnf defaults, the options the cell's kind and
    factors set (harness.measure.cell.server_setup, without the profile's options, which
    `settings` holds) and its factors' sysbench options."""
    from harness.measure import cell as measure_cell, factors, kinds, mycnf
    values, options = measure_cell.server_setup(kinds.KINDS[spec["kind"]], spec, cell, family, {})
    return {"family_defaults": mycnf.family_defaults(family), "options": options,
            "driver": factors.driver_args(values)}


def inputs(req: dict, cell: dict, lock: dict) -> dict:
    """The digest's inputs for `cell` (its name parsed by its kind) of the experiment whose
    cell_spec request is `req`, with the builds of `lock` (module docstring)."""
    spec = dict(req["spec"])
    named = {NAMED_LISTS[k] for k in cell if k in NAMED_LISTS}  # a steps cell names no engine: it chains them
    out_spec = {k: v for k, v in spec.items() if k not in SPEC_IGNORED and k not in named}
    out = {
        "version": VERSION,
        "kind": spec.get("kind"),
        "cell": {k: v for k, v in cell.items() if k != "rep"},
        "spec": out_spec,
        "settings": {k: v for k, v in req["settings"].items() if k not in SETTINGS_IGNORED},
        "fresh_server": "group_by" not in req,
        "build": build_identity(cell["build"], lock.get(cell["build"])),
        "script_sha256": script_sha256(spec),
    }
    entry = lock.get(cell["build"])
    if entry and entry.get("family"):
        out["server"] = server_inputs(spec, cell, entry["family"])
    if spec.get("legacy") and spec.get("legacy_build"):
        out["legacy_build"] = build_identity(spec["legacy_build"], lock.get(spec["legacy_build"]))
    return _norm(out)


def stamp(req: dict, cell: dict, lock: dict) -> dict:
    """The manifest's part: `profile` (the pipeline's, else null), `settings_digest` and
    `digest_inputs` (the object whose canonical JSON the digest hashes)."""
    ins = inputs(req, cell, lock)
    return {"profile": os.environ.get(PROFILE_VAR) or None, "settings_digest": of(ins), "digest_inputs": ins}


def stamps(req: dict, cells: list[str], lock: dict) -> dict:
    """{cell: stamp} for the cells `harness run-cell` measures (named by the request's kind)."""
    from harness.measure import kinds
    return {c: stamp(req, kinds.KINDS[req["spec"]["kind"]].parse(c), lock) for c in cells}


def differs(a: dict, b: dict, prefix: str = "") -> list[str]:
    """The keys (dotted) where two digests' inputs differ: what a reader sees changed."""
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            out += differs(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(f"{prefix}{k}")
    return out
