"""Several hosts in one paper (docs/method.md, "Several hosts"; docs/results.md): every host's
cells judged on their own by the same code, a combined row per claim by
harness.analysis.claims.combined_verdict, and a two-host paper built from recorded real cells.

The second host on one machine: the recorded smoke cells of tests/fixtures/raw (real, unedited)
are exported twice from a scratch clone, once with MYSQLBENCH_HOST_ID=lab-a and once with
MYSQLBENCH_HOST_ID=lab-b (the variable `./artifact export --host-id` sets), and both bundles
are imported into another scratch clone: two hosts whose measured values are the same bytes,
never edited. The real version (two smoke runs) is tests/e2e/test_e2e_pipeline.py's."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from harness.report import figures as F
from harness.analysis import claims as C
from harness.report import bundleimport

R, N, I, M = C.REPRODUCED, C.NOT_REPRODUCED, C.INCONCLUSIVE, C.NOT_MEASURABLE
FIXTURE = ROOT / "tests/fixtures/raw"   # recorded real smoke cells (its README)


# --- the combined rule -------------------------------------------------------------------

@pytest.mark.parametrize("verdicts, want", [
    ([R], R), ([N], N), ([I], I), ([M], M),                     # one host: its own verdict
    ([R, R], R), ([R, I], I), ([R, M], R), ([R, N], I),         # two: both, or the only able one
    ([R, R, I], R), ([R, I, I], I), ([R, R, N], I),             # a strict majority, none against
    ([N, N, I], N), ([N, I, M], I), ([M, M, M], M), ([I, I], I),
])
def test_the_combined_verdict_needs_a_strict_majority_of_able_hosts_and_none_against(verdicts, want):
    assert C.combined_verdict(verdicts)[0] == want


def test_one_noisy_host_never_decides_for_several():
    """Whatever one host says, the others inconclusive: never decided (three hosts or two)."""
    for one in (R, N):
        for n in (2, 3, 5):
            assert C.combined_verdict([one] + [I] * (n - 1))[0] == I


def test_the_combined_reason_says_k_of_n():
    v, why = C.combined_verdict([R, R, I, M])
    assert v == R and "reproduced on 2 of the 3 hosts that could measure it" in why and "1 of 4" in why
    assert C.combined_verdict([R, N])[1].startswith("hosts disagree")


def _row(claim, verdict, build="b1", ratio="1.5"):
    return {"claim": claim, "build": build, "verdict": verdict, "ratio": ratio, "ratio_lo": "1.2",
            "ratio_hi": "1.9", "side": "above", "threshold": "1.1", "study": "A2", "coverage": "0.95"}


def test_by_host_one_host_gives_its_rows_with_the_host_and_no_combined_row():
    rows = [_row("x", R), _row("y", I)]
    out = C.by_host([("h1", rows)])
    assert [(r["claim"], r["host"]) for r in out] == [("x", "h1"), ("y", "h1")]
    assert [{k: v for k, v in r.items() if k != "host"} for r in out] == rows


def test_by_host_several_hosts_a_row_per_host_and_a_combined_row_without_an_interval():
    out = C.by_host([("h1", [_row("x", R), _row("y", I)]), ("h2", [_row("x", R)])])
    assert [(r["claim"], r["host"], r["verdict"]) for r in out] == [
        ("x", "h1", R), ("x", "h2", R), ("x", C.ALL_HOSTS, R),
        ("y", "h1", I), ("y", C.ALL_HOSTS, I)]     # h2 lacks y: counted as not measurable there
    combined = out[2]
    assert not combined["ratio"] and not combined["ratio_lo"] and not combined["coverage"]
    assert combined["measured"] == "h1: reproduced; h2: reproduced"
    assert C.invariant_violations(out) == []


# --- which hosts a replot reads -------------------------------------------------------------

def _env(host):
    return {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "MYSQLBENCH_HOST_ID": host}


def _harness(*args, host="lab-a"):
    res = subprocess.run([sys.executable, "-m", "harness", *args], env=_env(host), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    """A scratch clone with raw6's cells imported twice: as host lab-a and as host lab-b."""
    base = tmp_path_factory.mktemp("hosts")
    src = base / "src"
    for study in (d for d in FIXTURE.iterdir() if d.is_dir() and d.name != "datasets"):   # the cells only, not the fixture's own files
        shutil.copytree(study, src / "data/raw" / study.name)
    (src / "data/tidy").mkdir(parents=True)
    shutil.copy(FIXTURE / "config.resolved.yaml", src / "data/tidy")
    (src / "config").mkdir()
    shutil.copy(ROOT / "config/builds.lock.yaml", src / "config")
    shutil.copy(ROOT / "CITATION.cff", src)
    dst = base / "dst"
    dst.mkdir()
    for h in ("lab-a", "lab-b"):
        _harness("export", "--root", str(src), "--out", str(base / f"{h}.tar.gz"), host=h)
        _harness("import", "--root", str(dst), str(base / f"{h}.tar.gz"))
    return dst


