"""Each claim row's power in the paper (harness.report.claimpower, issue 51 item 3): on
recorded real cells (tests/fixtures/raw, one block each), every measurable ratio row's
verdict cell states its power on the host that measured it, from the plan's model (one
implementation: harness.plan.odds.claim_odds with the host's noise), an inconclusive row
says whether that was the likely outcome, and the caption states the method."""
from __future__ import annotations

import csv
import re

import pytest

from test_retidy_fixture import RAW, retidy

from harness import builds, paths, registry
from harness.analysis import claims as C
from harness.analysis import tidyread as T
from harness.plan import odds as O
from harness.report import claimpower as CP



@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return retidy(RAW, tmp_path_factory.mktemp("power"))


def _tidy(real):
    cfg = T.read_yaml(real["tidy"] / "config.resolved.yaml")
    return cfg, T.load(str(real["tidy"]), cfg)


def test_note_words():
    assert CP.note(0.96, C.REPRODUCED) == "power 0.96"
    assert CP.note(0.2, C.INCONCLUSIVE) == "expected: P(decided) 0.20"
    assert CP.note(0.95, C.INCONCLUSIVE) == "a surprise: P(decided) 0.95"
    assert CP.note(0.7, C.INCONCLUSIVE) == "possible: P(decided) 0.70"
    assert CP.note(None, C.INCONCLUSIVE) == "power unknown: no published figure"


def _verdict_cells(tex: str) -> dict:
    """{claim id: its verdict cells joined} of the claims table (a row per build)."""
    out: dict = {}
    for line in tex.replace(r"\allowbreak{}", "").splitlines():
        m = re.match(r"\{\\scriptsize \\texttt\{([^}]*)\}\}.* & ([^&]*)\\\\$", line)
        if m:
            cid = m.group(1).replace(r"\_", "_")
            out[cid] = out.get(cid, "") + " | " + m.group(2)
    return out


def test_every_measurable_ratio_row_states_its_power_on_this_host(real):
    tex = (real["generated"] / "claims.tex").read_text()
    with open(real["generated"] / "claims.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    cfg, tidy = _tidy(real)
    cov, source = O.noise_of(cfg, {e: x.summary for e, x in tidy.experiments.items()}, "x")
    assert "A/A" not in source and cov > 0   # the fixture's own cells, not the stated CoV
    by_id = {c.id: c for c in registry.claims()}
    lock = builds.load_lock(paths.LOCK)
    cells = _verdict_cells(tex)
    checked = {"power": 0, "inconclusive": 0, "unknown": 0, "none": 0}
    for r in rows:
        c = by_id[r["claim"]]
        cell = cells.get(r["claim"], "")
        if r["verdict"] == C.NOT_MEASURABLE or getattr(c, "rule", None) is None:
            assert "P(decided)" not in cell and "power" not in cell, (r["claim"], cell)
            checked["none"] += 1
            continue
        p = O.claim_odds(c, cfg, lock, cov)["power"]
        if p is None:
            assert "power unknown: no published figure" in cell, (r["claim"], cell)
            checked["unknown"] += 1
        elif r["verdict"] == C.INCONCLUSIVE:
            assert f"P(decided) {p:.2f}" in cell, (r["claim"], cell)
            assert ("expected" in cell) == (p < CP.LIKELY) and ("surprise" in cell) == (p >= CP.SURPRISE)
            checked["inconclusive"] += 1
        else:
            assert f"power {p:.2f}" in cell, (r["claim"], cell)
            checked["power"] += 1
    # one block each: every measurable ratio row is inconclusive, as its power (0) said
    assert checked["inconclusive"] >= 5 and checked["none"], checked
    caption = tex[tex.index(r"\caption{"):tex.index(r"\label{tab:claims}")]
    assert "Power: the row's chance to be decided by its last look" in caption
    assert f"CoV of {cov:.3g}" in caption and "standard error" in caption


def test_annotate_decided_unknown_and_not_modelled_rows(real):
    """A decided row says its power; a rule without a published figure says its power is
    unknown; a check, or a row not measurable here, says nothing."""
    cfg, tidy = _tidy(real)
    by_id = {c.id: c for c in registry.claims()}
    modelled, unknown = (next(c.id for c in registry.claims() if c.experiments
                              and c.experiments[0] in tidy.experiments and getattr(c, "rule", None)
                              and (getattr(c, "published_ratio", None) is None) == blind) for blind in (False, True))
    check = next(c.id for c in registry.claims() if getattr(c, "rule", None) is None
                 and c.experiments and c.experiments[0] in tidy.experiments)
    rows = [{"claim": modelled, "verdict": C.REPRODUCED}, {"claim": unknown, "verdict": C.INCONCLUSIVE},
            {"claim": check, "verdict": C.REPRODUCED}, {"claim": modelled, "verdict": C.NOT_MEASURABLE}]
    hp = CP.annotate(rows, tidy)
    p = O.claim_odds(by_id[modelled], cfg, builds.load_lock(paths.LOCK), hp["cov"])["power"]
    assert rows[0]["power_note"] == f"power {p:.2f}"
    assert rows[1]["power"] is None and rows[1]["power_note"].startswith("power unknown")
    assert "power_note" not in rows[2] and "power_note" not in rows[3]


def test_a_lower_noise_gives_more_power(real):
    """The power reads the host's noise: the same claim on a quieter host is likelier decided."""
    cfg, tidy = _tidy(real)
    cfg = {**cfg, "experiments": {e: {**s, "repetitions": {"min": 6, "max": 12, "looks": 2}}
                                  for e, s in cfg["experiments"].items()}}
    c = next(c for c in registry.claims() if c.experiments and c.experiments[0] in tidy.experiments
             and getattr(c, "published_ratio", None) and getattr(c, "rule", None)
             and c.rule.side == "above" and 1.05 < c.published_ratio < 1.5)
    lock = builds.load_lock(paths.LOCK)
    loud, quiet = (O.claim_odds(c, cfg, lock, cov)["power"] for cov in (0.3, 0.02))
    assert quiet > loud, (c.id, quiet, loud)
