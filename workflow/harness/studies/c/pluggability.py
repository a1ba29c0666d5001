"""Study C4, pluggability: a stored procedure, a trigger and a view created on
every engine and still working after ALTER TABLE ... ENGINE= to every other
engine; SHOW ENGINES; a restart with InnoDB disabled. Steps of
harness.studies.c.test_drive.
"""
from __future__ import annotations

import collections

import pymysql

from harness.measure.stepscript import StepContext, show_engines
from harness.studies.c.drivebase import COLUMNS, DB, engine_of, numbers, skip_innodb_options

SSN_KEY = "password"


def _ssn(k: int) -> str:
    return f"{100 + k:03d}-45-{6789 + k:04d}"


class _Feature:
    """One server feature of C4: `setup` creates its table on an engine and the
    feature over it; `verify(k)` after the k-th ALTER says (ok, what was seen)."""

    def __init__(self, name, setup, verify):
        self.name, self.setup, self.verify = name, setup, verify


def _features(cur, p: dict) -> list[_Feature]:
    rows = p["feature_rows"]

    def proc_setup(e):
        cur.execute("DROP PROCEDURE IF EXISTS c4_count")
        cur.execute("DROP TABLE IF EXISTS c4_proc")
        cur.execute(f"CREATE TABLE c4_proc {COLUMNS} ENGINE={e}")
        cur.execute("INSERT INTO c4_proc SELECT * FROM c4_base")
        cur.execute("CREATE PROCEDURE c4_count() SELECT count(*) FROM c4_proc")
        return "c4_proc"

    def proc_verify(k):
        cur.execute("CALL c4_count()")
        got = cur.fetchall()[0][0]
        return got == rows, f"CALL c4_count() = {got}"

    def trig_setup(e):
        cur.execute("DROP TABLE IF EXISTS c4_trig")
        cur.execute(f"CREATE TABLE c4_trig (id int, userssn varbinary(64)) ENGINE={e}")
        cur.execute("CREATE TRIGGER c4_enc BEFORE INSERT ON c4_trig FOR EACH ROW "
                    f"SET NEW.userssn = aes_encrypt(NEW.userssn, '{SSN_KEY}')")
        return "c4_trig"

    def trig_verify(k):
        cur.execute("INSERT INTO c4_trig VALUES (%s, %s)", (k, _ssn(k)))
        cur.execute(f"SELECT id, userssn, aes_decrypt(userssn, '{SSN_KEY}') FROM c4_trig ORDER BY id")
        got = cur.fetchall()
        bad = [r[0] for r in got
               if bytes(r[2] or b"").decode(errors="replace") != _ssn(r[0]) or bytes(r[1]) == _ssn(r[0]).encode()]
        return (len(got) == k + 1 and not bad,
                f"{len(got)} rows, {len(got) - len(bad)} stored encrypted and decrypting to their SSN")

    want = sorted(collections.Counter(i % 100 for i in range(rows) if i % 100 < 10).items())

    def view_setup(e):
        cur.execute("DROP VIEW IF EXISTS c4_v")
        cur.execute("DROP TABLE IF EXISTS c4_vt")
        cur.execute(f"CREATE TABLE c4_vt {COLUMNS} ENGINE={e}")
        cur.execute("INSERT INTO c4_vt SELECT * FROM c4_base WHERE c1 < 10")
        cur.execute("CREATE VIEW c4_v AS SELECT c1, count(*) AS n FROM c4_vt GROUP BY c1")
        return "c4_vt"

    def view_verify(k):
        cur.execute("SELECT c1, n FROM c4_v ORDER BY c1")
        got = [(int(a), int(b)) for a, b in cur.fetchall()]
        return got == want, f"view gives {len(got)} groups, {'as expected' if got == want else got[:3]}"

    return [_Feature("procedure", proc_setup, proc_verify), _Feature("trigger", trig_setup, trig_verify),
            _Feature("view", view_setup, view_verify)]


def c4_features(ctx: StepContext, cur, p: dict, engines: list[str]) -> None:
    """C4: each feature created on every engine, then the table ALTERed to each other
    engine in turn; one check row per (feature, engine created on)."""
    rows = p["feature_rows"]
    cur.execute(f"CREATE TABLE c4_base {COLUMNS} ENGINE=MyISAM")
    cur.execute(f"INSERT INTO c4_base SELECT n % 100, 'sample audit string', '2005-10-26' "
                f"FROM {numbers(rows)}")
    for feat in _features(cur, p):
        for e in engines:
            seen = []
            try:
                table = feat.setup(e)
                ok = (engine_of(cur, table) or "").lower() == e.lower()
                good, what = feat.verify(0)
                ok = ok and good
                seen.append(f"on {e}: {what}")
                for k, f in enumerate([x for x in engines if x != e], start=1):
                    cur.execute(f"ALTER TABLE {table} ENGINE={f}")
                    now = engine_of(cur, table)
                    good, what = feat.verify(k)
                    good = good and (now or "").lower() == f.lower()
                    ok = ok and good
                    seen.append(f"after ALTER to {f} ({now}): {what}")
            except pymysql.err.MySQLError as err:
                ok = False
                seen.append(f"server error {err.args[0]}: {err.args[1] if len(err.args) > 1 else ''}")
            ctx.rec.check("C4.feature", e, ok, f"{feat.name} created on {e}; " + "; ".join(seen),
                          metric=feat.name)


def c4_show_engines(ctx: StepContext, step: str) -> None:
    """SHOW ENGINES as rows: engine, Support, Comment."""
    for row in show_engines(ctx.server):
        ctx.rec.value(step, str(row[0]), "support", str(row[1]), "", str(row[2] or ""))


def c4_skip_innodb(ctx: StepContext, p: dict) -> None:
    """C4: restart with InnoDB disabled; SHOW ENGINES must say so and a MyISAM table
    must still answer; then restart with the cell's own configuration."""
    rec = ctx.rec
    opts = skip_innodb_options(ctx.family)
    said = ", ".join(f"{k}={'ON' if v is True else v}" for k, v in opts.items())
    try:
        ctx.restart_with(opts)
    except Exception as e:  # noqa: BLE001 - a server that will not start so is the finding
        rec.check("C4.skip_innodb", "InnoDB", False, f"no server with {said}: {e}",
                  metric="innodb_disabled")
    else:
        c4_show_engines(ctx, "C4.engines_skip_innodb")
        support = ctx.support("InnoDB")
        rec.check("C4.skip_innodb", "InnoDB", support is None or support.upper() in ("DISABLED", "NO"),
                  f"with {said} SHOW ENGINES says InnoDB {support or 'is absent'}", metric="innodb_disabled")
        got = ctx.server.query("SELECT count(*) FROM c4_base WHERE c1 >= 0", DB)[0][0]
        rec.check("C4.skip_innodb", "MyISAM", got == p["feature_rows"],
                  f"the MyISAM table answers without InnoDB: {got} rows", metric="myisam_works")
    # not in a `finally`: after an interrupt or an error no new server is started
    ctx.restart_with({})
    support = ctx.support("InnoDB")
    rec.check("C4.restart", "InnoDB", ctx.has_engine("InnoDB"),
              f"restarted with the cell's configuration: InnoDB {support}", metric="innodb_back")
