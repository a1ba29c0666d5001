"""Tests of the verdict rule and the claim kinds (harness.analysis.claims, harness.studies).

Real data: tests/fixtures/raw (real smoke cells, README there) tidied by this checkout
(test_retidy_fixture.retidy). Constructed data: tidy directories written
with harness.analysis.tidywrite's own columns and summaries (`write_tidy`), so the claims
read exactly what the pipeline writes.

The invariant every test here leans on: a verdict of *reproduced* means the
ratio's interval lies entirely on the published side at a coverage of at
least claims.level -- on real data, on constructed edge cases, and when two
sets of runs of one and the same configuration are relabelled as two
settings, whose difference is noise alone.
"""
from __future__ import annotations

import csv
import itertools
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest

from harness.analysis import claims as C
from harness.analysis import intervals
from harness.measure import factors
from harness.analysis import tidywrite
from harness.analysis import tidyread as T
from harness import registry, studies
from test_retidy_fixture import RAW, retidy

ROOT = Path(__file__).resolve().parents[2]


# --- constructed tidy data ---------------------------------------------------------

def runs(engine, values, *, experiment="x", build="b1", tables=8, cores=1, users=4, variant=None,
         metric="qps_server", **settings):
    """One tidy run row per value (repetitions 1..n) of one cell."""
    label = variant or factors.label(settings)
    out = []
    for rep, v in enumerate(values, 1):
        row = {k: "" for k in tidywrite.RUN_FIELDS}
        row.update(study="A3", experiment=experiment, workload="point_select", build=build, engine=engine,
                   variant=label, tables=tables, cores=cores, users=users, rep=rep, qps=v, tps=v,
                   duration_s=3, backend="host", mechanism="taskset")
        row[metric] = v
        row.update({k: str(val) for k, val in settings.items()})
        out.append(row)
    return out


