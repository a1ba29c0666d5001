"""When each lane was busy: one JSON line per start and end of a measurement in
`data/lanes/lane<i>.jsonl` (appended, never rewritten), so a cell can say at the end
of its window which other lanes measured during it (its manifest's `concurrent`).

A start without its end counts as busy up to now while its process lives (a running
cell) and not at all once it is gone (a killed one).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

DIR = "lanes"


def _file(data: Path, lane: int) -> Path:
    return Path(data) / DIR / f"lane{lane}.jsonl"


def _append(data: Path, lanes, row: dict) -> None:
    for lane in lanes:
        f = _file(data, lane)
        f.parent.mkdir(parents=True, exist_ok=True)
        with open(f, "a") as fh:  # one short write in append mode: lines never interleave
            fh.write(json.dumps(row) + "\n")


def start(data: Path, lanes, cell: str) -> None:
    _append(data, lanes, {"cell": cell, "pid": os.getpid(), "start": time.time()})


def end(data: Path, lanes, cell: str) -> None:
    _append(data, lanes, {"cell": cell, "pid": os.getpid(), "end": time.time()})


def intervals(data: Path, lane: int, now: float | None = None) -> list[tuple[str, float, float]]:
    """(cell, start, end) of lane `lane`'s measurements; a running one ends `now`."""
    now = time.time() if now is None else now
    f = _file(data, lane)
    if not f.exists():
        return []
    open_: dict = {}
    out = []
    for line in f.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:  # a line cut by a crash
            continue
        key = (row.get("cell"), row.get("pid"))
        if "start" in row:
            open_[key] = row["start"]
        elif "end" in row and key in open_:
            out.append((key[0], open_.pop(key), row["end"]))
    out += [(c, t, now) for (c, pid), t in open_.items() if Path(f"/proc/{pid}").exists()]
    return out


def concurrent(data: Path, own, t0: float, t1: float) -> list[dict]:
    """The other lanes busy during [t0, t1]: [{lane, cells}] (lanes on the same CPUs included)."""
    own = set(own)
    out = []
    for f in sorted(Path(data, DIR).glob("lane*.jsonl")):
        lane = int(f.stem.removeprefix("lane"))
        if lane in own:
            continue
        cells = sorted({c for c, s, e in intervals(data, lane, t1) if s < t1 and e > t0})
        if cells:
            out.append({"lane": lane, "cells": cells})
    return out
