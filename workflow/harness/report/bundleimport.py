"""`python -m harness import FILE...`: a bundle of `harness export` (harness.report.bundle)
checked, then moved into data/hosts/<host id>/ in one rename; and which raw root a
replot reads (`raw_root`).

An imported host's tree, apart from the local host's data/raw:

    data/hosts/<host id>/raw/<study>/<experiment>/<cell>/    its cells (every bundle's, merged)
    data/hosts/<host id>/bundles/<bundle id>/                each bundle's metadata: bundle.json,
                                                             README.md, bag-info.txt, config, lock
                                                             entries, host/, repository/

One import into a clone at a time: an exclusive flock on data/.import.lock
(`bundlecheck.importing`); a second import waits for it. Checks, before anything is written
under data/hosts (`bundlecheck.scan`, on every member header): every member a plain file or directory under one top folder, no
absolute path and no '..'; the archive reads to its end; no member larger than a bound and
the whole, unpacked, within the free space. Then, before anything is written under
data/hosts/<host id>: the format and its version; every checksum of the bag's manifests (and no file they
do not list); every cell has its manifest.json; no cell collides with a different cell
already present (`bundle.same_cell`); the host id names no other machine here
(`bundlecheck.fingerprint`). The bundle is unpacked into data/hosts/.import-<pid>-*
(the same file system), the host's new tree is built there (its present cells hard-linked),
and it replaces the old one by rename: a kill -9 leaves a temporary folder, never a
half-imported host, and the next import removes it.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path

from harness import paths
from harness.builds.lock import sha256_file
from harness.report import bundle as B
from harness.report.bundlecheck import (MAX_MEMBER_VAR, RESERVE_VAR, _corrupt, _member, _same_machine,  # noqa: F401
                                        fingerprint, importing, local_fingerprint, scan)

HOSTS = "data/hosts"
AUTO, LOCAL = "auto", "local"
def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def clean_leftovers(hosts: Path) -> list[str]:
    """Remove what a killed import left: .import-<pid>-* folders of a dead pid; a host moved
    aside (.old-<pid>-<host>) is put back when its replacement never arrived, else removed."""
    done = []
    for d in sorted(hosts.glob(".import-*")) if hosts.is_dir() else []:
        pid = d.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            done.append(d.name)
    for d in sorted(hosts.glob(".old-*")) if hosts.is_dir() else []:
        _, pid, host = d.name.split("-", 2)
        if pid.isdigit() and not _alive(int(pid)):
            if (hosts / host).exists():
                shutil.rmtree(d, ignore_errors=True)
            else:
                os.rename(d, hosts / host)
            done.append(d.name)
    return done


def _unpack(file: Path, dest: Path) -> Path:
    """Every member of `file` written under `dest` after its checks; the bag's top folder."""
    top = None
    try:
        with tarfile.open(file, mode="r:gz") as tf:
            for m in tf:
                name, top = _member(file, m, top)
                if name is None:
                    continue
                target = dest.joinpath(*name.parts)
                try:
                    if m.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tf.extractfile(m)
                    with open(target, "wb") as f:
                        shutil.copyfileobj(src, f)
                except OSError as e:
                    if getattr(e, "filename", None) is None:
                        raise                                  # the archive's read: corrupt, below
                    if e.errno == errno.ENOSPC:
                        raise B.BundleError(f"{file}: no space left on the device writing member {m.name} under "
                                            f"{HOSTS}; free some and import again, nothing written") from None
                    raise B.BundleError(f"{file}: member {m.name} cannot be written ({e.strerror}: a name "
                                        f"clashes with another member's or is too long); refused, nothing "
                                        f"written") from None
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        raise _corrupt(file, e) from None
    if top is None:
        raise B.BundleError(f"{file}: an empty archive; not a bundle of harness export, nothing written")
    return dest / top


