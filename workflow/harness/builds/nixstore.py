"""The Nix store as the harness uses it: the settings every `nix` call gets, whether
Nix works here, and the checks of a store path (`nix store verify` + the lock's
`nar_hash`) and of an installed build (in the store or not) before every use.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from harness import atomic, paths
from harness.builds.lock import BuildError, check_checksum, mysqld_path, sha256_file

# Settings that work with Debian's single-user Nix 2.8 and no daemon, passed in
# NIX_CONFIG (appended to the caller's, so they win); the user's nix.conf is not touched.
NIX_SETTINGS = (
    ("experimental-features", "nix-command flakes"),
    ("flake-registry", "/dev/null"),  # no download of the global flake registry
    ("substituters", ""),             # no binary cache: the package clients fetch
    ("build-users-group", ""),        # single-user store: no nixbld group or users
    ("sandbox", "false"),             # the builders run the host's npm/mvn/apt-get, python3
)


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


def nix_path_info(path: Path) -> dict:
    res = _nix(["path-info", "--json", str(path)], timeout=120)
    if res.returncode != 0:
        raise BuildError(f"{path}: not a valid Nix store path ({_nix_error(res)}); delete the link and fetch again")
    return json.loads(res.stdout)[0]


def verify_store_path(name: str, entry: dict, path: Path) -> dict:
    """Before use: the store path's files are what Nix registered (`nix store verify`),
    and what Nix registered is the lock's nar_hash. Returns its path-info."""
    top = store_top(path)
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


# A full check (nix store verify of the whole store path, its path-info, the sha256 of
# mysqld: ~0.7 s for MySQL 5.6.24) is done again before a server starts unless a stamp
# says it passed less than STAMP_MAX_AGE_S ago on files whose every inode, size, mode,
# mtime and ctime are still those it saw. Any write, chmod or replacement of a file
# changes its ctime, which no user call can set back: the stamp never hides a change
# made through the filesystem; the age bounds how long it trusts the disk's own bytes.
STAMP_MAX_AGE_S = 3600
STAMP_VAR = "MYSQLBENCH_VERIFY_STAMPS"   # 0: no stamps, every start checks everything


def store_top(path: Path) -> Path:
    """The store path (/nix/store/<hash>-<name>) that `path` (after symlinks) is in."""
    return store_dir() / Path(path).resolve().relative_to(store_dir()).parts[0]


def _stat_digest(root: Path, files: list[Path]) -> str:
    """A digest of the lstat (inode, size, mode, mtime, ctime) of `files` and of every
    entry under `root` (None: no tree)."""
    h = hashlib.sha256()
    entries = list(files)
    if root is not None:
        for d, dirs, names in os.walk(root):
            dirs.sort()
            entries += [Path(d)] + [Path(d) / n for n in sorted(names)]
    for p in entries:
        st = os.lstat(p)
        h.update(f"{p}\0{st.st_ino}\0{st.st_size}\0{st.st_mode}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n".encode())
    return h.hexdigest()


def _stamp_path(build_dir: Path, entry: dict) -> Path:
    key = hashlib.sha256(f"{Path(build_dir).resolve()}\0{entry.get('nar_hash')}\0"
                         f"{entry.get('mysqld_sha256')}".encode()).hexdigest()[:32]
    return paths.RESOURCES / "verified" / f"{key}.json"


def _stamp_holds(stamp: Path, digest: str) -> bool:
    try:
        data = json.loads(stamp.read_text())
        return data["stat"] == digest and 0 <= time.time() - float(data["verified_at"]) < STAMP_MAX_AGE_S
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _write_stamp(stamp: Path, digest: str, build_dir: Path) -> None:
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(stamp, json.dumps({"build_dir": str(Path(build_dir).resolve()), "stat": digest,
                                             "verified_at": time.time()}) + "\n")
    except OSError:  # no stamp: the next start checks everything again
        pass


def verify_installed(name: str, entry: dict, build_dir: Path, store_checked: bool = False) -> Path:
    """Check the unpacked server binary against the lock; return its path. A build dir
    in the Nix store is first verified whole (verify_store_path) unless the caller just did.
    Skipped when a stamp of a passed check still holds (STAMP_MAX_AGE_S above)."""
    store = in_store(build_dir)
    mysqld = mysqld_path(build_dir, entry)
    if not mysqld.is_file():
        raise BuildError(f"build {name}: {mysqld} is missing; run the fetch_build rule again")
    if entry.get("mysqld_sha256") is None:
        raise BuildError(f"build {name}: mysqld_sha256 is not pinned in the lock; fetch the build "
                         f"(which pins it) or write the sha256 of {mysqld} into config/builds.lock.yaml")
    use_stamp = os.environ.get(STAMP_VAR, "1") != "0" and not store_checked
    if use_stamp:
        top = store_top(build_dir) if store else None
        stamp, digest = _stamp_path(build_dir, entry), _stat_digest(top, [mysqld.resolve()])
        if _stamp_holds(stamp, digest):
            return mysqld
    if not store_checked and store:
        verify_store_path(name, entry, build_dir)
    check_checksum(name, mysqld, entry["mysqld_sha256"], sha256_file(mysqld),
           f"delete {build_dir} and fetch again, or fix config/builds.lock.yaml")
    if use_stamp and _stat_digest(top, [mysqld.resolve()]) == digest:  # unchanged while it was checked
        _write_stamp(stamp, digest, build_dir)
    return mysqld


def missing_libraries(entry: dict, build_dir: Path) -> list[str]:
    """The shared libraries the server binary needs that neither the build's lib_dir nor
    the host has (`ldd`, with the build's LD_LIBRARY_PATH)."""
    if shutil.which("ldd") is None:
        return []
    env = dict(os.environ, LD_LIBRARY_PATH=str(Path(build_dir).resolve() / entry.get("lib_dir", ".")))
    res = subprocess.run(["ldd", str(mysqld_path(build_dir, entry))], capture_output=True, text=True,
                         env=env, timeout=60)
    return sorted({l.split("=>")[0].strip() for l in res.stdout.splitlines() if "=> not found" in l})


def check_libraries(name: str, entry: dict, build_dir: Path) -> None:
    """One line naming every library the server would fail to load, before it is started."""
    missing = missing_libraries(entry, build_dir)
    if missing:
        how = ("install the Debian packages that provide them (the lib Depends: of "
               f"{', '.join(entry.get('packages') or [entry.get('package', name)])}; "
               "`.venv/bin/python -m harness host-packages` names those this host lacks)"
               if entry.get("provider") == "debian" else "install the packages that provide them")
        raise BuildError(f"build {name}: {entry['mysqld']} needs {', '.join(missing)}, which this host "
                         f"does not have; {how}")
