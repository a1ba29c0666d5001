"""What the plan says a claim reads is all it reads.

The plan measures only the cells some claim or figure reads (harness.plan.reads: each
claim's selectors, from its own attributes: engines, tables, cores, the factor levels it
holds, a Check's `reads`), and after the first look only the cells claims read. If a
selector missed a cell the claim's evaluation uses, the plan would leave that cell
unmeasured and the claim would be judged on less than it needs. Two checks:

- on recorded real cells (tests/fixtures/raw, tidied as the pipeline does), every claim's
  row is the same when the cells of its experiments that its selectors do not match are
  removed. The fixture's cells are all on 1 core, so this checks engines, tables, factor
  levels and `reads`, not core counts;
- on the paper plan of each recorded topology, every claim the plan calls measurable gets
  the same row from the cells the plan measures (every block up to `repetitions.figures`,
  then only the claims' cells) as from every cell in every block. The rows are synthetic
  (seeded random QPS, waits, counters and EXPLAIN rows for every planned combination):
  they stand for no measurement, they only exercise which cells the plan keeps, core
  counts and later blocks included.
"""
from __future__ import annotations

import dataclasses
import math
import random
import zlib
from pathlib import Path

import pytest
import yaml

from test_lanes import paper
from test_retidy_fixture import retidy

from harness import registry
from harness.analysis import claims as C
from harness.analysis import tidyread as T
from harness.measure import factors
from harness.plan import cells as P, config, reads
from harness.plan.combos import combos

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "fixtures" / "raw"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = retidy(RAW, tmp_path_factory.mktemp("claim_reads"))
    cfg = yaml.safe_load((RAW / "config.resolved.yaml").read_text())
    tidy = T.load(out["tidy"], cfg, tables=registry.tidy_tables())
    return cfg, tidy


def _as_combo(row: dict) -> dict | None:
    """A tidy row as the plan's cell dict (None: a row without a cell's key columns)."""
    if not all(row.get(k) for k in ("build", "engine", "variant", "tables", "cores")):
        return None
    return {"build": row["build"], "engine": row["engine"], "variant": row["variant"],
            "tables": int(row["tables"]), "cores": int(row["cores"])}


def _kept(sels, row) -> bool:
    d = _as_combo(row)
    return d is None or reads.kept(sels, d)


def narrowed(tidy: T.Tidy, selectors: list) -> T.Tidy:
    """The tidy data without the cells (runs, summary and extra rows) of the selectors'
    experiments that no selector matches."""
    by_exp: dict = {}
    for s in selectors:
        by_exp.setdefault(s.experiment, []).append(s)
    exps = dict(tidy.experiments)
    for name, sels in by_exp.items():
        e = exps.get(name)
        if e is None:
            continue
        exps[name] = dataclasses.replace(
            e, cells=[c for c in e.cells if _kept(sels, c.key)],
            summary=[r for r in e.summary if _kept(sels, r)],
            extras={k: [r for r in rows if _kept(sels, r)] for k, rows in e.extras.items()})
    return dataclasses.replace(tidy, experiments=exps)


def _rows(tidy: T.Tidy, claim) -> list[dict]:
    return C.evaluate(tidy, [claim])


def _on_fixture(sel, tidy):
    """The selector as the fixture can check it: without min_cores (the gate itself), and
    without a core narrowing that matches none of the experiment's recorded core counts
    (a claim about 8 or 16 cores: its other narrowings are still checked)."""
    e = tidy.experiments.get(sel.experiment)
    recorded = {c.int("cores") for c in e.cells} if e else set()
    cores = sel.cores if sel.cores is None or sel.cores & recorded else None
    return dataclasses.replace(sel, min_cores=0, cores=cores)


def _checked(cfg, tidy):
    """(claim, its selectors, full rows, narrowed rows) for every claim whose selectors
    remove some recorded cell. Selectors without their `min_cores`: the fixture's cells
    are on 1 core, and min_cores is the gate itself (a claim whose cells are all below it
    is not measurable, and the plan measures nothing for it)."""
    out = []
    for claim in registry.claims():
        sels = [_on_fixture(s, tidy) for s in reads.claim_selectors(claim, cfg)]
        small = narrowed(tidy, sels)
        removed = sum(len(tidy.experiments[s.experiment].cells) - len(small.experiments[s.experiment].cells)
                      for s in {s.experiment: s for s in sels}.values() if s.experiment in tidy.experiments)
        if removed:
            out.append((claim, sels, _rows(tidy, claim), _rows(small, claim)))
    return out


