"""Which run a PDF shows: profile, host and dates on its first page, and a check
that the files beside it come from the same profile.

The smoke and default profiles write to the same data/ and paper/, so a PDF and
the resolved config lying beside it could come from different runs. Rather than
splitting every path per profile, the paper states the profile (from the
resolved config), the host (the cells' manifests) and the measurement and build
dates on its title page, and the paper rule refuses to build when the generated
files, the resolved config and the tidy provenance disagree on the profile.

    python -m harness runinfo write --config data/tidy/config.resolved.yaml \\
        --raw-dir data/raw --out paper/generated/runinfo.tex
    python -m harness runinfo check --config data/tidy/config.resolved.yaml \\
        --tidy-dir data/tidy --generated paper/generated
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import re
import sys

import yaml

from harness import atomic
from harness.analysis import tidydata
from harness.report.latex import GENERATED, tex_escape

RUNINFO = "runinfo.tex"


def manifests(raw_dir: str, config: dict | None = None) -> list[dict]:
    """Every readable manifest.json of data/raw/<study>/<experiment>/<cell>/; given the
    resolved `config`, only those of the cells its paper reads: of an experiment it runs,
    planned, and measured with the settings it plans (harness.plan.reuse: CURRENT, or
    LEGACY: no digest), so another profile's cells are never shown as this run's."""
    out = []
    keep = None
    if config is not None:
        from harness import builds
        from harness.plan import cells as plan, config as hconfig, reuse
        lock = builds.load_lock(hconfig.LOCK)
        keep = {os.path.normpath(os.path.join(raw_dir, os.path.relpath(d, "data/raw")))
                for x in plan.experiments(config) for d in plan.cells(config, lock, x)
                if reuse.status(config, lock, x, os.path.join(raw_dir, os.path.relpath(d, "data/raw")))
                in (reuse.CURRENT, reuse.LEGACY)}
    for p in sorted(glob.glob(os.path.join(raw_dir, "*", "*", "*", "manifest.json"))):
        if keep is not None and os.path.normpath(os.path.dirname(p)) not in keep:
            continue
        try:
            with open(p) as f:
                out.append(json.load(f))
        except (OSError, ValueError):
            continue
    return out


def run_facts(config: dict, mans: list[dict], today: dt.date | None = None) -> dict:
    """profile, hosts ('vm (2 CPUs)'), first start and last finish of the cells (UTC), build date."""
    hosts = sorted({f"{(m.get('host') or {}).get('hostname') or 'unknown host'} "
                    f"({(m.get('host') or {}).get('n_cpus', '?')} CPUs)" for m in mans})
    starts = sorted(t for m in mans if (t := (m.get("timing") or {}).get("started")))
    ends = sorted(t for m in mans if (t := (m.get("timing") or {}).get("finished")))
    return {
        "profile": str(config.get("profile") or "unknown"),
        "hosts": hosts,
        "measured_from": starts[0] if starts else None,
        "measured_to": ends[-1] if ends else None,
        "cells": len(mans),
        "built": (today or dt.datetime.now(dt.timezone.utc).date()).isoformat(),
    }


def _when(iso: str | None) -> str:
    if not iso:
        return "n/a"
    try:
        t = dt.datetime.fromisoformat(iso).astimezone(dt.timezone.utc)
    except ValueError:
        return iso
    return t.strftime("%Y-%m-%d %H:%M UTC")


def runinfo_tex(facts: dict) -> str:
    """\\RunProfile, \\RunHost, \\RunMeasured, \\RunBuilt and \\RunInfo (one line for the title page)."""
    host = ", ".join(facts["hosts"]) or "n/a"
    measured = f"{_when(facts['measured_from'])} to {_when(facts['measured_to'])}"
    lines = [GENERATED.rstrip("\n"),
             r"\newcommand{\RunProfile}{%s}" % tex_escape(facts["profile"]),
             r"\newcommand{\RunHost}{%s}" % tex_escape(host),
             r"\newcommand{\RunMeasured}{%s}" % tex_escape(measured),
             r"\newcommand{\RunCells}{%d}" % facts["cells"],
             r"\newcommand{\RunBuilt}{%s}" % tex_escape(facts["built"]),
             r"\newcommand{\RunInfo}{Profile \texttt{\RunProfile}; host \RunHost; "
             r"\RunCells{} cells measured \RunMeasured; PDF built \RunBuilt.}", ""]
    return "\n".join(lines)


_PROFILE_MACROS = (("runinfo.tex", "RunProfile"), ("macros.tex", "ConfigProfile"))


def profile_mismatches(config_path: str, tidy_dir: str, generated: str) -> list[str]:
    """Where the generated files, the tidy provenance and the resolved config
    disagree on the profile ([] when they agree)."""
    with open(config_path) as f:
        want = str((yaml.safe_load(f) or {}).get("profile"))
    bad = []
    for name, macro in _PROFILE_MACROS:
        p = os.path.join(generated, name)
        if not os.path.exists(p):
            bad.append(f"{p}: missing (rerun the pipeline)")
            continue
        m = re.search(r"\\newcommand\{\\%s\}\{([^}]*)\}" % macro, open(p).read())
        got = m.group(1).replace(r"\_", "_") if m else None
        if got != want:
            bad.append(f"{p}: profile {got!r}, but {config_path} says {want!r}")
    # an experiment this profile does not run (enabled: false) is not read: its tidy files,
    # another profile's leftovers, are none of this paper's (harness.analysis.tidydata.load)
    with open(config_path) as f:
        enabled = tidydata.enabled_experiments(yaml.safe_load(f) or {})
    for p in sorted(glob.glob(os.path.join(tidy_dir, "*_provenance.json"))):
        exp = os.path.basename(p)[: -len("_provenance.json")]
        if enabled is not None and exp not in enabled:
            continue
        with open(p) as f:
            got = json.load(f).get("profile")
        if got is not None and str(got) != want:
            bad.append(f"{p}: profile {got!r}, but {config_path} says {want!r}")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness runinfo", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write paper/generated/runinfo.tex")
    w.add_argument("--config", required=True)
    w.add_argument("--raw-dir", required=True)
    w.add_argument("--out", required=True)
    c = sub.add_parser("check", help="the generated files and the resolved config agree on the profile")
    c.add_argument("--config", required=True)
    c.add_argument("--tidy-dir", required=True)
    c.add_argument("--generated", required=True)
    args = ap.parse_args(argv)
    if not os.path.exists(args.config):
        ap.error(f"--config {args.config}: not found (run the pipeline's resolved_config rule)")
    if args.cmd == "write":
        with open(args.config) as f:
            config = yaml.safe_load(f) or {}
        atomic.write_text(args.out, runinfo_tex(run_facts(config, manifests(args.raw_dir, config))))
        return 0
    bad = profile_mismatches(args.config, args.tidy_dir, args.generated)
    for b in bad:
        print(f"profile mismatch: {b}; rerun ./artifact paper (or replot) with one profile", file=sys.stderr)
    return 1 if bad else 0
