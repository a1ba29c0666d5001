"""deviations.tex: every place the artifact differs from or had to choose for the studies.

Rows, in order: the studies' stated setups (each study's SETUP: aspect, the study's value,
a key this module computes the artifact's value for from the run's resolved config and
tidy data), rows a study computes itself (its `deviations(tidy)`, e.g. A1's corpus
statistics), the factor table's baselines, the stand-ins the claims use (a claim's
`deviation`) and the per-cell memory check. Nothing here is typed in: a value that varies
with the profile or the host comes from the config, the cells or the study's tidy tables.
"""
from __future__ import annotations

from collections import Counter

from harness import registry as studies
from harness.analysis import tidyread as T
from harness.measure import datasets, kinds, mycnf
from harness.measure import factors
from harness.report.latex import GENERATED, NA, distinct, fmt_int, fmt_num, join_words, tex_escape, tex_tt

MB = 2 ** 20
# the buffer each engine's data sit in (harness.measure.captures.memory_fit's buffer_bytes)
BUFFERS = {"InnoDB": ("innodb_buffer_pool_size", "buffer pool"),
           "MyISAM": ("key_buffer_size", "key cache")}



def _mb(x) -> str:
    return f"{x / MB:,.0f}"


# --- the memory check ----------------------------------------------------------------

def memory_check(tidy):
    """(fits, not fitting, unchecked) cell counts and the largest data/buffer bytes, from the
    run columns memory_fits, data_bytes, buffer_bytes (manifest['memory'] of each cell)."""
    fits = nofit = unchecked = 0
    data = buf = 0.0
    for c in tidy.all_cells():
        if not any("memory_fits" in r for r in c.runs):
            continue  # a steps cell: no dataset held in buffers, nothing to check
        flags = [r.get("memory_fits", "") for r in c.runs]
        if not flags or any(f in ("", None) for f in flags):
            unchecked += 1
            continue
        if all(T.flag(f) for f in flags):
            fits += 1
        else:
            nofit += 1
        for r in c.runs:
            data = max(data, T.number(r.get("data_bytes")) or 0)
            buf = max(buf, T.number(r.get("buffer_bytes")) or 0)
    return fits, nofit, unchecked, data, buf


def memory_sentence(tidy) -> str:
    """The paper's sentence about data and memory (plain text): only what the per-cell check says."""
    fits, nofit, unchecked, data, buf = memory_check(tidy)
    total = fits + nofit + unchecked
    if total == 0 or fits + nofit == 0:
        return "whether the data fit in the server's buffers was not checked"
    if nofit == 0 and unchecked == 0:
        return (f"the data fit in the server's buffers in every one of the {total} cells (checked per "
                f"cell; at most {_mb(data)} MB of data, buffers up to {_mb(buf)} MB)")
    parts = []
    if nofit:
        parts.append(f"did not fit in {nofit} of {total} cells")
    if unchecked:
        parts.append(f"{unchecked} of {total} cells were not checked")
    return "the data fit in the server's buffers in " + f"{fits} of {total} cells, " + " and ".join(parts)


def preload_sentence(tidy) -> str:
    """What was in memory when a cell's warm-up began, from the run column `preloaded`
    (manifest['preload']): cells whose tables were read in first, and cells recorded before
    the artifact did so (blank)."""
    read = kept = before = 0
    for c in tidy.all_cells():
        flags = [r["preloaded"] for r in c.runs if "preloaded" in r]
        if not flags:
            continue  # a steps cell, or a tidy table written before the column existed
        if any(f in ("", None) for f in flags):
            before += 1
        elif all(T.flag(f) for f in flags):
            read += 1
        else:
            kept += 1
    if read + kept + before == 0:
        return ""
    def cells(n: int) -> str:
        return f"{n} cell" + ("" if n == 1 else "s")
    parts = [f"{cells(read)} read their tables into memory before the warm-up (each table's rows and "
             "every InnoDB index once, MyISAM's indexes into its key caches)"] if read else []
    if kept:
        parts.append(f"{cells(kept)} read nothing in first (MEMORY tables live in memory; the full-text "
                     "cells' tables, on either engine, are not read in first)")
    if before:
        parts.append(f"{cells(before)} were recorded before cells read their tables in (an InnoDB "
                     "cell's buffer pool then filled during its warm-up)")
    return "; ".join(parts)


# --- the artifact's side of a study's SETUP row ----------------------------------------

def _values(cells, col):
    return sorted({c.int(col) for c in cells if c.key.get(col, "") != ""})


