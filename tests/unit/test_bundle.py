"""`harness export` and `harness import` (harness.report.bundle, .bundleimport) on a small
real bundle: recorded real cells (tests/fixtures/raw6) exported from a scratch clone; each
bad bundle is built from it. Every refusal is one line naming the member, with nothing
written; a re-import changes nothing; a kill -9 mid-import leaves nothing half-imported.
The round trip on a real smoke run is tests/e2e/test_e2e_pipeline.py's."""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from harness.report import bundleimport

FIXTURE = ROOT / "tests/fixtures/raw6/A2/oltp_ro"
CELLS = sorted(p.name for p in FIXTURE.iterdir())[:4]
HOST = "test-host-a"


def harness(*args, cwd=None, host=HOST, check=True, env=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "MYSQLBENCH_HOST_ID": host, **(env or {})}
    res = subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def clone(dest: Path, cells=CELLS) -> Path:
    """A scratch clone holding `cells` (recorded real cells), the resolved config and the lock."""
    for c in cells:
        shutil.copytree(FIXTURE / c, dest / "data/raw/A2/oltp_ro" / c)
    (dest / "data/tidy").mkdir(parents=True)
    (dest / "data/tidy/config.resolved.yaml").write_text("profile: smoke\n")
    (dest / "config").mkdir()
    shutil.copy(ROOT / "config/builds.lock.yaml", dest / "config")
    shutil.copy(ROOT / "CITATION.cff", dest)
    return dest


@pytest.fixture
def bundle(tmp_path) -> Path:
    src = clone(tmp_path / "src")
    harness("export", "--root", str(src), "--out", str(tmp_path / "run.tar.gz"))
    return tmp_path / "run.tar.gz"


def members(path: Path) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(path) as tf:
        return [(m, tf.extractfile(m).read() if m.isreg() else None) for m in tf]


def repack(path: Path, out: Path, edit) -> Path:
    """`path`'s members through edit(list) -> list, written to `out` as a tar.gz."""
    with tarfile.open(out, "w:gz") as tf:
        for m, data in edit(members(path)):
            if data is not None:
                m.size = len(data)
            tf.addfile(m, io.BytesIO(data) if data is not None else None)
    return out


