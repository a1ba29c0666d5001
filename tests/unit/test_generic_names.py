"""Generic code names no study (docs/architecture.md, "The house"): no module of
workflow/harness outside harness/studies/ names a registered study (its package, its
NAME, its config `study:` codes), or a workload, dataset or step script a study brings
(harness.registry). What a study needs comes from the study through the registry. The
names are the registry's, so a study added later is covered without editing this test.

Read from the code, not the comments: string constants (f-strings' literal parts
included, docstrings not: they may name an example) and identifiers, and every import."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from harness import registry

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "workflow" / "harness"
STUDIES = PKG / "studies"

# (file relative to workflow/harness, name) -> why it cannot move. Keep it short; an
# entry no file needs any more fails the test.
ALLOWED: dict[tuple[str, str], str] = {
    ("measure/factors.py", "A1"): "the factor table's notes (words of the paper's factor table) say which "
                                  "study's baseline a level is; a factor is named there only "
                                  "(tests/unit/test_claims.py keeps factor names out of the study packages)",
    ("measure/factors.py", "A3"): "as A1's: the factor table's notes name the study whose baseline a level is",
}


def generic_files() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if STUDIES not in p.parents)


def registered() -> dict[str, str]:
    """{name: what it is} for every study, code, workload, dataset and step script the
    studies bring. A study's NAME is sought in strings only (a variable a1 is not study
    a1), and a one-letter one (b, c) only as its package."""
    out = {}
    for name, mod in registry.all_studies().items():
        out[mod.__name__] = f"study {name}'s package"
        if len(name) > 1:
            out[name] = f"study {name}"
        out.update({c: f"study {name}'s code" for c in mod.CODES})
    out.update({w: "a study's workload" for w in registry.workloads()})
    out.update({d: "a study's dataset" for d in registry.datasets()})
    out.update({s: "a study's step script" for s in registry.step_scripts()})
    # its experiments, but those named as a generic workload, its driver or a factor is
    # (point_select, read_only, key_cache: generic code names those for themselves)
    from harness.measure import factors, sysbench
    generic = {w: spec for w, spec in sysbench.all_workloads().items() if w not in registry.workloads()}
    shared = set(generic) | {Path(spec["script"]).stem for spec in generic.values()} | set(factors.FACTORS)
    out.update({e: "a study's experiment" for mod in registry.all_studies().values()
                for e in mod.EXPERIMENTS if e not in shared})
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def words(tree: ast.AST) -> list[tuple[int, str, bool]]:
    """(line, text, is it an identifier) of what the code says: string constants but
    docstrings, imported modules; identifiers, attribute, function and argument names."""
    skip, out = _docstrings(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((node.lineno, node.value, False))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, False) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [(node.lineno, m, False) for m in (node.module, *(f"{node.module}.{a.name}" for a in node.names))]
        else:
            ident = {ast.Name: "id", ast.Attribute: "attr", ast.FunctionDef: "name", ast.AsyncFunctionDef: "name",
                     ast.ClassDef: "name", ast.arg: "arg"}.get(type(node))
            if ident:
                out.append((node.lineno, getattr(node, ident), True))
    return out


def namings(path: Path, names: dict[str, str]) -> list[tuple[str, int, str]]:
    """(name, line, text) for every whole-word occurrence of a registered name (a study's
    NAME not in identifiers)."""
    studies = set(registry.all_studies())
    found = []
    for line, text, ident in words(ast.parse(path.read_text())):
        for name in names:
            if ident and name in studies:
                continue
            if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text):
                found.append((name, line, text))
    return found


def test_no_generic_module_names_a_study_or_what_it_brings():
    names, bad, used = registered(), [], set()
    for p in generic_files():
        rel = str(p.relative_to(PKG))
        for name, line, text in namings(p, names):
            if (rel, name) in ALLOWED:
                used.add((rel, name))
                continue
            bad.append(f"workflow/harness/{rel}:{line}: {name} ({names[name]}) in {text[:60]!r}")
    assert bad == [], "generic code names a study's part; let the study bring it through " \
                      "harness.registry:\n" + "\n".join(bad)
    assert set(ALLOWED) == used, f"allowed but no longer needed: {sorted(set(ALLOWED) - used)}"


def test_the_check_sees_a_study_named(tmp_path):
    """The scanner finds a code, a workload in an f-string, a study's import, and skips a docstring."""
    study = next(iter(registry.all_studies().values()))
    code, workload = study.CODES[0], next(iter(registry.workloads()))
    p = tmp_path / "m.py"
    p.write_text(f'"""{code} in a docstring is documentation."""\n'
                 f'import {study.__name__}\n'
                 f'x = f"{{y}} the {workload} workload"\n'
                 f'if spec["study"] == "{code}":\n    pass\n')
    found = {(n, line) for n, line, _ in namings(p, registered())}
    assert {(study.__name__, 2), (workload, 3), (code, 4)} <= found
    assert all(line != 1 for _, line in found)
