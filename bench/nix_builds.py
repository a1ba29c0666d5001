"""Benchmark (prints figures, asserts nothing): serving the pinned builds from the Nix store.

For each build the flake offers, the time of `harness.builds.fetch(provider="nix")`
(nix build of the tree and its artifacts, nix store verify, the lock's nar_hash and
mysqld sha256, the GC-root link) when the store already has the build, and of
`verify_installed` on the store path (what every server start pays). With --empty,
first deletes the build's store paths (tree and artifacts; they are made again at
the same paths, so links to them only dangle meanwhile) to time a fetch through the
package clients from an empty store; that needs the registries.

usage: python bench/nix_builds.py [--empty] [--reps 3] [build ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from harness import builds  # noqa: E402


from harness.builds import nix, nixstore
from harness import paths


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def store_paths(name: str, entry: dict) -> list[str]:
    """The build's tree and artifact paths, evaluated (not built) from the flake."""
    attr = nix.attr_name(name)
    keys = sorted(nix.flake_pins({name: entry})["builds"][attr]["artifacts"])
    with builds.flake_copy() as flake:
        exprs = [f"path:{flake}#{attr}.outPath"] + [f"path:{flake}#{attr}.artifacts.{k}.outPath" for k in keys]
        out = []
        for e in exprs:
            res = nixstore._nix(["eval", "--raw", "--no-write-lock-file", e])
            if res.returncode != 0:
                raise SystemExit(f"nix eval {e}: {nixstore._nix_error(res)}")
            out.append(res.stdout.strip())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--empty", action="store_true", help="delete the build's store paths first")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    works, why = builds.nix_works()
    if not works:
        print(f"nix does not work here: {why}")
        return 1
    lock = builds.load_lock(paths.LOCK)
    names = a.names or [n for n, e in lock.items() if nix.offered(e)]
    print(f"{why}; store {builds.store_dir()}")
    print(f"{'build':<18}{'empty store s':>14}{'present s (median)':>20}{'verify s (median)':>19}{'NAR MB':>8}")
    with tempfile.TemporaryDirectory(prefix="bench-nix-") as d:
        for name in names:
            entry = lock[name]
            out = Path(d) / name
            empty = "-"
            if a.empty:
                store = store_paths(name, entry)
                nixstore._nix(["store", "delete", "--ignore-liveness", *store])
                empty = f"{timed(lambda: builds.fetch(name, entry, out, provider='nix')):.2f}"
            present = [timed(lambda: builds.fetch(name, entry, out, provider="nix")) for _ in range(a.reps)]
            verify = [timed(lambda: builds.verify_installed(name, entry, out)) for _ in range(a.reps)]
            size = builds.provenance(name, entry, out)["nar_size"] / 1e6
            print(f"{name:<18}{empty:>14}{statistics.median(present):>20.2f}{statistics.median(verify):>19.2f}"
                  f"{size:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
