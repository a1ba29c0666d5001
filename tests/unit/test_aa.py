"""Study AA, the A/A controls (harness.studies.aa): the registry finds it, every
profile measures its two experiments, its replica factor keeps two cells of
one setting apart without changing anything else, and its claims, resolution
and quiet-host flag on constructed tidy data written with the pipeline's own
columns (identical distributions: no flag; a shifted replica: flagged).
Measurement on a real server: tests/e2e/test_aa_e2e.py."""
from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest
import yaml

from harness import builds, paths, studies
from harness.analysis import claims as C
from harness.analysis import tidywrite
from harness.analysis import tidyread as T
from harness.measure import steps as steps_kind
from harness.plan import cells, config
from harness.measure import factors
from harness.report import latex
from harness.studies import aa
from test_claims import runs, write_csv, write_tidy

PROFILES = ("default", "smoke", "midsize", "paper")


# --- registry, factor, config ------------------------------------------------------------

def test_the_registry_finds_aa():
    assert studies.all_studies()["aa"] is aa
    assert "AA" in studies.codes()
    assert {c.id for c in aa.CLAIMS} <= {c.id for c in studies.claims()}


def test_replica_sets_nothing_and_its_code_keeps_the_cells_apart():
    f = factors.FACTORS["replica"]
    assert f.server is None and f.driver is None and f.engines is None and f.workloads is None
    assert f.baseline == "a" and f.values == ("a", "b")
    labels = [factors.label(v) for v in factors.expand({"replica": ["a", "b"]})]
    assert labels == ["replica-a", "replica-b"]
    assert [factors.parse(x) for x in labels] == [{"replica": "a"}, {"replica": "b"}]
    for engine in ("InnoDB", "MyISAM", "MEMORY-BTREE"):
        a = factors.settings({"replica": "a"}, engine, "point_select")
        b = factors.settings({"replica": "b"}, engine, "point_select")
        assert {k: v for k, v in a.items() if k != "replica"} == {k: v for k, v in b.items() if k != "replica"}
        assert factors.server_options(a, "mysql-5.6") == factors.server_options(b, "mysql-5.6")
        assert factors.driver_args(a) == factors.driver_args(b)


def resolved(profile: str) -> dict:
    cfg = yaml.safe_load((paths.ROOT / "config" / "default.yaml").read_text())
    if profile != "default":
        over = yaml.safe_load((paths.ROOT / "config" / f"{profile}.yaml").read_text())
        cfg = config.deep_merge(cfg, over)
    return config.resolve(cfg)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_validates_with_both_aa_experiments(profile):
    cfg = resolved(profile)
    lock = builds.load_lock(paths.LOCK)
    for exp in (aa.THROUGHPUT, aa.STEPS):
        spec = cfg["experiments"][exp]
        assert spec["enabled"] and spec["study"] == "AA" and spec["variants"] == {"replica": ["a", "b"]}
        names = cells.cell_names(cfg, lock, exp, rep=1)
        # two cells per block, differing only in the replica's code
        assert len(names) == 2, names
        assert names[0].replace("replica-a", "replica-b") == names[1]
    assert cfg["experiments"][aa.THROUGHPUT]["engines"] == ["InnoDB"]
    assert cfg["experiments"][aa.THROUGHPUT]["tables"] == [1]
    assert cfg["experiments"][aa.STEPS]["script"] == "c_test_drive"
    assert cfg["experiments"][aa.STEPS]["engines"] == ["InnoDB"]


def test_the_aa_cell_name_parses_back_to_the_replica():
    d = steps_kind.parse("mysql-5.6.24_replica-b_c1_r3")
    assert factors.parse(d["variant"]) == {"replica": "b"} and d["rep"] == 3


# --- claims on constructed tidy data -----------------------------------------------------

def cfg_of(reps: int, level=0.9) -> dict:
    return {"profile": "t", "builds": ["b1"], "claims": {"level": level},
            "experiments": {aa.THROUGHPUT: {"study": "AA", "workload": "point_select", "engines": ["InnoDB"],
                                            "tables": [1], "variants": {"replica": ["a", "b"]},
                                            "repetitions": reps},
                            aa.STEPS: {"study": "AA", "kind": "steps", "script": "c_test_drive",
                                       "engines": ["InnoDB"], "rows": 5000,
                                       "variants": {"replica": ["a", "b"]}, "repetitions": reps}}}


