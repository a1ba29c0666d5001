"""Cells where they are read: which planned cells a claim or a figure reads, which
claims this host can decide, and the cells nobody reads (dropped from the plan).

What a claim reads is derived from the claim object's own attributes, generically
(no claim row says it again): its `experiments`; an `engine`, and `a`/`b` when they
name engines or builds of the experiment; `tables`; `a`/`b` as table counts when the
claim compares table counts (`same_tables` false) or as core counts when it compares
core counts (`cores` not in its `load`; a=None: the most cores planned above b); a
`cores` attribute (one core count); for a contention or scaling claim, only the cells
with mysqld on at least `min_cores` (or its `read_floor`, when it reads fewer) (a scaling claim scales from the fewest count at or
above it: Claim.scaling_cores); and the factor settings it holds
(its `read_levels`: a claim's LEVELS or the baselines, a LevelRatio's two). A Check
(a free function of the data) reads what its `reads` mapping says, else every cell. A
claim judged at the most cores (`top_cores`: TablesRatio) reads the most cores planned.
Users are never narrowed: a peak is over every load both sides measured.
tests/unit/test_claim_reads.py checks that no claim's row changes when the cells its selectors
do not match are removed: on recorded cells (engines, tables, levels, `reads`), and on
synthetic rows of every cell of the paper plan on the recorded topologies (core counts
too, and the blocks after the first look).

What a figure reads: every cell of the experiments of its `inputs` (a study's
FIGURES), narrowed by an optional `draws` mapping of key -> values
in its FIGURES entry (e.g. {"tables": [8]}).

A cell is kept when a figure draws it or a claim this host can decide reads it. A
claim that is not measurable here (Untestable; too few cores; no SMT; a build or
table count the profile does not run) reads nothing: its row says why whether or
not its cells exist, so measuring them for it would cost time and decide nothing.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from harness.measure import coreplan
from harness.measure import factors

ANY = None


@dataclass(frozen=True)
class Selector:
    """The cells of one experiment a reader needs: each key a set of values (None: any);
    `min_cores`: mysqld on at least that many, the cores the claim's mechanism needs
    (harness.plan.reads.judge: not measurable below)."""
    experiment: str
    engines: frozenset | None = ANY
    builds: frozenset | None = ANY
    tables: frozenset | None = ANY
    cores: frozenset | None = ANY
    min_cores: int = 0
    settings: tuple | None = ANY   # any of these ((factor, level), ...): a cell's variant

    def matches(self, d: dict) -> bool:
        for key, allowed in (("engine", self.engines), ("build", self.builds), ("tables", self.tables),
                             ("cores", self.cores)):
            if allowed is not None and key in d and d[key] not in allowed:
                return False
        if self.settings is not None and "variant" in d and not any(
                _holds(d, s) for s in self.settings):
            return False
        return int(d.get("cores") or 0) >= self.min_cores


@functools.lru_cache(maxsize=4096)
def _variant(label: str) -> dict:
    """A variant label's factor levels, parsed once per label (every selector match reads it);
    callers only read the dict."""
    return factors.parse(label)


def _holds(d: dict, settings: tuple) -> bool:
    """Whether a cell's variant has these factor levels (a factor that does not apply to
    its engine holds any level, as harness.analysis.claimpick.matches reads cells)."""
    variant = _variant(str(d["variant"]))
    for name, level in settings:
        f = factors.FACTORS.get(name)
        if f is not None and not f.applies(str(d.get("engine") or "")):
            continue
        have = variant[name] if name in variant else (f.baseline if f is not None else "")
        if str(have) != level:
            return False
    return True


@dataclass(frozen=True)
class Verdict:
    """Whether a claim can be decided on this plan; `why` starts with cores, SMT, build,
    experiment or scale when not; `rows` how many claim rows it makes (one per build)."""
    claim: str
    study: str
    measurable: bool
    why: str
    rows: int
    measurable_rows: int


def _spec(cfg, exp):
    spec = (cfg.get("experiments") or {}).get(exp)
    return spec if isinstance(spec, dict) and spec["enabled"] else None


def _builds(cfg, spec) -> list[str]:
    return list(spec.get("builds") or cfg.get("builds") or [])


def _ints(*vals) -> frozenset | None:
    out = {v for v in vals if isinstance(v, int) and not isinstance(v, bool)}
    return frozenset(out) if out else None


def claim_selectors(claim, cfg: dict) -> list[Selector]:
    """The cells `claim` reads, one Selector per enabled experiment it names (module docstring)."""
    out = []
    for exp in getattr(claim, "experiments", ()) or ():
        spec = _spec(cfg, exp)
        if spec is None:
            continue
        engines, builds = set(), set()
        for name in ("engine", "a", "b"):
            v = getattr(claim, name, None)
            if isinstance(v, str) and v:
                if v in (spec.get("engines") or []):
                    engines.add(v)
                elif v in _builds(cfg, spec):
                    builds.add(v)
        a, b = getattr(claim, "a", None), getattr(claim, "b", None)
        tables = _ints(getattr(claim, "tables", None))
        cores = _ints(getattr(claim, "cores", None)) if "cores" in _field_names(claim) else None
        if _ints(b) and not getattr(claim, "same_tables", True):
            tables = _ints(a, b)
        elif _ints(b) and _compares_cores(claim):
            above = [n for n in spec.get("cores") or [] if isinstance(n, int) and n > b]
            cores = _ints(a if a is not None else max(above, default=b), b)
        if getattr(claim, "top_cores", False):
            cores = _ints(max((n for n in spec.get("cores") or [] if isinstance(n, int)), default=None))
        levels = claim.read_levels(exp, spec) if hasattr(claim, "read_levels") else None
        settings = tuple(tuple(lv.items()) for lv in levels) if levels is not None else ANY
        # a claim gated on its published cores that still reads fewer (A1's best over cores:
        # MyISAM's best is on 8, InnoDB's on 24 or 32) names the floor it reads from
        gate = getattr(claim, "read_floor", claim.min_cores) if getattr(claim, "needs", None) else 0
        sel = Selector(exp, frozenset(engines) or ANY, frozenset(builds) or ANY, tables, cores,
                       gate, settings)
        out.append(dataclasses.replace(sel, **_declared(getattr(claim, "reads", None))))
    return out


_READS = {"engine": "engines", "build": "builds", "tables": "tables", "cores": "cores"}


def _declared(reads) -> dict:
    """A Check's `reads` mapping as Selector fields (its "levels" go through read_levels)."""
    return {_READS[k]: frozenset(v) for k, v in (reads or {}).items() if k in _READS}