def write_csv(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def write_tidy(d, experiments: dict, extras: dict | None = None, unsupported=()):
    """experiments: name -> run rows. Writes <e>.csv and <e>_summary.csv as tidy does."""
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    for exp, rows in experiments.items():
        write_csv(d / f"{exp}.csv", tidywrite.RUN_FIELDS, rows)
        write_csv(d / f"{exp}_summary.csv", tidywrite.SUMMARY_FIELDS, tidywrite.summarize(rows, 0.05))
    for (exp, kind), rows in (extras or {}).items():
        write_csv(d / f"{exp}_{kind}.csv", list(rows[0]), rows)
    if unsupported:
        write_csv(d / "unsupported.csv", ["experiment", "build", "engine", "variant", "reason"], unsupported)
    return d


def config(experiments: dict, **claims_cfg) -> dict:
    """A resolved-config stand-in: experiment name -> variants (or a full spec dict)."""
    exps = {}
    for name, spec in experiments.items():
        exps[name] = spec if "variants" in (spec or {}) or "tables" in (spec or {}) else \
            {"study": "A3", "workload": "point_select", "variants": spec or {}}
    return {"profile": "t", "builds": ["b1"], "experiments": exps, "claims": claims_cfg}


def evaluate(tmp_path, experiments, cfg, claim, extras=None, unsupported=()):
    d = write_tidy(tmp_path / "tidy", experiments, extras, unsupported)
    rows = C.evaluate(T.load(d, cfg), [claim])
    assert C.invariant_violations(rows, C.setting(cfg, "level")) == []
    return rows


def engines_claim(**kw):
    base = dict(id="T-engines", study="A3", statement="x", published="p", experiments=("x",),
                experiment_name="x", tables=8, a="MyISAM", b="InnoDB", rule=C.above(1.0))
    return C.EngineRatio(**{**base, **kw})


def levels_claim(**kw):
    base = dict(id="T-levels", study="A3", statement="{a} vs {b}", published="p", experiments=("x",),
                experiment_name="x", tables=8, engine="InnoDB", a=("on",), b=("off",), rule=C.above(1.0))
    return C.LevelRatio(**{**base, **kw})


SEVEN_HI = [110, 111, 112, 113, 114, 115, 116]
SEVEN_LO = [100, 101, 102, 103, 104, 105, 106]
# the Hodges-Lehmann ratio of their first six blocks (default.yaml's first look)
HL_SIX = intervals.paired_interval(SEVEN_HI[:6], SEVEN_LO[:6]).point


# --- the verdict paths, on constructed cells ---------------------------------------------

def test_seven_repetitions_clearly_apart_are_reproduced(tmp_path):
    rows = evaluate(tmp_path, {"x": runs("MyISAM", SEVEN_HI) + runs("InnoDB", SEVEN_LO)},
                    config({"x": {}}), engines_claim())
    r = rows[0]
    assert r["verdict"] == C.REPRODUCED, r["reason"]
    assert float(r["ratio_lo"]) > 1.0 and float(r["coverage"]) >= 0.9
    # default.yaml's repetitions {min: 6, max: 12, looks: 2}: decided, and frozen, at the first look
    assert r["n"] == "6/6" and r["look"] == "1/2" and r["side"] == "above" and r["threshold"] == "1"
    assert float(r["level"]) == pytest.approx(0.95) and "signed-rank" in r["method"]
    assert float(r["sign_lo"]) <= float(r["sign_hi"]) and float(r["sign_coverage"]) >= 0.95
    assert r["metric"] == "qps_server" and r["cross_check"]


def test_the_other_side_is_not_reproduced(tmp_path):
    rows = evaluate(tmp_path, {"x": runs("MyISAM", SEVEN_LO) + runs("InnoDB", SEVEN_HI)},
                    config({"x": {}}), engines_claim())
    assert rows[0]["verdict"] == C.NOT_REPRODUCED
    assert float(rows[0]["ratio_hi"]) <= 1.0


def test_overlapping_repetitions_are_inconclusive_and_say_so(tmp_path):
    rows = evaluate(tmp_path, {"x": runs("MyISAM", [100, 108, 103, 111, 99, 105, 107])
                               + runs("InnoDB", [101, 104, 98, 106, 102, 100, 109])},
                    config({"x": {}}), engines_claim())
    assert rows[0]["verdict"] == C.INCONCLUSIVE
    assert "straddles" in rows[0]["reason"]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_too_few_repetitions_are_inconclusive_however_large_the_gap(tmp_path, n):
    """Ten times faster in every run, but n < 6 cannot reach 90% coverage: no verdict."""
    rows = evaluate(tmp_path, {"x": runs("MyISAM", [1000 + i for i in range(n)])
                               + runs("InnoDB", [100 + i for i in range(n)])},
                    config({"x": {}}), engines_claim())
    assert rows[0]["verdict"] == C.INCONCLUSIVE
    assert f"{n} blocks measured, the first look is at 6 (of max 12)" in rows[0]["reason"]
    assert float(rows[0]["coverage"]) < 0.95


def test_level_comes_from_the_config(tmp_path):
    """With claims.level 0.5, three paired blocks (signed-rank coverage 0.75) decide."""
    exps = {"x": runs("MyISAM", [1000, 1001, 1002]) + runs("InnoDB", [100, 101, 102])}
    three = {"x": {"study": "A3", "workload": "point_select", "variants": {}, "repetitions": 3}}
    assert evaluate(tmp_path / "a", exps, config(three, level=0.5), engines_claim())[0]["verdict"] \
        == C.REPRODUCED
    assert evaluate(tmp_path / "b", exps, config(three), engines_claim())[0]["verdict"] == C.INCONCLUSIVE
    assert C.setting({}, "level") == 0.9  # config/default.yaml's, for a tidy without a config
    with pytest.raises(ValueError, match="claims.level"):
        C.setting({"claims": {"level": 1.5}}, "level")


def test_within_band(tmp_path):
    """'about 8% faster' in [1.0, 1.16]: 1.08 passes, 2% slower does not."""
    rule = C.within(1.0, 1.16)
    near = [108 + 0.1 * i for i in range(7)]
    rows = evaluate(tmp_path / "a", {"x": runs("MyISAM", near) + runs("InnoDB", [100] * 7)},
                    config({"x": {}}), engines_claim(rule=rule))
    assert rows[0]["verdict"] == C.REPRODUCED and rows[0]["threshold_hi"] == "1.16"
    slower = [98 + 0.1 * i for i in range(7)]
    rows = evaluate(tmp_path / "b", {"x": runs("MyISAM", slower) + runs("InnoDB", [100] * 7)},
                    config({"x": {}}), engines_claim(rule=rule))
    assert rows[0]["verdict"] == C.NOT_REPRODUCED


TWELVE_HI = [110 + i % 7 for i in range(12)]
TWELVE_LO = [100 + i % 7 for i in range(12)]


def test_best_cell_per_side_and_its_repetitions(tmp_path):
    """'at best': A's peak over the loads both measured against B's, every pair of loads
    judged on the paired blocks (intervals.max_min_interval); a load only one side measured
    (InnoDB at 64 users) is left out. Two loads a side split each look's error in two: the
    default profile's first look (6 blocks) cannot decide, its second (12) can."""
    exps = {"x": runs("MyISAM", TWELVE_HI, users=16) + runs("MyISAM", [50] * 12, users=4)
            + runs("InnoDB", TWELVE_LO, users=4) + runs("InnoDB", [20] * 12, users=16)
            + runs("InnoDB", [900] * 12, users=64)}
    r = evaluate(tmp_path, exps, config({"x": {}}), engines_claim())[0]
    assert r["verdict"] == C.REPRODUCED, r["reason"]
    assert "users 4, 16: peak over 2 vs 2 loads" in r["measured"], r["measured"]
    assert r["look"] == "2/2" and r["n"] == "12/12" and r["method"] == intervals.MAX_MIN
    assert float(r["ratio"]) == pytest.approx(intervals.paired_interval(TWELVE_HI, TWELVE_LO).point, rel=1e-5)
    assert float(r["coverage"]) >= 0.95 and r["sign_lo"] == ""


def flat_vs_sharp(n=12):
    """A flat over users 4 and 16 (each 100 up or down 5, the two loads mirrored block by
    block), B one sharp peak of 100 at users 4 (70 at 16): equal true peaks, A's per-block
    maximum 105 in every block."""
    up = [105 if i % 2 else 95 for i in range(n)]
    down = [200 - v for v in up]
    peak = [100 + (i % 3 - 1) * 0.5 for i in range(n)]
    return {"x": runs("MyISAM", up, users=4) + runs("MyISAM", down, users=16)
            + runs("InnoDB", peak, users=4) + runs("InnoDB", [70] * n, users=16)}


def test_a_plateau_does_not_beat_an_equal_sharp_peak(tmp_path):
    """Each side's per-block maximum (the rule before) read this as A 5% above B in every
    block and reproduced 'A above B'; the max-min bound pairs every load of A with every
    load of B and finds no side: inconclusive, and B's peak not below A's either."""
    exps = flat_vs_sharp()
    old = intervals.sequential_decide([105] * 12, [100 + (i % 3 - 1) * 0.5 for i in range(12)],
                                      C.Rule("above", 1.0), 0.9, [6, 12])
    assert old.verdict == C.REPRODUCED   # what the per-block maximum gave on these cells
    for rule in (C.above(1.0), C.below(1.0)):
        r = evaluate(tmp_path / rule.side, exps, config({"x": {}}), engines_claim(rule=rule))[0]
        assert r["verdict"] == C.INCONCLUSIVE, r["reason"]
        assert float(r["ratio_lo"]) < 1.0 < float(r["ratio_hi"])


def test_other_factors_held_fixed(tmp_path):
    """An engine comparison in an experiment varying a factor compares at the claim's level
    only: the faster setting of the other engine is not used."""
    exps = {"x": runs("MyISAM", SEVEN_HI, trx="on") + runs("MyISAM", [500] * 7, trx="off")
            + runs("InnoDB", SEVEN_LO, trx="on") + runs("InnoDB", [10] * 7, trx="off")}
    cfg = config({"x": {"trx": ["on", "off"]}})
    on = evaluate(tmp_path / "a", exps, cfg, engines_claim(levels=("on",)))[0]
    assert float(on["ratio"]) == pytest.approx(HL_SIX, rel=1e-5)
    off = evaluate(tmp_path / "b", exps, cfg, engines_claim(levels=("off",)))[0]
    assert float(off["ratio"]) == pytest.approx(50)
    base = evaluate(tmp_path / "c", exps, cfg, engines_claim(levels=None))[0]  # the factor's baseline
    assert base["ratio"] == off["ratio"] and factors.FACTORS["trx"].baseline == "off"


def test_server_count_decides_sysbench_count_is_a_cross_check(tmp_path):
    rows = runs("MyISAM", SEVEN_HI) + runs("InnoDB", SEVEN_LO)
    for r in rows:
        r["qps"] = 1000 if r["engine"] == "InnoDB" else 1  # a client count that says the opposite
    r = evaluate(tmp_path, {"x": rows}, config({"x": {}}), engines_claim())[0]
    assert r["verdict"] == C.REPRODUCED and float(r["cross_check"]) == pytest.approx(0.001, rel=1e-5)


def test_without_server_counts_nothing_is_judged(tmp_path):
    rows = runs("MyISAM", SEVEN_HI, metric="qps") + runs("InnoDB", SEVEN_LO, metric="qps")
    r = evaluate(tmp_path, {"x": rows}, config({"x": {}}), engines_claim())[0]
    assert r["verdict"] == C.NOT_MEASURABLE and r["reason"].startswith("data:")


def test_unstable_cells_are_named_in_the_reason(tmp_path):
    wobbly = [100, 160, 105, 150, 110, 170, 120]
    r = evaluate(tmp_path, {"x": runs("MyISAM", wobbly) + runs("InnoDB", SEVEN_LO)},
                 config({"x": {}}), engines_claim())[0]
    assert "unstable: b1_MyISAM_base_t8_c1_u4" in r["reason"]
    assert "InnoDB" not in r["reason"].split("unstable:")[1].split("; settings:")[0]
    # every setting of the compared cells is in the reason, what differs per cell
    assert "; settings: build b1, workload " in r["reason"] or "; settings: build b1," in r["reason"]
    assert "differing: engine MyISAM" in r["reason"] and "vs engine InnoDB" in r["reason"]


# --- the one gate: contention and scaling ---------------------------------------------------

def test_contention_claim_on_one_core_is_not_measurable_but_reports_what_was_measured(tmp_path):
    exps = {"x": runs("MyISAM", SEVEN_HI) + runs("InnoDB", SEVEN_LO)}
    claim = engines_claim(needs=C.CONTENTION, mechanism="a named mutex", min_cores=16,
                          cores_why="the study's figures")
    r = evaluate(tmp_path, exps, config({"x": {}}), claim)[0]
    assert r["verdict"] == C.NOT_MEASURABLE
    assert r["reason"].startswith("cores: the published mechanism (a named mutex) needs mysqld on at least "
                                  "16 hardware threads (the study's figures)")
    assert r["ratio"] and "MyISAM" in r["measured"]
    r = evaluate(tmp_path / "b", exps, config({"x": {}}), replace(claim, min_cores=1))[0]
    assert r["verdict"] == C.REPRODUCED


def test_contention_claim_is_judged_on_enough_cores_only(tmp_path):
    """The faster 1-core cells do not count: the verdict comes from the 2-core cells."""
    exps = {"x": runs("MyISAM", SEVEN_LO, cores=2) + runs("InnoDB", SEVEN_HI, cores=2)
            + runs("MyISAM", [900] * 7, cores=1) + runs("InnoDB", [100] * 7, cores=1)}
    r = evaluate(tmp_path, exps, config({"x": {}}), engines_claim(needs=C.CONTENTION, min_cores=2))[0]
    assert r["verdict"] == C.NOT_REPRODUCED and "2 cores" in r["measured"]


def test_scaling_needs_two_core_counts(tmp_path):
    claim = C.ScalingRatio(id="T-scale", study="A3", statement="s", published="p", experiments=("x",),
                           experiment_name="x", engine="InnoDB", rule=C.above(1.1), needs=C.SCALING,
                           min_cores=1)
    one = {"x": runs("InnoDB", SEVEN_HI, tables=8, cores=2) + runs("InnoDB", SEVEN_LO, tables=1, cores=2)}
    r = evaluate(tmp_path / "a", one, config({"x": {}}), claim)[0]
    assert r["verdict"] == C.NOT_MEASURABLE and "two core counts" in r["reason"]
    scaled = [v * 4 for v in SEVEN_HI]
    two = {"x": runs("InnoDB", SEVEN_LO, tables=8, cores=1) + runs("InnoDB", scaled, tables=8, cores=4)
           + runs("InnoDB", SEVEN_LO, tables=1, cores=1) + runs("InnoDB", SEVEN_LO, tables=1, cores=4)}
    r = evaluate(tmp_path / "b", two, config({"x": {}}), claim)[0]
    assert r["verdict"] == C.REPRODUCED, r["reason"]   # 8 tables gain ~4.4x, 1 table ~1x
    assert r["n"] == "6/6" and "ratios of ratios" in r["method"]   # per-block, paired by repetition


def test_scaling_starts_at_the_claims_own_cores(tmp_path):
    """A scaling claim scales from the fewest cores at or above its min_cores (where the study
    measured), not from fewer: 8 tables gain 4x from 1 to 4 cores but nothing from 4 to 8,
    so with min_cores 4 the claim is not reproduced; with 4 alone above it, not measurable."""
    claim = C.ScalingRatio(id="T-scale", study="A3", statement="s", published="p", experiments=("x",),
                           experiment_name="x", engine="InnoDB", rule=C.above(1.1), needs=C.SCALING,
                           min_cores=4)
    scaled = [v * 4 for v in SEVEN_HI]
    cells = (runs("InnoDB", SEVEN_LO, tables=8, cores=1) + runs("InnoDB", scaled, tables=8, cores=4)
             + runs("InnoDB", SEVEN_LO, tables=1, cores=1) + runs("InnoDB", SEVEN_LO, tables=1, cores=4))
    r = evaluate(tmp_path / "a", {"x": cells}, config({"x": {}}), claim)[0]
    assert r["verdict"] == C.NOT_MEASURABLE and "two core counts of at least 4" in r["reason"], r["reason"]
    more = cells + runs("InnoDB", scaled, tables=8, cores=8) + runs("InnoDB", SEVEN_LO, tables=1, cores=8)
    r = evaluate(tmp_path / "b", {"x": more}, config({"x": {}}), claim)[0]
    assert r["verdict"] == C.NOT_REPRODUCED and "4→8 cores" in r["measured"], (r["verdict"], r["measured"])


def scaling_cells(late_16):
    """8 tables gain 4x from 1 to 4 cores at users 4 and 16, 1 table gains nothing; 16
    blocks. At 1 table on 4 cores users 4 leads over the first 8 blocks; `late_16` is users
    16's value in blocks 9-16 (high enough, it takes the best median over all 16)."""
    jitter = [i % 3 for i in range(16)]
    out = []
    for users in (4, 16):
        out += runs("InnoDB", [100 + j for j in jitter], tables=8, cores=1, users=users)
        out += runs("InnoDB", [400 + j for j in jitter], tables=8, cores=4, users=users)
        out += runs("InnoDB", [100 + j for j in jitter], tables=1, cores=1, users=users)
    out += runs("InnoDB", [104 + j for j in jitter], tables=1, cores=4, users=4)
    out += runs("InnoDB", [98 + j for j in jitter[:8]] + [late_16] * 8, tables=1, cores=4, users=16)
    return {"x": out}


def test_scaling_cells_are_not_chosen_from_the_judged_blocks(tmp_path):
    """Decided at the first look (8 blocks): the verdict and its interval are the same
    whichever cell the later blocks make the best median; every users level is in the
    bound (the rule before chose the best-median cell over all blocks, so blocks 9-16
    changed the interval 'frozen' at look 1)."""
    claim = C.ScalingRatio(id="T-scale", study="A3", statement="s", published="p", experiments=("x",),
                           experiment_name="x", engine="InnoDB", rule=C.above(1.1), needs=C.SCALING,
                           min_cores=1)
    spec = {"x": {"study": "A3", "workload": "point_select", "variants": {},
                  "repetitions": {"min": 8, "max": 16, "looks": 2}}}
    rows = [evaluate(tmp_path / str(v), scaling_cells(v), config(spec), claim)[0] for v in (90, 200)]
    for r in rows:
        assert r["verdict"] == C.REPRODUCED and r["look"] == "1/2" and r["n"] == "8/8", r["reason"]
        assert "users 4, 16" in r["measured"] and "ratios of ratios" in r["method"]
    keep = ("ratio", "ratio_lo", "ratio_hi", "coverage", "verdict", "look")
    assert [rows[0][k] for k in keep] == [rows[1][k] for k in keep]


def test_every_contention_and_scaling_claim_declares_its_mechanism_and_cores():
    for c in studies.claims():
        if c.needs:
            assert c.needs in (C.CONTENTION, C.SCALING) and c.mechanism, c.id
            assert c.min_cores >= 2 and c.cores_why, c.id   # the count its mechanism needs, and whence


# --- what is missing ------------------------------------------------------------------------

def test_missing_experiment_level_and_build_say_what_is_missing(tmp_path):
    exps = {"x": runs("InnoDB", SEVEN_HI, trx="on") + runs("InnoDB", SEVEN_LO, trx="off")}
    cfg = config({"x": {"trx": ["on", "off"]}, "gone": {}})
    cfg["experiments"]["off"] = {"enabled": False, "variants": {}}
    d = write_tidy(tmp_path / "t", exps)
    tidy = T.load(d, cfg)
    reasons = {name: C.evaluate(tidy, [claim])[0]["reason"] for name, claim in {
        "ok": levels_claim(),
        "level": levels_claim(a=("maybe",)),
        "arity": levels_claim(a=("on", "off")),
        "absent": levels_claim(experiment_name="gone", experiments=("gone",)),
        "disabled": levels_claim(experiment_name="off", experiments=("off",)),
        "unknown": levels_claim(experiment_name="nowhere", experiments=("nowhere",)),
        "tables": levels_claim(tables=1),
    }.items()}
    assert reasons["ok"].startswith("ratio ")
    assert reasons["level"] == "experiment: x does not run transactions maybe"
    assert reasons["arity"].startswith("experiment: x varies transactions")
    assert reasons["absent"] == "data: no gone data"
    assert reasons["disabled"] == "experiment: off not run in this profile"
    assert reasons["unknown"] == "experiment: nowhere is not an experiment of this profile"
    assert reasons["tables"] == "experiment: x runs on 8 tables in this profile; the claim is about 1"


def test_build_claim_reads_unsupported_cells(tmp_path):
    claim = C.BuildRatio(id="T-build", study="A3", statement="s", published="p", experiments=("x",),
                         experiment_name="x", tables=8, engine="MyISAM", a="b2", b="b1", rule=C.above(1.0))
    exps = {"x": runs("MyISAM", SEVEN_HI, build="b2") + runs("MyISAM", SEVEN_LO, build="b1")}
    r = evaluate(tmp_path / "a", exps, config({"x": {}}), claim)[0]
    assert r["verdict"] == C.REPRODUCED and r["build"] == "b2 vs b1"
    exps = {"x": runs("MyISAM", SEVEN_LO, build="b1")}
    why = [{"experiment": "x", "build": "b2", "engine": "MyISAM", "variant": "base", "reason": "b2: no MyISAM engine"}]
    r = evaluate(tmp_path / "b", exps, config({"x": {}}), claim, unsupported=why)[0]
    assert r["verdict"] == C.NOT_MEASURABLE and r["reason"] == "build: b2: no MyISAM engine"


def test_same_as_checks_the_studys_conditions(tmp_path):
    """The read-only claim: the compared cells must run at the levels another experiment names."""
    cfg = config({"x": {"innodb_read_only": ["off", "on"], "ps": ["on"], "pfs": ["off"]},
                  "ref": {"ps": ["on", "off"], "pfs": ["on", "off"]}})
    claim = levels_claim(same_as=("ref", ("on", "off")))
    good = {"x": runs("InnoDB", SEVEN_HI, innodb_read_only="on", ps="on", pfs="off")
            + runs("InnoDB", SEVEN_LO, innodb_read_only="off", ps="on", pfs="off")}
    r = evaluate(tmp_path / "a", good, cfg, claim)[0]
    assert r["verdict"] == C.REPRODUCED
    assert r["statement"] == "innodb_read_only on vs innodb_read_only off"
    bad = {"x": runs("InnoDB", SEVEN_HI, innodb_read_only="on")
           + runs("InnoDB", SEVEN_LO, innodb_read_only="off")}   # ps/pfs at their baselines
    cfg["experiments"]["x"]["variants"] = {"innodb_read_only": ["off", "on"]}
    r = evaluate(tmp_path / "b", bad, cfg, claim)[0]
    assert r["verdict"] == C.NOT_MEASURABLE
    assert r["reason"].startswith("experiment: x did not run under the study's conditions (prepared "
                                  "statements on, Performance Schema off")


def test_scaling_is_the_per_block_ratio_of_ratios():
    """One interval on d_i = log((a1/b1)/(a2/b2)) per block, not four intervals multiplied."""
    from harness.analysis import blockverdict as BV, intervals as I
    a1, b1, a2, b2 = ([v * k for v in SEVEN_HI] for k in (4.0, 1.0, 1.05, 1.0))
    reps = dict.fromkeys(range(1, 8))
    j = BV.judge_scaling(*({r: x for r, x in zip(reps, v)} for v in (a1, b1, a2, b2)), C.above(1.1),
                         0.9, (7, 7, 1))
    ref = I.ratio_of_ratios(a1, b1, a2, b2, 0.9)
    assert (j.ci.lo, j.ci.hi, j.ci.coverage) == pytest.approx((ref.lo, ref.hi, ref.coverage))
    assert j.verdict == C.REPRODUCED and j.ci.method == I.RATIO_OF_RATIOS


# --- the invariant on random constructed data -----------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_invariant_on_random_cells(tmp_path, seed):
    rnd = random.Random(seed)
    exps, claims = {"x": []}, []
    for i in range(8):
        n_a, n_b = rnd.randint(1, 9), rnd.randint(1, 9)
        scale = rnd.choice([1.0, 1.02, 1.2, 3.0])
        exps["x"] += runs("MyISAM", [scale * rnd.uniform(90, 110) for _ in range(n_a)], users=i + 1)
        exps["x"] += runs("InnoDB", [rnd.uniform(90, 110) for _ in range(n_b)], users=i + 1)
    for j, rule in enumerate([C.above(1.0), C.below(1.0), C.above(1.1), C.within(0.95, 1.05),
                              C.within(1.0, 1.5), C.below(2.5)]):
        claims.append(engines_claim(id=f"T-{j}", rule=rule))
    for level in (0.5, 0.8, 0.9, 0.95):
        d = write_tidy(tmp_path / f"l{level}", exps)
        rows = C.evaluate(T.load(d, config({"x": {}}, level=level)), claims)
        assert C.invariant_violations(rows, level) == []
        assert all(r["verdict"] in C.VERDICTS for r in rows)


def test_invariant_check_itself_finds_a_violation():
    row = dict(claim="c", build="b", verdict=C.REPRODUCED, side="above", threshold="1", threshold_hi="",
               ratio_lo="0.9", ratio_hi="1.3", coverage="0.95", level="0.95")
    assert C.invariant_violations([row], 0.9)
    assert C.invariant_violations([dict(row, ratio_lo="1.01", coverage="0.5")], 0.9)
    assert not C.invariant_violations([dict(row, ratio_lo="1.01")], 0.9)
    # a look's coverage must reach the per-look level it was asked at, not only claims.level
    assert C.invariant_violations([dict(row, ratio_lo="1.01", coverage="0.92")], 0.9)


# --- real data: the recorded smoke cells ----------------------------------------------------------

@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return retidy(RAW, tmp_path_factory.mktemp("claims_real"))


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_real_claims_csv_keeps_the_invariant_and_has_the_columns(real):
    rows = read_rows(real["generated"] / "claims.csv")
    need = {"claim", "study", "statement", "published", "measured", "ratio_lo", "ratio_hi", "threshold",
            "side", "n", "verdict", "reason"}
    assert need <= set(rows[0])
    assert C.invariant_violations(rows, C.setting({}, "level")) == []
    assert not [r["claim"] for r in rows if "cannot evaluate" in r["reason"]]
    assert [r["claim"] for r in rows] == [c.id for c in studies.claims() for _ in
                                          range(sum(1 for r in rows if r["claim"] == c.id))]


def ungated(claims):
    """The claims with the cores gate at 1 (a test on the recorded 1-core cells)."""
    return [replace(c, min_cores=1) if c.needs else c for c in claims]


@pytest.mark.parametrize("level", [0.5, 0.25, 0.9])
def test_real_data_invariant_at_other_levels_and_without_the_gate(real, level):
    cfg = T.read_yaml(real["tidy"] / "config.resolved.yaml")
    cfg["claims"] = {"level": level}
    rows = C.evaluate(T.load(real["tidy"], cfg), ungated(studies.claims()))
    assert C.invariant_violations(rows, level) == []
    assert not [r["claim"] for r in rows if "cannot evaluate" in r["reason"]]
    judged = [r for r in rows if r["verdict"] in (C.REPRODUCED, C.NOT_REPRODUCED) and r["side"]]
    for r in judged:
        assert min(int(n) for n in r["n"].split("/")) >= 2


def test_real_claims_every_study_claim_present(real):
    rows = read_rows(real["generated"] / "claims.csv")
    ids = {r["claim"] for r in rows}
    assert ids == {c.id for c in studies.claims()}
    by = {r["claim"]: r for r in rows}
    # one core: contention claims are not measurable, with what was measured kept
    assert by["A3-PS-myisam-wins"]["verdict"] == C.NOT_MEASURABLE
    assert by["A3-PS-myisam-wins"]["reason"].startswith("cores:")
    assert by["A3-PS-myisam-wins"]["n"] == "2/2" and by["A3-PS-myisam-wins"]["ratio_lo"]
    # B1: 1,000-row tables are too small for the collapse to show
    assert by["B1-HASH-range-throughput"]["reason"].startswith("scale:")
    assert by["B1-HASH-range-full-scan"]["verdict"] == C.REPRODUCED
    # experiments of the recorded profile without a recorded cell (the fixture's recording ran a
    # subset, tests/fixtures/raw/README.md): a claim reading only those says there is no data
    cfg = T.read_yaml(RAW / "config.resolved.yaml")
    recorded = {d.name for d in RAW.glob("*/*") if d.is_dir()}
    unrecorded = {e for e, spec in cfg["experiments"].items() if spec["enabled"]} - recorded
    assert "mdl_hash" in unrecorded
    assert by["A3-MDL-hash-instances"]["reason"] == "data: no mdl_hash data"
    for c in studies.claims():
        if c.experiments and set(c.experiments) <= unrecorded:
            assert by[c.id]["verdict"] == C.NOT_MEASURABLE and by[c.id]["reason"].startswith("data: no "), c.id
    # simple_ranges ran on 8 tables too, on 1 core: the 8-table claim needs A3's 16 hardware
    # threads (not measurable, what was measured kept); without the gate it is judged (one
    # block: inconclusive)
    sr = by["A3-SR-innodb-much-faster"]
    assert sr["verdict"] == C.NOT_MEASURABLE and sr["reason"].startswith("cores:") and "8 tables" in sr["measured"]
    assert by["A3-TRX-beats-autocommit-InnoDB"]["reason"].startswith("cores:")
    ungated_rows = {r["claim"]: r for r in C.evaluate(T.load(real["tidy"], cfg), ungated(studies.claims()))}
    sr = ungated_rows["A3-SR-innodb-much-faster"]
    assert sr["verdict"] == C.INCONCLUSIVE and "8 tables" in sr["measured"] and "(1 paired blocks)" in sr["reason"]
    # single repetitions: no verdict either way, and the cells are named as unstable
    trx = ungated_rows["A3-TRX-beats-autocommit-InnoDB"]
    assert trx["verdict"] == C.INCONCLUSIVE and "(1 paired blocks)" in trx["reason"]
    assert "repetitions (max 1 blocks) cannot decide it" in trx["reason"]
    assert "unstable: mysql-5.6.24_InnoDB_trx-on_t8_c1_u4" in trx["reason"]
    # the build claim: one row for the two builds, and a build the profile did not measure named
    build = by["A3-BUILD-rc1-rc2-MyISAM"]
    assert build["build"] == "mysql-5.6.24 vs mysql-5.5.9"
    assert "5.5.9" not in {b for b in cfg["experiments"]["build_compare"]["builds"]}
    assert build["reason"] == "build: mysql-5.5.9 is not a build of experiment build_compare in this profile"


def test_real_top_waits_list_the_measured_waits(real):
    rows = {r["claim"]: r for r in read_rows(real["generated"] / "claims.csv")}
    r = rows["A3-WAIT-InnoDB-trx_sys"]
    assert r["measured"].startswith("innodb/trx_sys_mutex ranks 1 of ")
    cfg = T.read_yaml(real["tidy"] / "config.resolved.yaml")
    judged = {x["claim"]: x for x in C.evaluate(T.load(real["tidy"], cfg), ungated(studies.claims()))}
    # two repetitions, both rank trx_sys first: 2 of 2, but the exact Clopper-Pearson
    # interval at 0.9 is [0.22, 1]: two repetitions cannot show "most repetitions"
    trx = judged["A3-WAIT-InnoDB-trx_sys"]
    assert trx["verdict"] == C.INCONCLUSIVE and "2 of 2 repetitions" in trx["reason"], trx["reason"]
    assert "[0.224, 1]" in trx["reason"]


# --- the same configuration twice: noise alone never reproduces ----------------------------------

SAME = ("InnoDB", "8", "1", "4")   # engine, tables, cores, users
# what makes two runs one configuration: the workload, the build, the cell's shape and every factor
# as the servers reported it (the tidy factor columns come from each cell's effective settings)
SAME_KEYS = ("workload", "build", "engine", "tables", "cores", "users", *factors.FACTORS)


def same_configuration_runs(tidy_dir):
    """Every real run, in any experiment, of the configuration of point_select's base cell
    InnoDB, 8 tables, 1 core, 4 users on mysql-5.6.24: the same on every SAME_KEYS column."""
    tidy_dir = Path(tidy_dir)
    base = [r for r in read_rows(tidy_dir / "point_select.csv") if r["variant"] == "base"
            and r["build"] == "mysql-5.6.24" and (r["engine"], r["tables"], r["cores"], r["users"]) == SAME]
    key = {tuple(r.get(k, "") for k in SAME_KEYS) for r in base}
    assert len(key) == 1, key
    out = []
    for path in sorted(tidy_dir.glob("*.csv")):
        rows = [] if path.name.endswith("_summary.csv") else read_rows(path)
        out += [r for r in rows if "qps_server" in r and tuple(r.get(k, "") for k in SAME_KEYS) in key]
    return out


def relabelled(rows_a, rows_b):
    """Two sets of real runs as the two levels ('on' / 'off') of one factor of experiment 'same'."""
    out = []
    for label, rows in (("on", rows_a), ("off", rows_b)):
        for rep, r in enumerate(rows, 1):
            row = {k: "" for k in tidywrite.RUN_FIELDS}
            row.update({k: r[k] for k in tidywrite.RUN_FIELDS if k in r})
            row.update({k: "" for k in factors.FACTORS})     # one configuration: no other setting
            row.update(experiment="same", variant=f"pfs-{label}", pfs=label, rep=rep)
            out.append(row)
    return out


RULES = [C.above(1.0), C.below(1.0), C.above(1.05), C.within(0.9, 1.1)]


def same_claims():
    return [levels_claim(id=f"T-same-{i}", experiment_name="same", experiments=("same",), rule=rule)
            for i, rule in enumerate(RULES)]


def test_the_same_configuration_spreads_widely(real):
    """What the rule is up against: one configuration, five real runs in four experiments, far apart."""
    same = same_configuration_runs(real["tidy"])
    assert sorted((r["experiment"], r["variant"], r["rep"]) for r in same) == [
        ("build_compare", "base", "1"), ("point_select", "base", "1"), ("point_select", "base", "2"),
        ("ps_pfs", "ps-off.pfs-on", "1"), ("spin_wait", "spin-96", "1")]
    values = sorted(float(r["qps_server"]) for r in same)
    assert values[-1] / values[0] > 1.5


def test_repetition_1_vs_2_of_the_same_cells_never_reproduces(real, tmp_path):
    """point_select's cells measured twice: repetition 1 relabelled 'on', repetition 2 'off'."""
    cfg = config({"same": {"pfs": ["on", "off"]}})
    rows = read_rows(real["tidy"] / "point_select.csv")
    checked = 0
    for key, cell in itertools.groupby(sorted(rows, key=lambda r: (r["engine"], r["tables"], r["users"])),
                                       key=lambda r: (r["engine"], r["tables"], r["users"])):
        cell = list(cell)
        one = [r for r in cell if r["rep"] == "1"]
        two = [r for r in cell if r["rep"] == "2"]
        if not one or not two:
            continue
        for a, b in ((one, two), (two, one)):
            runs_ = relabelled([dict(r, engine="InnoDB") for r in a], [dict(r, engine="InnoDB") for r in b])
            d = write_tidy(tmp_path / f"{checked}", {"same": runs_})
            for level in (0.9, 0.5):
                cfg["claims"] = {"level": level}
                out = C.evaluate(T.load(d, cfg), [dataclass_replace(c, tables=int(key[1]))
                                                   for c in same_claims()])
                assert {r["verdict"] for r in out} == {C.INCONCLUSIVE}, out
                assert C.invariant_violations(out, level) == []
            checked += 1
    assert checked == 16   # 2 engines x 2 tables x 2 users, each way round


def test_any_split_of_one_configurations_runs_never_reproduces(real, tmp_path):
    """The real runs of one configuration, split every way into two 'settings' of at
    least two runs each: at the default level no split yields a verdict."""
    same = same_configuration_runs(real["tidy"])
    idx = range(len(same))
    splits = [set(s) for k in range(2, len(same) - 1) for s in itertools.combinations(idx, k)]
    cfg = config({"same": {"pfs": ["on", "off"]}})
    for i, s in enumerate(splits):
        a = [same[j] for j in idx if j in s]
        b = [same[j] for j in idx if j not in s]
        d = write_tidy(tmp_path / f"s{i}", {"same": relabelled(a, b)})
        out = C.evaluate(T.load(d, cfg), same_claims())
        assert C.REPRODUCED not in {r["verdict"] for r in out}, (s, out)
        assert C.invariant_violations(out, 0.9) == []
    n = len(same)
    assert n >= 5 and len(splits) == 2 ** n - 2 - 2 * n   # every split but 0 or 1 runs against the rest


def dataclass_replace(c, **kw):
    from dataclasses import replace
    return replace(c, **kw)


# --- the claims code never names a factor -----------------------------------------------------

CODE = [ROOT / "workflow" / "harness" / "analysis" / "claims.py", ROOT / "workflow" / "harness" / "analysis" / "tidyread.py",
        *sorted((ROOT / "workflow" / "harness" / "report").glob("*.py")),
        *sorted((ROOT / "workflow" / "harness" / "studies").glob("*/__init__.py")),
        *sorted((ROOT / "workflow" / "R").glob("*.R"))]


def test_no_factor_name_in_claims_report_studies_or_r_code():
    """A factor is named in harness.measure.factors, the config and the workload only. An
    experiment that shares a factor's name may be named as the experiment (quoted)."""
    experiments = set(T.read_yaml(ROOT / "config" / "default.yaml")["experiments"])
    found = []
    for path in CODE:
        text = path.read_text()
        for name in factors.FACTORS:
            for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?![\w])", text):
                quoted = text[m.start() - 1:m.start()] in "\"'" and text[m.end():m.end() + 1] in "\"'"
                if name in experiments and quoted:
                    continue
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert found == []


