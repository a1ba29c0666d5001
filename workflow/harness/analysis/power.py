"""The verdict rule's power: how often a claim of a given shape is decided, and how, at each look.

One model, used by bench/verdict_power.py (the bench's arms) and by `./artifact plan`
(harness.plan.odds: each measurable claim's odds on a host). Blocks are simulated as the
profiles run them and judged with the pipeline's own decision code
(harness.analysis.blockverdict.judge; a scaling claim's blocks built by
harness.analysis.claimmath.scaling_blocks).

A block holds `size` cells in a random order; the compared cells sit at random positions
in it. Each measurement is truth * exp(drift_t + noise): noise normal in logs with sd
sqrt(log(1 + cov^2)) (log-normal of that CoV), drift_t an AR(1) along the run order of
every cell of every block (stationary sd `drift`, lag-one correlation PHI from one cell to
the next). On several lanes (Design) each lane has its own constant log offset and its own
drift, correlated `rho` across lanes; duet pairing runs a compared pair's two sides at once
on twin lanes.

Claim shapes (`odds`):
  plain    one cell a side, A = truth, B = 1;
  peak     `loads` cells a side, both sharp (one peak, the other loads at DROP of it), A's
           peak truth times B's: judged as max over loads A / max over loads B (max-min bound);
  scaling  (A_hi/A_lo)/(B_hi/B_lo), `loads` users a group, A_hi and B_lo flat, A_lo and B_hi
           sharp, A_hi at 2 x truth, B_hi at 2: the true ratio of ratios is `truth`.
The rule is the claim's own (above / below a threshold, or within a band).
"""
from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from typing import NamedTuple

from harness.analysis import blockverdict as BV
from harness.analysis import claimmath, intervals
from harness.analysis.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Rule

PHI = 0.8                 # lag-one correlation of the drift from one cell to the next
LANE_SD = 0.05            # sd of a lane's own offset (its CoV: cores, cache, memory of its own)
LANE_RHO = 0.5            # correlation of two lanes' drifts (the host's share of it)
DROP = 0.85               # a sharp curve's other loads, relative to its peak
DRIFT = 0.05              # the drift `odds` assumes unless told (bench/verdict_power.py's SHAPE_AT)
TRIALS = 200              # seeded trials per claim shape in the plan (standard error <= 0.035)
SHAPES = ("plain", "peak", "scaling")


