"""Per study, what its section shows after its figures (generated, never typed):

    claims_<study>.tex    ONE verdict table: claim, published, measured with its
                          interval, verdict, a short reason (a table* float)
    findings_<study>.tex  two to four sentences from the same rows: what held, what
                          did not, what this host could not test, each said once
    waits_<study>.tex     the wait rankings the study's wait claims read (a table),
                          empty when the study has no wait claim measured

`study` is the package's NAME (harness.studies); a claim row belongs to the study
whose CLAIMS hold it, or whose CODES hold its `study` code.
"""
from __future__ import annotations

import re

from harness.analysis import claims as C
from harness import registry as studies
from harness.report import tables
from harness.report.latex import GENERATED, NA, join_words, tex_escape, tex_tt

# what a `not measurable here` reason starts with -> the words of the findings sentence
MISSING_WORDS = {"cores": "more cores than this host could give mysqld",
                 "build": "a build this run does not have",
                 "experiment": "an experiment this profile does not run as the claim needs",
                 "scale": "larger tables than this profile's",
                 "data": "data this run does not have",
                 "host": "a host set-up the artifact does not create"}
_WAIT = re.compile(r"^(?P<found>.*?); top (?P<n>\d+) of (?P<engine>\S+)(?: \((?P<where>[^)]*)\))?: (?P<list>.*)$")
_WAIT_ITEM = re.compile(r"^(?P<event>.+) (?P<share>\d+%)$")


def study_rows(rows, mod) -> list[dict]:
    """The rows of the study's claims: its CLAIMS' ids, or a row whose study code is one of
    its CODES (study C's claims C2-C4 read experiments of code C1)."""
    codes = set(getattr(mod, "CODES", ()))   # a study without claims of its own has none
    ids = {c.id for c in getattr(mod, "CLAIMS", ())}
    return [r for r in rows if r.get("claim") in ids or r.get("study") in codes]


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
    """A few words: why inconclusive, where the published ratio lies, or nothing (a claim
    not measurable here is listed under what it lacks: not_measurable_groups)."""
    v = row["verdict"]
    if v == C.NOT_MEASURABLE:
        return need_detail(row) or (row.get("reason") or "").split(":", 1)[0]
    direction = "direction only" if tables.direction_only(row) and row.get("ratio") else ""
    if v == C.INCONCLUSIVE:
        return "; ".join(w for w in (tables.short_reason(row, level), direction) if w)
    if row.get("magnitude"):
        return "; ".join(w for w in (direction, f"published ratio {row['magnitude']} the interval") if w)
    return direction


