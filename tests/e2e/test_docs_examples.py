"""Worked examples of the docs run from their own text, as a user types them.

A worked example is every ```sh block a page marks with `<!-- example: NAME -->` on the
line before it; its blocks, in page order, are one shell session. The test extracts them
from the page (never a copy written here), runs them with bash in a copy of the checkout
(conftest.copy_checkout, this checkout's venv linked in) and checks what the text says
they end with.

- `debian-build`, `npm-build`, `maven-build` (docs/builds.md, "Adding a build"): a build
  is appended to the lock, fetched and pinned, its NAR hash pinned, and one
  `./artifact paper <cell> --configfile ...` invocation ends with that cell's
  manifest.json. Real apt/npm/Maven, dpkg-deb, Nix, Docker and the server.
- `nix-build` (docs/nix.md): `nix build` of a pinned build with the settings the page
  gives; ./result holds the lock's mysqld.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, copy_checkout

from harness import builds
from harness.builds import debian
from harness import paths

BUILDS_PAGE = ROOT / "docs" / "builds.md"
# every worked example a page marks -> its page; each has a test below that runs it whole
EXAMPLES = {"debian-build": "docs/builds.md", "npm-build": "docs/builds.md", "maven-build": "docs/builds.md",
            "nix-build": "docs/nix.md"}


def example_blocks(markdown: str, name: str) -> list[str]:
    """The ```sh blocks marked `<!-- example: NAME [NAME ...] -->` (the line before the
    fence) with `name` among the names, in order."""
    pat = r"^<!-- example: ([^>]*?) -->\n```sh[^\n]*\n(.*?)^```"
    return [body for names, body in re.findall(pat, markdown, flags=re.S | re.M) if name in names.split()]


def example_names(markdown: str) -> set[str]:
    return {n for names in re.findall(r"^<!-- example: ([^>]*?) -->$", markdown, re.M) for n in names.split()}


def example_script(page: Path, name: str) -> str:
    blocks = example_blocks(page.read_text(encoding="utf-8"), name)
    assert blocks, f"{page.relative_to(ROOT)} marks no ```sh block `<!-- example: {name} -->`"
    return "\n".join(blocks)


def test_example_blocks_are_the_marked_ones_in_order():
    md = ("text\n<!-- example: a -->\n```sh\nx=1\n```\n\n```sh\nnot marked\n```\n"
          "<!-- example: b -->\n```sh\nother\n```\n<!-- example: a -->\n```sh\necho $x\n```\n")
    assert example_blocks(md, "a") == ["x=1\n", "echo $x\n"]
    assert example_blocks(md, "b") == ["other\n"]
    both = "<!-- example: a b -->\n```sh\nH=1\n```\n<!-- example: b -->\n```sh\nuse\n```\n"
    assert example_blocks(both, "a") == ["H=1\n"] and example_blocks(both, "b") == ["H=1\n", "use\n"]
    assert example_names(both) == {"a", "b"}


def paper_invocations(script: str) -> list[list[str]]:
    """The `./artifact paper ...` command lines of a script (here-documents aside)."""
    return [shlex.split(line) for line in script.splitlines() if line.startswith("./artifact paper")]


def heredoc(script: str, opener: str) -> str:
    """The text of the here-document a script's line `opener <<'EOF'` writes."""
    m = re.search(rf"^{re.escape(opener)} <<'EOF'\n(.*?)^EOF$", script, re.S | re.M)
    assert m, f"no here-document `{opener} <<'EOF'`"
    return m.group(1)


def test_the_debian_example_profile_is_accepted_and_plans_the_cell_it_names(tmp_path):
    """Without running anything: the example's lock entry and profile, as the text writes
    them, pass every config check, and its one invocation names a cell the profile plans
    (the e2e test below runs the whole example)."""
    from harness.plan import cells as hplan
    from harness.plan import config

    script = example_script(BUILDS_PAGE, "debian-build")
    runs = paper_invocations(script)
    assert len(runs) == 1, runs
    argv = runs[0]
    profile_file = argv[argv.index("--configfile") + 1]
    lock = tmp_path / "builds.lock.yaml"
    lock.write_text(paths.LOCK.read_text() + heredoc(script, "cat >> config/builds.lock.yaml"))
    cfg = {}  # as Snakemake reads them: config/default.yaml, then the profile on top
    for layer in (yaml.safe_load((ROOT / "config" / "default.yaml").read_text()),
                  yaml.safe_load(heredoc(script, f"cat > {profile_file}"))):
        config.deep_merge(cfg, layer)
    cfg = config.resolve(cfg, lock_path=lock)
    cell = argv[2]
    experiment = Path(cell).parent.name
    planned = hplan.cells(cfg, builds.load_lock(lock), experiment, 1)
    assert cell in planned, (cell, planned)


BUILD_EXAMPLES = ["debian-build", "npm-build", "maven-build"]


