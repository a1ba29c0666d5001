"""Per study, what its section shows after its figures (generated, never typed):

    claims_<study>.tex    ONE verdict table: claim, published, measured with its
                          interval, verdict, a short reason (a table* float)
    findings_<study>.tex  two to four sentences from the same rows: what held, what
                          did not, what this host could not test, each said once
    waits_<study>.tex     the wait rankings the study's wait claims read (a table),
                          empty when the study has no wait claim measured

`study` is the package's NAME (harness.studies); a claim row belongs to the study
whose CODES hold its `study` code.
"""
from __future__ import annotations

import re

from harness.analysis import claims as C
from harness import studies
from harness.report import tables
from harness.report.latex import GENERATED, NA, join_words, tex_escape, tex_tt

# what a `not measurable here` reason starts with -> the words of the findings sentence
MISSING_WORDS = {"cores": "more cores than this host could give mysqld",
                 "build": "a build that lacks the feature",
                 "experiment": "an experiment this profile does not run as the claim needs",
                 "scale": "larger tables than this profile's",
                 "data": "data this run does not have"}
_WAIT = re.compile(r"^(?P<found>.*?); top (?P<n>\d+) of (?P<engine>\S+)(?: \((?P<where>[^)]*)\))?: (?P<list>.*)$")
_WAIT_ITEM = re.compile(r"^(?P<event>.+) (?P<share>\d+%)$")


def study_rows(rows, mod) -> list[dict]:
    codes = set(getattr(mod, "CODES", ()))   # a study without claims of its own has none
    return [r for r in rows if r.get("study") in codes]


def wait_ranking(measured: str):
    """'X ranks 1 of 36 (55%); top 5 of MyISAM (1 table, ...): a 55%, b 25%' ->
    (found, engine, where, [(event, share)]), None if `measured` is no wait ranking
    (harness.analysis.waits writes it so)."""
    m = _WAIT.match(measured or "")
    if not m:
        return None
    items = [i for i in (_WAIT_ITEM.match(x.strip()) for x in m["list"].split(", ")) if i]
    return m["found"], m["engine"], m["where"] or "", [(i["event"], i["share"]) for i in items]


def short_reason(row, level) -> str:
    """A few words: what is missing (not measurable), why inconclusive, or nothing."""
    v, reason = row["verdict"], row.get("reason") or ""
    if v == C.NOT_MEASURABLE:
        what, _, rest = reason.partition(":")
        rest = rest.strip()
        need = re.search(r"at least (\d+) cores", rest) or re.search(r"on (\d+(?: and (?:more than )?\d+)?) cores", rest)
        had = re.search(r"(?:measured|held) on (\d+) cores?", rest)
        if what == "cores" and need:
            return f"needs {need.group(1)} cores" + (f", had {had.group(1)}" if had else "")
        first = rest.split(";")[0]
        return f"{what}: " + (first if len(first) <= 70 else first[:67].rsplit(" ", 1)[0] + " ...")
    if v == C.INCONCLUSIVE:
        return tables.short_reason(row, level)
    if row.get("magnitude"):
        return f"published ratio {row['magnitude']} the interval"
    return ""


def _measured(row) -> str:
    if row.get("ratio"):
        r, lo, hi, cov = (tables._f(row[k]) for k in ("ratio", "ratio_lo", "ratio_hi", "coverage"))
        if not cov:
            return f"{r:.2f} {{\\scriptsize (one repetition: no interval)}}"
        return f"{r:.2f} [{lo:.2f}, {hi:.2f}] {{\\scriptsize {100 * cov:.0f}\\%}}"
    w = wait_ranking(row.get("measured"))
    text = w[0] if w else (row.get("measured") or NA)
    return r"{\scriptsize %s}" % tables.breakable(text)


def _published(row) -> str:
    r = tables._f(row.get("published_ratio"))
    words = r"{\scriptsize %s}" % tex_escape(row.get("published") or NA)
    return f"{r:.2f} {words}" if r is not None else words


def claims_tex(rows, mod, level) -> str:
    """The study's verdict table (a full-width float labelled tab:claims-<NAME>)."""
    mine = study_rows(rows, mod)
    label = f"tab:claims-{mod.NAME}"
    if not mine:
        return GENERATED
    many_builds = len({r["build"] for r in mine if r.get("build")}) > 1
    lines = [GENERATED, r"\begin{table*}[tbp]", r"\centering\footnotesize",
             r"\caption{%s: each published claim, the published value, the measured ratio with its "
             r"interval and that interval's real coverage (or what was measured), and the verdict the "
             r"pipeline computed, with a short reason (the full reasons: Appendix~\ref{app:reasons}).}"
             % tex_escape(mod.TITLE), r"\label{%s}" % label,
             r"\begin{tabularx}{\linewidth}{@{}>{\raggedright\arraybackslash\hsize=1.1\hsize}X"
             r">{\raggedright\arraybackslash\hsize=0.9\hsize}X>{\raggedright\arraybackslash}p{3.4cm}"
             r">{\raggedright\arraybackslash}p{3.6cm}@{}}",
             r"\toprule", r"Claim & Published & Measured [interval] coverage & Verdict (reason)\\", r"\midrule"]
    for r in mine:
        cid = r"{\scriptsize %s}" % tex_tt(r["claim"])
        if many_builds and r.get("build"):
            cid += r" {\scriptsize (%s)}" % tex_tt(r["build"])
        why = short_reason(r, level)
        verdict = tex_escape(r["verdict"]) + (r" {\scriptsize (%s)}" % tex_escape(why) if why else "")
        lines.append(" & ".join([cid, _published(r), _measured(r), verdict]) + r"\\")
    lines += [r"\bottomrule", r"\end{tabularx}", r"\end{table*}", ""]
    return "\n".join(lines)


