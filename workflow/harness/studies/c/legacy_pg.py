"""The "legacy commercial RDBMS" of study C, stood in for by a real PostgreSQL
(the pinned build `postgresql-15` of config/builds.lock.yaml: Debian's packages):
the same table, the study's procedure loop in PL/pgSQL (one INSERT per row, no COMMIT in
the loop: one transaction, as the study's PL/SQL block ran; `legacy_commit: per_row` commits
every row instead, the per-commit experiment's variant), and the same scan.

The server itself (initdb, start in a container of the profile's backend or on
the host, socket, stop, reaping) is harness.studies.c.pgserver; its names are
re-exported here. `legacy` is the row a steps cell of study C adds: its part of
the cell's manifest says which build (package version, sha256) ran where
(container, cpuset, observed CPUs) with which settings.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from harness import builds, paths
from harness.measure import mycnf

from harness.measure.datasets import scratch
from harness.measure import factors
from harness.studies.c.pgserver import (PG_USER, PgError, PgServer, pg_pids, reap)  # noqa: F401

TABLE_DDL = "CREATE TABLE t1 (c1 int, c2 varchar(20), c3 date)"
SCAN = "SELECT count(*) FROM t1 WHERE c1 = 1"
LOAD_PROCEDURE = """CREATE OR REPLACE PROCEDURE legacy_load(n integer, commit_each boolean)
LANGUAGE plpgsql AS $$
DECLARE
  i integer := 0;
BEGIN
  WHILE i < n LOOP
    INSERT INTO t1 VALUES (1, 'sample audit string', now());
    IF commit_each THEN
      COMMIT;
    END IF;
    i := i + 1;
  END LOOP;
END
$$"""


# experiment key legacy_commit: how the stand-in's loop commits (config/default.yaml)
ONCE, PER_ROW = "once", "per_row"
COMMITS = (ONCE, PER_ROW)
# the C1 row's detail per mode: the claims read it to tell a loop run one way from the other
LOOP_WORDS = {ONCE: "one transaction (the study's loop, no COMMIT)",
              PER_ROW: "commit per row (a labelled variant, not the study's loop)"}


def legacy_insert(pg: PgServer, rows: int, commit_each: bool = False) -> float:
    """C1 on the stand-in: a PL/pgSQL procedure's WHILE loop inserting `rows` rows one
    INSERT each into `(c1 int, c2 varchar(20), c3 date)`; returns the CALL's seconds.
    By default the loop has no COMMIT, so the CALL is one transaction, as the study's
    PL/SQL procedure (a FOR loop of INSERTs, no COMMIT) ran; `commit_each` commits after
    every INSERT instead, as MySQL's autocommit does (the per-commit variant)."""
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise PgError(f"legacy_insert rows={rows!r}: must be a whole number >= 1")
    pg.query("DROP TABLE IF EXISTS t1")
    pg.query(TABLE_DDL)
    pg.query(LOAD_PROCEDURE)
    secs, _ = pg.timed(f"CALL legacy_load({rows}, {'true' if commit_each else 'false'})")
    got = int(pg.query("SELECT count(*) FROM t1")[0][0])
    if got != rows:
        raise PgError(f"legacy_insert: {got} rows in t1 after inserting {rows}")
    return secs


def legacy_scan(pg: PgServer) -> tuple[float, int]:
    """C2 on the stand-in: (seconds, matching rows) of `SELECT count(*) FROM t1 WHERE c1 = 1`."""
    secs, rows = pg.timed(SCAN)
    return secs, int(rows[0][0])


def scan_plan(pg: PgServer) -> str:
    """EXPLAIN of the scan, one line per plan node (shows the Seq Scan)."""
    return "\n".join(r[0] for r in pg.query("EXPLAIN " + SCAN))


# -- the legacy row of a steps cell (the kind calls test_drive.extra) -------------------

LEGACY_ENGINE = "PostgreSQL (legacy stand-in)"
# its settings (SHOW ALL) that say what it ran with: the manifest's legacy.effective and the
# cell's effective.postgres (test_drive.EVIDENCE), where the durability factor reads them
PG_SETTINGS = ("server_version", "synchronous_commit", "fsync", "wal_sync_method", "full_page_writes", "jit")


def _enterable_by_others(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents])


@contextlib.contextmanager
def _pg_parent(work: Path):
    """A directory PostgreSQL's own user can enter for its datadir: the cell's work dir
    when every parent lets others through (o+x), else a private one under /var/tmp
    (the repository may sit in a home directory only root can enter)."""
    os.chmod(work, 0o711)
    if _enterable_by_others(work):
        yield work
        return
    d = Path(tempfile.mkdtemp(prefix="mysqlbench-pg-", dir="/var/tmp"))
    try:
        os.chmod(d, 0o711)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# InnoDB's log flush of the cell (innodb_flush_log_at_trx_commit, set by harness.measure.factors)
# on PostgreSQL: whether a commit waits for its WAL flush follows it (1: flush at every commit;
# 0 or 2: not); the loop's commits are legacy_commit's (once: one, at the CALL's end)
FLUSH_OPTION = "innodb_flush_log_at_trx_commit"


def synchronous_commit(values: dict, family: str) -> str:
    """'on' when the cell's factor values flush InnoDB's log at every commit (the
    family's default, 1, when they set nothing), else 'off'."""
    opts = {**mycnf.family_defaults(family), **factors.server_options(values, family)}
    return "on" if str(opts.get(FLUSH_OPTION) or 1) == "1" else "off"


