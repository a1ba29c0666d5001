"""harness.measure.counters on SHOW GLOBAL STATUS counters recorded from real runs
(MySQL 5.6.24 + sysbench 1.0.20 oltp_read_only; tests/fixtures/counters).
tests/e2e/test_counters_e2e.py checks the same rule live."""
import json
from pathlib import Path

import pytest

from harness.measure import counters
from harness.measure.counters import SNAPSHOT_STATEMENTS, CounterError, server_qps, server_statements

RUNS = json.loads((Path(__file__).parents[1] / "fixtures" / "counters" / "mysql-5.6.24_oltp_ro.json")
                  .read_text())["runs"]
IDS = [f"t{r['threads']}-ps_{r['ps']}-trx_{r['trx']}" for r in RUNS]


def delta(run, name):
    return run["after"][name] - run["before"][name]


def test_the_recording_covers_ps_and_trx_on_and_off():
    assert {(r["ps"], r["trx"]) for r in RUNS} == {(True, "on"), (True, "off"), (False, "on"), (False, "off")}


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_server_count_is_sysbench_queries_without_begin_commit(run):
    sb = run["sysbench"]
    expected = sb["queries"] - sb["other"]
    assert expected == sb["reads"] + sb["writes"]
    assert server_statements(run["before"], run["after"], SNAPSHOT_STATEMENTS) == expected
    qps = server_qps(run["before"], run["after"], sb["total_time_s"], SNAPSHOT_STATEMENTS)
    assert qps * sb["total_time_s"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("run", [r for r in RUNS if r["trx"] == "on"], ids=lambda r: f"ps_{r['ps']}")
def test_with_transactions_the_client_count_has_a_begin_commit_bonus(run):
    sb = run["sysbench"]
    assert sb["other"] == 2 * sb["events"] == delta(run, "Com_begin") + delta(run, "Com_commit")
    qps = server_qps(run["before"], run["after"], sb["total_time_s"], SNAPSHOT_STATEMENTS)
    # OLTP_RO: 14 statements of work per event, 16 as sysbench counts them
    assert sb["queries"] / (qps * sb["total_time_s"]) == pytest.approx(16 / 14, rel=1e-12)


@pytest.mark.parametrize("run", [r for r in RUNS if r["trx"] == "off"], ids=lambda r: f"ps_{r['ps']}")
def test_without_transactions_server_and_client_agree(run):
    sb = run["sysbench"]
    assert sb["other"] == 0
    assert server_statements(run["before"], run["after"], SNAPSHOT_STATEMENTS) == sb["queries"]


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_why_not_questions_nor_com_stmt_execute(run):
    """The observations the rule rests on (module doc of harness.measure.counters)."""
    sb = run["sysbench"]
    # Questions also counts COM_QUIT: one per sysbench thread, plus the harness's 3
    assert delta(run, "Questions") == sb["queries"] + 3 + run["threads"]
    # Com_select counts prepared SELECTs too; Com_stmt_execute counts them again
    assert delta(run, "Com_select") == sb["reads"]
    if run["ps"]:
        assert delta(run, "Com_stmt_execute") == delta(run, "Com_select") + delta(run, "Com_commit")
    else:
        assert delta(run, "Com_stmt_execute") == 0


def test_counts_statements():
    assert counters.counts_statements("Com_select") and counters.counts_statements("Com_begin")
    for name in ("Com_stmt_execute", "Com_stmt_prepare", "Com_execute_sql", "Com_admin_commands",
                 "Com_show_processlist",
                 "Questions", "Queries", "Connections"):
        assert not counters.counts_statements(name), name


def test_accepts_the_strings_show_global_status_returns():
    run = RUNS[0]
    as_str = {k: str(v) for k, v in run["before"].items()}, {k: str(v) for k, v in run["after"].items()}
    assert server_statements(*as_str, 2) == server_statements(run["before"], run["after"], 2)


BEFORE = {"Com_select": 10, "Com_begin": 1, "Com_commit": 1, "Com_show_status": 1}
AFTER = {"Com_select": 30, "Com_begin": 3, "Com_commit": 3, "Com_show_status": 2}


def test_a_small_window_by_hand():
    assert server_statements(BEFORE, AFTER) == 21                        # 20 selects + the SHOW
    assert server_statements(BEFORE, AFTER, exclude_harness=1) == 20
    assert server_qps(BEFORE, AFTER, 4.0, exclude_harness=1) == 5.0


@pytest.mark.parametrize("before,after,seconds,exclude,match", [
    (BEFORE, {**AFTER, "Com_select": 5}, 1.0, 0, "Com_select went back from 10 to 5"),
    (BEFORE, {k: v for k, v in AFTER.items() if k != "Com_begin"}, 1.0, 0, "Com_begin is in one snapshot"),
    (BEFORE, {**AFTER, "Com_select": "x"}, 1.0, 0, "Com_select in the after snapshot is 'x'"),
    ({"Questions": 1}, {"Questions": 5}, 1.0, 0, "no Com_ counters"),
    (BEFORE, AFTER, 0.0, 0, "seconds 0.0 must be a positive number"),
    (BEFORE, AFTER, float("nan"), 0, "seconds nan"),
    (BEFORE, AFTER, 1.0, -1, "exclude_harness -1"),
    (BEFORE, AFTER, 1.0, 22, "more than the 21 statements"),
])
def test_bad_input_is_refused_with_the_reason(before, after, seconds, exclude, match):
    with pytest.raises(CounterError, match=match):
        server_qps(before, after, seconds, exclude)