def _claims_words(rows) -> str:
    """Distinct claims of `rows`, each once, with its builds when it has several."""
    by: dict = {}
    for r in rows:
        by.setdefault(r["claim"], []).append(r.get("build") or "")
    out = []
    for cid, builds in by.items():
        builds = [b for b in builds if b]
        out.append(tex_tt(cid) + (f" ({len(builds)} builds)" if len(builds) > 1 else ""))
    return join_words(out)


def findings_tex(rows, mod) -> str:
    """Two to four sentences: what held, what did not, what could not be decided and
    what this host could not test (each verdict named once for the whole study)."""
    mine = study_rows(rows, mod)
    if not mine:
        return GENERATED + "No claim of this study was evaluated in this profile.\n"
    of = {v: [r for r in mine if r["verdict"] == v] for v in C.VERDICTS}
    n = len({r["claim"] for r in mine})
    held, failed = of[C.REPRODUCED], of[C.NOT_REPRODUCED]
    s = [f"Of this study's {n} claim{'s' if n != 1 else ''} (Table~\\ref{{tab:claims-{mod.NAME}}}), "
         + (f"{_claims_words(held)} held" if held else "none held")
         + (f", and {_claims_words(failed)} did not" if failed else ", and none was refuted") + "."]
    if of[C.INCONCLUSIVE]:
        k = len({r["claim"] for r in of[C.INCONCLUSIVE]})
        s.append(f"{'One claim was' if k == 1 else f'{k} claims were'} inconclusive (the interval "
                 f"straddles the published side, or too few repetitions): {_claims_words(of[C.INCONCLUSIVE])}.")
    nm = of[C.NOT_MEASURABLE]
    if nm:
        groups: dict = {}
        for r in nm:
            groups.setdefault((r.get("reason") or "data:").split(":", 1)[0], []).append(r)
        parts = [f"{_claims_words(g)} need{'s' if len({x['claim'] for x in g}) == 1 else ''} "
                 f"{MISSING_WORDS.get(what, tex_escape(what))}" for what, g in groups.items()]
        s.append("This host could not test the rest: " + "; ".join(parts) + ".")
    if any(wait_ranking(r.get("measured")) for r in mine):
        s.append(f"The wait rankings the wait claims read are in Table~\\ref{{tab:waits-{mod.NAME}}}.")
    return GENERATED + " ".join(s) + "\n"


def waits_tex(rows, mod) -> str:
    """The rankings behind the study's wait claims: per engine's cell, its top waits."""
    seen, blocks = set(), []
    for r in study_rows(rows, mod):
        w = wait_ranking(r.get("measured"))
        if not w or (w[1], w[2]) in seen:
            continue
        seen.add((w[1], w[2]))
        blocks.append(w)
    if not blocks:
        return GENERATED
    lines = [GENERATED, r"\begin{table}[tbp]", r"\centering\footnotesize",
             r"\caption{%s: the top lock and synchronisation waits of each engine's busiest cell, "
             r"the ranking the wait claims of Table~\ref{tab:claims-%s} read (share of the wait time).}"
             % (tex_escape(mod.TITLE), mod.NAME), r"\label{tab:waits-%s}" % mod.NAME,
             r"\begin{tabularx}{\linewidth}{@{}r>{\raggedright\arraybackslash}Xr@{}}", r"\toprule",
             r"Rank & Wait event & Share\\"]
    for _, engine, where, items in blocks:
        lines += [r"\midrule", r"\multicolumn{3}{@{}l}{\textbf{%s} {\scriptsize (%s)}}\\" % (
            tex_escape(engine), tex_escape(where))]
        lines += [f"{i} & {{\\scriptsize {tables.breakable(e)}}} & {tex_escape(sh)}\\\\"
                  for i, (e, sh) in enumerate(items, 1)]
    lines += [r"\bottomrule", r"\end{tabularx}", r"\end{table}", ""]
    return "\n".join(lines)


def names() -> list[str]:
    """The file names outputs() writes (the generated_tex rule's outputs)."""
    return [f"{kind}_{mod.NAME}.tex" for mod in studies.all_studies().values() if hasattr(mod, "NAME")
            for kind in ("claims", "findings", "waits")]


def outputs(rows, level) -> dict:
    """File name -> text, three per study package."""
    out = {}
    for mod in studies.all_studies().values():
        if not hasattr(mod, "NAME"):
            continue
        out[f"claims_{mod.NAME}.tex"] = claims_tex(rows, mod, level)
        out[f"findings_{mod.NAME}.tex"] = findings_tex(rows, mod)
        out[f"waits_{mod.NAME}.tex"] = waits_tex(rows, mod)
    return out