def settings(pg: PgServer) -> dict:
    """The stand-in's settings that say how it ran (SHOW ALL, the names of
    PG_SETTINGS)."""
    rows = {r[0]: r[1] for r in pg.query("SHOW ALL") if len(r) >= 2}
    return {n: rows[n] for n in PG_SETTINGS if n in rows}


def check_spec(spec: dict, where: str, lock: dict, lock_file: str) -> None:
    """A steps experiment's legacy row, before anything runs (harness.plan.config, as the
    test_drive script's check): its legacy_commit is once or per_row, its legacy_build a
    PostgreSQL build of the lock. Raises ValueError naming the key and the fix."""
    mode = spec.get("legacy_commit", ONCE)
    if mode not in COMMITS:
        raise ValueError(f"{where}.legacy_commit: {mode!r} is not once or per_row; use once (the "
                         f"study's loop, one transaction) or per_row (a COMMIT after every row)")
    if not spec.get("legacy"):
        return
    name = spec["legacy_build"]
    if name not in lock:
        raise ValueError(f"{where}.legacy_build: '{name}' is not in {lock_file}; use postgresql-15")
    if not str(lock[name]["family"]).startswith("postgresql"):
        raise ValueError(f"{where}.legacy_build: {name} is a {lock[name]['family']} build, "
                         f"not PostgreSQL; use postgresql-15")


def legacy_build(name: str, lock: Path | None = None) -> tuple[dict, Path]:
    """(lock entry, build dir) of the stand-in's pinned build `name` (the experiment's
    legacy_build), fetched by the pipeline's fetch_build rule into resources/builds/."""
    try:
        entry = builds.load_lock(lock or paths.LOCK)[name]
    except KeyError:
        raise PgError(f"legacy_build: {name} is not in config/builds.lock.yaml; use postgresql-15") from None
    return entry, paths.BUILDS / name


def build_info(name: str, entry: dict, build_dir: Path) -> dict:
    """The stand-in's build, for the manifest: its version, the Debian package and version,
    the checked sha256 of its postgres binary and where it was unpacked."""
    return {"name": name, "version": str(entry["version"]), "provider": entry["provider"],
            "package": entry.get("package"), "package_version": entry.get("package_version"),
            "postgres": entry["mysqld"], "postgres_sha256": entry["mysqld_sha256"],
            "basedir": str(Path(build_dir).resolve())}


def legacy(fr, spec: dict, rec, values: dict | None = None) -> dict:
    """The study's "legacy commercial RDBMS" row, stood in for by a real PostgreSQL (the
    pinned build spec["legacy_build"]) on the cell's server CPUs and backend (a container
    of its own under docker): its PL/pgSQL loop inserting the same rows one statement each,
    as one transaction (the study's loop; spec["legacy_commit"] per_row: a COMMIT per row),
    then the same scan. A commit waits for its WAL flush when the cell's InnoDB flushes its
    log at every commit (synchronous_commit follows `values`, the cell's factor values).
    Labelled as a stand-in. Returns the manifest's `legacy`: engine, version, effective
    settings, build, placement, the loop's commit mode."""
    rows = spec["rows"]
    mode = spec.get("legacy_commit", ONCE)
    sync = synchronous_commit(values or {}, fr.entry["family"])
    name = spec["legacy_build"]
    entry, build_dir = legacy_build(name)
    with scratch("pg") as run, _pg_parent(fr._work) as parent:
        pgdata = parent / "pgdata"
        with PgServer(build=name, entry=entry, build_dir=build_dir, datadir=pgdata, rundir=run,
                      run_id=fr.run_id + "-pg", cpus=fr.server_cpus, mems=fr.server_mems, mechanism=fr.settings["mechanism"],
                      backend=fr.settings["backend"], options={"synchronous_commit": sync},
                      startup_timeout=fr.settings["startup_timeout_s"],
                      shutdown_timeout=fr.settings["shutdown_timeout_s"]) as pg:
            where = pg.info()
            if where.get("observed_cpus") != where["cpus"]:
                raise PgError(f"postgres runs on CPUs {where.get('observed_cpus')}, not the cell's {where['cpus']}")
            if where.get("observed_mems") != where["mems"]:
                raise PgError(f"postgres's memory is on NUMA nodes {where.get('observed_mems')}, not the cell's "
                              f"{where['mems']}")
            version = pg.server_version()
            shown = settings(pg)
            secs = legacy_insert(pg, rows, commit_each=mode == PER_ROW)
            rec.value("C1", LEGACY_ENGINE, "insert_s", round(secs, 6), "s",
                      detail=f"PostgreSQL {version}, PL/pgSQL loop, {LOOP_WORDS[mode]}, "
                             f"synchronous_commit={shown.get('synchronous_commit')}")
            scan_s, n = legacy_scan(pg)
            rec.value("C2", LEGACY_ENGINE, "scan_s", round(scan_s, 6), "s", detail=scan_plan(pg))
            rec.check("C2", LEGACY_ENGINE, n == rows, f"{n} of {rows} rows match c1 = 1", metric="matched")
    return {"engine": LEGACY_ENGINE, "version": version, "effective": shown, "commit": mode,
            "build": build_info(name, entry, build_dir), "placement": where}