def why_not_here(name: str, script: str) -> str | None:
    """Why this host cannot run a build example (None: it can)."""
    works, why = builds.nix_works()
    if not works:
        return f"nix does not work here ({why}): the example pins a NAR hash"
    if name == "debian-build":
        (_, spec), = yaml.safe_load(heredoc(script, "cat >> config/builds.lock.yaml")).items()
        offered = debian.offered_versions(spec["package"])
        if str(spec["package_version"]) not in offered:
            return (f"this host's apt archive does not offer {spec['package']}={spec['package_version']} "
                    f"(it offers {offered}); the example names that version")
    client = {"npm-build": "npm", "maven-build": "mvn"}.get(name)
    if client and not shutil.which(client):
        return f"{client} is not installed (./artifact setup installs it)"
    return None


@pytest.mark.e2e
@pytest.mark.parametrize("name", BUILD_EXAMPLES)
def test_a_build_example_runs_as_written(name, tmp_path):
    """docs/builds.md's example, typed as written in a copy of the checkout: the lock entry
    gets its hashes, and one `./artifact paper <cell>` invocation ends with the cell's
    manifest.json, measured on the added build."""
    from test_readme_commands import make_copy, tail  # (it imports this module's EXAMPLES)
    script = example_script(BUILDS_PAGE, name)
    why = why_not_here(name, script)
    if why:
        pytest.skip(why)
    runs = [line for line in script.splitlines() if line.startswith("./artifact paper")]
    assert len(runs) == 1, runs
    work = make_copy(tmp_path / "clone")
    report = f'\necho "target: {runs[0].split()[2]}"\n'  # the cell as the shell expanded it
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", script + report], cwd=work, capture_output=True,
                         text=True, timeout=3600)
    assert res.returncode == 0, tail(res)
    cell = work / re.search(r"^target: (\S+)$", res.stdout, re.M).group(1)
    manifest = json.loads((cell / "manifest.json").read_text())
    assert manifest["result"]["qps"] > 0, manifest["result"]
    build = cell.name.split("_", 1)[0]
    pinned = builds.load_lock(work / "config" / "builds.lock.yaml")[build]
    assert pinned["mysqld_sha256"] == manifest["build"]["mysqld_sha256"] and pinned["nar_hash"].startswith("sha256-")
    assert str(pinned["version"]) in (cell / "mysqld.err").read_text(errors="replace")  # the added build's server


@pytest.mark.e2e
def test_the_nix_build_example_runs_as_written(tmp_path):
    """docs/nix.md's first block, as written, in a copy of the checkout (no venv needed):
    ./result is the pinned build's store path, its mysqld the lock's bytes."""
    works, why = builds.nix_works()
    if not works:
        pytest.skip(f"nix does not work here ({why})")
    from test_readme_commands import tail
    script = example_script(ROOT / "docs" / "nix.md", "nix-build")
    work = copy_checkout(tmp_path / "clone")
    env = {k: v for k, v in os.environ.items() if k != "NIX_CONFIG"}  # the example sets its own
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, capture_output=True, text=True,
                         timeout=1800, env=env)
    assert res.returncode == 0, tail(res)
    entry = builds.load_lock(paths.LOCK)["mysql-5.6.24"]
    result = (work / "result").resolve()
    assert builds.in_store(result), result
    assert builds.sha256_file(result / entry["mysqld"]) == entry["mysqld_sha256"]


@pytest.mark.e2e
def test_a_cell_target_is_planned_after_another_profile_opened_its_block(tmp_path):
    """The issue's second run: a block's .open written by another profile's run (smoke) made
    block_open re-run for its changed params, which masked the target cell, so one
    invocation ran block_open only and exited 0. block_open now has no params, so it is not
    re-run for another profile's order, and the target's run_cell is planned."""
    from test_e2e_pipeline import planned_jobs
    from test_readme_commands import make_copy, tail
    work = make_copy(tmp_path / "clone")
    opened = "data/order/point_select.r1.a1.open"
    res = subprocess.run([".venv/bin/snakemake", opened, "--cores", "1", "--configfile", "config/smoke.yaml"],
                         cwd=work, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and (work / opened).exists(), tail(res)
    profile = tmp_path / "other.yaml"
    profile.write_text("profile: other\nbuilds: [mariadb-10.11]\nclaims: {decide: false}\n"
                       "experiment_defaults: {table_size: 1000, users: [4], repetitions: 1, cores: [1]}\n")
    cell = "data/raw/A3/point_select/mariadb-10.11_InnoDB_base_t1_c1_u4_r1"
    res = subprocess.run([".venv/bin/snakemake", "-n", cell, "--cores", "1", "--configfile", str(profile)],
                         cwd=work, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, tail(res)
    jobs = planned_jobs(res.stdout + res.stderr)
    assert jobs.get("run_cell", 0) >= 1 and "block_open" not in jobs, jobs
    assert re.search(rf"output: {re.escape(cell)}\s*$", res.stdout + res.stderr, re.M), tail(res)
