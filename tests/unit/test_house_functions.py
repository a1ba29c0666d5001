"""No function in workflow/harness over MAX_FUNCTION lines (end_lineno - lineno + 1, its
decorators not counted), but declarative tables and argparse set-up, each listed here
with why: a long function is split into small named ones."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "workflow" / "harness"
MAX_FUNCTION = 80

# (file relative to workflow/harness, function) -> why it may be longer
EXEMPT = {
    ("cli.py", "parser"): "argparse set-up: one add_parser block per command, declarative",
}


def long_functions() -> dict[tuple[str, str], int]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION:
                    out[(str(p.relative_to(PKG)), node.name)] = n
    return out


def test_no_function_over_the_limit():
    long = long_functions()
    bad = {f"workflow/harness/{f}: {name} ({n} lines)" for (f, name), n in long.items() if (f, name) not in EXEMPT}
    assert bad == set(), f"functions over {MAX_FUNCTION} lines: split them into small named functions"
    assert set(EXEMPT) <= set(long), f"exempt but no longer long: {sorted(set(EXEMPT) - set(long))}; drop them"
