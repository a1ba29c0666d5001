"""The house rules of workflow/harness, read from the code itself (docs/architecture.md):
no import circle (imports inside functions included), no module over 500 lines, no two
modules with the same file name (but __init__.py), one program entry (harness/__main__.py),
and rules that run commands, never Python logic of their own (no `run:` blocks)."""
from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "workflow" / "harness"
MAX_LINES = 500


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the harness package."""
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The harness modules `path` imports anywhere in it (function bodies included):
    `import harness.x`, `from harness.x import y` (y a module when it is one), and the
    relative forms."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "harness"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "harness":
                continue
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in known}
    # importing a.b.c runs a and a.b first: their __init__ are edges too
    closed = set()
    for m in found:
        parts = m.split(".")
        closed |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return {m for m in closed if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_even_through_function_level_imports():
    mods = modules()
    graph = {}
    for name, path in mods.items():
        edges = imports(path, name, set(mods))
        # a package's own __init__ is run before its submodules: that is no edge back
        graph[name] = {m for m in edges if not name.startswith(m + ".")}
    assert cycles(graph) == []


def test_the_checker_sees_a_circle():
    """The check above can fail: a made-up pair that import each other is a circle."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_no_module_over_the_limit():
    long = {str(p.relative_to(ROOT)): n for p in PKG.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_two_modules_share_a_file_name():
    names = Counter(p.name for p in PKG.rglob("*.py") if p.name != "__init__.py")
    assert {n: c for n, c in names.items() if c > 1} == {}


def test_one_program_entry():
    mains = [str(p.relative_to(ROOT)) for p in PKG.rglob("*.py")
             if p.name != "__main__.py" and re.search(r"^if __name__ == .__main__.:", p.read_text(), re.M)]
    assert mains == []


def test_rules_run_commands_not_python_blocks():
    rules = [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk"), *PKG.rglob("*.smk")]
    blocks = [f"{p.relative_to(ROOT)}:{i}" for p in rules
              for i, line in enumerate(p.read_text().splitlines(), 1) if re.match(r"\s+run:\s*$", line)]
    assert blocks == []
