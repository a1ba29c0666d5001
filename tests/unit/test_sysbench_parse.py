"""harness.measure.sysbench parsers on recorded real sysbench 1.0.20 output
(tests/fixtures/sysbench, see its README), and the command lines it builds."""
import json
import shutil
from pathlib import Path

import pytest

from harness.measure import sysbench

from harness.analysis import tidywrite

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench"
U1 = FIX / "point_select_u1.out"
U4 = FIX / "point_select_u4.out"
PARTIAL = FIX / "point_select_partial.out"
MANIFEST = FIX / "manifest_point_select.json"   # recorded before the effective block existed
# a recorded cell with its effective block (tests/fixtures/raw, see its README)
RAW_MANIFEST = (Path(__file__).resolve().parents[1] / "fixtures" / "raw" / "A3" / "point_select"
                / "mysql-5.6.24_InnoDB_base_t1_c1_u4_r1" / "manifest.json")


def line_value(text: str, label: str) -> str:
    """The first value after `label` on the line that starts with it (no regex)."""
    for line in text.splitlines():
        if line.strip().startswith(label):
            return line.strip()[len(label):].split()[0]
    raise AssertionError(f"no line starting {label!r}")


def per_sec(text: str, label: str) -> float:
    """'queries:   103975 (34633.95 per sec.)' -> 34633.95"""
    for line in text.splitlines():
        if line.strip().startswith(label):
            return float(line.split("(")[1].split()[0])
    raise AssertionError(f"no line starting {label!r}")


def csv_lines(text: str) -> list[list[str]]:
    """Interval rows that stand on their own line: 10 comma-separated fields."""
    return [l.split(",") for l in text.splitlines() if l.count(",") == 9 and l[:1].isdigit()]


@pytest.mark.parametrize("path", [U1, U4, PARTIAL], ids=lambda p: p.stem)
def test_parse_report_matches_the_numbers_in_the_file(path):
    text = path.read_text()
    r = sysbench.parse_report(text)
    assert r["qps"] == per_sec(text, "queries:")
    assert r["tps"] == per_sec(text, "transactions:")
    assert r["errors"] == int(line_value(text, "ignored errors:"))
    assert r["reconnects"] == int(line_value(text, "reconnects:"))
    assert r["total_time_s"] == float(line_value(text, "total time:").rstrip("s"))
    assert r["events"] == int(line_value(text, "total number of events:"))
    assert r["lat_avg_ms"] == float(line_value(text, "avg:"))
    assert r["lat_max_ms"] == float(line_value(text, "max:"))
    assert r["lat_p95_ms"] == float(line_value(text, "95th percentile:"))
    assert r["reads"] == int(line_value(text, "read:"))
    assert r["writes"] == int(line_value(text, "write:"))
    assert r["other"] == int(line_value(text, "other:"))


def test_parse_report_u4_values():
    r = sysbench.parse_report(U4.read_text())
    assert (r["qps"], r["events"], r["reads"], r["lat_p95_ms"]) == (34633.95, 103975, 103975, 0.17)


def test_parse_report_agrees_with_the_recorded_manifest():
    # the manifest was written by the harness for the run that printed point_select_u4.out
    m = json.loads(MANIFEST.read_text())
    r = sysbench.parse_report(U4.read_text())
    assert {k: r[k] for k in m["result"]} == m["result"]
    assert m["intervals"] == len(sysbench.parse_intervals(U4.read_text(), threads=m["factors"]["users"]))


def test_manifest_fixture_gives_a_tidy_run_row():
    m = json.loads(RAW_MANIFEST.read_text())
    row = tidywrite.run_row(m)
    assert set(row) == set(tidywrite.RUN_FIELDS)
    assert (row["engine"], row["users"], row["rep"], row["qps"]) == ("InnoDB", 4, 1, 17353.97)


def test_a_manifest_without_effective_settings_is_refused_with_the_fix():
    from harness.measure.effective import EffectiveError
    with pytest.raises(EffectiveError, match="re-measure it"):
        tidywrite.run_row(json.loads(MANIFEST.read_text()))


@pytest.mark.parametrize("cut_at,missing", [
    ("SQL statistics:", "tps"),
    ("General statistics:", "total_time_s"),
    ("Latency (ms):", "lat_avg_ms"),
    ("         95th percentile:", "lat_p95_ms"),
])
def test_parse_report_on_truncated_output_names_the_missing_key(cut_at, missing):
    text = U1.read_text()
    truncated = text[:text.index(cut_at)]
    with pytest.raises(sysbench.SysbenchError, match=f"no '{missing}' line"):
        sysbench.parse_report(truncated)