def test_every_study_declares_its_parts():
    for name, mod in studies.all_studies().items():
        assert mod.NAME == name
        assert studies.section_path(mod).is_file(), mod.SECTION
        assert mod.CLAIMS and all(c.study for c in mod.CLAIMS)
        for fig in mod.FIGURES.values():
            assert studies.figure_script(mod, fig["script"]).is_file()
    ids = [c.id for c in studies.claims()]
    assert len(ids) == len(set(ids))
    macros = [c.macro for c in studies.claims() if c.macro]
    assert len(macros) == len(set(macros)) and all(re.fullmatch(r"[A-Za-z]+", m) for m in macros)
    for c in studies.claims():
        if c.rule is not None and c.rule.threshold != 1.0:
            assert c.rule.why, f"{c.id}: a tolerance needs its one-line justification"


# 0.5 only: a signed-rank interval at 0.75 needs 3 paired blocks a side, i.e. a configuration with
# 6 runs, and the recorded fixture's largest has 5 (same_configuration_runs)
@pytest.mark.parametrize("level", [0.5])
def test_at_a_low_level_noise_reproduces_no_more_often_than_the_level_allows(real, tmp_path, level):
    """Lower the level and some splits of one configuration's runs do reach a verdict --
    noise, at most as often as 1 - level (the interval's guarantee), for each rule."""
    same = same_configuration_runs(real["tidy"])
    idx = range(len(same))
    blocks = intervals.min_blocks(level, 1)   # one look: the fewest a signed-rank interval at `level` needs
    splits = [set(s) for k in range(blocks, len(same) - blocks + 1) for s in itertools.combinations(idx, k)]
    assert splits, f"{len(same)} runs cannot give both sides {blocks} blocks"
    cfg = config({"same": {"study": "A3", "workload": "point_select", "variants": {"pfs": ["on", "off"]},
                           "repetitions": blocks}}, level=level)
    hits = {i: 0 for i in range(len(RULES))}
    for i, s in enumerate(splits):
        a = [same[j] for j in idx if j in s]
        b = [same[j] for j in idx if j not in s]
        d = write_tidy(tmp_path / f"s{i}", {"same": relabelled(a, b)})
        for j, r in enumerate(C.evaluate(T.load(d, cfg), same_claims())):
            hits[j] += r["verdict"] == C.REPRODUCED
    assert all(h / len(splits) <= 1 - level for h in hits.values()), hits
    if level == 0.5:
        assert hits[0] > 0   # the test can see a verdict reached by noise