def step_runs(values, replica: str) -> list[dict]:
    """test_drive rows of one steps cell of aa_steps: C1 insert time per repetition (and a
    scan row, which the claim must ignore)."""
    out = []
    for rep, v in enumerate(values, 1):
        key = {k: "" for k in tidywrite.FACTOR_FIELDS}
        key.update(study="AA", experiment=aa.STEPS, script="c_test_drive", build="b1",
                   variant=f"replica-{replica}", replica=replica, cores=1, rep=rep)
        out.append({**key, "step": "C1", "engine": "InnoDB", "metric": "insert_s", "unit": "s",
                    "value": f"{v:.6g}", "ok": "True", "detail": ""})
        out.append({**key, "step": "C2", "engine": "InnoDB", "metric": "scan_s", "unit": "s",
                    "value": "9.0", "ok": "True", "detail": ""})
    return out


def write_aa(tmp_path, n: int, shift: float = 1.0, seed: int = 1, cv: float = 0.03):
    """A tidy dir of both A/A experiments: n repetitions per replica, log-normal noise of
    CoV `cv`, replica a's values times `shift`."""
    rng = random.Random(seed)
    draw = lambda m: [m * math.exp(rng.gauss(0, cv)) for _ in range(n)]  # noqa: E731
    thr = (runs("InnoDB", [x * shift for x in draw(20000)], experiment=aa.THROUGHPUT, tables=1, replica="a")
           + runs("InnoDB", draw(20000), experiment=aa.THROUGHPUT, tables=1, replica="b"))
    for r in thr:
        r["study"] = "AA"
    d = write_tidy(tmp_path / "tidy", {aa.THROUGHPUT: thr})
    keys = [*steps_kind.KEY_HEAD, *tidywrite.FACTOR_FIELDS, *steps_kind.KEY_TAIL]
    srows = step_runs([x * shift for x in draw(2.0)], "a") + step_runs(draw(2.0), "b")
    write_csv(d / f"{aa.STEPS}.csv", [*keys, "rep", *steps_kind.ROW_KEYS, "value", "ok", "detail"], srows)
    write_csv(d / f"{aa.STEPS}_summary.csv", tidywrite.summary_fields(steps_kind),
              tidywrite.summarize(srows, 0.05, steps_kind))
    return d


def test_identical_replicas_are_no_difference_and_not_flagged(tmp_path):
    cfg = cfg_of(10)
    tidy = T.load(write_aa(tmp_path, 10, cv=0.005), cfg)
    rows = {r["claim"]: r for r in C.evaluate(tidy, aa.CLAIMS)}
    assert C.invariant_violations(list(rows.values()), 0.9) == []
    for r in rows.values():
        assert r["verdict"] == C.REPRODUCED, r
        assert r["side"] == "within" and math.isclose(float(r["threshold_hi"]), aa.BAND)
        assert r["n"] == "10/10"
    assert rows["AA-steps-no-difference"]["metric"] == "time_s"
    res = aa.resolution(tidy)
    assert res is not None and 0 < res < 0.05
    row = aa.resolution_row(tidy)
    assert math.isclose(res, math.sqrt(float(row["ratio_hi"]) / float(row["ratio_lo"])) - 1)
    flags, unchecked = aa.quiet_check(tidy)
    assert flags == [] and unchecked == []
    assert aa.warnings(tidy) == []


def test_a_shifted_replica_is_flagged_at_099(tmp_path):
    tidy = T.load(write_aa(tmp_path, 10, shift=1.15, cv=0.01), cfg_of(10))
    rows = {r["claim"]: r for r in C.evaluate(tidy, aa.CLAIMS)}
    for r in rows.values():
        assert r["verdict"] == C.NOT_REPRODUCED, r
    flags, _ = aa.quiet_check(tidy)
    assert len(flags) == 2 and all("excludes 1" in f for f in flags)
    lines = aa.warnings(tidy)
    assert len(lines) == 2 and all(l.startswith("WARNING: the host was not quiet") and "\n" not in l
                                   for l in lines)
    text = dict(aa.macros(C.Context.of(tidy), [], latex))
    assert "not quiet" in text["AAQuietSentence"]


