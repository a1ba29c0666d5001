"""A build's empty system datadir (`bootstrap`, per build family), its option names
(`mysqld --verbose --help`), and whether a packaged binary is the official one.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness import atomic, keptlogs, paths
from harness.builds.lock import BuildError, mysqld_path, output_tail, sha256_file
from harness.builds.nixstore import check_libraries, verify_installed
from harness.measure import backends
from harness.measure import mycnf
from harness.measure import procs

# How an empty system datadir is made, per build family (a lock entry may say `init:`).
#   bootstrap   mysqld --bootstrap fed INIT_SQL[family] (prelude + share/ files)
#   copy        the datadir the build ships (`datadir_template` in the build dir), copied
#   install-db  MariaDB's mariadb-install-db (`install_db` in the build dir)
#   initialize  mysqld --initialize-insecure (MySQL 5.7 and later)
FAMILY_INIT = {
    "mysql-5.5": "copy",
    "mysql-5.6": "bootstrap",
    "mysql-5.7": "initialize",
    "mysql-8.0": "initialize",
    "mysql-8.4": "initialize",
    "mariadb-10.2": "bootstrap",
    "mariadb-10.11": "install-db",
}
INIT_SQL = {
    "mysql-5.6": ("use mysql;\n", ["mysql_system_tables.sql", "mysql_system_tables_data.sql"]),
    "mariadb-10.2": ("create database mysql;\nuse mysql;\n",
                     ["mysql_system_tables.sql", "mysql_performance_tables.sql",
                      "mysql_system_tables_data.sql"]),
}


# -- option names -------------------------------------------------------------------
def help_argv(entry: dict, build_dir: Path, datadir: Path) -> list[str]:
    """`mysqld --verbose --help` as builds/options/<family>.options.txt is generated from (plugins the
    family's defaults load are loaded, so their options are listed)."""
    build_dir = Path(build_dir).resolve()
    argv = [str(mysqld_path(build_dir, entry)), "--no-defaults", f"--basedir={build_dir}",
            f"--datadir={datadir}", f"--lc-messages-dir={build_dir / entry['share_dir']}"]
    plugin = mycnf.family_defaults(entry["family"]).get("plugin_load_add")
    if plugin:
        argv.append(f"--plugin-load-add={plugin}")
    if os.geteuid() == 0:
        argv.append("--user=root")
    return argv + ["--verbose", "--help"]


def mysqld_help(name: str, entry: dict, build_dir: Path) -> str:
    """The verified binary's `--verbose --help` text (nothing is started or written)."""
    verify_installed(name, entry, build_dir)
    with tempfile.TemporaryDirectory(prefix="mysqlbench-help-") as d:
        res = subprocess.run(help_argv(entry, build_dir, Path(d)), capture_output=True, text=True,
                             env=procs.labelled_env(f"help-{name}", {
                                 "LD_LIBRARY_PATH": str(Path(build_dir).resolve() / entry.get("lib_dir", "."))}),
                             stdin=subprocess.DEVNULL, preexec_fn=procs.die_with_parent, timeout=120)
    if res.returncode != 0:
        raise BuildError(f"build {name}: mysqld --verbose --help failed (exit {res.returncode}): {output_tail(res)}")
    return res.stdout


# -- bootstrap ----------------------------------------------------------------------
def _init_method(name: str, entry: dict) -> str:
    method = entry.get("init") or FAMILY_INIT.get(entry["family"])
    if method is None:
        raise BuildError(f"build {name}: no datadir init for family {entry['family']}; add `init:` "
                         f"({', '.join(sorted(set(FAMILY_INIT.values())))}) to its lock entry")
    return method


def _run_logged(name: str, runner, argv: list, log: Path, env: dict, stdin: str | None = None) -> None:
    """Run one init command through the backend `runner`, its output appended to `log`."""
    with open(log, "a") as f:
        f.write(f"$ [{runner.name}] " + " ".join(map(str, argv)) + "\n")
    try:
        rc = runner.run(argv, env, stdin=stdin, log=log, timeout=900)
    except backends.BackendError as e:
        raise BuildError(keptlogs.failure(f"build {name}: bootstrap (backend {runner.name}): {e}",
                                          runner.run_id, log)) from None
    if rc != 0:  # the log is in the staging dir, removed as the error passes: kept under logs/
        lines = [l for l in log.read_text(errors="replace").splitlines() if "ERROR" in l]
        kept = keptlogs.keep(runner.run_id, log) / log.name
        raise BuildError(f"build {name}: bootstrap failed (exit {rc}, backend {runner.name}): "
                         f"{lines[0] if lines else keptlogs.last_meaningful(log)} (log kept in {kept})")


def _install_basedir(entry: dict, build_dir: Path) -> Path:
    """mariadb-install-db's --basedir: the build dir itself, which has the whole layout
    (bin/, sbin/, share/mysql, lib/mysql/plugin: the lock's `links`, extracted from the
    .deb files by the direct provider or the Nix builder alike)."""
    return Path(build_dir).resolve()


def _install_db_tools(entry: dict, build_dir: Path) -> list[Path]:
    """What MariaDB's install script runs besides the server, from its basedir's bin/
    (my_print_defaults, resolveip): a container mounts them beside the build."""
    base = _install_basedir(entry, build_dir)
    return [p.resolve() for p in (base / "bin" / "my_print_defaults", base / "bin" / "resolveip")
            if p.exists()]


@contextlib.contextmanager
def _no_spaces(**dirs: Path):
    """mariadb-install-db (a shell script) splits its paths at spaces: when one has a space,
    ({name: a symlink to it in a short temp dir}, that dir), else (the paths themselves, None)."""
    if not any(" " in str(p) for p in dirs.values()):
        yield dirs, None
        return
    d = Path(tempfile.mkdtemp(prefix=paths.scratch_prefix("idb")))
    try:
        for k, p in dirs.items():
            (d / k).symlink_to(p)
        yield {k: d / k for k in dirs}, d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _make_writable(tree: Path) -> None:
    for d, dirs, files in os.walk(tree):
        os.chmod(d, os.stat(d).st_mode | 0o700)
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o600)


