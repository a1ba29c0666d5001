"""macros.tex: every measured number the paper's text quotes, the \\ifHas flags,
and per claim \\Verdict<M>, \\Ratio<M>, \\Measured<M> (M: the claim's macro)."""
from __future__ import annotations

from harness.analysis import claims as C
from harness.analysis import blockverdict as BV
from harness.analysis import intervals as I
from harness import registry as studies
from harness.report import latex as L
from harness.report import deviations, method, tables
from harness.report.figures import FIGURES, coverage_range, figure_inputs


def contention_cores() -> str:
    """'4 (A1), 16 (A2, A3)': the hardware threads each study's contention and scaling
    claims need (their own min_cores), for the method paragraph."""
    by = {}
    for c in studies.claims():
        if c.needs:
            by.setdefault(c.min_cores, [])
            if c.study not in by[c.min_cores]:
                by[c.min_cores].append(c.study)
    return "; ".join(f"{n} ({', '.join(s)})" for n, s in sorted(by.items()))


def primary_build(tidy) -> str:
    """The build the text's numbers are about: the profile's first measured build."""
    measured = tidy.builds(*tidy.experiments)
    return measured[0] if measured else ""


def known_experiments(tidy) -> list[str]:
    names = []
    for mod in studies.all_studies().values():
        names += [e for e in mod.EXPERIMENTS if e not in names]
    return names + sorted(e for e in (tidy.config.get("experiments") or {}) if e not in names)


def _reps(cells) -> str:
    counts = sorted({c.reps for c in cells})
    if not counts:
        return L.NA
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}--{counts[-1]}"


def _coverage_text(rng) -> str:
    if rng is None:
        return L.NA
    lo, hi = rng
    if round(100 * lo) == round(100 * hi):
        return L.fmt_coverage(lo)
    return f"{100 * lo:.0f}--{L.fmt_coverage(hi)}"


def figure_coverage(rng) -> str:
    """A figure caption's words for its intervals: 'coverage 56\\%', 'coverage 56--94\\%',
    or, with one repetition (no interval at all), 'one repetition: no interval'."""
    if rng is not None and rng[1] == 0:
        return "one repetition: no interval"
    return "coverage " + _coverage_text(rng)


def claim_text(rows) -> tuple[str, str, str]:
    """(verdict, ratio with interval, measured) of one claim's rows (several builds: joined)."""
    def ratio(r):
        if not r.get("ratio"):
            return L.NA
        f = {k: float(r[k]) for k in ("ratio", "ratio_lo", "ratio_hi", "coverage")}
        if not f["coverage"] and f["ratio_lo"] == f["ratio_hi"]:   # a bound of 0 coverage has a width
            return f"{f['ratio']:.2f} (one repetition: no interval)"
        return (f"{f['ratio']:.2f} [{f['ratio_lo']:.2f}, {f['ratio_hi']:.2f}] "
                f"({L.fmt_coverage(f['coverage'])} coverage)")
    if not rows:
        return L.NA, L.NA, L.NA
    if len(rows) == 1:
        r = rows[0]
        return L.tex_escape(r["verdict"]), ratio(r), L.tex_escape(r["measured"])
    join = lambda f: "; ".join(f"{f(r)} ({L.tex_escape(r['build'])})" for r in rows)  # noqa: E731
    return verdicts_text(rows), join(ratio), join(lambda r: L.tex_escape(r["measured"]))


def verdicts_text(rows) -> str:
    """One claim's verdicts over several builds, each verdict said once with its builds:
    'reproduced (a, b); not measurable here (c)'."""
    by: dict = {}
    for r in rows:
        by.setdefault(r["verdict"], []).append(r["build"])
    return "; ".join(f"{L.tex_escape(v)} ({L.tex_escape(', '.join(b))})" for v, b in by.items())


def claim_macros(rows) -> list:
    out = []
    for c in studies.claims():
        if not c.macro:
            continue
        v, r, m = claim_text([row for row in rows if row["claim"] == c.id])
        out += [("Verdict" + c.macro, v), ("Ratio" + c.macro, r), ("Measured" + c.macro, m)]
    return out


