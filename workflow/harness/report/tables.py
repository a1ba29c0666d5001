"""Generated LaTeX tables: provenance, claims (+ the reasons appendix), design,
EXPLAIN, build versus build, unsupported cells."""
from __future__ import annotations

import re

from harness.analysis import claims as C
from harness.plan import repetitions
from harness.measure import factors
from harness import registry as studies
from harness.report.latex import (GENERATED, NA, distinct, fmt_coverage, fmt_int, join_words,
                    tex_escape, tex_tt)

ENGINE_ORDER = ["InnoDB", "MyISAM", "MEMORY", "MEMORY-BTREE", "ARCHIVE"]


def _engine_key(e):
    return (ENGINE_ORDER.index(e) if e in ENGINE_ORDER else len(ENGINE_ORDER), e)


# --- provenance ---------------------------------------------------------------------

def _val(x):
    if x is None or x == "":
        return NA
    if isinstance(x, bool):
        return "on" if x else "off"
    return tex_escape(x)


def _hex(x, n=12):
    return tex_tt(str(x)[:n]) if x else NA


def _commits(x):
    """git_commit may be one string or a list of them (one per distinct run)."""
    commits = [x] if isinstance(x, str) else list(x or [])
    return ", ".join(tex_tt(c, every=8) for c in commits if c) or NA


def provenance_tex(prov, config, others=(), host=""):
    """The provenance record of the cells `prov` describes (host `host`'s); `others`: the
    other hosts' (id, provenance), whose hosts and placement are listed after it."""
    rows = []  # (label, LaTeX value) or a section title (str)
    for b in prov.get("builds") or [{}]:
        rows += ["Build",
                 ("name", tex_tt(b["name"]) if b.get("name") else NA),
                 ("version", _val(b.get("version"))),
                 ("provider", _val(b.get("provider"))),
                 ("mysqld sha256", _hex(b.get("mysqld_sha256"))),
                 ("server version", _val(b.get("server_version")))]
    oc = prov.get("official_check")
    if oc:
        rows += ["Official binary check",
                 (f"{tex_escape(oc.get('build', ''))} vs {tex_escape(oc.get('official', ''))}",
                  tex_escape(oc.get("verdict", NA)) + (f" ({tex_escape(oc['reason'])})" if oc.get("reason") else ""))]
    for h in prov.get("hosts") or [{}]:
        rows += [f"Host {host}" if others else "Host",
                 ("CPU", _val(h.get("cpu_model"))),
                 ("logical CPUs", _val(h.get("n_cpus"))),
                 ("kernel", _val(h.get("kernel"))),
                 ("governor", _val(h.get("governor"))),
                 ("SMT", _val(h.get("smt")))]
    sysbenches = prov.get("sysbench") or [{}]
    rows += ["Load generator",
             ("sysbench", ", ".join(distinct(_val(s.get("version")) for s in sysbenches)) or NA)]
    for s in sysbenches:  # one row per script (a workload's Lua wrapper)
        if s.get("script"):
            rows.append(("script", f"{tex_tt(s['script'])}, sha256 {_hex(s.get('script_sha256'))}"))
    if not any(s.get("script") for s in sysbenches):
        rows.append(("script", NA))
    rows.append("Placement and run")
    for p in prov.get("placement") or [{}]:
        rows.append(("backend / mechanism", f"{_val(p.get('backend'))} / {_val(p.get('mechanism'))}"
                     + (f"; sysbench's memory cgroup: {p['client_memcg']} (with the server's: shared)"
                        if p.get("client_memcg") else "")))
    for hid, p in others:   # every other host: its machine and placement, its cells and commits
        for h in p.get("hosts") or [{}]:
            rows += [f"Host {hid}", ("CPU", _val(h.get("cpu_model"))), ("logical CPUs", _val(h.get("n_cpus"))),
                     ("kernel", _val(h.get("kernel"))), ("governor", _val(h.get("governor"))),
                     ("SMT", _val(h.get("smt")))]
        rows += [("backend / mechanism", ", ".join(f"{_val(x.get('backend'))} / {_val(x.get('mechanism'))}"
                                                   for x in p.get("placement") or [{}])),
                 ("measured runs", _val(p.get("cells"))), ("git commit", _commits(p.get("git_commit")))]
    if others:
        rows.append(f"Run of host {host}")
    rows += [("config profile", _val(config.get("profile") or prov.get("profile"))),
             ("measured runs", _val(prov.get("cells"))),
             ("git commit", _commits(prov.get("git_commit")))]
    # a longtable (labelled tab:provenance): a profile of several builds and hosts is taller
    # than a page, and a tabular cannot break
    lines = [GENERATED, r"\begin{longtable}{@{}>{\raggedright\arraybackslash}p{4.2cm}"
             r">{\raggedright\arraybackslash}p{\dimexpr\linewidth-4.2cm-2\tabcolsep\relax}@{}}",
             r"\caption{Provenance of the measurements.}\label{tab:provenance}\\",
             r"\toprule", r"\endfirsthead", r"\toprule", r"\endhead", r"\bottomrule", r"\endfoot"]
    for i, row in enumerate(rows):
        if isinstance(row, str):
            if i:
                lines.append(r"\midrule")
            lines.append(r"\multicolumn{2}{@{}l}{\textbf{%s}}\\*" % tex_escape(row))
        else:
            lines.append(r"\quad %s & %s\\" % (tex_escape(row[0]), row[1]))
    lines += [r"\end{longtable}", ""]
    return "\n".join(lines)