# --- experiment_decided: the stopping rule's question (decide-blocks asks it at each look) ---------

def test_experiment_decided_on_the_recorded_cells(real, monkeypatch):
    cfg = T.read_yaml(real["tidy"] / "config.resolved.yaml")
    # as recorded: 1-2 repetitions is the profile's max, so more blocks cannot change a verdict
    assert C.experiment_decided(T.load(real["tidy"], cfg), "oltp_ro") is True
    # on the recording's 1 core every oltp_ro ratio claim is gated (not measurable: more blocks
    # change nothing); the rest of the test reads the claims with the gate at 1 core
    original = studies.claims
    monkeypatch.setattr(studies, "claims", lambda: ungated(original()))
    monkeypatch.setattr(registry, "claims", lambda: ungated(original()))  # what the engine asks
    # the same cells in a profile that looks at 6 and 12 blocks: A3-TRX (oltp_ro, inconclusive on one
    # block) may still be decided by more blocks
    cfg["experiments"]["oltp_ro"]["repetitions"] = {"min": 6, "max": 12, "looks": 2}
    tidy = T.load(real["tidy"], cfg)
    rows = [r for r in C.evaluate(tidy, studies.claims()) if "oltp_ro" in r["experiment"].split("+")]
    assert any(r["verdict"] == C.INCONCLUSIVE and "1 blocks measured" in r["reason"] for r in rows)
    assert C.experiment_decided(tidy, "oltp_ro") is False
    # an experiment no claim reads, and a profile that does not decide: nothing to wait for
    assert C.experiment_decided(tidy, "no_such_experiment") is True
    cfg["claims"] = {"decide": False}
    tidy = T.load(real["tidy"], cfg)
    assert C.experiment_decided(tidy, "oltp_ro") is True
    by_design = [r for r in C.evaluate(tidy, studies.claims()) if r["verdict"] == C.INCONCLUSIVE
                 and r["side"]]
    assert by_design and all(r["reason"].startswith("by design") for r in by_design)


