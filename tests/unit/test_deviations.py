"""The generated deviations table and the multiplicity sentence, on the recorded real
cells (tests/fixtures/raw, through test_retidy_fixture.retidy, as the pipeline runs them).

Every expected value is computed here from the fixture's own files (its resolved config,
the tidy CSVs the harness wrote, the A1 dataset tables and claims.csv), never typed in:
the durability, Performance Schema instruments, row counts, key distribution, buffers and
corpus statistics rows, and the number of claim rows a run at claims.level would decide
by chance alone.
"""
from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.report import method
from harness.studies.a1 import corpus_stats, fts_export
from test_retidy_fixture import RAW, ROOT, retidy


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return retidy(RAW, tmp_path_factory.mktemp("deviations"))


def config():
    return yaml.safe_load((RAW / "config.resolved.yaml").read_text())


def read(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def rows_of(tex: str) -> dict:
    """{aspect: (the studies, this artifact)} of deviations.tex."""
    out = {}
    for line in tex.splitlines():
        if line.endswith("\\\\") and line.count(" & ") == 2:
            a, s, h = line[:-2].split(" & ")
            out[a] = (s, h)
    return out


def tex_int(n) -> str:
    return f"{round(n):,}".replace(",", "{,}")


def cells(tidy: Path, column: str) -> Counter:
    """Cells (distinct key columns before 'rep') of every experiment's runs CSV by `column`."""
    out = Counter()
    for p in tidy.glob("*.csv"):
        if (tidy / f"{p.stem}_summary.csv").exists():
            runs = read(p)
            if runs and "rep" in runs[0] and column in runs[0]:
                keys = list(runs[0])[:list(runs[0]).index("rep")]
                seen = {tuple(r[k] for k in keys): r[column] for r in runs}
                out.update(v for v in seen.values() if v)
    return out


@pytest.fixture(scope="module")
def table(real):
    return rows_of((real["generated"] / "deviations.tex").read_text())


def test_placement_row_is_the_recorded_cells_placement(real, table):
    """Study A held mysqld to its cores with taskset on a bare host; the artifact's side is what
    the recorded cells' manifests say (their tidy provenance), not a fixed sentence."""
    import json
    studied, ours = table["cores given to mysqld"]
    assert "taskset" in studied and "disjoint CPUs" in ours
    prov = [json.loads(p.read_text()) for p in real["tidy"].glob("*_provenance.json")]
    backends = {pl["backend"] for p in prov for pl in p.get("placement") or []}
    assert backends and all(f"{b} backend" in ours for b in backends), (backends, ours)


def test_the_table_has_every_row_the_fidelity_review_asks_for(table):
    for aspect in ("log flush per commit", "durability (log flush per commit)", "Performance Schema instruments",
                   "rows per table", "rows inserted", "key distribution", "buffers", "corpus statistics (A1)"):
        assert aspect in table, aspect
        assert table[aspect][1] not in ("n/a", ""), aspect   # computed, not left open


def test_row_counts_come_from_the_resolved_config(table):
    exps = config()["experiments"]
    sbtest = Counter(s["table_size"] for s in exps.values() if s.get("kind") == "throughput"
                     and s.get("dataset") == "sbtest")
    steps = {s["rows"] for s in exps.values() if s.get("kind") == "steps"}
    # the fixture measured no simple_ranges_scale (20,000 rows): only the sizes of measured experiments
    assert table["rows per table"][1] == f"{tex_int(1000)} (profile {config()['profile']})"
    assert 1000 in sbtest and 20000 in sbtest
    assert table["rows inserted"][1].startswith(tex_int(steps.pop()))
    assert "3,000,000" in table["rows inserted"][0]


def test_key_distribution_is_the_configs_rand_type(table):
    sb = config()["sysbench"]
    assert table["key distribution"][1].startswith(r"\texttt{-{}-rand-type=%s} on every run" % sb["rand_type"])
    assert f"seed {sb['seed']}" in table["key distribution"][1]
    assert "special" in table["key distribution"][0]


def test_key_distribution_follows_a_changed_config(real, tmp_path):
    tidy = tmp_path / "tidy"
    shutil.copytree(real["tidy"], tidy)
    cfg = config()
    cfg["sysbench"]["rand_type"] = "pareto"
    (tidy / "config.resolved.yaml").write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    p = subprocess.run([sys.executable, "-m", "harness", "report", "--tidy-dir", str(tidy), "--config",
                        str(tidy / "config.resolved.yaml"), "--out", str(tmp_path / "gen")],
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert rows_of((tmp_path / "gen" / "deviations.tex").read_text())["key distribution"][1].startswith(
        r"\texttt{-{}-rand-type=pareto}")


def test_pfs_instruments_and_durability_count_the_cells(real, table):
    pfs = cells(real["tidy"], "pfs")
    assert pfs["on"] and pfs["off"]
    here = table["Performance Schema instruments"][1]
    assert here.startswith(f"every wait instrument timed (wait/\\%) in {pfs['on']} of {sum(pfs.values())} cells")
    assert f"PFS off in {pfs['off']} (" in here
    dur = cells(real["tidy"], "durability")
    assert dur["relaxed"], "the fixture's test_drive runs the flush relaxed"
    flush = table["log flush per commit"][1]
    assert flush.startswith(f"a flush per commit (innodb\\_flush\\_log\\_at\\_trx\\_commit=1) in "
                            f"{dur['per_commit']} of {sum(dur.values())} cells")
    assert f"relaxed (2; PostgreSQL's synchronous\\_commit=off) in {dur['relaxed']} (" in flush


def test_buffers_are_what_the_servers_reported(real, table):
    got = table["buffers"][1]
    for ds, exp in (("fulltext", "fts"), ("sbtest", "point_select")):
        runs = read(real["tidy"] / f"{exp}.csv")
        for engine, what in (("InnoDB", "buffer pool"), ("MyISAM", "key cache")):
            sizes = {int(r["buffer_bytes"]) for r in runs if r["engine"] == engine}
            assert len(sizes) == 1, (exp, engine, sizes)
            part = got.split(r"\texttt{%s} tables: " % ds)[1].split(";")[0]
            assert f"{what} {sizes.pop() / 2**20:,.0f} MB" in part
    assert "fixed my.cnf values, whatever the data" in got.split(r"\texttt{sbtest}")[0]
    assert "sized from the data" in got.split(r"\texttt{sbtest}")[1]


def test_corpus_statistics_from_the_dataset_tables(real, table):
    load, gate = read(real["tidy"] / "fts_load.csv"), read(real["tidy"] / "fts_gate.csv")
    docs = {int(r["rows"]) for r in load}
    assert len(docs) == 1
    docs = docs.pop()
    measured = [int(r["measured"]) for r in gate]
    mean = sum(measured) / len(measured)
    published = {}
    with open(ROOT / "workflow/harness/studies/a1/fts_keywords.csv", newline="") as f:
        published = {r["keyword"]: int(r["rows"]) for r in csv.DictReader(f)}
    pub_mean = sum(published.values()) / 30
    pub_density = 1000 * pub_mean / 348566
    studied, here = table["corpus statistics (A1)"]
    assert "OHSUMED: 348,566 documents" in studied and f"{pub_mean:.1f} postings per keyword" in studied
    assert f"{pub_density:.2f} per 1,000 documents" in studied
    assert f"{docs:,} documents" in here and f"{mean:.1f} postings per keyword" in here
    density = 1000 * mean / docs
    assert f"{density:.2f} per 1,000 documents ({density / pub_density:.1f}$\\times$ OHSUMED's density)" in here
    vocab = {r["vocabulary"] for r in load}
    assert len(vocab) == 1 and f"; {int(vocab.pop()):,} generated words plus surnames" in here


def test_corpus_row_without_a_fulltext_dataset():
    assert corpus_stats.artifact_text([], []) is None
    row = fts_export.load_row({"build": "b", "engine": "InnoDB", "corpus": "ohsumed", "load": {"kind": "ohsumed"},
                               "corpus_manifest": {"shape": {"vocabulary_types": 5}}})
    assert row["vocabulary"] == ""   # the real corpus's terms are not counted


def multiplicity_macro(generated: Path) -> str:
    tex = (generated / "macros.tex").read_text()
    m = re.search(r"\\newcommand\{\\Multiplicity\}\{(.*)\}\s*$", tex, re.M)
    assert m, "no \\Multiplicity macro"
    return m.group(1)


def test_multiplicity_follows_from_claims_csv(real):
    rows = read(real["generated"] / "claims.csv")
    level = config()["claims"]["level"]
    n = sum(1 for r in rows if r["threshold"] and r["side"] in ("above", "below", "within"))
    assert 0 < n < len(rows)
    text = multiplicity_macro(real["generated"])
    assert f"the {n} claim rows an interval decides" in text
    assert f"about {n * (1 - level) / 2:.1f} of the {n} would be reproduced by chance alone" in text
    assert f"(1 - {level:g})/2 = {(1 - level) / 2:g}" in text


def test_multiplicity_counts_only_rows_with_a_threshold_and_side():
    row = {"threshold": "1", "side": "above"}
    assert "the 2 claim rows" in method.multiplicity([row, row, {"threshold": "", "side": ""}], 0.9)
    assert "about 0.1 of the 2" in method.multiplicity([row, row], 0.9)
    assert "about 0.2 of the 2" in method.multiplicity([row, row], 0.8)


def test_cores_row_names_the_experiments_whose_core_counts_differ(real):
    """A profile's experiments take `cores: auto`, `max` or `study`, so their core counts differ
    on a big host; the row gives the most common set bare and names the experiments of the
    others. The recorded run's cells, read from its tidy files, with two experiments' core
    counts set as a 64-CPU host's plan would give them."""
    from harness.analysis import tidyread
    from harness.report import deviations
    tidy = tidyread.load(real["tidy"], config())
    assert deviations.artifact_value(tidy, "cores").startswith("1 (mysqld and sysbench")   # as recorded
    moved = {"build_compare": ("16", "24", "32"), "point_select": ("4", "32")}
    for exp, counts in moved.items():
        cells = tidy.cells(exp)
        assert cells, exp
        for i, c in enumerate(cells):
            c.key["cores"] = counts[i % len(counts)]
    text = deviations.artifact_value(tidy, "cores")
    from harness.report.latex import tex_tt
    assert text.startswith(f"1; 4 and 32 in {tex_tt('point_select')}; 16, 24 and 32 in {tex_tt('build_compare')} ("), text
