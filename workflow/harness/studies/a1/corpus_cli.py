"""`python -m harness corpus`: study A1's FTS corpus, the generated stand-in or the
parsed OHSUMED archive (harness.studies.a1.standin, harness.studies.a1.ohsumed), written to --out. The defaults
are the resolved defaults layer's (experiment_defaults.corpus)."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.plan import config
from harness.studies.a1 import ohsumed, standin


def parser() -> argparse.ArgumentParser:
    d = config.defaults()["experiment_defaults"]["corpus"]  # the defaults layer's values, not copies
    s = argparse.ArgumentParser(prog="python -m harness corpus",
                                description="the FTS corpus: generated stand-in or the parsed OHSUMED archive")
    s.add_argument("--source", choices=["standin", "ohsumed"], default=d["source"])
    s.add_argument("--rows", type=int, default=d["rows"])
    s.add_argument("--seed", type=int, default=d["seed"])
    s.add_argument("--archive", help="ohsumed: t9.filtering.tar.gz already on this machine")
    s.add_argument("--url", help="ohsumed: where to download the archive from (default: NIST's)")
    s.add_argument("--size", type=int, help="ohsumed: the archive's bytes (default: NIST's archive's)")
    s.add_argument("--sha256", help="ohsumed: the archive's sha256 (default: NIST's archive's)")
    s.add_argument("--out", required=True)
    return s


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    if a.source == "standin":
        info = standin.generate(Path(a.out), rows=a.rows, seed=a.seed)
    else:
        archive = Path(a.archive) if a.archive else Path(a.out).parent / ohsumed.OHSUMED_ARCHIVE
        size, sha = a.size or ohsumed.OHSUMED_SIZE, a.sha256 or ohsumed.OHSUMED_SHA256
        if not archive.exists():
            ohsumed.fetch_ohsumed(archive, a.url or ohsumed.OHSUMED_URL, size=size, sha256=sha)
        info = ohsumed.parse_ohsumed(archive, Path(a.out), size=size, sha256=sha)  # verified first
    print(f"corpus {a.out}: {info.get('rows', info.get('records'))} rows")
    return 0