def verify(file: Path, bag: Path) -> dict:
    """The bag's format version, every checksum, every cell's manifest; its bundle.json."""
    import bagit

    meta_p = bag / "bundle.json"
    try:
        meta = json.loads(meta_p.read_text())
    except (OSError, ValueError):
        raise B.BundleError(f"{file}: member {bag.name}/bundle.json is missing or not JSON; not a bundle of "
                            f"harness export, nothing written") from None
    if not isinstance(meta, dict):
        raise B.BundleError(f"{file}: member {bag.name}/bundle.json is not a JSON object; not a bundle of "
                            f"harness export, nothing written")
    if meta.get("format") != B.BUNDLE_FORMAT or meta.get("format_version") != B.FORMAT_VERSION:
        raise B.BundleError(f"{file}: member {bag.name}/bundle.json: format {meta.get('format')!r} version "
                            f"{meta.get('format_version')!r} is unknown; this clone reads {B.BUNDLE_FORMAT} "
                            f"version {B.FORMAT_VERSION} (update the clone), nothing written")
    for key in ("host_id", "profile"):
        if not isinstance(meta.get(key), str) or not meta[key]:
            raise B.BundleError(f"{file}: member {bag.name}/bundle.json: {key} is missing or not a name; not a "
                                f"bundle of harness export, nothing written")
    try:
        b = bagit.Bag(str(bag))
    except bagit.BagError as e:
        raise B.BundleError(f"{file}: not a valid BagIt bag ({e}), nothing written") from None
    listed = dict(b.entries)  # path -> {algorithm: hash}, payload and tag files
    for rel in sorted(listed):
        p = bag / rel
        want = listed[rel].get("sha256")
        if not p.is_file():
            raise B.BundleError(f"{file}: member {bag.name}/{rel} is missing; refused, nothing written")
        if want is None or sha256_file(p) != want:
            raise B.BundleError(f"{file}: member {bag.name}/{rel} was changed (its sha256 is not the "
                                f"manifest's); refused, nothing written")
    for p in sorted(x for x in bag.rglob("*") if x.is_file()):
        rel = p.relative_to(bag).as_posix()
        if rel not in listed and not rel.startswith("tagmanifest-"):
            raise B.BundleError(f"{file}: member {bag.name}/{rel} is in no manifest; refused, nothing written")
    try:
        b.validate()
    except bagit.BagError as e:
        raise B.BundleError(f"{file}: the bag does not validate ({str(e).splitlines()[0]}), nothing written") \
            from None
    try:
        B.host_id(meta.get("host_id") or "?")  # a valid id, not a reserved one, else one line
    except B.BundleError as e:
        raise B.BundleError(f"{file}: bundle.json: {e} (export it again with that id); refused, nothing written") \
            from None
    for c in sorted(x for x in (bag / "data" / "raw").glob("*/*/*")):
        if not c.is_dir():
            raise B.BundleError(f"{file}: member {bag.name}/data/raw/{c.relative_to(bag / 'data/raw')} is not a "
                                f"cell directory; refused, nothing written")
        if not (c / "manifest.json").is_file():
            raise B.BundleError(f"{file}: cell {bag.name}/{c.relative_to(bag).as_posix()} has no manifest.json; "
                                f"refused, nothing written")
    return meta


def bundle_id(bag: Path) -> str:
    """The bundle's id: the sha256 of its payload manifest (same cells, same id), 16 hex."""
    return hashlib.sha256((bag / "manifest-sha256.txt").read_bytes()).hexdigest()[:16]


def _link_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, copy_function=os.link)


def import_one(file: Path, root: Path, as_host: str | None = None) -> str:
    """Import one bundle into `root`'s data/hosts/ (as host `as_host` when given, else the
    bundle's host id); a one-line summary."""
    file = Path(file)
    if not file.is_file():
        raise B.BundleError(f"{file}: no such file; give a bundle written by ./artifact export")
    hosts = root / HOSTS
    hosts.mkdir(parents=True, exist_ok=True)
    with importing(root):
        for d in clean_leftovers(hosts):
            print(f"removed what an interrupted import left: {HOSTS}/{d}", file=sys.stderr)
        scan(file, hosts)
        return _import_locked(file, root, hosts, as_host)


