"""`python -m harness export`: one run as one file, a BagIt bag (RFC 8493, the `bagit`
library) packed as a deterministic tar.gz, so exporting the same data twice gives
byte-identical files (docs/results.md).

The bag:

    mysqlbench-<profile>-<host id>/
      bagit.txt, bag-info.txt            BagIt declaration; bag-info: host id, profile, dates,
                                         cell count, format version, creators, licence
      manifest-sha256.txt                the sha256 of every payload file
      tagmanifest-sha256.txt             the sha256 of every tag file (these and the two below)
      README.md                          what the file is and how to replot it
      bundle.json                        machine-readable metadata (BUNDLE_FORMAT, FORMAT_VERSION)
      data/raw/<study>/<experiment>/<cell>/   every raw cell: manifest.json, driver output, logs
                                         (with --replot-only, only the files a replot reads:
                                         harness.analysis.tidywrite.CELL_FILES_READ)
      data/datasets/<build>/<dataset>/<key>/dataset.json   each dataset's record (no table data):
                                         what a replot's dataset tables read (A1's count gate, load)
      data/config.resolved.yaml          the effective merged config of the run
      data/builds.lock.yaml              the lock entries of the builds the cells name
      data/host/host.json, lstopo.xml    the measuring host (export runs where the cells were measured)
      data/repository/commit.json        the commit, dirty or not; dirty.diff when dirty
      data/ro-crate-metadata.json        RO-Crate 1.1 metadata of the run (`ro_crate`): the payload
                                         directory is the crate's root

`harness import` (harness.report.bundleimport) checks and imports it.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

from harness import atomic, paths
from harness.analysis import hosttype, tidywrite
from harness.builds.lock import sha256_file
from harness.measure import hostinfo, topology

BUNDLE_FORMAT = "mysqlbench-bundle"
FORMAT_VERSION = 1
HOST_ID_VAR = "MYSQLBENCH_HOST_ID"
HOST_ID_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
RESERVED_HOST_IDS = ("all",)   # claims.csv's combined row (harness.analysis.claims.ALL_HOSTS)
# What a cell carries: every file it wrote, or only what a replot reads (--replot-only)
CONTENTS_FULL, CONTENTS_REPLOT = "every file of each cell", "each cell's files a replot reads"
DATA_LICENSE = "CC-BY-4.0"  # the measured data's licence (the code's is LICENSE, MIT)


class BundleError(Exception):
    """A bundle cannot be written or read: one line naming the member or key and the fix."""


def same_cell(a: Path, b: Path) -> bool:
    """Do two cell directories hold the same measurement? Their manifest.json files have one
    sha256. Not their settings_digest: two measurements of one setting share a digest (a
    re-measured cell, or the same cell id measured on two clones of one host), and an
    import that took one for the other would replace a measurement."""
    return _manifest_sha256(a) == _manifest_sha256(b)


def _manifest_sha256(cell: Path) -> str | None:
    """The sha256 of a cell's manifest.json (builds.lock.sha256_file); None without one."""
    try:
        return sha256_file(cell / "manifest.json")
    except OSError:
        return None


def host_id(given: str | None = None) -> str:
    """This host's id: `given` (--host-id), else $MYSQLBENCH_HOST_ID, else h-<12 hex> of the
    sha256 of /etc/machine-id (or the host name) and the CPU model: stable per host, different
    between hosts. A test labels a second run on one machine by setting the variable."""
    value = given or os.environ.get(HOST_ID_VAR)
    if value:
        if value in RESERVED_HOST_IDS:
            raise BundleError(f"host id {value!r} (--host-id or ${HOST_ID_VAR}): reserved for the combined row "
                              f"of claims.csv; give this host another id")
        if not HOST_ID_RE.fullmatch(value):
            raise BundleError(f"host id {value!r} (--host-id or ${HOST_ID_VAR}): use lower-case letters, "
                              f"digits, '.', '_' or '-', at most 64, starting with a letter or digit")
        return value
    machine = next((t for p in ("/etc/machine-id", "/var/lib/dbus/machine-id")
                    if (t := hostinfo._read(p, "")).strip()), "") or hostinfo.platform.node()
    return "h-" + hashlib.sha256(f"{machine}\n{hostinfo.cpu_model()}".encode()).hexdigest()[:12]


def cell_dirs(raw: Path) -> list[Path]:
    """data/raw/<study>/<experiment>/<cell>/ directories, sorted (no hidden or .tmp- ones)."""
    return sorted(Path(p) for p in glob.glob(str(raw / "*" / "*" / "*"))
                  if Path(p).is_dir() and ".tmp-" not in Path(p).name)


