"""The top-level flake.nix, evaluated offline against a stub nixpkgs.

No network, no binary cache and no nixpkgs source tree are available here, so
the real pin (github:NixOS/nixpkgs/<rev>) is replaced with
`--override-input nixpkgs path:tests/nix/stub-nixpkgs`, a small flake that
models the nixpkgs API the flake uses and returns real (unbuildable)
derivations. `nix flake check --no-build` then evaluates every output and
computes every .drv path; nothing is built. What this catches: syntax errors,
misspelt or removed nixpkgs attributes, wrong callPackage/builder arguments,
a missing permittedInsecurePackages entry, wrong output schema. What it does
not: that nixos-25.05 really has these attributes with these versions, or
that MySQL 5.6.51 compiles (docs/nix.md). The lock's client-fetched builds
(mysql-5_6_24, ...) are evaluated here with the rest and built for real in
tests/e2e/test_nix_builds.py.

Isolation: every nix call gets a fresh HOME/XDG dirs, its own nix.conf
(NIX_CONF_DIR) and a throw-away chroot store (`--store <tmp>/store`, logical
paths stay /nix/store/...), all under one temporary directory that is removed
at the end, so the host's /nix and ~/.cache/nix are never touched. The flake
is evaluated from a copy of flake.nix + nix/ (a `path:` flake), so Nix copies
neither the whole repository (.venv, resources/) nor needs the files to be
committed yet.

Needs the Debian package nix-bin (Nix >= 2.8); skipped when `nix` is absent.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "tests" / "nix" / "stub-nixpkgs"
SYSTEM = "x86_64-linux"

# sha256 of MySQL's own mysql-5.6.51.tar.gz source archive, the one flake.nix pins
# for the from-source 5.6.51 build (nix/mysql56.nix).
MYSQL56_SHA256 = "262ccaf2930fca1f33787505dd125a7a04844f40d3421289a51974b5935d9abc"
# The lock's client-fetched builds (nix/offline-builds.nix): built for real in
# tests/e2e/test_nix_builds.py; here only evaluated with the rest.
LOCKED = ["mysql-5_6_24", "mysql-5_5_9", "mariadb-10_2_11", "mariadb-10_11"]

NIX_CONF = """\
experimental-features = nix-command flakes
# no global flake registry (it would be downloaded)
flake-registry = /dev/null
substituters =
# nothing is built; let root and non-root users open the private store alike
build-users-group =
sandbox = false
"""

pytestmark = pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not on PATH (apt-get install nix-bin)")


def _rmtree(path: Path) -> None:
    """Store paths are read-only: make them writable, then remove."""

    def onerror(func, p, _exc):
        os.chmod(os.path.dirname(p), stat.S_IRWXU)
        if os.path.isdir(p) and not os.path.islink(p):
            os.chmod(p, stat.S_IRWXU)
        func(p)

    shutil.rmtree(path, onerror=onerror)


class Nix:
    """Runs nix with a private store, config and home under `base`."""

    def __init__(self, base: Path):
        self.base = base
        self.store = base / "store"
        home = base / "home"
        conf = base / "conf"
        for d in (home, conf):
            d.mkdir(parents=True)
        (conf / "nix.conf").write_text(NIX_CONF)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NIX_")}
        env.update(
            HOME=str(home),
            XDG_CACHE_HOME=str(home / ".cache"),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_DATA_HOME=str(home / ".local/share"),
            XDG_STATE_HOME=str(home / ".local/state"),
            NIX_CONF_DIR=str(conf),
            NIX_USER_CONF_FILES=str(conf / "nix.conf"),
            NO_COLOR="1",
        )
        self.env = env

    def flake_copy(self, name: str) -> Path:
        """A copy of the repository's flake (flake.nix + nix/) to evaluate or break."""
        d = self.base / "flakes" / name
        d.mkdir(parents=True)
        shutil.copy2(ROOT / "flake.nix", d / "flake.nix")
        shutil.copytree(ROOT / "nix", d / "nix")
        return d

    def run(self, *args: str, flake: Path, attr: str = "", timeout: int = 120) -> subprocess.CompletedProcess:
        cmd = [
            "nix", *args,
            "--store", str(self.store),
            "--no-write-lock-file",
            "--override-input", "nixpkgs", f"path:{STUB}",
            f"path:{flake}" + (f"#{attr}" if attr else ""),
        ]
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def check(self, flake: Path) -> subprocess.CompletedProcess:
        return self.run("flake", "check", "--no-build", flake=flake)

    def eval_json(self, flake: Path, attr: str, apply: str | None = None):
        extra = ("--apply", apply) if apply else ()
        r = self.run("eval", "--json", *extra, flake=flake, attr=attr)
        assert r.returncode == 0, f"nix eval {attr} failed:\n{r.stderr}"
        return json.loads(r.stdout)

    def plain(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["nix", *args], env=self.env, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def nix():
    base = Path(tempfile.mkdtemp(prefix="test-flake-"))
    try:
        yield Nix(base)
    finally:
        _rmtree(base)


@pytest.fixture(scope="module")
def flake(nix):
    return nix.flake_copy("good")


# --------------------------------------------------------------------------
# (a) the flake checks offline
# --------------------------------------------------------------------------

def test_flake_check_passes_offline(nix, flake):
    r = nix.check(flake)
    assert r.returncode == 0, r.stderr
    assert "unknown flake output" not in r.stderr, r.stderr
    # the private store was used (the host's /nix/store is never opened)
    assert (nix.store / "nix" / "store").is_dir()


def test_nixpkgs_is_pinned_to_a_full_revision(nix):
    """The input is an exact nixpkgs revision, not a branch (flake.lock locks
    the same revision: tests/e2e/test_nix_builds.py)."""
    r = nix.plain("eval", "--store", str(nix.store), "--impure", "--json", "--expr",
                  f"(import {ROOT / 'flake.nix'}).inputs.nixpkgs.url")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"github:NixOS/nixpkgs/[0-9a-f]{40}", json.loads(r.stdout))


