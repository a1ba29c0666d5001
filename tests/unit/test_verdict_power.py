"""The paper's power table comes from bench/verdict_power.py's simulation, run through the
pipeline's own decision code (the pipeline's rule verdict_power makes the CSV at the run's
claims.level); without the CSV the table says the benchmark was not run. The simulation
places the compared cells at random positions in blocks of the profiles' own sizes and
has peak and scaling arms whose curves differ in shape."""
from __future__ import annotations

import csv
import importlib.util
import re
import subprocess
import sys

import pytest

from conftest import ROOT

from harness.report import method

SPEC = importlib.util.spec_from_file_location("verdict_power", ROOT / "bench" / "verdict_power.py")
VP = importlib.util.module_from_spec(SPEC)
sys.modules["verdict_power"] = VP   # its dataclasses look their module up
SPEC.loader.exec_module(VP)


def simulate(out, *args):
    subprocess.run([sys.executable, str(ROOT / "bench" / "verdict_power.py"), "--levels", "0.90", "--jobs", "1",
                    "--out", str(out), *args], check=True, capture_output=True, text=True, timeout=600)
    return list(csv.DictReader(open(out)))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("power") / "verdict_power.csv"
    return out, simulate(out, "--trials", "60", "--shape-trials", "20")


def test_power_table_from_the_simulation(small):
    out, rows = small
    tex = method.power_tex(0.9, out)
    assert "was not run" not in tex
    plain = {m.group(1): [float(x) for x in m.group(2).split(" & ")] for m in re.finditer(
        r"^(default|paper) \(\d+:\d+:\d+\), one cell a side & ((?:[01]\.\d{3} & )+[01]\.\d{3})", tex, re.M)}
    assert set(plain) == {"default", "paper"}, tex
    # P(reproduced) rises with the true ratio, from the null's small rate: at most 0.05 plus
    # three binomial standard errors of 60 trials (0.134), what 60 trials can tell from it
    null_max = 0.05 + 3 * (0.05 * 0.95 / 60) ** 0.5
    for p in plain.values():
        assert p[0] <= null_max and p[-1] >= 0.9 and p == sorted(p), tex
    for arm in ("peak, flat-2 vs sharp", "peak, flat-3 vs sharp", "peak, sharp vs sharp", "scaling"):
        assert re.search(rf"^paper \(6:24:2\), {arm} & ", tex, re.M), (arm, tex)
    # another level than the run's: no row of it, so no figures are made up
    assert re.search(r"^default \(6:12:2\), one cell a side & -- ", method.power_tex(0.95, out), re.M)


def test_blocks_have_the_profiles_sizes_and_every_arm_is_simulated(small):
    """block_size: the profile's largest block as its planning code lays it out (the paper
    profile on a 64-CPU host, hundreds of cells), not two cells back to back."""
    _, rows = small
    assert {"arm", "block_size"} <= set(rows[0])
    sizes = {r["method"].split(":")[1]: int(r["block_size"]) for r in rows if r["method"].startswith("signed-rank:")}
    assert sizes == {"paper": VP.block_size("paper"), "default": VP.block_size("default")}
    assert sizes["paper"] > sizes["default"] > 12
    assert {r["arm"] for r in rows} == {"plain", "peak-flat2-sharp", "peak-flat3-sharp", "peak-sharp-sharp",
                                        "scaling"}


def test_draw_puts_cells_of_a_block_at_random_positions_sharing_the_drift():
    """Two cells far apart in a big block share less drift than two adjacent ones: the
    log ratio's spread grows with the block size (no noise, drift only)."""
    import random
    import statistics
    spread = {}
    for size in (2, 240):
        rows = VP.draw(random.Random(1), 3000, size, (1.0, 1.0), 1e-9, 0.05)
        spread[size] = statistics.pstdev([__import__("math").log(a / b) for a, b in rows])
    assert spread[2] < 0.05 < spread[240] < 0.05 * 2 ** 0.5 + 0.01


def test_without_the_simulation_the_paper_says_so(tmp_path):
    assert "was not run" in method.power_tex(0.9, tmp_path / "absent.csv")


def test_peak_rows_show_what_the_shape_cost(tmp_path):
    """At a true ratio of 1 (every reproduced false), A flat over 3 loads against B's one
    sharp peak: the rule before (each side's per-block maximum) reproduces far more often
    than its level allows; the max-min bound the claims use stays near (1 - level)/2."""
    rows = simulate(tmp_path / "verdict_power.csv", "--trials", "20", "--shape-trials", "200",
                    "--settings", "default:6:12:2")
    null = {r["method"].split(":")[0]: float(r["p_reproduced"]) for r in rows
            if r["arm"] == "peak-flat3-sharp" and r["true_ratio"] == "1.00"}
    assert null["signed-rank"] <= 0.08 and null["old-per-block-max"] >= 0.25, null


def test_readme_block_is_generated_from_the_csv(small, tmp_path):
    """scripts/power-table.py rewrites the block between its markers (the README's, or a
    docs page's): the plain arm by CoV, then the peak and scaling arms."""
    out, _ = small
    page = tmp_path / "page.md"
    page.write_text("# t\n\n<!-- power:begin -->\nold\n<!-- power:end -->\n")
    script = str(ROOT / "scripts" / "power-table.py")
    subprocess.run([sys.executable, script, "--csv", str(out), "--readme", str(page)], check=True)
    text = page.read_text()
    assert "\nold\n" not in text
    assert "| paper profile (6–24 blocks, 2 looks, blocks of " in text
    assert "| peak, A flat over 3 loads, B one sharp peak | " in text and "| scaling (ratio of gains" in text
    assert "| paper | blocks on 1 lane | 0.05 | 0.05 |" in text and "| paper | duet on " in text   # lanes, duet
    assert subprocess.run([sys.executable, script, "--csv", str(out), "--readme", str(page), "--check"]).returncode == 0