def bootstrap(name: str, entry: dict, build_dir: Path, out: Path, options: dict | None = None,
              backend: str = "host", mechanism: str = "auto") -> Path:
    """Create a fresh, empty system datadir template for this build into `out` (out/datadir),
    the init (mysqld --bootstrap fed SQL on stdin, --initialize-insecure, the install
    script, or a copy of the shipped datadir) run through `backend` (harness.measure.backends:
    host, docker, auto), as a measured server is; out/bootstrap.json says which."""
    build_dir = Path(build_dir).resolve()
    mysqld = verify_installed(name, entry, build_dir)
    check_libraries(name, entry, build_dir)
    method = _init_method(name, entry)
    share = build_dir / entry["share_dir"]
    defaults = mycnf.family_defaults(entry["family"])
    opts = {k: v for k, v in defaults.items() if k.startswith("innodb_log") or k == "innodb_file_per_table"}
    opts.update({k: v for k, v in (options or {}).items() if k.startswith("innodb_log")})
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in opts.items()]
    root = ["--user=root"] if os.geteuid() == 0 else []
    env = {"LD_LIBRARY_PATH": str(build_dir / entry.get("lib_dir", "."))}
    with atomic.staging_dir(Path(out)) as tmp, contextlib.ExitStack() as stack:
        tmp = Path(tmp).resolve()
        datadir = tmp / "datadir"
        log = tmp / "bootstrap.log"
        log.touch()
        ro = [build_dir, *backends.link_targets(build_dir)]
        if method == "install-db":
            ro += [p for p in _install_db_tools(entry, build_dir) if p not in ro]
            alias, alias_dir = stack.enter_context(_no_spaces(base=_install_basedir(entry, build_dir), tmp=tmp))
            ro += [alias_dir] if alias_dir is not None else []
        try:
            runner = backends.make(backend, run_id=f"bootstrap-{name}-{os.getpid()}",
                                   cpus=sorted(os.sched_getaffinity(0)), mechanism=mechanism,
                                   ro_mounts=ro, rw_mounts=[tmp])
        except backends.BackendError as e:
            raise BuildError(f"build {name}: {e}") from None
        if method == "copy":
            src = build_dir / entry["datadir_template"]
            if not (src / "mysql").is_dir():
                raise BuildError(f"build {name}: {src} has no mysql/ system schema; fix datadir_template")
            _run_logged(name, runner, ["cp", "-R", "--preserve=mode,timestamps", src, datadir], log, env)
            _make_writable(datadir)  # a copy from the read-only Nix store keeps its modes
        elif method == "bootstrap":
            prelude, files = INIT_SQL[entry["family"]]
            missing = [f for f in files if not (share / f).is_file()]
            if missing:
                raise BuildError(f"build {name}: {share} lacks {', '.join(missing)}; fix share_dir in the lock")
            datadir.mkdir()
            if not prelude.startswith("create database mysql"):
                (datadir / "mysql").mkdir()
            script = prelude + "".join((share / f).read_text() for f in files)
            _run_logged(name, runner, [mysqld, "--no-defaults", "--bootstrap", f"--basedir={build_dir}",
                                       f"--datadir={datadir}", f"--lc-messages-dir={share}", f"--tmpdir={tmp}",
                                       *flags, *root], log, env, stdin=script)
        elif method == "initialize":
            _run_logged(name, runner, [mysqld, "--no-defaults", "--initialize-insecure", f"--basedir={build_dir}",
                                       f"--datadir={datadir}", f"--lc-messages-dir={share}", f"--tmpdir={tmp}",
                                       *flags, *root], log, env)
        elif method == "install-db":
            base, atmp = alias["base"], alias["tmp"]
            _run_logged(name, runner, [base / entry["install_db"], "--no-defaults",
                                       "--auth-root-authentication-method=normal", f"--basedir={base}",
                                       f"--datadir={atmp / 'datadir'}", "--skip-test-db", f"--tmpdir={atmp}",
                                       *flags, *root], log, env)
        else:
            raise BuildError(f"build {name}: unknown init method {method!r}; use one of "
                             f"{', '.join(sorted(set(FAMILY_INIT.values())))}")
        if not (datadir / "mysql").is_dir():
            kept = keptlogs.keep(runner.run_id, log) / log.name
            raise BuildError(f"build {name}: bootstrap made no mysql/ system schema in {datadir}: "
                             f"{keptlogs.last_meaningful(log)} (log kept in {kept})")
        (tmp / "bootstrap.json").write_text(json.dumps({
            "build": name, "method": method, **runner.info(),
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}, indent=2) + "\n")
    return Path(out)


def official_check(name: str, entry: dict, build_dir: Path, official: str, official_dir: Path) -> dict:
    """Is the packaged `name`'s server binary byte-identical to the official release's?
    Needs the official build fetched (internet); otherwise says how to get it. Without the
    packaged build on this host (a replot of imported cells) its mysqld is the lock's
    `mysqld_sha256`, the hash its fetch is checked against."""
    ours = sha256_file(mysqld_path(build_dir, entry)) if Path(build_dir).is_dir() else entry["mysqld_sha256"]
    out = {"build": name, "mysqld_sha256": ours, "official": official}
    if not (Path(official_dir) / "build.json").exists():
        out.update(verdict="not checked", reason="official tarball not fetched (needs internet)",
                   how=f"python -m harness fetch-build --name {official} --out resources/builds/{official}")
        return out
    theirs = sha256_file(Path(official_dir) / "bin" / "mysqld")
    out.update(official_mysqld_sha256=theirs, verdict="identical" if theirs == ours else "differs",
               reason="sha256 of the two mysqld binaries")
    return out
