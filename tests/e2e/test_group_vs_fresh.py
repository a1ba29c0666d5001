"""bench/group_vs_fresh.py: its analysis on recorded real output (the fixture is the
TSV of a real run on the 2-CPU development VM), and its measuring path end to end on
the real MySQL 5.6.24 (one block, long suite)."""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys

import pytest
from conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "group_vs_fresh" / "smoke_blocks.tsv"


def _bench():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("group_vs_fresh", ROOT / "bench" / "group_vs_fresh.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ratio_of_ratios_per_block_is_recomputed_from_the_recorded_qps():
    b = _bench()
    rows = b.read_tsv(FIXTURE)
    res = {r["label"]: r for r in b.analyse(rows)}
    assert set(res) == {"InnoDB/MyISAM u1", "InnoDB/MyISAM u4", "MEMORY/InnoDB u4 (B2)", "InnoDB u4/u1 (scaling)"}
    q = {(r["block"], r["mode"], r["engine"], r["users"]): float(r["qps"]) for r in rows}
    blocks = sorted({r["block"] for r in rows}, key=int)
    want = [(q[(k, "group", "InnoDB", "1")] / q[(k, "group", "MyISAM", "1")])
            / (q[(k, "fresh", "InnoDB", "1")] / q[(k, "fresh", "MyISAM", "1")]) for k in blocks]
    assert res["InnoDB/MyISAM u1"]["per_block"] == pytest.approx(want)
    for r in res.values():  # the interval holds the blocks' median-ish centre (Hodges-Lehmann)
        ci = r["ci"]
        assert ci.lo <= ci.point <= ci.hi
        assert min(r["per_block"]) <= ci.point <= max(r["per_block"])
        assert r["inside"] == (0.97 <= ci.lo and ci.hi <= 1.03)


def test_the_rule_needs_three_comparisons_inside_the_band():
    b = _bench()
    rows = b.read_tsv(FIXTURE)
    res = b.analyse(rows)
    inside = sum(r["inside"] for r in res)
    assert b.decision(res).startswith("groups may" if inside >= 3 else "keep fresh cells")
    # a synthetic design where group and fresh agree exactly but for tiny noise: groups pass
    same = [dict(r, qps=str(float(r["qps"]) * (1 + 0.001 * math.sin(i)))) for i, r in enumerate(rows)
            if r["mode"] == "fresh"]
    same += [dict(r, mode="group") for r in rows if r["mode"] == "fresh"]
    assert b.decision(b.analyse(same)).startswith("groups may")


def test_bad_blocks_is_refused_in_one_line():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "group_vs_fresh.py"), "--blocks", "0"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "--blocks" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.e2e
@pytest.mark.slow
def test_one_block_on_the_real_server(tmp_path):
    out = tmp_path / "one.tsv"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "group_vs_fresh.py"), "--blocks", "1",
                        "--tsv", str(out)], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    b = _bench()
    rows = b.read_tsv(out)
    assert {(x["mode"], x["engine"]) for x in rows} == {(m, e) for m in ("group", "fresh") for e in b.ENGINES}
    assert all(float(x["qps"]) > 0 for x in rows)
    assert "decision:" in r.stdout
