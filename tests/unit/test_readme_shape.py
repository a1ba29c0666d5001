"""The README stays a front page: it fits in 200 lines, the two commands come first,
and every docs page it sends the reader to exists (and every docs page is reachable
from it), so what it leaves out is one link away."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 200
FIRST_COMMANDS = ["./artifact paper", "./artifact test"]


def readme() -> str:
    return README.read_text(encoding="utf-8")


def linked_pages(text: str) -> set[str]:
    """The docs pages a Markdown text names: backticked `docs/x.md` spans and [..](docs/x.md) links."""
    spans = re.findall(r"`(docs/[^`\s]+\.md)`", text)
    links = re.findall(r"\]\((docs/[^)\s#]+\.md)(?:#[^)]*)?\)", text)
    return set(spans) | set(links)


def first_sh_block(text: str) -> tuple[int, list[str]]:
    """(offset, commands without comments) of the first fenced block."""
    m = re.search(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
    assert m and m.group(1) == "sh", "the README's first fenced block is not a ```sh block"
    cmds = [line.split("#", 1)[0].strip() for line in m.group(2).splitlines()]
    return m.start(), [c for c in cmds if c]


def test_the_readme_fits_in_200_lines():
    n = len(readme().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines (at most {MAX_LINES}): move detail to a docs/ page"


def test_the_two_commands_come_first():
    text = readme()
    start, cmds = first_sh_block(text)
    assert cmds == FIRST_COMMANDS, cmds
    assert "\n## " not in text[:start], "a section comes before the two commands"


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^\./artifact test$", ci, re.M), ".ci/run does not call ./artifact test"


def test_every_docs_page_the_readme_links_exists_and_every_page_is_linked():
    linked = linked_pages(readme())
    assert linked, "the README links no docs page"
    missing = sorted(p for p in linked if not (ROOT / p).is_file())
    assert not missing, f"the README links docs pages that do not exist: {missing}"
    pages = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")}
    assert not pages - linked, f"docs pages the README does not link: {sorted(pages - linked)}"


def test_the_link_extraction_sees_spans_and_links():
    text = "see `docs/a.md` and [b](docs/b.md#x), not `docs/c.txt` or docs/d.md"
    assert linked_pages(text) == {"docs/a.md", "docs/b.md"}


# each generated block: the script that writes it -> (its markers, the one page that holds them)
GENERATED = {
    "times": ("scripts/time-table.py", "README.md"),
    "hosts": ("scripts/host-table.py", "README.md"),
    "plan": ("scripts/plan-table.py", "docs/profiles.md"),
    "nodes": ("scripts/plan-table.py", "docs/slurm.md"),
    "power": ("scripts/power-table.py", "docs/method.md"),
    "reliability": ("scripts/reliability-table.py", "docs/reliability.md"),
}


def test_every_generated_block_lives_once_where_its_script_writes_it():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    for name, (script, page) in GENERATED.items():
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        src = (ROOT / script).read_text()
        assert begin in src and end in src, f"{script} does not write the {name} block"
        assert page in src or (page == "README.md" and '"README.md"' in src), f"{script} does not name {page}"
        own_line = re.compile(rf"^\s*{re.escape(begin)}\s*$", re.M)  # a marker, not prose quoting it
        holders = [str(p.relative_to(ROOT)) for p in pages if own_line.search(p.read_text(encoding="utf-8"))]
        assert holders == [page], f"the {name} block is in {holders}, its script writes {page}"
        text = (ROOT / page).read_text(encoding="utf-8")
        assert text.count(begin) == 1 and text.count(end) == 1 and text.index(begin) < text.index(end)


def test_the_readme_host_table_is_what_the_plan_says_now():
    """The 'which host do I need' block is ./artifact plan's figures on the recorded hosts today."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "host-table.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, "README's hosts block is stale: run scripts/host-table.py\n" + r.stderr
