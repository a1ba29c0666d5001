"""The per-lane measurement lock (harness.measure.hostlock with lanes) and the lanes' busy
record (harness.measure.lanebusy), on real processes and files."""
from __future__ import annotations

import select
import subprocess
import sys
import time

from conftest import harness_env
from harness.measure import hostlock, lanebusy

HOLD = ("import sys, time; from harness.measure import hostlock\n"
        "lanes = [int(x) for x in sys.argv[1:]] or None\n"
        "with hostlock.measuring('test holder', lanes=lanes):\n print('held', flush=True); time.sleep(30)")


def holder(lock, *lanes) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLD, *map(str, lanes)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**harness_env(), hostlock.LOCK_VAR: str(lock)})


def waits(lock, *lanes, timeout=1.5) -> bool:
    """Does a holder of `lanes` (none: the whole host) wait while the others hold theirs?"""
    p = holder(lock, *lanes)
    try:
        ready, _, _ = select.select([p.stdout], [], [], timeout)
        return not ready
    finally:
        p.kill()
        p.wait()


def test_cells_of_one_lane_wait_cells_of_another_do_not_the_whole_host_waits_for_all(tmp_path):
    lock = tmp_path / "measure.lock"
    first = holder(lock, 0)
    try:
        assert first.stdout.readline().strip() == "held"
        assert waits(lock, 0)           # lane 0 is busy
        assert not waits(lock, 1)       # lane 1 is not
        assert waits(lock)              # a dataset (the whole host) waits for every lane
        assert waits(lock, 0, 1)        # a cell spanning both lanes waits for lane 0
    finally:
        first.kill()
        first.wait()
    assert not waits(lock, 0)           # the kernel dropped the killed holder's locks


def test_a_cell_sees_which_other_lanes_were_busy_in_its_window(tmp_path):
    t0 = time.time()
    lanebusy.start(tmp_path, [1], "other")
    time.sleep(0.05)
    lanebusy.end(tmp_path, [1], "other")
    lanebusy.start(tmp_path, [0], "mine")
    t1 = time.time()
    assert lanebusy.concurrent(tmp_path, [0], t0, t1) == [{"lane": 1, "cells": ["other"]}]
    assert lanebusy.concurrent(tmp_path, [0], t1 + 1, t1 + 2) == []          # ended before the window
    lanebusy.start(tmp_path, [2], "running")                                   # no end yet, process alive
    assert {c["lane"] for c in lanebusy.concurrent(tmp_path, [0], t0, time.time() + 1)} == {1, 2}
    (tmp_path / "lanes" / "lane3.jsonl").write_text('{"cell": "killed", "pid": 999999999, "start": 0}\n')
    assert 3 not in {c["lane"] for c in lanebusy.concurrent(tmp_path, [0], t0, time.time() + 1)}
