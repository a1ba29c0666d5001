"""Blocks after repetitions.figures (default: min, the first look) measure only the cells a
measurable claim reads (harness.plan.cells.read_combos with a repetition)."""
from __future__ import annotations

import pytest
import yaml

from harness.plan import cells as plan, config, plancmd, estimate, reads, schedule

from conftest import ROOT  # noqa: E402
from test_lanes import paper, topo  # noqa: E402
from harness import paths

BIG = ["192em64t-12gr2n8c2t", "96em64t-4n4d3ca2co-pci"]


def _per_block(r, lock, rep) -> int:
    return sum(len(plan.read_combos(r, lock, e, rep)) for e in plan.experiments(r))


# cells per block of the paper profile (build_compare on `cores: study`: A3's 16, 24, 32 where
# they fit, else the largest; Point-Selects on A3's users 8-256: 686/195 and 884/575 with 1-256;
# the sweeps on `cores: study`, no extra 1 and 2 cores on a small host, read_write on 4-32 for
# B3: 638/189 and 824/523 before; A2 on A3's 16-32: 299/131 and 652/483 before A2 took the
# setup's 4-32 sweep and A3 its scaling and 8-over-1-table rows, issue 52)
@pytest.mark.parametrize("name,first,late", [("32em64t-2n8c2t-pci-noio", 379, 193),
                                             (BIG[0], 812, 579), (BIG[1], 812, 579)])
def test_later_blocks_hold_only_the_cells_claims_read(name, first, late):
    t, r, lock = paper(name)
    assert _per_block(r, lock, 1) == _per_block(r, lock, 6) == first   # blocks 1..min: every read cell
    assert _per_block(r, lock, 7) == _per_block(r, lock, 24) == late
    claims = reads.readers(r, lock, t)["claim_selectors"]
    for exp in plan.experiments(r):
        early, later = plan.read_combos(r, lock, exp, 1), plan.read_combos(r, lock, exp, 7)
        assert all(d in early for d in later)
        assert [d for d in early if reads.kept(claims.get(exp, []), d)] == later
        lo, hi, _ = plan.repetition_bounds(r["experiments"][exp])
        names = plan.cell_names(r, lock, exp)   # every block up to max
        assert len(names) == lo * len(early) + (hi - lo) * len(later)
        assert not any(n.endswith("_r7") for n in names) or later


def test_an_experiment_only_figures_read_has_blocks_up_to_figures_only():
    t, r, lock = paper("32em64t-2n8c2t-pci-noio")
    assert not plan.claim_read(r, lock, "ps_pfs") and plan.claim_read(r, lock, "point_select")
    assert plan.cells(r, lock, "ps_pfs", 6) and plan.cells(r, lock, "ps_pfs", 7) == []
    r["experiments"]["ps_pfs"]["repetitions"] = {"min": 6, "max": 24, "looks": 2, "figures": 2}
    plan._READ.clear()
    assert plan.figure_blocks(r["experiments"]["ps_pfs"]) == 2
    assert plan.cells(r, lock, "ps_pfs", 2) and plan.cells(r, lock, "ps_pfs", 3) == []
    assert plan.cells(r, lock, "point_select", 24)  # a claim reads it: every block has cells


def _with_figures(fig, where="experiment_defaults"):
    cfg: dict = {}
    config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / "default.yaml").read_text()))
    reps = {"min": 6, "max": 12, "looks": 2, "figures": fig}
    if where == "experiment_defaults":
        config.deep_merge(cfg, {"experiment_defaults": {"repetitions": reps}})
    else:
        config.deep_merge(cfg, {"experiments": {where: {"repetitions": reps}}})
    return config.resolve(cfg)


