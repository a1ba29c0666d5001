"""The ground every claim kind stands on: the verdict names and the `claims:`
settings, the published side of a ratio (Rule: above / below / within) and the
tolerances no study word gives (STATED, EQUIVALENT, CLOSE).

The rest of the claim engine, by what it holds: harness.analysis.claimresult (what
one claim row says, the context a claim is judged in), claimpick (how a comparison
picks its cells), claimmath (ratio, peak and scaling maths), claimtext (how a row is
written). harness.analysis.claims explains the verdict rule and re-exports these
names; the kinds of claim are in harness.analysis.claimkinds, the wait-event claim
in harness.analysis.waits.
"""
from __future__ import annotations


from harness import paths
from harness.analysis import verdict as V
from harness.analysis.verdict import Rule

REPRODUCED, NOT_REPRODUCED = V.REPRODUCED, V.NOT_REPRODUCED
INCONCLUSIVE, NOT_MEASURABLE = V.INCONCLUSIVE, V.NOT_MEASURABLE
VERDICTS = V.VERDICTS

METRIC = "qps_server"     # what verdicts use: the server's own count
CROSS_CHECK = "qps"       # sysbench's count, reported beside it

# Config keys read from `claims:`, and their types (their defaults: config/default.yaml).
SETTINGS = {"level": float, "decide": bool}

CONTENTION, SCALING = "contention", "scaling"
NEEDS_TEXT = {CONTENTION: "contention: mysqld on several cores",
              SCALING: "scaling: two core counts, mysqld on several cores"}
# A study's "cores" are the hardware threads it gave mysqld (taskset); the count a
# contention or scaling claim needs is its own (Claim.min_cores), from the study's figures.

CSV_FIELDS = ("claim", "study", "statement", "published", "published_ratio", "measured",
              "ratio", "ratio_lo", "ratio_hi", "coverage", "level", "method", "look", "sign_lo",
              "sign_hi", "sign_coverage", "magnitude", "threshold", "threshold_hi", "side",
              "n", "verdict", "reason", "needs", "experiment", "build", "metric", "cross_check")


def setting(config: dict | None, key: str):
    """A `claims:` key of the resolved config; what a config leaves out (a tidy without
    config.resolved.yaml, a test's partial config) is config/default.yaml's."""
    claims_cfg = {**paths.defaults()["claims"],
                  **((config or {}).get("claims") or {})}
    value, cast = claims_cfg[key], SETTINGS[key]
    try:
        value = cast(value)
    except (TypeError, ValueError):
        raise ValueError(f"claims.{key}: {value!r} is not a {cast.__name__}; "
                         f"set it as config/default.yaml does") from None
    if key == "level" and not 0 < value < 1:
        raise ValueError(f"claims.level: {value} must be between 0 and 1 (e.g. 0.9)")
    return value


# --- rules (the published side: harness.analysis.verdict.Rule) -------------------

def above(t, why=""):
    return Rule("above", t, None, why)


def below(t, why=""):
    return Rule("below", t, None, why)


def within(lo, hi, why=""):
    return Rule("within", lo, hi, why)


# --- the tolerances: every band a study's words do not give, stated once here -------------
# (docs/studies.md, "The claims in the studies' words", cites them by these names)

# A figure a study states (a factor "x1.5", a percentage "about 40%"): a band around it,
# x/÷ STATED. Chosen here: the published figures are single runs on hardware long gone, so
# the band is wide; 1.25 is the widest round tolerance for which the band of the smallest
# stated effect judged as a band (x1.33, C1's "33%") still excludes 1, so a band verdict
# says more than a direction does. The one smaller figure, B2's lead of at most 8%, is a
# bound, not a band: [1, 1.08] with only its upper end widened by STATED, so 1 stays out.
STATED = 1.25
# "No difference", "did not help": a band x/÷ EQUIVALENT around 1. Chosen here: 5% is the
# smallest effect any published ratio claim of the studies states (A3's 200K vs 210K, 0.95x),
# so an interval inside it shows no effect of the size the studies talk about.
EQUIVALENT = 1.05
# "Very close" (C1's legacy database against InnoDB, 183.01 s vs 184.75 s): x/÷ CLOSE.
# Chosen here: the study's word is looser than "no difference", so a wider band than
# EQUIVALENT; 10% is half the smallest stated effect that the study calls an improvement
# (ARCHIVE's 33% over MyISAM is x1.49; MyISAM's 40% is x1.68).
CLOSE = 1.10


def stated(x: float, words: str) -> Rule:
    """A stated figure x (a ratio): within [x / STATED, x * STATED]."""
    return within(x / STATED, x * STATED, f"{words}: the stated figure x/÷{STATED:g} "
                                          f"(claimrules.STATED, chosen here)")


def equivalent(words: str) -> Rule:
    """'No difference' / 'did not help': within [1 / EQUIVALENT, EQUIVALENT]."""
    return within(1 / EQUIVALENT, EQUIVALENT, f"{words}: within x/÷{EQUIVALENT:g} of 1 "
                                              f"(claimrules.EQUIVALENT, chosen here)")


def close(words: str) -> Rule:
    """'Very close': within [1 / CLOSE, CLOSE]."""
    return within(1 / CLOSE, CLOSE, f"{words}: within x/÷{CLOSE:g} of 1 (claimrules.CLOSE, chosen here)")