# --- B3's table-lock waits: an interval over blocks, not two pooled shares ----------------

def _lock_waits_rows(engine, waited, immediate, cores):
    """Run rows and status rows of one read_write cell: per block (repetition) its
    Table_locks_waited and Table_locks_immediate deltas."""
    rows = runs(engine, [1000] * len(waited), experiment="read_write", tables=1, cores=cores)
    status = []
    for row, w, i in zip(rows, waited, immediate):
        key = {k: row[k] for k in tidywrite.KEY_FIELDS + ["rep"]}
        status += [{**key, "name": "Table_locks_waited", "delta": w},
                   {**key, "name": "Table_locks_immediate", "delta": i}]
    return rows, status


def _lock_waits(tmp_path, cells, **claims_cfg):
    claim = next(c for c in studies.claims() if c.id == "B3-MEMORY-table-lock-waits")
    runs_, status = [], []
    for engine, waited, immediate, cores in cells:
        r, s = _lock_waits_rows(engine, waited, immediate, cores)
        runs_ += r
        status += s
    cfg = config({"read_write": {"study": "B3", "workload": "oltp_rw", "variants": {}}}, **claims_cfg)
    return evaluate(tmp_path, {"read_write": runs_}, cfg, claim, extras={("read_write", "status"): status})[0]