def _cores_by_experiment(tidy) -> str:
    """mysqld's measured core counts per experiment (a profile's `cores: auto`, `max` and `study`
    differ by experiment), as _by_experiment gives a setting."""
    return _by_experiment(tidy, lambda e: tuple(_values(tidy.cells(e), "cores")) or None, join_words)


def _spec_int(tidy, pick):
    """value(experiment) for _by_experiment: pick(its spec) as an int, None when it gives none."""
    def value(e):
        v = pick(tidy.spec(e))
        return None if v is None else int(v)
    return value


def _by_experiment(tidy, value, fmt=fmt_int) -> str:
    """'1{,}000; 20{,}000 in x': a per-experiment setting of the measured experiments (value(experiment)
    -> value or None), the most common value first and bare, the others naming their experiments."""
    by = {}
    for e in tidy.experiments:
        v = value(e)
        if v is not None:
            by.setdefault(v, []).append(e)
    if not by:
        return NA
    order = sorted(by, key=lambda v: (-len(by[v]), v))
    return "; ".join([fmt(order[0])] + [f"{fmt(v)} in {', '.join(tex_tt(e) for e in by[v])}" for v in order[1:]])


def _kind(spec):
    return kinds.KINDS.get(spec.get("kind"))  # None: no spec (an empty tidy table)


def _sbtest_rows(spec):
    """Rows per table of a kind whose scale is its dataset's (sbtest's table_size)."""
    k = _kind(spec)
    key = datasets.scale_key(spec) if k is not None and k.SCALE_KEY is None else None
    return spec.get(key) if key else None


def _steps_rows(spec):
    """Rows of a kind with a scale of its own (a step script's rows)."""
    key = getattr(_kind(spec), "SCALE_KEY", None)
    return spec.get(key) if key else None


def _counts(tidy, col, words) -> str:
    """'words[v] in N cells (experiments)' per value of a cell key column, most cells first."""
    cells = Counter(c.key.get(col) for c in tidy.all_cells() if c.key.get(col))
    if not cells:
        return NA
    exps = {}
    for name, exp in tidy.experiments.items():
        for c in exp.cells:
            if c.key.get(col) and name not in exps.setdefault(c.key[col], []):
                exps[c.key[col]].append(name)
    parts = []
    for i, (v, n) in enumerate(cells.most_common()):
        if i == 0:
            parts.append(f"{words.get(v, v)} in {n} of {sum(cells.values())} cells")
        else:
            parts.append(f"{words.get(v, v)} in {n} ({', '.join(exps[v])})")
    return tex_escape("; ".join(parts))


def _harness_value(cfg, option) -> set:
    """What the my.cnf the harness writes sets `option` to before any dataset sizes it:
    the profile's server.options, else every build family's default (harness.measure.mycnf)."""
    own = ((cfg.get("server") or {}).get("options") or {}).get(option)
    if own is not None:
        return {mycnf.size_bytes(own)}
    return {mycnf.size_bytes(o[option]) for f in mycnf.FAMILY_DEFAULTS if option in (o := mycnf.family_defaults(f))}


def sized_from_data(dataset: str) -> bool | None:
    """Does the dataset's own my.cnf part (its server_options) size the buffers from the data?
    None for a dataset this checkout does not know."""
    mod = datasets.all_datasets().get(dataset)
    if mod is None:
        return None
    opts = mod.server_options({"tables": 1, "table_size": 1}, "mysql-5.6")
    return any(option in opts for option, _ in BUFFERS.values())


def buffers(tidy) -> str:
    """Per dataset, the buffers the servers reported (buffer_bytes of the runs) and whether they
    were the harness's fixed my.cnf values or sized from the data."""
    seen = {}
    for name, exp in tidy.experiments.items():
        ds = tidy.spec(name).get("dataset")
        for c in exp.cells if ds else []:
            engine = c.key.get("engine", "").split("-")[0]
            for r in c.runs:
                b = T.number(r.get("buffer_bytes"))
                if engine in BUFFERS and b:
                    seen.setdefault(ds, {}).setdefault(engine, set()).add(int(b))
    parts = []
    for ds, engines in sorted(seen.items()):
        words, default = [], True
        for engine, (option, what) in BUFFERS.items():
            if engine not in engines:
                continue
            vals = sorted(engines[engine])
            words.append(f"{what} {_mb(vals[0])}" + (f"--{_mb(vals[-1])}" if len(vals) > 1 else "") + " MB")
            default = default and set(vals) <= _harness_value(tidy.config, option)
        sized = sized_from_data(ds)
        how = ("sized from the data" + (", here the minimum" if default else "") if sized
               else "fixed my.cnf values, whatever the data" if sized is False and default
               else "as the servers reported them")
        parts.append(f"{tex_tt(ds)} tables: " + tex_escape(f"{', '.join(words)} ({how})"))
    return "; ".join(parts) or NA


