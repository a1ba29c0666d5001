"""The cell frame every measurement kind shares.

Staging directory beside the output (renamed into place only when all of it
succeeded), the datadir copied from a prepared dataset (or the empty
template) into the work directory, a private server on the cell's CPUs and
memory nodes with the observed ones checked, restarts with extra options, the server's my.cnf
and error log kept, and the manifest's common part (build and hashes,
placement, host, timing, harness commit). A kind only measures.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import atomic

from harness import builds

from harness.measure import coreplan

from harness.measure import hostinfo

from harness.measure import hostlock

from harness.measure import lanebusy

from harness import paths

from harness.measure import placement
from harness.measure.datasets import scratch
from harness.measure.server import Server, ServerError
from harness.measure import topology

SCHEMA_VERSION = 2
OWNER = paths.WORK_OWNER


def stale_work_dirs() -> list[Path]:
    """Work directories (copied datadirs) whose harness process is gone: left by a
    SIGKILL (its watchdog removes them: harness.measure.backends.watch), else by
    `harness reap`."""
    return [d for d, pid in paths.owned_work_dirs() if not Path(f"/proc/{pid}").exists()]


def copy_datadir(src: Path, dest: Path) -> None:
    """The cell's own copy of a prepared datadir: `cp -a --reflink=auto`, copy-on-write
    where the file system shares extents (btrfs, XFS: no data copied until the server
    writes), a plain copy elsewhere; one process instead of a Python copy per file."""
    try:
        res = subprocess.run(["cp", "-a", "--reflink=auto", "--", str(src), str(dest)],
                             capture_output=True, text=True)
        why = res.stderr.strip().splitlines()[-1] if res.returncode else ""
    except OSError as e:
        why = str(e)
    if why:
        raise ServerError(f"copying the datadir into the work directory {paths.work_dir()} failed "
                          f"({why[:200]}); free space there or set $MYSQLBENCH_WORK")


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _phases() -> dict:
    return {"copy_s": 0.0, "start_s": 0.0, "stop_s": 0.0, "starts": 0}


class Frame:
    """`with Frame(...) as fr:` gives fr.server (started), fr.tmp (the staging
    dir: write captures there), fr.server_cpus, fr.server_mems (its memory nodes),
    fr.client_cpus, fr.run_id, fr.state (what a kind keeps between a group's cells).

    `outs` (instead of `out`): a group of cells measured on one server start, one
    after the other (`select(i)` makes cell i's staging dir fr.tmp and its timing
    fr.timing); each appears at its output path on success. Should the group fail, its
    cells already complete (manifest written) are set aside under data/partial/."""

    def __init__(self, *, name: str, entry: dict, build_dir: Path, source: Path,
                 cores: int, settings: dict, options: dict, max_connections: int = 200,
                 out: Path | None = None, outs: list[Path] | None = None, lane: dict | None = None,
                 duet: dict | None = None):
        self.outs = [Path(o) for o in (outs or [out])]
        self.out = self.outs[0]
        self.state: dict = {}
        self.name, self.entry, self.build_dir = name, entry, Path(build_dir)
        self.source = Path(source)  # a dataset or template dir holding datadir/
        self.settings, self.options = settings, dict(options)
        self.max_connections = max_connections
        # the host plan (harness.measure.coreplan): server CPUs on one socket without SMT siblings,
        # the client disjoint and sized from the server's cores
        self.host_plan = coreplan.plan(topology.Topology.live(),
                                        client_min=settings["client_cpus"])
        # on lanes (harness.plan.lanes): the CPUs and memory nodes the plan gave the cell in its span
        self.lane = lane
        self.duet = duet  # pairing: duet: the pair this cell runs in (run-cell's --duet)
        cell = coreplan.cell_for(cores, self.host_plan) if not lane else _lane_cell(lane)
        self.server_cpus, self.client_cpus = list(cell.server), list(cell.client)
        # its memory on the plan's nodes (placement.mems), checked against the nodes this
        # process may use before any server starts
        self.server_mems = placement.run_mems(coreplan.mems_for(settings["mems"], cell))
        self.run_id = f"{self.out.name}-{os.getpid()}"
        self.server: Server | None = None
        self.observed: list[int] = []
        self.observed_mems: list[int] = []
        # where a cell's time beyond its measured windows goes (bench/cell_overhead.py):
        # the datadir copy, each server start (to the first answer, CPUs checked) and stop;
        # in a group, each cell's own (the first has the copy and start, the last the stop)
        self.timing = {"started": now(), "phases": _phases()}
        self._stack = []

    def _phase(self, name: str, t0: float) -> None:
        self.timing["phases"][name] = round(self.timing["phases"][name] + time.monotonic() - t0, 3)

    def _server(self, options: dict) -> Server:
        s = self.settings
        return Server(name=self.name, entry=self.entry, build_dir=self.build_dir, datadir=self.datadir,
                      rundir=self.run / "run", run_id=self.run_id, cpus=self.server_cpus,
                      mems=self.server_mems,
                      mechanism=s["mechanism"], backend=s["backend"],
                      options=options, max_connections=self.max_connections,
                      startup_timeout=s["startup_timeout_s"],
                      shutdown_timeout=s["shutdown_timeout_s"])

    def _start(self, options: dict) -> Server:
        t0 = time.monotonic()
        srv = self._server(options)
        srv.__enter__()
        self.server = srv
        self._record(srv)  # a group's cells write their manifests while it runs
        self.timing["phases"]["starts"] += 1
        self._phase("start_s", t0)
        observed = placement.observed_cpus(srv.pid)
        if observed != self.server_cpus:
            raise ServerError(f"mysqld runs on CPUs {observed}, not the configured {self.server_cpus}")
        self.observed = observed
        mems = placement.observed_mems(srv.pid)
        if mems != self.server_mems:
            raise ServerError(f"mysqld's memory is on NUMA nodes {placement.cpulist(mems)}, not the configured "
                              f"{placement.cpulist(self.server_mems)}")
        self.observed_mems = mems
        return srv

    def _stop(self, failed: bool, discard: bool = False) -> None:
        """Stop the server: cleanly, or killed when the cell failed or when `discard` (its
        datadir copy is thrown away next: nothing is left to flush for anyone)."""
        srv, self.server = self.server, None
        if srv is None:
            return
        t0 = time.monotonic()
        try:
            # Managed.__exit__ kills when given an exception type, else shuts down cleanly
            srv.__exit__(RuntimeError if failed or discard else None, None, None)
            self._phase("stop_s", t0)
        finally:
            for f in ("my.cnf", "mysqld.err"):
                if (srv.rundir / f).exists():
                    for tmp in self.tmps:  # a group's cells all ran on this server
                        shutil.copy2(srv.rundir / f, tmp / f)
            self._record(srv)

    def _record(self, srv: Server) -> None:
        """What the manifest says of the server: its my.cnf, backend, mechanism, image."""
        self.cnf_text = srv.cnf_text
        self.backend, self.mechanism, self.image = srv.backend, srv.mechanism_used, srv.image
        # docker: the memory limit and seccomp; auto fallen back to host: the reason ("fallback")
        self.backend_extra = {k: v for k, v in srv.placement_info().items()
                              if k in ("memory_limit", "seccomp", "fallback")}

    def restart(self, extra_options: dict | None = None, without: tuple = ()) -> Server:
        """Stop the server cleanly and start it again on the same datadir and CPUs with
        `extra_options` added (and the options named in `without` removed)."""
        opts = {k: v for k, v in {**self.options, **(extra_options or {})}.items() if k not in without}
        self._stop(failed=False)
        return self._start(opts)

    def __enter__(self):
        # one measurement on the host at a time, across pipelines (waits, saying so)
        what = f"cell {self.out.name}" + (f" and {len(self.outs) - 1} more on one server" if len(self.outs) > 1 else "")
        self._lock = hostlock.measuring(what, lanes=self.lane and self.lane["lanes"])
        self._lock.__enter__()
        self.timing["started"] = now()  # the wait for the lock is not part of the cell
        self._t0, self._epoch0 = time.monotonic(), time.time()
        if self.lane:  # the lanes' busy record: other lanes' cells read it (manifest `concurrent`)
            lanebusy.start(self._data, self.lane["lanes"], self.outs[0].name)
        self._stagings, self.tmps = [], []
        try:
            for o in self.outs:
                st = atomic.staging_dir(o)
                self.tmps.append(st.__enter__())
                self._stagings.append(st)
            self.tmp = self.tmps[0]
        except BaseException:
            self._exit_stagings(*sys.exc_info())
            self._lock.__exit__(*sys.exc_info())
            raise
        self._scratch = scratch("cell")
        self.run = self._scratch.__enter__()
        try:
            self._work = Path(tempfile.mkdtemp(prefix=f"{self.out.name[:40]}-", dir=paths.work_dir()))
            (self._work / OWNER).write_text(f"{os.getpid()}\n")  # harness reap removes it if we die
            self.datadir = self._work / "datadir"
            t0 = time.monotonic()
            copy_datadir(self.source / "datadir", self.datadir)
            self._phase("copy_s", t0)
            self._start(self.options)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._stop(failed=exc_type is not None)
        finally:
            shutil.rmtree(getattr(self, "_work", self.run / "none"), ignore_errors=True)
            try:
                self._scratch.__exit__(exc_type, exc, tb)
                self._exit_stagings(exc_type, exc, tb)
            finally:
                if self.lane:
                    lanebusy.end(self._data, self.lane["lanes"], self.outs[0].name)
                self._lock.__exit__(exc_type, exc, tb)
        return False

    def _exit_stagings(self, exc_type, exc, tb) -> None:
        """Rename every cell's staging dir into place, or (failed) remove them, a group's
        complete cells set aside first: a failed job's outputs are not kept, but what
        was measured is never lost."""
        errors = []
        for tmp, out, st in zip(self.tmps, self.outs, self._stagings):
            try:
                try:
                    if exc_type is not None and len(self.outs) > 1 and (tmp / "manifest.json").exists():
                        dest = out.parents[2].parent / "partial" / out.parts[-3] / out.parts[-2] / \
                            f"{out.name}.group-failed-{os.getpid()}"
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        os.replace(tmp, dest)
                        print(f"the group failed: its complete cell {out.name} is set aside in {dest}",
                              file=sys.stderr)
                        tmp.mkdir()  # for the staging's own clean-up
                finally:
                    st.__exit__(exc_type, exc, tb)
            except BaseException as e:  # every staging is ended, the first error raised
                errors.append(e)
        if errors and exc_type is None:
            raise errors[0]

    def select(self, i: int) -> None:
        """Make cell i of the group the one measured: its staging dir fr.tmp, its own
        timing (from now) fr.timing."""
        self.out, self.tmp = self.outs[i], self.tmps[i]
        if i:
            self.timing = {"started": now(), "phases": _phases()}
            self._t0, self._epoch0 = time.monotonic(), time.time()
            self._window = None  # this cell's own, once its kind measures it

    def finish(self) -> None:
        """End the server once the kind has measured and captured everything (its my.cnf
        and error log are kept) before the manifest is written; the staging dir is
        renamed into place on exit. Killed, not shut down: the datadir is this cell's
        own copy, removed on exit, so a clean shutdown (1.5-2 s for MySQL 5.6, most of a
        cell's overhead: bench/cell_overhead.py) would flush pages no one reads. A
        restart (`restart`) still shuts down cleanly: its datadir is used again."""
        if self.server is not None and not self.server.alive():
            raise ServerError("mysqld is gone before the end of the cell")
        self._stop(failed=False, discard=True)
        self.timing["phases"]["end"] = "killed after the measurement (its datadir copy is discarded)"

    @property
    def _data(self) -> Path:
        """The data/ folder the cell's output is in (data/raw/<study>/<experiment>/<cell>)."""
        return self.out.parents[3]

    def _whole_host(self) -> dict:
        """The lane of a cell run without lanes (a cluster node, a direct run-cell): the host
        (its memory nodes listed, as a lane's, only on a host of several)."""
        topo = self.host_plan.topology
        mems = sorted(topo.mems) if len(set(topo.nodes) | set(topo.mems)) > 1 else []
        return {"id": 0, "lanes": [0], "count": 1, "cpus": placement.cpulist(sorted(c.cpu for c in topo.cpus)),
                "mems": mems, "oversubscribed": False}

    def rendezvous(self) -> None:
        """pairing: duet, a pair's two sides at once (run-cell's --duet, harness.plan.duet): say
        this side is ready to measure and wait until every side of the pair is, so their
        warm-ups and windows start together (each side's server start and datadir copy
        differ). No-op otherwise."""
        d = self.duet
        if not d or not d.get("at_once"):
            return
        where = Path(d["rendezvous"])
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{self.out.name}.ready").touch()
        t0, limit = time.monotonic(), float(d["timeout_s"])
        while not all((where / f"{c}.ready").exists() for c in d["cells"]):
            if time.monotonic() - t0 > limit:
                raise ServerError(f"duet: the other side of the pair ({', '.join(c for c in d['cells'] if c != self.out.name)}) "
                                  f"was not ready to measure within {limit:.0f} s")
            time.sleep(0.05)
        self.timing["duet_wait_s"] = round(time.monotonic() - t0, 3)

    def window(self, start: float, end: float) -> None:
        """The measured window's wall-clock start and end (what `concurrent` covers, and the
        manifest's `duet.window`)."""
        self._window = (start, end)

    def _duet_part(self) -> dict:
        """`duet`: the pair this cell ran in (its cells, side A first), its side, whether the
        sides ran at once on twin lanes, and its window's wall-clock start and end."""
        d = self.duet
        if not d:
            return {}
        w = getattr(self, "_window", None)
        side = "AB"[d["cells"].index(self.out.name)] if len(d["cells"]) == 2 else None   # a lone cell: none
        return {"duet": {"cells": list(d["cells"]), "side": side,
                         "at_once": bool(d.get("at_once")),
                         "window": [dt.datetime.fromtimestamp(x, dt.timezone.utc).isoformat(timespec="milliseconds") for x in w] if w else None}}

    def _lane_part(self) -> dict:
        """lane, concurrent (the other lanes busy during this cell's measured window, where the
        kind records one (throughput); else during its whole run: concurrent_over), oversubscribed."""
        ln = self.lane or self._whole_host()
        w = getattr(self, "_window", None)
        t0, t1 = w if w else (self._epoch0, time.time())
        return {"lane": {k: ln[k] for k in ("id", "lanes", "count", "cpus", "mems")},
                "concurrent": lanebusy.concurrent(self._data, ln["lanes"], t0, t1) if self.lane else [],
                "concurrent_over": "window" if w else "run",
                "oversubscribed": bool(ln["oversubscribed"])}

    def manifest(self, *, kind: str, study: str, experiment: str, factors: dict) -> dict:
        """The manifest's common part; the kind adds its own keys before it is written."""
        cnf = getattr(self, "cnf_text", "")
        self.timing["finished"] = now()
        if hasattr(self, "_t0"):  # started..finished to the millisecond
            self.timing["elapsed_s"] = round(time.monotonic() - self._t0, 3)
        return {
            "schema": SCHEMA_VERSION, "kind": kind, "study": study, "experiment": experiment,
            "cell": self.out.name, "factors": factors,
            "build": {"name": self.name, "version": self.entry["version"], "provider": self.entry["provider"],
                      "family": self.entry["family"], "artifact_sha256": self.entry.get("artifact_sha256"),
                      "mysqld_sha256": self.entry["mysqld_sha256"], "basedir": str(self.build_dir.resolve()),
                      **{k: v for k, v in builds.provenance(self.name, self.entry, self.build_dir).items()
                         if k in ("provider", "fetched_with", "store_path", "nar_hash")}},
            "server": {"my_cnf": cnf, "my_cnf_sha256": hashlib.sha256(cnf.encode()).hexdigest()},
            "placement": {"backend": getattr(self, "backend", ""), "mechanism": getattr(self, "mechanism", ""),
                          "server_cpus": placement.cpulist(self.server_cpus),
                          "observed_server_cpus": placement.cpulist(self.observed),
                          "server_mems": placement.cpulist(self.server_mems),
                          "observed_server_mems": placement.cpulist(self.observed_mems),
                          "client_cpus": placement.cpulist(self.client_cpus),
                          "plan_rule": self.host_plan.rule(),
                          "image": getattr(self, "image", None), **getattr(self, "backend_extra", {})},
            **self._lane_part(),
            **self._duet_part(),
            "host": hostinfo.host(),
            "timing": self.timing,
            "harness": {"git_commit": hostinfo.git_commit()},
        }


def _lane_cell(lane: dict) -> coreplan.Cell:
    """The Cell the plan placed in the lane's span (--lane's server_cpus, client_cpus, mems)."""
    server = tuple(placement.parse_cpulist(lane["server_cpus"]))
    return coreplan.Cell(cores=len(server), server=server,
                          client=tuple(placement.parse_cpulist(lane["client_cpus"])),
                          threads_per_core=1, sockets=(), nodes=(), client_on_siblings=0,
                          mems=tuple(lane.get("cell_mems") or ()))
