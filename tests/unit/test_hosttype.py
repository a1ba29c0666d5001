"""harness.analysis.hosttype: an experiment measured on two CPU models is refused in one
line, before anything is tidied; one CPU model passes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness.analysis import hosttype
from harness.analysis import tidywrite


def manifest(cell: str, model: str, host: str) -> dict:
    return {"cell": cell, "host": {"cpu_model": model, "hostname": host}}


def test_two_cpu_models_are_refused_in_one_line():
    cells = [Path("data/raw/A3/point_select/a_r1"), Path("data/raw/A3/point_select/a_r2")]
    with pytest.raises(hosttype.MixedHostsError) as e:
        hosttype.refuse_mixed(cells, [manifest("a_r1", "Xeon X", "n1"), manifest("a_r2", "EPYC Y", "n7")])
    msg = str(e.value)
    assert "\n" not in msg and "point_select" in msg and "'Xeon X'" in msg and "'EPYC Y'" in msg
    assert "a_r2 on n7" in msg and "identical nodes" in msg


def test_tidy_refuses_before_writing(tmp_path):
    """The check runs inside tidy, on the real manifests, before any output is written."""
    cells = []
    for i, model in enumerate(("Xeon X", "EPYC Y"), 1):
        c = tmp_path / "raw/A3/point_select" / f"cell_r{i}"
        c.mkdir(parents=True)
        (c / "manifest.json").write_text(json.dumps({**manifest(c.name, model, f"n{i}"), "schema": 2,
                                                     "kind": "throughput"}))
        cells.append(c)
    out = tmp_path / "tidy"
    with pytest.raises(hosttype.MixedHostsError):
        tidywrite.tidy(cells, out / "r.csv", out / "s.csv", out / "p.json", 0.05, "test")
    assert not out.exists()
