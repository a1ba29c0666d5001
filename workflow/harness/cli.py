"""`python -m harness <command>`: the one entry point Snakemake rules call.

Every failure ends in one line on stderr and a non-zero exit; expected
errors (bad config, bad build, server or sysbench failure) print no traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from harness import builds, paths, studies
from harness.measure import backends, cell, digest, initdb, placement, procs
from harness.plan import config
from harness.measure.server import ServerError
from harness.measure.sysbench import SysbenchError

EXPECTED = (config.ConfigError, builds.BuildError, ServerError, SysbenchError,
            placement.PlacementError)


def _lock_entry(lock: str, name: str) -> dict:
    entries = builds.load_lock(Path(lock))
    if name not in entries:
        raise builds.BuildError(f"build {name} is not in {lock}")
    return entries[name]


def _load_yaml(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        raise config.ConfigError(f"{path}: no such profile; give an existing file, e.g. config/smoke.yaml")
    try:
        return yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise config.ConfigError(f"{path}:{where}: not valid YAML ({getattr(e, 'problem', e)}); fix the syntax") \
            from None


def cmd_check_config(a):
    cfg = {}
    for f in a.configfile:  # later files override earlier ones, nested keys merged (as Snakemake does)
        config.deep_merge(cfg, _load_yaml(f))
    resolved = config.resolve(cfg)
    if a.out:
        Path(a.out).write_text(yaml.safe_dump(resolved, sort_keys=False))
    print(f"config ok: profile {resolved['profile']}")


def cmd_plan(a):
    from harness.plan import plancmd
    from harness.measure import topology
    cfg = config.defaults()
    for f in a.configfile:  # as `harness estimate` merges them
        config.deep_merge(cfg, _load_yaml(f))
    p = plancmd.build(cfg, topology.read(a.topology) if a.topology else None, with_estimate=not a.no_estimate,
                      tidy_dir=str(paths.TIDY))  # the clone's own cells, whatever the folder it is run from
    print(json.dumps(p, indent=1) if a.json else plancmd.render(p))


def cmd_fetch_build(a):
    entry = _lock_entry(a.lock, a.name)
    builds.fetch(a.name, entry, Path(a.out), Path(a.artifact) if a.artifact else None,
                 lock_path=Path(a.lock), provider=a.provider)


def cmd_verify_build(a):
    entry = _lock_entry(a.lock, a.name)
    print(builds.verify_installed(a.name, entry, Path(a.build_dir)))


def cmd_official_check(a):
    entry = _lock_entry(a.lock, a.name)
    res = initdb.official_check(a.name, entry, Path(a.build_dir), a.official, Path(a.official_dir))
    from harness import atomic
    atomic.write_text(Path(a.out), json.dumps(res, indent=2) + "\n")
    print(f"{a.name} vs {a.official}: {res['verdict']}")


def cmd_bootstrap(a):
    entry = _lock_entry(a.lock, a.name)
    initdb.bootstrap(a.name, entry, Path(a.build_dir), Path(a.out), json.loads(a.options),
                     backend=a.backend, mechanism=a.mechanism)


def cmd_nix_pins(a):
    """nix/builds.json from the lock (harness.builds.nix): write, check, or pin a nar_hash."""
    from harness.builds import nix as build_nix
    if a.command == "write":
        print(build_nix.write_pins(Path(a.lock), Path(a.out)))
    elif a.command == "check":
        reason = build_nix.pins_stale(Path(a.lock), Path(a.out))
        if reason:
            print(reason, file=sys.stderr)
            sys.exit(1)
        print(f"{a.out} matches {a.lock}")
    else:
        if not a.name:
            a.parser.error("pin needs --name")
        print(f"builds.{a.name}.nar_hash: {build_nix.pin_nar_hash(a.name, Path(a.lock), out=Path(a.out))}")


def cmd_watchdog(a):
    return backends.watch(a.pid, a.run_id, a.docker, a.cgroup)


def cmd_prepare_dataset(a):
    from harness.measure import datasets
    try:
        datasets.all_datasets()[a.dataset].parse_key(a.key)
    except ValueError as e:
        raise config.ConfigError(f"--key: {e}") from None
    entry = _lock_entry(a.lock, a.name)
    datasets.prepare(a.dataset, a.key, name=a.name, entry=entry, build_dir=Path(a.build_dir),
                     template=Path(a.template), out=Path(a.out), settings=json.loads(a.settings),
                     corpus_dir=Path(a.corpus) if a.corpus else None)


def _cell_request(a) -> dict:
    """--cell-spec checked before anything starts: JSON, a known kind and its naming,
    a known workload or script, a source directory that holds a datadir."""
    from harness.measure import kinds
    from harness.measure.sysbench import all_workloads
    workloads, scripts = all_workloads(), studies.step_scripts()
    try:
        req = json.loads(a.cell_spec)
        spec = req["spec"]
        kind = spec["kind"]
        req["settings"], req["experiment"]
    except (ValueError, KeyError, TypeError) as e:
        raise config.ConfigError(f"--cell-spec: not the JSON of harness.plan.cells.cell_spec ({e}); "
                                 f"let the pipeline pass it") from None
    if kind not in kinds.KINDS:
        raise config.ConfigError(f"--cell-spec: kind '{kind}' is unknown; use one of {', '.join(kinds.KINDS)}")
    try:
        for c in a.cell:
            kinds.KINDS[kind].parse(c)
    except ValueError as e:
        raise config.ConfigError(f"--cell: {e}") from None
    if len(a.out) != len(a.cell):
        raise config.ConfigError(f"--out: {len(a.out)} paths for {len(a.cell)} cells; give one per --cell, "
                                 f"in the same order")
    key = kinds.KINDS[kind].NAMED_BY
    known = {"workload": workloads, "script": scripts}[key]
    if spec.get(key) not in known:
        raise config.ConfigError(f"--cell-spec: {key} '{spec.get(key)}' is unknown; use one of "
                                 f"{', '.join(known)}")
    if not (Path(a.source) / "datadir").is_dir():
        raise config.ConfigError(f"--source: {a.source} holds no datadir/; give a prepared dataset or template")
    return req


def _block(a) -> dict | None:
    """--block checked before anything starts: the JSON of harness.plan.blocks.info whose id
    is the cell's repetition."""
    if not a.block:
        return None
    try:
        block = json.loads(a.block)
        ok = all(isinstance(block[k], int) for k in ("id", "position", "seed", "size")) \
            and 1 <= block["position"] <= block["size"]
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise config.ConfigError(f"--block: {a.block!r} is not the JSON of harness.plan.blocks.info "
                                 f"(id, position, seed, size); let the pipeline pass it")
    bad = [c for c in a.cell if not c.endswith(f"_r{block['id']}")]
    if bad:
        raise config.ConfigError(f"--block: block {block['id']} is not the repetition of cell {bad[0]}; "
                                 f"let the pipeline pass it")
    if block["position"] + len(a.cell) - 1 > block["size"]:
        raise config.ConfigError(f"--block: {len(a.cell)} cells from position {block['position']} do not fit "
                                 f"a block of {block['size']}; let the pipeline pass it")
    return block