def test_b3_lock_waits_are_judged_on_the_blocks_interval(tmp_path):
    seven = [0] * 7
    # MEMORY waited in every block, InnoDB never: the whole interval of the difference above 0
    r = _lock_waits(tmp_path / "a", [("MEMORY", [50] * 7, [950] * 7, 4), ("InnoDB", seven, [1000] * 7, 4)])
    assert r["verdict"] == C.REPRODUCED and "exact sign-test" in r["measured"] and "7 blocks" in r["measured"]
    # neither waits: not more often
    r = _lock_waits(tmp_path / "b", [("MEMORY", seven, [1000] * 7, 4), ("InnoDB", seven, [1000] * 7, 4)])
    assert r["verdict"] == C.NOT_REPRODUCED
    # MEMORY above in 4 blocks of 7, below in 3: one pooled share would say "more often"; the interval does not
    r = _lock_waits(tmp_path / "c", [("MEMORY", [90, 80, 70, 60, 0, 0, 0], [1000] * 7, 4),
                                     ("InnoDB", [0, 0, 0, 0, 10, 10, 10], [1000] * 7, 4)])
    assert r["verdict"] == C.INCONCLUSIVE and "straddles 0" in r["reason"]


def test_b3_lock_waits_read_only_the_cells_at_enough_cores(tmp_path):
    """1-core cells where MEMORY waited do not count when there are cells at the gate's cores."""
    waits = [("MEMORY", [50] * 7, [950] * 7, 1), ("InnoDB", [0] * 7, [1000] * 7, 1)]
    r = _lock_waits(tmp_path / "a", waits + [("MEMORY", [0] * 7, [1000] * 7, 4), ("InnoDB", [0] * 7, [1000] * 7, 4)])
    assert r["verdict"] == C.NOT_REPRODUCED and "MEMORY 0.00%" in r["measured"]
    r = _lock_waits(tmp_path / "b", waits)  # below the gate only: what was measured, not measurable
    assert r["verdict"] == C.NOT_MEASURABLE and r["reason"].startswith("cores:") and "MEMORY 5.00%" in r["measured"]


