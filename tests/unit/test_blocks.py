"""Blocks (harness.plan.blocks) and looks: the seeded order of each block, the block's
state on disk (untouched / complete / interrupted / reopened), and the DAG a Snakemake
dry run plans from that state and from the looks' answers (workflow/rules/measure.smk).

The dry runs plan over placeholder directories standing in for fetched builds,
datasets and measured cells: they test what the DAG plans, not a measurement (the
real one: tests/e2e/test_blocks_e2e.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, copy_checkout
from harness import builds
from harness.plan import blocks as B
from harness.plan import cells as plan
from harness.plan import config
from harness import paths

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
# a profile's own experiment (no claim or figure names it): every block holds all its cells, the
# block machinery alone (blocks after the first look holding fewer: tests/unit/test_lookcells.py)
EXP = "ps_blocks"


def profile(reps) -> dict:
    """A small profile on top of config/default.yaml: point_select's workload only, 2 engines x 2 table counts."""
    d = yaml.safe_load((ROOT / "config/default.yaml").read_text())
    exps = {k: {"enabled": False} for k in d["experiments"]}
    exps[EXP] = {"study": "A3", "workload": "point_select", "engines": ["InnoDB", "MyISAM"], "tables": [1, 8],
                 "cores": "max", "users": [4]}
    # the block machinery, not the verdicts: a few blocks need not reach claims.level here
    return {"profile": "blocks", "experiment_defaults": {"table_size": 1000, "repetitions": reps},
            "claims": {"decide": False}, "experiments": exps}


def resolved(reps, seed=42) -> dict:
    cfg: dict = {}
    for part in (yaml.safe_load((ROOT / "config/default.yaml").read_text()), profile(reps),
                 {"sysbench": {"seed": seed}}):
        config.deep_merge(cfg, part)
    return config.resolve(cfg)


@pytest.fixture(scope="module")
def lock():
    return builds.load_lock(paths.LOCK)


def test_repetition_bounds_accept_an_int_and_the_mapping():
    assert plan.repetition_bounds({"repetitions": 6}) == (6, 6, 1)
    assert plan.repetition_bounds({"repetitions": {"min": 6, "max": 24, "looks": 4}}) == (6, 24, 4)


def test_looks_that_do_not_fit_are_refused_in_one_line():
    # the key the bounds came from (here the profile's experiment_defaults), the one bounds check
    # of harness.analysis.intervals.schedule_problem, and the fix
    with pytest.raises(config.ConfigError, match=r"^experiment_defaults\.repetitions: min 4 and max 2 .*set max to at least min$"):
        resolved({"min": 4, "max": 2, "looks": 2})
    with pytest.raises(config.ConfigError, match=r"^experiment_defaults\.repetitions: 3 looks do not fit .*a larger max$"):
        resolved({"min": 2, "max": 3, "looks": 3})


def test_every_block_runs_every_cell_once_in_a_seeded_order(lock):
    cfg = resolved({"min": 2, "max": 6, "looks": 3})
    orders = [B.order(cfg, lock, EXP, r) for r in range(1, 7)]
    for r, names in enumerate(orders, 1):
        assert sorted(names) == sorted(plan.cell_names(cfg, lock, EXP, rep=r))  # each cell once
        assert len(names) == 4 and all(n.endswith(f"_r{r}") for n in names)
        assert names == B.order(cfg, lock, EXP, r)  # the same on every call (and host)
        for pos, n in enumerate(names, 1):
            info = B.info(names, n, r, B.block_seed(cfg, EXP, r))
            assert info == {"id": r, "position": pos, "seed": B.block_seed(cfg, EXP, r), "size": 4}
    # the orders are shuffled, not one order repeated: 6 blocks of 4 cells, at least two orders
    # (the chance that 6 seeded shuffles agree is 24^-5)
    assert len({tuple(n.rsplit("_r", 1)[0] for n in names) for names in orders}) > 1
    seeds = {B.block_seed(cfg, EXP, r) for r in range(1, 7)}
    assert len(seeds) == 6
    # the seed comes from sysbench.seed: another seed, other blocks' seeds
    other = resolved({"min": 2, "max": 6, "looks": 3}, seed=7)
    assert B.block_seed(other, EXP, 1) != B.block_seed(cfg, EXP, 1)