MEMCG = {"shared": "sysbench charged to the server's memory cgroup",
         "apart": "sysbench in a memory cgroup of its own"}


def placement_text(placements: list[dict]) -> str:
    """The run's placements (tidy provenance: backend, mechanism, client_memcg), LaTeX:
    e.g. 'docker backend (cpuset), sysbench charged to the server's memory cgroup'."""
    parts = []
    for p in placements:
        words = f"{p['backend']} backend ({p['mechanism']})"   # tidy provenance: always both
        if p.get("client_memcg"):
            words += ", " + MEMCG.get(p["client_memcg"], f"sysbench memory cgroup {p['client_memcg']}")
        parts.append(words)
    return tex_escape("; ".join(distinct(parts))) if parts else ""


def artifact_value(tidy, key) -> str:
    """What this artifact did for a study's SETUP aspect (LaTeX)."""
    cells, prov, cfg = tidy.all_cells(), tidy.provenance, tidy.config
    sb = cfg.get("sysbench") or {}
    profile = f" (profile {tex_escape(cfg.get('profile') or NA)})"
    if key == "hardware":
        hosts = prov.get("hosts") or []
        return tex_escape("; ".join(f"{h.get('cpu_model', '?')}, {h.get('n_cpus', '?')} logical CPUs"
                                    for h in hosts)) or NA
    if key == "cores":
        held = placement_text(prov.get("placement") or [])
        return (_cores_by_experiment(tidy) + " (mysqld and sysbench on disjoint CPUs"
                + (f"; {held}" if held else "") + ")")
    if key == "users":
        return join_words(_values(cells, "users")) or NA
    if key == "table_size":
        v = _by_experiment(tidy, _spec_int(tidy, _sbtest_rows))
        return v + profile if v != NA else v
    if key == "steps_rows":
        v = _by_experiment(tidy, _spec_int(tidy, _steps_rows))
        return v + profile if v != NA else v
    if key == "duration":
        if sb.get("duration_s") is None:
            return NA
        return f"{fmt_num(sb.get('warmup_s'))}\\,s discarded warm-up, then {fmt_num(sb['duration_s'])}\\,s"
    if key == "repetitions":
        ns = sorted({c.reps for c in cells})
        return (f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}--{ns[-1]}") + " per cell" if ns else NA
    if key == "builds":
        return ", ".join(tex_tt(b.get("name")) for b in prov.get("builds") or [] if b.get("name")) or NA
    if key == "load":
        v = distinct(str(s.get("version", "")).removeprefix("sysbench ") for s in prov.get("sysbench") or [])
        return f"sysbench {tex_escape(', '.join(v) or NA)}"
    if key == "rand_type":
        if not sb.get("rand_type"):
            return NA
        return f"\\texttt{{-{{}}-rand-type={tex_escape(sb['rand_type'])}}} on every run, seed {fmt_num(sb.get('seed'))}"
    if key == "buffers":
        return buffers(tidy)
    counted = [f for f in factors.FACTORS.values() if f.setup == key]
    if counted:  # a factor's values, as the cells were measured (e.g. PFS instruments, log flush)
        return _counts(tidy, counted[0].name, counted[0].value_words)
    if key == "metric":
        return ("the server's statement counters (Com\\_*) without BEGIN/COMMIT; sysbench's count as a "
                "cross-check")
    return NA


# --- the table ---------------------------------------------------------------------

