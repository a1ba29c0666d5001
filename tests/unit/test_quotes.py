"""Every claim's rule stands on the study's own words: docs/studies.md's table
"The claims in the studies' words" has one row per claim id (the quote, the rule),
and the rule each claim declares in its study package is the rule written there.
No rule without a quote, no quote without a claim."""
from __future__ import annotations

import re
from pathlib import Path

from harness import studies

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## The claims in the studies' words"


def rule_text(c) -> str:
    return c.rule_words()


def quote_table() -> dict:
    text = (ROOT / "docs" / "studies.md").read_text()
    assert HEADING in text, f"docs/studies.md lacks the section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \| (.*) \| `([^`]*)` \|$", line.strip())
        if m:
            cid, quote, rule = m.groups()
            assert cid not in rows, f"{cid} quoted twice"
            rows[cid] = (quote.strip(), rule)
    return rows


def test_every_claim_has_a_quote_and_its_rule(monkeypatch):
    # the repository's studies: a study kept outside it ($MYSQLBENCH_STUDY_PATH) quotes its own words
    monkeypatch.delenv(studies.PATH_VAR, raising=False)
    table = quote_table()
    claims = {c.id: c for c in studies.claims()}
    assert sorted(set(claims) - set(table)) == [], "claims without a quote in docs/studies.md"
    assert sorted(set(table) - set(claims)) == [], "quotes without a claim"
    for cid, c in claims.items():
        quote, rule = table[cid]
        assert quote and quote != "—", f"{cid}: no quote"
        assert rule == rule_text(c), f"{cid}: the registry's rule {rule_text(c)!r}, the table's {rule!r}"