def _cut(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[:n - 3].rsplit(" ", 1)[0] + " ..."


def need_detail(row) -> str:
    """What one claim not measurable here needs, in a few words ('>=16 cores',
    '4 and 8 cores', 'tables of >=1,940 rows', 'no mdl_hash data')."""
    what, _, rest = (row.get("reason") or "").partition(":")
    rest = rest.strip()
    if what == "cores":
        m = re.search(r"at least (\d+) (?:hardware threads|cores)", rest)
        if m:
            return f">={m.group(1)} cores"
        m = re.search(r"on (\d+ and (?:more than )?\d+) cores", rest) or re.search(r"on (\d+) cores", rest)
        if m:
            return f"{m.group(1)} cores"
    if what == "scale":
        m = re.search(r"tables of at least ([\d,]+) rows", rest)
        if m:
            return f"tables of >={m.group(1)} rows"
    return _cut(rest.split(";")[0])


def _had_cores(rows) -> str:
    """' (mysqld had 1 core here)' when the rows agree on the cores mysqld had, else ''."""
    had = {m.group(1) for r in rows
           for m in [re.search(r"(?:measured|held) on (\d+) cores?", r.get("reason") or "")] if m}
    if len(had) != 1:
        return ""
    (n,) = had
    return f" (mysqld had {n} core{'' if n == '1' else 's'} here)"


def not_measurable_groups(rows) -> list[tuple[str, list[tuple[str, str]]]]:
    """The claims not measurable here, grouped by what is missing (the reason's head):
    [(the group's words, [(claim, what it needs), ...])], each claim once per group."""
    groups: dict = {}
    for r in rows:
        if r["verdict"] == C.NOT_MEASURABLE:
            groups.setdefault((r.get("reason") or "data:").split(":", 1)[0], []).append(r)
    out = []
    for what, g in groups.items():
        words = MISSING_WORDS.get(what, what) + (_had_cores(g) if what == "cores" else "")
        items: dict = {}
        for r in g:
            items.setdefault(r["claim"], need_detail(r))
        out.append((words, list(items.items())))
    return out


def _primary(rows) -> str:
    """The build most of the rows (of every study) name: in the caption, not per row."""
    builds = [r["build"] for r in rows if r.get("build")]
    return max(sorted(set(builds)), key=builds.count) if builds else ""


def _measured(row) -> str:
    if row.get("ratio"):
        r, lo, hi, cov = (tables._f(row[k]) for k in ("ratio", "ratio_lo", "ratio_hi", "coverage"))
        if not cov:
            return f"{r:.2f} (no interval)"
        return f"{r:.2f} [{lo:.2f}, {hi:.2f}] {100 * cov:.0f}\\%"
    w = wait_ranking(row.get("measured"))
    text = w[0] if w else (row.get("measured") or NA)
    return tables.breakable(text)


def _published(row) -> str:
    r = tables._f(row.get("published_ratio"))
    words = tex_escape(row.get("published") or NA)
    return f"{r:.2f}: {words}" if r is not None else words


def _wide(text: str) -> str:
    """A row spanning the table's four columns."""
    return r"\multicolumn{4}{@{}>{\raggedright\arraybackslash}p{\linewidth}@{}}{%s}\\" % text


def claims_tex(rows, mod, level) -> str:
    """The study's verdict table (a full-width float labelled tab:claims-<NAME>): a row per
    claim measured (decided or inconclusive); below, the claims not measurable here, said
    once, grouped by what is missing, each claim with what it needs."""
    mine = study_rows(rows, mod)
    label = f"tab:claims-{mod.NAME}"
    if not mine:
        return GENERATED
    primary = _primary(rows)
    shown = [r for r in mine if r["verdict"] != C.NOT_MEASURABLE]
    groups = not_measurable_groups(mine)
    lines = [GENERATED, r"\begin{table*}[tbp]", r"\centering\scriptsize",
             r"\caption{%s, the verdicts: each claim measured, the published value, the measured ratio "
             r"[interval] and that interval's real coverage (or what was measured), the verdict and a "
             r"short reason%s%s (full reasons: Appendix~\ref{app:reasons}).}"
             % (tex_escape(mod.TITLE),
                "; then the claims this host could not measure, by what is missing" if groups else "",
                f"; build {tex_tt(primary)} unless a value names another" if primary else ""),
             r"\label{%s}" % label,
             # the measured cell (a value per build, wait rankings) is the longest: the widest
             r"\begin{tabularx}{\linewidth}{@{}>{\raggedright\arraybackslash\hsize=0.8\hsize}X"
             r">{\raggedright\arraybackslash\hsize=0.75\hsize}X>{\raggedright\arraybackslash\hsize=1.45\hsize}X"
             r">{\raggedright\arraybackslash}p{3.1cm}@{}}",
             r"\toprule", r"Claim & Published & Measured [interval] coverage & Verdict (reason)\\", r"\midrule"]
    by_claim: dict = {}
    for r in shown:   # one row per claim: its builds' values in one cell, the primary's first
        by_claim.setdefault(r["claim"], []).append(r)
    for cid, rs in by_claim.items():
        rs.sort(key=lambda r: r.get("build") != primary)
        one = len(rs) == 1 and rs[0].get("build") in ("", None, primary)
        tag = (lambda r: "" if one or not r.get("build") else f"{tex_tt(r['build'])}: ")
        verdicts = [tex_escape(r["verdict"]) + (f" ({tex_escape(w)})" if (w := short_reason(r, level)) else "")
                    for r in rs]
        verdict = (verdicts[0] if len(set(verdicts)) == 1 and not (len(rs) == 1 and not one)
                   else r"\newline ".join(tag(r) + v for r, v in zip(rs, verdicts)))
        measured = r"\newline ".join(tag(r) + _measured(r) for r in rs)
        lines.append(" & ".join([tex_tt(cid), _published(rs[0]), measured, verdict]) + r"\\")
    if groups:
        if shown:
            lines.append(r"\midrule")
        lines.append(_wide(r"\textit{%s}, by what is missing (each claim with what it needs):"
                           % ("Not measurable here" if shown else "Every claim was not measurable here")))
        for words, items in groups:
            lines.append(_wide(r"\textbullet~%s: %s." % (tex_escape(words), join_words(
                [f"{tex_tt(c)} ({tex_escape(need)})" if need else tex_tt(c) for c, need in items]))))
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


NAMED_AT_MOST = 4   # inconclusive claims named in the findings; more are counted


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def findings_tex(rows, mod) -> str:
    """Two to four sentences: what held and what did not (named), what could not be
    decided, and what this host could not test (counted by what is missing; the claims
    are listed once, in the verdict table)."""
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
        named = f": {_claims_words(of[C.INCONCLUSIVE])}" if k <= NAMED_AT_MOST else ""
        s.append(f"{'One claim was' if k == 1 else f'{k} claims were'} inconclusive (the interval "
                 f"straddles the published side, or too few repetitions){named}.")
    groups = not_measurable_groups(mine)
    if groups:
        k = sum(len(items) for _, items in groups)
        if len(groups) == 1:
            parts = ("it needs " if k == 1 else "they need ") + tex_escape(groups[0][0])
        else:
            parts = join_words([f"{len(items)} need{'s' if len(items) == 1 else ''} {tex_escape(words)}"
                                for words, items in groups])
        s.append(f"This host could not test {_count(k, 'claim', 'claims')}: {parts}.")
    if any(wait_ranking(r.get("measured")) for r in mine):
        s.append(f"The wait rankings the wait claims read are in Table~\\ref{{tab:waits-{mod.NAME}}}.")
    return GENERATED + " ".join(s) + "\n"


def waits_tex(rows, mod) -> str:
    """The rankings behind the study's wait claims: a row per engine's cell, its top
    waits in order with their shares."""
    seen, blocks = set(), []
    for r in study_rows(rows, mod):
        w = wait_ranking(r.get("measured"))
        if not w or (w[1], w[2]) in seen:
            continue
        seen.add((w[1], w[2]))
        blocks.append(w)
    if not blocks:
        return GENERATED
    lines = [GENERATED, r"\begin{table}[tbp]", r"\centering\scriptsize",
             r"\caption{%s: the top lock and synchronisation waits of each engine's busiest cell, in "
             r"order, with their share of the wait time (the ranking the wait claims of "
             r"Table~\ref{tab:claims-%s} read).}" % (tex_escape(mod.TITLE), mod.NAME),
             r"\label{tab:waits-%s}" % mod.NAME,
             r"\begin{tabularx}{\linewidth}{@{}>{\raggedright\arraybackslash}p{1.7cm}"
             r">{\raggedright\arraybackslash}X@{}}", r"\toprule", r"Cell & Top waits (share)\\", r"\midrule"]
    for _, engine, where, items in blocks:
        cell = r"\textbf{%s}" % tex_escape(engine) + (r"\newline %s" % tex_escape(where) if where else "")
        waits = "; ".join(f"{i}.~{tables.breakable(e)} {tex_escape(sh)}" for i, (e, sh) in enumerate(items, 1))
        lines.append(f"{cell} & {waits}\\\\")
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
