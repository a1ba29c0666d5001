"""REVIEWER 4: `snakemake --report` (./artifact report) gives one self-contained
HTML with every figure grouped by study, the claims figure and table, and the
paper; it opens in headless Chromium (a screenshot is taken) and carries every
figure the paper draws.

The outputs come from the recorded real cells (tests/paper_build.py) laid out
as the pipeline lays them out, in a scratch copy of the workflow; the report
only collects files, it runs no rule.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import paper_build

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.skipif(not CHROMIUM, reason="chromium not installed (apt-get install chromium)"),
    pytest.mark.skipif(importlib.util.find_spec("pygments") is None,
                       reason="snakemake --report needs the pygments package in the venv"),
    pytest.mark.skipif(not all(map(shutil.which, ("Rscript", "latexmk"))), reason="needs Rscript, latexmk"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    work = tmp_path_factory.mktemp("report")
    for name in ("Snakefile", "workflow", "config", "profiles"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    built = paper_build.build(work)
    assert not built["failed"] and built["latex"].returncode == 0
    # the rule verdict_power's output, as a run leaves it (the report collects files; a missing
    # input of generated_tex would leave its outputs, claims.csv among them, out of the report)
    import yaml

    from harness.analysis.claimrules import setting
    from harness.report import method
    # smoke's claims.level (the recorded run's resolved config), in the file name the rule gives it
    level = f"{setting(yaml.safe_load((paper_build.RAW / 'config.resolved.yaml').read_text()), 'level'):g}"
    subprocess.run([sys.executable, str(ROOT / "bench" / "verdict_power.py"), "--trials", "50", "--levels", level,
                    "--settings", *method.power_settings().split(), "--jobs", "1",
                    "--out", str(work / "data" / "power" / f"verdict_power_{level}.csv")],
                   check=True, capture_output=True, text=True, timeout=300)
    p = subprocess.run([str(SNAKEMAKE), "--report", "report.html", "--configfile", "config/smoke.yaml"],
                       cwd=work, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert p.returncode == 0, p.stderr[-3000:]
    return {"dir": work, "html": work / "report.html", "figures": built["figures"]}


def test_report_has_every_figure_grouped_by_study(report):
    html = report["html"].read_text(errors="replace")
    found = set(re.findall(r"figures/([a-z0-9_]+)\.pdf", html))
    assert found == set(report["figures"]) | {"claims"}
    from harness import studies
    for mod in studies.all_studies().values():
        if set(mod.FIGURES) & found:
            assert mod.TITLE in html, mod.TITLE           # the study's group
    assert "claims.csv" in html and "main.pdf" in html


def test_report_opens_in_headless_chromium(report):
    shot = report["dir"] / "report.png"
    url = report["html"].as_uri()
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=8000"]
    subprocess.run(base + ["--window-size=1400,1000", f"--screenshot={shot}", url],
                   capture_output=True, text=True, timeout=120, check=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000   # a rendered page, not a blank one
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    for category in ("Figures", "Claims", "Paper"):
        assert category in dom, category                      # the rendered navigation
