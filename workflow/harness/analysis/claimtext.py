"""How a claim row is written: figures (fmt_k, fmt_cores), an interval
(interval_text), and where and on which settings the compared cells ran
(cell_where, settings_text). Moved whole from harness.analysis.claimrules."""
from __future__ import annotations

from harness.analysis import tidyread as T


def fmt_k(q) -> str:
    """360000 -> '360K', 22967 -> '23.0K', 3900 -> '3.90K' (published style)."""
    if q is None:
        return "n/a"
    k = q / 1000
    return f"{k:.0f}K" if k >= 100 else f"{k:.1f}K" if k >= 10 else f"{k:.2f}K"


def fmt_cores(cores) -> str:
    cores = sorted(set(cores))
    if not cores:
        return "no cores"
    text = str(cores[0]) if len(cores) == 1 else f"{cores[0]}–{cores[-1]}"
    return f"{text} core" + ("" if cores == [1] else "s")


def interval_text(ci) -> str:
    if not ci.coverage and ci.lo == ci.hi:   # a peak bound of 0 coverage still has a width
        return f"{ci.point:.2f}× (one repetition: no interval)"
    return f"{ci.point:.2f}× [{ci.lo:.2f}, {ci.hi:.2f}] at {100 * ci.coverage:.0f}% coverage"


KEY_WORDS = (("workload", "workload"), ("tables", "tables"), ("cores", "cores (mysqld)"),
             ("users", "users"))


def cell_settings(cell: T.Cell) -> dict:
    """{setting: value} of a cell: its build, engine, workload, tables, cores, users and
    every factor of the factor table that applies to its engine (an empty column is
    the factor's baseline, harness.analysis.tidyread.setting_of)."""
    out = {"build": cell.build, "engine": cell.engine}
    for col, word in KEY_WORDS:
        if cell[col] != "":
            out[word] = cell[col]
    for name in T.factors.ORDER:
        if T.applies(name, cell.engine, cell["workload"] or None) and name != "replica":
            out[T.words(name).split(" (")[0]] = T.setting_of(cell, name).replace("_", " ")
    return out


def settings_text(cells) -> str:
    """'; settings: <common>; <cell>: <what differs>' -- every setting of the compared
    cells, what they share once and what differs per cell ('' without cells)."""
    cells = [c for c in cells if c is not None and getattr(c, "key", None)]
    if not cells:
        return ""
    seen, uniq = set(), []
    for c in cells:
        if c.name not in seen:
            seen.add(c.name)
            uniq.append(c)
    each = [cell_settings(c) for c in uniq]
    common = {k: v for k, v in each[0].items() if all(e.get(k) == v for e in each[1:])}
    text = "; settings: " + ", ".join(f"{k} {v}" for k, v in common.items())
    if len(uniq) > 1:
        text += "; differing: " + " vs ".join(
            ", ".join(f"{k} {v}" for k, v in e.items() if k not in common) or c.name
            for c, e in zip(uniq, each))
    return text


def cell_where(a: T.Cell, b: T.Cell) -> str:
    """'8 tables, 1 core, 4 vs 16 users': where the two compared cells ran."""
    def part(col, word):
        va, vb = a.int(col), b.int(col)
        unit = word if max(va, vb) == 1 else word + "s"
        return f"{va} {unit}" if va == vb else f"{va} vs {vb} {unit}"
    return ", ".join(part(c, w) for c, w in (("tables", "table"), ("cores", "core"), ("users", "user")))