# --- claims ---------------------------------------------------------------------------



def _f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def short_reason(row, level) -> str:
    """The verdict's parenthesis in the table: what is missing, or why inconclusive; for a
    combined row (several hosts) 'k of n hosts' (C.combined_verdict)."""
    v, reason = row["verdict"], row.get("reason") or ""
    if row.get("host") == C.ALL_HOSTS:
        m = re.search(r"reproduced on (\d+) of the (\d+) hosts", reason)
        return (f"{'hosts disagree; ' if reason.startswith('hosts disagree') else ''}reproduced on "
                f"{m.group(1)} of {m.group(2)} hosts" if m else "no host could measure it")
    if v == C.NOT_MEASURABLE:
        return reason.split(":", 1)[0] if ":" in reason else ""
    if v == C.INCONCLUSIVE:
        if reason.startswith("by design"):
            return "by design"
        if _f(row.get("coverage")) == 0 and row.get("ratio_lo") == row.get("ratio_hi"):
            return "one repetition"
        m = re.search(r"(\d+) blocks measured(?:,| of)", reason)
        cov, asked = _f(row.get("coverage")), _f(row.get("level")) or level
        if cov is not None and cov < asked:
            return f"coverage {100 * cov:.0f}% < {100 * asked:.0f}%"
        if m and "may decide" in reason:
            return f"{m.group(1)} blocks so far"
        return "interval straddles"
    return ""


def direction_only(row) -> bool:
    """The rule judges only a direction (`> 1` or `< 1`) although the study gave a magnitude:
    the verdict says nothing of how far the measured ratio lies from the published one, so the
    table and `./artifact claims` say so beside it (the two ratios are in their columns)."""
    return (row.get("side") in ("above", "below") and _f(row.get("threshold")) == 1.0
            and _f(row.get("published_ratio")) is not None)


def rule_text(row) -> str:
    side, t, th = row.get("side"), _f(row.get("threshold")), _f(row.get("threshold_hi"))
    if not side:
        return "pass/fail"
    if side == "within":
        return f"in [{t:g}, {th:g}]"
    return f"{'>' if side == 'above' else '<'} {t:g}"


def measured_cell(row) -> str:
    """'0.96 [0.41, 2.25]' and its coverage (a ratio claim), else the measured text."""
    if row.get("ratio"):
        r, lo, hi, cov = (_f(row[k]) for k in ("ratio", "ratio_lo", "ratio_hi", "coverage"))
        if not cov and lo == hi:   # a peak bound of 0 coverage still has a width
            return f"{r:.2f}\\newline{{\\scriptsize no interval (one repetition)}}"
        return (f"{r:.2f} [{lo:.2f}, {hi:.2f}]\\newline{{\\scriptsize {fmt_coverage(cov)} coverage}}")
    return r"{\scriptsize %s}" % breakable(row.get("measured") or NA)


def published_cell(row) -> str:
    """The published ratio as a number when the claim has one, with the published
    words below it (small); the words alone otherwise."""
    words = r"{\scriptsize %s}" % tex_escape(row.get("published") or NA)
    r = _f(row.get("published_ratio"))
    mag = r"\newline{\scriptsize %s the interval}" % row["magnitude"] if row.get("magnitude") else ""
    return f"{r:.2f}\\newline{words}{mag}" if r is not None else words


def cores_cell(row) -> str:
    """mysqld's cores in the compared cells, as the measured text states them
    ('(1 table, 2 cores, ...)'); '--' when it names none."""
    found = sorted({int(n) for n in re.findall(r"\b(\d+) cores?\b", row.get("measured") or "")})
    return ", ".join(map(str, found)) if found else "--"


