"""Published claims, judged on the repetitions of the measured cells.

The claims themselves live with their study (harness.studies.<study>); this
module is the machinery every study shares: the kinds of claim, how a
comparison picks its cells, the one gate for claims a small host cannot
test, and the verdict rule.

Verdict rule. A comparison claim declares a side (above / below / within) and
a threshold for the ratio of two settings of the server's own statement
count (`qps_server`, without BEGIN/COMMIT; sysbench's `qps` is a cross-check
column only), every other factor held fixed. The cells' repetitions are
blocks, paired by `rep`: the exact Wilcoxon signed-rank interval of the
per-block log ratios (Hodges-Lehmann point; the sign-test interval beside it;
Mann-Whitney where the sides share no repetition). "At best" (each side at its
peak over the users and cores both measured) chooses no cell from the data:
the interval of max A / max B is the max-min bound of every pair of loads'
intervals (harness.analysis.intervals.max_min_interval, valid for any shape
of the curves), and a scaling claim's ratio of ratios of peaks the same bound
on the per-block products of its four groups. Looked at on the experiment's
`repetitions` schedule at the Bonferroni per-look level and frozen at the
first look that decides it (harness.analysis.blockverdict). *reproduced* only
when the whole interval lies on the published side at a coverage of at least
that level, *not reproduced* when wholly on the other side, *inconclusive*
otherwise (with how many blocks of max were measured). Every ratio row also
says where the published ratio lies against the interval (`magnitude`).
Cells flagged unstable are named in the reason of every verdict they feed.

One gate (NEEDS). A claim whose published mechanism is contention between
threads running on several cores (a named lock or mutex) is judged only on
cells where mysqld had at least the claim's own `min_cores` CPUs (hardware
threads; the study's smallest host for it: A1 4, A2/A3 16, B 4 chosen here);
a scaling claim also needs two core counts, and A3's Hyper-Threading claim cells
on SMT siblings. A wait-ranking claim ranks every repetition on its own
(harness.analysis.waits: exact Clopper-Pearson bounds). Without such cells the
claim is *not measurable here*, its reason starting with what is missing:
`cores`, `host`, `build`, `experiment`, `scale` or `data`.

Rules in the studies' words: a stated figure is a band around it, a bound a
bound, "no difference" an equivalence band, a reported pair of values or a
second-hand figure a direction; the tolerances no study word gives are stated
once in harness.analysis.claimrules (STATED, EQUIVALENT, CLOSE) and cited in
docs/studies.md.

The claims code never names a factor: a claim names an experiment and the
LEVELS it compares; which factor those are levels of is read from the
experiment's config (`variants`, in factor-table order) or the data, and the
words for the paper from harness.measure.factors.

Where it lives: harness.analysis.claimrules (verdict names, settings, rules,
tolerances), claimresult (results, the context), claimpick (picking cells),
claimmath (ratio, peak and scaling maths), claimtext (a row's text),
harness.analysis.claimkinds (the kinds of claim and the gate),
harness.analysis.waits (wait events, TopWait); this module re-exports their
names (study packages use it as `C`) and evaluates the claims into rows.
"""
from __future__ import annotations

from harness import registry as studies
from harness.analysis import tidyread as T

# The names study packages use as C.<name>: the ground (claimrules, claimresult, claimpick,
# claimmath, claimtext), the kinds of claim (claimkinds) and the wait-event claim (waits),
# re-exported here.
from harness.analysis.claimkinds import (  # noqa: F401
    BuildRatio, Check, Claim, Comparison, CoresRatio, EngineRatio, LevelRatio, ScalingRatio, TablesRatio,
    Untestable, gated)
from harness.analysis.claimrules import (  # noqa: F401
    CLOSE, CONTENTION, CROSS_CHECK, CSV_FIELDS, EQUIVALENT, INCONCLUSIVE, SETTINGS, STATED, METRIC,
    NEEDS_TEXT, NOT_MEASURABLE, NOT_REPRODUCED, REPRODUCED, SCALING, VERDICTS, above, below, close,
    equivalent, setting, stated, within)
from harness.analysis.claimresult import Context, Result, flagged, missing  # noqa: F401
from harness.analysis.claimpick import (  # noqa: F401
    at_cores, best, levels_label, levels_of, levels_words, matches, pool, unsupported_reason, varied_factors)
from harness.analysis.claimmath import (  # noqa: F401
    load_blocks, peak_result, ratio_or_none, ratio_result, scaling_groups, scaling_judged)
from harness.analysis.claimtext import cell_where, fmt_cores, fmt_k, settings_text  # noqa: F401
from harness.analysis.verdict import Rule, sides  # noqa: F401  (Rule: the published side, C.Rule)
from harness.analysis.waits import (  # noqa: F401
    LOCK_WAITS, TopWait, WaitShareDrop, clopper_pearson, event_label, judge_difference, ranks_by_rep,
    share_by_rep, short_event, top_waits)


# --- evaluation -----------------------------------------------------------------------

def evaluate(tidy: T.Tidy, claims: list[Claim]) -> list[dict]:
    """One row (CSV_FIELDS) per claim and build, in the order given (the studies' order:
    harness.studies.claims())."""
    ctx = Context.of(tidy)
    rows = []
    for c in claims:
        for build in c.builds(ctx):
            rows.append(c.row(ctx, build))
    return rows


