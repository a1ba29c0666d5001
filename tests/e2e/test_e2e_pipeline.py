"""The whole pipeline on real servers (smoke profile) in a fresh copy of the
repository: PDF, tidy data and manifests; a second run schedules nothing;
touching an R script re-runs only the figure and the paper; a mysqld killed
mid-sweep fails that job without leaving its cell, and a rerun completes."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import copy_checkout, server_pids
from harness import builds, paths
from harness.plan import config
from harness.plan import estimate as E

pytestmark = pytest.mark.e2e
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SMOKE = ["--cores", "all", "--configfile", "config/smoke.yaml"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A copy of the repository as a fresh clone would have it (tracked + new files, no outputs)."""
    return copy_checkout(tmp_path_factory.mktemp("clone"))


def snakemake(work: Path, *args, check=True) -> subprocess.CompletedProcess:
    res = subprocess.run([SNAKEMAKE, *args], cwd=work, capture_output=True, text=True)
    if check:
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


def planned_jobs(out: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run: rule -> count (without the total)."""
    jobs, inside = {}, False
    for line in out.splitlines():
        if line.startswith("Job stats:"):
            inside = True
            continue
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if inside and m:
            if m.group(1) == "total":
                break
            jobs[m.group(1)] = int(m.group(2))
    return jobs


def smoke_config(work: Path) -> dict:
    """The smoke profile as the pipeline resolves it (on top of config/default.yaml)."""
    cfg = {}
    for f in ("config/default.yaml", "config/smoke.yaml"):
        config.deep_merge(cfg, yaml.safe_load((work / f).read_text()))
    return config.resolve(cfg)


def smoke_cells(work: Path) -> int:
    cfg = smoke_config(work)["experiments"]["point_select"]
    return (len(cfg["engines"]) * len(cfg["tables"]) * len(cfg["cores"]) * len(cfg["users"])
            * cfg["repetitions"])


@pytest.fixture(scope="module")
def first_run(work):
    return snakemake(work, *SMOKE)


def test_smoke_pipeline_ends_in_the_paper(work, first_run):
    pdf = work / "paper/main.pdf"
    assert pdf.read_bytes()[:4] == b"%PDF"
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Point-Selects" in text
    rows = list(csv.DictReader(open(work / "data/tidy/point_select.csv")))
    assert len(rows) == smoke_cells(work)
    assert all(float(r["qps"]) > 0 for r in rows)
    # a number quoted in the text is the tidy data's, through a generated macro
    macros = (work / "paper/generated/macros.tex").read_text()
    best = max(float(r["qps_server_median"]) for r in csv.DictReader(open(work / "data/tidy/point_select_summary.csv"))
               if r["engine"] == "InnoDB" and r["tables"] == "8")
    assert f"{round(best):,}".replace(",", "{,}") in macros
    assert (work / "figures/a3_point_select.pdf").stat().st_size > 5000
    # the verdict rule's power, simulated by the run itself at its claims.level, is in the paper
    power = (work / "paper/generated/power.tex").read_text()
    assert "was not run" not in power and re.search(r"^default \(6:12:2\), one cell a side & 0\.\d{3}", power, re.M), power


def test_every_cell_has_its_manifest(work, first_run):
    cells = sorted((work / "data/raw/A3/point_select").iterdir())
    assert len(cells) == smoke_cells(work)
    for c in cells:
        m = json.loads((c / "manifest.json").read_text())
        assert m["cell"] == c.name
        assert m["build"]["mysqld_sha256"] and m["server"]["my_cnf_sha256"]
        assert m["placement"]["observed_server_cpus"] == m["placement"]["server_cpus"]
        assert m["driver"]["script_sha256"] and m["host"]["kernel"]
        # the default backend: a --network none container held by its cpuset, build from the Nix store
        assert m["placement"]["backend"] == "docker" and m["placement"]["mechanism"] == "docker-cpuset"
        if builds.choose_provider("auto") == "nix":  # the build's bytes from the Nix store, its hash recorded
            assert m["build"]["basedir"].startswith("/nix/store/") and m["build"]["nar_hash"]
        assert m["schema"] == 2 and m["kind"] == "throughput"
        assert m["timing"]["started"] <= m["timing"]["finished"]
    assert not list((work / "data/raw/A3/point_select").glob(".*"))


def test_the_finished_run_is_recorded_and_rendered_into_the_time_table(work, first_run):
    """logs/runs/smoke.json: a from-scratch run measured every planned cell, each with its
    benchmark file; scripts/time-table.py renders it (measured, not typed) into a README."""
    rec = json.loads((work / "logs/runs/smoke.json").read_text())
    planned = sum(e["cells"] for e in rec["experiments"].values())
    assert rec["profile"] == "smoke" and rec["cells"] == planned > 0
    assert rec["measured_now"] == planned and rec["from_scratch"] is True
    assert all(e["benchmarked"] == e["cells"] and e["measured_s"] > 0 for e in rec["experiments"].values())
    assert 0 < sum(e["measured_s"] for e in rec["experiments"].values()) < rec["wall_s"]
    assert rec["host_cpus"] == len(os.sched_getaffinity(0)) and rec["datasets"]["benchmarked"] > 0
    readme = work / "README.md"
    res = subprocess.run([sys.executable, str(work / "scripts/time-table.py"), "--root", str(work),
                          "--readme", str(readme)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    table = readme.read_text().split("<!-- times:begin -->")[1].split("<!-- times:end -->")[0]
    smoke = next(line for line in table.splitlines() if line.startswith("| `./artifact smoke`"))
    assert smoke.split("|")[-2].strip().startswith(E.hms(rec["wall_s"]))
    assert "Per experiment, profile `smoke` as measured here" in table
    res = subprocess.run([sys.executable, str(work / "scripts/time-table.py"), "--root", str(work),
                          "--readme", str(readme), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_second_run_schedules_nothing(work, first_run):
    res = snakemake(work, "-n", *SMOKE)
    assert planned_jobs(res.stdout + res.stderr) == {}, res.stdout[-2000:]


def test_touching_the_r_script_replots_without_remeasuring(work, first_run):
    script = work / "workflow/harness/studies/a2_a3/R/fig_point_select.R"
    os.utime(script)  # same content: Snakemake 9 compares checksums, so at most a replot
    jobs = planned_jobs(snakemake(work, "-n", *SMOKE).stdout)
    assert set(jobs) - {"all"} <= {"figure_a2_a3", "paper"}, jobs
    script.write_text(script.read_text() + "# a cosmetic edit\n")  # a real change of the plot
    jobs = planned_jobs(snakemake(work, "-n", *SMOKE).stdout)
    assert set(jobs) - {"all"} == {"figure_a2_a3", "paper"} and jobs["figure_a2_a3"] == 1, jobs
    before = {p.name: p.stat().st_mtime for p in (work / "data/raw/A3/point_select").iterdir()}
    snakemake(work, *SMOKE)
    after = {p.name: p.stat().st_mtime for p in (work / "data/raw/A3/point_select").iterdir()}
    assert before == after, "re-plotting touched a measured cell"


MEASURING = {"run_cell", "dataset", "corpus", "fetch_build", "bootstrap_template", "repetition_done"}


def test_replot_after_code_changes_rebuilds_the_paper_and_measures_nothing(work, first_run):
    """./artifact replot: an edited R script and an edited harness module (which a
    normal run would treat as changed code) rebuild the PDF from the existing raw
    cells; the executed jobs include no measurement."""
    for f in ("workflow/harness/studies/a2_a3/R/fig_point_select.R", "workflow/harness/analysis/tidywrite.py"):
        (work / f).write_text((work / f).read_text() + "\n# an edit\n")
    pdf = work / "paper/main.pdf"
    before = pdf.stat().st_mtime
    res = snakemake(work, "--cores", "all", "--configfile", "config/smoke.yaml", "--profile", "profiles/replot")
    ran = set(re.findall(r"\(Rule: (\w+)\)", res.stdout + res.stderr)) or \
        set(re.findall(r"^rule (\w+):", res.stdout + res.stderr, re.M))
    assert ran and not ran & MEASURING, ran
    assert {"tidy_throughput", "generated_tex", "paper"} <= ran, ran
    assert pdf.stat().st_mtime > before
    # and a profile asking for cells that do not exist lists them instead of measuring
    (work / "more-users.yaml").write_text("experiment_defaults: {users: [2]}\n")
    res = snakemake(work, "--cores", "all", "--configfile", "config/smoke.yaml", "more-users.yaml",
                    "--profile", "profiles/replot", "-n")
    assert "not measured and stay out" in res.stderr
    assert not set(planned_jobs(res.stdout + res.stderr)) & MEASURING


def test_kill9_mid_sweep_then_rerun_completes(work, first_run):
    raw = work / "data/raw/A3/point_select"
    victim = sorted(raw.iterdir())[-1]
    # its group-mates (smoke sweeps its users on one server): the same name but the users
    head, rep = re.match(r"(.*)_u\d+_(r\d+)$", victim.name).groups()
    mates = {p.name: (p / "manifest.json").read_bytes() for p in raw.iterdir()
             if p != victim and re.fullmatch(re.escape(head) + r"_u\d+_" + rep, p.name)}
    # the state of a first sweep not finished yet: this cell and everything downstream absent
    shutil.rmtree(victim)
    for d in ("data/tidy", "paper/generated"):
        shutil.rmtree(work / d)
    for f in [work / "paper/main.pdf", *(work / "figures").glob("*.pdf")]:
        f.unlink()
    proc = subprocess.Popen([SNAKEMAKE, *SMOKE], cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    pid = None
    while pid is None and time.monotonic() < deadline:
        alive = [p for p in server_pids() if Path(f"/proc/{p}").exists()]
        pid = alive[0] if alive else None
        assert pid or proc.poll() is None, "the sweep ended before a server was seen"
        time.sleep(0.05)
    time.sleep(1.5)  # inside the warm-up or the measured run
    os.kill(pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0, out[-2000:]
    assert not victim.exists(), "a failed cell left its directory"
    assert not list(raw.glob(f".{victim.name}.tmp-*"))
    assert server_pids() == []
    snakemake(work, *SMOKE)
    assert (victim / "manifest.json").exists()
    # the group is measured again whole: its mates measured before are set aside, not deleted
    aside = {p.name.split(".superseded-")[0]: (p / "manifest.json").read_bytes()
             for p in (work / "data/partial/A3/point_select").glob("*.superseded-*")}
    assert {n: aside.get(n) for n in mates} == mates
    assert (work / "paper/main.pdf").exists()
    assert len(list(raw.iterdir())) == smoke_cells(work)


def _csv(work, name):
    with open(work / "data/tidy" / name, newline="") as f:
        return list(csv.DictReader(f))


def test_every_experiment_of_the_profile_is_measured_and_tidied(work, first_run):
    exps = smoke_config(work)["experiments"]
    # an experiment no claim this host can decide and no figure reads is not planned (the
    # resolved profile says enabled: false and why: harness.plan.reads); every other one is
    assert all(spec["enabled"] or spec.get("not_planned") for spec in exps.values())
    for name, spec in exps.items():
        if not spec["enabled"]:
            assert not (work / "data/tidy" / f"{name}.csv").exists(), name
            continue
        rows = _csv(work, f"{name}.csv")
        if spec["kind"] == "steps":  # one row per (step, engine, metric): every check passed
            assert rows and not [r for r in rows if r["metric"] == "check" and r["ok"] == "False"], name
            continue
        assert rows and all(float(r["qps"]) > 0 and float(r["qps_server"]) > 0 for r in rows), name
    assert (work / "data/tidy/unsupported.csv").exists()


def test_memory_hash_ranges_are_full_scans_and_btree_ranges_are_not(work, first_run):
    plans = {r["engine"]: r for r in _csv(work, "simple_ranges_explain.csv") if r["statement"] == "simple_range"}
    assert plans["MEMORY"]["type"] == "ALL", plans["MEMORY"]
    assert plans["MEMORY-BTREE"]["type"] == "range", plans["MEMORY-BTREE"]
    assert plans["InnoDB"]["type"] == "range"


def test_per_table_key_caches_are_captured_for_8_myisam_tables(work, first_run):
    cells = list((work / "data/raw/A3/key_cache").glob("*_MyISAM_kc-pertable_t8_*"))
    assert cells
    for c in cells:
        rows = list(csv.DictReader(open(c / "key_caches.tsv"), delimiter="\t"))
        assert {(r["table"], r["cache"]) for r in rows} == {(f"sbtest{i}", f"kc{i}") for i in range(1, 9)}
        assert all(r["load_index"] == "OK" and int(r["key_buffer_size"]) > 0 for r in rows)


def test_each_server_start_reads_its_tables_in_once_before_its_first_warm_up(work, first_run):
    """Smoke runs a setting's users on one server start: its first cell reads the tables into
    memory (preload.tsv), the later ones find them there; MEMORY cells read nothing in."""
    starts: dict = {}
    for c in sorted((work / "data/raw/A3/point_select").iterdir()):
        m = json.loads((c / "manifest.json").read_text())
        engine = m["factors"]["engine"]
        if engine.startswith("MEMORY"):
            assert m["preload"] is None and not (c / "preload.tsv").exists(), c.name
            continue
        assert m["preload"]["seconds"] >= 0, c.name
        group = (m.get("group") or {"cells": [c.name]})["cells"]  # a cell measured alone: its own start
        starts.setdefault(tuple(group), []).append((m["preload"]["by"], (c / "preload.tsv").exists()))
    assert starts
    for group, seen in starts.items():
        assert sorted(seen) == sorted([("this cell", True)] + [("the group's first cell", False)] * (len(seen) - 1)), group


def test_every_build_reads_its_tables_in(work, first_run):
    """On every pinned build (MySQL 5.5.9 and 5.6.24, MariaDB 10.2 and 10.11: each with its own
    SHOW INDEX and counters) the read-in reads every table's rows, and InnoDB each table's
    secondary index, once per server start, before the first warm-up."""
    exp = smoke_config(work)["experiments"]["build_compare"]
    seen = set()  # (build, engine) of the cells that read in
    for c in (work / "data/raw/A3/build_compare").iterdir():
        m = json.loads((c / "manifest.json").read_text())
        if m["preload"]["by"] != "this cell":
            continue
        tables, engine = int(m["factors"]["tables"]), m["factors"]["engine"]
        rows = list(csv.DictReader(open(c / "preload.tsv"), delimiter="\t"))
        want = {(f"sbtest{i}", "rows") for i in range(1, tables + 1)}
        if engine == "InnoDB":
            want |= {(f"sbtest{i}", f"k_{i}") for i in range(1, tables + 1)}  # sysbench's k_<n> on sbtest<n>
        assert {(r["table"], r["read"]) for r in rows} == want, c.name
        assert all(int(r["rows"]) == int(m["factors"]["table_size"]) > 0 for r in rows), c.name
        seen.add((m["build"]["name"], engine))
    assert seen == {(b, e) for b in exp["builds"] for e in exp["engines"]}


def test_performance_schema_waits_follow_the_pfs_factor(work, first_run):
    for c in (work / "data/raw/A3/ps_pfs").iterdir():
        waits = c / "pfs_waits.tsv"
        if ".pfs-on_" in c.name:
            assert len(waits.read_text().splitlines()) > 1, c.name
        else:
            assert not waits.exists(), c.name


def test_build_compare_measures_every_build_it_names(work, first_run):
    exp = smoke_config(work)["experiments"]["build_compare"]
    assert {r["build"] for r in _csv(work, "build_compare_summary.csv")} == set(exp["builds"])
    versions = {json.loads((c / "manifest.json").read_text())["server"]["version"]
                for c in (work / "data/raw/A3/build_compare").iterdir()}
    assert len(versions) == len(exp["builds"])


def test_a_smoke_run_exported_imported_into_a_fresh_clone_replots_to_the_same_claims(work, first_run,
                                                                                     tmp_path_factory):
    """The round trip of docs/results.md on the real smoke run: `harness export` twice gives
    byte-identical bundles; `harness import` into a fresh clone, then a replot there builds
    the paper without measuring, starting no server, with the same claims.csv (its host column
    included: the bundle carries the id the exporting clone's claims name, this machine's own,
    so $MYSQLBENCH_HOST_ID is left unset) and tidy data."""
    base_env = {k: v for k, v in os.environ.items() if k != "MYSQLBENCH_HOST_ID"}
    env = {**base_env, "PYTHONPATH": str(work / "workflow")}
    # the exporting clone's own build of its cells: earlier tests of this module left tidy data and
    # a paper of other settings there (derived files, no measurement), so it replots first
    for derived in ("data/tidy", "paper/generated"):
        shutil.rmtree(work / derived, ignore_errors=True)
    snakemake(work, "--cores", "all", "--configfile", "config/smoke.yaml", "--profile", "profiles/replot")
    out = tmp_path_factory.mktemp("bundle")
    t0 = time.monotonic()
    for name in ("a.tar.gz", "b.tar.gz"):
        res = subprocess.run([sys.executable, "-m", "harness", "export", "--out", str(out / name)], cwd=work,
                             env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-2000:]
    took = (time.monotonic() - t0) / 2
    bundle = out / "a.tar.gz"
    print(f"smoke export: {bundle.stat().st_size} bytes, {took:.1f} s")
    assert bundle.read_bytes() == (out / "b.tar.gz").read_bytes()
    fresh = copy_checkout(tmp_path_factory.mktemp("fresh"))
    fenv = {**base_env, "PYTHONPATH": str(fresh / "workflow")}
    res = subprocess.run([sys.executable, "-m", "harness", "import", str(bundle)], cwd=fresh, env=fenv,
                         capture_output=True, text=True)
    host = re.search(r"as host (\S+)", res.stdout)
    assert res.returncode == 0 and host, res.stderr[-2000:]
    host = host.group(1).rstrip(".:,")
    before = set(server_pids())
    res = snakemake(fresh, "--cores", "all", "--configfile", "config/smoke.yaml", "--profile", "profiles/replot")
    ran = set(re.findall(r"\(Rule: (\w+)\)", res.stdout + res.stderr)) or \
        set(re.findall(r"^rule (\w+):", res.stdout + res.stderr, re.M))
    assert ran and not ran & MEASURING and {"tidy_throughput", "paper"} <= ran, ran
    assert not (fresh / "data/raw").exists() and not (fresh / "resources/builds").exists()
    assert set(server_pids()) <= before
    claims = (fresh / "paper/generated/claims.csv").read_bytes()
    assert claims == (work / "paper/generated/claims.csv").read_bytes()
    assert {r["host"] for r in csv.DictReader(claims.decode().splitlines())} == {host}
    tidy = sorted(p.name for p in (work / "data/tidy").glob("*.csv"))
    assert tidy and sorted(p.name for p in (fresh / "data/tidy").glob("*.csv")) == tidy
    for name in tidy:
        assert (fresh / "data/tidy" / name).read_bytes() == (work / "data/tidy" / name).read_bytes(), name
    runinfo = (fresh / "paper/generated/runinfo.tex").read_text()
    assert f"imported from a bundle of host {host}" in runinfo and "measured none" in runinfo
    assert (fresh / "paper/main.pdf").read_bytes()[:4] == b"%PDF"


def _manifests(raw: Path) -> dict[str, dict]:
    return {c.name: json.loads((c / "manifest.json").read_text()) for c in raw.iterdir()
            if (c / "manifest.json").exists()}


def test_a_default_overlay_after_smoke_measures_what_its_estimate_says_and_reads_no_smoke_cell(work, first_run):
    """Issue 53, item 0, in the clone smoke ran in: a default-profile overlay (only
    point_select, users 4 and 16, one table, 2 blocks, no verdicts; every other experiment
    `enabled: false`) shares half its cell paths with smoke's cells (t1, u4). Its
    estimate counts those as to do (their settings digest is smoke's), the run measures
    exactly that many, sets smoke's cells aside under data/partial/ (nothing measured is
    lost), and its paper builds beside smoke's leftover tidy files of the disabled
    experiments, reading no cell that carries smoke's digest."""
    from harness.plan import reuse
    raw = work / "data/raw/A3/point_select"
    smoke = _manifests(raw)
    smoke_digests = {m["settings_digest"] for m in smoke.values()}
    assert all(m["profile"] == "smoke" and m["settings_digest"] for m in smoke.values())
    exps = smoke_config(work)["experiments"]
    overlay = {"profile": "digest-overlay", "claims": {"decide": False},  # 2 blocks decide nothing
               "experiments": {**{x: {"enabled": False} for x in exps if x != "point_select"},
                               "point_select": {"users": [4, 16], "tables": [1], "repetitions": 2}}}
    (work / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    est = subprocess.run([sys.executable, "-m", "harness", "estimate", "--configfile", "overlay.yaml", "--json"],
                         cwd=work, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(work / "workflow")})
    assert est.returncode == 0, est.stderr[-2000:]
    todo = {r["experiment"]: r["todo"] for r in json.loads(est.stdout)["rows"]}
    cfg = E.load_profile([str(work / "overlay.yaml")], work)
    lock = builds.load_lock(paths.LOCK)
    planned = {Path(d).name for d in E.plan.cells(cfg, lock, "point_select")}
    shared = planned & set(smoke)
    assert shared and planned - shared, "the overlay shares some cell paths with smoke, not all"
    assert todo == {"point_select": len(planned)}, todo  # smoke's cells at shared paths are to do
    before = {n: (raw / n / "manifest.json").read_bytes() for n in smoke}
    partial = work / "data/partial/A3/point_select"
    # what earlier tests of this module set aside (the kill -9 test's rerun moves the group-mate
    # of the cell it removed aside before its group is measured again)
    earlier = set(partial.glob("*.superseded-*"))
    snakemake(work, "--cores", "all", "--configfile", "overlay.yaml")
    after = _manifests(raw)
    measured = {n for n in after if (raw / n / "manifest.json").read_bytes() != before.get(n)}
    assert measured == planned and len(measured) == todo["point_select"]
    for n in planned:  # every cell this paper reads is the overlay's, none smoke's
        m = after[n]
        assert m["profile"] == "digest-overlay" and m["settings_digest"] not in smoke_digests, n
        assert m["settings_digest"] == reuse.planned_digest(cfg, lock, "point_select", n), n
    kept = sorted(set(partial.glob("*.superseded-*")) - earlier)
    assert sorted(p.name.split(".superseded-")[0] for p in kept) == sorted(shared)
    assert {json.loads((p / "manifest.json").read_text())["settings_digest"] for p in kept} <= smoke_digests
    rows = _csv(work, "point_select.csv")
    assert len(rows) == len(planned) and {r["users"] for r in rows} == {"4", "16"}
    prov = json.loads((work / "data/tidy/point_select_provenance.json").read_text())
    assert prov["profile"] == "digest-overlay"
    # smoke's provenance of a disabled experiment is still there, and not read
    assert json.loads((work / "data/tidy/fts_provenance.json").read_text())["profile"] == "smoke"
    pdf = work / "paper/main.pdf"
    assert pdf.read_bytes()[:4] == b"%PDF"
    info = (work / "paper/generated/runinfo.tex").read_text()
    assert r"\newcommand{\RunProfile}{digest-overlay}" in info and r"\newcommand{\RunCells}{%d}" % len(planned) in info