def deviation_rows(tidy) -> list[tuple[str, str, str]]:
    """(aspect, the studies, this artifact) -- LaTeX -- in the order of the module's docstring."""
    rows, seen = [], {}
    for mod in studies.all_studies().values():
        letter = mod.TITLE.split(":")[0].replace("Study ", "")
        for aspect, studied, key in mod.SETUP:
            if aspect in seen:  # one row per aspect, the studies' values side by side
                i = seen[aspect]
                rows[i] = (rows[i][0], rows[i][1] + f"; {letter}: {tex_escape(studied)}", rows[i][2])
            else:
                seen[aspect] = len(rows)
                rows.append((tex_escape(aspect), f"{letter}: {tex_escape(studied)}", artifact_value(tidy, key)))
    rows += [tuple(tex_escape(x) for x in row) for row in studies.deviations(tidy)]
    for f in factors.FACTORS.values():
        exps = [e for e in tidy.experiments if f.name in (tidy.spec(e).get("variants") or {})]
        where = f"; set in {', '.join(exps)}" if exps else ""
        rows.append((tex_escape(f.words), tex_escape(f.note or "not stated"),
                     tex_escape(f"{str(f.baseline).replace('_', ' ')} unless varied{where}")))
    for c in studies.claims():
        if c.deviation:
            # how the deviation limits the verdict, when the claim says (its `limits`, also in its reason)
            here = c.deviation + (f"; how it limits the verdict: {c.limits}" if c.limits else "")
            rows.append((f"{tex_escape(c.study)} {tex_tt(c.id)}", tex_escape(c.published), tex_escape(here)))
    sb = (tidy.config or {}).get("sysbench") or {}
    rows.append(("server starts", "not stated", tex_escape(
        "one per setting: its users values in a random order on one server start, each with its own "
        "warm-up and window" if sb.get("users_on_one_server") else
        "one per cell: every users value on a server started for it alone")))
    rows.append(("data in memory", "not stated", tex_escape(memory_sentence(tidy))))
    cached = preload_sentence(tidy)
    if cached:
        rows.append(("caches when a run starts", "A: every table already in the file system cache; "
                     "B, C: not stated", tex_escape(cached)))
    lanes = lanes_sentence((tidy.provenance or {}).get("placement") or [])
    if lanes:
        rows.append(("cells side by side", "one at a time", tex_escape(lanes)))
    duet = duet_sentence((tidy.provenance or {}).get("placement") or [], tidy)
    if duet:
        rows.append(("a compared pair's two cells", "one after the other", tex_escape(duet)))
    return rows


def duet_sentence(placements: list[dict], tidy=None) -> str:
    """pairing: duet, from the manifests (some pair ran at once) and the profile (which factor
    each experiment pairs, harness.plan.duet): what ran at once and what did not."""
    if not any(p.get("duet") for p in placements):
        return ""
    from harness.plan import cells as plan, duet
    paired, alone = [], []
    for e in (tidy.experiments if tidy is not None else []):
        name, _ = duet.factor(tidy.spec(e))
        if name and plan.grouped(tidy.config, e):   # users on one server: its groups run as blocks
            name = None
        (paired if name else alone).append(f"{e} ({name})" if name else e)
    apart = any(p.get("duet_apart") for p in placements)
    over = any(p.get("duet") and p.get("oversubscribed") for p in placements)
    return ("duet pairing: two cells that differ only in an experiment's paired factor ran at once, each on "
            "one of two twin lanes, their warm-ups and windows started together, side A on the first twin "
            "in odd blocks and on the second in even ones (one block more on one twin when an experiment's "
            "blocks are odd in number; two servers side by side, which the studies never ran)"
            + (f"; paired: {', '.join(paired)}" if paired else "")
            + (f"; run as blocks, one cell after another: {', '.join(alone)}" if alone else "")
            + "; a claim comparing another factor compares cells that ran at different times, as in the "
              "block design"
            + ("; so did the pairs whose width had no twin lanes" if apart else "")
            + ("; the twin lanes shared CPUs (oversubscribed), so the two sides of a pair competed for "
               "them: their ratio was measured under that contention" if over
               else "; the twins share no physical core"))


def lanes_sentence(placements: list[dict]) -> str:
    """How the run's cells shared the host (harness.plan.lanes), from the manifests' lanes."""
    counts = sorted({p["lanes"] for p in placements if p.get("lanes")})
    if not counts or counts == [1]:
        return ""
    over = any(p.get("oversubscribed") for p in placements)
    duet = any(p.get("duet") for p in placements)
    return (f"blocks on {' or '.join(map(str, counts))} lanes at once, each block wholly on one lane"
            + (" (a duet pair on two twin lanes)" if duet else "")
            + ("; oversubscribed: the lanes shared CPUs, so cells on different lanes competed for "
               "them during their windows" if over else "; the lanes share no physical core"))


def deviations_tex(tidy) -> str:
    lines = [GENERATED, r"\begin{tabularx}{\linewidth}{@{}>{\raggedright\arraybackslash\hsize=0.7\hsize}X"
             r">{\raggedright\arraybackslash\hsize=1.1\hsize}X>{\raggedright\arraybackslash\hsize=1.2\hsize}X@{}}",
             r"\toprule", r"Aspect & The studies & This artifact\\", r"\midrule"]
    for a, s, h in deviation_rows(tidy):
        lines.append(f"{a} & {s} & {h}\\\\")
    lines += [r"\bottomrule", r"\end{tabularx}", ""]
    return "\n".join(lines)