def test_b3_lock_waits_too_few_blocks_or_no_decision_is_inconclusive(tmp_path):
    """Two blocks come before the experiment's first look whatever they show, and a profile
    with claims.decide false gets no verdict."""
    r = _lock_waits(tmp_path / "a", [("MEMORY", [50] * 2, [950] * 2, 4), ("InnoDB", [0] * 2, [1000] * 2, 4)])
    assert r["verdict"] == C.INCONCLUSIVE and "the first look is at 6" in r["reason"], r["reason"]
    seven = [("MEMORY", [50] * 7, [950] * 7, 4), ("InnoDB", [0] * 7, [1000] * 7, 4)]
    r = _lock_waits(tmp_path / "b", seven, decide=False)
    assert r["verdict"] == C.INCONCLUSIVE and r["reason"].startswith("by design")


def test_b3_lock_waits_verdict_is_frozen_at_the_first_deciding_look(tmp_path):
    """The looks of the ratio claims (default 6 and 12 blocks, each at the Bonferroni level):
    six blocks where MEMORY waited decide at look 1; six later blocks where it did not, which
    would leave all twelve undecided, do not undo it."""
    waited = [50] * 6 + [0] * 6
    innodb = [0] * 6 + [50] * 6
    r = _lock_waits(tmp_path / "a", [("MEMORY", waited, [950] * 12, 4), ("InnoDB", innodb, [950] * 12, 4)])
    assert r["verdict"] == C.REPRODUCED and "look 1/2 after 6 blocks" in r["reason"], r["reason"]
    # the twelve blocks in the other order: InnoDB waited in the first six, decided the other way
    # at look 1 (over all twelve the interval would straddle 0)
    r = _lock_waits(tmp_path / "b", [("MEMORY", waited[::-1], [950] * 12, 4),
                                     ("InnoDB", innodb[::-1], [950] * 12, 4)])
    assert r["verdict"] == C.NOT_REPRODUCED and "look 1/2" in r["reason"], r["reason"]


