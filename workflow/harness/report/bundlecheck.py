"""The checks of `harness import` (harness.report.bundleimport) that guard the clone rather
than the bag: one import at a time (`importing`: a flock on data/.import.lock), every member
header read before anything is unpacked (`scan`: names, kinds, sizes, the free disk), and
whether a bundle's host id already names another machine here (`fingerprint`)."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from harness.report import bundle as B

HOSTS = "data/hosts"
# One import at a time per clone: an exclusive flock on this file (beside data/hosts, so a
# refused import leaves data/hosts as it was); a second import waits, saying so once.
IMPORT_LOCK = "data/.import.lock"
# No member of a bundle may be larger than this (bytes): a real cell's largest file is tens of
# KiB; a bundle declaring a larger member is refused before anything is unpacked.
MAX_MEMBER_VAR, MAX_MEMBER = "MYSQLBENCH_IMPORT_MAX_MEMBER", 256 << 20
# What the unpacked bundle must leave free on data/hosts's file system (bytes).
RESERVE_VAR, RESERVE = "MYSQLBENCH_IMPORT_RESERVE", 64 << 20
BLOCK = 4096  # a file's size rounded up to this: what it takes on disk


def _bound(var: str, default: int) -> int:
    value = os.environ.get(var, "")
    if not value:
        return default
    if not value.isdigit():
        raise B.BundleError(f"${var}={value!r}: a number of bytes, e.g. {default}; unset it for the default")
    return int(value)


@contextlib.contextmanager
def importing(root: Path, out=None):
    """Hold `root`'s import lock (exclusive flock on data/.import.lock) for the block: two
    imports into one clone never interleave (the one checks cells against a host tree the
    other is replacing). A second import waits, one line on stderr naming the holder, and
    goes on when the first ends; the kernel drops the lock however its holder exits."""
    path = root / IMPORT_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = path.read_text().strip() or "another process"
            print(f"waiting for the import lock {path} (held by {who}): one import into this clone at a "
                  f"time; this one goes on when that one ends", file=out or sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} import\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _member(file: Path, m: tarfile.TarInfo, top: str | None) -> tuple[PurePosixPath | None, str | None]:
    """(its path, the bundle's top folder) after `m`'s checks; (None, top) for a "." folder."""
    name = PurePosixPath(m.name)
    if not name.parts and m.isdir():   # "." (tar -C dir .): the folder that holds the bag
        return None, top
    if name.is_absolute() or m.name.startswith("/"):
        raise B.BundleError(f"{file}: member {m.name} is an absolute path; refused, nothing written")
    if ".." in name.parts:
        raise B.BundleError(f"{file}: member {m.name} contains '..'; refused, nothing written")
    if not (m.isreg() or m.isdir()):
        what = "a link" if (m.issym() or m.islnk()) else "a device or special file"
        raise B.BundleError(f"{file}: member {m.name} is {what}; a bundle holds files only; "
                            f"refused, nothing written")
    if not name.parts:
        raise B.BundleError(f"{file}: member {m.name!r} has no name; refused, nothing written")
    if top is None:
        top = name.parts[0]
    if name.parts[0] != top or (m.isreg() and len(name.parts) < 2):
        raise B.BundleError(f"{file}: member {m.name} is outside the bundle's one folder {top}/; "
                            f"refused, nothing written")
    return name, top


def _corrupt(file: Path, e: BaseException) -> B.BundleError:
    why = " ".join(str(e).split())
    return B.BundleError(f"{file}: truncated or corrupt archive ({type(e).__name__}: {why}); "
                         f"copy it again, nothing written")


def scan(file: Path, hosts: Path) -> int:
    """Read every member header of `file` to its end, before anything is written: each
    member's checks (`_member`), no member larger than $MYSQLBENCH_IMPORT_MAX_MEMBER bytes
    (default 256 MiB), and all of them, unpacked, within the space free on `hosts`'s file
    system less $MYSQLBENCH_IMPORT_RESERVE bytes (default 64 MiB). A tar member is exactly
    its header's size when read, so the declared sizes are the unpacked ones. The bytes the
    bundle takes unpacked."""
    most, reserve = _bound(MAX_MEMBER_VAR, MAX_MEMBER), _bound(RESERVE_VAR, RESERVE)
    free = shutil.disk_usage(hosts).free - reserve
    top, total = None, 0
    try:
        with tarfile.open(file, mode="r:gz") as tf:
            for m in tf:
                _, top = _member(file, m, top)
                if m.size > most:
                    raise B.BundleError(f"{file}: member {m.name} is {m.size} bytes, more than the {most} a bundle "
                                        f"member may be (${MAX_MEMBER_VAR}); refused, nothing written (raise "
                                        f"${MAX_MEMBER_VAR} if the bundle is genuine)")
                total += -(-m.size // BLOCK) * BLOCK + BLOCK   # its blocks and its inode's share
                if total > free:
                    raise B.BundleError(f"{file}: member {m.name} brings the bundle to {total} bytes unpacked, more "
                                        f"than the {max(free, 0)} free under {HOSTS} (less a reserve of {reserve}, "
                                        f"${RESERVE_VAR}); refused, nothing written (free some space and import "
                                        f"again)")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        raise _corrupt(file, e) from None
    if top is None:
        raise B.BundleError(f"{file}: an empty archive; not a bundle of harness export, nothing written")
    return total


def fingerprint(host_dirs: list[Path]) -> dict[str, list[str]]:
    """What tells one machine from another in the host folders (`<bag>/data/host/`) of a
    host's bundles: the CPU models and host names the cells' manifests recorded (host.json's
    recorded_hosts; the exporting host's CPU model when none), and the machine's shape
    from lstopo.xml (packages, NUMA nodes, cores, hardware threads). Not the kernel, the
    cgroup or the placement: one machine changes those between runs."""
    cpus, names, shapes = set(), set(), set()
    for d in host_dirs:
        try:
            host = json.loads((d / "host.json").read_text())
        except (OSError, ValueError):
            continue
        recorded = []
        for r in host.get("recorded_hosts") or []:
            with contextlib.suppress(ValueError, TypeError):
                recorded.append(json.loads(r) if isinstance(r, str) else dict(r))
        cpus |= {str(r["cpu_model"]) for r in recorded if r.get("cpu_model")} or \
            ({str(host["cpu_model"])} if host.get("cpu_model") else set())
        names |= {str(r["hostname"]) for r in recorded if r.get("hostname")}
        with contextlib.suppress(OSError):
            xml = (d / "lstopo.xml").read_text()
            counts = [len(re.findall(rf'<object\s+type="{t}"', xml)) for t in ("Package", "NUMANode", "Core", "PU")]
            if counts[-1]:
                shapes.add("{} package(s), {} NUMA node(s), {} core(s), {} thread(s)".format(*counts))
    return {"CPU model": sorted(cpus), "host name": sorted(names), "lstopo shape": sorted(shapes)}


def local_fingerprint(raw: Path) -> dict[str, list[str]]:
    """The fingerprint of the local cells (data/raw): their manifests' CPU models and host names."""
    cpus, names = set(), set()
    for c in B.cell_dirs(raw):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            h = json.loads((c / "manifest.json").read_text()).get("host") or {}
            cpus |= {str(h["cpu_model"])} if h.get("cpu_model") else set()
            names |= {str(h["hostname"])} if h.get("hostname") else set()
    return {"CPU model": sorted(cpus), "host name": sorted(names), "lstopo shape": []}


def _same_machine(have: dict, new: dict) -> str | None:
    """None when nothing both sides recorded differs; else what differs, in words."""
    for key in have:
        if have[key] and new.get(key) and have[key] != new[key]:
            return f"{key} {' / '.join(have[key])} there, {' / '.join(new[key])} in this bundle"
    return None
