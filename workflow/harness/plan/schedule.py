"""The wall time of a sweep on lanes (harness.plan.lanes): a list-scheduling estimate.

Assumptions (printed with the plan):
- A block piece is a block's cells of one width (the lanes a cell's core count takes);
  a block after repetitions.figures has only the cells claims read, none when no claim does;
  it runs wholly on one aligned span of that many lanes, its cells back to back. The
  pieces of one block, the blocks of one experiment and those of different experiments
  run at the same time on different spans.
- Looks are barriers: an experiment's blocks after a look wait until every block before
  it is done. Floor: repetitions.min blocks (decided at the first look); expected with
  looks: a later look's blocks weighted by the chance it runs (expected_wall_time); worst
  case: max blocks (undecided at every look).
- Datasets are prepared first, each on one lane.
- List scheduling, longest first: in each phase the pieces in decreasing lane-seconds
  (width x time), each on the span where it can start earliest; no backfilling of gaps,
  so it is an upper estimate of a good schedule, not an optimum.
- pairing: duet: a piece of an experiment with a duet factor (harness.plan.duet) whose
  width has twin spans (harness.plan.lanes.twins) takes a pair of them (twice the width)
  for half its time, its cells two at a time (a compared pair's sides at once); other
  pieces run as blocks.
- Lanes do not slow each other down (disjoint cores; memory bandwidth and shared L3,
  where the plan says a lane shares one, are not modelled). Oversubscribed lanes share
  CPUs, so the estimate counts only the lanes that do not.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from harness.plan import cells as plan
from harness.plan import duet as D
from harness.plan import lanes as L
from harness.plan import repetitions
from harness import paths

ASSUMPTIONS = ("block pieces (a block's cells of one lane width) on aligned spans of lanes, "
               "side by side; looks are barriers per experiment; datasets first, one lane each; "
               "list scheduling, longest first, no backfilling; lanes do not slow each other")
DUET = "pairing: duet: a piece takes twin spans (twice its width) for half its time"


@dataclass(frozen=True)
class Piece:
    experiment: str
    block: int
    phase: int
    width: int
    seconds: float


def _phases(spec: dict, worst: bool) -> list[tuple[int, int]]:
    """[(first block, last block)] of each phase between looks."""
    lo, hi, _ = plan.repetition_bounds(spec)
    if not worst:
        return [(1, lo)]
    marks = repetitions.schedule(spec["repetitions"])
    out, first = [], 1
    for m in marks:
        if m >= first:
            out.append((first, m))
            first = m + 1
    return out


def widths(cfg: dict, lock: dict, exp: str, lanes: L.Lanes, rep: int = 1) -> Counter:
    """{width: cells of block `rep`} of an experiment on these lanes (a block after
    repetitions.figures: only the cells claims read)."""
    return Counter(lanes.width(int(d.get("cores") or 1)) for d in plan.read_combos(cfg, lock, exp, rep))


def pieces(cfg: dict, lock: dict, rows: list[dict], lanes: L.Lanes, worst: bool) -> list[Piece]:
    """Every block piece of the sweep (rows: harness.plan.estimate's per-experiment rows)."""
    out, duet, paired = [], pairing_of(cfg) == "duet", {}
    for r in rows:
        exp = r["experiment"]
        spec = cfg["experiments"][exp]
        per_cell = r["total_s"] / r["cells"] if r["cells"] else 0.0
        fig = plan.figure_blocks(spec)
        by_width = {late: widths(cfg, lock, exp, lanes, fig + late) for late in (0, 1)}
        for phase, (first, last) in enumerate(_phases(spec, worst)):
            for b in range(first, last + 1):
                for w, n in sorted(by_width[b > fig].items()):
                    if duet and w not in paired:
                        paired[w] = bool(L.twins(lanes, w))
                    if duet and paired[w] and D.factor(spec)[0] is not None:
                        out.append(Piece(exp, b, phase, 2 * w, (n + 1) // 2 * per_cell))
                    else:
                        out.append(Piece(exp, b, phase, w, n * per_cell))
    return out


def pairing_of(cfg: dict) -> str:
    """pairing of a resolved config; one recorded before the key existed takes the defaults'."""
    return cfg.get("pairing", paths.defaults()["pairing"])


def makespan(ps: list[Piece], n_lanes: int, datasets_s: list[float] = ()) -> float:
    """The wall time of list-scheduling the pieces on `n_lanes` lanes (module docstring)."""
    free = [0.0] * n_lanes
    for s in sorted(datasets_s, reverse=True):
        i = min(range(n_lanes), key=free.__getitem__)
        free[i] += s
    start = max(free)
    free = [start] * n_lanes
    release: dict = {}
    end = start
    for phase in sorted({p.phase for p in ps}):
        done: dict = {}
        for p in sorted((p for p in ps if p.phase == phase), key=lambda p: -p.width * p.seconds):
            width = min(p.width, n_lanes)
            spans = [list(range(i, i + width)) for i in range(0, n_lanes - width + 1, width)]
            ready = release.get(p.experiment, start)
            span = min(spans, key=lambda sp: max(ready, *(free[i] for i in sp)))
            t = max(ready, *(free[i] for i in span)) + p.seconds
            for i in span:
                free[i] = t
            done[p.experiment] = max(done.get(p.experiment, 0.0), t)
            end = max(end, t)
        release.update(done)
    return end


def area_bound(ps: list[Piece], n_lanes: int, datasets_s: list[float] = ()) -> float:
    """A floor under any schedule's wall time on `n_lanes` lanes: every piece's lane-seconds
    (its width x seconds) and the datasets' seconds, spread evenly over the lanes."""
    work = sum(min(p.width, n_lanes) * p.seconds for p in ps) + sum(datasets_s)
    return work / max(1, n_lanes)


def distinct_lanes(lanes: L.Lanes) -> int:
    return max(1, len({lane.cpus for lane in lanes.lanes}))


def wall_time(cfg, lock, rows, lanes: L.Lanes, datasets_s, worst: bool) -> float:
    return makespan(pieces(cfg, lock, rows, lanes, worst), distinct_lanes(lanes), datasets_s)


def _sizes(cfg: dict) -> tuple[list[int], dict]:
    """(the profile's planned core counts, else [1]; the lane cut's client keywords)."""
    counts = sorted({n for e, spec in plan.experiments(cfg).items() for n in spec.get("cores") or []})
    return counts or [1], dict(client_min=cfg["placement"]["client_cpus"])


def choose(cfg: dict, lock: dict, rows: list[dict], topo, datasets_s) -> L.Lanes:
    """The lanes of `placement.lanes`: N lanes, or (auto) the size whose expected wall time is
    shortest (ties: the larger size), among the profile's planned core counts."""
    counts, kw = _sizes(cfg)
    if lanes_of(cfg) != "auto":
        return L.for_count(topo, int(lanes_of(cfg)), counts, **kw)
    best, best_t = None, None
    for cand in reversed(L.candidates(topo, counts, **kw)):
        t = wall_time(cfg, lock, rows, cand, datasets_s, worst=False)
        if best_t is None or t < best_t - 1e-6:
            best, best_t = cand, t
    return best if best is not None else L.for_count(topo, 1, counts, **kw)


def shared_l3(cfg: dict, lock: dict, rows: list[dict], topo, datasets_s, chosen: L.Lanes,
              chosen_s: float) -> dict | None:
    """When `auto` kept one L3 per lane's server (a host with two L3 domains or more): the
    fastest cut whose lanes' servers may share an L3, if it has more lanes and a shorter
    expected time than `chosen_s`, the chosen cut's ({lanes, size, wall_s, wall_worst_s});
    else None. The plan prints it as an
    option (`placement.lanes: N`), never takes it: shared L3 is interference a block's
    pairing cancels only while it is steady."""
    if lanes_of(cfg) != "auto" or L.l3_domains(topo) < 2:
        return None
    counts, kw = _sizes(cfg)
    best = None
    for s in counts:
        cand = L.cut(topo, s, share_l3=True, **kw)
        if cand.count <= chosen.count:
            continue
        t = wall_time(cfg, lock, rows, cand, datasets_s, worst=False)
        if t < chosen_s - 1e-6 and (best is None or t < best["wall_s"] - 1e-6):
            best = {"lanes": cand.count, "size": cand.size, "wall_s": t,
                    "wall_worst_s": wall_time(cfg, lock, rows, cand, datasets_s, worst=True)}
    return best


def lanes_of(cfg: dict):
    """placement.lanes of a resolved config; a config recorded before lanes existed (a run's
    config.resolved.yaml) takes the defaults layer's value."""
    return cfg["placement"].get("lanes", paths.defaults()["placement"]["lanes"])


def phase_weight(go_on: dict, p: Piece) -> float:
    """The chance a piece of phase p.phase runs: 1 for the first look's blocks; for later ones
    the chance its experiment is still undecided after look p.phase (go_on: harness.plan.odds);
    an experiment read only by checks and rankings is decided at its first look, one a ratio
    claim without a published figure reads goes on (harness.plan.odds.claim_odds)."""
    if p.phase == 0:
        return 1.0
    on = go_on.get(p.experiment) or []
    return on[p.phase - 1] if p.phase - 1 < len(on) else 0.0


def expected_wall_time(cfg, lock, rows, lanes: L.Lanes, datasets_s, go_on: dict) -> float:
    """The expected wall time counting the looks: every piece of the worst case, a later
    look's pieces weighted by the chance they run (phase_weight), list-scheduled as
    makespan does. A schedule of expected durations, not the expectation of the schedule's
    length: between the first-look floor and the worst case."""
    ps = [replace(p, seconds=p.seconds * phase_weight(go_on, p)) for p in pieces(cfg, lock, rows, lanes, True)]
    return makespan([p for p in ps if p.seconds > 0], distinct_lanes(lanes), datasets_s)
