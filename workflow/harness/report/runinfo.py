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
from harness.analysis import tidyread
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
        from harness import builds, paths
        from harness.plan import cells as plan, reuse
        lock = builds.load_lock(paths.LOCK)
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


def imported(raw_dir: str, commit: str, lock: dict) -> list[str]:
    """One sentence per bundle the cells were imported from (harness.report.bundleimport):
    the host that measured them, and where its commit or builds differ from this clone's."""
    from harness.report import bundleimport
    out = []
    for b in bundleimport.bundles_of(raw_dir):
        repo = b.get("repository") or {}
        theirs = str(repo.get("commit") or "unknown")
        as_host = f", imported as host {b['imported_as']}" if b.get("imported_as") else ""
        words = [f"imported from a bundle of host {b.get('host_id')}{as_host} (profile {b.get('profile')}, "
                 f"{b.get('cells')} cells); this host measured none of them"]
        if theirs != commit or repo.get("dirty"):
            words.append(f"the bundle's commit {theirs[:12]}{' (dirty)' if repo.get('dirty') else ''} "
                         f"differs from this clone's {commit[:12]}")
        diff = sorted(n for n, e in (b.get("lock_entries") or {}).items() if lock.get(n) != e)
        if diff:
            words.append(f"its builds {', '.join(diff)} differ from this clone's lock")
        out.append("; ".join(words) + ".")
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
        "imported": [],
    }


def host_summary(host: str, config: dict, mans: list[dict], raw_dir: str) -> dict:
    """One host of a several-host paper, for the setup appendix: CPU, hardware threads,
    kernel, backend (and mechanism), profile and the first and last measurement of its
    cells (the manifests'); an imported host's profile is its bundles'."""
    def distinct(fn):
        return sorted({str(v) for m in mans if (v := fn(m)) not in (None, "")})
    from harness.report import bundleimport
    profiles = sorted({str(b.get("profile")) for b in bundleimport.bundles_of(raw_dir)}) or \
        [str(config.get("profile") or "unknown")]
    facts = run_facts(config, mans)
    return {"host": host, "cpu": distinct(lambda m: (m.get("host") or {}).get("cpu_model")),
            "threads": distinct(lambda m: (m.get("host") or {}).get("n_cpus")),
            "kernel": distinct(lambda m: (m.get("host") or {}).get("kernel")),
            "backend": distinct(lambda m: "{backend} / {mechanism}".format(**{"backend": "?", "mechanism": "?",
                                                                            **(m.get("placement") or {})})),
            "profile": profiles, "cells": len(mans),
            "from": facts["measured_from"], "to": facts["measured_to"]}


def hosts_tex(hosts: list[dict]) -> str:
    """\\RunHostsTable: the hosts of a several-host paper, one row each (none for one host)."""
    if len(hosts) < 2:
        return ""
    rows = [" & ".join([r"\texttt{%s}" % tex_escape(h["host"]), tex_escape(", ".join(h["cpu"]) or "n/a"),
                        tex_escape(", ".join(h["threads"]) or "n/a"), tex_escape(", ".join(h["kernel"]) or "n/a"),
                        tex_escape(", ".join(h["backend"]) or "n/a"), tex_escape(", ".join(h["profile"])),
                        str(h["cells"]), tex_escape(f"{_when(h['from'])} to {_when(h['to'])}")]) + r"\\"
            for h in hosts]
    return "\n".join([
        r"\newcommand{\RunHostsTable}{\begin{table}[htbp]\centering\scriptsize",
        r"\caption{The %d hosts whose cells this paper judges, each on its own (Table~\ref{tab:claims}).}"
        r"\label{tab:hosts}" % len(hosts),
        r"\begin{tabular}{@{}l>{\raggedright\arraybackslash}p{3.2cm}r>{\raggedright\arraybackslash}p{2.2cm}"
        r">{\raggedright\arraybackslash}p{1.8cm}lr>{\raggedright\arraybackslash}p{2.6cm}@{}}",
        r"\toprule Host & CPU & Threads & Kernel & Backend / mechanism & Profile & Runs & Measured\\ \midrule",
        *rows, r"\bottomrule\end{tabular}\end{table}}", ""])


def _when(iso: str | None) -> str:
    if not iso:
        return "n/a"
    try:
        t = dt.datetime.fromisoformat(iso).astimezone(dt.timezone.utc)
    except ValueError:
        return iso
    return t.strftime("%Y-%m-%d %H:%M UTC")


def first_host_note(facts: dict) -> str:
    """Several hosts: which host the text's numbers and the study tables are ("" for one host)."""
    hosts = facts.get("host_list") or []
    if len(hosts) < 2:
        return ""
    return (f"The figures draw every host (each build named build @ host); the numbers in the text and "
            f"the studies' own tables are host {hosts[0]['host']}'s alone.")


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
             r"\newcommand{\RunImported}{%s}" % tex_escape(" ".join(facts.get("imported") or [])),
             hosts_tex(facts.get("host_list") or []),
             *([r"\newcommand{\RunFirstHost}{%s}" % tex_escape(first_host_note(facts))] if first_host_note(facts) else []),
             r"\newcommand{\RunInfo}{Profile \texttt{\RunProfile}; host \RunHost; "
             r"\RunCells{} runs (a run: one cell measured once, in one block) measured \RunMeasured; "
             r"PDF built \RunBuilt.%s%s}"
             % (r" \RunImported" if facts.get("imported") else "",
                r" \RunFirstHost" if first_host_note(facts) else ""), ""]
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
    # another profile's leftovers, are none of this paper's (harness.analysis.tidyread.load)
    with open(config_path) as f:
        enabled = tidyread.enabled_experiments(yaml.safe_load(f) or {})
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
    w.add_argument("--raw-dir", required=True, help="the raw root the run read (data/raw or data/hosts/<id>/raw)")
    w.add_argument("--host", default="", help="the id of the host of --raw-dir (a several-host paper)")
    w.add_argument("--host-raw", action="append", default=[], metavar="ID=DIR",
                   help="another host's raw root (data/raw or data/hosts/<id>/raw); repeat per host")
    w.add_argument("--lock", default="config/builds.lock.yaml", help="this clone's build lock")
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
        facts = run_facts(config, manifests(args.raw_dir, config))
        from harness.builds import load_lock
        from harness.measure import hostinfo
        commit, lock = hostinfo.git_commit(), load_lock(args.lock)
        facts["imported"] = imported(args.raw_dir, commit, lock)
        raws = [(args.host, args.raw_dir)] + [tuple(x.split("=", 1)) for x in args.host_raw]
        if len(raws) > 1:   # several hosts: each one's sentence, and the appendix's table of hosts
            facts["hosts"] = [h for h, _ in raws]
            facts["imported"] = [s for _, d in raws for s in imported(d, commit, lock)]
            facts["host_list"] = [host_summary(h, config, manifests(d, config), d) for h, d in raws]
            every = [m for _, d in raws for m in manifests(d, config)]
            both = run_facts(config, every)
            facts.update(cells=both["cells"], measured_from=both["measured_from"], measured_to=both["measured_to"])
        atomic.write_text(args.out, runinfo_tex(facts))
        return 0
    bad = profile_mismatches(args.config, args.tidy_dir, args.generated)
    for b in bad:
        print(f"profile mismatch: {b}; rerun ./artifact paper (or replot) with one profile", file=sys.stderr)
    return 1 if bad else 0
