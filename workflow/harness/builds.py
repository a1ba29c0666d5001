"""Pinned server builds: fetch with an ordinary package client, verify, bootstrap.

The lock (config/builds.lock.yaml) is the only source of truth for what a
build is: a mismatch of any checksum is an error that names the file and
both hashes, raised before any server starts.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import tarfile
from pathlib import Path

import yaml

from . import atomic, procs

REQUIRED = ("family", "provider", "version", "mysqld", "mysqld_sha256")


class BuildError(Exception):
    """A build that cannot be used: one line, naming the file and the fix."""


def load_lock(path: Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise BuildError(f"{path}: cannot read the build lock ({e})") from None
    builds = (data or {}).get("builds") or {}
    for name, entry in builds.items():
        for key in REQUIRED:
            if key not in entry:
                raise BuildError(f"{Path(path).name}: builds.{name}.{key} is missing; add it")
    return builds


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


def _check(name: str, what: Path, expected: str, actual: str, fix: str) -> None:
    if expected != actual:
        raise BuildError(f"build {name}: {what} checksum mismatch: expected {expected}, got {actual}; {fix}")


def verify_artifact(name: str, entry: dict, artifact: Path) -> None:
    fix = "the download is not the pinned build: delete it and fetch again, or fix config/builds.lock.yaml"
    if "integrity" in entry:
        _check(name, artifact, entry["integrity"], sri_sha512(artifact), fix)
    if "artifact_sha256" in entry:
        _check(name, artifact, entry["artifact_sha256"], sha256_file(artifact), fix)


def mysqld_path(build_dir: Path, entry: dict) -> Path:
    return Path(build_dir) / entry["mysqld"]


def verify_installed(name: str, entry: dict, build_dir: Path) -> Path:
    """Check the unpacked server binary against the lock; return its path."""
    mysqld = mysqld_path(build_dir, entry)
    if not mysqld.is_file():
        raise BuildError(f"build {name}: {mysqld} is missing; run the fetch_build rule again")
    _check(name, mysqld, entry["mysqld_sha256"], sha256_file(mysqld),
           f"delete {build_dir} and fetch again, or fix config/builds.lock.yaml")
    return mysqld


def _npm_pack(entry: dict, dest: Path) -> Path:
    cmd = ["npm", "pack", "--json", "--pack-destination", str(dest), entry["package"]]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise BuildError(f"npm pack {entry['package']} failed: {tail}")
    info = json.loads(res.stdout)[0]
    return dest / info["filename"]


def fetch(name: str, entry: dict, out: Path, artifact: Path | None = None) -> Path:
    """Fetch (or take `artifact`), verify and unpack a build into `out`, atomically."""
    out = Path(out)
    with atomic.staging_dir(out) as tmp:
        if artifact is None:
            if entry["provider"] != "npm":
                raise BuildError(f"build {name}: provider {entry['provider']} is not supported yet; "
                                 f"use an npm build or pass --artifact")
            artifact = _npm_pack(entry, tmp)
        verify_artifact(name, entry, artifact)
        with tarfile.open(artifact) as tar:
            if hasattr(tarfile, "tar_filter"):  # Python >= 3.11.4 and security backports
                tar.extractall(tmp, filter="tar")
            else:
                tar.extractall(tmp)
        if artifact.parent == tmp:
            artifact.unlink()
        mysqld = verify_installed(name, entry, tmp)
        mysqld.chmod(0o755)
        (tmp / "build.json").write_text(json.dumps({"name": name, **entry}, indent=2) + "\n")
    return out


def bootstrap(name: str, entry: dict, build_dir: Path, out: Path, options: dict | None = None) -> Path:
    """Create a fresh, empty system datadir template for this build into `out`."""
    build_dir = Path(build_dir).resolve()
    mysqld = verify_installed(name, entry, build_dir)
    if entry["family"] != "mysql-5.6":
        raise BuildError(f"build {name}: bootstrap of family {entry['family']} is not supported yet")
    share = build_dir / entry["share_dir"]
    sql = [share / "mysql_system_tables.sql", share / "mysql_system_tables_data.sql"]
    from . import mycnf
    opts = {k: v for k, v in mycnf.FAMILY_DEFAULTS["mysql-5.6"].items()
            if k.startswith("innodb_log") or k == "innodb_file_per_table"}
    opts.update({k: v for k, v in (options or {}).items() if k.startswith("innodb_log")})
    with atomic.staging_dir(Path(out)) as tmp:
        datadir = tmp / "datadir"
        (datadir / "mysql").mkdir(parents=True)
        argv = [str(mysqld), "--no-defaults", "--bootstrap", f"--basedir={build_dir}",
                f"--datadir={datadir}", f"--lc-messages-dir={share}", f"--tmpdir={tmp}"]
        argv += [f"--{k.replace('_', '-')}={v}" for k, v in opts.items()]
        if os.geteuid() == 0:
            argv.append("--user=root")
        script = "use mysql;\n" + "".join(p.read_text() for p in sql)
        env = procs.labelled_env(f"bootstrap-{name}",
                                 {"LD_LIBRARY_PATH": str(build_dir / entry.get("lib_dir", "."))})
        with open(tmp / "bootstrap.log", "w") as log:
            res = subprocess.run(argv, input=script, text=True, stdout=log, stderr=subprocess.STDOUT,
                                 env=env, preexec_fn=procs.die_with_parent, timeout=600)
        if res.returncode != 0:
            lines = [l for l in (tmp / "bootstrap.log").read_text().splitlines() if "ERROR" in l]
            raise BuildError(f"build {name}: bootstrap failed (exit {res.returncode}): "
                             f"{lines[0] if lines else 'no [ERROR] line in its log'}")
    return Path(out)
