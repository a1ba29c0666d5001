"""Group runs measure what fresh servers measure (the long suite: ~25 min on 2 CPUs).

bench/cell_overhead.py --pairs: rounds of the same Point-Selects setting at users 1, 2,
4, 8 on the real MySQL 5.6.24 in containers, each cell once on a fresh server and once in
a group on one server start, arms and users in a seeded random order, each 8 s window
after a 10 s warm-up (with 2 s, a fresh server's cells measured ~6 % low); the interval
of group / fresh server-side QPS over the 10 rounds (the unit: a round's group cells share
one server start, so its four pairs are not independent) must lie inside
[0.97, 1.03] (a group's later cells may not gain or lose more than 3 % from the server
having run before them). On the 2-CPU development VM it has not passed: docs/benchmarks-record.md
gives the intervals measured there."""
from __future__ import annotations

import importlib.util
import tempfile

import pytest
from conftest import ROOT
from test_docker_backend import docker_engine, runtime_image  # noqa: F401  (the engine and image fixtures)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _bench():
    spec = importlib.util.spec_from_file_location("cell_overhead", ROOT / "bench" / "cell_overhead.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_group_cells_agree_with_fresh_cells_within_3_percent(runtime_image):  # noqa: F811  (the fixture)
    bench = _bench()
    with tempfile.TemporaryDirectory(prefix="groups-validity-", dir=ROOT) as work:
        from pathlib import Path
        raws = bench.measure_pairs(10, "docker", Path(work), duration=8, warmup=10)
        ci = bench.agreement(raws)
        overhead = {arm: bench.rows(raw, str(Path(work) / "none")) for arm, raw in raws.items()}
    assert ci is not None and ci.n == 10
    assert 0.97 <= ci.lo and ci.hi <= 1.03, ci
    # and the group's reason: less time per cell beyond its windows
    med = {arm: sorted(r["frame_over"] for r in rs)[len(rs) // 2] for arm, rs in overhead.items()}
    assert med["group"] < med["fresh"], med
