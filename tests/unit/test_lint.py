"""The linter `./artifact test` runs before pytest: ruff with pyproject.toml's [tool.ruff].
The repository's Python has no finding, and the configuration does catch a defect
(an unused import, an undefined name) in a file it is given."""
import subprocess

from conftest import ROOT

RUFF = ROOT / ".venv" / "bin" / "ruff"


def _ruff(*args, cwd=ROOT):
    return subprocess.run([str(RUFF), "check", "--config", str(ROOT / "pyproject.toml"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_repository_has_no_finding():
    res = _ruff(".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_configuration_reports_an_unused_import_and_an_undefined_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    res = _ruff(str(bad), cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "F401" in res.stdout and "F821" in res.stdout, res.stdout


def test_artifact_test_runs_the_linter_before_pytest():
    text = (ROOT / "artifact").read_text()
    body = text[text.index("\n  test)"):]
    assert body.index("ruff check") < body.index("pytest"), "the linter must run before pytest"
