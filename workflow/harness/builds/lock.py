"""The build lock (config/builds.lock.yaml): loading it, the checksums it pins, and
pinning a hash on first download.

The lock is the only source of truth for what a build is: a mismatch of any
checksum is an error that names the file and both hashes, raised before any
server starts.
"""
from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import subprocess
from pathlib import Path

import yaml

from harness import atomic
from harness import paths

# The hashes (artifact_sha256, mysqld_sha256, deb_files, nar_hash) are not required: one
# that is null or absent is pinned by the first fetch (pin_lock).
REQUIRED = ("family", "provider", "version", "mysqld")


class BuildError(Exception):
    """A build that cannot be used: one line, naming the file and the fix."""


def default_lock() -> Path:
    return paths.LOCK


def load_lock(path: Path) -> dict:
    try:
        # libyaml's safe loader where PyYAML has it: the same documents, ten times faster
        # (every measured cell's job reads the lock: ~0.15 s in pure Python)
        data = yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as e:
        raise BuildError(f"{path}: cannot read the build lock ({e})") from None
    builds = (data or {}).get("builds") or {}
    for name, entry in builds.items():
        for key in REQUIRED:
            if key not in entry:
                raise BuildError(f"{Path(path).name}: builds.{name}.{key} is missing; add it")
    return builds


def official_pair(builds: dict) -> tuple[str, str]:
    """(packaged, official): the lock's one entry with `official_of` is the official release
    of the packaged build it names, whose mysqld the rule official_check compares with it."""
    pairs = [(e["official_of"], name) for name, e in builds.items() if e.get("official_of")]
    if len(pairs) != 1:
        raise BuildError(f"builds: {len(pairs)} entries have official_of, the official_check rule needs one; "
                         f"set official_of: <packaged build> on the one official release to compare")
    packaged, official = pairs[0]
    if packaged not in builds:
        raise BuildError(f"builds.{official}.official_of: {packaged!r} is not in the lock; name a build of it")
    return packaged, official


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sri_sha512(path: Path) -> str:
    h = hashlib.sha512()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha512-" + base64.b64encode(h.digest()).decode()


def check_checksum(name: str, what: Path, expected: str, actual: str, fix: str) -> None:
    if expected != actual:
        raise BuildError(f"build {name}: {what} checksum mismatch: expected {expected}, got {actual}; {fix}")


def verify_artifact(name: str, entry: dict, artifact: Path) -> None:
    fix = "the download is not the pinned build: delete it and fetch again, or fix config/builds.lock.yaml"
    if "integrity" in entry:
        check_checksum(name, artifact, entry["integrity"], sri_sha512(artifact), fix)
    if entry.get("artifact_sha256") is not None:
        check_checksum(name, artifact, entry["artifact_sha256"], sha256_file(artifact), fix)


def mysqld_path(build_dir: Path, entry: dict) -> Path:
    return Path(build_dir) / entry["mysqld"]



def output_tail(res: subprocess.CompletedProcess) -> str:
    lines = [l.strip() for l in (res.stderr + "\n" + res.stdout).splitlines() if l.strip()]
    errors = [l for l in lines if "ERROR" in l or l.startswith("E:")]
    return (errors or lines or ["no output"])[0 if errors else -1]


# -- pinning on first download ------------------------------------------------------
def _entry_block(lines: list[str], name: str) -> tuple[int, int, int]:
    """(first, end, child indent) of builds.<name>'s lines in the lock's text."""
    head = re.compile(rf"^(\s+)(['\"]?){re.escape(name)}\2\s*:\s*(#.*)?$")
    for i, line in enumerate(lines):
        m = head.match(line)
        if not m:
            continue
        indent = len(m.group(1))
        end, child = i + 1, None
        while end < len(lines):
            text = lines[end]
            if text.strip() and not text.lstrip().startswith("#"):
                ind = len(text) - len(text.lstrip())
                if ind <= indent:
                    break
                child = ind if child is None else child
            end += 1
        if child is not None:
            return i, end, child
    raise BuildError(f"cannot find builds.{name} in the lock's text to pin it; write the hashes by hand")


def _render(key: str, value, child: int) -> list[str]:
    """`key: value` at indent `child`; a mapping of mappings (deb_files) as one flow line each."""
    pad = " " * child
    if not isinstance(value, dict):
        return [f"{pad}{key}: {value}"]
    out = [f"{pad}{key}:"]
    for k, v in value.items():
        flow = ", ".join(f"{a}: {b}" for a, b in v.items()) if isinstance(v, dict) else None
        out.append(f"{pad}  {k}: {{{flow}}}" if flow is not None else f"{pad}  {k}: {v}")
    return out


def pin_lock(lock_path: Path, name: str, values: dict) -> None:
    """Write `values` (keys that are null or absent in builds.<name>) into the lock file: a null
    is replaced in place, an absent key is added at the end of the entry; the rest of the file
    (comments, order, other entries) stays byte for byte as it was."""
    lock_path = Path(lock_path).absolute()
    dir_fd = os.open(lock_path.parent, os.O_RDONLY)
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX)  # one writer at a time (parallel fetch jobs)
        text = lock_path.read_text()
        before = yaml.safe_load(text)
        lines = text.splitlines(keepends=True)
        for key, value in values.items():
            first, end, child = _entry_block(lines, name)
            pat = re.compile(rf"^( {{{child}}}){re.escape(key)}:([ \t]*)([^#\n]*?)([ \t]*#[^\n]*)?(\n?)$")
            for i in range(first + 1, end):
                m = pat.match(lines[i])
                if m:
                    if m.group(3).strip() not in ("", "null", "~"):
                        raise BuildError(f"{lock_path.name}: builds.{name}.{key} is already pinned "
                                         f"({m.group(3).strip()}); not overwriting it")
                    new = _render(key, value, child)
                    new[0] += m.group(4) or ""
                    lines[i:i + 1] = [l + "\n" for l in new[:-1]] + [new[-1] + (m.group(5) or "\n")]
                    break
            else:  # absent: after the entry's last line of content
                last = max(i for i in range(first, end)
                           if lines[i].strip() and not lines[i].lstrip().startswith("#"))
                if not lines[last].endswith("\n"):
                    lines[last] += "\n"
                lines[last + 1:last + 1] = [l + "\n" for l in _render(key, value, child)]
        new_text = "".join(lines)
        want = before
        want["builds"][name].update(values)
        if yaml.safe_load(new_text) != want:
            raise BuildError(f"{lock_path.name}: pinning builds.{name} would change more than "
                             f"{', '.join(values)}; write the hashes by hand: {values}")
        mode = lock_path.stat().st_mode & 0o777
        atomic.write_text(lock_path, new_text)
        os.chmod(lock_path, mode)
    finally:
        os.close(dir_fd)
