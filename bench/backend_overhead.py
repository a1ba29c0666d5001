"""What a server start and stop cost per backend: the time from `Server(...)`
to the first answered query, and from the stop request to the server gone,
for the host backend (cgroup cpuset) and the docker backend (a container),
on the pinned MySQL 5.6.24 and its empty template. Prints figures; asserts
nothing. The difference times the number of server starts of a profile is
what containers add to its wall time (not to any measured interval).

    python bench/backend_overhead.py [--rounds 5] [--backends host,docker]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from common import BUILD, pinned_build

from harness.measure.server import Server


def one(backend: str, entry: dict, build_dir: Path, template: Path) -> tuple[float, float]:
    scratch = Path(tempfile.mkdtemp(prefix="mysqlbench-bench-"))
    try:
        shutil.copytree(template / "datadir", scratch / "datadir", symlinks=True)
        t0 = time.monotonic()
        srv = Server(name=BUILD, entry=entry, build_dir=build_dir, datadir=scratch / "datadir",
                     rundir=scratch / "run", run_id=f"bench-backend-{os.getpid()}",
                     cpus=sorted(os.sched_getaffinity(0))[:1], backend=backend)
        with srv:
            srv.version()
            t1 = time.monotonic()
        t2 = time.monotonic()
        return t1 - t0, t2 - t1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--backends", default="host,docker")
    a = p.parse_args()
    entry, build_dir, template = pinned_build()
    for backend in a.backends.split(","):
        one(backend, entry, build_dir, template)  # warm: image lookup, page cache
        starts, stops = zip(*(one(backend, entry, build_dir, template) for _ in range(a.rounds)))
        print(f"{backend:6s}  start {statistics.median(starts):5.2f} s  stop {statistics.median(stops):5.2f} s"
              f"  (median of {a.rounds}; start {min(starts):.2f}-{max(starts):.2f}, "
              f"stop {min(stops):.2f}-{max(stops):.2f})")


if __name__ == "__main__":
    main()
