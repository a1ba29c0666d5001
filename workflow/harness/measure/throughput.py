"""Measurement kind `throughput`: a load generator (a sysbench Lua driver)
drives U users against a server on C cores over a prepared dataset.

Per cell: its tables read into memory (sbtest on InnoDB or MyISAM, once per server
start: captures.preload), a discarded warm-up (its own seed, so the measured run does not
replay its key sequence), the measured run with per-interval CSV, SHOW GLOBAL
STATUS before/after, EXPLAIN of the workload's statements, index types, MyISAM
key caches, Performance Schema top waits, and the client's CPU time.
Cell name: <build>_<engine>_<variant>_t<tables>_c<cores>_u<users>_r<rep>. The cells of
one group (the same name but for u<users>) may share one server start: each then has
its own warm-up, windows and captures; a MEMORY dataset is loaded once, by the first.
"""
from __future__ import annotations

import csv
import io
import resource
import time
from pathlib import Path

from harness.measure import captures as collect
from harness.measure import datasets, effective, placement, sbtest, sysbench
from harness.measure.naming import CellName
from harness.measure.server import ServerError, _err_tail as err_tail
from harness.measure import factors


def server_tail(srv) -> str:
    return err_tail(srv.error_log)


NAMING = CellName("{build}_{engine}_{variant}_t{tables}_c{cores}_u{users}_r{rep}")
# A group: the cells that differ only in their users, run on one server start (the users
# swept inside it; harness.plan.cells.grouped).
GROUP_BY = "users"
SYSBENCH = True   # its cells run a sysbench driver for warmup_s + duration_s
NAMED_BY = "workload"  # the spec key naming its driver (harness.measure.sysbench.all_workloads)
DATASET = True    # its cells copy a prepared dataset's datadir (harness.measure.datasets.for_cell)
SCALE_KEY = None  # its scale is its dataset's (the dataset module's SCALE_KEY)


def named_settings(variant: dict, f: dict) -> dict:
    """What its server must show: the variant's settings for the cell's engine and workload."""
    return factors.settings(variant, str(f.get("engine", "")), f.get("workload"))
GROUP_NAMING = CellName("{build}_{engine}_{variant}_t{tables}_c{cores}_r{rep}")
CLIENT_SATURATED = 0.9  # a load generator busier than this on its CPUs may measure itself
WARMUP_SEED_OFFSET = 100003  # the warm-up's seed: far from every measured seed (seed + rep)
PRELOADED = {"InnoDB", "MyISAM"}  # engines whose tables are read into memory before the warm-up

# tidy: the columns naming a cell besides the factor columns, and the per-run metrics
KEY_HEAD = ["study", "experiment", "workload", "build", "engine", "variant"]
KEY_TAIL = ["tables", "cores", "users"]
METRICS = ["qps", "qps_server", "tps", "lat_p95_ms", "errors", "client_cpu_util", "client_saturated",
           "memory_fits", "data_bytes", "buffer_bytes", "preloaded"]
SUMMARY_METRICS = ["qps", "qps_server"]


def combos(spec: dict, build: str, variant: dict):
    for engine in spec["engines"]:
        if not factors.applies(variant, engine, spec["workload"]):
            continue
        for t in spec["tables"]:
            for c in spec["cores"]:
                for u in spec["users"]:
                    yield {"build": build, "engine": engine, "variant": factors.label(variant),
                           "tables": t, "cores": c, "users": u}


def unsupported(spec: dict, d: dict, entry: dict) -> str | None:
    engine = d["engine"].split("-")[0]  # MEMORY-BTREE is MEMORY
    if engine not in entry.get("engines", []):
        return f"no {d['engine']} engine"
    ds = _dataset(spec)
    return ds.unsupported(d, entry) if hasattr(ds, "unsupported") else None


def name(d: dict) -> str:
    return NAMING.name(d)


def group_name(d: dict) -> str:
    return GROUP_NAMING.name(d)


def parse(text: str) -> dict:
    return NAMING.parse(text)