def breakable(text) -> str:
    """Escaped text that may break after / : _ (event names, cell names)."""
    out = []
    for ch in str(text):
        out.append(tex_escape(ch) + (r"\allowbreak{}" if ch in "/:_" else ""))
    return "".join(out)


def claims_tex(rows, level, power: str = "") -> str:
    """The claims table as one longtable of the (one-column) appendix, labelled
    tab:claims: it breaks across pages, its header repeated on each (a float of
    fixed rows cannot: the wait rows are tall and would overfill a page). `power`: the
    caption's sentence on the rows' power (harness.report.claimpower), plain text."""
    def x(share):   # a share (of 30) of the width the fixed columns leave
        return (r">{\raggedright\arraybackslash}p{\dimexpr(\linewidth-4.9cm-12\tabcolsep)*%d/30\relax}"
                % share)
    rl = r">{\raggedright\arraybackslash}"
    hosts = C.hosts_of(rows)
    several = len(hosts) > 1
    verdicts = [r["verdict"] for r in rows if not several or r.get("host") == C.ALL_HOSTS]
    summary = ", ".join(f"{verdicts.count(v)} {v}" for v in C.VERDICTS)
    if several:
        summary = (f"{len(hosts)} hosts, {', '.join(map(tex_tt, hosts))}, each judged on its own cells; "
                   f"the combined rows (\\emph{{all hosts}}): {summary}")
    many_builds = len({r["build"] for r in rows if r["build"] and " vs " not in r["build"]}) > 1
    head = (r"Claim & Published ratio & Measured ratio [interval] & Rule & n & Cores & Verdict\\")
    caption = (r"\caption{Published claims and the verdicts the pipeline computed from "
               r"%s measurements (%s). Measured: the Hodges--Lehmann ratio of the "
               r"server's statement count with its interval and that interval's real coverage "
               r"(Section~\ref{sec:method}); published ratio: below, inside or above that interval; "
               r"rule: the published side of the threshold; n: "
               r"blocks (paired repetitions) the verdict used; cores: mysqld's cores in the compared cells. The "
               r"claims' statements are in Appendix~\ref{app:reasons}. $\dagger$: the verdict rests on a cell "
               r"flagged unstable. \emph{Direction only}: the rule judges the side of 1 alone, though the study "
               r"gave a magnitude; compare the two ratios. Reasons: Appendix~\ref{app:reasons}.%s%s}\label{tab:claims}\\"
               % ("the hosts'" if several else "this host's", summary, " " + tex_escape(power) if power else "",
                  r" Per host a row each; a claim's row for all hosts says on how many of the hosts "
                  r"that could measure it the claim was reproduced: reproduced (not reproduced) when more "
                  r"than half of them reproduced it (did not) and none said the opposite, inconclusive "
                  r"otherwise; no interval is pooled across hosts (Section~\ref{sec:method})."
                  if several else ""))
    lines = [GENERATED, r"\begingroup\footnotesize",
             r"\begin{longtable}{@{}%s%s%s%sp{1.3cm}%sp{0.6cm}%sp{0.7cm}%sp{2.3cm}@{}}"
             % (x(13), x(8), x(9), rl, rl, rl, rl),
             caption, r"\toprule", head, r"\midrule", r"\endfirsthead",
             r"\multicolumn{7}{@{}l}{\small\textbf{\tablename~\thetable:} published claims (continued).}\\",
             r"\toprule", head, r"\midrule", r"\endhead",
             r"\bottomrule", r"\endfoot"]
    for r in rows:
        cid = r"{\scriptsize %s}" % tex_tt(r["claim"])
        if many_builds and r["build"] and " vs " not in r["build"]:
            cid += r" {\scriptsize (%s)}" % tex_tt(r["build"])
        if several:
            cid += (r"\newline{\scriptsize \emph{all hosts}}" if r.get("host") == C.ALL_HOSTS
                    else r"\newline{\scriptsize host %s}" % tex_tt(r.get("host") or NA))
        why = "; ".join(w for w in (short_reason(r, level),
                                     "direction only" if direction_only(r) and r.get("ratio")
                                     and r["verdict"] != C.NOT_MEASURABLE else "") if w)
        dagger = r"$^\dagger$" if "unstable" in (r.get("reason") or "") else ""
        verdict = tex_escape(r["verdict"]) + dagger + (r"\newline{\scriptsize (%s)}" % tex_escape(why)
                                                       if why else "")
        if r.get("power_note"):   # its power on the host (harness.report.claimpower)
            verdict += r"\newline{\scriptsize %s}" % tex_escape(r["power_note"])
        lines.append(" & ".join([cid, published_cell(r), measured_cell(r),
                                 tex_escape(rule_text(r)), tex_escape(r.get("n") or "--"),
                                 cores_cell(r), verdict])
                     + r"\\")
    if not rows:
        lines.append(r"\multicolumn{7}{@{}l}{No claims.}\\")
    lines += [r"\end{longtable}", r"\endgroup", ""]
    return "\n".join(lines)