def _import_locked(file: Path, root: Path, hosts: Path, as_host: str | None) -> str:
    tmp = Path(tempfile.mkdtemp(prefix=f".import-{os.getpid()}-", dir=hosts))
    try:
        bag = _unpack(file, tmp / "unpacked")
        meta = verify(file, bag)
        hid, bid = as_host or meta["host_id"], bundle_id(bag)
        dest = hosts / hid
        new_print = fingerprint([bag / "data" / "host"])
        have_print = fingerprint(sorted(dest.glob("bundles/*/data/host")))
        if hid == B.host_id():
            have_print = {k: sorted(set(v) | set(local_fingerprint(root / "data" / "raw")[k]))
                          for k, v in have_print.items()}
        differs = _same_machine(have_print, new_print)
        if differs:
            raise B.BundleError(f"{file}: host id {hid} already names another machine in this clone ({differs}); "
                                f"refused, nothing written (export the bundle again with another --host-id, or "
                                f"import it with --as-host NEW_ID)")
        new_cells = sorted(c.relative_to(bag / "data" / "raw") for c in (bag / "data" / "raw").glob("*/*/*"))
        local = [root / "data" / "raw"] if hid == B.host_id() else []
        fresh = []
        for rel in new_cells:
            for have_root in [dest / "raw", *local]:
                have = have_root / rel
                if have.exists() and not B.same_cell(have, bag / "data" / "raw" / rel):
                    raise B.BundleError(f"{file}: cell {rel} collides with a different cell already present "
                                        f"in {have_root.relative_to(root)}; refused, nothing written (import "
                                        f"into another clone, or remove that cell first)")
            if not (dest / "raw" / rel).exists():
                fresh.append(rel)
        records = [d.relative_to(bag / "data" / "datasets") for d in B.dataset_records(bag / "data" / "datasets")]
        for rel in records:
            have = dest / "datasets" / rel
            if have.exists() and have.read_bytes() != (bag / "data" / "datasets" / rel).read_bytes():
                raise B.BundleError(f"{file}: dataset record {rel} collides with a different one already present "
                                    f"in {(dest / 'datasets').relative_to(root)}; refused, nothing written (import "
                                    f"into another clone, or remove that host first)")
        fresh_records = [rel for rel in records if not (dest / "datasets" / rel).exists()]
        if not fresh and not fresh_records and (dest / "bundles" / bid).is_dir():
            return f"{file}: already imported (host {hid}, bundle {bid}); nothing changed"
        new = tmp / "host"
        if dest.exists():
            _link_tree(dest, new)
        else:
            new.mkdir()
        for rel in fresh:
            (new / "raw" / rel).parent.mkdir(parents=True, exist_ok=True)
            os.rename(bag / "data" / "raw" / rel, new / "raw" / rel)
        shutil.rmtree(bag / "data" / "raw")
        for rel in fresh_records:
            (new / "datasets" / rel).parent.mkdir(parents=True, exist_ok=True)
            os.rename(bag / "data" / "datasets" / rel, new / "datasets" / rel)
        shutil.rmtree(bag / "data" / "datasets", ignore_errors=True)
        keep = new / "bundles" / bid
        keep.parent.mkdir(parents=True, exist_ok=True)
        if keep.exists():
            shutil.rmtree(keep)
        os.rename(bag, keep)
        if hid != meta["host_id"]:   # --as-host: the kept bundle says under which id it was imported
            (keep / "imported-as.txt").write_text(f"{hid}\n")
        if dest.exists():
            old = hosts / f".old-{os.getpid()}-{hid}"
            os.rename(dest, old)
            os.rename(new, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(new, dest)
        renamed = f" (exported as {meta['host_id']})" if hid != meta["host_id"] else ""
        return (f"{file}: imported {len(fresh)} new cell(s) of {len(new_cells)} (profile {meta['profile']}) "
                f"as host {hid}{renamed} into {HOSTS}/{hid}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------- what a replot reads

def imported_hosts(root: Path = paths.ROOT) -> list[str]:
    d = Path(root) / HOSTS
    return sorted(p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")) if d.is_dir() else []


def raw_root(choice: str, replot: bool, root: Path = paths.ROOT) -> str:
    """The raw root (relative to the clone) the pipeline reads: data/raw when measuring;
    a replot reads `raw_host`: local (data/raw), a host id (data/hosts/<id>/raw), or auto:
    data/raw when it holds a cell, else the one imported host."""
    root = Path(root)
    if not replot:
        if choice not in (AUTO, LOCAL):
            raise B.BundleError(f"raw_host: {choice!r} is read only by ./artifact replot (a measuring run "
                                f"writes data/raw); drop it or replot")
        return "data/raw"
    hosts = imported_hosts(root)
    if choice == LOCAL:
        return "data/raw"
    if choice != AUTO:
        if choice not in hosts:
            raise B.BundleError(f"raw_host: no imported host {choice!r} under {HOSTS}; use local, auto or one "
                                f"of: {', '.join(hosts) or 'none (./artifact import FILE)'}")
        return f"{HOSTS}/{choice}/raw"
    if B.cell_dirs(root / "data" / "raw") or not hosts:
        return "data/raw"
    if len(hosts) > 1:
        raise B.BundleError(f"raw_host: no local cells and {len(hosts)} imported hosts ({', '.join(hosts)}); "
                            f"choose one with --config raw_host=<id>")
    return f"{HOSTS}/{hosts[0]}/raw"


ALL = "all"


def host_roots(choice: str, replot: bool, profile: str, root: Path = paths.ROOT) -> list[tuple[str, str]]:
    """(host id, raw root) of every host a run reads, the first the one whose cells the
    figures and the text draw: one host for `local` or a host id (raw_root); for `all`,
    and for `auto` when there is more than one host, the local host (data/raw, id
    bundle.host_id()) when it holds a cell, then every imported host in id order. `all`
    refuses an imported host of another profile (check_profile); `auto` leaves it out,
    saying so."""
    root = Path(root)
    if not replot or choice not in (AUTO, ALL):
        first = raw_root(choice, replot, root)
        return [(_id_of(first), first)]
    hosts = [(B.host_id(), "data/raw")] if B.cell_dirs(root / "data" / "raw") else []
    for h in imported_hosts(root):
        raw = f"{HOSTS}/{h}/raw"
        if hosts and h == hosts[0][0]:   # this host's own cells, imported: one host is never two
            print(f"raw_host {choice}: imported host {h} is this host (its id); its cells are left out beside "
                  f"data/raw's (read them alone with --config raw_host={h})", file=sys.stderr)
            continue
        try:
            check_profile(str(root / raw), profile)
        except B.BundleError:
            if choice == ALL:
                raise
            print(f"raw_host auto: imported host {h} is of another profile than {profile}; left out",
                  file=sys.stderr)
            continue
        hosts.append((h, raw))
    if choice == ALL and not hosts:
        raise B.BundleError("raw_host: all, but no host holds cells (data/raw is empty and nothing is "
                            "imported: ./artifact import FILE)")
    return hosts if hosts else [(_id_of(r), r) for r in [raw_root(AUTO, replot, root)]]


def _id_of(raw: str) -> str:
    """The host id of a raw root: data/hosts/<id>/raw's id, this host's for data/raw."""
    parts = Path(raw).parts
    return parts[-2] if len(parts) >= 3 and parts[-3] == "hosts" else B.host_id()


def bundles_of(raw_dir: str) -> list[dict]:
    """The bundle.json of every bundle imported into the host whose raw root is `raw_dir`
    ([] for data/raw), with its builds' lock entries (`lock_entries`)."""
    import yaml
    d = Path(raw_dir).parent / "bundles"
    if Path(raw_dir).parent.parent.name != "hosts" or not d.is_dir():
        return []
    out = []
    for b in sorted(d.iterdir()):
        with contextlib.suppress(OSError, ValueError):
            meta = json.loads((b / "bundle.json").read_text())
            lock = yaml.safe_load((b / "data" / "builds.lock.yaml").read_text()) or {}
            renamed = b / "imported-as.txt"
            as_host = renamed.read_text().strip() if renamed.is_file() else None
            out.append({**meta, "lock_entries": lock.get("builds") or {}, "imported_as": as_host})
    return out


def check_profile(raw_dir: str, profile: str) -> None:
    """An imported host's cells are read only by a replot of their own profile."""
    other = sorted({b.get("profile") for b in bundles_of(raw_dir)} - {profile})
    if other:
        raise B.BundleError(f"raw_host: the cells of {raw_dir} are of profile {', '.join(map(str, other))}, not "
                            f"{profile}; replot with --configfile config/{other[0]}.yaml")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness import", description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", metavar="FILE", help="bundles written by ./artifact export")
    ap.add_argument("--root", default=str(paths.ROOT), help="the clone to import into")
    ap.add_argument("--as-host", metavar="ID", help="import under this host id instead of the bundle's (when "
                                                    "its id already names another machine in this clone)")
    a = ap.parse_args(argv)
    for f in a.files:
        try:
            if a.as_host is not None:
                try:
                    B.host_id(a.as_host)   # a valid id, not a reserved one, else one line
                except B.BundleError as e:
                    raise B.BundleError(f"--as-host: {e}".replace(" (--host-id or $MYSQLBENCH_HOST_ID)", "")) \
                        from None
            print(import_one(Path(f), Path(a.root), a.as_host))
        except B.BundleError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    return 0