def dataset_records(datasets: Path) -> list[Path]:
    """data/datasets/<build>/<dataset>/<key>/dataset.json files, sorted: a dataset's record
    (its rows, load and index times, the gate's counts), never its tables."""
    return sorted(Path(p) for p in glob.glob(str(datasets / "*" / "*" / "*" / "dataset.json")))


def creators(root: Path, given: list[str] | None = None) -> list[str]:
    """The bundle's creators: --creator values, else CITATION.cff's authors."""
    return [name for name, _ in creator_kinds(root, given)]


def creator_kinds(root: Path, given: list[str] | None = None) -> list[tuple[str, str]]:
    """(name, "Person" or "Organization") of each creator: a --creator value is a person; a
    CITATION.cff author is a person when it has given or family names, else an entity (CFF's
    `name` alone: a group or an organisation)."""
    if given:
        return [(g, "Person") for g in given]
    try:
        cff = yaml.safe_load((root / "CITATION.cff").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return []
    out = []
    for a in cff.get("authors") or []:
        person = " ".join(x for x in (a.get("given-names"), a.get("family-names")) if x)
        name = person or a.get("name")
        if name:
            out.append((name, "Person" if person else "Organization"))
    return out


def _git(root: Path, *args: str) -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    except OSError:
        return None
    return res.stdout if res.returncode == 0 else None


def repository(root: Path) -> tuple[dict, str | None]:
    """(commit facts, the diff against HEAD when the tree is dirty): outputs under data/ are
    ignored by git, so a run's own cells never make it dirty."""
    head = (_git(root, "rev-parse", "HEAD") or "").strip()
    if not head:
        return {"commit": "unknown", "dirty": None}, None
    status = _git(root, "status", "--porcelain", "--untracked-files=all") or ""
    dirty = bool(status.strip())
    diff = None
    if dirty:
        diff = (_git(root, "diff", "HEAD", "--binary") or "") + "".join(
            f"untracked: {line[3:]}\n" for line in status.splitlines() if line.startswith("??"))
    return {"commit": head, "dirty": dirty}, diff


def cgroup_version() -> str:
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return "v2"
    return "v1" if Path("/sys/fs/cgroup").is_dir() and any(Path("/sys/fs/cgroup").iterdir()) else "none"


def _manifests(cells: list[Path]) -> list[dict]:
    out = []
    for c in cells:
        try:
            out.append(json.loads((c / "manifest.json").read_text()))
        except (OSError, ValueError):
            raise BundleError(f"{c}/manifest.json: missing or not JSON; a cell without its manifest "
                              f"cannot travel (remove the directory or re-measure it)") from None
    return out


def metadata(root: Path, cfg: dict, mans: list[dict], hid: str, who: list[str], licence: str,
             repo: dict, replot_only: bool = False) -> dict:
    starts = sorted(t for m in mans if (t := (m.get("timing") or {}).get("started")))
    ends = sorted(t for m in mans if (t := (m.get("timing") or {}).get("finished")))
    per = {}
    for m in mans:
        key = f"{m.get('study')}/{m.get('experiment')}"
        per[key] = per.get(key, 0) + 1
    return {
        "format": BUNDLE_FORMAT, "format_version": FORMAT_VERSION, "host_id": hid,
        "profile": str(cfg.get("profile") or "unknown"),
        "measured_from": starts[0] if starts else None, "measured_to": ends[-1] if ends else None,
        "cells": len(mans), "cells_per_experiment": dict(sorted(per.items())),
        "builds": sorted({(m.get("build") or {}).get("name") for m in mans} - {None}),
        "measured_commits": sorted({(m.get("harness") or {}).get("git_commit") for m in mans} - {None}),
        "repository": repo, "creators": who, "license": licence,
        "contents": CONTENTS_REPLOT if replot_only else CONTENTS_FULL,
        "title": f"mysqlbench run: profile {cfg.get('profile')}, host {hid}, {len(mans)} cells",
    }


RO_CRATE_VERSION = "1.1"
PROCESS_RUN_CRATE = "https://w3id.org/ro/wfrun/process/0.5"


def ro_crate(payload: Path, meta: dict, host: dict, who: list[tuple[str, str]]) -> Path:
    """Write `payload`/ro-crate-metadata.json (the `rocrate` library): the bag's payload
    directory is the crate's root (RO-Crate 1.1 with BagIt: the metadata file is a payload
    file, so manifest-sha256.txt checksums it). The root Dataset names the run, its creators,
    licence, dates (datePublished: the day of the last measurement, never today, so the file
    is deterministic) and parts; the measuring host is the host/ Dataset; the run is one
    CreateAction of the Process Run Crate profile (the harness as its instrument, the
    effective config and the builds' lock entries as its objects, the cells and the datasets'
    records as its results)."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    crate = ROCrate(version=RO_CRATE_VERSION)
    day = (meta["measured_to"] or "1970-01-01")[:10]
    root = crate.root_dataset
    root["name"] = meta["title"]
    root["description"] = (f"The raw cells of a run of the MySQL storage-engine artifact: profile "
                           f"{meta['profile']}, host {meta['host_id']}, {meta['cells']} cells of "
                           f"{len(meta['cells_per_experiment'])} experiments, builds "
                           f"{', '.join(meta['builds']) or 'none'}. The bag's README.md (beside data/) says how to replot it.")
    root["datePublished"] = day
    if meta["measured_from"] and meta["measured_to"]:
        root["temporalCoverage"] = f"{meta['measured_from']}/{meta['measured_to']}"
    lic = meta["license"]
    lic_id = f"https://spdx.org/licenses/{lic}" if re.fullmatch(r"[A-Za-z0-9.+-]+", lic) else f"#license-{lic}"
    root["license"] = crate.add(ContextEntity(crate, lic_id, properties={"@type": "CreativeWork", "name": lic}))
    people = [crate.add(ContextEntity(crate, f"#creator-{i}", properties={"@type": kind, "name": name}))
              for i, (name, kind) in enumerate(who, 1)]
    if people:
        root["creator"] = people
    profile = crate.add(ContextEntity(crate, PROCESS_RUN_CRATE, properties={
        "@type": "CreativeWork", "name": "Process Run Crate", "version": PROCESS_RUN_CRATE.rsplit("/", 1)[1]}))
    root["conformsTo"] = [profile]
    repo = meta["repository"]
    commit = repo.get("commit") or "unknown"
    harness = crate.add(ContextEntity(crate, "#harness", properties={
        "@type": "SoftwareApplication", "name": "mysql-engines artifact harness (python -m harness, Snakemake)",
        "softwareVersion": commit + ("-dirty" if repo.get("dirty") else "")}))

    def part(rel: str, desc: str, fmt: str | None = None):
        if not (payload / rel.rstrip("/")).exists():
            return None
        props = {"name": rel.rstrip("/"), "description": desc, **({"encodingFormat": fmt} if fmt else {})}
        if rel.endswith("/"):
            return crate.add_dataset(None, rel, properties=props)
        return crate.add_file(None, rel, properties=props)

    raw = part("raw/", "every raw cell: data/raw/<study>/<experiment>/<cell>/, its manifest.json "
                       "(profile, settings digest, build, host, timing), driver output and logs")
    records = part("datasets/", "each dataset's record (rows, load and index times, counts), no table data")
    cfg = part("config.resolved.yaml", "the run's effective merged config", "application/yaml")
    lock = part("builds.lock.yaml", "the lock entries of the builds the cells name", "application/yaml")
    placement = "; ".join(f"{p.get('backend')}/{p.get('mechanism')}" for p in host.get("placement") or [])
    part("host/", f"the measuring host {meta['host_id']}: {host.get('cpu_model')}, {host.get('n_cpus')} CPUs, "
                  f"kernel {host.get('kernel')}, cgroup {host.get('cgroup')}, placement {placement or 'none'}")
    part("host/host.json", "CPU model, CPUs, kernel, cgroup version, backend and placement", "application/json")
    part("host/lstopo.xml", "the host's CPU topology (lstopo --of xml)", "application/xml")
    tree = {True: "a dirty tree (its diff: repository/dirty.diff)", False: "a clean tree"}.get(repo.get("dirty"),
                                                                                            "not a git clone")
    part("repository/", f"the repository commit the run was exported from: {commit}, {tree}")
    action = {"@type": "CreateAction", "name": f"measure {meta['profile']} on host {meta['host_id']}",
              "description": f"the run that measured these cells, on host {meta['host_id']} (host/)"}
    if meta["measured_from"]:
        action["startTime"] = meta["measured_from"]
    if meta["measured_to"]:
        action["endTime"] = meta["measured_to"]
    run = crate.add_action(harness, identifier="#run", object=[e for e in (cfg, lock) if e],
                           result=[e for e in (raw, records) if e], properties=action)
    root["mentions"] = [run]   # Process Run Crate: the root names its action
    crate.metadata.write(payload)
    return payload / "ro-crate-metadata.json"


README = """# A measured run of the MySQL storage-engine artifact

This file is a BagIt bag (RFC 8493) packed as a tar.gz: {title}.
It holds every raw cell the run measured (data/raw/, each with its manifest.json: {contents}),
the run's effective config (data/config.resolved.yaml), the lock entries of its builds
(data/builds.lock.yaml), the measuring host (data/host/: lstopo XML, CPU, kernel, cgroup
version, backend and placement) and the repository commit (data/repository/; the diff when
the tree was dirty). data/ro-crate-metadata.json describes the run as an RO-Crate 1.1
(Process Run Crate profile) for a data repository; bundle.json and bag-info.txt say the
same in this artifact's own machine-readable form;
manifest-sha256.txt and tagmanifest-sha256.txt hold the sha256 of every member.

Measured on host {host_id}, profile {profile}, {cells} cells, from {measured_from} to {measured_to}.
Creators: {creators}. Data licence: {license}.

To replot it, in a clone of the artifact (at commit {commit} for the same code):

    ./artifact import <this file>
    ./artifact replot --configfile config/{profile}.yaml

The paper is built from these cells without measuring and without starting a server;
its run information names the host that measured them and any difference between this
bundle's commit or builds and the clone's.
"""


def _tar(bag: Path, top: str, out: Path) -> None:
    """Pack `bag` as `top`/... deterministically: files only, sorted, mode 0644, owner 0:0,
    mtime 0, gzip header mtime 0 and no file name."""
    files = sorted(p for p in bag.rglob("*") if p.is_file())
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
            for p in files:
                ti = tarfile.TarInfo(f"{top}/{p.relative_to(bag).as_posix()}")
                ti.size, ti.mode, ti.mtime = p.stat().st_size, 0o644, 0
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                with open(p, "rb") as f:
                    tf.addfile(ti, f)
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def of_cpu_model(cells: list[Path], mans: list[dict], model: str) -> tuple[list[Path], list[dict]]:
    """The cells (and their manifests) measured on CPU model `model` (host.cpu_model): one node
    type of a SLURM sweep over mixed nodes, exported as a host of its own."""
    found = sorted({hosttype.host_type(m) for m in mans})
    if model not in found:
        raise BundleError(f"--cpu-model {model!r}: no cell was measured on it; the cells' CPU models: "
                          + ", ".join(repr(f) for f in found))
    keep = [i for i, m in enumerate(mans) if hosttype.host_type(m) == model]
    return [cells[i] for i in keep], [mans[i] for i in keep]


def export(root: Path, out: Path | None = None, given_host: str | None = None,
           who: list[str] | None = None, licence: str = DATA_LICENSE,
           replot_only: bool = False, cpu_model: str | None = None) -> tuple[Path, dict]:
    """Write the bundle of `root`'s data/raw; (its path, its metadata). `replot_only`: each
    cell carries only the files a replot reads (tidywrite.CELL_FILES_READ), not its logs.
    `cpu_model`: only the cells measured on that CPU model (the host facts then come from
    their manifests, not from the exporting machine)."""
    import bagit

    root = Path(root)
    raw, cfg_path = root / "data" / "raw", root / "data" / "tidy" / "config.resolved.yaml"
    cells = cell_dirs(raw)
    if not cells:
        raise BundleError(f"{raw}: no measured cell to export; run ./artifact smoke or paper first")
    if not cfg_path.is_file():
        raise BundleError(f"{cfg_path}: missing; run ./artifact replot once to write the effective config")
    cfg = yaml.safe_load(cfg_path.read_text()) or {}
    mans = _manifests(cells)
    if cpu_model is not None:
        cells, mans = of_cpu_model(cells, mans, cpu_model)
    hid = host_id(given_host)
    repo, diff = repository(root)
    meta = metadata(root, cfg, mans, hid, creators(root, who), licence, repo, replot_only)
    lock = yaml.safe_load((root / "config" / "builds.lock.yaml").read_text()) or {}
    entries = lock.get("builds", lock)
    top = f"mysqlbench-{meta['profile']}-{hid}"
    out = Path(out) if out else root / "data" / "export" / f"{top}.tar.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".export-", dir=out.parent) as tmp:
        bag = Path(tmp) / top
        for c in cells:
            if replot_only:
                (bag / "raw" / c.relative_to(raw)).mkdir(parents=True)
                for name in tidywrite.CELL_FILES_READ:
                    if (c / name).is_file():
                        shutil.copyfile(c / name, bag / "raw" / c.relative_to(raw) / name)
            else:
                shutil.copytree(c, bag / "raw" / c.relative_to(raw), symlinks=False)
        for d in dataset_records(root / "data" / "datasets"):
            to = bag / "datasets" / d.relative_to(root / "data" / "datasets")
            to.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(d, to)
        shutil.copy2(cfg_path, bag / "config.resolved.yaml")
        (bag / "builds.lock.yaml").write_text(yaml.safe_dump(
            {"builds": {b: entries[b] for b in meta["builds"] if b in entries}}, sort_keys=True))
        (bag / "host").mkdir()
        placement = sorted({json.dumps({k: (m.get("placement") or {}).get(k) for k in ("backend", "mechanism")},
                                       sort_keys=True) for m in mans})
        here = cpu_model is None   # else the cells' nodes, not this machine (a cluster's login node)
        recorded = [m.get("host") or {} for m in mans]
        host = {"host_id": hid, "cpu_model": hostinfo.cpu_model() if here else cpu_model,
                "n_cpus": os.cpu_count() if here else sorted({h.get("n_cpus") for h in recorded} - {None}),
                "kernel": hostinfo.platform.release() if here else sorted({h.get("kernel") for h in recorded} - {None}),
                "cgroup": cgroup_version() if here else None,
                "placement": [json.loads(p) for p in placement],
                "recorded_hosts": sorted({json.dumps(m.get("host") or {}, sort_keys=True) for m in mans})}
        (bag / "host" / "host.json").write_text(json.dumps(host, indent=1, sort_keys=True) + "\n")
        xml = topology.lstopo_xml() if here else None
        if xml:
            (bag / "host" / "lstopo.xml").write_text(xml)
        (bag / "repository").mkdir()
        (bag / "repository" / "commit.json").write_text(json.dumps(repo, indent=1, sort_keys=True) + "\n")
        if diff is not None:
            (bag / "repository" / "dirty.diff").write_text(diff)
        ro_crate(bag, meta, host, creator_kinds(root, who))
        day = (meta["measured_to"] or "1970-01-01")[:10]
        bagit.make_bag(str(bag), bag_info={
            "Bagging-Date": day, "External-Description": meta["title"],
            "Contact-Name": "; ".join(meta["creators"]) or "unknown", "Bundle-Format": BUNDLE_FORMAT,
            "Bundle-Format-Version": str(FORMAT_VERSION), "Host-Id": hid, "Profile": meta["profile"],
            "Measured-From": meta["measured_from"] or "", "Measured-To": meta["measured_to"] or "",
            "Cell-Count": str(meta["cells"]), "License": licence}, checksums=["sha256"])
        (bag / "README.md").write_text(README.format(
            **{**meta, "creators": ", ".join(meta["creators"]) or "unknown", "commit": repo["commit"]}))
        (bag / "bundle.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        _retag(bag)
        _tar(bag, top, out)
    return out, meta


def _retag(bag: Path) -> None:
    """Rewrite tagmanifest-sha256.txt over every tag file (README.md and bundle.json were
    added after make_bag), its lines sorted: bagit lists them in directory order."""
    lines = []
    for p in sorted(bag.iterdir()):
        if p.is_file() and not p.name.startswith("tagmanifest-"):
            lines.append(f"{sha256_file(p)} {p.name}\n")
    atomic.write_text(bag / "tagmanifest-sha256.txt", "".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness export", description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="the bundle file (default data/export/mysqlbench-<profile>-<host id>.tar.gz)")
    ap.add_argument("--root", default=str(paths.ROOT), help="the clone whose data/raw is exported")
    ap.add_argument("--host-id", help=f"this host's id (default ${HOST_ID_VAR}, else derived from "
                                      f"/etc/machine-id and the CPU model)")
    ap.add_argument("--creator", action="append", help="a creator's name (repeat; default CITATION.cff's authors)")
    ap.add_argument("--license", default=DATA_LICENSE, help=f"the data's licence (default {DATA_LICENSE})")
    ap.add_argument("--replot-only", action="store_true",
                    help="each cell carries only the files a replot reads (no driver output or server logs): "
                         "a small bundle, as the reference run in results/ ships")
    ap.add_argument("--cpu-model", help="only the cells measured on this CPU model (a node type of a SLURM "
                                        "sweep over mixed nodes): give each type its own --host-id")
    a = ap.parse_args(argv)
    try:
        out, meta = export(Path(a.root), Path(a.out) if a.out else None, a.host_id, a.creator, a.license,
                           a.replot_only, a.cpu_model)
    except BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"exported {meta['cells']} cells of profile {meta['profile']} (host {meta['host_id']}) to {out} "
          f"({out.stat().st_size} bytes)")
    return 0
