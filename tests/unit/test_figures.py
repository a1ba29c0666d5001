"""Tests of the figure scripts (workflow/R/fig_*.R and each study's R/fig_*.R) on real tidy data: the
recorded smoke cells of tests/fixtures/raw tidied by this checkout
(test_retidy_fixture.retidy), plus the factor table (harness.report's
factors.csv): each writes a PDF, copes with a single users or cores value,
absent engines or variants and several builds, reads factor columns from the
header (not from a list), and stops on bad input with one line on stderr and
exit status 1.
"""

import csv
import io
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import report
from harness.report import published
from test_retidy_fixture import RAW, retidy

ROOT = Path(__file__).resolve().parents[2]
R_DIR = ROOT / "workflow" / "R"
# every figure script: the shared ones and each study package's R/
SCRIPT_PATHS = {p.name: p for p in [*R_DIR.glob("fig_*.R"),
                                    *(ROOT / "workflow" / "harness" / "studies").glob("*/R/fig_*.R")]}

pytestmark = pytest.mark.skipif(not shutil.which("Rscript"), reason="Rscript not installed")

# the experiments of the recorded cells (<study>/<experiment>/<cell>)
ALL_EXPERIMENTS = {d.name for d in RAW.glob("*/*") if d.is_dir()}
# figures whose experiments have no recorded cell yet (tests/fixtures/raw/README.md): named here,
# so that a figure losing its data otherwise fails; fig_knobs.R itself is drawn as a3_knobs
NOT_RECORDED: dict[str, str] = {}   # empty since pfs_instruments was recorded (2026-11-26)
FIGURES_ON_DATA = sorted(set(report.FIGURES) - set(NOT_RECORDED))


