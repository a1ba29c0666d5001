"""Blocks: repetition r of an experiment is block r. Inside a block every cell of the
experiment runs once, back to back, in a seeded random order, so that drift of the
host along the run lands on every setting alike and the settings a claim compares
can be paired by block (randomized multiple interleaved trials).

The order of block r is a permutation of its cell names (sorted, then shuffled by
random.Random(seed)), with the cells of a group (one server start for the users of a
setting: harness.plan.cells.grouped) kept together, the groups shuffled and then the
cells inside each; the seed is derived from the profile's `sysbench.seed`, the
experiment's name and r (sha256, first 48 bits), so it is the same on every host
and run, and it is recorded in every cell's manifest (`block`: id, position,
seed, size) and in the block's `data/order/<experiment>.r<r>.a<attempt>.open` file.

Only complete blocks count. A block is complete when all its cells exist. Its
state on disk, read once when the pipeline plans (`state`):

- untouched: none of its cells exists;
- complete: all exist;
- interrupted: some but not all exist, and the block has not completed since it
  was last opened (`.done` missing or older than its latest `.open`). The pipeline
  then re-runs the block whole: its cells' input becomes the next attempt's
  `.open` (a file that does not exist yet, so Snakemake runs `block_open` and, after
  it, every cell of the block, in the block's order); `block_open` first sets the
  cells the interrupted attempt left aside (moved to
  `data/partial/<study>/<experiment>/<cell>.attempt<n>/`, never deleted);
- reopened: some but not all exist, after the block had completed (`.done`
  newer than its latest `.open`): someone removed a cell to measure it again. Only
  the missing cells are measured (re-measuring one cell re-runs nothing else; a cell
  of a group is measured again with its group, and a cell of a duet pair with its
  partner (harness.plan.duet), whose other cells are replaced).

The attempt is the largest n of the block's `.a<n>.open` files (1 when there is
none), one more when the block is interrupted: the same once the block is
complete again, so a cell's recorded inputs never change after it is measured.
"""
from __future__ import annotations

import glob
import hashlib
import os
import random
import re

from harness.plan import cells as plan, lanes as L

ORDER = "data/order"
PARTIAL = "data/partial"
UNTOUCHED, COMPLETE, INTERRUPTED, REOPENED = "untouched", "complete", "interrupted", "reopened"


def block_seed(cfg: dict, exp: str, block: int) -> int:
    """The seed of block `block`'s order: from sysbench.seed, the experiment and the block."""
    text = f"{cfg['sysbench']['seed']}:{exp}:{block}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


def order(cfg: dict, lock: dict, exp: str, block: int) -> list[str]:
    """The cell names of block `block` in the order they are measured: its groups
    (harness.plan.cells.group_of: one server start each) shuffled, then the cells of
    each group, by the same generator. Groups of one cell leave it exactly the shuffle
    of the sorted names (a one-element shuffle draws nothing). Under pairing: duet, each
    pair's second cell then moves up behind its first (harness.plan.duet.order)."""
    groups: dict[str, list[str]] = {}
    for n in sorted(plan.cell_names(cfg, lock, exp, rep=block)):
        groups.setdefault(plan.group_of(cfg, exp, n), []).append(n)
    rng = random.Random(block_seed(cfg, exp, block))
    keys = list(groups)
    rng.shuffle(keys)
    out = []
    for k in keys:
        rng.shuffle(groups[k])
        out += groups[k]
    from harness.plan import duet
    if duet.active(cfg, exp):  # pairing: duet: each pair's two cells together, in the shuffle's order
        out = duet.order(cfg, exp, out)
    return out


def info(names: list[str], name: str, block: int, seed: int) -> dict:
    """The manifest's `block`: its id (= the repetition), the cell's 1-based position
    in the block's order, the seed of that order and the block's size."""
    return {"id": block, "position": names.index(name) + 1, "seed": seed, "size": len(names)}


def open_path(exp: str, block: int, attempt_no: int, root: str = ORDER) -> str:
    return f"{root}/{exp}.r{block}.a{attempt_no}.open"


def done_path(exp: str, block: int, root: str = ORDER) -> str:
    return f"{root}/{exp}.r{block}.done"