def _cells(tmp: Path, n: int) -> list[str]:
    return [str(tmp / "raw" / "A3" / EXP / f"c{i}_r1") for i in range(n)]


def test_block_state_and_attempt(tmp_path):
    order = tmp_path / "order"
    order.mkdir()
    cells = _cells(tmp_path, 3)
    assert B.state(cells, EXP, 1, str(order)) == B.UNTOUCHED
    assert B.attempt(B.UNTOUCHED, EXP, 1, str(order)) == 1
    Path(B.open_path(EXP, 1, 1, str(order))).write_text("{}")
    os.makedirs(cells[0])
    # cut after its first cell: interrupted, the next attempt re-runs it whole
    assert B.state(cells, EXP, 1, str(order)) == B.INTERRUPTED
    assert B.attempt(B.INTERRUPTED, EXP, 1, str(order)) == 2
    for c in cells[1:]:
        os.makedirs(c)
    assert B.state(cells, EXP, 1, str(order)) == B.COMPLETE
    assert B.attempt(B.COMPLETE, EXP, 1, str(order)) == 1
    done = Path(B.done_path(EXP, 1, str(order)))
    done.write_text("")
    os.utime(done, (time.time() + 5, time.time() + 5))
    os.rmdir(cells[1])  # one cell removed from a completed block, to measure it again
    assert B.state(cells, EXP, 1, str(order)) == B.REOPENED
    assert B.attempt(B.REOPENED, EXP, 1, str(order)) == 1


def test_an_interrupted_attempt_is_set_aside_not_deleted(tmp_path):
    raw, partial = tmp_path / "raw", tmp_path / "partial"
    cells = _cells(tmp_path, 2)
    os.makedirs(cells[0])
    Path(cells[0], "manifest.json").write_text("{}")
    moved = B.set_aside(cells, 1, str(raw), str(partial))
    assert moved == [str(partial / "A3" / EXP / "c0_r1.attempt1")]
    assert Path(moved[0], "manifest.json").exists() and not os.path.exists(cells[0])