def test_not_recorded_is_only_what_the_fixture_lacks():
    assert not set(NOT_RECORDED.values()) & ALL_EXPERIMENTS
    for name, experiment in NOT_RECORDED.items():
        assert not inputs(name, ".") and experiment in {e for e, _ in report.FIGURES[name]["inputs"]}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The tidy directory of the recorded cells, with the factor table and the
    published marks the pipeline writes."""
    tidy = retidy(RAW, tmp_path_factory.mktemp("figures"))["tidy"]
    (tidy / report.FACTOR_TABLE).write_text(report.factor_table_csv())
    (tidy / published.PUBLISHED_TABLE).write_text(published.published_csv())
    return tidy


def inputs(name, tidy, experiments=ALL_EXPERIMENTS):
    """The tidy files the pipeline passes to figure `name` (report.FIGURES)."""
    return report.figure_inputs(name, experiments, str(tidy))


def rscript(script, *args, cwd=None):
    return subprocess.run(["Rscript", str(SCRIPT_PATHS[script]), *map(str, args)],
                          capture_output=True, text=True, timeout=180, cwd=cwd)


def assert_pdf(proc, out, min_size=5000):
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    assert data[:4] == b"%PDF"
    assert len(data) > min_size, len(data)


def assert_one_line_error(proc, out):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert ": error: " in lines[0]
    assert not Path(out).exists()


def rewrite(src, dst, keep=lambda r: True, change=lambda r: r, extra=()):
    """Copy a tidy CSV keeping/changing rows (dicts), appending `extra` rows."""
    with open(src, newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    out = [change(dict(r)) for r in rows if keep(r)] + list(extra)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(out)
    Path(dst).write_text(buf.getvalue())
    return dst


def two_builds(src, dst):
    """Every row twice: the second copy as build mysql-5.5.9 with 80% of the QPS."""
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))

    def other(r):
        r = dict(r, build="mysql-5.5.9")
        for col in ("qps_median", "qps_ci_lo", "qps_ci_hi", "qps", "sum_timer_wait_ps"):
            if r.get(col):
                r[col] = str(float(r[col]) * 0.8)
        return r
    return rewrite(src, dst, extra=[other(r) for r in rows])


# --- every figure on the smoke data ----------------------------------------------

@pytest.mark.parametrize("name", FIGURES_ON_DATA)
def test_figure_on_smoke_data(tmp_path, smoke, name):
    out = tmp_path / "figures" / f"{name}.pdf"
    run_dir = tmp_path / "cwd"
    run_dir.mkdir()
    proc = rscript(report.FIGURES[name]["script"], *inputs(name, smoke), out, cwd=run_dir)
    assert_pdf(proc, out)
    assert [p.name for p in out.parent.iterdir()] == [out.name]   # no temp files left
    assert list(run_dir.iterdir()) == []                          # e.g. no Rplots.pdf


@pytest.mark.parametrize("name", FIGURES_ON_DATA)
def test_figure_with_several_builds(tmp_path, smoke, name):
    tables = (report.FACTOR_TABLE, published.PUBLISHED_TABLE)
    csvs = [two_builds(p, tmp_path / Path(p).name) if Path(p).name not in tables else p
            for p in inputs(name, smoke)]
    out = tmp_path / "out.pdf"
    assert_pdf(rscript(report.FIGURES[name]["script"], *csvs, out), out)


# --- robustness: subsets of the inputs, absent engines and variants -------------------

@pytest.mark.parametrize("name, experiments", [
    ("a2_sysbench_ro", {"oltp_ro"}),
    ("a2_sysbench_ro", {"simple_ranges", "point_select"}),
    ("b_memory", {"simple_ranges"}),
    ("b_memory", {"read_write"}),
    ("a3_knobs", {"read_only"}),
    ("a3_knobs", {"spin_wait", "key_cache"}),
    ("a3_waits", {"ps_pfs"}),
])
def test_figure_with_some_experiments(tmp_path, smoke, name, experiments):
    out = tmp_path / "out.pdf"
    proc = rscript(report.FIGURES[name]["script"], *inputs(name, smoke, experiments=experiments), out)
    assert_pdf(proc, out, min_size=4000)


def test_sysbench_ro_without_an_engine(tmp_path, smoke):
    ro = rewrite(smoke / "oltp_ro_summary.csv", tmp_path / "oltp_ro_summary.csv",
                 keep=lambda r: r["engine"] != "MEMORY-BTREE")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_sysbench_ro.R", ro, smoke / "point_select_summary.csv", out), out)


def test_sysbench_ro_trx_off_only(tmp_path, smoke):
    ro = rewrite(smoke / "oltp_ro_summary.csv", tmp_path / "oltp_ro_summary.csv",
                 keep=lambda r: r["trx"] == "off")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_sysbench_ro.R", ro, out), out, min_size=4000)


def test_point_select_single_users_value(tmp_path, smoke):
    ps = rewrite(smoke / "point_select_summary.csv", tmp_path / "point_select_summary.csv",
                 keep=lambda r: r["users"] == "4")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_sysbench_ro.R", ps, out), out, min_size=4000)
    assert_pdf(rscript("fig_point_select.R", ps, tmp_path / "ps.pdf"), tmp_path / "ps.pdf",
               min_size=4000)


def test_several_cores(tmp_path, smoke):
    """A second cores value (rows copied with cores=2): columns per cores, time
    series steps labelled cores/users."""
    def cores2(r):
        return dict(r, cores="2")
    with open(smoke / "point_select_summary.csv", newline="") as f:
        extra = [cores2(r) for r in csv.DictReader(f)]
    ps = rewrite(smoke / "point_select_summary.csv", tmp_path / "s.csv", extra=extra)
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_sysbench_ro.R", ps, out), out)
    with open(smoke / "point_select_intervals.csv", newline="") as f:
        extra = [cores2(r) for r in csv.DictReader(f)]
    iv = rewrite(smoke / "point_select_intervals.csv", tmp_path / "i.csv", extra=extra)
    assert_pdf(rscript("fig_timeseries.R", iv, tmp_path / "t.pdf"), tmp_path / "t.pdf")


def test_ps_pfs_with_a_variant_absent(tmp_path, smoke):
    p = rewrite(smoke / "ps_pfs_summary.csv", tmp_path / "ps_pfs_summary.csv",
                keep=lambda r: r["variant"] != "ps-on.pfs-off")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_ps_pfs.R", p, out), out, min_size=4000)


def test_ps_pfs_without_the_baseline(tmp_path, smoke):
    p = rewrite(smoke / "ps_pfs_summary.csv", tmp_path / "ps_pfs_summary.csv",
                keep=lambda r: r["variant"] != "ps-off.pfs-on")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_ps_pfs.R", p, out), out, min_size=4000)


def test_trx_with_one_mode_for_an_engine(tmp_path, smoke):
    p = rewrite(smoke / "oltp_ro_summary.csv", tmp_path / "oltp_ro_summary.csv",
                keep=lambda r: not (r["engine"] == "MyISAM" and r["trx"] == "on"))
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_trx.R", p, out), out)


def test_memory_without_memory_btree(tmp_path, smoke):
    p = rewrite(smoke / "simple_ranges_summary.csv", tmp_path / "simple_ranges_summary.csv",
                keep=lambda r: r["engine"] != "MEMORY-BTREE")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_memory.R", p, smoke / "read_write_summary.csv", out), out)


def test_knobs_spin_without_96(tmp_path, smoke):
    p = rewrite(smoke / "spin_wait_summary.csv", tmp_path / "spin_wait_summary.csv",
                keep=lambda r: r["spin_wait_delay"] != "96")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_knobs.R", p, out), out, min_size=4000)


def test_waits_top_n(tmp_path, smoke):
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_waits.R", "--top", "3", smoke / "point_select_waits.csv", out), out,
               min_size=4000)


def test_timeseries_without_rep_1(tmp_path, smoke):
    p = rewrite(smoke / "point_select_intervals.csv", tmp_path / "i.csv",
                keep=lambda r: r["rep"] == "2")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_timeseries.R", p, out), out)


@pytest.mark.parametrize("name", ["c_inserts", "c_scans", "c_storage"])
def test_study_c_one_build(tmp_path, smoke, name):
    """Study C's figures with one build only (mariadb-10.11, which adds Aria)."""
    src = inputs(name, smoke)[0]
    one = rewrite(src, tmp_path / Path(src).name, keep=lambda r: r["build"] == "mariadb-10.11")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript(report.FIGURES[name]["script"], one, out), out, min_size=4000)