def cmd_run_cell(a):
    req = _cell_request(a)
    block = _block(a)
    names = {c.split("_")[0] for c in a.cell}
    if len(names) != 1:
        raise config.ConfigError(f"--cell: one group runs one build, not {', '.join(sorted(names))}")
    entry = _lock_entry(a.lock, names.pop())
    ms = cell.run_cells(experiment=req["experiment"], spec=req["spec"], cells=a.cell, entry=entry,
                        build_dir=Path(a.build_dir), source=Path(a.source), settings=req["settings"],
                        outs=[Path(o) for o in a.out], block=block, lane=cell.lane_arg(a.lane),
                        duet=cell.duet_arg(a.duet, a.cell), stamps=digest.stamps(req, a.cell, builds.load_lock(Path(a.lock))))
    for m in ms:
        res = m.get("result", {})
        print(f"{m['cell']}: " + ", ".join(f"{k}={v}" for k, v in res.items()))


def cmd_block_open(a):
    """Open block --block of an experiment: if some but not all of its --cells exist (an
    interrupted attempt), set them aside (harness.plan.blocks.set_aside); then record the
    block's order and attempt."""
    from harness import atomic
    from harness.plan import blocks
    have = [c for c in a.cells if Path(c).is_dir()]
    moved = blocks.set_aside(have, a.attempt - 1) if 0 < len(have) < len(a.cells) else []
    for m in moved:
        print(f"block {a.block} of {a.experiment} was interrupted: set aside {m}", file=sys.stderr)
    atomic.write_text(Path(a.out), json.dumps({
        "experiment": a.experiment, "block": a.block, "attempt": a.attempt, "seed": a.seed,
        "order": a.order, "set_aside": moved}, indent=2) + "\n")