def test_no_claim_reads_a_cell_its_selectors_leave_out(recorded):
    cfg, tidy = recorded
    checked = _checked(cfg, tidy)
    changed = [f"{claim.id}: {a['verdict']} / {a['measured']}  ->  {b['verdict']} / {b['measured']}"
               for claim, _, full, small in checked for a, b in zip(full, small) if a != b]
    assert changed == []
    # not vacuous: many claims are narrowed, and most of them still measure something
    # on the fixture's cells (a row not measurable only for its gate still reports them)
    measured = [claim.id for claim, _, full, _ in checked if any(r["measured"] not in ("", "—") for r in full)]
    assert len(checked) >= 30 and len(measured) >= 20, (len(checked), measured)


def test_a_selector_that_leaves_out_a_read_level_is_caught(recorded):
    """The check can fail: A3's transactions-vs-autocommit claim reads both trx levels;
    a selector holding only one of them changes its row."""
    cfg, tidy = recorded
    claim = next(c for c in registry.claims() if c.id == "A3-TRX-beats-autocommit-InnoDB")
    (sel,) = [_on_fixture(s, tidy) for s in reads.claim_selectors(claim, cfg)]
    assert sel.settings is not None and len(sel.settings) == 2
    wrong = dataclasses.replace(sel, settings=sel.settings[:1])
    assert _rows(tidy, claim) == _rows(narrowed(tidy, [sel]), claim)
    assert _rows(tidy, claim) != _rows(narrowed(tidy, [wrong]), claim)


def test_a_check_reads_what_it_declares(recorded):
    """B2's readers claim (a Check) declares MEMORY-BTREE on one table at the baselines:
    the plan reads those cells only, and a declaration without its engine is caught."""
    cfg, tidy = recorded
    claim = next(c for c in registry.claims() if c.id == "B2-MEMORY-readers-do-not-contend")
    (sel,) = [_on_fixture(s, tidy) for s in reads.claim_selectors(claim, cfg)]
    assert sel.engines == {"MEMORY-BTREE"} and sel.tables == {1} and sel.settings is not None
    wrong = dataclasses.replace(sel, engines=frozenset({"InnoDB"}))
    assert _rows(tidy, claim) != _rows(narrowed(tidy, [wrong]), claim)


def test_paper_plan_reads_fewer_cells_by_levels():
    """On the paper profile a claim holding one level of a varied factor reads only it:
    A3's autocommit peak reads the oltp_ro cells with trx off, none with trx on."""
    _, resolved, lock = paper("192em64t-12gr2n8c2t")
    claim = next(c for c in registry.claims() if c.id == "A3-OLTP-RO-innodb-peak-autocommit")
    (sel,) = reads.claim_selectors(claim, resolved)
    read = {d["variant"] for d, why in combos(resolved, lock, "oltp_ro") if why is None and sel.matches(d)}
    assert read == {"trx-off"}


# ---------------------------------------------------------------- the paper plan, every block

TOPOLOGIES = ["32em64t-2n8c2t-pci-noio", "96em64t-4n4d3ca2co-pci", "192em64t-12gr2n8c2t"]
EVENTS = ["wait/synch/mutex/sql/MDL_map::mutex", "wait/synch/rwlock/myisam/MYISAM_SHARE::key_root_lock",
          "wait/synch/mutex/innodb/trx_sys_mutex", "wait/synch/mutex/mysys/KEY_CACHE::cache_lock",
          "wait/synch/mutex/sql/LOCK_status", "wait/synch/mutex/innodb/dict_sys_mutex"]


def _rows_of(key: dict, rep: int, rnd: random.Random) -> tuple[dict, dict]:
    """One repetition's run row and its extra rows (seeded, not measured)."""
    q = math.exp(rnd.gauss(10, 0.3))
    run = {**key, "rep": str(rep), "qps": f"{q:.3f}", "qps_server": f"{q * 1.01:.3f}"}
    memory = key["engine"] == "MEMORY"
    extra = {"waits": [{**key, "rep": str(rep), "event_name": e, "count_star": "1",
                        "sum_timer_wait_ps": str(int(rnd.uniform(1, 100) * 1e9))} for e in EVENTS],
             "intervals": [{**key, "rep": str(rep), "time": str(t), "qps": f"{q * rnd.uniform(0.9, 1.1):.2f}"}
                           for t in range(1, 6)],
             "status": [{**key, "rep": str(rep), "name": n, "delta": str(rnd.randint(0, 1000))}
                        for n in ("Table_locks_waited", "Table_locks_immediate")],
             "explain": [{**key, "rep": str(rep), "statement": "simple_range", "key": "k",
                          "type": "ALL" if memory else "range",
                          "rows": str(1000 * int(key["tables"] or 1) if memory else 10)}]}
    return run, extra