def reasons_tex(rows) -> str:
    """Every claim's full reason and measured value (the appendix behind the table)."""
    if not rows:
        return GENERATED + "No claims.\n"
    # a hanging list, not a description: its labels (long claim ids) could not break
    lines = [GENERATED, r"\begin{list}{}{\leftmargin=1em\itemindent=-1em\itemsep=1pt}\footnotesize"]
    several = len(C.hosts_of(rows)) > 1
    for r in rows:
        build = f" ({tex_tt(r['build'])})" if r.get("build") else ""
        if several:
            build += (r", \emph{all hosts}" if r.get("host") == C.ALL_HOSTS
                      else f", host {tex_tt(r.get('host') or NA)}")
        lines.append(r"\item \textbf{%s}%s: %s %s. \emph{Measured:} %s. \emph{Reason:} %s." % (
            tex_tt(r["claim"]), build, tex_escape(r.get("statement") or ""), tex_escape(r["verdict"]),
            breakable(r.get("measured") or NA), breakable(r.get("reason") or NA)))
    lines += [r"\end{list}", ""]
    return "\n".join(lines)


# --- design -----------------------------------------------------------------------------

def _plural(n, word):
    return word if n == [1] or n == 1 else word + "s"


def design_text(spec: dict) -> str:
    """One experiment's design from the config, as LaTeX (factor words from harness.measure.factors)."""
    parts = []
    engines = spec.get("engines") or []
    if engines:
        parts.append(tex_escape(join_words(engines)))
    tables = spec.get("tables") or []
    if tables:
        t = f"{join_words(tables)} {_plural(tables, 'table')}"
        if spec.get("table_size"):
            t += f" of {fmt_int(spec['table_size'])} rows"
        parts.append(t)
    if spec.get("cores"):
        parts.append(f"{join_words(spec['cores'])} {_plural(spec['cores'], 'core')}")
    if spec.get("users"):
        parts.append(f"{join_words(spec['users'])} {_plural(spec['users'], 'user')}")
    for name, values in (spec.get("variants") or {}).items():
        vals = "/".join(str(v).replace("_", " ") for v in values)
        parts.append(tex_escape(f"{factors.words(name)} {vals}"))
    if spec.get("builds"):
        parts.append("builds " + ", ".join(tex_tt(b) for b in spec["builds"]))
    if spec.get("repetitions"):
        lo, hi, _ = repetitions.bounds(spec["repetitions"])
        parts.append(f"{lo} {_plural(lo, 'repetition')}" if lo == hi else f"{lo}--{hi} blocks")
    return "; ".join(parts) or NA


def design_tex(tidy) -> str:
    """The experiments table: every experiment a study reads or the profile names."""
    known = {}
    for mod in studies.all_studies().values():
        for exp, (codes, what) in mod.EXPERIMENTS.items():
            known.setdefault(exp, (codes, what))
    names = list(known) + sorted(e for e in (tidy.config.get("experiments") or {}) if e not in known)
    lines = [GENERATED, r"\begin{tabularx}{\linewidth}{@{}l>{\raggedright\arraybackslash}X@{}}",
             r"\toprule", r"Experiment & Study: design in this profile\\", r"\midrule"]
    for e in names:
        codes, what = known.get(e, (tidy.spec(e).get("study", ""), ""))
        spec = tidy.spec(e)
        if not spec:
            design = r"\emph{not an experiment of this profile}"
        elif tidy.experiment(e) is None:
            design = r"\emph{not run in this profile}"
        else:
            design = design_text(spec)
        lines.append(r"%s & %s: %s%s\\" % (tex_tt(e), tex_escape(codes), tex_escape(what) + "; " if what
                                            else "", design))
    lines += [r"\bottomrule", r"\end{tabularx}", ""]
    return "\n".join(lines)


# --- EXPLAIN, builds, unsupported --------------------------------------------------------

