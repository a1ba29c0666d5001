"""`./artifact claims` as a reviewer reads it in a terminal: each row of claims.csv in at most
two lines of 80 columns (its id, build, host when several, verdict; then the measured magnitude
and a short reason), or with `--long` the full row on one line. Reads claims.csv only: what the
paper's table is made of, never a second computation."""
from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

from harness.analysis import claims as C
from harness.report import tables

WIDTH = 80
INDENT = "    "


def _g(x: float) -> str:
    """A ratio in three significant figures, as a reader says it: 1.13, 17.6, 193; halves
    rounded up as the studies' own figures are (2.045 is 2.05, as the published text says)."""
    d = Decimal(repr(x))
    if d == 0:
        return "0"
    exp = d.adjusted() - 2   # the place of the third significant figure
    q = d.quantize(Decimal(1).scaleb(min(exp, 0)), rounding=ROUND_HALF_UP)
    return f"{q.normalize():f}" if exp < 0 else f"{d.quantize(Decimal(1), rounding=ROUND_HALF_UP):f}"


def rule_text(row: dict) -> str:
    """The rule as the paper's table states it, its bounds in three figures (in [1.35, 2.1])."""
    side, t, th = row.get("side"), tables._f(row.get("threshold")), tables._f(row.get("threshold_hi"))
    if side == "within" and t is not None and th is not None:
        return f"in [{_g(t)}, {_g(th)}]"
    if side in ("above", "below") and t is not None:
        return f"{'>' if side == 'above' else '<'} {_g(t)}"
    return tables.rule_text(row)


def magnitude(row: dict) -> str:
    """The measured ratio with its interval, the published ratio and the rule, in a few words;
    the measured text without its parentheses when the claim has no ratio."""
    r = tables._f(row.get("ratio"))
    if r is None:
        return re.sub(r"\s*\((?:one repetition|[^()]*interval)[^()]*\)", "", row.get("measured") or "").strip(" —")
    lo, hi, cov = (tables._f(row.get(k)) for k in ("ratio_lo", "ratio_hi", "coverage"))
    text = f"{_g(r)}×" + (" (1 block)" if not cov and lo == hi
                          else f" [{_g(lo)}, {_g(hi)}]" if lo is not None and hi is not None else "")
    pub = tables._f(row.get("published_ratio"))
    if pub is not None:
        text += f" vs published {_g(pub)}×"
    rule = rule_text(row)
    return text + (f", rule {rule}: the direction only" if tables.direction_only(row) else f", rule {rule}")


def reason(row: dict, level: float) -> str:
    """What the verdict rests on or lacks: the table's short reason, or the reason's first clause
    for a claim not measurable here; a cell flagged unstable is said."""
    why = tables.short_reason(row, level)
    if row.get("verdict") == C.NOT_MEASURABLE and row.get("host") != C.ALL_HOSTS:
        why = (row.get("reason") or "").split(";", 1)[0]
    if "unstable" in (row.get("reason") or "") and row.get("verdict") != C.NOT_MEASURABLE:
        why = "; ".join(w for w in (why, "unstable cell") if w)
    return why


def _label(row: dict, several_hosts: bool) -> str:
    parts = [row.get("claim", "")]
    if row.get("build"):
        parts.append(row["build"])
    if several_hosts:
        parts.append("all hosts" if row.get("host") == C.ALL_HOSTS else f"host {row.get('host') or '?'}")
    return "  ".join(parts)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def short_lines(row: dict, several_hosts: bool, level: float = 0.9) -> list[str]:
    """A row in at most two lines of WIDTH columns: id, build[, host], verdict; then indented,
    the measured magnitude and the short reason (cut with … where longer; --long has it whole)."""
    label, verdict = _label(row, several_hosts), row.get("verdict", "")
    # the id and build stay on the first line (grep ^ID finds the row); the verdict goes down
    # to the second where the three do not fit
    head = f"{label}  {verdict}"
    lines, lead = ([head], "") if len(head) <= WIDTH else ([label], f"{verdict}: ")
    # not measurable: why is what counts (what was measured anyway is in --long)
    parts = ((reason(row, level),) if row.get("verdict") == C.NOT_MEASURABLE
             else (magnitude(row), reason(row, level)))
    detail = "; ".join(x for x in parts if x)
    if detail or lead:
        lines.append(_fit(INDENT + lead + detail, WIDTH))
    return lines


def long_line(row: dict, several_hosts: bool) -> str:
    """The whole row on one line: id, build[, host], verdict, published, measured, full reason."""
    extra = f" ({magnitude(row)})" if tables.direction_only(row) else ""
    return (f"{_label(row, several_hosts)}  {row.get('verdict', '')}{extra}  published "
            f"{row.get('published', '')}; measured {row.get('measured', '')}; {row.get('reason', '')}")


def render(rows: list[dict], long: bool = False, level: float = 0.9) -> list[str]:
    several = len(C.hosts_of(rows)) > 1
    out: list[str] = []
    for r in rows:
        out += [long_line(r, several)] if long else short_lines(r, several, level)
    return out


def summary(rows: list[dict]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.get("verdict", "")] = counts.get(r.get("verdict", ""), 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
