"""Each claim row's power on the host that measured it, and what an *inconclusive* row meant.

The power of a measurable claim row is its chance to be decided (*reproduced* or *not
reproduced*) by its experiment's last look, on the host whose cells judged it. The model is
the plan's, one implementation (harness.plan.odds.claim_odds on harness.analysis.power):
the claim's published figure taken as the truth, its shape (plain, peak, scaling), its
rule, the profile's blocks and looks at claims.level, the cells of a block, and that host's
noise: the median CoV of its A/A cells, else of every cell it measured, else the profile's
stats.cv_threshold (harness.plan.odds.noise_of on the host's tidy summaries). The noise is
the host's, never the claim's own ratio: no power is chosen from the data it then explains.
Each power is a Monte-Carlo estimate over seeded trials (power.TRIALS; fewer, at least
odds.MIN_TRIALS, for a peak over more than four loads), so its standard error is at most
sqrt(0.25 / trials).

A claim with a ratio rule but no published figure has no truth to simulate: its power is
unknown, and the row says so. A check or a wait ranking (no ratio rule) has none.

An inconclusive row is *expected* when its power is below LIKELY, a *surprise* at SURPRISE or
above, and *possible* between.
"""
from __future__ import annotations

import math

from harness import builds, paths, registry
from harness.analysis import claims as C
from harness.analysis import power as P
from harness.plan import odds as O

LIKELY = 0.5     # an inconclusive row below this power was the likely outcome
SURPRISE = 0.9   # at or above it, a surprise


def host_power(tidy, lock: dict | None = None) -> dict:
    """{"cov", "source", "claims": {claim id: its odds row (harness.plan.odds.claim_odds)}} of
    the claims with a ratio rule measured in `tidy` (one host's), on its resolved config."""
    cfg = tidy.config or {}
    summaries = {e: x.summary for e, x in tidy.experiments.items()}
    try:
        cov, source = O.noise_of(cfg, summaries, "this host's tidy summaries")
    except (KeyError, TypeError, ValueError):
        return {"cov": None, "source": "", "claims": {}}
    lock = builds.load_lock(paths.LOCK) if lock is None else lock
    out = {}
    for c in registry.claims():
        if getattr(c, "rule", None) is None or not c.experiments or c.experiments[0] not in tidy.experiments:
            continue
        try:
            out[c.id] = O.claim_odds(c, cfg, lock, cov)
        except (KeyError, TypeError, ValueError, LookupError):
            continue   # a recorded config this plan cannot read: no power, said as unknown
    return {"cov": cov, "source": source, "claims": out}


def annotate(rows: list[dict], tidy, lock: dict | None = None) -> dict:
    """Set `power` (a float, or None: unknown) and `power_note` on every measurable claim row
    with a ratio rule; returns host_power's summary (cov, source)."""
    hp = host_power(tidy, lock)
    for r in rows:
        o = hp["claims"].get(r["claim"])
        if o is None or r["verdict"] == C.NOT_MEASURABLE:
            continue
        r["power"] = o["power"]
        r["power_note"] = note(o["power"], r["verdict"])
    return hp


def note(p: float | None, verdict: str) -> str:
    """The verdict cell's line on power: 'power 0.96'; on an inconclusive row whether that
    was the likely outcome ('expected: P(decided) 0.20') or not ('a surprise: ...')."""
    if p is None:
        return "power unknown: no published figure"
    if verdict != C.INCONCLUSIVE:
        return f"power {p:.2f}"
    word = "expected" if p < LIKELY else "a surprise" if p >= SURPRISE else "possible"
    return f"{word}: P(decided) {p:.2f}"


def method_sentence(hp: dict) -> str:
    """The claims table's caption on power (plain text): method, truth, noise, trials and
    standard error."""
    if hp.get("cov") is None:
        return ""
    se = math.sqrt(0.25 / O.MIN_TRIALS)
    return (f"Power: the row's chance to be decided by its last look on this host, simulated by the "
            f"plan's model with the published figure as the true ratio, the profile's blocks, looks and "
            f"level, and a CoV of {hp['cov']:.3g} ({hp['source']}) with drift "
            f"{P.DRIFT:g}; {P.TRIALS} seeded trials per claim (at least {O.MIN_TRIALS} for a peak over "
            f"more than four loads), standard error at most {math.sqrt(0.25 / P.TRIALS):.3f} "
            f"({se:.2f}). An inconclusive row is expected below power {LIKELY:g}, a surprise at "
            f"{SURPRISE:g} or above.")