def test_auto_and_all_read_every_host_and_one_host_stays_one(two_hosts, tmp_path):
    want = [("lab-a", "data/hosts/lab-a/raw"), ("lab-b", "data/hosts/lab-b/raw")]
    assert bundleimport.host_roots("auto", True, "smoke", two_hosts) == want
    assert bundleimport.host_roots("all", True, "smoke", two_hosts) == want
    assert bundleimport.host_roots("lab-b", True, "smoke", two_hosts) == want[1:]
    with pytest.raises(Exception, match="profile smoke, not default"):
        bundleimport.host_roots("all", True, "default", two_hosts)
    with pytest.raises(Exception, match="only by ./artifact replot"):
        bundleimport.host_roots("all", False, "smoke", two_hosts)
    one = tmp_path / "one"
    shutil.copytree(two_hosts / "data/hosts/lab-a", one / "data/hosts/lab-a")
    assert bundleimport.host_roots("auto", True, "smoke", one) == want[:1]


# --- the two-host paper -----------------------------------------------------------------------

TOOLS = ("Rscript", "latexmk", "pdftotext")


@pytest.mark.skipif(not all(map(shutil.which, TOOLS)), reason=f"needs {', '.join(TOOLS)}")
def test_a_two_host_paper_has_per_host_and_combined_rows_and_its_pdf_shows_both_hosts(two_hosts, tmp_path):
    import paper_build
    raws = {}
    for h in ("lab-a", "lab-b"):   # an imported raw root, with the report inputs retidy reads beside it
        raws[h] = tmp_path / "raw" / h
        shutil.copytree(two_hosts / f"data/hosts/{h}/raw", raws[h])
        for name in ("config.resolved.yaml", "official_check.json", "unsupported.csv"):
            shutil.copy(FIXTURE / name, raws[h])
        shutil.copytree(FIXTURE / "datasets", raws[h] / "datasets")   # A1's recorded datasets, as retidy reads them
    r = paper_build.build(tmp_path / "out", raw=raws["lab-a"], host="lab-a", others=[("lab-b", raws["lab-b"])])
    assert not r["failed"], r["failed"]
    assert r["latex"].returncode == 0, r["latex"].stdout[-3000:]
    rows = list(csv.DictReader(open(r["generated"] / "claims.csv", newline="")))
    by = {}
    for row in rows:
        by.setdefault((row["claim"], row["build"]), {})[row["host"]] = row
    assert by and all(set(v) == {"lab-a", "lab-b", C.ALL_HOSTS} for v in by.values()), by.keys()
    for v in by.values():   # the same cells on both hosts: the same verdict, and the combined one agrees
        assert v["lab-a"]["verdict"] == v["lab-b"]["verdict"] == v[C.ALL_HOSTS]["verdict"]
        assert v["lab-a"]["ratio"] == v["lab-b"]["ratio"] and not v[C.ALL_HOSTS]["ratio"]
    assert any(v[C.ALL_HOSTS]["verdict"] == C.REPRODUCED for v in by.values())
    text = subprocess.run(["pdftotext", "-layout", str(r["paper"] / "main.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    table = " ".join(text[text.index("Published claims and the verdicts"):].split())
    assert "host lab-a" in table and "host lab-b" in table and "all hosts" in table
    assert "reproduced on 2 of 2 hosts" in table
    assert "The 2 hosts whose cells this paper judges" in text     # the setup appendix's table
    flat = " ".join(text.replace("\u2019", "'").split())   # the title page: whose numbers the text and the study tables are
    assert "The figures draw every host (each build named build @ host); the numbers in the text and the " \
           "studies' own tables are host lab-a's alone." in flat
    fig = subprocess.run(["pdftotext", str(r["figure_dir"] / "claims.pdf"), "-"], capture_output=True,
                         text=True, check=True).stdout
    assert "@ lab-a" in fig and "@ lab-b" in fig and "all hosts" in fig
    # the figure draws exactly the judged rows, each host's and the combined one; the caption
    # counts the host rows and the combined rows not measurable here
    caption = paper_build.claims_figure_matches(rows, r["figure_dir"] / "claims.pdf", r["paper"] / "main.pdf")
    gone = [row for row in rows if row["verdict"] == C.NOT_MEASURABLE]
    combined = sum(row["host"] == C.ALL_HOSTS for row in gone)
    assert combined and f"and {combined} combined rows not measurable on any host" in caption, caption
    # every figure of measured curves draws both hosts, each build named "<build> @ <host>" (theme.R's
    # read_tidy; -raw: rotated axis labels read whole); one whose table only the first host has (A1's
    # load table) names that host alone
    assert r["figures"]
    for name in r["figures"]:
        text = subprocess.run(["pdftotext", "-raw", str(r["figure_dir"] / f"{name}.pdf"), "-"], capture_output=True,
                              text=True, check=True).stdout
        text = " ".join(text.split())   # a strip's words come one a line
        per_host = any(kind in F.HOST_KINDS for _, kind in F.FIGURES[name]["inputs"])
        assert "@ lab-a" in text and ("@ lab-b" in text) == per_host, (name, per_host, text[:400])


# --- the reserved host id ---------------------------------------------------------------------

def test_the_reserved_host_id_is_the_combined_rows():
    from harness.report import bundle as B
    assert B.RESERVED_HOST_IDS == (C.ALL_HOSTS,)


@pytest.mark.parametrize("how", ["--host-id", "MYSQLBENCH_HOST_ID"])
def test_export_refuses_the_host_id_all_in_one_line_writing_nothing(tmp_path, how):
    from test_bundle import clone, harness
    src = clone(tmp_path / "src")
    out = tmp_path / "run.tar.gz"
    flag = ["--host-id", "all"] if how == "--host-id" else []
    res = harness("export", "--root", str(src), "--out", str(out), *flag,
                  host="all" if how != "--host-id" else "lab-a", check=False)
    lines = res.stderr.strip().splitlines()
    assert res.returncode != 0 and len(lines) == 1, res.stderr
    assert "'all'" in lines[0] and "--host-id" in lines[0] and "MYSQLBENCH_HOST_ID" in lines[0] \
        and "reserved" in lines[0], lines
    assert not out.exists() and not list(tmp_path.glob("*.tar.gz*"))


def test_import_refuses_a_bundle_of_host_all_in_one_line_writing_nothing(tmp_path):
    """A well-formed bag (every checksum agrees) whose bundle.json names host `all`."""
    import json
    import tarfile
    import bagit
    from harness.report import bundle as B
    from test_bundle import clone, harness, refused
    src = clone(tmp_path / "src")
    harness("export", "--root", str(src), "--out", str(tmp_path / "run.tar.gz"))
    work = tmp_path / "unpacked"
    with tarfile.open(tmp_path / "run.tar.gz") as tf:
        tf.extractall(work)  # our own bundle, files only
    bag = next(work.iterdir())
    meta = json.loads((bag / "bundle.json").read_text())
    (bag / "bundle.json").write_text(json.dumps({**meta, "host_id": "all"}))
    bagit.Bag(str(bag)).save(manifests=True)
    B._retag(bag)
    bad = tmp_path / "bad.tar.gz"
    B._tar(bag, bag.name, bad)
    line = refused(tmp_path, bad, "reserved")
    assert "bad.tar.gz" in line and "'all'" in line and "--host-id" in line and "MYSQLBENCH_HOST_ID" in line
    assert not (tmp_path / "dst/data/hosts/all").exists()


def test_one_host_title_page_reads_as_before():
    from harness.report import runinfo
    facts = {"hosts": ["vm (2 CPUs)"], "profile": "smoke", "measured_from": "", "measured_to": "", "cells": 3,
             "built": "2026-01-01", "imported": []}
    one = runinfo.runinfo_tex(facts)
    assert "RunFirstHost" not in one and "numbers in the text" not in one
    host = {"cpu": [], "threads": [], "kernel": [], "backend": [], "profile": ["smoke"], "cells": 1,
            "from": "", "to": ""}
    two = runinfo.runinfo_tex({**facts, "host_list": [{**host, "host": "lab-a"}, {**host, "host": "lab-b"}]})
    assert r"\RunFirstHost}" in two and "host lab-a's alone" in two and two.rstrip().endswith(r"\RunFirstHost}")