def test_parse_intervals_u1_rows_and_fields():
    text = U1.read_text()
    rows = sysbench.parse_intervals(text, threads=1)
    raw = csv_lines(text)
    assert len(raw) == 2
    assert len(rows) == 2
    assert all(list(r) == sysbench.INTERVAL_FIELDS for r in rows)
    for row, fields in zip(rows, raw):
        assert row["time"] == int(fields[0]) and row["threads"] == int(fields[1]) == 1
        assert row["qps"] == float(fields[3])
        assert row["lat_pct_ms"] == float(fields[7])
    assert [r["time"] for r in rows] == [1, 2]


def test_parse_intervals_u4_keeps_the_full_intervals():
    rows = sysbench.parse_intervals(U4.read_text(), threads=4)
    assert [(r["time"], r["threads"]) for r in rows] == [(1, 4), (2, 4)]
    assert rows[1]["tps"] == 37128.07


def test_parse_intervals_drops_trailing_partial_interval_when_threads_given():
    rows = sysbench.parse_intervals(PARTIAL.read_text(), threads=4)
    assert [(r["time"], r["threads"]) for r in rows] == [(1, 4), (2, 4)]


def test_parse_intervals_keeps_trailing_partial_interval_without_threads():
    rows = sysbench.parse_intervals(PARTIAL.read_text())
    assert [(r["time"], r["threads"]) for r in rows] == [(1, 4), (2, 4), (3, 3)]
    assert rows[-1]["qps"] == 37194.37


def test_parse_intervals_of_text_without_rows_is_empty():
    assert sysbench.parse_intervals("Threads started!\nSQL statistics:\n", threads=4) == []


# -- command lines -----------------------------------------------------------------
def _argv(socket="/tmp/x/mysqld.sock", seed=43):
    common = sysbench.common_args(socket=Path(socket), tables=8, table_size=1000, engine="MyISAM")
    extra = sysbench.run_args(threads=4, duration=3, seed=seed, rand_type="uniform", interval=1)
    return sysbench.command("point_select", common, extra, "run")


def test_command_has_the_reproducibility_flags():
    argv = _argv()
    assert "--rand-type=uniform" in argv
    assert "--rand-seed=43" in argv
    assert "--mysql-socket=/tmp/x/mysqld.sock" in argv
    assert "--threads=4" in argv and "--time=3" in argv
    assert "--mysql-storage-engine=myisam" in argv
    assert argv[0] == "sysbench" and argv[-1] == "run"


def test_run_args_carry_seed_and_rand_type():
    args = sysbench.run_args(threads=1, duration=10, seed=7, rand_type="uniform", interval=1)
    assert "--rand-seed=7" in args and "--rand-type=uniform" in args


def test_command_names_the_wrapper_script_which_exists():
    script = Path(_argv()[1])
    assert script == sysbench.script_path("point_select")
    assert script.is_file()
    assert script.parent == sysbench.LUA_DIR


@pytest.fixture
def lua_copy(tmp_path, monkeypatch):
    """A copy of workflow/lua that harness.measure.sysbench reads instead; yields
    (copy dir, the hash of the real scripts taken before the switch)."""
    real = sysbench.script_sha256("point_select")
    d = tmp_path / "lua"
    shutil.copytree(sysbench.LUA_DIR, d)
    monkeypatch.setattr(sysbench, "LUA_DIR", d)
    return d, real


def test_script_sha256_of_an_identical_copy_is_unchanged(lua_copy):
    d, real = lua_copy
    assert sysbench.script_path("point_select").parent == d
    assert sysbench.script_sha256("point_select") == real
    assert len(real) == 64


def test_script_sha256_changes_with_the_wrapper(lua_copy):
    d, real = lua_copy
    with open(d / "point_select.lua", "a") as f:
        f.write("-- edited\n")
    assert sysbench.script_sha256("point_select") != real


def test_script_sha256_changes_with_a_module_the_wrapper_loads(lua_copy):
    d, real = lua_copy
    with open(d / "csv_intervals.lua", "a") as f:
        f.write("-- edited\n")
    assert sysbench.script_sha256("point_select") != real


def test_glued_partial_interval_is_read_then_dropped():
    """Real output: the last partial row is printed without a newline, glued to 'SQL statistics:'."""
    text = U4.read_text()
    glued = [l for l in text.splitlines() if l.endswith("SQL statistics:") and l[0].isdigit()]
    assert glued, "fixture no longer has the glued row"
    rows = sysbench.parse_intervals(text)
    assert rows[-1]["threads"] < 4
    assert all(r["threads"] == 4 for r in sysbench.parse_intervals(text, threads=4))
    assert len(sysbench.parse_intervals(text, threads=4)) == len(rows) - 1
