"""What the plan says a claim reads is all it reads.

The plan measures only the cells some claim or figure reads (harness.plan.reads: each
claim's selectors, from its own attributes: engines, tables, cores, the factor levels it
holds, a Check's `reads`). If a selector missed a cell the claim's evaluation uses, the
plan would leave that cell unmeasured and the claim would be judged on less than it
needs. So: on recorded real cells (tests/fixtures/raw, tidied as the pipeline does), every
claim's row is the same when the cells of its experiments that its selectors do not match
are removed. A selector that is too narrow changes some row here.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from test_retidy_fixture import retidy

from harness import builds, registry
from harness.analysis import claims as C
from harness.analysis import tidydata as T
from harness.plan import config, reads

ROOT = Path(__file__).resolve().parents[1]
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
    from harness.measure import topology
    topo = topology.read(str(ROOT / "tests/fixtures/topology/hwloc/192em64t-12gr2n8c2t.xml"))
    cfg = config.defaults()
    config.deep_merge(cfg, yaml.safe_load((ROOT / "config/paper.yaml").read_text()))
    resolved = config.resolve(cfg, config.LOCK, topo=topo)
    lock = builds.load_lock(config.LOCK)
    claim = next(c for c in registry.claims() if c.id == "A3-OLTP-RO-innodb-peak-autocommit")
    (sel,) = reads.claim_selectors(claim, resolved)
    from harness.plan.combos import combos
    read = {d["variant"] for d, why in combos(resolved, lock, "oltp_ro") if why is None and sel.matches(d)}
    assert read == {"trx-off"}
