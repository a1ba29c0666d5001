"""Unpack a fetched server build into $out: the builder of the flake's unpack step.

Run by Nix (nix/offline-builds.nix) as `/usr/bin/python3 unpack.py` with the
build's description in the environment variable `spec` (JSON). Standard
library only: it runs on the host's Python outside any virtualenv.

The tree it makes is the one `harness.builds.fetch` makes for the same lock
entry (tests/e2e/test_nix_builds.py compares them file by file), so the harness
uses the store path as the server's basedir unchanged. Two differences:
no build.json (the harness records provenance itself, and a file that named
the tree's own hash could not be inside it), and `store_exclude` paths are
left out (files an install step would modify in place).

  npm     the .tgz, unpacked whole
  maven   the lock's `unpack` list: {from: path in the jar, to: path in the
          tree}; `from` is a file, a directory (ends with /) or a jar inside
          the jar, whose files are unpacked in turn
  debian  the .debs extracted with dpkg-deb, then each `links` entry
          (path in the tree -> absolute path in the package) copied in
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path


def fail(msg: str) -> None:
    print(f"unpack: {msg}", file=sys.stderr)
    sys.exit(1)


def inside(root: Path, rel: str) -> Path:
    target = Path(os.path.normpath(root / rel))
    if target != root and root not in target.parents:
        fail(f"refusing to write {rel!r} outside the output")
    return target


def untar(artifact: Path, out: Path) -> None:
    with tarfile.open(artifact, "r:*") as tar:
        members = tar.getmembers()
        for m in members:
            if m.name.startswith("/") or ".." in Path(m.name).parts or m.isdev():
                fail(f"{artifact.name}: unsafe member {m.name!r}")
        tar.extractall(out, members=members)


def unzip(zf: zipfile.ZipFile, prefix: str, out: Path, to: str, what: str) -> None:
    n = 0
    for info in zf.infolist():
        if not info.filename.startswith(prefix) or info.filename.startswith("META-INF/"):
            continue
        rel = info.filename[len(prefix):]
        if not rel:
            continue
        target = inside(out, f"{to}/{rel}")
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        target.chmod(((info.external_attr >> 16) & 0o777) or 0o644)
        n += 1
    if n == 0:
        fail(f"{what}: no files under {prefix!r}")


def unpack_jar(jar: Path, items: list[dict], out: Path) -> None:
    with zipfile.ZipFile(jar) as zf:
        names = set(zf.namelist())
        for item in items or [{"from": "", "to": "."}]:
            src, to = item["from"], item.get("to", ".")
            if src.endswith(".jar"):
                if src not in names:
                    fail(f"{jar.name} has no {src}")
                with zipfile.ZipFile(io.BytesIO(zf.read(src))) as inner:
                    unzip(inner, "", out, to, f"{jar.name}!{src}")
            elif src == "" or src.endswith("/"):
                unzip(zf, src, out, to, jar.name)
            else:
                if src not in names:
                    fail(f"{jar.name} has no {src}")
                target = inside(out, to)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(src) as s, open(target, "wb") as d:
                    shutil.copyfileobj(s, d, 1 << 20)
                target.chmod(0o644)


def unpack_debs(debs: list[Path], links: dict, out: Path) -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        root = Path(d)
        for deb in debs:
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        for rel, target in links.items():
            src = root / target.lstrip("/")
            if not (src.exists() or src.is_symlink()):
                fail(f"{target} is in none of the packages {', '.join(p.name for p in debs)}")
            dst = inside(out, rel)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst, follow_symlinks=False)


def remove(out: Path, rel: str) -> None:
    p = inside(out, rel)
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif p.exists() or p.is_symlink():
        p.unlink()


def main() -> None:
    spec = json.loads(os.environ["spec"])
    out = Path(os.environ["out"])
    out.mkdir()
    artifacts = [Path(p) for _, p in sorted(spec["artifacts"].items())]
    provider = spec["provider"]
    if provider == "npm":
        untar(artifacts[0], out)
    elif provider == "maven":
        unpack_jar(artifacts[0], spec.get("unpack") or [], out)
    elif provider == "debian":
        unpack_debs(artifacts, spec["links"], out)
    else:
        fail(f"provider {provider!r} has no unpack step")
    for rel in spec.get("store_exclude") or []:
        remove(out, rel)
    mysqld = inside(out, spec["mysqld"])
    if not mysqld.is_file():
        fail(f"{spec['mysqld']} is not in the unpacked tree")
    mysqld.chmod(0o755)


if __name__ == "__main__":
    main()
