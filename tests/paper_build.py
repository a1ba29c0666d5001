"""Build the whole paper from recorded real cells, as the pipeline does, in a
scratch directory: tidy + generated tables (test_retidy_fixture.retidy), every
figure of the figures table and the paper's own figures (the R scripts), then
latexmk. Used by tests/unit/test_paper_build.py; run directly to get a PDF to read:

    .venv/bin/python tests/paper_build.py OUT_DIR [STUDY ...]   (OUT_DIR/paper/main.pdf)

With STUDY names (harness.studies: a1, a2_a3, aa, b, c) the paper is built from those
studies' cells only, as a profile with every other study's experiments `enabled: false`
would leave them (subset_raw).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))

import harness.studies  # noqa: E402,F401  (registers the studies: run directly, no conftest)
from harness import report  # noqa: E402
from harness.report import published  # noqa: E402
from test_retidy_fixture import RAW, retidy  # noqa: E402


def rscript(script: str, *args) -> subprocess.CompletedProcess:
    """`script`: a repository path (a figure's `path`) or a shared script of workflow/R/."""
    path = ROOT / script if "/" in script else ROOT / "workflow" / "R" / script
    return subprocess.run(["Rscript", str(path), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def study_of_experiments(config: dict) -> dict:
    """{experiment: the study package (harness.studies NAME) whose CODES hold its `study:` code}."""
    from harness import studies
    by_code = {c: name for name, mod in studies.all_studies().items() for c in mod.CODES}
    return {e: by_code[spec["study"]] for e, spec in config["experiments"].items()}


# the A/A controls' cells of a later smoke run (tests/fixtures/raw_aa/README.md): RAW has none
RAW_AA = ROOT / "tests" / "fixtures" / "raw_aa"


def subset_raw(dest: Path, keep, raw: Path = RAW, more=(RAW_AA,)) -> Path:
    """dest: a copy of the recorded run `raw` as a profile that runs only the studies `keep`
    (harness.studies names) would have left it: the other studies' experiments `enabled:
    false` in config.resolved.yaml and their cells absent (A1's datasets with A1). The
    experiments `raw` has no cells of are taken from the runs `more` where they have some."""
    import yaml
    dest, keep = Path(dest), set(keep)
    config = yaml.safe_load((raw / "config.resolved.yaml").read_text())
    owner = study_of_experiments(config)
    unknown = keep - set(owner.values())
    assert not unknown, f"no such study in {raw}: {sorted(unknown)}"
    dest.mkdir(parents=True, exist_ok=True)
    for f in raw.iterdir():
        if f.is_file() and f.name != "config.resolved.yaml":
            shutil.copy(f, dest / f.name)
    for source in (raw, *more):
        for exp_dir in source.glob("*/*"):
            to = dest / exp_dir.parent.name / exp_dir.name
            if exp_dir.is_dir() and owner.get(exp_dir.name) in keep and not to.exists():
                shutil.copytree(exp_dir, to)
    if "a1" in keep and (raw / "datasets").is_dir():
        shutil.copytree(raw / "datasets", dest / "datasets")
    for e, spec in config["experiments"].items():
        if owner[e] not in keep:
            spec["enabled"] = False
    (dest / "config.resolved.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def _experiments(raw: Path) -> list[str]:
    return sorted(d.name for d in raw.glob("*/*") if d.is_dir())


def draw_figures(tidy: Path, generated: Path, figures: Path, names: list[str], raw: Path = RAW,
                 host: str = "", others=()) -> dict:
    """Every figure the pipeline would draw -> its Rscript result (2 at a time). `others`:
    (host id, tidy dir, raw dir) of more hosts, passed as the figure rules do (report.host_args)."""
    figures.mkdir(parents=True, exist_ok=True)
    (tidy / report.FACTOR_TABLE).write_text(report.factor_table_csv())
    (tidy / published.PUBLISHED_TABLE).write_text(published.published_csv())  # as rule published_table
    experiments = _experiments(raw)
    more = [(h, str(t), _experiments(r)) for h, t, r in others]
    jobs = {n: (report.FIGURES[n]["path"], *report.host_args(n, host, more, experiments),
                *report.figure_inputs(n, experiments, str(tidy)), figures / f"{n}.pdf") for n in names}
    for n, spec in report.PAPER_FIGURES.items():
        jobs[n] = (spec["script"], generated / Path(spec["input"]).name, figures / f"{n}.pdf")
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(jobs, pool.map(lambda a: rscript(*a), jobs.values())))
    return done


def build(out: Path, raw: Path = RAW, host: str = "", others=()) -> dict:
    """out/{tidy,generated} from the cells, out/figures/*.pdf, out/paper/main.pdf
    (paper/main.tex's layout: generated/ beside main.tex, ../figures/). `others`: (host id,
    raw dir) of more hosts (a several-host paper, as a replot of raw_host all): each tidied
    apart into out/hosts/<id>/tidy and judged on its own beside `raw`'s host `host`."""
    out = Path(out)
    done = retidy(raw, out)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    host_args, raw_args, fig_hosts = ["--host", host], ["--host", host], []
    for h, other in others:
        fig_hosts.append((h, retidy(other, out / 'hosts' / h)['tidy'], other))
        host_args += ["--host-tidy", f"{h}={fig_hosts[-1][1]}"]
        raw_args += ["--host-raw", f"{h}={other}"]
    if others:   # the report again, with every host
        rep = subprocess.run([sys.executable, "-m", "harness", "report", "--tidy-dir", str(done["tidy"]), "--config",
                              str(done["tidy"] / "config.resolved.yaml"), "--out", str(done["generated"]), *host_args],
                             env=env, capture_output=True, text=True)
        assert rep.returncode == 0, rep.stderr
    paper = out / "paper"
    if paper.exists():
        shutil.rmtree(paper)
    # the paper's sources only: a checkout that built its own paper also holds main.aux,
    # main.fdb_latexmk, ... whose state would mislead latexmk here
    shutil.copytree(ROOT / "paper", paper, ignore=lambda d, names: [
        n for n in names if Path(d) == ROOT / "paper" and n not in ("main.tex", "references.bib")])
    shutil.copytree(done["generated"], paper / "generated")
    info = subprocess.run([sys.executable, "-m", "harness", "runinfo", "write", "--config",
                           str(done["tidy"] / "config.resolved.yaml"), "--raw-dir", str(raw), *raw_args,
                           "--out", str(paper / "generated" / "runinfo.tex")],
                          env=env, capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    art = subprocess.run([sys.executable, "-m", "harness", "artifact", "--config",
                          str(done["tidy"] / "config.resolved.yaml"), "--claims",
                          str(paper / "generated" / "claims.csv"), "--root", str(ROOT),
                          "--out", str(paper / "generated" / "artifact.tex")],
                         env=env, capture_output=True, text=True)
    assert art.returncode == 0, art.stderr
    if (done["tidy"] / "fts_gate.csv").exists():   # as study A1's rule fts_counts_table
        counts = subprocess.run([sys.executable, "-m", "harness", "fts-counts", "--gate",
                                 str(done["tidy"] / "fts_gate.csv"), "--load", str(done["tidy"] / "fts_load.csv"),
                                 "--out", str(paper / "generated" / "fts_counts.tex")],
                                env=env, capture_output=True, text=True)
        assert counts.returncode == 0, counts.stderr
    drawn = draw_figures(done["tidy"], paper / "generated", out / "figures", done["figures"], raw, host, fig_hosts)
    failed = {n: p.stderr[-500:] for n, p in drawn.items() if p.returncode != 0}
    latex = None
    if not failed:
        latex = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
                               cwd=paper, capture_output=True, text=True, timeout=600)
    return {**done, "paper": paper, "figure_dir": out / "figures", "drawn": drawn,
            "failed": failed, "latex": latex}


def _pdf_text(path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def claims_figure_matches(rows, figure_pdf, paper_pdf):
    """The claims figure draws exactly claims.csv's rows that are not *not measurable here*
    (a verdict word each, the legend's three keys once), and the paper's caption counts the
    others by what they lack. Returns the caption's flattened text."""
    text = _pdf_text(figure_pdf)
    squeezed = re.sub(r"\s+", "", text)   # pdftotext may split a label at a kern
    drawn = [r for r in rows if r["verdict"] != "not measurable here"]
    gone = [r for r in rows if r["verdict"] == "not measurable here"]
    assert gone, "the fixture has rows not measurable here: the test would not test"
    for r in drawn:
        assert r["claim"] in squeezed, r["claim"]
    names = {r["claim"] for r in rows}
    for c in names - {r["claim"] for r in drawn}:   # a claim with no drawn row is not drawn
        if not any(c in n for n in names - {c}):   # (unless its name is part of a longer one)
            assert c not in squeezed, c
    words = re.findall(r"n/m|not measurable here|not reproduced|inconclusive|(?<!not )reproduced", text)
    assert "n/m" not in words and "not measurable here" not in words, words
    for v in ("reproduced", "not reproduced", "inconclusive"):   # + the legend's key
        assert words.count(v) == sum(r["verdict"] == v for r in drawn) + 1, (v, words.count(v))
    paper = " ".join(_pdf_text(paper_pdf).split())
    caption = paper[paper.index("Not drawn: "):][:600]
    per_host = [r for r in gone if r.get("host") != "all"]
    assert caption.startswith(f"Not drawn: {len(per_host)} "), caption
    classes = {}
    for r in per_host:
        k = r["reason"].split(":", 1)[0]
        classes[k] = classes.get(k, 0) + 1
    counts = [int(n) for n in re.findall(r"\((\d+)\)", caption[:caption.index(";")])]
    assert sorted(counts) == sorted(classes.values()), (caption, classes)
    return caption


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: tests/paper_build.py OUT_DIR [STUDY ...]")
    out = Path(sys.argv[1])
    raw = subset_raw(out / "raw", sys.argv[2:]) if sys.argv[2:] else RAW
    r = build(out, raw)
    if r["failed"]:
        sys.exit(f"figures failed: {r['failed']}")
    print(r["paper"] / "main.pdf" if r["latex"].returncode == 0 else r["latex"].stdout[-3000:])
    os._exit(0 if r["latex"] and r["latex"].returncode == 0 else 1)
