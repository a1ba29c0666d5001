"""The debian provider's fetch: the pinned `.deb` files, never an install.

What the Nix builder (nix/offline-builds.nix, nix/unpack.py) does, done directly:
`apt-get download <package>=<package_version>` for each of the entry's `packages`
(into a temporary directory; apt checks each file against the archive's signed
index), each file's sha256 checked against the lock's `deb_files` (or, on first
fetch, pinned into it), `dpkg-deb -x` of all of them into one scratch root, and the
lock's `links` (path in the build dir -> absolute path in the packages) copied into
the build dir. Nothing is installed on the host (`dpkg -l` stays the same), so any
number of versions of one package coexist, each in its own build dir.

When the host's archive no longer offers the pinned version (Debian's security
suite keeps only the newest), the pinned files can come from a local directory:
`ARTIFACT_DEB_DIR` (all debian builds) or the entry's `deb_dir` (a path, relative
to the repository root), checked against the same pinned sha256s.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import paths
from harness.builds.lock import BuildError, check_checksum, output_tail, sha256_file

DEB_DIR_VAR = "ARTIFACT_DEB_DIR"
# apt-get's ways of saying "this archive has no such version"
_NOT_OFFERED = ("was not found", "Can't find a source to download", "Unable to locate package")


def packages_of(entry: dict) -> list[str]:
    return list(entry.get("packages") or [entry["package"]])


def local_dir(entry: dict) -> Path | None:
    """The directory of pinned .deb files to take before asking apt: $ARTIFACT_DEB_DIR, else the
    entry's `deb_dir` (relative to the repository root), else None."""
    given = os.environ.get(DEB_DIR_VAR) or entry.get("deb_dir")
    if not given:
        return None
    d = Path(given)
    return d if d.is_absolute() else paths.ROOT / d


def _field(deb: Path, field: str) -> str:
    res = subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True)
    if res.returncode != 0:
        raise BuildError(f"{deb}: not a Debian package (dpkg-deb -f: {output_tail(res)}); delete it and fetch again")
    return res.stdout.strip()


def archive_name(deb: Path) -> str:
    """The archive's file name of a .deb (what `deb_files.<pkg>.file` pins and the Nix builder
    names it): <package>_<version without epoch>_<arch>.deb. apt-get download writes the
    epoch as `1%3a`; the archive's Filename has none."""
    version = _field(deb, "Version").split(":", 1)[-1]
    return f"{_field(deb, 'Package')}_{version}_{_field(deb, 'Architecture')}.deb"


def offered_versions(package: str) -> list[str]:
    """The versions of `package` this host's configured archive offers (`apt-cache madison`)."""
    res = subprocess.run(["apt-cache", "madison", package], capture_output=True, text=True)
    out = []
    for line in res.stdout.splitlines():
        cols = [c.strip() for c in line.split("|")]
        if len(cols) >= 2 and cols[0] == package and cols[1] not in out:
            out.append(cols[1])
    return out


def not_offered(name: str, entry: dict, package: str) -> BuildError:
    """One line: the build, the version, what the archive offers now, and the two ways out."""
    version = str(entry["package_version"])
    offered = ", ".join(offered_versions(package)) or "none"
    files = entry.get("deb_files") or {}
    pinned = "; ".join(f"{f['file']} sha256 {f['sha256']}" for p, f in sorted(files.items()))
    what = (f"the pinned files ({pinned})" if pinned else
            f"the {', '.join(packages_of(entry))} {version} .deb files (no sha256 pinned yet: "
            f"check them against Debian's signed index)")
    return BuildError(
        f"build {name}: {package} {version} is no longer offered by this host's apt archive (it offers: "
        f"{offered}); either get {what} from Debian's snapshot archive on a host with internet, or put "
        f"the pinned .deb files in a directory and set {DEB_DIR_VAR}=DIR (or builds.{name}.deb_dir in "
        f"config/builds.lock.yaml); their sha256 are checked either way")