def test_study_c_inserts_need_innodb(tmp_path, smoke):
    """Without InnoDB's insert time there is nothing to normalise to: one-line error."""
    src = inputs("c_inserts", smoke)[0]
    bad = rewrite(src, tmp_path / Path(src).name,
                  keep=lambda r: not (r["step"] == "C1" and r["engine"] == "InnoDB"))
    out = tmp_path / "out.pdf"
    proc = rscript("fig_c_inserts.R", bad, out)
    assert_one_line_error(proc, out)
    assert "InnoDB" in proc.stderr


# --- bad input: one line on stderr, exit status 1, no output -------------------------

SCRIPTS = sorted({f["script"] for f in report.FIGURES.values()})


@pytest.mark.parametrize("script", SCRIPTS)
def test_missing_input_file(tmp_path, script):
    out = tmp_path / "out.pdf"
    proc = rscript(script, tmp_path / "nope.csv", out)
    assert_one_line_error(proc, out)
    assert "not found" in proc.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_no_arguments(tmp_path, script):
    proc = rscript(script)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and "usage" in proc.stderr


@pytest.mark.parametrize("name", FIGURES_ON_DATA)
def test_header_only(tmp_path, smoke, name):
    src = Path(inputs(name, smoke)[0])
    empty = tmp_path / src.name
    empty.write_text(src.read_text().splitlines()[0] + "\n")
    out = tmp_path / "out.pdf"
    proc = rscript(report.FIGURES[name]["script"], empty, out)
    assert_one_line_error(proc, out)
    assert "no rows" in proc.stderr


@pytest.mark.parametrize("name, column", [
    ("a2_sysbench_ro", "qps_median"), ("a3_trx", "engine"), ("a3_ps_pfs", "users"),
    ("a3_knobs", "qps_ci_hi"), ("b_memory", "workload"), ("a3_timeseries", "time"),
    ("a3_waits", "event_name"), ("a3_point_select", "unstable"),
])
def test_missing_column(tmp_path, smoke, name, column):
    src = Path(inputs(name, smoke)[0])
    with open(src, newline="") as f:
        reader = csv.DictReader(f)
        fields = [c for c in reader.fieldnames if c != column]
        rows = [{k: v for k, v in r.items() if k in fields} for r in reader]
    bad = tmp_path / src.name
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    bad.write_text(buf.getvalue())
    out = tmp_path / "out.pdf"
    proc = rscript(report.FIGURES[name]["script"], bad, out)
    assert_one_line_error(proc, out)
    assert column in proc.stderr


def test_non_numeric_value(tmp_path, smoke):
    """The drawn metric is the server's count: a bad value there stops the figure."""
    bad = rewrite(smoke / "oltp_ro_summary.csv", tmp_path / "oltp_ro_summary.csv",
                  change=lambda r: dict(r, qps_server_median="fast") if r["engine"] == "MyISAM" else r)
    out = tmp_path / "out.pdf"
    proc = rscript("fig_trx.R", bad, out)
    assert_one_line_error(proc, out)
    assert "non-numeric" in proc.stderr and "qps_server_median" in proc.stderr


