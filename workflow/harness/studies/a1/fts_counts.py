"""Study A1's keyword-count table as a LaTeX table (it used to be drawn as a figure):
per keyword, in the study's order, the published count, the stand-in's planted count
(on the real OHSUMED corpus: nothing, the engines' counts are the measurement), and
each engine's distinct counts over the builds ('a / b' when builds disagree; bold
where a count differs from the published one); the caption names the corpus, the
builds and the tokenizer settings the servers reported.

    python -m harness fts-counts --gate data/tidy/fts_gate.csv \\
        --load data/tidy/fts_load.csv --out paper/generated/fts_counts.tex
"""
from __future__ import annotations

import argparse
import os

from harness import atomic
from harness.analysis.tidyread import read_csv
from harness.report.latex import GENERATED, tex_escape

GATE_COLUMNS = ("build", "engine", "corpus", "source", "keyword", "rank", "published", "planted", "measured")
ENGINE_ORDER = ("InnoDB", "MyISAM")
TOKENIZER = ("tok_ft_min_word_len", "tok_innodb_ft_min_token_size", "tok_ft_stopword_file",
             "tok_innodb_ft_enable_stopword")


def _distinct(values) -> str:
    vals = sorted({v for v in values if v != ""}, key=lambda v: (float(v) if v.replace(".", "", 1).isdigit() else 0, v))
    return " / ".join(vals)


def counts_tex(gate: list[dict], load: list[dict]) -> str:
    if not gate:
        return GENERATED
    missing = [c for c in GATE_COLUMNS if c not in gate[0]]
    if missing:
        raise ValueError(f"fts_gate.csv: missing column(s) {', '.join(missing)} (rerun fts_dataset_table)")
    real = any(r["source"] == "ohsumed" for r in gate)
    engines = [e for e in ENGINE_ORDER if any(r["engine"] == e for r in gate)]
    engines += sorted({r["engine"] for r in gate} - set(engines))
    keywords = sorted({(int(r["rank"]), r["keyword"], r["published"]) for r in gate})
    src = "OHSUMED" if real else "seeded stand-in"
    rows = ", ".join(sorted({f"{int(r['rows']):,}" for r in load if r.get("rows")})) or "?"
    tok = []
    for col in TOKENIZER:
        vals = sorted({r.get(col, "") for r in load} - {""})
        if vals:
            tok.append(f"{col.removeprefix('tok_')}={'/'.join(vals)}")
    builds = sorted({r["build"] for r in gate})
    caption = (f"The count gate of study A1: the 30 keywords in the study's order, the published count of "
               f"matching rows, the {'corpus' if real else 'stand-in'}'s "
               f"{'(measured)' if real else 'planted'} count and what each engine counted on every build "
               f"(distinct values; bold where a count differs from the published one). Corpus: {src} "
               f"({rows} rows); builds: {', '.join(builds)}; tokenizer: {', '.join(tok) or 'not given'}.")
    nb = {e: len({r["build"] for r in gate if r["engine"] == e}) for e in engines}
    head = ["\\#", "Keyword", "Published", "OHSUMED" if real else "Planted"] + [
        f"{e} ({nb[e]} build{'s' if nb[e] != 1 else ''})" for e in engines]
    lines = [GENERATED, r"\begin{table}[tbp]", r"\centering\scriptsize", r"\caption{%s}" % tex_escape(caption),
             r"\label{tab:fts-counts}", r"\setlength{\tabcolsep}{3pt}",
             r"\begin{tabular}{@{}rlrr%s@{}}" % ("r" * len(engines)), r"\toprule",
             " & ".join(head) + r"\\", r"\midrule"]
    for rank, kw, pub in keywords:
        mine = [r for r in gate if r["keyword"] == kw]
        planted = "measured" if real else (_distinct(r["planted"] for r in mine) or "--")
        cells = []
        for e in engines:
            got = _distinct(r["measured"] for r in mine if r["engine"] == e)
            cells.append(r"\textbf{%s}" % tex_escape(got) if got and got != pub else tex_escape(got or "--"))
        lines.append(" & ".join([str(rank), tex_escape(kw), tex_escape(pub), tex_escape(planted), *cells]) + r"\\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness fts-counts", description=__doc__.splitlines()[0])
    ap.add_argument("--gate", required=True, help="the count gate (data/tidy/fts_gate.csv)")
    ap.add_argument("--load", required=True, help="the load table (data/tidy/fts_load.csv)")
    ap.add_argument("--out", required=True, help="paper/generated/fts_counts.tex")
    a = ap.parse_args(argv)
    for flag, path in (("--gate", a.gate), ("--load", a.load)):
        if not os.path.exists(path):
            ap.error(f"{flag} {path}: not found (run the fts_dataset_table rule)")
    try:
        text = counts_tex(read_csv(a.gate), read_csv(a.load))
    except ValueError as e:
        ap.error(str(e))
    atomic.write_text(a.out, text)
    return 0
