"""Every repository path the README and docs/*.md name in backticks exists.

Why: a reader follows these paths first; a renamed file leaves the docs
pointing at nothing, and nothing else notices. A backticked span counts as a
path when it is one token that contains a `/` or ends in a known source
extension, and is not a URL, an option, a `name:value` reference, an absolute
path outside the checkout, or a template with `<placeholders>`. Paths are
relative to the repository root. Generated outputs (anything .gitignore
ignores, e.g. `paper/generated/claims.csv`) need not exist. A bare file name
(no `/`) is found anywhere in the checkout, or counts as generated when the
pipeline code (Snakefile, workflow/) names it, as it does the per-cell files
such as `manifest.json`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KNOWN_EXTENSIONS = (".py", ".smk", ".R", ".r", ".yaml", ".yml", ".md", ".tex", ".bib", ".cff",
                    ".json", ".csv", ".tsv", ".lua", ".sh", ".nix", ".lock", ".toml", ".txt",
                    ".pdf", ".png", ".cfg", ".ini")


def code_spans(markdown: str) -> list[str]:
    """Inline code spans of a Markdown text; fenced blocks (commands) skipped."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", markdown, flags=re.S | re.M)
    return [m.group(2).strip() for m in re.finditer(r"(`+)(.+?)\1", text)]


def expand_braces(span: str) -> list[str]:
    """`a/{b,c}/d` -> [`a/b/d`, `a/c/d`] (one level, as the docs use it)."""
    m = re.search(r"\{([^{}]*)\}", span)
    if not m:
        return [span]
    return [x for alt in m.group(1).split(",")
            for x in expand_braces(span[:m.start()] + alt + span[m.end():])]


def path_candidates(span: str) -> list[str]:
    """The repository paths a code span names, or [] if it is not a path."""
    if (not span or re.search(r"\s", span) or "://" in span or "<" in span or ">" in span
            or "…" in span or ":" in span or span.startswith(("-", "/"))):
        return []
    if "/" not in span and not span.endswith(KNOWN_EXTENSIONS):
        return []
    return expand_braces(span)


def ignore_patterns(root: Path) -> list[str]:
    """The patterns of the root .gitignore, in order."""
    f = root / ".gitignore"
    lines = f.read_text(encoding="utf-8").splitlines() if f.exists() else []
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def _glob_regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out) + r"\Z"


def is_ignored(rel: str, patterns: list[str]) -> bool:
    """Whether .gitignore `patterns` ignore `rel` or a directory above it (the
    subset of gitignore rules this repository uses: anchored and floating
    globs, directory patterns, negation)."""
    parts = [p for p in rel.strip("/").split("/") if p]
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for raw in patterns:
        negate = raw.startswith("!")
        pat = raw[1:] if negate else raw
        pat = pat.rstrip("/")
        anchored = "/" in pat
        rx = re.compile(_glob_regex(pat.lstrip("/")))
        if any(rx.match(pre if anchored else pre.rsplit("/", 1)[-1]) for pre in prefixes):
            ignored = not negate
    return ignored


def exists(root: Path, rel: str) -> bool:
    """`rel` (a glob if it has wildcards) names something inside `root`."""
    target = (root / rel).resolve()
    if root.resolve() not in (target, *target.parents):
        return False
    if any(c in rel for c in "*?["):
        return any(root.glob(rel.rstrip("/")))
    return target.exists()


def checkout_files(root: Path, patterns: list[str]):
    """Relative paths of the checkout's files, ignored directories pruned."""
    for d, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if x != ".git"
                   and not is_ignored(os.path.normpath(os.path.join(rel_dir, x)), patterns)]
        for f in files:
            yield os.path.normpath(os.path.join(rel_dir, f))


def pipeline_text(root: Path) -> str:
    """The pipeline's own code, where generated file names are written down."""
    files = [root / "Snakefile", *sorted((root / "workflow").rglob("*"))]
    return "\n".join(f.read_text(encoding="utf-8", errors="replace")
                     for f in files if f.is_file() and f.suffix in {"", ".py", ".smk", ".R", ".lua"})


def missing_paths(root: Path, doc: Path) -> list[str]:
    """The paths `doc` names in backticks that are neither in the checkout nor
    generated outputs."""
    patterns = ignore_patterns(root)
    basenames = None
    code = None
    missing = []
    for span in dict.fromkeys(code_spans(doc.read_text(encoding="utf-8"))):
        for rel in path_candidates(span):
            if exists(root, rel) or is_ignored(rel, patterns):
                continue
            if "/" not in rel:
                if basenames is None:
                    basenames = {os.path.basename(p) for p in checkout_files(root, patterns)}
                    code = pipeline_text(root)
                if rel in basenames or rel in code:
                    continue
            missing.append(rel)
    return missing


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_documented_paths_exist(doc):
    missing = missing_paths(ROOT, doc)
    for rel in missing:
        print(f"{doc.relative_to(ROOT)}: missing `{rel}`")
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_checker_finds_and_ignores_what_it_should(tmp_path):
    (tmp_path / "workflow").mkdir()
    (tmp_path / "workflow" / "a.py").write_text("OUT = 'manifest.json'\n")
    (tmp_path / ".gitignore").write_text("/data/raw/\n/figures/*.pdf\n__pycache__/\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "Run `workflow/a.py` and `workflow/{a.py,b.py}`; see `docs/gone.md`, "
        "`https://example.org/x/y`, `data/raw/<cell>/`, `data/raw/A3/x.csv`, "
        "`figures/fig.pdf`, `--opt=a/b`, `github:o/r`, `/nix/store`, `../elsewhere/x.md`, "
        "`manifest.json`, `a.py`, `lost.yaml`, `plain_word`.\n"
        "```sh\nrun not/a/path.py\n```\n")
    assert missing_paths(tmp_path, doc) == ["workflow/b.py", "docs/gone.md",
                                            "../elsewhere/x.md", "lost.yaml"]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a git checkout")
def test_ignore_rules_agree_with_git():
    """The small .gitignore matcher decides as git does on every path the docs
    name plus the generated outputs the README mentions."""
    patterns = ignore_patterns(ROOT)
    paths = {rel for doc in DOCS for span in code_spans(doc.read_text(encoding="utf-8"))
             for rel in path_candidates(span) if not rel.startswith("..")}
    paths |= {"paper/generated/claims.csv", "figures/x.pdf", "figures/sub/x.pdf", "data/raw/A3/c",
              "workflow/harness/__pycache__/x.pyc", "x/Rplots.pdf", "resources/builds/b/bin/mysqld",
              "workflow/harness/analysis/claims.py", "paper/main.tex", "data/tidy/"}
    for rel in sorted(paths):
        if not rel.endswith("/") and (ROOT / rel).is_dir() is False and any(
                p.rstrip("/") == "/" + rel for p in patterns if p.endswith("/")):
            rel += "/"  # a directory-only pattern: ask git about the directory, as the docs mean it
        git = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "-q", rel],
                             capture_output=True).returncode == 0
        assert is_ignored(rel, patterns) == git, f"{rel}: matcher {not git}, git {git}"