def test_outputs_are_exactly_the_documented_ones(nix, flake):
    pkgs = nix.eval_json(flake, f"packages.{SYSTEM}", apply="builtins.attrNames")
    assert sorted(pkgs) == sorted([
        "default", "mysql56", "mysql80", "mysql84", "mariadb", "sysbench",
        "images-mysql56", "images-mysql80", "images-mysql84", "images-mariadb",
        *LOCKED,
    ])
    shells = nix.eval_json(flake, f"devShells.{SYSTEM}", apply="builtins.attrNames")
    assert shells == ["default"]


# --------------------------------------------------------------------------
# (b) names, versions, the source pin
# --------------------------------------------------------------------------

def test_package_names_and_versions(nix, flake):
    names = nix.eval_json(flake, f"packages.{SYSTEM}", apply="ps: builtins.mapAttrs (n: p: p.name) ps")
    assert names["mysql56"] == "mysql-5.6.51"
    assert names["default"] == "mysql-5.6.51"
    assert names["mysql80"].startswith("mysql-8.0")
    assert names["mysql84"].startswith("mysql-8.4")
    assert re.match(r"mariadb(-server)?-10\.11", names["mariadb"]), names["mariadb"]
    assert names["sysbench"].startswith("sysbench-1.0")


def test_mysql56_derivation_wiring(nix, flake):
    """The toolchain the research notes call for: GCC 10, OpenSSL 1.1,
    system SSL, no embedded server/unit tests, the permissive flags."""
    d = nix.eval_json(flake, f"packages.{SYSTEM}.mysql56", apply="""p: {
        version = p.version;
        cc = p.stdenv.cc.version;
        inputs = map (x: x.name) (p.buildInputs ++ p.nativeBuildInputs);
        cmakeFlags = p.cmakeFlags;
        cflags = p.NIX_CFLAGS_COMPILE;
        ldflags = p.NIX_LDFLAGS;
        drvPath = p.drvPath;
    }""")
    assert d["version"] == "5.6.51"
    assert d["cc"].startswith("10."), d["cc"]
    assert "openssl-1.1.1w" in d["inputs"]
    for dep in ("cmake", "bison", "perl", "ncurses", "libaio", "zlib"):
        assert any(n.startswith(dep + "-") for n in d["inputs"]), (dep, d["inputs"])
    for flag in ("-DWITH_SSL=system", "-DWITH_EMBEDDED_SERVER=OFF", "-DWITH_UNIT_TESTS=OFF", "-DINSTALL_LAYOUT=STANDALONE"):
        assert flag in d["cmakeFlags"]
    assert "-Wno-error=address-of-packed-member" in d["cflags"].split()
    assert "-fpermissive" in d["cflags"].split()
    assert d["ldflags"] == "-lgcc_s"
    assert re.fullmatch(r"/nix/store/[0-9a-z]{32}-mysql-5\.6\.51\.drv", d["drvPath"])


