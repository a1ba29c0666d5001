"""One duet unit (pairing: duet, harness.plan.duet): a pair's two cells, or a lone cell,
measured by `harness run-cell` each, into one unit directory (the pipeline's temporary
output, whose cells it then links to their data/raw paths).

At once (the cells' width has twin lanes): this process takes both twins' lane locks
(harness.measure.hostlock: so two pipelines' pairs never each hold one twin and wait for
the other) and holds them for both run-cells, which start together, each on its own twin
span (--lane), and meet before their warm-up (--duet's rendezvous,
harness.measure.frame.Frame.rendezvous), so their windows coincide. Otherwise they run
one after the other, as a block's cells do. Each run-cell writes its own log
(logs/run_cell/<study>/<experiment>/<cell>.log, where a run_cell job's would be).

The unit appears only when every cell succeeded; should one side fail, the other is
stopped by its pid (SIGINT: its frame stops its server and keeps nothing half-written,
as on Ctrl-C; SIGTERM, then SIGKILL, if it has not ended in STOP_S seconds) and the
unit's staging directory removed. SIGINT/SIGTERM/SIGHUP to this process stop the
run-cells it started the same way before it exits.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import atomic
from harness.measure import hostlock, procs


class DuetError(RuntimeError):
    pass


def side_command(cell: str, *, cell_spec: str, block: str, lane: str | None, duet: dict, build_dir: str,
         source: str, out: Path) -> list[str]:
    """The run-cell command of one side."""
    cmd = [sys.executable, "-m", "harness", "run-cell", "--cell", cell, "--cell-spec", cell_spec,
           "--block", block, "--build-dir", build_dir, "--source", source, "--duet", json.dumps(duet),
           "--out", str(out)]
    return cmd + (["--lane", lane] if lane else [])


def run(*, cells: list[str], pair: list[str], cell_spec: str, blocks: list[str], lanes: list[str | None], build_dirs: list[str],
        sources: list[str], at_once: bool, out: Path, logs: list[Path]) -> None:
    """Measure the unit's cells (in their block's order; `pair`: the same as side A, side B)
    into out/<cell> (see the module's docstring)."""
    n = len(cells)
    if not (1 <= n <= 2 and len(blocks) == len(lanes) == len(build_dirs) == len(sources) == len(logs) == n):
        raise DuetError(f"run-duet: {n} cells need one --block, --lane, --build-dir, --source and --log each")
    if at_once and n != 2:
        raise DuetError("run-duet: --at-once needs the two cells of a pair")
    if sorted(pair) != sorted(cells):
        raise DuetError(f"run-duet: --pair {' '.join(pair)} is not the cells {' '.join(cells)} as side A, side B")
    with atomic.staging_dir(out) as tmp:
        # how long a side waits for the other at the rendezvous: the other's datadir copy and
        # server start (its startup timeout), twice over, and a margin
        startup = float(json.loads(cell_spec)["settings"]["startup_timeout_s"])
        duet = {"cells": list(pair), "at_once": at_once, "rendezvous": str(tmp / ".rendezvous"),
                "timeout_s": 2 * startup + 300}
        cmds = [side_command(c, cell_spec=cell_spec, block=b, lane=ln, duet=duet, build_dir=bd, source=s, out=tmp / c)
                for c, b, ln, bd, s in zip(cells, blocks, lanes, build_dirs, sources)]
        for log in logs:
            log.parent.mkdir(parents=True, exist_ok=True)
        if at_once:  # both twins' lanes locked at once, here, for the two sides (harness.measure.hostlock)
            held = sorted({i for ln in lanes if ln for i in json.loads(ln)["lanes"]})
            with hostlock.measuring(f"duet pair {' and '.join(cells)}", lanes=held or None):
                _together(cmds, logs, cells, hostlock.held_env(held) if held else {})
        else:
            for cmd, log, c in zip(cmds, logs, cells):
                _together([cmd], [log], [c])
        shutil.rmtree(tmp / ".rendezvous", ignore_errors=True)


def _together(cmds: list[list[str]], logs: list[Path], cells: list[str], env: dict | None = None) -> None:
    """Start every command, wait for all; the first failure stops the others."""
    started: list[subprocess.Popen] = []
    stop = {"sig": None}

    def pass_on(sig, _frame):
        stop["sig"] = sig
        for p in started:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass

    old = {s: signal.signal(s, pass_on) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        for cmd, log in zip(cmds, logs):
            if stop["sig"] is not None:   # interrupted before the other side started
                break
            with open(log, "w") as f:
                # a session of its own: a terminal's Ctrl-C reaches this process, which stops
                # each side once (pass_on), not the sides twice
                started.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                                                preexec_fn=procs.die_with_parent, start_new_session=True))
        failed = None
        while any(p.poll() is None for p in started):
            for p, c in zip(started, cells):
                if failed is None and p.poll() not in (None, 0):
                    failed = c
                    for q in started:  # the other side: stopped cleanly, by its pid
                        if q is not p and q.poll() is None:
                            _stop(q)
            time.sleep(0.2)
        if stop["sig"] is not None:
            raise KeyboardInterrupt(f"signal {stop['sig']}")
        if len(started) < len(cmds):
            raise DuetError(f"run-duet: {cells[len(started)]} was not started")
        bad = [(c, p.returncode, log) for p, c, log in zip(started, cells, logs) if p.returncode != 0]
        if bad:
            c, rc, log = next((b for b in bad if b[0] == failed), bad[0])
            tail = " | ".join(Path(log).read_text(errors="replace").strip().splitlines()[-2:])
            raise DuetError(f"cell {c} failed (exit {rc}; {log}): {tail}"
                            + ("; the other side was stopped" if len(cells) > 1 else ""))
    finally:
        for p in started:
            if p.poll() is None:
                _stop(p)
        for s, h in old.items():
            signal.signal(s, h)


