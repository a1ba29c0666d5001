"""One number per fact, from one source (issue 55):

- the smoke run's time in `./artifact help` and in the README's quick-start line is the
  estimate a first smoke sweep prints on a 2-CPU host from the stated defaults (the README
  time table's figure), in whole minutes;
- the claim rows `./artifact plan` counts are the rows the report writes to claims.csv
  (and the paper's abstract counts) for the same resolved profile: one per claim and build,
  one for a claim whose experiments the host does not plan; the plan says so.
"""
from __future__ import annotations

import collections
import csv
import re
import subprocess
import tempfile
from pathlib import Path

import yaml

from harness import builds, paths, studies
from harness.plan import plancmd, reads
from harness.plan import estimate as E

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "raw"


def smoke_minutes_on_two_cpus() -> int:
    cfg = E.load_profile([str(ROOT / "config" / "smoke.yaml")], ROOT, cpus=[0, 1])
    with tempfile.TemporaryDirectory() as nothing:   # no benchmark files: the stated defaults
        est = E.estimate(cfg, builds.load_lock(paths.LOCK), bench_dir=f"{nothing}/b", raw=f"{nothing}/r",
                         root=str(ROOT))
    return round(est["total_s"] / 60)


def test_smoke_time_is_the_estimate_in_help_and_readme():
    said = f"about {smoke_minutes_on_two_cpus()} min on 2 CPUs"
    help_text = subprocess.run(["bash", str(ROOT / "artifact"), "help"], capture_output=True, text=True,
                               check=True).stdout
    (smoke,) = [line for line in help_text.splitlines() if "./artifact smoke" in line]
    assert said in smoke, (said, smoke)
    readme = (ROOT / "README.md").read_text()
    (quick,) = [line for line in readme.splitlines() if line.startswith("./artifact smoke")]
    assert said in quick, (said, quick)
    # no other figure for the same fact
    for text in (help_text, readme):
        assert "a few minutes" not in text


def test_plan_counts_the_claim_rows_the_report_writes():
    """The recorded smoke run's resolved config: the plan's rows per claim are claims.csv's."""
    cfg = yaml.safe_load((FIXTURE / "config.resolved.yaml").read_text())
    lock = builds.load_lock(paths.LOCK)
    planned = {c.id: reads.judge(c, cfg, lock).rows for c in studies.claims()}
    with open(ROOT / "tests" / "fixtures" / "retidy" / "expected" / "claims.csv", newline="") as f:
        written = collections.Counter(r["claim"] for r in csv.DictReader(f))
    assert planned == dict(written)


def test_a_claim_whose_experiment_the_host_does_not_plan_is_one_row():
    cfg = yaml.safe_load((FIXTURE / "config.resolved.yaml").read_text())
    lock = builds.load_lock(paths.LOCK)
    (claim,) = [c for c in studies.claims() if c.id == "A1-FTS-builds-innodb-wins"]
    assert reads.judge(claim, cfg, lock).rows == len(cfg["experiments"]["fts_builds"]["builds"]) > 1
    cfg["experiments"]["fts_builds"].update(enabled=False, not_planned="cores: too few here")
    assert reads.judge(claim, cfg, lock).rows == 1


def test_plan_says_what_its_claim_rows_count():
    lines = plancmd.claim_lines([{"claim": "X", "measurable": True, "why": "", "rows": 2, "measurable_rows": 1}])
    assert re.match(r"measurable: 1 of 1 claims, 1 of 2 claim rows \(50%\)$", lines[-2]), lines
    assert lines[-1] == f"  (claim rows: {plancmd.ROWS_MEANING}; the paper counts them so)"
    readme = (ROOT / "README.md").read_text()
    assert f"claim rows it can decide ({plancmd.ROWS_MEANING})" in readme   # the host table's header
