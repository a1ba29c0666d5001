"""Datasets and measured cells: the two steps that run a real server.

A dataset is a prepared datadir (sysbench tables of one engine), made once
and copied for every cell. A cell is one measurement: a private server held
to its cores, a discarded warm-up, the measured run, the captures, and a
manifest; it appears at its output path only when all of it succeeded.
"""
from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from . import atomic, collect, hostinfo, placement, sysbench, variants
from .server import Server, ServerError

# MEMORY tables lose their rows at every restart: they are loaded inside the cell.
VOLATILE_ENGINES = {"MEMORY", "MEMORY-BTREE"}


def sysbench_engine(engine: str) -> str:
    """MEMORY-BTREE is MEMORY with its indexes rebuilt USING BTREE after loading."""
    return engine.split("-")[0]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@contextlib.contextmanager
def _scratch(tag: str):
    """A short path (unix sockets allow ~107 bytes) for the datadir copy and socket."""
    d = Path(tempfile.mkdtemp(prefix=f"mysqlbench-{tag}-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _sysbench_prepare(srv: Server, *, workload: str, engine: str, tables: int, table_size: int,
                      cpus, run_id: str) -> str:
    common = sysbench.common_args(socket=srv.socket, tables=tables, table_size=table_size,
                                  engine=sysbench_engine(engine))
    threads = max(1, min(tables, len(cpus)))
    out = sysbench.run(sysbench.command(workload, common, [f"--threads={threads}"], "prepare"),
                       cpus=cpus, run_id=run_id, timeout=3600)
    if engine == "MEMORY-BTREE":
        collect.memory_btree(srv, tables)
    return out


def prepare_dataset(*, name: str, entry: dict, build_dir: Path, template: Path, workload: str,
                    engine: str, tables: int, table_size: int, out: Path, settings: dict) -> Path:
    """Template datadir + database sbtest + sysbench tables of `engine`, shut down cleanly."""
    run_id = f"dataset-{Path(out).name}-{os.getpid()}"
    cpus = sorted(os.sched_getaffinity(0))
    with atomic.staging_dir(Path(out)) as tmp, _scratch("ds") as scratch:
        datadir = tmp / "datadir"
        shutil.copytree(Path(template) / "datadir", datadir, symlinks=True)
        with Server(name=name, entry=entry, build_dir=build_dir, datadir=datadir, rundir=scratch,
                    run_id=run_id, cpus=cpus, mechanism=settings.get("mechanism", "auto"),
                    options=settings.get("options"), max_connections=64,
                    startup_timeout=settings.get("startup_timeout_s", 120),
                    shutdown_timeout=settings.get("shutdown_timeout_s", 120)) as srv:
            srv.query("CREATE DATABASE sbtest")
            log = ""
            if engine not in VOLATILE_ENGINES:
                log = _sysbench_prepare(srv, workload=workload, engine=engine, tables=tables,
                                        table_size=table_size, cpus=cpus, run_id=run_id)
            counts = {f"sbtest{i}": srv.query(f"SELECT COUNT(*) FROM sbtest.sbtest{i}")[0][0]
                      for i in range(1, tables + 1)} if engine not in VOLATILE_ENGINES else {}
        (tmp / "prepare.out").write_text(log)
        (tmp / "dataset.json").write_text(json.dumps({
            "build": name, "engine": engine, "tables": tables, "table_size": table_size,
            "workload": workload, "rows": counts, "volatile": engine in VOLATILE_ENGINES,
            "created": _now()}, indent=2) + "\n")
        bad = {t: n for t, n in counts.items() if n != table_size}
        if bad:
            raise ServerError(f"dataset {out}: row counts {bad} differ from table_size={table_size}")
    return Path(out)


def _status_tsv(rows) -> str:
    return "".join(f"{k}\t{v}\n" for k, v in rows)


def _intervals_csv(rows) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=sysbench.INTERVAL_FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def cell_name(build: str, engine: str, variant: str, tables: int, cores: int, users: int, rep: int) -> str:
    return f"{build}_{engine}_{variant}_t{tables}_c{cores}_u{users}_r{rep}"


def run_cell(*, study: str, experiment: str, workload: str, name: str, entry: dict, build_dir: Path,
             dataset: Path, engine: str, tables: int, table_size: int, cores: int, users: int,
             rep: int, settings: dict, out: Path, variant: str = "base") -> dict:
    """Measure one cell into `out` (atomically); return its manifest."""
    out = Path(out)
    factors = variants.parse(variant)
    why = variants.unsupported(factors, entry["family"])
    if why:
        raise ServerError(f"variant {variant}: {why}; drop it for build {name}")
    options = {**settings.get("options", {}), **variants.server_options(factors, entry["family"])}
    server_cpus, client_cpus = placement.split(sorted(os.sched_getaffinity(0)), cores,
                                               settings.get("client_cpus", 1))
    run_id = f"{out.name}-{os.getpid()}"
    sb = settings
    seed = sb.get("seed", 42) + rep
    timing = {"started": _now(), "warmup_s": sb.get("warmup_s", 5), "duration_s": sb.get("duration_s", 30)}
    with atomic.staging_dir(out) as tmp, _scratch("cell") as scratch:
        datadir = scratch / "datadir"
        shutil.copytree(Path(dataset) / "datadir", datadir, symlinks=True)
        srv = Server(name=name, entry=entry, build_dir=build_dir, datadir=datadir, rundir=scratch / "run",
                     run_id=run_id, cpus=server_cpus, mechanism=sb.get("mechanism", "auto"),
                     backend=sb.get("backend", "host"),
                     options=options, max_connections=users + 16,
                     startup_timeout=sb.get("startup_timeout_s", 120),
                     shutdown_timeout=sb.get("shutdown_timeout_s", 120))
        captures: dict[str, str] = {}
        try:
            with srv:
                observed = placement.observed_cpus(srv.pid)
                if observed != server_cpus:
                    raise ServerError(f"mysqld runs on CPUs {observed}, not the configured {server_cpus}")
                if engine in VOLATILE_ENGINES:
                    _sysbench_prepare(srv, workload=workload, engine=engine, tables=tables,
                                      table_size=table_size, cpus=client_cpus, run_id=run_id)
                captures["indexes.tsv"] = collect.tsv(["table", "key", "index_type"],
                                                      collect.index_types(srv, tables))
                if engine == "MyISAM":
                    captures["key_caches.tsv"] = collect.tsv(
                        ["table", "cache", "key_buffer_size", "load_index"],
                        collect.key_caches(srv, tables, factors.get("key_cache", "shared")))
                captures["explain.tsv"] = collect.tsv(*collect.explain(srv, workload))
                pfs = collect.pfs_enabled(srv)
                common = sysbench.common_args(socket=srv.socket, tables=tables, table_size=table_size)

                def measure(duration: int) -> str:
                    extra = sysbench.run_args(threads=users, duration=duration, seed=seed,
                                              rand_type=sb.get("rand_type", "uniform"),
                                              interval=sb.get("report_interval_s", 1),
                                              ps=variants.prepared_statements(factors))
                    extra += sysbench.variant_args(factors)
                    argv = sysbench.command(workload, common, extra, "run")
                    text = sysbench.run(argv, cpus=client_cpus, run_id=run_id, timeout=duration + 300)
                    if not srv.alive():
                        raise ServerError("mysqld died during the run")
                    return text, argv

                if timing["warmup_s"] > 0:
                    (tmp / "warmup.out").write_text(measure(timing["warmup_s"])[0])
                if pfs:
                    collect.pfs_reset(srv)
                before = srv.global_status()
                text, argv = measure(timing["duration_s"])
                after = srv.global_status()
                if pfs:
                    captures["pfs_waits.tsv"] = collect.tsv(["event_name", "count_star", "sum_timer_wait_ps"],
                                                            collect.pfs_waits(srv))
                server_version = srv.version()
        finally:
            for f in ("my.cnf", "mysqld.err"):
                if (srv.rundir / f).exists():
                    shutil.copy2(srv.rundir / f, tmp / f)
        result = sysbench.parse_report(text)
        intervals = sysbench.parse_intervals(text, threads=users)
        (tmp / "sysbench.out").write_text(text)
        (tmp / "intervals.csv").write_text(_intervals_csv(intervals))
        (tmp / "status_before.tsv").write_text(_status_tsv(before))
        (tmp / "status_after.tsv").write_text(_status_tsv(after))
        captures["status_delta.tsv"] = collect.tsv(["name", "before", "after", "delta"],
                                                   collect.status_delta(before, after))
        for fname, text_ in captures.items():
            (tmp / fname).write_text(text_)
        timing["finished"] = _now()
        manifest = {
            "schema": 1, "study": study, "experiment": experiment, "cell": out.name,
            "factors": {"build": name, "engine": engine, "tables": tables, "table_size": table_size,
                        "cores": cores, "users": users, "rep": rep, "workload": workload,
                        "variant": variant, **{f"variant_{k}": v for k, v in factors.items()}},
            "captures": sorted(captures) + ["status_before.tsv", "status_after.tsv"],
            "performance_schema": pfs,
            "build": {"name": name, "version": entry["version"], "provider": entry["provider"],
                      "family": entry["family"], "artifact_sha256": entry.get("artifact_sha256"),
                      "mysqld_sha256": entry["mysqld_sha256"]},
            "server": {"version": server_version, "my_cnf": srv.cnf_text,
                       "my_cnf_sha256": hashlib.sha256(srv.cnf_text.encode()).hexdigest()},
            "placement": {"backend": srv.backend, "mechanism": srv.mechanism_used,
                          "server_cpus": placement.cpulist(server_cpus),
                          "observed_server_cpus": placement.cpulist(observed),
                          "client_cpus": placement.cpulist(client_cpus),
                          "image": srv.image},
            "sysbench": {"version": sysbench.version(), "workload": workload,
                         "script": sysbench.WORKLOADS[workload]["script"],
                         "script_sha256": sysbench.script_sha256(workload),
                         "args": [a for a in argv[1:] if not a.startswith("--mysql-socket")]},
            "host": hostinfo.host(),
            "timing": timing,
            "result": {k: result[k] for k in ("qps", "tps", "lat_p95_ms", "errors", "reconnects")},
            "intervals": len(intervals),
            "harness": {"git_commit": hostinfo.git_commit()},
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