# what a not-measurable row lacks, by its reason's class (the prefix before ':'; claimresult.missing)
LACKS = {"cores": "more cores", "data": "data recorded here", "build": "a build",
         "experiment": "an experiment this profile did not run", "scale": "a larger scale",
         "host": "another host set-up"}


def not_drawn(rows) -> str:
    """The claims figure's caption sentence for the rows it does not draw: the rows *not
    measurable here* (fig_claims.R draws every other row), counted by what they lack (the
    class of their reason), most first. Several hosts: the host rows, then the combined rows
    (host C.ALL_HOSTS) not measurable on any host."""
    gone = [r for r in rows if r["verdict"] == C.NOT_MEASURABLE]
    per_host = [r for r in gone if r.get("host") != C.ALL_HOSTS]
    combined = len(gone) - len(per_host)
    if not gone:
        return "Every claim row is drawn."
    classes: dict[str, int] = {}
    for r in per_host:
        what = r.get("reason", "").split(":", 1)[0].strip() if ":" in r.get("reason", "") else ""
        classes[what] = classes.get(what, 0) + 1
    lacks = ", ".join(f"{LACKS.get(k, k or 'a stated reason')} ({n})"
                      for k, n in sorted(classes.items(), key=lambda kv: (-kv[1], kv[0])))
    said = (f"{len(per_host)} {'host ' if combined else ''}row{'s' if len(per_host) != 1 else ''} "
            f"not measurable here, lacking {lacks}" if per_host else "")
    if combined:
        said += (" and " if said else "") + (f"{combined} combined row{'s' if combined != 1 else ''} "
                                             "not measurable on any host")
    return L.tex_escape(f"Not drawn: {said}") + r"; Appendix~\ref{app:reasons} gives each reason."