def tree(root: Path) -> dict:
    """Every path under root/data/hosts with its inode, size and mtime (nothing written?)."""
    d = root / "data/hosts"
    return {str(p.relative_to(d)): (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(d.rglob("*"))} if d.exists() else {}


def refused(tmp_path: Path, bad: Path, expect: str, dest: Path | None = None, env=None) -> str:
    dest = dest or tmp_path / "dst"
    dest.mkdir(exist_ok=True)
    before = tree(dest)
    res = harness("import", "--root", str(dest), str(bad), check=False, env=env)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1 and expect in lines[0], res.stderr
    assert tree(dest) == before, "a refused import wrote something"
    return lines[0]


def test_exporting_twice_gives_byte_identical_files(tmp_path, bundle):
    src = tmp_path / "src"
    for p in src.rglob("*"):
        os.utime(p, (1, 1))  # other mtimes: the bundle must not carry them
    harness("export", "--root", str(src), "--out", str(tmp_path / "again.tar.gz"))
    assert bundle.read_bytes() == (tmp_path / "again.tar.gz").read_bytes()
    names = [m.name for m, _ in members(bundle)]
    assert names == sorted(names) and all(m.mtime == 0 and m.uid == 0 for m, _ in members(bundle))
    top = names[0].split("/")[0]
    assert top == f"mysqlbench-smoke-{HOST}"
    for want in ("bagit.txt", "bag-info.txt", "manifest-sha256.txt", "tagmanifest-sha256.txt", "README.md",
                 "bundle.json", "data/config.resolved.yaml", "data/builds.lock.yaml", "data/host/host.json",
                 "data/repository/commit.json", f"data/raw/A2/oltp_ro/{CELLS[0]}/manifest.json"):
        assert f"{top}/{want}" in names, want
    meta = json.loads(dict((m.name, d) for m, d in members(bundle))[f"{top}/bundle.json"])
    assert meta["format_version"] == 1 and meta["cells"] == 4 and meta["host_id"] == HOST
    assert meta["creators"] == ["The mysql-engines artifact authors"] and meta["license"] == "CC-BY-4.0"
    assert meta["measured_from"] < meta["measured_to"]


def test_import_puts_the_cells_under_their_host_and_a_second_import_changes_nothing(tmp_path, bundle):
    dst = tmp_path / "dst"
    dst.mkdir()
    res = harness("import", "--root", str(dst), str(bundle))
    assert f"as host {HOST}" in res.stdout
    for c in CELLS:
        assert (dst / f"data/hosts/{HOST}/raw/A2/oltp_ro/{c}/manifest.json").read_bytes() == \
            (FIXTURE / c / "manifest.json").read_bytes()
    assert not (dst / "data/raw").exists()
    before = tree(dst)
    res = harness("import", "--root", str(dst), str(bundle))
    assert "nothing changed" in res.stdout and tree(dst) == before
    assert bundleimport.raw_root("auto", True, dst) == f"data/hosts/{HOST}/raw"
    assert bundleimport.raw_root("auto", False, dst) == "data/raw"


def test_a_second_bundle_of_the_host_adds_its_cells(tmp_path, bundle):
    other = clone(tmp_path / "other", sorted(p.name for p in FIXTURE.iterdir())[4:6])
    harness("export", "--root", str(other), "--out", str(tmp_path / "more.tar.gz"))
    dst = tmp_path / "dst"
    dst.mkdir()
    harness("import", "--root", str(dst), str(bundle), str(tmp_path / "more.tar.gz"))
    assert len(list((dst / f"data/hosts/{HOST}/raw/A2/oltp_ro").iterdir())) == 6
    assert len(list((dst / f"data/hosts/{HOST}/bundles").iterdir())) == 2
    assert [p.name for p in (dst / "data/hosts").iterdir()] == [HOST]  # no leftover


def _edit_file(suffix: str, fn):
    def edit(ms):
        return [(m, fn(d) if m.name.endswith(suffix) else d) for m, d in ms]
    return edit


def test_a_changed_file_is_refused(tmp_path, bundle):
    bad = repack(bundle, tmp_path / "bad.tar.gz", _edit_file(f"{CELLS[1]}/intervals.csv", lambda d: d + b"1\n"))
    msg = refused(tmp_path, bad, "was changed")
    assert f"{CELLS[1]}/intervals.csv" in msg


def test_a_missing_file_is_refused(tmp_path, bundle):
    bad = repack(bundle, tmp_path / "bad.tar.gz",
                 lambda ms: [(m, d) for m, d in ms if not m.name.endswith(f"{CELLS[2]}/status_delta.tsv")])
    assert f"{CELLS[2]}/status_delta.tsv is missing" in refused(tmp_path, bad, "is missing")


def test_an_added_file_is_refused(tmp_path, bundle):
    def edit(ms):
        m = tarfile.TarInfo(ms[-1][0].name.split("/")[0] + "/data/raw/extra.txt")
        return ms + [(m, b"not listed\n")]
    refused(tmp_path, repack(bundle, tmp_path / "bad.tar.gz", edit), "data/raw/extra.txt is in no manifest")


@pytest.mark.parametrize("cut", ["truncated", "garbage"])
def test_a_truncated_or_corrupt_archive_is_refused(tmp_path, bundle, cut):
    data = bundle.read_bytes()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(data[:len(data) * 2 // 3] if cut == "truncated" else data[:40] + bytes(200) + data[240:])
    refused(tmp_path, bad, "truncated or corrupt archive")


def test_an_unknown_format_version_is_refused(tmp_path, bundle):
    bump = _edit_file("/bundle.json", lambda d: json.dumps({**json.loads(d), "format_version": 99}).encode())
    refused(tmp_path, repack(bundle, tmp_path / "bad.tar.gz", bump), "version 99 is unknown")


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink", "hardlink", "device"])
def test_a_dangerous_member_is_refused(tmp_path, bundle, kind):
    top = members(bundle)[0][0].name.split("/")[0]
    m = tarfile.TarInfo({"absolute": "/tmp/evil", "dotdot": f"{top}/../evil"}.get(kind, f"{top}/data/evil"))
    if kind == "symlink":
        m.type, m.linkname = tarfile.SYMTYPE, "/etc/passwd"
    elif kind == "hardlink":
        m.type, m.linkname = tarfile.LNKTYPE, f"{top}/bagit.txt"
    elif kind == "device":
        m.type, m.devmajor, m.devminor = tarfile.CHRTYPE, 1, 3
    data = b"x" if kind in ("absolute", "dotdot") else None
    bad = repack(bundle, tmp_path / "bad.tar.gz", lambda ms: [(m, data)] + ms)
    want = {"absolute": "is an absolute path", "dotdot": "contains '..'", "symlink": "is a link",
            "hardlink": "is a link", "device": "is a device"}[kind]
    assert m.name in refused(tmp_path, bad, want)
    assert not Path("/tmp/evil").exists() and not (tmp_path / "evil").exists()


def test_a_cell_without_its_manifest_is_refused(tmp_path, bundle):
    """A well-formed bag (checksums agree) whose cell lacks manifest.json."""
    import bagit
    from harness.report import bundle as B
    work = tmp_path / "unpacked"
    with tarfile.open(bundle) as tf:
        tf.extractall(work)  # our own bundle, files only
    bag = next(work.iterdir())
    (bag / f"data/raw/A2/oltp_ro/{CELLS[0]}/manifest.json").unlink()
    bagit.Bag(str(bag)).save(manifests=True)
    B._retag(bag)
    bad = tmp_path / "bad.tar.gz"
    B._tar(bag, bag.name, bad)
    assert f"{CELLS[0]} has no manifest.json" in refused(tmp_path, bad, "has no manifest.json")


def test_a_cell_colliding_with_a_different_one_already_present_is_refused(tmp_path, bundle):
    dst = tmp_path / "dst"
    dst.mkdir()
    harness("import", "--root", str(dst), str(bundle))
    other = clone(tmp_path / "other", CELLS[:1])
    m = other / f"data/raw/A2/oltp_ro/{CELLS[0]}/manifest.json"
    m.write_text(m.read_text().replace('"duration_s": 8', '"duration_s": 9', 1))  # another measurement
    harness("export", "--root", str(other), "--out", str(tmp_path / "other.tar.gz"))
    assert CELLS[0] in refused(tmp_path, tmp_path / "other.tar.gz", "collides with a different cell", dst)


def test_kill9_mid_import_leaves_nothing_half_imported_and_the_next_import_cleans_up(tmp_path):
    """A real import process killed with SIGKILL while it unpacks a large bundle (a cell with
    a 64 MiB random log): no host appears; its temporary folder is removed by the next import,
    which then completes."""
    src = clone(tmp_path / "src")
    (src / f"data/raw/A2/oltp_ro/{CELLS[0]}/big.log").write_bytes(os.urandom(64 << 20))
    harness("export", "--root", str(src), "--out", str(tmp_path / "big.tar.gz"))
    dst = tmp_path / "dst"
    dst.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    p = subprocess.Popen([sys.executable, "-m", "harness", "import", "--root", str(dst), str(tmp_path / "big.tar.gz")],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        if any(f.stat().st_size > 1 << 20 for f in (dst / "data/hosts").glob(".import-*/**/big.log")):
            break
        time.sleep(0.01)
    assert p.poll() is None, "the import ended before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    hosts = dst / "data/hosts"
    assert [d.name for d in hosts.iterdir() if not d.name.startswith(".import-")] == []
    assert any(d.name.startswith(".import-") for d in hosts.iterdir())  # what the kill left
    res = harness("import", "--root", str(dst), str(tmp_path / "big.tar.gz"))
    assert "removed what an interrupted import left" in res.stderr
    assert [d.name for d in hosts.iterdir()] == [HOST]
    assert (hosts / HOST / f"raw/A2/oltp_ro/{CELLS[0]}/big.log").stat().st_size == 64 << 20


def test_a_host_moved_aside_by_a_killed_import_is_put_back(tmp_path, bundle):
    """Killed between its two renames, an import leaves the old host tree as .old-<pid>-<host>:
    the next import puts it back (the replacement never arrived)."""
    dst = tmp_path / "dst"
    dst.mkdir()
    harness("import", "--root", str(dst), str(bundle))
    gone = subprocess.Popen(["true"])
    gone.wait()
    hosts = dst / "data/hosts"
    os.rename(hosts / HOST, hosts / f".old-{gone.pid}-{HOST}")
    before = {p.name for p in (hosts / f".old-{gone.pid}-{HOST}/raw/A2/oltp_ro").iterdir()}
    res = harness("import", "--root", str(dst), str(bundle))
    assert "nothing changed" in res.stdout, res.stdout + res.stderr
    assert [d.name for d in hosts.iterdir()] == [HOST]
    assert {p.name for p in (hosts / HOST / "raw/A2/oltp_ro").iterdir()} == before


def test_a_replot_reads_one_raw_root(tmp_path, bundle):
    dst = tmp_path / "dst"
    (dst / "data/raw").mkdir(parents=True)
    assert bundleimport.raw_root("auto", True, dst) == "data/raw"  # no host imported
    harness("import", "--root", str(dst), str(bundle))
    assert bundleimport.raw_root("auto", True, dst) == f"data/hosts/{HOST}/raw"
    assert bundleimport.raw_root(HOST, True, dst) == f"data/hosts/{HOST}/raw"
    assert bundleimport.raw_root("local", True, dst) == "data/raw"
    with pytest.raises(Exception, match="only by ./artifact replot"):
        bundleimport.raw_root(HOST, False, dst)
    with pytest.raises(Exception, match="no imported host 'nope'"):
        bundleimport.raw_root("nope", True, dst)
    shutil.copytree(FIXTURE / CELLS[0], dst / "data/raw/A2/oltp_ro" / CELLS[0])
    assert bundleimport.raw_root("auto", True, dst) == "data/raw"  # local cells first
    raw = dst / f"data/hosts/{HOST}/raw"
    bundleimport.check_profile(str(raw), "smoke")
    with pytest.raises(Exception, match="profile smoke, not default"):
        bundleimport.check_profile(str(raw), "default")


def test_the_run_information_says_the_cells_were_imported_and_what_differs(tmp_path, bundle):
    """The title page's line: this host measured none of them; the bundle's commit (here
    unknown: its scratch clone is no git repository) and a build whose lock entry differs."""
    from harness.report import runinfo
    dst = tmp_path / "dst"
    dst.mkdir()
    harness("import", "--root", str(dst), str(bundle))
    raw = str(dst / f"data/hosts/{HOST}/raw")
    entry = yaml.safe_load((ROOT / "config/builds.lock.yaml").read_text())["builds"]["mysql-5.6.24"]
    same = runinfo.imported(raw, "unknown", {"mysql-5.6.24": entry})
    assert len(same) == 1 and f"host {HOST}" in same[0] and "measured none of them" in same[0]
    assert "differs" not in same[0] and "differ from" not in same[0]
    other = runinfo.imported(raw, "0123456789abcdef", {"mysql-5.6.24": {**entry, "version": "9.9.9"}})[0]
    assert "commit unknown differs from this clone's 0123456789ab" in other
    assert "builds mysql-5.6.24 differ from this clone's lock" in other
    assert runinfo.imported(str(dst / "data/raw"), "x", {}) == []
    tex = runinfo.runinfo_tex({**runinfo.run_facts({"profile": "smoke"}, []), "imported": [other]})
    assert r"\RunImported" in tex.split(r"\newcommand{\RunInfo}")[1]


@pytest.mark.parametrize("meta", ["not-an-object", "no-profile", "host-not-a-name"])
def test_a_bundle_json_without_its_names_is_refused_before_anything_is_written(tmp_path, bundle, meta):
    """A bundle.json that is not an object, lacks the profile or carries a host id that is no
    string is one line, nothing written (not a traceback, nor a host imported then failing)."""
    def bad_meta(d):
        m = json.loads(d)
        if meta == "not-an-object":
            return json.dumps([m]).encode()
        if meta == "no-profile":
            m.pop("profile")
        else:
            m["host_id"] = 7
        return json.dumps(m).encode()
    bad = repack(bundle, tmp_path / "bad.tar.gz", _edit_file("/bundle.json", bad_meta))
    want = "is not a JSON object" if meta == "not-an-object" else \
        ("profile is missing" if meta == "no-profile" else "host_id is missing or not a name")
    refused(tmp_path, bad, want)


def test_a_member_whose_name_clashes_with_another_is_one_line_and_a_dot_member_is_the_folder(tmp_path, bundle):
    """A file member `top/x` then `top/x/y` (tar allows it; the disk does not) is refused in one
    line naming the member; a leading "." directory member (tar -C dir .) is read as the
    folder that holds the bag."""
    top = members(bundle)[0][0].name.split("/")[0]
    a, b = tarfile.TarInfo(f"{top}/data/clash"), tarfile.TarInfo(f"{top}/data/clash/inner")
    bad = repack(bundle, tmp_path / "bad.tar.gz", lambda ms: ms + [(a, b"a"), (b, b"b")])
    assert f"{top}/data/clash/inner" in refused(tmp_path, bad, "cannot be written")
    dot = tarfile.TarInfo(".")
    dot.type = tarfile.DIRTYPE
    ok = repack(bundle, tmp_path / "dot.tar.gz", lambda ms: [(dot, None)] + ms)
    dst = tmp_path / "dotdst"
    dst.mkdir()
    assert "imported" in harness("import", "--root", str(dst), str(ok)).stdout


def test_this_hosts_own_bundle_is_not_a_second_host_beside_its_local_cells(tmp_path, bundle, monkeypatch):
    """Cells in data/raw and a bundle imported under this host's own id (the clone re-importing
    its own export): a several-host replot reads the host once, data/raw, and says why."""
    dst = clone(tmp_path / "dst")
    harness("import", "--root", str(dst), str(bundle))   # exported as HOST, this host's id here
    monkeypatch.setenv("MYSQLBENCH_HOST_ID", HOST)
    assert bundleimport.host_roots("auto", True, "smoke", dst) == [(HOST, "data/raw")]
    assert bundleimport.host_roots("all", True, "smoke", dst) == [(HOST, "data/raw")]


def test_a_replot_only_bundle_carries_what_tidy_reads_and_tidies_the_same(tmp_path):
    """`export --replot-only` (the reference run's form, results/): each cell keeps only
    tidywrite.CELL_FILES_READ, so a server log is left out, and the imported cells give the same
    tidy tables as the whole cells."""
    from harness.analysis import tidywrite
    src = clone(tmp_path / "src", cells=sorted(p.name for p in FIXTURE.iterdir())[:8])
    for c in (src / "data/raw/A2/oltp_ro").iterdir():
        (c / "mysqld.err").write_text("a server log the replot does not read\n")
    harness("export", "--root", str(src), "--out", str(tmp_path / "full.tar.gz"))
    harness("export", "--root", str(src), "--replot-only", "--out", str(tmp_path / "slim.tar.gz"))
    full, slim = members(tmp_path / "full.tar.gz"), members(tmp_path / "slim.tar.gz")
    assert any(m.name.endswith("/mysqld.err") for m, _ in full)
    cell_files = {m.name.rsplit("/", 1)[1] for m, _ in slim if "/data/raw/" in m.name and m.isreg()}
    assert cell_files and cell_files <= set(tidywrite.CELL_FILES_READ), cell_files
    meta = {json.loads(d)["contents"] for m, d in slim if m.name.endswith("/bundle.json")}
    assert meta == {"each cell's files a replot reads"}
    outs = {}
    for name in ("full", "slim"):
        dst = tmp_path / f"dst-{name}"
        dst.mkdir()
        harness("import", "--root", str(dst), str(tmp_path / f"{name}.tar.gz"))
        cells = sorted(str(p) for p in (dst / f"data/hosts/{HOST}/raw/A2/oltp_ro").iterdir())
        out = tmp_path / f"tidy-{name}"
        out.mkdir()
        harness("tidy", "--cells", *cells, "--runs", str(out / "runs.csv"), "--summary", str(out / "summary.csv"),
                "--provenance", str(out / "prov.json"), "--cv-threshold", "0.05", "--profile", "smoke",
                "--extra-dir", str(out))
        outs[name] = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.suffix == ".csv"}
    assert len(outs["full"]) > 2 and outs["full"] == outs["slim"]


def test_the_node_types_of_a_mixed_sweep_export_as_hosts_of_their_own(tmp_path):
    """A SLURM sweep over two node types: tidying the mixed cells is refused (hosttype), and
    `export --cpu-model` writes each type's cells as a bundle of its own host, whose host facts
    are its cells' nodes; imported, each host tidies on its own. (The second CPU model is set in
    the copied manifests' host record, the node's description: no measured value is edited.)"""
    from harness.analysis import hosttype, tidywrite
    names = sorted(p.name for p in FIXTURE.iterdir())[:8]
    src = clone(tmp_path / "src", cells=names)
    cells = sorted((src / "data/raw/A2/oltp_ro").iterdir())
    model = json.loads((cells[0] / "manifest.json").read_text())["host"]["cpu_model"]
    for c in cells[1::2]:
        m = json.loads((c / "manifest.json").read_text())
        m["host"] = {**m["host"], "cpu_model": "Other CPU 9000", "n_cpus": 64, "hostname": "node7"}
        (c / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(hosttype.MixedHostsError, match="--cpu-model"):
        tidywrite.tidy(cells, tmp_path / "r.csv", tmp_path / "s.csv", tmp_path / "p.json", 0.05, "smoke")
    res = harness("export", "--root", str(src), "--cpu-model", "Nope", "--out", str(tmp_path / "x.tar.gz"),
                  check=False)
    assert res.returncode == 1 and "--cpu-model 'Nope'" in res.stderr and "Other CPU 9000" in res.stderr
    assert not (tmp_path / "x.tar.gz").exists()
    dst = tmp_path / "dst"
    dst.mkdir()
    for host, cpu in (("type-a", model), ("type-b", "Other CPU 9000")):
        out = tmp_path / f"{host}.tar.gz"
        harness("export", "--root", str(src), "--cpu-model", cpu, "--out", str(out), host=host)
        info = {m.name.split("/", 1)[1]: d for m, d in members(out) if m.isreg()}
        facts = json.loads(info["data/host/host.json"])
        assert facts["cpu_model"] == cpu and "data/host/lstopo.xml" not in info
        assert json.loads(info["bundle.json"])["cells"] == 4
        harness("import", "--root", str(dst), str(out), host=host)
        got = sorted((dst / f"data/hosts/{host}/raw/A2/oltp_ro").iterdir())
        assert len(got) == 4
        tidywrite.tidy(got, tmp_path / host / "r.csv", tmp_path / host / "s.csv", tmp_path / host / "p.json", 0.05,
                  "smoke")
    assert (facts["n_cpus"], facts["cgroup"]) == ([64], None)


def test_the_bundle_carries_an_ro_crate_of_the_run_in_its_checksummed_payload(tmp_path, bundle):
    """data/ro-crate-metadata.json (RO-Crate 1.1, the `rocrate` library reads it back): the run
    as the root Dataset with its creators (CITATION.cff's, or --creator's), licence, dates and
    parts, the measuring host, and the Process Run Crate's CreateAction; the payload manifest
    lists it, so a changed crate is refused like any changed member."""
    from rocrate.rocrate import ROCrate
    top = members(bundle)[0][0].name.split("/")[0]
    files = {m.name: d for m, d in members(bundle)}
    assert f"{top}/data/ro-crate-metadata.json" in files
    manifest = files[f"{top}/manifest-sha256.txt"].decode()
    assert " data/ro-crate-metadata.json\n" in manifest
    work = tmp_path / "unpacked"
    with tarfile.open(bundle) as tf:
        tf.extractall(work)
    crate = ROCrate(work / top / "data")
    doc = json.loads((work / top / "data/ro-crate-metadata.json").read_text())
    assert doc["@context"] == "https://w3id.org/ro/crate/1.1/context"
    root = crate.root_dataset
    meta = json.loads(files[f"{top}/bundle.json"])
    assert root["name"] == meta["title"] and root["datePublished"] == meta["measured_to"][:10]
    assert root["temporalCoverage"] == f"{meta['measured_from']}/{meta['measured_to']}"
    assert root["license"].id == "https://spdx.org/licenses/CC-BY-4.0"
    assert [(c.type, c["name"]) for c in root["creator"]] == [("Organization", "The mysql-engines artifact authors")]
    parts = {p.id for p in root["hasPart"]}
    assert {"raw/", "config.resolved.yaml", "builds.lock.yaml", "host/", "host/host.json", "repository/"} <= parts
    assert f"host {HOST}" in crate.get("host/")["description"]
    assert [p.id for p in root["conformsTo"]] == ["https://w3id.org/ro/wfrun/process/0.5"]
    run = crate.get("#run")
    assert run.type == "CreateAction" and root["mentions"][0].id == "#run"
    assert (run["startTime"], run["endTime"]) == (meta["measured_from"], meta["measured_to"])
    assert run["instrument"].type == "SoftwareApplication" and [r.id for r in run["result"]] == ["raw/"]
    assert {o.id for o in run["object"]} == {"config.resolved.yaml", "builds.lock.yaml"}
    # --creator overrides CITATION.cff: persons
    harness("export", "--root", str(tmp_path / "src"), "--out", str(tmp_path / "who.tar.gz"),
            "--creator", "Ada Lovelace", "--creator", "Charles Babbage", "--license", "CC0-1.0")
    doc = json.loads({m.name: d for m, d in members(tmp_path / "who.tar.gz")}[f"{top}/data/ro-crate-metadata.json"])
    graph = {e["@id"]: e for e in doc["@graph"]}
    assert [graph[c["@id"]]["name"] for c in graph["./"]["creator"]] == ["Ada Lovelace", "Charles Babbage"]
    assert {graph[c["@id"]]["@type"] for c in graph["./"]["creator"]} == {"Person"}
    assert graph["./"]["license"] == {"@id": "https://spdx.org/licenses/CC0-1.0"}
    bad = repack(bundle, tmp_path / "bad.tar.gz",
                 _edit_file("/ro-crate-metadata.json", lambda d: d.replace(b"Dataset", b"Thing", 1)))
    assert "ro-crate-metadata.json was changed" in refused(tmp_path, bad, "was changed")


def test_a_member_larger_than_the_bound_is_refused_before_anything_is_unpacked(tmp_path, bundle):
    """A member over $MYSQLBENCH_IMPORT_MAX_MEMBER bytes (here a bound of 2 KiB, below the
    fixture cells' larger logs) is one line naming it; a bad bound is one line naming the
    variable; the bound's default imports the same bundle."""
    sizes = {m.name: m.size for m, _ in members(bundle)}
    big = next(n for n in sizes if sizes[n] > 2048)      # the first, in member order
    msg = refused(tmp_path, bundle, "more than the 2048 a bundle member may be", env={bundleimport.MAX_MEMBER_VAR: "2048"})
    assert f"member {big} is {sizes[big]} bytes" in msg
    refused(tmp_path, bundle, f"${bundleimport.MAX_MEMBER_VAR}='lots': a number of bytes",
            env={bundleimport.MAX_MEMBER_VAR: "lots"})
    assert not list((tmp_path / "dst/data/hosts").iterdir())   # no unpacked folder either


def test_a_bundle_larger_than_the_free_disk_is_refused_before_anything_is_unpacked(tmp_path, bundle):
    """The unpacked total against the real free space of data/hosts's file system, less a
    reserve: a reserve 1 GiB above the free space (other processes write on this disk, so no
    tighter margin is steady) leaves room for no member, and the first one is named."""
    dst = tmp_path / "dst"
    (dst / "data/hosts").mkdir(parents=True)
    reserve = shutil.disk_usage(dst / "data/hosts").free + (1 << 30)
    msg = refused(tmp_path, bundle, "free under data/hosts", env={bundleimport.RESERVE_VAR: str(reserve)})
    first = members(bundle)[0][0].name
    assert "free some space and import again" in msg and f"member {first} brings the bundle to" in msg
    assert not list((dst / "data/hosts").iterdir())


def test_a_second_import_into_one_clone_waits_for_the_first(tmp_path, bundle):
    """The import lock (data/.import.lock), held here as a running import holds it: a real
    import process says once that it waits, writes nothing while it waits, and imports when
    the lock is released."""
    import fcntl
    dst = tmp_path / "dst"
    (dst / "data").mkdir(parents=True)
    fd = os.open(dst / "data/.import.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "MYSQLBENCH_HOST_ID": HOST}
    p = subprocess.Popen([sys.executable, "-m", "harness", "import", "--root", str(dst), str(bundle)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert "waiting for the import lock" in line and "data/.import.lock" in line, line
        time.sleep(1)
        assert p.poll() is None and not (dst / "data/hosts" / HOST).exists()
    finally:
        os.close(fd)   # the first import ends
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and f"as host {HOST}" in out, err
    assert (dst / f"data/hosts/{HOST}/raw/A2/oltp_ro/{CELLS[0]}/manifest.json").is_file()


def _other_machine(tmp_path: Path, name: str, cells, hostname="elsewhere", cpu=None) -> Path:
    """A bundle exported under HOST from cells whose manifests record another machine (a
    second machine given the same --host-id; only the manifests' host facts differ, no
    measured value)."""
    other = clone(tmp_path / name, cells)
    for m in (other / "data/raw/A2/oltp_ro").glob("*/manifest.json"):
        man = json.loads(m.read_text())
        man["host"] = {**man["host"], "hostname": hostname, **({"cpu_model": cpu} if cpu else {})}
        m.write_text(json.dumps(man, indent=1))
    harness("export", "--root", str(other), "--out", str(tmp_path / f"{name}.tar.gz"))
    return tmp_path / f"{name}.tar.gz"


def test_one_host_id_from_two_machines_is_refused_unless_imported_under_another_id(tmp_path, bundle):
    """Two bundles carrying one host id, whose cells were measured on machines with other host
    names (or CPU models): the second is refused in one line naming the id, what differs and
    the fix, nothing written; --as-host imports it as another host, and the title page's
    line says under which id; a second bundle of the same machine still merges."""
    from harness.report import runinfo
    dst = tmp_path / "dst"
    dst.mkdir()
    harness("import", "--root", str(dst), str(bundle))
    rest = sorted(p.name for p in FIXTURE.iterdir())[4:6]
    elsewhere = _other_machine(tmp_path, "b", rest)
    msg = refused(tmp_path, elsewhere, "already names another machine", dst)
    assert f"host id {HOST}" in msg and "host name vm there, elsewhere in this bundle" in msg
    assert "--host-id" in msg and "--as-host" in msg
    cpu = _other_machine(tmp_path, "c", rest, hostname="vm", cpu="Other CPU 9000")
    assert "CPU model" in refused(tmp_path, cpu, "already names another machine", dst)
    res = harness("import", "--root", str(dst), "--as-host", "lab-b", str(elsewhere))
    assert f"as host lab-b (exported as {HOST})" in res.stdout
    assert len(list((dst / "data/hosts/lab-b/raw/A2/oltp_ro").iterdir())) == 2
    line = runinfo.imported(str(dst / "data/hosts/lab-b/raw"), "x", {})[0]
    assert f"bundle of host {HOST}, imported as host lab-b" in line
    res = harness("import", "--root", str(dst), "--as-host", "all", str(elsewhere), check=False)
    assert res.returncode == 1 and res.stderr.startswith("error: --as-host: host id 'all': reserved")
    same = _other_machine(tmp_path, "d", rest, hostname="vm")   # the first bundle's machine
    assert "imported 2 new cell(s)" in harness("import", "--root", str(dst), str(same)).stdout
