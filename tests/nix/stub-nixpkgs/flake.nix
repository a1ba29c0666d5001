# A small, offline stand-in for nixpkgs, used ONLY by tests/unit/test_flake.py:
#
#   nix flake check --no-build --override-input nixpkgs path:tests/nix/stub-nixpkgs
#
# It models the part of the nixpkgs API the artifact's flake.nix uses (see
# default.nix): `import nixpkgs { system; config; }`, callPackage,
# stdenv.mkDerivation (incl. `env`, passthru, meta, the insecure-package
# check), fetchurl, mkShell, dockerTools, python3.withPackages, rWrapper,
# texlive*.withPackages, and a table of leaf packages. Every package is a real
# `derivation` with builder /bin/sh, so `--no-build` instantiates real .drv
# files, but nothing here can be built: the builder just fails.
#
# The attribute table follows nixos-25.05: attributes that 25.05 does not
# have (mysql56, mysql57, percona-server56, ...) are absent here too, so a
# flake that names them fails to evaluate against the stub as it would
# against the real pin. Versions are placeholders in the right release
# series unless the exact version matters (openssl_1_1, sysbench).
{
  description = "Offline stub of the nixpkgs API (tests only, builds nothing)";

  outputs =
    { self }:
    {
      lib = import ./lib.nix;
      legacyPackages.x86_64-linux = import ./default.nix { system = "x86_64-linux"; };
    };
}