def test_too_few_repetitions_cannot_check_099_nor_flag(tmp_path):
    """Six repetitions give at most ~94% coverage: the check says it could not be made,
    never a flag (however far apart the replicas are)."""
    tidy = T.load(write_aa(tmp_path, 6, shift=1.3, cv=0.01), cfg_of(6))
    flags, unchecked = aa.quiet_check(tidy)
    assert flags == [] and len(unchecked) == 2
    assert aa.resolution(tidy) is not None   # at claims.level (0.9) six repetitions suffice
    text = dict(aa.macros(C.Context.of(tidy), [], latex))
    assert "could not be checked" in text["AAQuietSentence"]


def test_one_repetition_states_no_resolution(tmp_path):
    tidy = T.load(write_aa(tmp_path, 1), cfg_of(1))
    assert aa.resolution(tidy) is None
    text = dict(aa.macros(C.Context.of(tidy), [], latex))
    assert text["AAResolution"] == latex.NA and "states no resolution" in text["AAResolutionSentence"]


def test_a_profile_without_aa_experiments_says_so(tmp_path):
    d = write_tidy(tmp_path / "tidy", {"x": runs("InnoDB", [1000, 1010], experiment="x")})
    tidy = T.load(d, {"profile": "t", "builds": ["b1"], "claims": {},
                      "experiments": {"x": {"study": "A3", "workload": "point_select", "variants": {}}}})
    rows = C.evaluate(tidy, aa.CLAIMS)
    assert {r["verdict"] for r in rows} == {C.NOT_MEASURABLE}
    assert aa.resolution(tidy) is None and aa.warnings(tidy) == []
    text = dict(aa.macros(C.Context.of(tidy), rows, latex))
    assert "No A/A control was measured" in text["AAQuietSentence"]


def test_a_claim_inside_the_resolution_says_so_in_its_reason(tmp_path):
    tidy = T.load(write_aa(tmp_path, 10, cv=0.03, seed=3), cfg_of(10))
    res = aa.resolution(tidy)
    assert res is not None and res > 0.01
    small, large = 1 + res / 2, 1 + 3 * res
    rows = [{"claim": f"X-{p}", "study": "A3", "side": "above", "published_ratio": f"{p:.4g}",
             "reason": "r"} for p in (small, 1 / small, large)]
    rows.append({"claim": "AA-x", "study": "AA", "side": "within", "published_ratio": "1", "reason": "r"})
    rows.append({"claim": "Q", "study": "B1", "side": "", "published_ratio": "", "reason": "r"})
    out = aa.annotate(C.Context.of(tidy), rows)
    said = [r["claim"] for r in out if "inside this run's A/A resolution" in r["reason"]]
    assert said == [f"X-{small}", f"X-{1 / small}"]
    # and through the registry, as the report calls it
    again = studies.annotate(C.Context.of(tidy), [dict(rows[2], reason="r")])
    assert "inside" not in again[0]["reason"]


def test_the_report_prints_the_flag_on_stderr_and_the_paper_sentences(tmp_path):
    d = write_aa(tmp_path, 10, shift=1.2, cv=0.01)
    (d / "config.resolved.yaml").write_text(yaml.safe_dump(cfg_of(10)))
    out = tmp_path / "gen"
    env_py = str(paths.ROOT / "workflow")
    p = subprocess.run([sys.executable, "-m", "harness", "report", "--tidy-dir", str(d), "--config",
                        str(d / "config.resolved.yaml"), "--out", str(out)],
                       capture_output=True, text=True, env={"PYTHONPATH": env_py, "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stderr.splitlines() if "not quiet" in l]
    assert len(lines) == 2
    macros = (out / "macros.tex").read_text()
    assert "AAResolutionSentence" in macros and "resolved ratios beyond" in macros
    assert "The host was not quiet" in macros
    claims = (out / "claims.csv").read_text()
    assert "AA-throughput-no-difference" in claims and "AA-steps-no-difference" in claims