def build_macros(ctx, rows) -> list:
    """Ordered list of (name, LaTeX value)."""
    tidy = ctx.tidy
    config, prov = tidy.config, tidy.provenance
    sb = config.get("sysbench") or {}
    hosts, builds = prov.get("hosts") or [], prov.get("builds") or []
    cells = tidy.all_cells()
    build = primary_build(tidy)

    def from_list(items, key, sep="; "):
        values = L.distinct(str(i.get(key)) for i in items if i.get(key) not in (None, ""))
        return L.tex_escape(sep.join(values)) if values else L.NA

    cores = sorted({c.int("cores") for c in cells})
    versions = L.distinct(str(s.get("version", "")).removeprefix("sysbench ").strip()
                          for s in prov.get("sysbench") or [] if s.get("version"))
    verdicts = [r["verdict"] for r in rows]
    run_here = [e for e in known_experiments(tidy) if tidy.experiment(e) is not None]
    not_run = [e for e in known_experiments(tidy) if tidy.experiment(e) is None]
    covs = [float(s[col]) for e in tidy.experiments.values() for s in e.summary
            for col in ("qps_server_ci_coverage",) if s.get(col) not in (None, "")]
    out = [
        ("NumCells", str(len(cells))),
        ("NumRuns", str(sum(c.reps for c in cells))),
        ("NumReps", _reps(cells)),
        ("NumUnstable", str(sum(1 for c in cells if c.unstable))),
        ("NumExperiments", str(len(run_here))),
        ("ExperimentsNotRun", L.tex_escape(L.join_words(not_run)) if not_run else "none"),
        ("CoresAll", L.join_words(cores)),
        ("MaxCores", str(max(cores)) if cores else L.NA),
        ("PrimaryBuild", L.tex_tt(build) if build else L.NA),
        ("PrimaryBuildVersion", from_list([b for b in builds if b.get("name") == build]
                                          or (builds if len(builds) == 1 else []), "version")),
        ("BuildName", from_list(builds, "name", ", ")),
        ("BuildVersion", from_list(builds, "version", ", ")),
        ("HostCPU", from_list(hosts, "cpu_model")),
        ("HostCPUs", from_list(hosts, "n_cpus")),
        ("HostKernel", from_list(hosts, "kernel")),
        ("SysbenchVersion", L.tex_escape(", ".join(versions)) if versions else L.NA),
        ("PlacementMechanism", from_list(prov.get("placement") or [], "mechanism", ", ")),
        ("PlacementBackend", from_list(prov.get("placement") or [], "backend", ", ")),
        # sysbench charged to the server's memory cgroup (shared) or another (apart); NA before recorded
        ("ClientMemcg", from_list(prov.get("placement") or [], "client_memcg", ", ")),
        ("ConfigProfile", L.tex_escape(config.get("profile") or prov.get("profile") or L.NA)),
        ("DurationS", L.fmt_num(sb.get("duration_s"))),
        ("WarmupS", L.fmt_num(sb.get("warmup_s"))),
        # how a setting's users ran (a resolved config from before groups has no key: fresh servers)
        ("UsersSweep", "the users values of one setting run on one server start, in the block's "
                       "random order, each after its own warm-up"
         if sb.get("users_on_one_server") else "every cell runs on a server started for it alone"),
        ("RandSeed", L.fmt_num(sb.get("seed"))),
        ("RandType", L.tex_escape(sb.get("rand_type") or L.NA)),
        ("CVThreshold", L.fmt_num((config.get("stats") or {}).get("cv_threshold"))),
        ("NumUnsupported", str(len(tidy.unsupported))),
        ("NumClaims", str(len(verdicts))),
        ("NumClaimsReproduced", str(verdicts.count(C.REPRODUCED))),
        ("NumClaimsNotReproduced", str(verdicts.count(C.NOT_REPRODUCED))),
        ("NumClaimsInconclusive", str(verdicts.count(C.INCONCLUSIVE))),
        ("NumClaimsNotMeasurable", str(verdicts.count(C.NOT_MEASURABLE))),
        ("ClaimLevel", f"{100 * ctx.level:.0f}"),
        ("ClaimLevelSide", f"{100 * ctx.level ** 0.5:.2f}"),
        ("RepsNeeded", str(max([I.min_blocks(ctx.level, BV.bounds_of(tidy, e)[2]) for e in tidy.experiments]
                               or [I.min_blocks(ctx.level)]))),
        ("ContentionCores", L.tex_escape(contention_cores())),
        ("IntervalMethod", L.tex_escape(method.describe(ctx.level, ctx.decide))),
        ("IntervalLimits", L.tex_escape(method.limits())),
        ("Multiplicity", L.tex_escape(method.multiplicity(rows, ctx.level))),
        ("PowerCaption", L.tex_escape(method.power_caption(ctx.level))),
        ("CellCoverage", _coverage_text((min(covs), max(covs)) if covs else None)),
        ("MemoryCheck", L.tex_escape(deviations.memory_sentence(tidy))),
    ]
    for name in FIGURES:
        out.append(("Cov" + FIGURES[name]["flag"], figure_coverage(coverage_range(tidy, name))))
    exp_cfg = config.get("experiments") or {}
    for e in known_experiments(tidy):
        spec = exp_cfg.get(e)
        out.append(("Design" + L.camel(e), tables.design_text(spec) if isinstance(spec, dict) else L.NA))
    for mod in studies.all_studies().values():
        out += mod.macros(ctx, rows, L)
    return out + claim_macros(rows)


def flags_tex(tidy) -> str:
    """\\ifHas<Experiment> (measured in this profile) and \\ifHasFig<Figure> (drawn)."""
    enabled = set(tidy.experiments)
    out = [L.newif("Has" + L.camel(e), e in enabled) for e in known_experiments(tidy)]
    out += [L.newif("HasFig" + f["flag"], bool(figure_inputs(n, enabled))) for n, f in FIGURES.items()]
    return "".join(out)


def macros_tex(macros, flags="") -> str:
    names = [n for n, _ in macros]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"macros defined twice: {', '.join(dup)}")
    return L.GENERATED + "".join(L.macro(name, value) for name, value in macros) + flags