def test_run_cell_refuses_a_block_that_is_not_the_cells_repetition():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    res = subprocess.run([sys.executable, "-m", "harness", "run-cell", "--cell",
                          "mysql-5.6.24_InnoDB_base_t1_c1_u4_r2", "--cell-spec", "{}", "--build-dir", "x",
                          "--source", "x", "--out", "x",
                          "--block", '{"id": 1, "position": 1, "seed": 5, "size": 2}'],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr


# --- the DAG: looks and interrupted blocks (dry runs) --------------------------------------

@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return copy_checkout(tmp_path_factory.mktemp("blocks"))


def _touch_dir(p: Path, t: float) -> None:
    p.mkdir(parents=True, exist_ok=True)
    os.utime(p, (t, t))


def _touch(p: Path, t: float, text: str = "") -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    os.utime(p, (t, t))


def _state(work: Path, cfg: dict, lock: dict, blocks: int, look1: bool | None) -> None:
    """Builds, datasets and blocks 1..blocks as if measured, in time order; look 1's answer."""
    for d in ("data", "resources", ".snakemake"):
        subprocess.run(["rm", "-rf", str(work / d)], check=True)
    t = time.time() - 1000
    for name in plan.builds_of(cfg, EXP):
        _touch_dir(work / "resources/builds" / name, t)
        _touch_dir(work / "resources/templates" / name, t + 1)
    for d in plan.datasets_needed(cfg, lock):
        _touch_dir(work / d, t + 2)
    t += 10
    for r in range(1, blocks + 1):
        _touch(work / B.open_path(EXP, r, 1), t, "{}")
        for n in B.order(cfg, lock, EXP, r):
            t += 1
            _touch_dir(work / plan.cell_dir(cfg, EXP, n), t)
            _touch(work / "data/order" / EXP / f"{n}.measured", t + 0.5)
        t += 1
        _touch(work / B.done_path(EXP, r), t)
    if look1 is not None:
        _touch(work / B.look_path(EXP, 1), t + 1, json.dumps({"decided": look1}))


def _dry(work: Path) -> tuple[dict, set]:
    """Planned jobs of a dry run for the experiment's tidy data: rule -> count, and the outputs."""
    res = subprocess.run([SNAKEMAKE, f"data/tidy/{EXP}_summary.csv", "-n", "--cores", "1",
                          "--configfile", "blocks.yaml"], cwd=work, capture_output=True, text=True)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    jobs, inside = {}, False
    for line in out.splitlines():
        if line.startswith("Job stats:"):
            inside = True
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if inside and m:
            if m.group(1) == "total":
                break
            jobs[m.group(1)] = int(m.group(2))
    return jobs, set(re.findall(r"output: (\S+?),?$", out, re.M))


def test_looks_plan_the_next_blocks_only_when_undecided(work, lock):
    reps = {"min": 2, "max": 4, "looks": 2}
    (work / "blocks.yaml").write_text(yaml.safe_dump(profile(reps)))
    cfg = resolved(reps)
    # nothing measured: blocks 1..min, then look 1 (a checkpoint: the rest waits for its answer)
    _state(work, cfg, lock, 0, None)
    jobs, _ = _dry(work)
    assert jobs["run_cell"] == 8 and jobs["look"] == 1 and jobs["block_open"] == 2, jobs
    # look 1 answered "not decided": blocks 3 and 4 are planned, in order after block 2
    _state(work, cfg, lock, 2, False)
    jobs, outs = _dry(work)
    assert jobs.get("run_cell") == 8 and jobs.get("block_open") == 2 and "look" not in jobs, jobs
    assert {plan.cell_dir(cfg, EXP, n) for n in plan.cell_names(cfg, lock, EXP, blocks=4)[8:]} <= outs
    # look 1 answered "decided": no more blocks, only the tidy data
    _state(work, cfg, lock, 2, True)
    jobs, _ = _dry(work)
    assert "run_cell" not in jobs and "block_open" not in jobs and jobs.get("tidy_throughput") == 1, jobs
    # with min == max and one look the DAG is today's: every block planned, no look
    (work / "blocks.yaml").write_text(yaml.safe_dump(profile(3)))
    _state(work, resolved(3), lock, 0, None)
    jobs, _ = _dry(work)
    assert jobs["run_cell"] == 12 and "look" not in jobs and jobs["block_open"] == 3, jobs


def test_an_interrupted_block_is_planned_whole_a_removed_cell_alone(work, lock):
    (work / "blocks.yaml").write_text(yaml.safe_dump(profile(2)))
    cfg = resolved(2)
    _state(work, cfg, lock, 2, None)
    jobs, _ = _dry(work)
    assert set(jobs) == {"tidy_throughput"}, jobs  # a complete sweep measures nothing
    # block 2 cut after its second cell: its .done absent, two cells missing
    names = B.order(cfg, lock, EXP, 2)
    (work / B.done_path(EXP, 2)).unlink()
    for n in names[2:]:
        (work / plan.cell_dir(cfg, EXP, n)).rmdir()
    jobs, outs = _dry(work)
    assert jobs.get("run_cell") == 4 and jobs.get("block_open") == 1, jobs  # the whole block again
    assert B.open_path(EXP, 2, 2) in outs  # its second attempt
    assert plan.cell_dir(cfg, EXP, names[0]) in outs
    # a completed block with one cell removed (to measure it again): that cell alone
    _state(work, cfg, lock, 2, None)
    (work / plan.cell_dir(cfg, EXP, names[1])).rmdir()
    jobs, outs = _dry(work)
    assert jobs.get("run_cell") == 1 and "block_open" not in jobs, jobs
    assert plan.cell_dir(cfg, EXP, names[1]) in outs


def test_duet_plans_a_pair_as_one_job_an_interrupted_block_whole_a_removed_cell_with_its_partner(work, lock):
    """pairing: duet (harness.plan.duet): each pair of a block (InnoDB and MyISAM of one
    setting) is one run_duet job whose cells duet_cell links; an interrupted block is
    measured whole again; a cell removed from a completed block is measured again with its
    partner, which is replaced (one job measures both, as a group does)."""
    prof = {**profile(2), "pairing": "duet"}
    (work / "blocks.yaml").write_text(yaml.safe_dump(prof))
    cfg: dict = {}
    for part in (yaml.safe_load((ROOT / "config/default.yaml").read_text()), prof):
        config.deep_merge(cfg, part)
    cfg = config.resolve(cfg)
    _state(work, cfg, lock, 0, None)
    jobs, _ = _dry(work)
    assert jobs.get("run_duet") == 4 and jobs.get("duet_cell") == 8 and "run_cell" not in jobs, jobs
    _state(work, cfg, lock, 2, None)
    assert set(_dry(work)[0]) == {"tidy_throughput"}
    names = B.order(cfg, lock, EXP, 2)   # pairs together: [a1, b1, a2, b2]
    (work / B.done_path(EXP, 2)).unlink()
    for n in names[2:]:
        (work / plan.cell_dir(cfg, EXP, n)).rmdir()
    jobs, outs = _dry(work)
    assert jobs.get("run_duet") == 2 and jobs.get("duet_cell") == 4 and jobs.get("block_open") == 1, jobs
    _state(work, cfg, lock, 2, None)
    (work / plan.cell_dir(cfg, EXP, names[1])).rmdir()
    jobs, outs = _dry(work)
    assert jobs.get("run_duet") == 1 and jobs.get("duet_cell") == 2 and "block_open" not in jobs, jobs
    assert {plan.cell_dir(cfg, EXP, n) for n in names[:2]} <= outs


# --- groups: a setting's users on one server start ------------------------------------------

def grouped_profile(reps, one_server=True) -> dict:
    p = profile(reps)
    p["experiments"][EXP]["users"] = [1, 4]
    p["sysbench"] = {"users_on_one_server": one_server}
    return p


def resolved_grouped(reps, one_server=True, seed=42) -> dict:
    cfg: dict = {}
    for part in (yaml.safe_load((ROOT / "config/default.yaml").read_text()), grouped_profile(reps, one_server),
                 {"sysbench": {"seed": seed}}):
        config.deep_merge(cfg, part)
    return config.resolve(cfg)


def test_a_blocks_groups_are_contiguous_and_shuffled_inside(lock):
    import random
    cfg = resolved_grouped(2)
    assert plan.grouped(cfg, EXP)
    seen_first = set()
    for seed in range(1, 30):
        cfg = resolved_grouped(2, seed=seed)
        names = B.order(cfg, lock, EXP, 1)
        assert sorted(names) == sorted(plan.cell_names(cfg, lock, EXP, rep=1))
        groups = [plan.group_of(cfg, EXP, n) for n in names]
        # each group's cells back to back: as many runs of equal groups as groups
        runs = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
        assert len(runs) == len(set(groups)) == 4, names
        seen_first.add(names[0].split("_u")[1])
    assert seen_first == {"1_r1", "4_r1"}  # inside a group the users order is drawn too
    # not grouped (one server per cell, or one users value): the shuffle of the sorted names
    for cfg in (resolved_grouped(2, one_server=False), resolved(2)):
        assert not plan.grouped(cfg, EXP)
        names = sorted(plan.cell_names(cfg, lock, EXP, rep=1))
        random.Random(B.block_seed(cfg, EXP, 1)).shuffle(names)
        assert B.order(cfg, lock, EXP, 1) == names


def test_a_group_is_one_job_and_one_server_setting_changes_nothing_else(work, lock):
    (work / "blocks.yaml").write_text(yaml.safe_dump(grouped_profile(2)))
    cfg = resolved_grouped(2)
    _state(work, cfg, lock, 0, None)
    res = subprocess.run([SNAKEMAKE, f"data/tidy/{EXP}_summary.csv", "-n", "--cores", "1",
                          "--configfile", "blocks.yaml"], cwd=work, capture_output=True, text=True)
    lines = [m.split(", ") for m in re.findall(r"^\s*output: (.+)$", res.stdout + res.stderr, re.M)]
    groups = [ls for ls in lines if all(f"/{EXP}/" in x for x in ls) and len(ls) > 1]
    # 4 groups x 2 blocks, each one job whose outputs are its two cells (users 1 and 4)
    assert len(groups) == 8 and all(len(g) == 2 and g[0].replace("_u1_", "_u4_") == g[1] for g in groups)
    assert {x for g in groups for x in g} == {plan.cell_dir(cfg, EXP, n)
                                             for n in plan.cell_names(cfg, lock, EXP, blocks=2)}
    jobs, _ = _dry(work)
    assert jobs.get("run_group_u1_4") == 8 and "run_cell" not in jobs, jobs
    (work / "blocks.yaml").write_text(yaml.safe_dump(grouped_profile(2, one_server=False)))
    jobs, _ = _dry(work)
    assert jobs.get("run_cell") == 16 and not any(j.startswith("run_group") for j in jobs), jobs
    # an interrupted block of groups is measured whole again, a removed cell's group alone
    (work / "blocks.yaml").write_text(yaml.safe_dump(grouped_profile(2)))
    _state(work, cfg, lock, 2, None)
    names = B.order(cfg, lock, EXP, 2)
    (work / B.done_path(EXP, 2)).unlink()
    for n in names[4:]:
        (work / plan.cell_dir(cfg, EXP, n)).rmdir()
    jobs, _ = _dry(work)
    assert jobs.get("run_group_u1_4") == 4 and jobs.get("block_open") == 1, jobs
    _state(work, cfg, lock, 2, None)
    (work / plan.cell_dir(cfg, EXP, names[1])).rmdir()
    jobs, outs = _dry(work)
    assert jobs.get("run_group_u1_4") == 1 and "block_open" not in jobs, jobs


def test_the_group_setting_reaches_only_grouped_cells_params(lock):
    cfg, flat = resolved_grouped(2), resolved(2)
    assert json.loads(plan.cell_spec(cfg, EXP))["group_by"] == "users"
    assert "group_by" not in json.loads(plan.cell_spec(flat, EXP))
    assert "users_on_one_server" not in plan.run_settings(cfg)  # other experiments' params unchanged


def test_a_cell_sizes_its_server_from_the_experiments_users_not_its_group():
    """A group's server and a fresh cell's take the same max_connections (performance_schema
    sizes its tables from it): the experiment's most users, whatever cells share the start."""
    from harness.measure import cell
    spec = {"users": [1, 4, 16]}
    assert cell.max_users(spec, [{"users": 1}]) == cell.max_users(spec, [{"users": 1}, {"users": 4}]) == 16
    assert cell.max_users({}, [{}]) == 0  # a steps cell: no users


# -- the rule files' planning, in harness.plan (unit tests; the dry runs above run them in the DAG)
def test_a_block_opens_when_the_block_one_lane_count_earlier_is_done():
    assert [B.opened_by(r, 1) for r in (1, 2, 3)] == [None, 1, 2]
    assert [B.opened_by(r, 3) for r in (1, 2, 3, 4, 7)] == [None, None, None, 1, 4]
    assert B.opened_by(2, 0) == 1   # no lanes (a replot): one block at a time


def test_a_group_runs_in_its_block_order_and_every_users_value_must_be_planned():
    cfg = resolved(3)
    cfg["experiments"][EXP]["users"] = [4, 8]
    names = [f"h_u{u}_r2" for u in (8, 4)] + ["other_u4_r2"]
    assert B.group_run(cfg, EXP, "h", 2, names) == ["h_u8_r2", "h_u4_r2"]
    with pytest.raises(ValueError, match=r"^group h_r2 of ps_blocks: only 1 of its 2 users values are planned; "
                                         r"set sysbench.users_on_one_server: false$"):
        B.group_run(cfg, EXP, "h", 2, names[1:])


def test_a_cell_job_runs_on_its_block_lane_and_the_span_its_cores_take():
    from conftest import recorded_topology
    from harness.plan import lanes as L
    cfg = resolved(3)
    lanes = L.cut(recorded_topology("192em64t-12gr2n8c2t"), 1)
    exps = ["other", EXP]
    for cell in plan.cells(cfg, builds.load_lock(paths.LOCK), EXP, 2)[:3]:
        name = Path(cell).name
        d = plan.parse_cell(cfg, EXP, name)
        got = B.cell_lane(cfg, lanes, exps, EXP, name)
        assert got["id"] == (1 + 2 - 1) % lanes.count == L.block_lane(exps, EXP, 2, lanes.count)
        assert got == L.job_lane(lanes, got["id"], int(d.get("cores") or 1))


def test_a_replot_lacks_the_cells_of_the_first_blocks_and_of_started_later_ones():
    cfg = resolved({"min": 2, "max": 4, "looks": 2})
    lock = builds.load_lock(paths.LOCK)
    block = {r: plan.cells(cfg, lock, EXP, r) for r in (1, 2, 3, 4)}
    have = set(block[1]) | set(block[3][:1])   # block 1 whole, block 2 none, block 3 begun, block 4 never planned
    missing = plan.replot_missing(cfg, lock, EXP, exists=have.__contains__)
    assert missing == block[2] + block[3][1:]