def look_path(exp: str, look: int, root: str = ORDER) -> str:
    return f"{root}/{exp}.look{look}.json"


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def stored_attempt(exp: str, block: int, root: str = ORDER) -> int:
    """The latest attempt of the block with an .open file (0 if there is none)."""
    pat = re.compile(re.escape(f"{exp}.r{block}.a") + r"(\d+)\.open$")
    found = [pat.match(os.path.basename(p)) for p in glob.glob(os.path.join(root, f"{exp}.r{block}.a*.open"))]
    return max((int(m.group(1)) for m in found if m), default=0)


def state(cell_dirs: list[str], exp: str, block: int, root: str = ORDER) -> str:
    """untouched, complete, interrupted or reopened (module docstring)."""
    have = sum(1 for d in cell_dirs if os.path.isdir(d))
    if have == 0:
        return UNTOUCHED
    if have == len(cell_dirs):
        return COMPLETE
    last = stored_attempt(exp, block, root)
    opened = _mtime(open_path(exp, block, last, root)) if last else None
    done = _mtime(done_path(exp, block, root))
    if opened is not None and done is not None and done >= opened:
        return REOPENED
    return INTERRUPTED


def attempt(st: str, exp: str, block: int, root: str = ORDER) -> int:
    """The attempt whose .open the block's cells wait for: the latest, one more for an
    interrupted block, at least 1."""
    return max(1, stored_attempt(exp, block, root) + (1 if st == INTERRUPTED else 0))


def set_aside(cell_dirs: list[str], attempt_no: int, raw: str = "data/raw",
              partial: str = PARTIAL) -> list[str]:
    """Move the existing cells of an interrupted block out of data/raw (kept under
    data/partial, never deleted); return where they went."""
    moved = [move_aside(d, f"attempt{attempt_no}", raw, partial) for d in cell_dirs if os.path.isdir(d)]
    return [m for m in moved if m]


def move_aside(cell_dir: str, suffix: str, raw: str = "data/raw", partial: str = PARTIAL) -> str | None:
    """Move `cell_dir` to data/partial/<its path under raw>.<suffix>[.<n>] (the first free
    name; kept, never deleted); where it went, or None when it was gone meanwhile (set aside
    by an interrupted block's set_aside or as a cell of other settings, harness supersede)."""
    rel = os.path.relpath(cell_dir, raw)
    dest = os.path.join(partial, f"{rel}.{suffix}")
    n = 1
    while os.path.exists(dest):
        n += 1
        dest = os.path.join(partial, f"{rel}.{suffix}.{n}")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    try:
        os.replace(cell_dir, dest)
    except FileNotFoundError:
        return None
    return dest


def blocks_reached(cfg: dict, lock: dict, exp: str, raw: str = "data/raw") -> int:
    """The blocks a run of the experiment planned, as its cells on disk show: its min, or
    the last block (up to max) with a cell, if later."""
    lo, hi, _ = plan.repetition_bounds(cfg["experiments"][exp])
    for r in range(hi, lo, -1):
        if any(os.path.isdir(c) for c in plan.cells(cfg, lock, exp, r, raw)):
            return r
    return lo


def opened_by(block: int, lanes: int) -> int | None:
    """The block whose end opens block `block` when `lanes` blocks of an experiment run at a
    time (block r opens when block r - lanes is done); None: it opens at once."""
    n = lanes or 1
    return block - n if block > n else None


def group_run(cfg: dict, exp: str, head: str, block: int, names: list[str]) -> list[str]:
    """The cells of group `head` of block `block` in the block's order `names` (the rule
    run_group_*'s outputs are every users value of the setting: all must be planned)."""
    members = set(plan.group_cells(cfg, exp, head, block))
    run = [n for n in names if n in members]
    if len(run) != len(members):
        raise ValueError(f"group {head}_r{block} of {exp}: only {len(run)} of its {len(members)} "
                         f"users values are planned; set sysbench.users_on_one_server: false")
    return run


def cell_lane(cfg: dict, lanes, experiments, exp: str, cell: str) -> dict:
    """The lane of the job measuring `cell` (and its group): its block's lane (lanes.block_lane),
    the span of it the cell's cores take (lanes.job_lane)."""
    d = plan.parse_cell(cfg, exp, cell)
    base = L.block_lane(experiments, exp, d["rep"], lanes.count)
    return L.job_lane(lanes, base, int(d.get("cores") or 1))