@dataclass(frozen=True)
class Design:
    """How a setting's blocks run: on `lanes` lanes side by side (block b on lane b mod
    lanes), or (duet) each compared pair's two sides at once on twin lanes, swapped between
    blocks. `offset`: sd of a lane's own log offset; `rho`: correlation of the lanes' drifts."""
    lanes: int = 1
    pairing: str = "block"
    offset: float = 0.0
    rho: float = LANE_RHO

    @property
    def twins(self) -> int:
        return max(1, self.lanes // 2)


ONE = Design()


def draw(rng: random.Random, n: int, size: int, truths, cov: float, drift: float,
         design: Design = ONE) -> list[tuple]:
    """n blocks of `size` cells; the cells of `truths` at random positions in each block,
    each lane's drift an AR(1) along the run (sampled exactly at the times used), shared
    across lanes with correlation design.rho (one lane: the host's drift is the lane's);
    a lane's offset constant. Blocks run in rounds, one block per lane (duet: two blocks
    after one another per twin pair)."""
    sig = math.sqrt(math.log1p(cov * cov))
    size = max(size, len(truths))
    state = _State(rng, drift, design)
    per = 2 * design.twins if design.pairing == "duet" else design.lanes
    out = []
    for first in range(0, n, per):
        events = []
        for blk in range(first, min(n, first + per)):
            events += _events(rng, blk, size, len(truths), design)
        row_of = {}
        for t, lane, blk, k in sorted(events):
            x = state.at(lane, t)
            row_of.setdefault(blk, [0.0] * len(truths))[k] = 1000.0 * truths[k] * math.exp(
                x + sig * rng.gauss(0.0, 1.0))
        out += [tuple(row_of[b]) for b in sorted(row_of)]
    return out


def _events(rng, blk: int, size: int, m: int, design: Design) -> list[tuple]:
    """(time, lane, block, cell) of one block: block design, each cell at its own random
    position on lane blk mod lanes; duet, as the pipeline runs it (workflow/rules/measure.smk
    duet_run): pair k = (k, k + m/2) at one random slot of the block's size/2, blocks 2j
    and 2j+1 (mod 2 x twins) on twin pair j one after the other, side A on twin 0 in the
    first and on twin 1 in the second."""
    if design.pairing != "duet":
        lane, start = blk % design.lanes, (blk // design.lanes) * size
        pos = rng.sample(range(size), m)
        return [(start + pos[k], lane, blk, k) for k in range(m)]
    half, pairs = (size + 1) // 2, m // 2
    j, turn = (blk // 2) % design.twins, (blk // (2 * design.twins)) * 2 + blk % 2
    a, b = (2 * j, 2 * j + 1) if blk % 2 == 0 else (2 * j + 1, 2 * j)
    slots = rng.sample(range(half), pairs)
    return ([(turn * half + slots[k], a, blk, k) for k in range(pairs)]
            + [(turn * half + slots[k], b, blk, k + pairs) for k in range(pairs)])


class _State:
    """The lanes' log offsets and drifts: x_lane(t) = offset + sqrt(rho) g(t) + sqrt(1-rho) e_lane(t),
    g and e AR(1) processes (lag-one correlation PHI per cell, stationary sd drift); one lane: g only."""

    def __init__(self, rng, drift, design: Design):
        self.rng, self.drift, self.n = rng, drift, design.lanes
        self.g = [rng.gauss(0.0, drift) if drift else 0.0, 0]
        self.own: dict = {}
        self.w = (1.0, 0.0) if design.lanes == 1 else (math.sqrt(design.rho), math.sqrt(1 - design.rho))
        sd = math.sqrt(math.log1p(design.offset ** 2))
        self.offset = [rng.gauss(0.0, sd) if sd else 0.0 for _ in range(design.lanes)]

    def _step(self, proc, t):
        if self.drift:
            r = PHI ** (t - proc[1])
            proc[0] = r * proc[0] + self.drift * math.sqrt(1 - r * r) * self.rng.gauss(0.0, 1.0)
            proc[1] = t
        return proc[0]

    def at(self, lane: int, t: int) -> float:
        x = self.w[0] * self._step(self.g, t)
        if self.w[1]:
            if lane not in self.own:
                self.own[lane] = [self.rng.gauss(0.0, self.drift) if self.drift else 0.0, t]
            x += self.w[1] * self._step(self.own[lane], t)
        return self.offset[lane] + x


def sharp(loads: int) -> tuple:
    return (1.0,) + (DROP,) * (loads - 1)


def flat(loads: int) -> tuple:
    return (1.0,) * loads


def scaling_truths(ratio: float, users: int) -> list[float]:
    """A_hi (flat, 2 x ratio), A_lo (sharp), B_hi (sharp, 2), B_lo (flat): a ratio of ratios of
    peaks equal to `ratio`, shaped so that choosing each group's best cell is fooled."""
    return ([2 * ratio * x for x in flat(users)] + list(sharp(users)) + [2 * x for x in sharp(users)]
            + list(flat(users)))


def scaling_sides(rows, users: int) -> tuple[list, list]:
    """The (numerator, denominator) blocks of the scaling judge from drawn rows of
    scaling_truths' cells (claimmath.scaling_blocks, as the claims build them)."""
    groups = [[{i: r[g * users + u] for i, r in enumerate(rows)} for u in range(users)] for g in range(4)]
    _, num, den = claimmath.scaling_blocks(*groups)
    return num, den


class Odds(NamedTuple):
    """A claim shape's simulated outcome: `decided[k]` the chance it is decided at or before
    look k+1 (cumulative), `reproduced` / `not_reproduced` by the last look; over `trials`."""
    decided: tuple
    reproduced: float
    not_reproduced: float
    trials: int

    @property
    def inconclusive(self) -> float:
        return 1.0 - self.reproduced - self.not_reproduced

    def undecided_after(self, look: int) -> float:
        """The chance it is still undecided after look `look` (1-based)."""
        return 1.0 - self.decided[look - 1]


@functools.lru_cache(maxsize=1024)
def odds(shape: str, rule: tuple, truth: float, cov: float, bounds: tuple, size: int, loads: int = 1,
         drift: float = DRIFT, level: float = 0.9, trials: int = TRIALS, seed: int = 1,
         design: Design = ONE) -> Odds:
    """The odds of a claim of `shape` (plain, peak, scaling) with `rule` (side, threshold,
    threshold_hi) at a true ratio `truth`, on blocks of `size` cells with noise `cov` and
    `drift`, judged on the `bounds` (min, max, looks) at `level`: `trials` seeded trials.
    Cached: the same arguments give the same figures at once."""
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r}: one of {', '.join(SHAPES)}")
    lo, hi, looks = bounds
    schedule = intervals.look_schedule(lo, hi, looks)
    irule = Rule(*rule)
    rng = random.Random(f"{seed}:{shape}:{rule}:{truth}:{cov}:{drift}:{bounds}:{size}:{loads}:{level}")
    at = [0] * len(schedule)
    rep = nrep = 0
    for _ in range(trials):
        v, used = trial(rng, shape, irule, truth, cov, bounds, size, loads, drift, level, design)
        if v != INCONCLUSIVE:
            at[schedule.index(used)] += 1
        rep += v == REPRODUCED
        nrep += v == NOT_REPRODUCED
    cum, run = [], 0
    for k in at:
        run += k
        cum.append(run / trials)
    return Odds(tuple(cum), rep / trials, nrep / trials, trials)


def trial(rng, shape, rule, truth, cov, bounds, size, loads, drift, level, design=ONE) -> tuple[str, int]:
    """One simulated claim: (verdict, blocks used) by the pipeline's judge."""
    hi = bounds[1]
    if shape == "plain":
        rows = draw(rng, hi, size, (truth, 1.0), cov, drift, design)
        a, b, peaks = [r[0] for r in rows], [r[1] for r in rows], False
    elif shape == "peak":
        rows = draw(rng, hi, size, tuple(truth * x for x in sharp(loads)) + sharp(loads), cov, drift, design)
        a, b, peaks = [r[:loads] for r in rows], [r[loads:] for r in rows], True
    else:
        rows = draw(rng, hi, size, scaling_truths(truth, loads), cov, drift, design)
        (a, b), peaks = scaling_sides(rows, loads), True
    j = BV.judge(a, b, rule, level, bounds, True, peaks=peaks)
    return j.verdict, j.n[0]