STOP_S = 150.0  # a side's clean stop (its server's shutdown, the container's removal) before SIGTERM


def _stop(p: subprocess.Popen) -> None:
    """Stop one run-cell we started, by its pid: SIGINT and wait, then SIGTERM/SIGKILL."""
    try:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=STOP_S)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        procs.terminate(p.pid)


def main(argv=None) -> int:
    """`python -m harness run-duet`: the pipeline's run_duet job (workflow/rules/measure.smk)."""
    ap = argparse.ArgumentParser(prog="python -m harness run-duet", description=__doc__.splitlines()[0])
    ap.add_argument("--cell", required=True, nargs="+", help="the unit's cells, in their block's order")
    ap.add_argument("--pair", required=True, nargs="+", help="the same cells as side A, side B")
    ap.add_argument("--cell-spec", required=True, help="JSON from harness.plan.cells.cell_spec")
    ap.add_argument("--block", required=True, nargs="+", help="each cell's harness.plan.blocks.info JSON")
    ap.add_argument("--lane", nargs="+", help="each cell's harness.plan.lanes.job_lane JSON ('' for none)")
    ap.add_argument("--build-dir", required=True, nargs="+")
    ap.add_argument("--source", required=True, nargs="+")
    ap.add_argument("--log", required=True, nargs="+", help="each cell's run-cell log")
    ap.add_argument("--at-once", action="store_true", help="the two sides at once, on their twin lanes")
    ap.add_argument("--out", required=True, help="the unit directory (one subdirectory per cell)")
    a = ap.parse_args(argv)
    try:
        run(cells=a.cell, pair=a.pair, cell_spec=a.cell_spec, blocks=a.block,
            lanes=[x or None for x in a.lane or [""] * len(a.cell)], build_dirs=a.build_dir, sources=a.source,
            at_once=a.at_once, out=Path(a.out), logs=[Path(x) for x in a.log])
    except DuetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        print(f"interrupted ({e}); both sides stopped, nothing half-written kept", file=sys.stderr)
        return 130
    print(f"{' and '.join(a.cell)}: measured {'at once' if a.at_once else 'one after the other'} into {a.out}")
    return 0