def synthetic(r: dict, lock: dict, planned: bool) -> T.Tidy:
    """Tidy data of every throughput experiment: every running combination in every block
    up to max (planned=False), or only the cells the plan measures (planned=True)."""
    exps = {}
    for exp, spec in r["experiments"].items():
        if not spec["enabled"] or spec["kind"] != "throughput":
            continue
        _, hi, _ = P.repetition_bounds(spec)
        fig = P.figure_blocks(spec)
        early, late = P.read_combos(r, lock, exp, 1), P.read_combos(r, lock, exp, fig + 1)
        cols = ["study", "experiment", "workload", "build", "engine", "variant", *factors.ORDER,
                "tables", "cores", "users"]
        cells, extras = [], {"waits": [], "intervals": [], "status": [], "explain": []}
        for d, why in combos(r, lock, exp):
            if why is not None:
                continue
            st = factors.settings(factors.parse(d["variant"]), d["engine"], spec.get("workload"))
            key = {"study": spec["study"], "experiment": exp, "workload": spec.get("workload", ""),
                   "build": d["build"], "engine": d["engine"], "variant": d["variant"],
                   **{n: str(st[n]) if n in st else "" for n in factors.ORDER},
                   "tables": str(d.get("tables", "")), "cores": str(d["cores"]), "users": str(d.get("users", ""))}
            cell = T.Cell(key)
            for rep in range(1, hi + 1):
                if planned and d not in (early if rep <= fig else late):
                    continue
                rnd = random.Random(zlib.crc32(repr((exp, sorted(d.items()), rep)).encode()))
                run, extra = _rows_of(key, rep, rnd)
                cell.runs.append(run)
                for kind, rows in extra.items():
                    extras[kind] += rows
            if cell.runs:
                cells.append(cell)
        exps[exp] = T.Experiment(exp, cols + ["rep", "qps", "qps_server"], cells, [], extras)
    return T.Tidy(r, exps)


@pytest.mark.parametrize("name", TOPOLOGIES)
def test_the_planned_cells_give_every_measurable_claim_the_row_all_cells_give(name):
    topo, r, lock = paper(name)
    full, planned = synthetic(r, lock, False), synthetic(r, lock, True)
    changed, compared = [], 0
    for claim in registry.claims():
        if not reads.judge(claim, r, lock, topo).measurable:
            continue
        for a, b in zip(C.evaluate(full, [claim]), C.evaluate(planned, [claim])):
            compared += a["verdict"] != C.NOT_MEASURABLE
            if a != b:
                changed.append(f"{claim.id}: {a['measured']} (look {a['look']})  ->  {b['measured']} "
                               f"(look {b['look']})")
    assert changed == []
    assert compared >= 20   # not vacuous: the synthetic rows let the throughput claims be judged


def test_the_synthetic_check_sees_a_scaling_claim_that_loses_its_fewest_cores():
    """The check can fail: B3's scaling claim scales from the fewest cores planned at or above
    its gate (4); when every claim's read_write selector starts one count higher, those cells
    are gone after the first look and the claim's row changes. (Cells below the gate:
    tests/unit/test_claims.py, test_scaling_starts_at_the_claims_own_cores. Issue 52 made A3's
    8-table OLTP_RO row, used here before, an 8-over-1-table ratio, not a scaling claim.)"""
    topo, r, lock = paper("192em64t-12gr2n8c2t")
    claim = next(c for c in registry.claims() if c.id == "B3-MEMORY-writes-limited")
    assert reads.judge(claim, r, lock, topo).measurable
    planned = sorted(r["experiments"]["read_write"]["cores"])
    above = [n for n in planned if n > claim.min_cores]
    assert min(planned) == claim.min_cores < above[0]   # the gate's count and one above it
    full = synthetic(r, lock, False)
    row = C.evaluate(full, [claim])
    assert row == C.evaluate(synthetic(r, lock, True), [claim])
    assert row[0]["verdict"] != C.NOT_MEASURABLE and f"{claim.min_cores}→" in row[0]["measured"]
    real = reads.claim_selectors

    def held(c, cfg):
        sels = real(c, cfg)
        return [dataclasses.replace(s, min_cores=max(s.min_cores, above[0])) if s.experiment == "read_write"
                else s for s in sels]
    try:
        reads.claim_selectors = held
        reads._CACHE.clear()
        P._READ.clear()
        narrow = synthetic(r, lock, True)
    finally:
        reads.claim_selectors = real
        reads._CACHE.clear()
        P._READ.clear()
    assert row != C.evaluate(narrow, [claim])


def test_every_check_declares_only_keys_and_engines_it_can_read():
    """A Check's `reads` names known keys, and engines its experiments run (a typo would
    quietly plan no cell for it)."""
    cfg = config.resolve(config.defaults())
    for claim in registry.claims():
        decl = getattr(claim, "reads", None)
        if not decl:
            continue
        assert set(decl) <= {"engine", "build", "tables", "cores", "levels"}, claim.id
        engines = {e for x in claim.experiments for e in cfg["experiments"][x]["engines"]}
        assert set(decl.get("engine") or ()) <= engines, claim.id
