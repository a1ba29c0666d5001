"""Is a cell on disk the one this profile plans? Decided by its settings digest
(harness.measure.digest), never by its path: smoke and default cells share paths.

A cell at a planned path is

- CURRENT: its manifest's `settings_digest` is the one the profile plans for it: reused;
- STALE: another digest (another profile's, or settings changed since): to do. The
  pipeline moves it aside first (`harness supersede`, to
  `data/partial/<study>/<experiment>/<cell>.superseded-<tag>/`, never deleted) and
  measures the cell again;
- LEGACY: a manifest without a digest (measured before cells recorded one): to do, as
  STALE (its settings cannot be checked); a replot still reads it, and says so;
- MISSING: no cell (or no readable manifest).

The estimate's "to do" (harness.plan.estimate), the pipeline's re-measuring
(workflow/rules/measure.smk: `stale_inputs`), a replot's choice of cells and the title
page's run facts (harness.report.runinfo) all ask `status`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

from harness.measure import digest
from harness.plan import blocks, cells as plan, duet

CURRENT, STALE, LEGACY, MISSING = "current", "stale", "legacy", "missing"
PARTIAL = blocks.PARTIAL
ORDER = "data/order"

_REQ: dict = {}


def planned(cfg: dict, lock: dict, exp: str, name: str) -> dict:
    """The digest's inputs of cell `name` of `exp` as this profile plans it."""
    key = (id(cfg), exp)
    if key not in _REQ:
        _REQ[key] = (cfg, json.loads(plan.cell_spec(cfg, exp)))
    return digest.inputs(_REQ[key][1], plan.parse_cell(cfg, exp, name), lock)


def planned_digest(cfg: dict, lock: dict, exp: str, name: str) -> str:
    return digest.of(planned(cfg, lock, exp, name))


def read_manifest(cell_dir: str) -> dict | None:
    try:
        with open(os.path.join(cell_dir, "manifest.json")) as f:
            m = json.load(f)
        return m if isinstance(m, dict) else None
    except (OSError, ValueError):
        return None


def status(cfg: dict, lock: dict, exp: str, cell_dir: str) -> str:
    """CURRENT, STALE, LEGACY or MISSING (module docstring)."""
    if not os.path.isdir(cell_dir):
        return MISSING
    m = read_manifest(cell_dir)
    if m is None:
        return MISSING
    have = m.get("settings_digest")
    if not have:
        return LEGACY
    return CURRENT if have == planned_digest(cfg, lock, exp, os.path.basename(cell_dir)) else STALE


def units_of(cfg: dict, exp: str, names: list[str]) -> list[tuple[str, ...]]:
    """The jobs among `names` (cells of any blocks): a group's cells (its users on one server
    start), a duet unit's (pairing: duet), else each cell alone, as workflow/rules/measure.smk
    runs them (a grouped experiment never runs as duets)."""
    if plan.grouped(cfg, exp):
        by: dict = {}
        for n in names:
            by.setdefault((plan.group_of(cfg, exp, n), plan.parse_cell(cfg, exp, n)["rep"]), []).append(n)
        return [tuple(v) for v in by.values()]
    if duet.active(cfg, exp):
        return duet.units(cfg, exp, names)
    return [(n,) for n in names]


def todo(cfg: dict, lock: dict, exp: str, cell_dirs: list[str]) -> list[str]:
    """The cells of `cell_dirs` a run measures: every one not CURRENT, and the CURRENT ones of a
    unit (units_of) that is measured again whole because a sibling is (stale_inputs)."""
    st = {d: status(cfg, lock, exp, d) for d in cell_dirs}
    by_name = {os.path.basename(d): d for d in cell_dirs}
    again = set()
    for unit in units_of(cfg, exp, list(by_name)):
        dirs = [by_name[n] for n in unit]
        if any(st[d] != CURRENT for d in dirs):
            again.update(dirs)
    return [d for d in cell_dirs if d in again]


