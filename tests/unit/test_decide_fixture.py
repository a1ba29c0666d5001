"""The new verdict rule against the old one, on recorded real cells with at least six repetitions per side.

tests/fixtures/raw6/ is to hold real cells of one run (the layout of tests/fixtures/raw/, with
its config.resolved.yaml, official_check.json and unsupported.csv beside them) whose
experiments measured >= 6 repetitions (blocks) per cell, e.g. the default profile's oltp_ro and
ps_pfs. Until it is recorded this test skips, saying so: no cells are made up for it.

Both rules read the same tidy data: the new one is this checkout's report; the old one
(per-group order-statistic median intervals multiplied, harness.analysis.verdict) is the
report of the harness at OLD_RULE_COMMIT, extracted with `git archive` into a temporary
directory. Checked: no claim flips between reproduced and not reproduced, on the same
cells every measured claim's interval is narrower under the new rule, and at least one claim
the old rule left inconclusive is decided by the new one. The recording of tests/fixtures/raw6
(README there: oltp_ro, ps_pfs and read_only, six blocks, an idle host) has four: both
A3-TRX-beats-autocommit rows (not reproduced), A3-PS-PFS-off-faster-MyISAM and
A3-RO-innodb-read-only-faster (reproduced).
"""
from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import tarfile
import io
from pathlib import Path

import pytest

from test_retidy_fixture import retidy

ROOT = Path(__file__).resolve().parents[2]
RAW6 = ROOT / "tests" / "fixtures" / "raw6"
OLD_RULE_COMMIT = "cd5639f69105f5f3de222e17064ffd61b52f5894"   # main before the DECIDE verdicts
MIN_REPS = 6


def _reps_per_cell(raw: Path) -> list[int]:
    """Repetitions of every cell (cell directories named ..._r<rep>)."""
    counts = {}
    for d in raw.glob("*/*/*"):
        if d.is_dir() and "_r" in d.name:
            key = (d.parent, d.name.rsplit("_r", 1)[0])
            counts[key] = counts.get(key, 0) + 1
    return list(counts.values())


def _without_effective(raw: Path) -> list[str]:
    """Cells whose manifest has no `effective` block (recorded before harness.measure.effective):
    tidy refuses them, so no rule can be compared on them."""
    return sorted(p.parent.name for p in raw.glob("*/*/*/manifest.json")
                  if "effective" not in json.loads(p.read_text()))


def _old_harness(dst: Path) -> Path | None:
    """The harness at OLD_RULE_COMMIT under dst/workflow, or None without that commit."""
    p = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_RULE_COMMIT, "workflow", "config"],
                       capture_output=True)
    if p.returncode != 0:
        return None
    with tarfile.open(fileobj=io.BytesIO(p.stdout)) as tar:
        tar.extractall(dst)
    return dst / "workflow"


def _claims(path: Path) -> dict:
    with open(path, newline="") as f:
        return {(r["claim"], r["build"]): r for r in csv.DictReader(f)}


def test_the_new_rule_decides_more_and_flips_nothing(tmp_path):
    if not (RAW6 / "config.resolved.yaml").exists():
        pytest.skip(f"{RAW6.relative_to(ROOT)} is not recorded yet: it needs real cells with >= {MIN_REPS} "
                    f"repetitions per side (a default-profile run of oltp_ro and ps_pfs)")
    stale = _without_effective(RAW6)
    if stale:
        pytest.skip(f"{RAW6.relative_to(ROOT)}: {len(stale)} cells were recorded before the manifest's effective "
                    f"settings and tidy refuses them; they must be measured again (README there)")
    reps = _reps_per_cell(RAW6)
    assert reps and min(reps) >= MIN_REPS, f"{RAW6}: cells with fewer than {MIN_REPS} repetitions"
    new = retidy(RAW6, tmp_path / "new")
    old_workflow = _old_harness(tmp_path / "old")
    if old_workflow is None:
        pytest.skip(f"commit {OLD_RULE_COMMIT[:7]} (the old rule) is not in this clone's history")
    out = tmp_path / "old_generated"
    tidy = new["tidy"]
    env = {**os.environ, "PYTHONPATH": str(old_workflow)}
    subprocess.run([sys.executable, "-m", "harness", "report", "--tidy-dir", str(tidy), "--config",
                    str(tidy / "config.resolved.yaml"), "--out", str(out)],
                   cwd=tmp_path, env=env, check=True, capture_output=True)
    before = _claims(out / "claims.csv")
    # the interval method is compared, not the cores gates: the recording host gave mysqld fewer
    # hardware threads than A3's 16, so the new rows are read with each gate at 1 core
    from harness import studies
    from harness.analysis import claims as C, tidyread as T
    from test_claims import ungated
    after = {(r["claim"], r["build"]): r for r in
             C.evaluate(T.load(tidy, T.read_yaml(tidy / "config.resolved.yaml")), ungated(studies.claims()))}
    # the same claim under the same rule on both sides: claims added, renamed or re-ruled since
    # (FIDELITY: the studies' own words) compare nothing about the interval method
    rule = ("side", "threshold", "threshold_hi")
    same = [k for k in before if k in after and all(before[k][c] == after[k][c] for c in rule)]
    assert same, "no claim has the same rule under both harnesses"
    decisive = {"reproduced", "not reproduced"}
    flips = [k for k in same if before[k]["verdict"] in decisive and after[k]["verdict"] in decisive
             and before[k]["verdict"] != after[k]["verdict"]]
    assert flips == [], f"verdicts flipped between reproduced and not reproduced: {flips}"
    # on the same cells the paired interval is the narrower one (log width) for every measured claim
    measured = [k for k in same if before[k]["ratio_lo"] and after[k]["ratio_lo"]]
    assert measured, "no claim was measured under both harnesses"
    width = {k: [math.log(float(r[k]["ratio_hi"]) / float(r[k]["ratio_lo"])) for r in (before, after)]
             for k in measured}
    wider = {k: w for k, w in width.items() if w[1] >= w[0]}
    assert wider == {}, f"the new interval is not narrower: {wider}"
    newly = [k for k in same if before[k]["verdict"] == "inconclusive" and after[k]["verdict"] in decisive]
    lost = [k for k in same if before[k]["verdict"] in decisive and after[k]["verdict"] not in decisive]
    for k in sorted(set(measured) | set(newly)):
        print(f"{k[0]} ({k[1]}): old {before[k]['verdict']} [{before[k]['ratio_lo']}, {before[k]['ratio_hi']}]"
              f" -> new {after[k]['verdict']} [{after[k]['ratio_lo']}, {after[k]['ratio_hi']}]")
    print(f"decided by the new rule only: {newly}; decided by the old rule only: {lost}")
    assert newly, "the new rule decides no claim the old one left inconclusive on these cells"