def cmd_decided(a):
    """One look (harness.analysis.looks): is the experiment decided on blocks 1..--blocks?"""
    from harness.analysis import looks
    answer = looks.look(a.experiment, a.look, a.blocks, [Path(c) for c in a.cells], json.loads(a.config_json))
    looks.write(Path(a.out), answer)
    print(f"{a.experiment} look {a.look} ({a.blocks} blocks): {answer['why']}")


def cmd_tidy(a):
    from harness.analysis import tidywrite
    tidywrite.tidy([Path(c) for c in a.cells], Path(a.runs), Path(a.summary), Path(a.provenance),
              a.cv_threshold, a.profile, Path(a.extra_dir) if a.extra_dir else None)


def cmd_claims_print(a):
    """Each declared claim, from the same claims.csv the paper's table is made of: at most two
    lines of 80 columns per row, or with --long the whole row on one line (harness.report.claimlines)."""
    import csv
    from harness.report import claimlines
    with open(a.claims, newline="") as f:
        rows = list(csv.DictReader(f))
    for line in claimlines.render(rows, long=a.long):
        print(line)
    print(claimlines.summary(rows), file=sys.stderr)


def cmd_reap(a):
    from harness.measure import docker as docker_backend
    # containers labelled with the session/run (docker rm -f; a no-op without an engine)
    removed = docker_backend.reap(session=a.session, run_id=a.run)
    killed = procs.reap(a.run, a.session)
    killed += studies.reap(a.run, a.session)  # the studies' own labelled servers
    placement.remove_stale_cgroups()
    from harness.measure import frame
    import shutil
    for d in frame.stale_work_dirs():
        shutil.rmtree(d, ignore_errors=True)
        print(f"removed the work directory of a dead cell: {d}", file=sys.stderr)
    for d in paths.stale_scratch_dirs():
        shutil.rmtree(d, ignore_errors=True)
        print(f"removed the run directory of a dead server: {d}", file=sys.stderr)
    if removed:
        print(f"reaped labelled containers: {' '.join(c[:12] for c in removed)}", file=sys.stderr)
    if killed:
        print(f"reaped labelled servers: {' '.join(map(str, killed))}", file=sys.stderr)


def cmd_factor_table(a):
    from harness import atomic, report
    atomic.write_text(a.out, report.factor_table_csv())


def cmd_unsupported(a):
    import csv
    import io
    from harness import atomic
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["experiment", "build", "engine", "variant", "reason"])
    w.writerows(json.loads(a.rows))
    atomic.write_text(a.out, buf.getvalue())


def cmd_resolved_config(a):
    from harness import atomic
    atomic.write_text(a.out, yaml.safe_dump(json.loads(a.config_json), sort_keys=False))


# Commands whose module parses its own options: `python -m harness <name> ...` calls
# <module>.main(argv): harness/__main__.py is the one module run as a program. The studies
# add their own (a study's COMMANDS, harness.registry.commands): own_parsers().
OWN_PARSER = {
    "report": ("harness.report", "paper/generated/*.tex from tidy data"),
    "run-duet": ("harness.measure.duetrun", "measure a duet pair's two cells at once (or one after the other) "
                                            "into one unit directory"),
    "estimate": ("harness.plan.estimate", "the time and disk a profile's sweep needs"),
    "supersede": ("harness.plan.reuse", "set a cell of other settings aside before it is measured again"),
    "runinfo": ("harness.report.runinfo", "write the PDF's run facts, or check one profile throughout"),
    "artifact": ("harness.report.artifact", "the artifact appendix"),
    "latex": ("harness.report.latexbuild", "the paper's PDF by latexmk, its whole output in a log"),
    "published": ("harness.report.published", "every study's published marks as CSV"),
    "host-packages": ("harness.builds.debian", "the host libraries the lock's Debian builds load (setup installs them)"),
    "export": ("harness.report.bundle", "this clone's raw cells as one checked bundle (BagIt, tar.gz)"),
    "import": ("harness.report.bundleimport", "check bundles, then import them into data/hosts/<host id>/"),
}


