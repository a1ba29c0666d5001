"""`./artifact claims` reads in an 80-column terminal (harness.report.claimlines), on the claims
of a recorded real run (tests/fixtures/retidy/expected/claims.csv):

- each row in at most two lines of 80 columns, its first line its id and build (so
  `grep ^C1-ARCHIVE-vs-InnoDB` tells the builds apart), its verdict beside them;
- where the rule judges only a direction (`> 1`), the measured and the published magnitude
  beside the verdict (C3's "about 80% saved" read *reproduced* at any saving);
- `--long`: the whole row on one line, as before;
- the paper's claims table says "direction only" by such a verdict.
"""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report import claimlines, studytables, tables

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "retidy" / "expected" / "claims.csv"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with open(RECORDED, newline="") as f:
        return list(csv.DictReader(f))


def rows_of(rows, claim):
    return [r for r in rows if r["claim"] == claim]


def test_every_line_fits_80_columns_and_every_row_starts_with_its_id_and_build(rows):
    lines = claimlines.render(rows)
    assert max(len(line) for line in lines) <= claimlines.WIDTH, max(lines, key=len)
    heads = [line for line in lines if not line.startswith(" ")]
    assert len(heads) == len(rows)
    for row, head in zip(rows, heads):
        label = "  ".join(x for x in (row["claim"], row["build"]) if x)
        assert head == label or head.startswith(label + "  "), head
    assert len(lines) <= 2 * len(rows)


def test_rows_repeated_per_build_carry_the_build(rows):
    lines = claimlines.render(rows)
    per_build = [line for line in lines if line.startswith("C1-ARCHIVE-vs-InnoDB ")]
    assert len(per_build) == 2, per_build
    assert {line.split()[1] for line in per_build} == {"mysql-5.6.24", "mariadb-10.11"}


def test_a_direction_rule_shows_the_measured_and_published_magnitude_by_its_verdict(rows):
    c3 = rows_of(rows, "C3-ARCHIVE-saves-80pct-identical-rows")[1]   # mariadb: 154x against 5x
    decided = {**c3, "verdict": "reproduced", "ratio_lo": "120", "ratio_hi": "190", "coverage": "0.9",
               "reason": "interval wholly above 1"}
    head, detail = claimlines.short_lines(decided, several_hosts=False)
    assert head == "C3-ARCHIVE-saves-80pct-identical-rows  mariadb-10.11  reproduced"
    assert detail.strip().startswith("154× [120, 190] vs published 5×, rule > 1: the direction only"), detail
    assert tables.direction_only(decided)
    # a band (C1: a stated factor) judges the magnitude itself: no such note
    band = rows_of(rows, "C1-ARCHIVE-vs-InnoDB")[0]
    assert not tables.direction_only(band)
    assert "direction only" not in claimlines.short_lines(band, False)[1]
    assert "rule in [2, 3.13]" in claimlines.short_lines(band, False)[1]


def test_a_claim_not_measurable_here_says_why(rows):
    row = rows_of(rows, "A1-FTS-innodb-8-cores")[0]
    assert claimlines.short_lines(row, False) == [
        "A1-FTS-innodb-8-cores  mysql-5.6.24  not measurable here",
        "    cores: the published factor is on 8 cores",
    ]


def test_a_long_line_is_cut_with_an_ellipsis_and_long_gives_it_whole(rows):
    row = next(r for r in rows if r["verdict"] == "not measurable here" and len(r["reason"]) > 200)
    short = claimlines.short_lines(row, False)
    assert len(short[1]) <= claimlines.WIDTH and short[1].endswith("…")
    long = claimlines.render([row], long=True)
    assert len(long) == 1 and row["reason"] in long[0] and row["measured"] in long[0]


def test_the_verdict_moves_down_where_id_build_and_verdict_do_not_fit():
    row = {"claim": "B4-single-table-bottleneck-point-select-InnoDB", "build": "mysql-5.6.24",
           "verdict": "not measurable here", "reason": "cores: needs 4 hardware threads; more"}
    assert claimlines.short_lines(row, False) == [
        "B4-single-table-bottleneck-point-select-InnoDB  mysql-5.6.24",
        "    not measurable here: cores: needs 4 hardware threads",
    ]


def test_several_hosts_name_the_host(rows):
    two = [{**r, "host": h} for h in ("h-1", "h-2") for r in rows[:3]]
    heads = [line for line in claimlines.render(two) if not line.startswith(" ")]
    assert [h.split("  ")[-2] for h in heads] == ["host h-1"] * 3 + ["host h-2"] * 3


def test_the_paper_tables_say_direction_only_by_such_a_verdict(rows):
    tex = tables.claims_tex(rows, 0.9)
    c3 = [line for line in tex.splitlines() if "80pct" in line]
    assert c3 and all("direction only" in line for line in c3), c3
    c1 = [line for line in tex.splitlines() if "ARCHIVE-\\allowbreak{}vs-\\allowbreak{}InnoDB" in line]
    assert c1 and not any("direction only" in line for line in c1)
    c3_row = rows_of(rows, "C3-ARCHIVE-saves-80pct-identical-rows")[0]
    assert "direction only" in studytables.short_reason(c3_row, 0.9)


def test_the_cli_prints_80_columns_and_long_whole_rows(rows):
    env = {"PYTHONPATH": str(ROOT / "workflow"), "PATH": "/usr/bin:/bin"}
    short = subprocess.run([sys.executable, "-m", "harness", "claims-print", str(RECORDED)],
                           capture_output=True, text=True, env=env, check=True)
    assert max(map(len, short.stdout.splitlines())) <= 80
    assert "not measurable here" in short.stderr.splitlines()[-1]
    full = subprocess.run([sys.executable, "-m", "harness", "claims-print", "--long", str(RECORDED)],
                          capture_output=True, text=True, env=env, check=True)
    assert len(full.stdout.splitlines()) == len(rows)