def _compares_cores(claim) -> bool:
    """A claim whose sides differ in their core count (a load without cores: CoresRatio)."""
    return "cores" not in getattr(claim, "load", ("users", "cores"))


def _field_names(obj) -> set:
    return {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()


def figure_selectors(figures: dict, cfg: dict) -> dict[str, list[Selector]]:
    """{figure: the cells it draws}: every cell of its inputs' experiments, or its `draws`."""
    out = {}
    for name, fig in figures.items():
        narrow = _declared(fig.get("draws"))
        exps = dict.fromkeys(e for e, _ in fig.get("inputs") or [] if _spec(cfg, e) is not None)
        if exps:
            out[name] = [Selector(e, **narrow) for e in exps]
    return out


# ---------------------------------------------------------------- can this host decide it?

_COMBOS: dict = {}


def _cells_of(cfg, lock, exp):
    """Every combination of the experiment with its reason (None: runs), once per profile."""
    key = (id(cfg), id(lock), exp)
    hit = _COMBOS.get(key)
    if hit is None or hit[0] is not cfg:
        from harness.plan.combos import combos
        hit = _COMBOS[key] = (cfg, list(combos(cfg, lock, exp)))
    return hit[1]


def judge(claim, cfg: dict, lock: dict, topology=None) -> Verdict:
    """Whether `claim` is measurable on this resolved profile (its planned cells), and why not."""
    rows = _rows(claim, cfg)
    why = getattr(claim, "why", "") if type(claim).__name__ == "Untestable" else ""
    if not why:
        why = _why_not(claim, cfg, lock, topology)
    ok_rows = 0 if why else _measurable_rows(claim, cfg, lock, rows)
    if not why and not ok_rows:
        why = _build_reason(claim, cfg, lock)
    return Verdict(claim.id, claim.study, not why, why, max(1, len(rows)), ok_rows)


def _rows(claim, cfg) -> list[str]:
    """The claim's rows: one per build of its experiments (a claim that overrides `builds`,
    a build comparison or an untestable claim: one)."""
    from harness.analysis import claimkinds
    if type(claim).builds is not claimkinds.Claim.builds:
        return [""]
    out = []
    for exp in claim.experiments:
        spec = _spec(cfg, exp)
        for b in (_builds(cfg, spec) if spec else []):
            if b not in out:
                out.append(b)
    return out or [""]


def _why_not(claim, cfg, lock, topology) -> str:
    sels = claim_selectors(claim, cfg)
    for exp in claim.experiments:
        if _spec(cfg, exp) is None:
            return f"experiment: {exp} is not run in this profile"
    for sel in sels:
        spec = _spec(cfg, sel.experiment)
        planned = sorted(n for n in spec.get("cores") or [] if isinstance(n, int))
        for n in sorted(sel.cores or ()):
            if n not in planned:
                return _cores_reason(n, planned, topology)
        b = getattr(claim, "b", None)
        if _compares_cores(claim) and getattr(claim, "a", 0) is None and not any(n > b for n in planned):
            return f"cores: needs mysqld on {b} and on more than {b} cores; this host's plan gives {planned}"
        floor = claim.min_cores if getattr(claim, "needs", None) else 0
        if floor and max(planned, default=0) < floor:
            return (f"cores: needs mysqld on at least {claim.cores_needed()}; this host's plan gives "
                    f"at most {max(planned, default=0)}")
        if getattr(claim, "needs", None) == "scaling" and len([n for n in planned if n >= sel.min_cores]) < 2:
            return f"cores: scaling needs two core counts of at least {sel.min_cores}; planned {planned}"
        tables = spec.get("tables")
        if sel.tables and tables and not sel.tables <= set(tables):
            return (f"experiment: {sel.experiment} runs on {tables} tables in this profile; the claim "
                    f"reads {sorted(sel.tables)}")
        if sel.builds and not sel.builds <= set(_builds(cfg, spec)):
            return f"build: {sorted(sel.builds - set(_builds(cfg, spec)))[0]} is not a build of {sel.experiment}"
    return ""


def _cores_reason(n, planned, topology) -> str:
    if n > max(coreplan.STUDY_CORES):
        if topology is not None and topology.threads_per_core < 2:
            return (f"SMT: needs mysqld on {n} hardware threads ({n // 2} cores x 2 threads); this host "
                    f"has no SMT siblings")
        return (f"SMT: needs mysqld on {n} hardware threads ({n // 2} cores x 2 threads); the plan has "
                f"{planned} (placement: smt on a host with {n // 2} cores and their siblings free)")
    return f"cores: needs mysqld on {n} cores; this host's plan gives {planned}"


def _measurable_rows(claim, cfg, lock, rows) -> int:
    """Rows whose build runs cells of every engine and build the claim reads."""
    sels = claim_selectors(claim, cfg)
    n = 0
    for build in rows:
        ok = True
        for sel in sels:
            running = [d for d, reason in _cells_of(cfg, lock, sel.experiment) if reason is None
                       and sel.matches(d) and (not build or sel.builds or d["build"] == build)]
            need = sel.engines or {d.get("engine") for d in running}
            if not running or not need <= {d.get("engine") for d in running}:
                ok = False
            if sel.builds and not sel.builds <= {d["build"] for d in running}:
                ok = False
        n += ok
    return n


def _build_reason(claim, cfg, lock) -> str:
    for sel in claim_selectors(claim, cfg):
        for d, reason in _cells_of(cfg, lock, sel.experiment):
            if reason and sel.matches(d):
                return reason if reason.startswith("build") else f"build: {reason}"
    return "build: none of its builds runs the cells it reads"


# ---------------------------------------------------------------- who reads what

def readers(cfg: dict, lock: dict, topology=None, claims=None, figures=None) -> dict:
    """{"claims": [Verdict], "by_experiment": {exp: {"claims": [...], "figures": [...]}},
    "selectors": {exp: [Selector]}, "claim_selectors": {exp: [Selector]}}: the measurable
    claims' and the figures' selectors, and the claims' alone (blocks after the first look)."""
    if claims is None:
        from harness import registry as studies
        claims = studies.claims()
    if figures is None:   # every study's, as the registry finds them now (an external study too)
        from harness import registry as studies
        figures = {k: v for s in studies.all_studies().values() for k, v in getattr(s, "FIGURES", {}).items()}
    verdicts = [judge(c, cfg, lock, topology) for c in claims]
    by_exp: dict = {}
    sels: dict = {}
    named = {e for c in claims for e in getattr(c, "experiments", ()) or ()}
    named |= {e for fig in figures.values() for e, _ in fig.get("inputs") or []}
    for exp, spec in (cfg.get("experiments") or {}).items():   # a profile's own experiment: whole
        if exp not in named and isinstance(spec, dict) and spec["enabled"]:
            by_exp[exp] = {"claims": [], "figures": [], "whole": True}
            sels[exp] = [Selector(exp)]
    claim_sels = {e: list(ss) for e, ss in sels.items()}   # a profile's own experiment: all blocks
    for c, v in zip(claims, verdicts):
        if not v.measurable:
            continue
        for s in claim_selectors(c, cfg):
            by_exp.setdefault(s.experiment, {"claims": [], "figures": []})["claims"].append(c.id)
            sels.setdefault(s.experiment, []).append(s)
            claim_sels.setdefault(s.experiment, []).append(s)
    for name, ss in figure_selectors(figures, cfg).items():
        for s in ss:
            by_exp.setdefault(s.experiment, {"claims": [], "figures": []})["figures"].append(name)
            sels.setdefault(s.experiment, []).append(s)
    return {"claims": verdicts, "by_experiment": by_exp, "selectors": sels, "claim_selectors": claim_sels}


_CACHE: dict = {}


def readers_cached(cfg: dict, lock: dict) -> dict:
    """readers() of a resolved profile, computed once per profile object."""
    key = (id(cfg), id(lock))
    hit = _CACHE.get(key)
    if hit is None or hit[0] is not cfg:
        hit = _CACHE[key] = (cfg, readers(cfg, lock))
    return hit[1]


def unread(cfg: dict, lock: dict, topology=None) -> dict[str, str]:
    """{experiment: why it is not planned} for the enabled experiments that claims or figures
    name but none this host can use reads: every claim naming it is not measurable here and no
    figure draws it."""
    who = readers(cfg, lock, topology)
    out = {}
    for exp, spec in (cfg.get("experiments") or {}).items():
        if not (isinstance(spec, dict) and spec["enabled"]) or who["selectors"].get(exp):
            continue
        whys = [v.why for v in who["claims"] if exp in _claim_experiments(v.claim)]
        out[exp] = (f"experiment: {exp} is not planned on this host: no figure draws it and no claim "
                    f"reading it can be decided here" + (f" ({whys[0]})" if whys else ""))
    return out


def _claim_experiments(claim_id: str) -> tuple:
    from harness import registry as studies
    return next((tuple(c.experiments) for c in studies.claims() if c.id == claim_id), ())


def kept(selectors: list[Selector], d: dict) -> bool:
    """Whether a cell (its combo dict) is read by any of an experiment's selectors."""
    return any(s.matches(d) for s in selectors)