def test_the_figures_key_is_checked_in_one_line():
    r = _with_figures(3)
    assert plan.figure_blocks(r["experiments"]["point_select"]) == 3
    with pytest.raises(config.ConfigError, match=r"^experiments\.point_select\.repetitions\.figures: 7 must be "
                                                 r"an integer with 1 <= figures <= min \(6\); set it between 1 and 6"):
        _with_figures(7, "point_select")
    with pytest.raises(config.ConfigError, match=r"^experiment_defaults\.repetitions\.figures: 0 must be"):
        _with_figures(0)
    with pytest.raises(config.ConfigError, match=r"figures"):   # the schema: an integer
        _with_figures("3")


def test_figures_unset_is_min():
    assert plan.figure_blocks({"repetitions": {"min": 6, "max": 24, "looks": 2}}) == 6
    assert plan.figure_blocks({"repetitions": 4}) == 4


@pytest.mark.parametrize("name", ["32em64t-2n8c2t-pci-noio", BIG[0]])
def test_the_estimate_of_an_experiment_only_figures_read_has_no_worse_case(name, tmp_path):
    t, r, lock = paper(name)
    est = estimate.estimate(r, lock, bench_dir=str(tmp_path / "b"), raw=str(tmp_path / "r"), topo=t)
    rows = {x["experiment"]: x for x in est["rows"]}
    only_figures = [e for e in rows if not plan.claim_read(r, lock, e)]
    assert "pfs_instruments" in only_figures
    for e in only_figures:
        assert rows[e]["worst_s"] == rows[e]["total_s"] and rows[e]["cells_max"] == rows[e]["cells"]
    for e in set(rows) - set(only_figures):
        x = rows[e]
        lo, hi = x["blocks"]
        assert x["cells_max"] == lo * x["cells_block"] + (hi - lo) * x["cells_late"]
    ps = schedule.pieces(r, lock, est["rows"], est["lanes_obj"], worst=True)
    assert not [p for p in ps if p.experiment in only_figures and p.block > 6]
    late = {(p.experiment, p.block) for p in ps if p.block > 6}
    assert late and all(e not in only_figures for e, _ in late)


def test_figures_below_min_shortens_the_expected_time(tmp_path):
    t, r, lock = paper("32em64t-2n8c2t-pci-noio")
    full = estimate.estimate(r, lock, bench_dir=str(tmp_path / "b"), raw=str(tmp_path / "r"), topo=t)
    for spec in r["experiments"].values():
        spec["repetitions"] = {"min": 6, "max": 24, "looks": 2, "figures": 3}
    plan._READ.clear()
    less = estimate.estimate(r, lock, bench_dir=str(tmp_path / "b"), raw=str(tmp_path / "r"), topo=t)
    assert less["total_s"] < full["total_s"] and less["worst_s"] < full["worst_s"]
    row = {x["experiment"]: x for x in less["rows"]}["point_select"]
    assert row["cells"] == 3 * row["cells_block"] + 3 * row["cells_late"]


def test_the_plan_without_its_estimate_still_says_what_later_blocks_hold(tmp_path):
    """`./artifact plan --no-estimate` prints the same later-blocks line per experiment as
    the plan with its estimate (cells.block_counts stands in for the estimate's row)."""
    t = topo("32em64t-2n8c2t-pci-noio")
    cfg = {}
    for f in ("default.yaml", "paper.yaml"):
        config.deep_merge(cfg, yaml.safe_load((ROOT / "config" / f).read_text()))
    kw = dict(lock_path=paths.LOCK, root=str(ROOT), bench_dir=str(tmp_path / "b"), raw=str(tmp_path / "r"))
    full, bare = (plancmd.build(cfg, t, with_estimate=w, **kw) for w in (True, False))
    lines = {e["experiment"]: e["late"] for e in full["experiments"]}
    assert lines == {e["experiment"]: e["late"] for e in bare["experiments"]}
    assert lines["oltp_ro"].startswith("blocks 7-24: only the ") and lines["pfs_instruments"].startswith(
        "blocks 7-24: none")
    assert "blocks 7-24" in plancmd.render(bare) and bare["estimate"] is None