def server_options(spec: dict, d: dict, values: dict, family: str) -> dict:
    """The dataset's options (buffers, tokenizer) and the factors' (which win)."""
    ds = _dataset(spec)
    opts = ds.server_options(ds.parse_key(ds.key(spec, d)), family)
    opts.update(factors.server_options(values, family))
    return opts


def _csv(rows: list[dict], fields: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _dataset(spec: dict):
    return datasets.all_datasets()[spec["dataset"]]


def _driver_common(spec: dict, srv, d: dict) -> list[str]:
    return _dataset(spec).driver_args(spec, d, srv.socket)


def measure(fr, spec: dict, d: dict, values: dict, settings: dict) -> dict:
    """Run on the started server fr.server; write captures into fr.tmp; return the
    kind's part of the manifest."""
    srv, tmp = fr.server, fr.tmp
    workload, users, engine = spec["workload"], d["users"], d["engine"]
    captures, caches = _table_captures(fr, spec, d, values) if getattr(datasets.all_datasets()[spec["dataset"]], "TABLE_CAPTURES", False) \
        else ({}, None)
    pfs = collect.pfs_enabled(srv)
    seed = settings["seed"] + d["rep"]
    # docker on cgroup v1: sysbench's windows in the container's memory cgroup, charged with
    # mysqld as on a bare host (harness.measure.backends.Backend.client_memcg)
    memcg = srv.client_memcg()
    client_memcg = ("shared" if memcg is not None or
                    placement.memory_cgroup(srv.pid) == placement.memory_cgroup("self") else "apart")
    run = _runner(fr, spec, d, values, settings, memcg)
    timing = fr.timing
    timing.update(warmup_s=settings["warmup_s"], duration_s=settings["duration_s"],
                  windows=[{"warmup_s": settings["warmup_s"], "duration_s": settings["duration_s"]}])
    fr.rendezvous()  # pairing: duet: both sides of a pair start their warm-up together
    if timing["warmup_s"] > 0:
        (tmp / "warmup.out").write_text(run(timing["warmup_s"], seed + WARMUP_SEED_OFFSET)[0])
    if pfs:
        collect.pfs_reset(srv)
    before = srv.global_status()
    t_start = time.time()
    text, argv, client_cpu_s = run(timing["duration_s"], seed)
    fr.window(t_start, time.time())
    after = srv.global_status()
    if pfs:
        captures["pfs_waits.tsv"] = collect.tsv(["event_name", "count_star", "sum_timer_wait_ps"],
                                                collect.pfs_waits(srv))
    server_version = srv.version()
    delta = {r[0]: r[3] for r in collect.status_delta(before, after)}
    shown = effective.block(values, effective.evidence(srv, values, fr.entry["family"], delta=delta,
                                                       key_caches=caches))
    result = sysbench.parse_report(text)
    if result["errors"] and workload not in sysbench.ERRORS_EXPECTED or result["reconnects"]:
        raise ServerError(f"sysbench reported {result['errors']} errors and {result['reconnects']} reconnects; "
                          f"the cell is not recorded")
    intervals = sysbench.parse_intervals(text, threads=users)
    _write_run(tmp, text, intervals, before, after, captures)
    memory = collect.memory_fit(srv, _dataset(spec).DB, engine, delta)
    window = result["total_time_s"] or timing["duration_s"]
    util = client_cpu_s / (window * max(1, len(fr.client_cpus)))
    return {
        "captures": sorted(captures) + ["status_before.tsv", "status_after.tsv"],
        "performance_schema": pfs,
        "effective": shown,
        "server_version": server_version,
        "driver": {"tool": "sysbench", "version": sysbench.version(), "workload": workload,
                   "script": Path(sysbench.workload(workload)["script"]).name,
                   "script_sha256": sysbench.script_sha256(workload),
                   "args": [a for a in argv[1:] if not a.startswith("--mysql-socket")],
                   "seed": seed, "warmup_seed": seed + WARMUP_SEED_OFFSET,
                   "client_cpu_s": round(client_cpu_s, 3),
                   "client_cpu_util": round(util, 4),
                   "client_saturated": util > CLIENT_SATURATED,
                   "client_memcg": client_memcg},
        "result": {k: result[k] for k in ("qps", "tps", "lat_p95_ms", "errors", "reconnects", "total_time_s")},
        "intervals": len(intervals),
        "memory": memory,
        "preload": _preload_record(fr, captures),
    }


def _preload_record(fr, captures: dict) -> dict | None:
    """The tables read into memory before the warm-up (None: a dataset without TABLE_CAPTURES,
    or an engine kept in memory anyway); a group's later cells name its first as the reader."""
    if "preloaded" not in fr.state:
        return None
    by = "this cell" if "preload.tsv" in captures else "the group's first cell"
    return {**fr.state["preloaded"], "by": by}


def _table_captures(fr, spec: dict, d: dict, values: dict) -> tuple[dict, list | None]:
    """sbtest's tables before the run: filled (a volatile engine's, once per group), their
    indexes, MyISAM's key caches, read into memory (once per group: collect.preload), the
    workload's EXPLAIN; ({file: text}, the key caches)."""
    srv, engine, caches, captures = fr.server, d["engine"], None, {}
    if engine in sbtest.VOLATILE and not fr.state.get("filled"):
        sbtest.fill(srv, engine=engine, tables=d["tables"], table_size=spec["table_size"],
                    cpus=fr.client_cpus, run_id=fr.run_id)
        fr.state["filled"] = True  # the group's later cells find the tables filled
    captures["indexes.tsv"] = collect.tsv(["table", "key", "index_type"],
                                          collect.index_types(srv, d["tables"]))
    if engine == "MyISAM":
        caches = collect.key_caches(srv, d["tables"], values["key_cache"])
        captures["key_caches.tsv"] = collect.tsv(["table", "cache", "key_buffer_size", "load_index"], caches)
    if engine in PRELOADED and "preloaded" not in fr.state:
        rows, fr.state["preloaded"] = collect.preload(srv, d["tables"], engine)  # once per server start
        captures["preload.tsv"] = collect.tsv(["table", "read", "rows", "seconds"], rows)
    captures["explain.tsv"] = collect.tsv(*collect.explain(srv, spec["workload"]))
    return captures, caches


def _runner(fr, spec: dict, d: dict, values: dict, settings: dict, memcg):
    """run(duration, seed) -> (sysbench's output, its argv, the client's CPU seconds): one
    window of the workload on the cell's server, which must outlive it."""
    srv, workload, users = fr.server, spec["workload"], d["users"]
    common = _driver_common(spec, srv, d)

    def run(duration: int, run_seed: int):
        extra = sysbench.run_args(threads=users, duration=duration, seed=run_seed,
                                  rand_type=settings["rand_type"],
                                  interval=settings["report_interval_s"])
        extra += factors.driver_args(values)
        extra += sysbench.with_args(workload, extra)  # the workload's own options that go with them
        argv = sysbench.command(workload, common, extra, "run")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            text = sysbench.run(argv, cpus=fr.client_cpus, run_id=fr.run_id, timeout=duration + 300,
                                memcg=memcg)
        except sysbench.SysbenchError as e:
            if not srv.alive():
                raise ServerError(f"mysqld died during the run ({server_tail(srv)}); sysbench: {e}") from None
            raise
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if not srv.alive():
            raise ServerError("mysqld died during the run")
        return text, argv, cpu_s
    return run


def _write_run(tmp: Path, text: str, intervals: list, before, after, captures: dict) -> None:
    """The measured window's files: sysbench's output, its intervals, the status before and
    after (and their delta, a capture), and every capture."""
    (tmp / "sysbench.out").write_text(text)
    (tmp / "intervals.csv").write_text(_csv(intervals, sysbench.INTERVAL_FIELDS))
    (tmp / "status_before.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in before))
    (tmp / "status_after.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in after))
    captures["status_delta.tsv"] = collect.tsv(["name", "before", "after", "delta"],
                                               collect.status_delta(before, after))
    for fname, body in captures.items():
        (tmp / fname).write_text(body)
