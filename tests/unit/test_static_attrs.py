"""Every module of the harness imports, and every `module.attr` on an imported harness
module names something that module has: a static check over the AST of each harness
file (and the import aliases of the Snakemake files), so a renamed or moved function
cannot hide on a path no other test runs (as `datasets.fulltext` did on A1's OHSUMED path)."""
from __future__ import annotations

import ast
import importlib
import re
import types
from pathlib import Path

import pytest
from conftest import ROOT

WORKFLOW = ROOT / "workflow"
HARNESS = WORKFLOW / "harness"
SMK = sorted([ROOT / "Snakefile", *WORKFLOW.rglob("*.smk")])


def module_name(path: Path) -> str:
    parts = path.relative_to(WORKFLOW).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}
MODULES = {n: p for n, p in FILES.items() if p.name != "__main__.py"}  # importing __main__ runs the CLI


def _submodule(package: types.ModuleType, name: str):
    """package.name as a module (importing it if it is one), else None."""
    value = getattr(package, name, None)
    if isinstance(value, types.ModuleType):
        return value
    if not hasattr(package, "__path__"):
        return None
    try:
        return importlib.import_module(f"{package.__name__}.{name}")
    except ModuleNotFoundError:
        return None


def _from_base(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = here.split(".")
    pkg = parts if is_package else parts[:-1]
    pkg = pkg[:len(pkg) - node.level + 1]
    return ".".join(pkg + ([node.module] if node.module else []))


def import_bindings(node, here: str, is_package: bool) -> dict[str, types.ModuleType]:
    """{local name: harness module} that one import statement binds. Raises ImportError
    for a harness module or name that does not exist (an import inside a function
    runs only when the function does)."""
    out = {}
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name.split(".")[0] != "harness":
                continue
            if a.asname:
                out[a.asname] = importlib.import_module(a.name)
            else:
                out["harness"] = importlib.import_module("harness")
    elif isinstance(node, ast.ImportFrom):
        base = _from_base(node, here, is_package)
        if base.split(".")[0] != "harness":
            return out
        mod = importlib.import_module(base)
        for a in node.names:
            sub = _submodule(mod, a.name) if a.name != "*" else None
            if sub is not None and sub.__name__.startswith("harness"):
                out[a.asname or a.name] = sub
            elif a.name != "*" and not hasattr(mod, a.name):
                raise ImportError(f"cannot import name {a.name!r} from {base}")
    return out


def _local_names(fn) -> set[str]:
    """Names a function, lambda or comprehension binds itself (arguments, assignments,
    loop and with targets): inside it they are not the module-level imports."""
    names = set()
    args = getattr(fn, "args", None)
    if args is not None:
        names |= {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                  *filter(None, [args.vararg, args.kwarg])]}
    body = getattr(fn, "body", None)
    body = body if isinstance(body, list) else [body] if body is not None else []
    for n in [*body, *getattr(fn, "generators", [])]:
        for m in ast.walk(n):
            if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Store):
                names.add(m.id)
            elif isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(m.name)
    return names


class AttrCheck(ast.NodeVisitor):
    """Walks one file with a scope stack of {name: module}; records `name.attr` (and
    `name.sub.attr` through submodules) that the module lacks."""

    SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
              ast.DictComp, ast.GeneratorExp)

    def __init__(self, here: str, is_package: bool, path: Path):
        self.here, self.is_package, self.path = here, is_package, path
        self.scopes: list[dict] = [{}]
        self.missing: list[str] = []

    def visit_Import(self, node):
        try:
            self.scopes[-1].update(import_bindings(node, self.here, self.is_package))
        except ImportError as e:
            self.missing.append(f"{self.where(node)}: {ast.unparse(node)} ({e})")

    def where(self, node) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{node.lineno}"

    visit_ImportFrom = visit_Import

    def generic_visit(self, node):
        if isinstance(node, self.SCOPES):
            local = _local_names(node)
            inner = {k: v for k, v in self.scopes[-1].items() if k not in local}
            self.scopes.append(inner)
            super().generic_visit(node)
            self.scopes.pop()
        else:
            super().generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = generic_visit

    def resolve(self, node):
        if isinstance(node, ast.Name):
            return self.scopes[-1].get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            value = getattr(base, node.attr, None) if base is not None else None
            return value if isinstance(value, types.ModuleType) else None
        return None

    def visit_Attribute(self, node):
        base = self.resolve(node.value)
        if base is not None and not hasattr(base, node.attr) and _submodule(base, node.attr) is None:
            self.missing.append(f"{self.where(node)}: {ast.unparse(node)} ({base.__name__} has no {node.attr!r})")
        self.generic_visit(node)


def check_file(name: str, path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    v = AttrCheck(name, path.name == "__init__.py", path)
    # module-level imports first: a function may use a name imported below it
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            v.visit(node)
    v.missing.clear()  # the full walk below reports them, once
    v.visit(tree)
    return v.missing


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_harness_module_imports(name):
    importlib.import_module(name)


def test_every_attribute_of_an_imported_harness_module_exists():
    missing = [m for name, path in FILES.items() for m in check_file(name, path)]
    assert not missing, "\n".join(missing)


# -- the Snakemake files: not Python, so their `from harness... import x as y` aliases
# are read by pattern and every `y.attr` in any of them checked (they share one namespace)
_SMK_IMPORT = re.compile(r"^\s*from\s+(harness[\w.]*)\s+import\s+(\w+)(?:\s+as\s+(\w+))?", re.M)


def smk_aliases() -> dict[str, types.ModuleType]:
    out = {}
    for f in SMK:
        for base, name, alias in _SMK_IMPORT.findall(f.read_text()):
            sub = _submodule(importlib.import_module(base), name)
            if sub is not None:
                out[alias or name] = sub
    return out


def test_every_harness_attribute_the_snakemake_files_use_exists():
    aliases = smk_aliases()
    assert {"hplan", "hconfig", "hdatasets", "hstudies"} <= aliases.keys()  # the pattern finds them
    use = re.compile(r"(?<![\w.])(%s)((?:\.\w+)+)" % "|".join(map(re.escape, aliases)))
    missing, seen = [], 0
    for f in SMK:
        for i, line in enumerate(f.read_text().splitlines(), 1):
            for alias, chain in use.findall(line.split("#", 1)[0]):
                seen += 1
                obj = aliases[alias]
                for attr in chain[1:].split("."):  # through submodules, to the first non-module
                    if not hasattr(obj, attr):
                        missing.append(f"{f.relative_to(ROOT)}:{i}: {alias}{chain} "
                                       f"({obj.__name__} has no {attr!r})")
                    obj = getattr(obj, attr, None)
                    if not isinstance(obj, types.ModuleType):
                        break
    assert seen > 20 and not missing, "\n".join(missing)


def test_the_check_finds_a_missing_attribute(tmp_path):
    """The checker itself: a call to a function a module no longer has is reported, one
    shadowed by a local name is not."""
    src = ("from harness.measure import datasets\n"
           "from harness.studies.a1 import corpusbase\n"
           "def f(corpusbase):\n    return corpusbase.get('x')\n"
           "def g():\n    return datasets.fulltext.corpus_key({}), datasets.all_datasets\n"
           "def h():\n    from harness.plan.cells import no_such_function\n")
    p = tmp_path / "probe.py"
    p.write_text(src)
    missing = check_file("harness.plan.probe", p)
    assert len(missing) == 2, missing
    assert "datasets.fulltext" in missing[0] and "no 'fulltext'" in missing[0]
    assert "probe.py:8: from harness.plan.cells import no_such_function" in missing[1]
