"""Each claim row judges what its author said, on the cells the author measured.

One test per defect the audit of the claim rows found (each fails on the rows as they
were and passes now), on constructed cells written with the pipeline's own tidy columns
(tests/unit/test_claims.py's helpers); the gates from a table citing each study's setup; and
the count of registered claim ids.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness import studies
from harness.analysis import blockverdict as BV
from harness.analysis import claims as C
from harness.analysis import claimrules
from harness.analysis import tidywrite
from test_claims import SEVEN_HI, SEVEN_LO, config, evaluate, runs

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = {c.id: c for c in studies.claims()}
NOISE = [1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.998]


def scaled(base, k):
    return [base * k * n for n in NOISE]


def wait_rows(run_rows, shares: dict):
    """Waits rows (harness.analysis.tidywrite's columns) of the cells of `run_rows`: per
    repetition, each event's wait time, `shares[event]` a list per repetition."""
    out = []
    for row in run_rows:
        key = {k: row[k] for k in tidywrite.KEY_FIELDS + ["rep"]}
        for event, per_rep in shares.items():
            out.append({**key, "rank": "", "event_name": event, "count_star": 1,
                        "sum_timer_wait_ps": per_rep[int(row["rep"]) - 1]})
    return out


MDL_EV = "wait/lock/metadata/sql/mdl"
TRX_EV = "wait/synch/mutex/innodb/trx_sys_mutex"
KRL_EV = "wait/synch/rwlock/myisam/MYISAM_SHARE::key_root_lock"
LOCK_STATUS = "wait/synch/mutex/sql/LOCK_status"
OTHER = "wait/synch/mutex/sql/LOCK_open"


# --- A3: the HT claim is InnoDB's (trx_sys), and needs SMT ------------------------------

def test_the_ht_claim_reads_innodb_and_needs_smt(tmp_path):
    """InnoDB better on 32 cores than on 64, MyISAM the other way round: the claim reads InnoDB
    (as the study says it of InnoDB's trx_sys contention), and without cells on SMT siblings --
    which no profile's core plan makes -- it is not measurable, saying so."""
    claim = CLAIMS["A3-PS-32-cores-beat-64-HT"]
    assert claim.engine == "InnoDB" and "trx_sys" in claim.mechanism and claim.tables == 8
    exps = {"point_select": runs("InnoDB", SEVEN_HI, cores=32) + runs("InnoDB", SEVEN_LO, cores=64)
            + runs("MyISAM", SEVEN_LO, cores=32) + runs("MyISAM", SEVEN_HI, cores=64)}
    cfg = config({"point_select": {}})
    r = evaluate(tmp_path / "a", exps, cfg, replace(claim, smt=False))[0]
    assert r["verdict"] == C.REPRODUCED and r["measured"].startswith("InnoDB on 32 cores"), r
    r = evaluate(tmp_path / "b", exps, cfg, claim)[0]
    assert r["verdict"] == C.NOT_MEASURABLE and r["reason"].startswith("host: ")
    assert "both hardware threads" in r["reason"] and r["ratio"]   # what was measured, kept


# --- wait claims: the study's workload, and "main" means ranked first -----------------------

def _waits_case(experiment, engine, top_event, *, other_first=False, levels=None, tables=8, cores=16):
    """Seven blocks of one busy cell whose waits put `top_event` first (or second, behind
    LOCK_open, with `other_first`)."""
    settings = {"trx": "off"} if experiment == "oltp_ro" else {}
    rr = runs(engine, SEVEN_HI, experiment=experiment, tables=tables, cores=cores, users=64, **settings)
    big, small = [900] * 7, [100] * 7
    shares = {top_event: small if other_first else big, OTHER: big if other_first else small}
    return rr, wait_rows(rr, shares)


@pytest.mark.parametrize("cid, engine, event", [
    ("A3-WAIT-InnoDB-MDL-8-tables", "InnoDB", MDL_EV),
    ("A3-WAIT-MyISAM-key-root-lock-8-tables", "MyISAM", KRL_EV)])
def test_the_eight_table_waits_read_oltp_ro(tmp_path, cid, engine, event):
    """The study names MDL (InnoDB) and key_root_lock (MyISAM) for OLTP_RO on 8 tables; on
    Point-Selects it names trx_sys and the key cache. The claims read OLTP_RO's waits,
    autocommit: there the wait tops the list, on Point-Selects it does not."""
    claim = CLAIMS[cid]
    assert claim.experiment_name == "oltp_ro" and claim.levels == ("off",)
    ro_runs, ro_waits = _waits_case("oltp_ro", engine, event)
    ps_runs, ps_waits = _waits_case("point_select", engine, event, other_first=True)
    cfg = config({"oltp_ro": {"study": "A3", "workload": "oltp_ro", "variants": {"trx": ["on", "off"]}},
                  "point_select": {}})
    r = evaluate(tmp_path, {"oltp_ro": ro_runs, "point_select": ps_runs}, cfg, claim,
                 extras={("oltp_ro", "waits"): ro_waits, ("point_select", "waits"): ps_waits})[0]
    assert r["verdict"] == C.REPRODUCED, r["reason"]


@pytest.mark.parametrize("cid", ["A1-WAIT-MyISAM-LockStatus", "A2-WAIT-MyISAM-cache-lock",
                                 "A2-WAIT-MyISAM-key-root-lock", "A2-WAIT-MyISAM-key-root-lock-simple-ranges",
                                 "A3-WAIT-InnoDB-trx_sys", "A3-WAIT-InnoDB-MDL-8-tables"])
def test_main_and_dominating_waits_must_rank_first(cid):
    """'The main contention', 'dominating', 'the main bottleneck': ranked first, in most
    repetitions (Clopper-Pearson), not merely among the top five."""
    assert CLAIMS[cid].top_n == 1 and CLAIMS[cid].rule_words() == "ranks first in most repetitions"


def test_a_wait_ranked_second_in_every_block_is_not_the_main_one(tmp_path):
    claim = CLAIMS["A1-WAIT-MyISAM-LockStatus"]
    rr, waits = _waits_case("fts", "MyISAM", LOCK_STATUS, other_first=True, tables=1, cores=4)
    cfg = config({"fts": {"study": "A1", "workload": "fts", "variants": {}}})
    r = evaluate(tmp_path / "a", {"fts": rr}, cfg, claim, extras={("fts", "waits"): waits})[0]
    assert r["verdict"] == C.NOT_REPRODUCED and "0 of 7 repetitions rank it first" in r["reason"], r
    rr, waits = _waits_case("fts", "MyISAM", LOCK_STATUS, tables=1, cores=4)
    r = evaluate(tmp_path / "b", {"fts": rr}, cfg, claim, extras={("fts", "waits"): waits})[0]
    assert r["verdict"] == C.REPRODUCED and "7 of 7 repetitions rank it first" in r["reason"], r


def test_innodb_mdl_is_judged_on_all_three_one_table_workloads():
    """'InnoDB only limited by MDL' is said of the three 1-table workloads: one row each."""
    got = {CLAIMS[c].experiment_name for c in ("A2-WAIT-InnoDB-MDL", "A2-WAIT-InnoDB-MDL-oltp-ro",
                                               "A2-WAIT-InnoDB-MDL-simple-ranges")}
    assert got == {"point_select", "oltp_ro", "simple_ranges"}
    assert all(CLAIMS[c].tables == 1 and CLAIMS[c].engine == "InnoDB" for c in
               ("A2-WAIT-InnoDB-MDL", "A2-WAIT-InnoDB-MDL-oltp-ro", "A2-WAIT-InnoDB-MDL-simple-ranges"))


def test_eight_tables_lower_a_wait_against_one(tmp_path):
    """A3: 8 tables 'dramatically lower' key_root_lock (and MDL): per block, its share with 1
    table minus with 8, the sign-test interval on the looks."""
    claim = CLAIMS["A3-WAIT-8-tables-lower-key-root-lock-MyISAM"]
    one = runs("MyISAM", SEVEN_LO, experiment="oltp_ro", tables=1, cores=16, users=64, trx="off")
    eight = runs("MyISAM", SEVEN_HI, experiment="oltp_ro", tables=8, cores=16, users=64, trx="off")
    cfg = config({"oltp_ro": {"study": "A3", "workload": "oltp_ro", "variants": {"trx": ["on", "off"]}}})

    def case(d, share_one, share_eight):
        waits = (wait_rows(one, {KRL_EV: [share_one] * 7, OTHER: [100 - share_one] * 7})
                 + wait_rows(eight, {KRL_EV: [share_eight] * 7, OTHER: [100 - share_eight] * 7}))
        return evaluate(d, {"oltp_ro": one + eight}, cfg, claim, extras={("oltp_ro", "waits"): waits})[0]
    r = case(tmp_path / "a", 80, 20)
    assert r["verdict"] == C.REPRODUCED and "80.0% with 1 table, 20.0% with 8" in r["measured"], r
    assert case(tmp_path / "b", 20, 20)["verdict"] == C.NOT_REPRODUCED


# --- stated figures are bands, bounds are bounds, "did not help" is a tie --------------------

def _judge(claim, ratio):
    """The claim's own rule on seven constructed blocks at `ratio` (a over b)."""
    va = {r: v for r, v in enumerate(scaled(100 * ratio, 1.0), 1)}
    vb = {r: v for r, v in enumerate(scaled(100, 1.0)[::-1], 1)}
    return BV.judge_sides(va, vb, claim.rule, 0.9, (6, 12, 2), True).verdict


def test_b2_is_a_band_around_its_8_percent(tmp_path):
    """At most 8% ahead of InnoDB: a bound [1, 1.08] whose upper end is widened x1.25 (issue 52:
    [1, 1.08] could not read the published +8% as reproduced; its review: a band around 1.08
    read MEMORY behind InnoDB as reproduced); 0.80 and 1.4 are not it."""
    for cid in ("B2-MEMORY-8pct-over-InnoDB", "B2-MEMORY-8pct-over-InnoDB-8-tables"):
        claim = CLAIMS[cid]
        assert (claim.rule.side, claim.rule.threshold, claim.rule.threshold_hi) == (
            "within", 1.0, 1.08 * claimrules.STATED)
        assert _judge(claim, 0.80) == C.NOT_REPRODUCED
        assert _judge(claim, 1.40) == C.NOT_REPRODUCED
        assert _judge(claim, 1.08) == C.REPRODUCED
    # on constructed cells through the whole claim, at B's 4 cores
    claim = CLAIMS["B2-MEMORY-8pct-over-InnoDB"]
    exps = {"oltp_ro": runs("MEMORY-BTREE", scaled(80, 1.0), experiment="oltp_ro", tables=1, cores=4, trx="off")
            + runs("InnoDB", scaled(100, 1.0)[::-1], experiment="oltp_ro", tables=1, cores=4, trx="off")}
    cfg = config({"oltp_ro": {"study": "A2", "workload": "oltp_ro", "variants": {"trx": ["on", "off"]}}})
    assert evaluate(tmp_path, exps, cfg, claim)[0]["verdict"] == C.NOT_REPRODUCED


def test_a_tie_passes_the_mmap_no_gain_band(tmp_path):
    claim = CLAIMS["A1-FTS-mmap-no-gain"]
    assert claim.rule.side == "below" and claim.min_cores == 4 and claim.needs == C.CONTENTION
    on = runs("MyISAM", scaled(100, 1.0), experiment="fts_mmap", tables=1, cores=4, myisam_mmap="on")
    off = runs("MyISAM", scaled(100, 1.0)[::-1], experiment="fts_mmap", tables=1, cores=4, myisam_mmap="off")
    cfg = config({"fts_mmap": {"study": "A1", "workload": "fts", "variants": {"myisam_mmap": ["off", "on"]}}})
    assert evaluate(tmp_path / "a", {"fts_mmap": on + off}, cfg, claim)[0]["verdict"] == C.REPRODUCED
    gain = runs("MyISAM", scaled(130, 1.0), experiment="fts_mmap", tables=1, cores=4, myisam_mmap="on")
    assert evaluate(tmp_path / "b", {"fts_mmap": gain + off}, cfg, claim)[0]["verdict"] == C.NOT_REPRODUCED


@pytest.mark.parametrize("cid, inside, outside", [
    ("A1-FTS-innodb-8-cores", 1.5, 3.0), ("A1-FTS-innodb-4-cores", 2.0, 1.1),
    ("C1-MyISAM-inserts-faster-than-InnoDB", 1.68, 1.1), ("C1-ARCHIVE-inserts-faster-than-MyISAM", 1.49, 3.0),
    ("C1-ARCHIVE-vs-InnoDB", 2.5, 1.2), ("C1-ARCHIVE-vs-legacy", 2.48, 1.2), ("C1-MyISAM-vs-legacy", 1.67, 1.05)])
def test_stated_magnitudes_are_judged_as_bands(cid, inside, outside):
    """x1.5, x2, 'about 40%', '33%', '60%': a band around the published figure, x/÷ the one
    tolerance claimrules.STATED; the direction alone (faster by any amount) no longer passes."""
    claim = CLAIMS[cid]
    p = claim.published_ratio
    assert claim.rule.threshold == pytest.approx(p / claimrules.STATED)
    assert claim.rule.threshold_hi == pytest.approx(p * claimrules.STATED)
    assert _judge(claim, inside) == C.REPRODUCED
    assert _judge(claim, outside) == C.NOT_REPRODUCED


def test_the_eight_core_factor_on_constructed_cells(tmp_path):
    """InnoDB 3x MyISAM on 8 cores is faster, but not the study's x1.5."""
    claim = CLAIMS["A1-FTS-innodb-8-cores"]
    exps = {"fts": runs("InnoDB", scaled(300, 1.0), experiment="fts", tables=1, cores=8)
            + runs("MyISAM", scaled(100, 1.0)[::-1], experiment="fts", tables=1, cores=8)}
    cfg = config({"fts": {"study": "A1", "workload": "fts", "variants": {}}})
    assert evaluate(tmp_path, exps, cfg, claim)[0]["verdict"] == C.NOT_REPRODUCED


def test_b1_threshold_is_marked_chosen_here():
    for cid in ("B1-HASH-range-throughput", "B1-HASH-range-throughput-8-tables", "B1-HASH-range-throughput-at-scale"):
        assert "chosen here" in CLAIMS[cid].rule.why


def test_every_band_no_study_word_gives_is_marked_chosen_here():
    """The tolerances are stated once (claimrules) and each band built on them says so."""
    for c in CLAIMS.values():
        r = c.rule
        if r is not None and r.side == "within" and c.id.startswith(("A1", "C1", "AA")):
            assert "chosen here" in r.why and "claimrules." in r.why, c.id


# --- a row measured on a stand-in ---------------------------------------------------------------

def test_the_read_only_row_states_its_stand_in_and_the_studys_figures():
    c = CLAIMS["A3-RO-innodb-read-only-faster"]
    assert "450K" in c.published and "250K" in c.published and c.published_ratio == pytest.approx(1.8)
    assert "prototype" in c.deviation and "not the prototype's gain" in c.deviation
    docs = (ROOT / "docs" / "studies.md").read_text()
    assert "450K vs 210K" not in docs


# --- the gates: each claim's is the study's smallest host for it ---------------------------------

# study -> (the fewest hardware threads mysqld needs for its contention and scaling claims,
# where that comes from in the study's setup)
GATES = {
    "A1": (4, "A1 ran mysqld on 32, 24, 16, 8 and 4 cores (taskset)"),
    "A2": (4, "the study's setup binds mysqld to 32, 24, 16, 8 and 4 cores; only A3 limits that sweep"),
    "A3": (16, "A3 limited its 8-table runs to 64 (HT), 32, 24 and 16 hardware threads"),
    "B2": (4, "study B states no host: the least of study A's sweep, chosen here"),
    "B3": (4, "study B states no host: the least of study A's sweep, chosen here"),
    "B4": (4, "study B states no host: the least of study A's sweep, chosen here"),
}
# claims without a core gate, and why: not a contention or scaling claim
UNGATED = {
    "B1": "an index plan and a full scan's cost, whatever the cores",
    "C1": "one session's stored procedure on a one-CPU Pentium 4: no contention between threads",
    "C2": "one session's scans and conversions", "C3": "bytes on disk", "C4": "pass/fail features",
    "AA": "the artifact's own A/A control",
}
SMT_CLAIMS = {"A3-PS-32-cores-beat-64-HT"}   # A3's "64 (HT)": 32 cores with both hardware threads


@pytest.mark.parametrize("cid", sorted(CLAIMS))
def test_each_claims_gate_is_its_studys_smallest_host(cid):
    c = CLAIMS[cid]
    if isinstance(c, C.Untestable):
        return
    if c.study in UNGATED:
        assert c.needs is None, f"{cid}: {UNGATED[c.study]}"
        return
    least, _ = GATES[c.study]
    assert c.needs in (C.CONTENTION, C.SCALING), f"{cid} has no core gate"
    assert c.min_cores >= least and c.cores_why, (cid, c.min_cores, least)
    assert getattr(c, "smt", False) == (cid in SMT_CLAIMS)


# --- the new rows, on constructed cells -----------------------------------------------------------

def scaled12(base):
    """12 blocks of near-constant values (the default profile's max blocks)."""
    return [base * n for n in NOISE + NOISE[:5]]


def test_innodb_peak_on_24_or_32_cores(tmp_path):
    """A peak over several core counts is judged by the max-min bound, which splits its error
    over the loads: it needs the profile's 12 blocks (default.yaml's max) to decide."""
    claim = CLAIMS["A1-FTS-InnoDB-peak-24-32"]
    cfg = config({"fts": {"study": "A1", "workload": "fts", "variants": {}}})
    cells = []
    for cores, k in ((4, 0.3), (8, 0.6), (16, 0.9), (24, 1.0), (32, 1.0)):
        cells += runs("InnoDB", scaled12(10000 * k), experiment="fts", tables=1, cores=cores, users=16)
    assert evaluate(tmp_path / "a", {"fts": cells}, cfg, claim)[0]["verdict"] == C.REPRODUCED
    # a peak on 16 cores, falling after
    cells = []
    for cores, k in ((4, 0.3), (8, 0.6), (16, 1.2), (24, 1.0), (32, 0.9)):
        cells += runs("InnoDB", scaled12(10000 * k), experiment="fts", tables=1, cores=cores, users=16)
    assert evaluate(tmp_path / "b", {"fts": cells}, cfg, claim)[0]["verdict"] == C.NOT_REPRODUCED
    cells = [r for r in cells if int(r["cores"]) <= 16]
    r = evaluate(tmp_path / "c", {"fts": cells}, cfg, claim)[0]
    assert r["verdict"] == C.NOT_MEASURABLE and r["reason"].startswith("cores:")


@pytest.mark.parametrize("engine", ["InnoDB", "MyISAM"])
def test_point_selects_both_engines_scale(tmp_path, engine):
    claim = CLAIMS[f"A3-PS-scale-well-{engine}"]
    cells = runs(engine, scaled(100, 1.0), experiment="point_select", tables=8, cores=16) \
        + runs(engine, scaled(180, 1.0)[::-1], experiment="point_select", tables=8, cores=32)
    r = evaluate(tmp_path, {"point_select": cells}, config({"point_select": {}}), claim)[0]
    assert r["verdict"] == C.REPRODUCED and "on 32 cores" in r["measured"], r


def _status_rows(run_rows, waited, immediate):
    out = []
    for row in run_rows:
        key = {k: row[k] for k in tidywrite.KEY_FIELDS + ["rep"]}
        out += [{**key, "name": "Table_locks_waited", "delta": waited},
                {**key, "name": "Table_locks_immediate", "delta": immediate}]
    return out


def test_memorys_readers_do_not_contend(tmp_path):
    claim = CLAIMS["B2-MEMORY-readers-do-not-contend"]
    rr = runs("MEMORY-BTREE", SEVEN_HI, experiment="oltp_ro", tables=1, cores=4, trx="off")
    cfg = config({"oltp_ro": {"study": "A2", "workload": "oltp_ro", "variants": {"trx": ["on", "off"]}}})
    r = evaluate(tmp_path / "a", {"oltp_ro": rr}, cfg, claim, extras={("oltp_ro", "status"): _status_rows(rr, 0, 5000)})[0]
    assert r["verdict"] == C.REPRODUCED, r
    r = evaluate(tmp_path / "b", {"oltp_ro": rr}, cfg, claim, extras={("oltp_ro", "status"): _status_rows(rr, 500, 4500)})[0]
    assert r["verdict"] == C.NOT_REPRODUCED, r
    one = runs("MEMORY-BTREE", SEVEN_HI, experiment="oltp_ro", tables=1, cores=1, trx="off")
    r = evaluate(tmp_path / "c", {"oltp_ro": one}, cfg, claim, extras={("oltp_ro", "status"): _status_rows(one, 0, 5000)})[0]
    assert r["verdict"] == C.NOT_MEASURABLE and r["reason"].startswith("cores:")


# --- the count ---------------------------------------------------------------------------------

NEW_ROWS = {"A1-FTS-InnoDB-peak-24-32", "A2-WAIT-InnoDB-MDL-oltp-ro", "A2-WAIT-InnoDB-MDL-simple-ranges",
            "A3-WAIT-8-tables-lower-key-root-lock-MyISAM", "A3-WAIT-8-tables-lower-MDL-InnoDB",
            "A3-WAIT-SR-InnoDB-MDL-8-tables", "A3-WAIT-SR-MyISAM-key-root-lock-8-tables",
            "A3-PS-scale-well-InnoDB", "A3-PS-scale-well-MyISAM", "B2-MEMORY-readers-do-not-contend",
            "C4-unplug-unused-engines"}


# issue 52's published statements that had no row
FAITHFUL_ROWS = {"A1-FTS-InnoDB-slight-gain-beyond-16", "A3-RO-scale-well-InnoDB", "A3-RO-scale-well-MyISAM",
                 "A3-SR-scale-well-InnoDB", "A3-SR-scale-well-MyISAM",
                 "C2-MyISAM-scan-within-half-second-of-legacy", "C2-ARCHIVE-scan-close-to-MyISAM"}
# its review: 'pretty good on all these tests' covers OLTP_RO with transactions on too
REVIEW_ROWS = {"A3-RO-TRX-scale-well-InnoDB", "A3-RO-TRX-scale-well-MyISAM"}


def test_the_registered_claim_ids():
    """72 ids before the audit, 3 outside the studies removed, the published claims that had
    no row added (11 rows for the audit's 7 items; 7 for issue 52's; 2 for its review): 89
    distinct ids, each once."""
    ids = [c.id for c in studies.claims()]
    assert len(ids) == len(set(ids))
    assert NEW_ROWS | FAITHFUL_ROWS | REVIEW_ROWS <= set(ids)
    assert len(set(ids)) == 72 - 3 + len(NEW_ROWS) + len(FAITHFUL_ROWS) + len(REVIEW_ROWS) == 89