def breakable_version(text) -> str:
    """A server version ('10.11.19-MariaDB-0+deb12u1') that may wrap after - and +."""
    return "".join(tex_escape(ch) + (r"\allowbreak{}" if ch in "-+" else "") for ch in str(text))


def builds_tex(cells, provenance) -> str:
    """Build versus build: per build, its server version and best median server-counted QPS
    per engine (over users and cores); an engine a build could not run is 'absent', never 0."""
    if not cells:
        return GENERATED + r"\emph{Build versus build was not measured in this profile.}" + "\n"
    versions = {b.get("name"): b.get("server_version") or b.get("version")
                for b in provenance.get("builds", [])}
    engines = sorted({c.engine for c in cells}, key=_engine_key)
    best = {}
    for c in cells:
        m = c.median(C.METRIC)
        if m is not None and m > best.get((c.build, c.engine), -1):
            best[(c.build, c.engine)] = m
    # fits one column: the version may wrap, the QPS columns are numbers under one header
    lines = [GENERATED.rstrip("\n"),
             r"\begin{tabularx}{\linewidth}{@{}>{\raggedright\arraybackslash}p{0.3\linewidth}"
             r">{\raggedright\arraybackslash}X" + "r" * len(engines) + "@{}}", r"\toprule",
             r" & & \multicolumn{%d}{c@{}}{median QPS (server count)} \\" % len(engines),
             r"\cmidrule(l){3-%d}" % (2 + len(engines)),
             "Build & Version & " + " & ".join(tex_escape(e) for e in engines) + r" \\",
             r"\midrule"]
    for b in sorted({c.build for c in cells}):
        vals = [fmt_int(best[(b, e)]) if (b, e) in best else r"\emph{absent}" for e in engines]
        lines.append(f"{tex_tt(b)} & {breakable_version(versions.get(b) or NA)} & " + " & ".join(vals) + r" \\")
    lines += [r"\bottomrule", r"\end{tabularx}", ""]
    return "\n".join(lines)


def explain_tex(explain_rows, experiment: str) -> str:
    """Engine x statement -> EXPLAIN type / key / rows (distinct values over cells) of
    `experiment` (a study's EXPLAIN_EXPERIMENT)."""
    if not explain_rows:
        return (GENERATED + r"\emph{No EXPLAIN output: experiment %s was not measured "
                r"in this profile.}" % tex_escape(experiment) + "\n")
    many_builds = len({r.get("build", "") for r in explain_rows}) > 1
    cells = {}
    for r in explain_rows:
        key = (r.get("build", ""), r.get("engine", ""), r.get("statement", ""))
        cell = cells.setdefault(key, {"type": [], "key": [], "rows": []})
        for col in cell:
            v = r.get(col) or ""
            if v not in cell[col]:
                cell[col].append(v)
    order = sorted(cells, key=lambda k: (k[0], _engine_key(k[1]), k[2]))
    cols = ("l" if many_builds else "") + "lllll"
    lines = [GENERATED, r"\begin{tabular}{@{}%s@{}}" % cols, r"\toprule",
             ("Build & " if many_builds else "") + r"Engine & Statement & type & key & rows\\", r"\midrule"]
    for key in order:
        build, engine, statement = key
        c = cells[key]

        def cell(col, tt=False):
            vals = [v for v in c[col] if v] or ["--"]
            return "/".join(tex_tt(v) if tt and v != "--" else tex_escape(v) for v in vals)
        row = ([tex_tt(build)] if many_builds else []) + [
            tex_escape(engine), tex_tt(statement), cell("type"), cell("key", tt=True), cell("rows")]
        lines.append(" & ".join(row) + r"\\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def unsupported_tex(rows) -> str:
    if not rows:
        return (GENERATED + "None: every build of this profile can run every engine and "
                "variant its experiments ask for.\n")
    lines = [GENERATED, r"\begin{itemize}\setlength{\itemsep}{0pt}"]
    for r in rows:
        what = ", ".join(tex_escape(r.get(k) or "--") for k in ("experiment", "engine", "variant"))
        lines.append(r"\item %s on %s: %s" % (what, tex_tt(r.get("build") or "--"),
                                              tex_escape(r.get("reason") or "")))
    lines += [r"\end{itemize}", ""]
    return "\n".join(lines)


def sections_tex() -> str:
    """\\input of every study's section, in the registry's order. No barrier between them
    (a \\clearpage would leave the end of each study's last page empty): each section
    declares its verdict table and figures early, so they land beside the text that reads them."""
    return GENERATED + "".join(f'\\input{{"{studies.section_path(m)}"}}\n'
                               for m in studies.all_studies().values())

