"""harness.measure.counters live on the real MySQL 5.6.24: the server-side statement
count equals sysbench's own query count minus its BEGIN/COMMITs, with
prepared statements on and off, transactions on and off."""
from __future__ import annotations

import os
import subprocess

import pytest
from conftest import BUILD

from harness.measure import counters

from harness.measure import factors

from harness.measure import placement

from harness.measure import sysbench
from harness.measure.server import Server

pytestmark = pytest.mark.e2e

THREADS, SECONDS = 2, 3


@pytest.fixture(scope="module")
def server(build_dir, lock_entry, dataset, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("counters")
    subprocess.run(["cp", "-a", str(dataset / "datadir"), str(tmp / "datadir")], check=True)
    server_cpus, client_cpus = placement.split(sorted(os.sched_getaffinity(0)), 1, 1)
    with Server(name=BUILD, entry=lock_entry, build_dir=build_dir, datadir=tmp / "datadir",
                rundir=tmp / "run", run_id=f"test-counters-{os.getpid()}", cpus=server_cpus,
                max_connections=THREADS + 16) as srv:
        yield srv, client_cpus


def test_an_empty_window_holds_only_the_snapshot_statements(server):
    srv, _ = server
    before = dict(srv.global_status())
    after = dict(srv.global_status())
    assert counters.server_statements(before, after) == counters.SNAPSHOT_STATEMENTS


def test_a_snapshot_waits_until_no_other_session_is_left(server):
    """A session closing as the status is read could count twice (Server.global_status):
    the snapshot waits while another session is connected, and the counters a closed
    session leaves are counted once, every time."""
    import contextlib
    import time
    srv, _ = server
    con = srv.connect()
    try:
        with con.cursor() as cur:
            cur.execute("DO 1")
        t0 = time.monotonic()
        srv.global_status(settle_s=0.5)
        assert time.monotonic() - t0 >= 0.5  # another session: waited it out (then read anyway)
    finally:
        con.close()
    t0 = time.monotonic()
    base = int(dict(srv.global_status())["Com_do"])
    assert time.monotonic() - t0 < 0.5
    for i in range(1, 31):  # a session closing just before each snapshot: one DO each, never two
        with contextlib.closing(srv.connect()) as c, c.cursor() as cur:
            cur.execute("DO 1")
        assert int(dict(srv.global_status())["Com_do"]) == base + i


@pytest.mark.parametrize("ps", [True, False], ids=["ps_on", "ps_off"])
@pytest.mark.parametrize("trx", ["on", "off"], ids=["trx_on", "trx_off"])
def test_server_count_matches_sysbench_without_begin_commit(server, ps, trx):
    srv, client_cpus = server
    common = sysbench.common_args(socket=srv.socket, tables=1, table_size=1000)
    extra = sysbench.run_args(threads=THREADS, duration=SECONDS, seed=7, rand_type="uniform",
                              interval=1) + factors.driver_args({"ps": "on" if ps else "off", "trx": trx})
    argv = sysbench.command("oltp_ro", common, extra, "run")
    before = dict(srv.global_status())
    text = sysbench.run(argv, cpus=client_cpus, run_id=srv.run_id, timeout=SECONDS + 120)
    after = dict(srv.global_status())
    sb = sysbench.parse_report(text)
    assert sb["errors"] == 0 and sb["reconnects"] == 0
    queries = sb["reads"] + sb["writes"] + sb["other"]
    assert sb["qps"] * sb["total_time_s"] == pytest.approx(queries, rel=0.01)   # sysbench's own count

    qps = counters.server_qps(before, after, sb["total_time_s"], counters.SNAPSHOT_STATEMENTS)
    assert qps * sb["total_time_s"] == pytest.approx(queries - sb["other"], abs=0.5)
    begin_commit = sum(int(after[c]) - int(before[c]) for c in ("Com_begin", "Com_commit"))
    if trx == "on":
        # sysbench's count includes a BEGIN and a COMMIT per event; the server's does not
        assert sb["other"] == 2 * sb["events"] == begin_commit > 0
        assert sb["qps"] > qps
        assert queries / (qps * sb["total_time_s"]) == pytest.approx(16 / 14, rel=1e-9)
    else:
        assert sb["other"] == 0 == begin_commit
        assert qps * sb["total_time_s"] == pytest.approx(queries, abs=0.5)
    stmt_execute = int(after["Com_stmt_execute"]) - int(before["Com_stmt_execute"])
    assert (stmt_execute > 0) is ps                     # the prepared-statement path really ran
