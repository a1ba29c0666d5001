"""A failed server step keeps its evidence: the logs of an initdb, a bootstrap or a
server start that failed are copied under the run's `logs/` (logs/failed/<run id>/),
where they outlive the temporary folder they were written in, and the step's one-line
error quotes the log's last meaningful line and the kept path (`failure`).

`$MYSQLBENCH_LOGS` moves the logs folder (tests use it); default: the repository's logs/,
beside Snakemake's per-rule logs.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from harness import paths

LOGS_VAR = "MYSQLBENCH_LOGS"
# a line that says why (initdb's "initdb: error: …", postgres's FATAL, mysqld's [ERROR], a shell's
# "permission denied"), the last of which is quoted; generic endings are passed over
MEANING = re.compile(r"error|fatal|panic|denied|cannot|can't|could not|not found|no such|failed", re.I)
GENERIC = re.compile(r"Aborting$|removing (contents of )?data directory|child process exited", re.I)


def logs_dir() -> Path:
    return Path(os.environ.get(LOGS_VAR) or paths.ROOT / "logs")


def keep(run_id: str, *files: Path) -> Path:
    """Copy the existing `files` to logs/failed/<run_id>/ (each under its own name); that folder."""
    dest = logs_dir() / "failed" / run_id
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        if Path(f).is_file():
            shutil.copyfile(f, dest / Path(f).name)
    return dest


def last_meaningful(log: Path) -> str:
    """The log's last line that says why (else its last non-empty line; 'empty log' or 'no log')."""
    try:
        lines = [l.strip() for l in Path(log).read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return "no log"
    said = [l for l in lines if MEANING.search(l) and not GENERIC.search(l)]
    return (said or lines or ["empty log"])[-1][:300]


def failure(what: str, run_id: str, log: Path, *others: Path) -> str:
    """'<what>: <the log's last meaningful line> (log kept in <path>)', `log` and `others` kept."""
    kept = keep(run_id, log, *others) / Path(log).name
    return f"{what}: {last_meaningful(log)} (log kept in {kept})"