def _draw_before_lanes(rng, n, size, truths, cov, drift):
    """bench/verdict_power.py's draw as it was before lanes (one lane, no offset), kept as
    the reference the lane model must reduce to."""
    import math
    sig = math.sqrt(math.log1p(cov * cov))
    size = max(size, len(truths))
    x, t, out = (rng.gauss(0.0, drift) if drift else 0.0), 0, []
    for blk in range(n):
        pos = rng.sample(range(size), len(truths))
        row = [0.0] * len(truths)
        for k in sorted(range(len(truths)), key=pos.__getitem__):
            p = blk * size + pos[k]
            if drift:
                r = VP.PHI ** (p - t)
                x, t = r * x + drift * math.sqrt(1 - r * r) * rng.gauss(0.0, 1.0), p
            row[k] = 1000.0 * truths[k] * math.exp(x + sig * rng.gauss(0.0, 1.0))
        out.append(tuple(row))
    return out


@pytest.mark.parametrize("drift", [0.0, 0.05])
def test_one_lane_without_an_offset_is_the_draw_before_lanes(drift):
    import random
    for truths in ((1.1, 1.0), (1.0, 0.9, 0.8, 1.0, 1.0, 0.85)):
        old = _draw_before_lanes(random.Random(7), 9, 40, truths, 0.05, drift)
        new = VP.draw(random.Random(7), 9, 40, truths, 0.05, drift, VP.Design(1, "block", 0.0))
        assert new == old


def _log_ratios(design, n=400, size=240, drift=0.05):
    import math
    import random
    rows = VP.draw(random.Random(3), n, size, (1.0, 1.0), 1e-9, drift, design)
    return [math.log(a / b) for a, b in rows]


def test_duet_cancels_what_the_twins_share_and_swaps_their_offsets():
    """All drift common to the lanes (rho 1) and no lane offset: a duet pair's two sides
    see the same drift, their ratio is exact; blocks on lanes see the drift between the
    compared cells' positions. With offsets, a duet block's ratio carries the twins'
    offset difference, its sign swapped every other block, so consecutive blocks on one
    twin pair cancel it; a block design's lane offset cancels in every block."""
    import statistics
    duet = _log_ratios(VP.Design(2, "duet", 0.0, rho=1.0))
    block = _log_ratios(VP.Design(2, "block", 0.0, rho=1.0))
    assert max(map(abs, duet)) < 1e-6 and statistics.pstdev(block) > 0.03
    off = _log_ratios(VP.Design(2, "duet", 0.05, rho=1.0), drift=0.0)
    assert statistics.pstdev(off) > 0.001 and all(abs(a + b) < 1e-6 for a, b in zip(off[::2], off[1::2]))
    assert max(map(abs, _log_ratios(VP.Design(4, "block", 0.05), drift=0.0))) < 1e-6


def test_lanes_own_drift_is_correlated_rho_between_lanes():
    """Two lanes' drifts at one moment: correlation LANE_RHO (block design, rounds of blocks
    side by side at the same positions)."""
    import math
    import random
    import statistics
    from harness.analysis import power   # the model bench/verdict_power.py runs
    st = power._State(random.Random(5), 0.05, VP.Design(2, "block", 0.0))
    xs = []
    for t in range(0, 200000, 50):
        xs.append((st.at(0, t), st.at(1, t)))
    assert statistics.correlation(*zip(*xs)) == pytest.approx(VP.LANE_RHO, abs=0.05)
    assert statistics.pstdev([x for x, _ in xs]) == pytest.approx(0.05, rel=0.1)
    assert not math.isnan(xs[-1][0])


def test_lanes_and_pairing_rows(small):
    """Every signed-rank setting has its one-lane, lanes-auto and duet rows; the rules replaced
    only on one lane; lanes auto is what the profile's plan cuts."""
    _, rows = small
    designs = {(r["method"].split(":")[1], r["lanes"], r["pairing"]) for r in rows
               if r["method"].startswith("signed-rank:") and r["arm"] == "plain"}
    auto = VP.auto_lanes("paper")
    assert auto > 1
    assert {("paper", "1", "block"), ("paper", str(auto), "block"), ("paper", str(auto), "duet")} <= designs
    assert {(r["lanes"], r["pairing"]) for r in rows if not r["method"].startswith("signed-rank:")} == {("1", "block")}


def test_a_design_is_lanes_pairing_and_duet_needs_two_lanes():
    s = ("paper", 6, 24, 2, 240)
    assert VP.parse_design("2:duet:0", s) == VP.Design(2, "duet", 0.0)
    assert VP.parse_design("1:block", s) == VP.Design(1, "block", VP.LANE_SD)
    for bad in ("1:duet", "0:block", "2:twin", "x:block", "2:duet:0:1"):
        with pytest.raises(SystemExit, match=r"^--designs"):
            VP.parse_design(bad, s)