def own_parsers() -> dict:
    """OWN_PARSER and the studies' commands (one name, one command)."""
    theirs = studies.commands()
    clash = sorted(set(theirs) & set(OWN_PARSER))
    if clash:
        raise ValueError(f"command {clash[0]!r} is the harness's own; rename the study's COMMANDS entry")
    return {**OWN_PARSER, **theirs}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness")
    sub = p.add_subparsers(dest="cmd", required=True)
    lock = str(paths.LOCK)
    d = config.defaults()  # the defaults layer's values, not copies of them

    s = sub.add_parser("check-config", help="validate a profile (one line on error)")
    s.add_argument("configfile", nargs="+")
    s.add_argument("--out")
    s.set_defaults(fn=cmd_check_config)

    s = sub.add_parser("plan", help="the CPUs a profile's sweep gets on this host or a recorded topology")
    s.add_argument("--topology", help="a recorded `lstopo --of xml` file (or topology JSON); default: this host")
    s.add_argument("--configfile", nargs="*", default=[], help="profile(s) on top of config/default.yaml")
    s.add_argument("--no-estimate", action="store_true", help="leave out the time estimate")
    s.add_argument("--json", action="store_true", help="print the plan as JSON")
    s.set_defaults(fn=cmd_plan)

    for name, fn in (("fetch-build", cmd_fetch_build), ("verify-build", cmd_verify_build),
                     ("bootstrap", cmd_bootstrap)):
        s = sub.add_parser(name)
        s.add_argument("--name", required=True)
        s.add_argument("--lock", default=lock)
        if name == "fetch-build":
            s.add_argument("--out", required=True)
            s.add_argument("--artifact", help="use this downloaded artifact instead of fetching")
            s.add_argument("--provider", default="direct", choices=list(builds.BUILD_PROVIDERS),
                           help="direct (the lock's package client), nix (a Nix store path), auto")
        else:
            s.add_argument("--build-dir", required=True)
        if name == "bootstrap":
            s.add_argument("--out", required=True)
            s.add_argument("--options", default="{}")
            s.add_argument("--backend", required=True, choices=["host", "docker", "auto"],
                           help="where the init runs (harness.measure.backends), as the profile's servers do")
            s.add_argument("--mechanism", default=d["placement"]["mechanism"], help="host backend: placement.mechanism")
        s.set_defaults(fn=fn)

    s = sub.add_parser("official-check", help="compare a packaged build's mysqld with the official one")
    s.add_argument("--name", required=True)
    s.add_argument("--lock", default=lock)
    s.add_argument("--build-dir", required=True)
    s.add_argument("--official", required=True)
    s.add_argument("--official-dir", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_official_check)

    s = sub.add_parser("nix-pins", help="nix/builds.json, the lock's pins for flake.nix (harness.builds.nix)")
    s.add_argument("command", choices=["write", "check", "pin"],
                   help="write: regenerate it; check: exit 1 if it is out of date; pin: pin --name's nar_hash")
    s.add_argument("--name", help="the build to pin (pin)")
    s.add_argument("--lock", default=lock)
    s.add_argument("--out", default=str(paths.NIX_PINS))
    s.set_defaults(fn=cmd_nix_pins, parser=s)

    s = sub.add_parser("watchdog", help="clean up after <pid> once it is gone (the per-run watchdog, "
                                        "started by harness.measure.backends)")
    backends.watchdog_args(s)
    s.set_defaults(fn=cmd_watchdog)

    s = sub.add_parser("prepare-dataset", help="a prepared datadir (harness.measure.datasets)")
    from harness.measure import datasets
    s.add_argument("--dataset", required=True, choices=list(datasets.all_datasets()))
    s.add_argument("--key", required=True, help="the dataset's key, e.g. InnoDB_t8_n10000")
    s.add_argument("--name", required=True, help="build name")
    s.add_argument("--lock", default=lock)
    s.add_argument("--build-dir", required=True)
    s.add_argument("--template", required=True)
    s.add_argument("--corpus", help="the corpus directory (a dataset that loads one)")
    s.add_argument("--settings", required=True,
                   help="JSON: the run settings (harness.plan.cells.run_settings), as the pipeline passes them")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_prepare_dataset)

    s = sub.add_parser("run-cell", help="measure one cell, or a group of cells on one server start "
                                        "(harness.measure.cell)")
    s.add_argument("--cell", required=True, nargs="+",
                   help="the cell's name (its kind's naming, harness.measure.kinds); several: a group, "
                        "measured in this order")
    s.add_argument("--cell-spec", required=True, help="JSON from harness.plan.cells.cell_spec")
    s.add_argument("--lock", default=lock)
    s.add_argument("--build-dir", required=True)
    s.add_argument("--source", required=True, help="dataset (or template) dir holding datadir/")
    s.add_argument("--block", help="JSON of harness.plan.blocks.info: the (first) cell's block, for its manifest")
    s.add_argument("--lane", help="JSON of harness.plan.lanes.job_lane: its lanes and CPUs")
    s.add_argument("--duet", help="JSON: the duet pair the cell runs in (run-duet passes it)")
    s.add_argument("--out", required=True, nargs="+", help="the cell's output directory (one per --cell)")
    s.set_defaults(fn=cmd_run_cell)

    s = sub.add_parser("block-open", help="open a block: its order and attempt; an interrupted attempt's "
                                          "cells set aside (harness.plan.blocks)")
    s.add_argument("--experiment", required=True)
    s.add_argument("--block", type=int, required=True)
    s.add_argument("--attempt", type=int, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--order", nargs="+", required=True, help="the block's cell names in measuring order")
    s.add_argument("--cells", nargs="+", required=True, help="the block's cell directories")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_block_open)

    s = sub.add_parser("decided", help="one look: is an experiment decided on its blocks so far "
                                       "(harness.analysis.looks)")
    s.add_argument("--experiment", required=True)
    s.add_argument("--look", type=int, required=True)
    s.add_argument("--blocks", type=int, required=True)
    s.add_argument("--cells", nargs="+", required=True)
    s.add_argument("--config-json", required=True, help="the resolved config as JSON")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_decided)

    s = sub.add_parser("tidy")
    s.add_argument("--cells", nargs="+", required=True)
    s.add_argument("--runs", required=True)
    s.add_argument("--summary", required=True)
    s.add_argument("--provenance", required=True)
    s.add_argument("--cv-threshold", type=float, default=d["stats"]["cv_threshold"])
    s.add_argument("--profile", default="unknown")
    s.add_argument("--extra-dir", help="also write <experiment>_{intervals,waits,explain,keycaches,status}.csv here")
    s.set_defaults(fn=cmd_tidy)

    for name, (module, text) in own_parsers().items():  # listed here, parsed by main(argv) of the module
        sub.add_parser(name, help=f"{text} ({module}; `{name} -h` for its options)", add_help=False)

    s = sub.add_parser("factor-table", help="harness.measure.factors as CSV, for the R scripts")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_factor_table)

    s = sub.add_parser("unsupported", help="the cells a profile cannot run, and why, as CSV")
    s.add_argument("--rows", required=True, help="JSON from harness.plan.cells.unsupported")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_unsupported)

    s = sub.add_parser("resolved-config", help="write the resolved config (as Snakemake resolved it) as YAML")
    s.add_argument("--config-json", required=True, help="the resolved config as JSON")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_resolved_config)

    s = sub.add_parser("claims-print", help="each claim of a claims.csv, in 80 columns (--long: whole rows)")
    s.add_argument("claims")
    s.add_argument("--long", action="store_true", help="the whole row on one line: published, measured, full reason")
    s.set_defaults(fn=cmd_claims_print)

    s = sub.add_parser("reap", help="kill labelled servers, remove stale cgroups")
    s.add_argument("--run", help="only this run id")
    s.add_argument("--session", help="only this pipeline/test session")
    s.set_defaults(fn=cmd_reap)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    own = own_parsers()
    if argv[:1] and argv[0] in own:  # the module's main(argv) parses the rest
        import importlib
        module = own[argv[0]][0]
        if argv[0] not in OWN_PARSER:  # a study's command: its errors are one line, as ours
            return run(lambda: importlib.import_module(module).main(argv[1:]) or 0)
        return importlib.import_module(module).main(argv[1:]) or 0
    args = parser().parse_args(argv)
    return run(lambda: _exit_0(args.fn(args)))


def _exit_0(_) -> int:
    """A command's return value is not its exit code: it ran, so 0."""
    return 0


def run(fn) -> int:
    """fn()'s exit code, with the harness's errors as one line on stderr and a non-zero exit."""
    try:
        return fn()
    except EXPECTED as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the harness's own errors (CorpusError, GateError, StepError, ...) are one line
        if type(e).__module__.startswith("pymysql"):  # e.g. mysqld gone mid-query (2013): one line too
            print(f"error: mysqld: {e}", file=sys.stderr)
            return 1
        if not type(e).__module__.startswith("harness."):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        print(f"interrupted ({e}); servers stopped, nothing half-written kept", file=sys.stderr)
        return 130
