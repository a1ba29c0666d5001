"""The house rules of workflow/harness, read from the code itself (docs/architecture.md):
the stages' order (harness.STAGES, the one table docs/architecture.md draws): no module
imports from a stage above its own, imports inside functions and importlib loads included;
no import circle, no module over 500 lines, no two
modules with the same file name (but __init__.py), one program entry (harness/__main__.py),
and rules that run commands, never Python logic of their own (no `run:` blocks)."""
from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "workflow" / "harness"
MAX_LINES = 500
sys.path.insert(0, str(PKG.parent))

import harness  # noqa: E402  (STAGES, stage_of: the table itself; it imports nothing)


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
    found |= dynamic_loads(tree, name, known)
    # importing a.b.c runs a and a.b first: their __init__ are edges too
    closed = set()
    for m in found:
        parts = m.split(".")
        closed |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return {m for m in closed if m in known and m != name}


def _is_import_module(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr in ("import_module", "__import__")) or \
        (isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))


def dynamic_loads(tree: ast.AST, name: str, known: set[str]) -> set[str]:
    """The harness modules an importlib.import_module call may load: its literal argument;
    f"{__name__}.{x}" (every package directly under this one: the study registry's
    discovery); any other argument: every harness module this file names in a string
    (e.g. cli's table of commands that parse their own arguments)."""
    out = set()
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_import_module(n)):
        arg = call.args[0] if call.args else None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            out.add(arg.value)
        elif isinstance(arg, ast.JoinedStr) and isinstance(arg.values[0], ast.FormattedValue) and \
                isinstance(arg.values[0].value, ast.Name) and arg.values[0].value.id == "__name__":
            out |= {m for m in known if m.startswith(name + ".") and "." not in m[len(name) + 1:]}
        else:
            out |= strings & known
    return out


def graph_of() -> dict[str, set[str]]:
    """Every harness module -> the harness modules it imports (see imports())."""
    mods = modules()
    graph = {}
    for name, path in mods.items():
        edges = imports(path, name, set(mods))
        # a package's own __init__ is run before its submodules: that is no edge back
        graph[name] = {m for m in edges if not name.startswith(m + ".")}
    return graph


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a stage above the importer's own (harness.STAGES)."""
    return sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs
                  if harness.stage_of(b) > harness.stage_of(a))


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
    assert cycles(graph_of()) == []


def test_every_module_is_in_a_stage():
    missing = []
    for name in modules():
        try:
            harness.stage_of(name)
        except KeyError:
            missing.append(name)
    assert missing == []


def test_no_module_imports_from_a_stage_above_its_own():
    """Function-level imports and importlib loads (the study registry's discovery, cli's
    own-parser commands) count: a lower stage never imports a higher one."""
    assert upward(graph_of()) == []


def test_the_checker_sees_an_upward_import_and_a_dynamic_load(tmp_path):
    """The stage check can fail: a measure module that imports the plan inside a function,
    and a base module that loads a study by importlib, are both upward."""
    src = tmp_path / "m.py"
    src.write_text("import importlib\ndef f():\n    from harness.plan import cells\n"
                   "    return importlib.import_module('harness.studies.b')\n")
    known = {"harness.plan", "harness.plan.cells", "harness.studies", "harness.studies.b"}
    edges = imports(src, "harness.measure.m", known)
    assert {"harness.plan.cells", "harness.studies.b"} <= edges
    assert upward({"harness.measure.m": edges}) == [
        "harness.measure.m -> harness.plan", "harness.measure.m -> harness.plan.cells",
        "harness.measure.m -> harness.studies", "harness.measure.m -> harness.studies.b"]


def drawn_stages() -> list[list[str]]:
    """The house drawing of docs/architecture.md: its entries (the lines indented two
    spaces in the code block under "## The house"), each as the dotted modules it names."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## The house\n.*?```\n(.*?)```", text, re.S).group(1)
    out = []
    for line in block.splitlines():
        m = re.match(r"^  (\S.*?)(?:\s{2,}|$)", line)
        if m:
            names = [n.strip() for n in m.group(1).split(",")]
            out.append(["harness." + n.rstrip("/").removesuffix(".py") for n in names])
    return out


def test_the_drawing_is_the_stage_table():
    """docs/architecture.md draws harness.STAGES, lowest first: the same members in the same order."""
    table = [[m for m in members if m != "harness"] for _, members in harness.STAGES]
    assert drawn_stages() == table


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


# (file, rule) -> why its run: block is allowed: it must hold one shell() of one harness command
RUN_BLOCKS = {
    ("workflow/rules/measure.smk", "block_open"):
        "its command line is computed in run:, not params: a params change (another profile's run "
        "left the .open) re-ran block_open and masked the cells reached through the old .open",
}


def test_rules_run_commands_not_python_blocks():
    rules = [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk"), *PKG.rglob("*.smk")]
    found = []
    for p in rules:
        rule, lines = None, p.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"(?:rule|checkpoint)\s+(\w+)\s*:", line)
            rule = m.group(1) if m else rule
            if re.match(r"\s+run:\s*$", line):
                body = []
                for nxt in lines[i + 1:]:
                    if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= len(line) - len(line.lstrip()):
                        break
                    body.append(nxt)
                found.append((str(p.relative_to(ROOT)), rule, "\n".join(body)))
    bad = [f"{f}: rule {r}" for f, r, _ in found if (f, r) not in RUN_BLOCKS]
    assert bad == [], "rules run commands, not Python blocks: " + ", ".join(bad)
    for f, r, body in found:  # an allowed block runs one harness command and nothing else
        assert body.count("shell(") == 1 and "{HARNESS}" in body, f"{f}: rule {r}'s run: block"
    assert {(f, r) for f, r, _ in found} == set(RUN_BLOCKS), "an allowed run: block is gone: drop it"


def test_no_text_is_split_back_into_its_structure():
    """Why a claim has no data is a value (harness.analysis.tidyread.Missing), not a
    "reason: detail" string split again by its readers."""
    split = [f"{p.relative_to(ROOT)}:{i}" for p in PKG.rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\.missing\([^)]*\)\.split\(", line)]
    assert split == []


def test_one_reader_of_the_defaults_layer():
    """config/default.yaml is read in harness.paths.defaults only; the config module merges
    a profile onto it, and the rest (argparse defaults included) read what it gives."""
    readers = sorted(str(p.relative_to(ROOT)) for p in PKG.rglob("*.py")
                     if re.search(r"""["']default\.yaml["']\s*\)?\s*\.read_text""", p.read_text()) or
                     re.search(r"""/\s*["']default\.yaml["']\)\.read""", p.read_text()))
    assert readers == ["workflow/harness/paths.py"]