def _apt_download(name: str, entry: dict, package: str, dest: Path) -> Path:
    if shutil.which("apt-get") is None:
        raise BuildError(f"build {name}: apt-get is not on PATH; this provider needs Debian's package tools "
                         f"(or the pinned .deb files in {DEB_DIR_VAR})")
    spec = f"{package}={entry['package_version']}"
    cmd = ["apt-get", "download", "-q", spec]
    if os.geteuid() == 0:  # apt's _apt user cannot write into root's temporary directory
        cmd[2:2] = ["-o", "APT::Sandbox::User=root"]
    dest.mkdir(parents=True)
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=dest, timeout=1800,
                         stdin=subprocess.DEVNULL)
    debs = sorted(dest.glob("*.deb"))
    if res.returncode != 0 or len(debs) != 1:
        if any(s in res.stderr for s in _NOT_OFFERED):
            raise not_offered(name, entry, package)
        raise BuildError(f"build {name}: apt-get download {spec} failed (exit {res.returncode}): {output_tail(res)}")
    return debs[0]


def _from_local(package: str, version: str, pinned: dict | None, where: Path) -> Path | None:
    if pinned and (where / pinned["file"]).is_file():
        return where / pinned["file"]
    upstream = version.split(":", 1)[-1]
    epoch = version.split(":", 1)[0] + "%3a" if ":" in version else ""
    for pattern in (f"{package}_{upstream}_*.deb", f"{package}_{epoch}{upstream}_*.deb"):
        found = sorted(where.glob(pattern))
        if found:
            return found[0]
    return None


def fetch_debs(name: str, entry: dict, scratch: Path) -> tuple[list[Path], dict]:
    """The entry's .deb files in `scratch`, each checked: (files, pins). `pins` is
    {"deb_files": {...}} when the entry pinned none yet (first fetch), else {}."""
    version = str(entry["package_version"])
    files = entry.get("deb_files") or {}
    packages = packages_of(entry)
    partly = [p for p in packages if p not in files]
    if files and partly:
        raise BuildError(f"build {name}: deb_files pins some packages but not {', '.join(partly)}; "
                         f"add them, or delete deb_files to pin all on the next fetch")
    where = local_dir(entry)
    if where is not None and not where.is_dir():
        raise BuildError(f"build {name}: {where} ({DEB_DIR_VAR} or deb_dir) is not a directory; fix it")
    debs, seen = [], {}
    for p in packages:
        deb = _from_local(p, version, files.get(p), where) if where else None
        if deb is None:
            deb = _apt_download(name, entry, p, scratch / p)
        got = (_field(deb, "Package"), _field(deb, "Version"))
        if got != (p, version):
            raise BuildError(f"build {name}: {deb} is {got[0]} {got[1]}, the lock pins {p} {version}; "
                             f"remove it from {where}")
        sha = sha256_file(deb)
        if p in files:
            check_checksum(name, deb, files[p]["sha256"], sha,
                           f"it is not the pinned {files[p]['file']}: fetch it again, or fix "
                           f"deb_files.{p} in config/builds.lock.yaml")
        seen[p] = {"file": archive_name(deb), "sha256": sha}
        debs.append(deb)
    return debs, ({} if files else {"deb_files": seen})


def _inside(root: Path, rel: str) -> Path:
    target = Path(os.path.normpath(root / rel))
    if target != root and root not in target.parents:
        raise BuildError(f"refusing to write {rel!r} outside {root}")
    return target


def unpack_debs(name: str, entry: dict, debs: list[Path], out: Path) -> None:
    """`dpkg-deb -x` of every file into a scratch root, then each `links` entry copied into
    `out` (as nix/unpack.py does, so the two trees are the same)."""
    if shutil.which("dpkg-deb") is None:
        raise BuildError(f"build {name}: dpkg-deb is not on PATH; this provider needs Debian's package tools")
    with tempfile.TemporaryDirectory(prefix="mysqlbench-deb-") as d:
        root = Path(d)
        for deb in debs:
            res = subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], capture_output=True, text=True)
            if res.returncode != 0:
                raise BuildError(f"build {name}: dpkg-deb -x {deb.name} failed: {output_tail(res)}")
        for rel, target in (entry.get("links") or {}).items():
            src = root / target.lstrip("/")
            if not (src.exists() or src.is_symlink()):
                raise BuildError(f"build {name}: {target} is in none of {', '.join(p.name for p in debs)}; "
                                 f"fix `links` in config/builds.lock.yaml")
            dst = _inside(out, rel)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst, follow_symlinks=False)


