"""A look: is an experiment decided on the blocks measured so far?

`python -m harness decided` (the pipeline's `look` checkpoint, workflow/rules/measure.smk)
tidies the experiment's cells of blocks 1..n into a scratch directory, loads them as
the claims read tidy data, and asks harness.analysis.claims.experiment_decided(tidy,
experiment): every claim reading the experiment is decided, or can never be decided
by more blocks. The answer, `data/order/<experiment>.look<k>.json` ({experiment,
look, blocks, decided, why}), tells the pipeline whether to plan the blocks up to
the next look.

An experiment no claim reads is decided at its first look: no verdict waits for
more of its blocks (its figures use the blocks it has).
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from harness import atomic, registry as studies
from harness.analysis import claims, tidywrite, tidyread


def claims_reading(experiment: str) -> list[str]:
    """The ids of the declared claims that read `experiment`."""
    return [c.id for c in studies.claims() if experiment in c.experiments]


def verdict_decided(tdy: tidyread.Tidy, experiment: str) -> tuple[bool, str]:
    """(decided, why) from the claims' own rule."""
    done = bool(claims.experiment_decided(tdy, experiment))
    return done, ("decided: every claim reading it is decided or cannot be decided by more blocks"
                  if done else "not decided: a claim reading it may still be decided by more blocks")


def look(experiment: str, look_no: int, blocks: int, cells: list[Path], cfg: dict) -> dict:
    """The answer of one look on `cells` (the experiment's cells of blocks 1..blocks)."""
    reading = claims_reading(experiment)
    if not reading:
        done, why = True, "decided: no claim reads this experiment"
    else:
        with tempfile.TemporaryDirectory(prefix=f"look-{experiment}-") as d:
            tidywrite.tidy(list(cells), Path(d) / f"{experiment}.csv", Path(d) / f"{experiment}_summary.csv",
                      Path(d) / f"{experiment}_provenance.json", cfg["stats"]["cv_threshold"],
                      cfg["profile"], Path(d))
            done, why = verdict_decided(tidyread.load(d, cfg), experiment)
    return {"experiment": experiment, "look": look_no, "blocks": blocks, "decided": done,
            "why": why, "claims": reading}


def write(out: Path, answer: dict) -> None:
    atomic.write_text(Path(out), json.dumps(answer, indent=2) + "\n")