def test_mysql56_source_hash_is_the_pinned_sha256(nix, flake):
    src = nix.eval_json(flake, f"packages.{SYSTEM}.mysql56.src", apply="""s: {
        inherit (s) name urls outputHash outputHashAlgo outputHashMode;
    }""")
    assert src["name"] == "mysql-5.6.51.tar.gz"
    assert src["outputHashMode"] == "flat"
    assert any(u.startswith("https://cdn.mysql.com/") or u.startswith("https://downloads.mysql.com/") for u in src["urls"])
    # whatever encoding flake.nix uses, it must be this sha256
    r = nix.plain("hash", "to-base16", "--type", src["outputHashAlgo"], src["outputHash"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == MYSQL56_SHA256


def test_images_one_per_server(nix, flake):
    imgs = nix.eval_json(flake, f"packages.{SYSTEM}", apply="""ps: builtins.mapAttrs (n: p: {
        inherit (p) imageName imageTag;
        contents = map (c: c.name) p.contents;
        conf = builtins.fromJSON p.conf;  # stub-only: the image's JSON config
    }) (builtins.removeAttrs ps [ "default" "mysql56" "mysql80" "mysql84" "mariadb" "sysbench" %s ])""" % " ".join(
        f'"{a}"' for a in LOCKED))
    names = nix.eval_json(flake, f"packages.{SYSTEM}", apply="ps: builtins.mapAttrs (n: p: p.name) ps")
    for server in ("mysql56", "mysql80", "mysql84", "mariadb"):
        img = imgs[f"images-{server}"]
        assert img["imageName"] == f"mysqlbench/{server}"
        assert names[server] in img["contents"]
        assert any(c.startswith("coreutils-") for c in img["contents"])
        assert any(c.startswith("bash") for c in img["contents"])
        assert "Cmd" not in img["conf"]["config"]
    assert imgs["images-mysql56"]["imageTag"] == "5.6.51"


def test_dev_shell_tools(nix, flake):
    inputs = nix.eval_json(flake, f"devShells.{SYSTEM}.default",
                           apply="s: map (x: x.name) (s.nativeBuildInputs ++ s.buildInputs)")
    joined = " ".join(inputs)
    for tool in ("python3", "snakemake", "sysbench", "R-", "texlive", "nodejs"):
        assert tool in joined, (tool, inputs)


# --------------------------------------------------------------------------
# (c) a broken attribute fails the same check
# --------------------------------------------------------------------------

BREAKAGES = {
    # nixpkgs 25.05 has no mysql56 attribute
    "nonexistent-attribute": (
        "flake.nix",
        "mysql56 = pkgs.callPackage ./nix/mysql56.nix {",
        "mysql56 = pkgs.mysql56.override {",
        r"attribute 'mysql56' missing.*flake\.nix:\d+",
    ),
    "syntax-error": (
        "flake.nix",
        "mysql84 = pkgs.mysql84;",
        "mysql84 = pkgs.mysql84",
        r"syntax error.*flake\.nix:\d+",
    ),
    "insecure-openssl-not-permitted": (
        "flake.nix",
        'config.permittedInsecurePackages = [ "openssl-1.1.1w" ];',
        "config.permittedInsecurePackages = [ ];",
        r"openssl-1\.1\.1w.*insecure",
    ),
    "callpackage-unknown-argument": (
        "nix/mysql56.nix",
        "  libaio,\n",
        "  libaio,\n  libmysqlclient_56,\n",
        r"mysql56\.nix.*without required argument 'libmysqlclient_56'",
    ),
    "image-misspelt-argument": (
        "flake.nix",
        "contents = [",
        "content = [",
        r"unexpected argument 'content'",
    ),
}


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_broken_flake_fails_check(nix, case):
    path, old, new, error = BREAKAGES[case]
    d = nix.flake_copy(case)
    text = (d / path).read_text()
    assert text.count(old) == 1, f"{path} no longer contains {old!r}: update this test"
    (d / path).write_text(text.replace(old, new))
    r = nix.check(d)
    assert r.returncode != 0, f"{case}: nix flake check passed on a broken flake"
    assert re.search(error, r.stderr, re.S), r.stderr