def _apt_depends(package: str, version: str) -> list[list[str]] | None:
    """The Depends/PreDepends of `package` `version` as apt-cache has them (each a list of
    alternatives), or None when the host's package lists do not know that version."""
    res = subprocess.run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts",
                          "--no-breaks", "--no-replaces", "--no-enhances", f"{package}={version}"],
                         capture_output=True, text=True)
    lines = res.stdout.splitlines()
    if res.returncode != 0 or not lines or lines[0].strip() != package:  # "<package>": not that version
        return None
    out: list[list[str]] = []
    continued = False  # the line before was "|Depends:": this one is its next alternative
    for line in lines[1:]:
        s = line.strip()
        if s.startswith(("Depends:", "|Depends:", "PreDepends:", "|PreDepends:")):
            name = s.split(":", 1)[1].strip()
            if continued:
                out[-1].append(name)
            else:
                out.append([name])
            continued = s.startswith("|")
    return out


def _deb_depends(deb: Path) -> list[list[str]]:
    """The Depends/Pre-Depends fields of a .deb file, parsed: [[alternative, ...], ...]."""
    out: list[list[str]] = []
    for field in ("Pre-Depends", "Depends"):
        res = subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True)
        for dep in filter(None, (d.strip() for d in res.stdout.replace("\n", " ").split(","))):
            out.append([a.split("(")[0].strip().split(":")[0] for a in dep.split("|")])
    return out


def host_packages(lock: dict) -> tuple[list[str], list[str]]:
    """(packages, unresolved): the shared-library packages (lib*, not the -perl modules of
    the clients' scripts) that the lock's Debian-packaged builds depend on, beyond the
    packages each build extracts, and the `<package>=<version>` whose dependencies could be
    read neither from a local pinned .deb (ARTIFACT_DEB_DIR / deb_dir) nor from the host's
    package lists. A build is unpacked, never installed, so its server loads these from the
    host (e.g. liburing2 for mariadbd 10.11). Of a set of alternatives, the first counts."""
    want: list[str] = []
    unresolved: list[str] = []
    for entry in lock.values():
        if not isinstance(entry, dict) or entry.get("provider") != "debian":
            continue
        own = packages_of(entry)
        version = str(entry["package_version"])
        where = local_dir(entry)
        for p in own:
            deb = _from_local(p, version, (entry.get("deb_files") or {}).get(p), where) \
                if where is not None and where.is_dir() else None
            deps = _deb_depends(deb) if deb is not None else _apt_depends(p, version)
            if deps is None:
                unresolved.append(f"{p}={version}")
                continue
            for alternatives in deps:
                name = alternatives[0]
                if name.startswith("lib") and not name.endswith("-perl") \
                        and name not in own and name not in want:  # (-perl: the clients' scripts')
                    want.append(name)
    return sorted(want), unresolved


def _installed(package: str) -> bool:
    res = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return res.returncode == 0 and "install ok installed" in res.stdout


def main(argv: list[str]) -> int:
    """`python -m harness host-packages [--all]`: the library packages the lock's Debian
    builds load from the host and the host lacks (all of them with --all), one line,
    space-separated: what scripts/setup.sh installs. Exit status 2, with a line on stderr,
    when some package's dependencies could not be read (setup then asks again next time)."""
    import argparse

    from harness.builds.lock import load_lock
    p = argparse.ArgumentParser(prog="harness host-packages")
    p.add_argument("--lock", default=str(paths.LOCK))
    p.add_argument("--all", action="store_true", help="also those already installed")
    a = p.parse_args(argv)
    names, unresolved = host_packages(load_lock(Path(a.lock)))
    print(" ".join(n for n in names if a.all or not _installed(n)))
    if unresolved:
        print(f"host-packages: the dependencies of {', '.join(unresolved)} are in neither a pinned .deb "
              f"({DEB_DIR_VAR} or deb_dir) nor this host's package lists; run apt-get update, or give "
              f"the pinned .deb files", file=sys.stderr)
        return 2
    return 0