def test_without_server_columns_sysbench_count_is_drawn(tmp_path, smoke):
    """An older file without qps_server_* columns is still drawn (from sysbench's count)."""
    with open(smoke / "oltp_ro_summary.csv", newline="") as f:
        reader = csv.DictReader(f)
        fields = [c for c in reader.fieldnames if not c.startswith("qps_server")]
        rows = list(reader)
    old = tmp_path / "oltp_ro_summary.csv"
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    old.write_text(buf.getvalue())
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_trx.R", old, out), out)


def test_factor_columns_come_from_the_header(tmp_path, smoke):
    """A factor the scripts have never heard of (a renamed column between variant and
    tables) is plotted, titled with its words from the factor table."""
    def renamed(src, dst):
        text = Path(src).read_text().replace("spin_wait_delay", "brand_new_knob", 1)
        Path(dst).write_text(text)
        return dst
    knob = renamed(smoke / "spin_wait_summary.csv", tmp_path / "spin_wait_summary.csv")
    table = tmp_path / "factors.csv"
    table.write_text(report.factor_table_csv() + "brand_new_knob,bnk,a brand new knob,96,6|96|256\n")
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_knobs.R", knob, table, out), out, min_size=4000)
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True).stdout
        assert "a brand new knob" in text


def test_sysbench_ro_rejects_other_workloads(tmp_path, smoke):
    out = tmp_path / "out.pdf"
    proc = rscript("fig_sysbench_ro.R", smoke / "read_write_summary.csv", out)
    assert_one_line_error(proc, out)
    assert "oltp_rw" in proc.stderr


def test_trx_without_trx_column_values(tmp_path, smoke):
    out = tmp_path / "out.pdf"
    proc = rscript("fig_trx.R", smoke / "point_select_summary.csv", out)
    assert_one_line_error(proc, out)


def test_knobs_without_knob_rows(tmp_path, smoke):
    out = tmp_path / "out.pdf"
    proc = rscript("fig_knobs.R", smoke / "point_select_summary.csv", out)
    assert_one_line_error(proc, out)


def test_waits_without_lock_waits(tmp_path, smoke):
    """Only I/O waits (as when no cell had the Performance Schema's lock timers): an error."""
    io_only = rewrite(smoke / "ps_pfs_waits.csv", tmp_path / "ps_pfs_waits.csv",
                      keep=lambda r: r["event_name"].startswith("wait/io/"))
    out = tmp_path / "out.pdf"
    proc = rscript("fig_waits.R", io_only, out)
    assert_one_line_error(proc, out)
    assert "Performance Schema" in proc.stderr


def test_waits_bad_top(tmp_path, smoke):
    out = tmp_path / "out.pdf"
    proc = rscript("fig_waits.R", "--top", "zero", smoke / "ps_pfs_waits.csv", out)
    assert_one_line_error(proc, out)


def test_a_build_without_an_engine_is_shown_absent_not_zero(tmp_path, smoke):
    """fig_builds.R: a build that cannot run an engine has no point at 0 but a note in its panel."""
    summary = (smoke / "build_compare_summary.csv").read_text().splitlines()
    kept = [summary[0]] + [l for l in summary[1:] if not (",mysql-5.5.9,MyISAM," in l)]
    (tmp_path / "s.csv").write_text("\n".join(kept) + "\n")
    (tmp_path / "u.csv").write_text("experiment,build,engine,variant,reason\n"
                                    "build_compare,mysql-5.5.9,MyISAM,base,mysql-5.5.9 has no MyISAM engine\n")
    out = tmp_path / "b.pdf"
    assert_pdf(rscript("fig_builds.R", tmp_path / "s.csv", tmp_path / "u.csv", out), out)
    text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True).stdout
    assert "absent: mysql-5.5.9" in text.replace("\u2212", "-")  # R's pdf device draws '-' as a minus sign


def test_memory_draws_a_panel_per_simple_ranges_experiment(tmp_path, smoke):
    """simple_ranges and simple_ranges_scale share a workload: one panel each, named."""
    scale = rewrite(smoke / "simple_ranges_summary.csv", tmp_path / "simple_ranges_scale_summary.csv",
                    keep=lambda r: r["engine"].startswith("MEMORY"),
                    change=lambda r: dict(r, experiment="simple_ranges_scale"))
    out = tmp_path / "out.pdf"
    assert_pdf(rscript("fig_memory.R", smoke / "simple_ranges_summary.csv", scale,
                       smoke / "read_write_summary.csv", smoke / "factors.csv", out), out)
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True).stdout
        assert "simple_ranges_scale" in text and "(c)" in text