def test_spin_stability_reads_every_load_not_the_best_cell(tmp_path):
    """A3's 'delay 256 more stable than 96' (per-second QPS CV, 96 / 256): 96 is the less
    stable at users 16, where its QPS is the higher, and the more stable at users 4. The
    rule before read the best-median cell only (users 16: CV 8% vs 4%, reproduced); each
    block's geometric mean CV over the loads both delays measured says no side."""
    from harness.studies import a2_a3
    claim = a2_a3.SpinStability(
        id="T-spin", study="A3", statement="s", published="p", rule=C.above(1.0),
        experiments=("x",), experiment_name="x", tables=8, engine="InnoDB", a=(96,), b=(256,))
    n, rows, series = 12, [], []
    for delay, users, qps, cv in ((96, 4, 100, 2.0), (96, 16, 130, 8.0), (256, 4, 100, 4.0),
                                  (256, 16, 120, 4.0)):
        rows += runs("InnoDB", [qps + i % 3 for i in range(n)], users=users, spin_wait_delay=delay)
        label = factors.label({"spin_wait_delay": delay})
        for rep in range(1, n + 1):
            x = cv * (1.2 if rep % 2 else 0.8) if (delay, users) == (96, 4) else cv
            series += [{"build": "b1", "engine": "InnoDB", "variant": label, "tables": "8", "cores": "1",
                        "users": str(users), "rep": str(rep), "qps": str(q)} for q in (100 - x, 100, 100 + x)]
    cfg = config({"x": {"spin_wait_delay": [96, 256]}})
    r = evaluate(tmp_path, {"x": rows}, cfg, claim, extras={("x", "intervals"): series})[0]
    assert "geometric mean over users 4, 16" in r["measured"], r["measured"]
    assert r["verdict"] == C.INCONCLUSIVE and float(r["ratio_lo"]) < 1 < float(r["ratio_hi"]), r["reason"]
    geo = [(2.0 * (1.2 if rep % 2 else 0.8) * 8.0) ** 0.5 / 4.0 for rep in range(1, n + 1)]
    assert float(r["ratio"]) == pytest.approx(intervals.paired_interval(geo, [1.0] * n).point, rel=1e-3)


def test_a_peak_with_fewer_blocks_than_the_first_look_says_so(tmp_path):
    """Three blocks of two loads a side: inconclusive, the reason naming the first look."""
    exps = {"x": runs("MyISAM", [200, 201, 202], users=4) + runs("MyISAM", [210, 211, 212], users=16)
            + runs("InnoDB", [100, 101, 102], users=4) + runs("InnoDB", [90, 91, 92], users=16)}
    r = evaluate(tmp_path, exps, config({"x": {}}), engines_claim())[0]
    assert r["verdict"] == C.INCONCLUSIVE and r["method"] == intervals.MAX_MIN, r["reason"]
    assert "3 blocks measured, the first look is at 6 (of max 12)" in r["reason"]


def test_an_experiment_the_plan_did_not_plan_says_why_in_every_claim_kind(tmp_path):
    """The resolved profile's `not_planned` (harness.plan.config.mark_unread: "experiment: <x>
    is not planned on this host: ...") is each claim's reason, split as Missing(reason,
    detail), in the row kinds that read it from the tidy data (an engine ratio, a level ratio):
    never "cannot evaluate (TypeError ...)" (the string was once splatted into missing())."""
    why = "experiment: x is not planned on this host: no figure draws it (cores: needs 4)"
    cfg = config({"x": {"study": "A3", "workload": "point_select", "variants": {}, "enabled": False,
                        "not_planned": why}})
    assert T.load(write_tidy(tmp_path / "t", {}), cfg).missing("x") == T.Missing(
        "experiment", "x is not planned on this host: no figure draws it (cores: needs 4)")
    for i, claim in enumerate((engines_claim(), levels_claim())):
        r = evaluate(tmp_path / str(i), {}, cfg, claim)[0]
        assert r["verdict"] == C.NOT_MEASURABLE and r["reason"] == why, r["reason"]