def manifest_tag(cell_dir: str) -> str:
    """12 hex of the sha256 of the cell's manifest.json: names this very measurement."""
    with open(os.path.join(cell_dir, "manifest.json"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


def marker(exp: str, cell: str, tag: str, root: str = ORDER) -> str:
    return f"{root}/{exp}/{cell}.superseded-{tag}"


def stale_inputs(cfg: dict, lock: dict, exp: str, names: list[str]) -> dict:
    """Snakemake inputs of the job measuring `names` (a cell, a group, a duet unit): one
    supersede marker per cell on disk that is not CURRENT. The marker does not exist, so the
    rule `supersede` runs first (moving the cell aside) and the job measures again. A unit of
    several cells is measured whole: when any of them is to do, its CURRENT cells get a marker
    too, so they are set aside rather than deleted by the job that measures them again."""
    dirs = {n: plan.cell_dir(cfg, exp, n) for n in names}
    sts = {n: status(cfg, lock, exp, d) for n, d in dirs.items()}
    whole = len(names) > 1 and any(st != CURRENT for st in sts.values())
    return {f"supersede_{n}": marker(exp, n, manifest_tag(dirs[n])) for n in names
            if sts[n] in (STALE, LEGACY) or (whole and sts[n] == CURRENT)}


def supersede(cell_dir: str, tag: str, raw: str = "data/raw", partial: str = PARTIAL) -> str | None:
    """Move the cell at `cell_dir` (if it is still the measurement `tag` names) to
    data/partial/<study>/<experiment>/<cell>.superseded-<tag>/; where it went, or None
    (already gone: an interrupted block's set-aside took it, or it was moved before)."""
    if not os.path.isdir(cell_dir) or read_manifest(cell_dir) is None or manifest_tag(cell_dir) != tag:
        return None
    return blocks.move_aside(cell_dir, f"superseded-{tag}", raw, partial)


def replot_cells(cfg: dict, lock: dict, exp: str, cell_dirs: list[str], say=None) -> list[str]:
    """The existing cells a replot reads: CURRENT and LEGACY ones (the latter said once);
    a STALE cell (another profile's, or other settings) is left out and said."""
    keep, stale, legacy = [], [], []
    for d in cell_dirs:
        st = status(cfg, lock, exp, d)
        if st in (CURRENT, LEGACY):
            keep.append(d)
        (stale if st == STALE else legacy if st == LEGACY else []).append(d)
    say = say or (lambda s: print(s, file=sys.stderr))
    if stale:
        say(f"replot: {exp}: {len(stale)} cell(s) measured with other settings than profile "
            f"{cfg['profile']} plans stay out (e.g. {stale[0]}; their digest_inputs say what differs)")
    if legacy:
        say(f"replot: {exp}: {len(legacy)} cell(s) carry no settings digest (measured before cells "
            f"recorded one): read, their settings unchecked (e.g. {legacy[0]})")
    return keep


def left_out(cfg: dict, lock: dict, exp: str, cell_dirs: list[str], raw: str = "data/raw",
             partial: str = PARTIAL) -> str | None:
    """Why a replot has no cell of `exp` when cells of it exist, only of other settings (its
    `cell_dirs`: the planned ones; the run then marks the experiment not run, and this is
    the reason its claims and tidy data give): those in the raw root that carry another
    settings digest (left out where they are), else those a measuring run already moved to
    data/partial/ (superseded-*); None when there is no such cell (nothing was measured)."""
    if not cell_dirs:
        return None
    where = os.path.dirname(cell_dirs[0])              # <raw>/<study>/<experiment>
    again = (f"./artifact paper with config/{cfg['profile']}.yaml measures them again "   # no '--': TeX
             f"(it first moves the old ones to {partial}/)")                                # reads an en dash
    stale = [d for d in cell_dirs if os.path.isdir(d) and status(cfg, lock, exp, d) == STALE]
    if stale:
        return (f"experiment: {exp}: its {len(stale)} cell(s) in {where}/ were measured under other settings "
                f"than profile {cfg['profile']} plans (another profile's, or settings changed since): set aside, "
                f"not read by this replot; {again}")
    aside = os.path.join(partial, os.path.relpath(where, raw))
    moved = sorted(n for n in (os.listdir(aside) if os.path.isdir(aside) else []) if ".superseded-" in n)
    if moved:
        return (f"experiment: {exp}: its {len(moved)} cell(s) measured under other settings than profile "
                f"{cfg['profile']} plans were set aside in {aside}/ by a run that did not measure them again; "
                f"{again.split(' (')[0]}")
    return None


def main(argv=None) -> int:
    """python -m harness supersede --cell-dir DIR --tag TAG --out MARKER (rule supersede)."""
    from harness import atomic
    ap = argparse.ArgumentParser(prog="python -m harness supersede",
                                 description="set a cell of other settings aside (data/partial/) before it is measured again")
    ap.add_argument("--cell-dir", required=True)
    ap.add_argument("--tag", required=True, help="the manifest's tag (manifest_tag)")
    ap.add_argument("--out", required=True, help="the marker written once done")
    a = ap.parse_args(argv)
    dest = supersede(a.cell_dir, a.tag)
    if dest:
        print(f"{a.cell_dir} was measured with other settings: set aside in {dest}", file=sys.stderr)
    atomic.write_text(a.out, (dest or "") + "\n")
    return 0