def invariant_violations(rows: list[dict], level: float | None = None) -> list[str]:
    """Rows that say reproduced (or not reproduced) without their interval lying
    entirely on the published (other) side at a coverage of at least the level the
    interval was asked at (its `level` column: the per-look level, Bonferroni over
    the looks) and at least `level` (claims.level): must be none."""
    bad = []
    for r in rows:
        if r["verdict"] not in (REPRODUCED, NOT_REPRODUCED) or not r.get("side"):
            continue
        if r.get("host") == ALL_HOSTS:   # a combined row has no interval: by_host's counts
            continue
        lo, hi, t = float(r["ratio_lo"]), float(r["ratio_hi"]), float(r["threshold"])
        th = float(r["threshold_hi"]) if r.get("threshold_hi") else None
        side = r["side"]
        on, off = sides(lo, hi, Rule(side, t, th))
        ok = on if r["verdict"] == REPRODUCED else off
        asked = float(r["level"]) if r.get("level") else (level or 0.0)
        if float(r["coverage"]) < asked or (level is not None and (asked < level or
                                                                   float(r["coverage"]) < level)):
            ok = False
        if not ok:
            bad.append(f"{r['claim']} ({r['build']}): {r['verdict']} with [{lo}, {hi}] at coverage "
                       f"{r['coverage']} (asked {r.get('level')}) vs {side} {t}")
    return bad


def experiment_decided(tidy: T.Tidy, experiment: str) -> bool:
    """Whether more blocks of `experiment` can change no claim reading it: every claim
    whose experiments include it is decided on the blocks measured so far, or can never
    be decided by more blocks (not measurable here, a pass/fail check, all max blocks
    measured, or claims.decide false). decide-blocks' stopping rule asks this at each look."""
    ctx = Context.of(tidy)
    for c in studies.claims():
        if experiment not in c.experiments:
            continue
        for build in c.builds(ctx):
            try:
                res = c.evaluate(ctx, build)
            except (LookupError, ValueError, TypeError, ZeroDivisionError):
                continue   # a claim that cannot be evaluated is not helped by more blocks
            if res.verdict == INCONCLUSIVE and res.pending:
                return False
    return True


# --- several hosts ----------------------------------------------------------------------

ALL_HOSTS = "all"   # the `host` of a claim's combined row (claims.csv)
HOST_CSV_FIELDS = (*CSV_FIELDS, "host")
# what a combined row copies from its hosts' rows (the claim, never a measured value)
_CLAIM_FIELDS = ("claim", "study", "statement", "published", "published_ratio", "threshold",
                 "threshold_hi", "side", "needs", "experiment", "build", "metric")


def combined_verdict(verdicts: list[str]) -> tuple[str, str]:
    """The combined verdict of one claim row over the hosts (each host's verdict, judged
    on its own cells by the same rule) and its reason. n = the hosts that could measure it
    (any verdict but not measurable here); k = those that reproduced it, j = those that did
    not. *reproduced* when k > n/2 and j = 0, *not reproduced* when j > n/2 and k = 0,
    *inconclusive* otherwise (hosts that disagree, or too few decided), *not measurable
    here* when n = 0. A strict majority, so one host's decision (its interval's error, its
    hardware's quirk) never decides for several; a contradiction between hosts is said,
    never outvoted. No interval is pooled across hosts."""
    total = len(verdicts)
    able = [v for v in verdicts if v != NOT_MEASURABLE]
    n, k, j = len(able), able.count(REPRODUCED), able.count(NOT_REPRODUCED)
    if not n:
        return NOT_MEASURABLE, f"host: not measurable on any of the {total} hosts"
    said = (f"reproduced on {k} of the {n} hosts that could measure it, not reproduced on {j}"
            + (f" ({total - n} of {total} could not measure it)" if total > n else ""))
    if k and j:
        return INCONCLUSIVE, f"hosts disagree: {said}"
    if 2 * k > n:
        return REPRODUCED, said
    if 2 * j > n:
        return NOT_REPRODUCED, said
    return INCONCLUSIVE, f"no strict majority of hosts decided: {said}"


def by_host(hosts: list[tuple[str, list[dict]]]) -> list[dict]:
    """Every host's claim rows with their `host`, each claim row (claim and build) followed
    by its combined row (host ALL_HOSTS, combined_verdict) when there are two hosts or more:
    one host gives its rows as they are (plus the host). The order: the first host's rows,
    then any row only a later host has, in that host's order."""
    keyed: dict = {}
    for host, rows in hosts:
        for r in rows:
            keyed.setdefault((r["claim"], r.get("build", "")), []).append({**r, "host": host})
    out = []
    for rows in keyed.values():
        out += rows
        if len(hosts) > 1:
            out.append(combined_row(rows, len(hosts)))
    return out


def combined_row(rows: list[dict], n_hosts: int) -> dict:
    """The combined row of one claim row's host rows (a host that lacks the row, e.g. it did
    not run the experiment, counts as not measurable). Its measured text names each host's
    verdict; its ratio and interval columns stay empty."""
    verdicts = [r["verdict"] for r in rows] + [NOT_MEASURABLE] * (n_hosts - len(rows))
    verdict, reason = combined_verdict(verdicts)
    first = rows[0]
    row = {f: "" for f in HOST_CSV_FIELDS}
    row.update({f: first.get(f, "") for f in _CLAIM_FIELDS})
    row.update(host=ALL_HOSTS, verdict=verdict, reason=reason,
               measured="; ".join(f"{r['host']}: {r['verdict']}" for r in rows))
    return row


def hosts_of(rows: list[dict]) -> list[str]:
    """The hosts of claim rows (without ALL_HOSTS), in order."""
    return list(dict.fromkeys(r.get("host", "") for r in rows if r.get("host", "") != ALL_HOSTS))
