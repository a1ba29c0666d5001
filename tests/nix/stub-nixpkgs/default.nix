# `import nixpkgs { system; config; }` of the stub (see flake.nix for what
# this is and is not). Everything returns real, unbuildable derivations.
{
  system ? builtins.currentSystem,
  localSystem ? { inherit system; },
  config ? { },
  overlays ? [ ],
  ...
}:

let
  lib = import ./lib.nix;
  hostSystem = localSystem.system or localSystem;
  cfg = if builtins.isFunction config then config { } else config;
  permittedInsecure = cfg.permittedInsecurePackages or [ ];
  # Like nixpkgs, a null argument is not passed to the derivation.
  filterNulls = set: removeAttrs set (builtins.filter (n: set.${n} == null) (builtins.attrNames set));

  # ---------------------------------------------------------------------------
  # Core: one unbuildable derivation. Like nixpkgs, every argument except
  # passthru/meta becomes a derivation attribute (so lists of packages become
  # input paths and a set that is not a derivation is an error), and the
  # result exposes those attributes, passthru, meta, drvPath and outPath.
  # meta.knownVulnerabilities and meta.platforms are checked as in
  # pkgs/stdenv/generic/check-meta.nix: the error comes when drvPath/outPath
  # is needed, i.e. when anything depending on the package is instantiated.
  # ---------------------------------------------------------------------------
  mkDrv =
    {
      name,
      passthru ? { },
      meta ? { },
      ...
    }@args:
    let
      vulns = meta.knownVulnerabilities or [ ];
      platforms = meta.platforms or [ hostSystem ];
      problem =
        if vulns != [ ] && !(builtins.elem name permittedInsecure) then
          "Package ‘${name}’ is marked as insecure, refusing to evaluate.\n"
          + "Known issues:\n - ${builtins.concatStringsSep "\n - " vulns}\n"
          + "To allow it, add to the nixpkgs config: permittedInsecurePackages = [ \"${name}\" ];"
        else if !(builtins.elem hostSystem platforms) then
          "Package ‘${name}’ is not available on the requested hostPlatform ${hostSystem}"
        else
          null;
      guard = x: if problem == null then x else throw problem;
      drvAttrs =
        filterNulls (removeAttrs args [ "passthru" "meta" ])
        // {
          system = hostSystem;
          builder = "/bin/sh";
          args = [
            "-c"
            "echo 'stub nixpkgs (tests/nix/stub-nixpkgs): evaluation only, nothing can be built' >&2; exit 1"
          ];
        };
      drv = derivation drvAttrs;
      self =
        drvAttrs
        // passthru
        // {
          type = "derivation";
          inherit meta passthru drvAttrs;
          drvPath = guard drv.drvPath;
          outPath = guard drv.outPath;
          outputName = "out";
          outputs = [ "out" ];
          out = self;
          all = [ self ];
          overrideAttrs = f: mkDrv (args // (if builtins.isFunction f then f args else f));
        };
    in
    self;

  # stdenv.mkDerivation: name from pname + version, `env` merged into the
  # environment (with nixpkgs' type and overlap checks), finalAttrs form.
  mkStdenv =
    ccVersion:
    let
      cc = mkDrv {
        name = "gcc-wrapper-${ccVersion}";
        passthru = {
          version = ccVersion;
          isGNU = true;
        };
      };
      stdenv = mkDrv {
        name = "stdenv-linux";
        inherit cc;
        passthru = {
          inherit cc mkDerivation;
          isLinux = true;
          isDarwin = false;
          hostPlatform.system = hostSystem;
          buildPlatform.system = hostSystem;
        };
      };
      mkDerivation =
        argsOrFun:
        let
          args = if builtins.isFunction argsOrFun then lib.fix argsOrFun else argsOrFun;
          env = args.env or { };
          badEnv = builtins.filter (
            n:
            let v = env.${n}; in
            !(builtins.isString v || builtins.isBool v || builtins.isInt v || (v.type or null) == "derivation")
          ) (builtins.attrNames env);
          overlap = builtins.attrNames (builtins.intersectAttrs env args);
          name =
            args.name or (
              if args ? pname && args ? version then
                "${args.pname}-${args.version}"
              else
                throw "stdenv.mkDerivation: neither `name` nor `pname` + `version` given"
            );
        in
        if badEnv != [ ] then
          throw "The ‘env’ attribute set can only contain derivation, string, boolean or integer attributes. The ‘${builtins.head badEnv}’ attribute is of type ${builtins.typeOf env.${builtins.head badEnv}}."
        else if overlap != [ ] then
          throw "The ‘env’ attribute set cannot contain any attributes passed to derivation. The following attributes are overlapping: ${builtins.concatStringsSep ", " overlap}"
        else
          mkDrv (removeAttrs args [ "env" ] // env // { inherit name stdenv; });
    in
    stdenv;

  stdenv = mkStdenv "14.2.1";

  # A leaf package: a name in the nixpkgs table below.
  leaf =
    pname: version: extra:
    stdenv.mkDerivation (
      {
        inherit pname version;
        meta.platforms = lib.platforms.linux;
      }
      // extra
    );

  # A named set of leaves (python3.pkgs, rPackages, texlive packages).
  leafSet = prefix: names: lib.genAttrs names (n: leaf "${prefix}${n}" "stub" { });

  buildEnv =
    {
      name,
      paths,
      ...
    }@args:
    mkDrv (removeAttrs args [ "passthru" "meta" ] // { passthru = args.passthru or { }; });

  # ---------------------------------------------------------------------------
  # Builders and fetchers (argument lists as in nixpkgs).
  # ---------------------------------------------------------------------------
  fetchurl =
    {
      url ? null,
      urls ? [ ],
      name ? null,
      hash ? null,
      sha256 ? null,
      sha512 ? null,
      ...
    }:
    let
      allUrls = (if url == null then [ ] else [ url ]) ++ urls;
      given = builtins.filter (h: h.value != null) [
        { algo = ""; value = hash; }
        { algo = "sha256"; value = sha256; }
        { algo = "sha512"; value = sha512; }
      ];
      h = builtins.head given;
    in
    if allUrls == [ ] then
      throw "fetchurl requires either `url` or `urls` to be set"
    else if given == [ ] then
      throw "fetchurl requires a hash for fixed-output derivation: ${builtins.head allUrls}"
    else if builtins.length given > 1 then
      throw "multiple hashes passed to fetchurl: ${builtins.head allUrls}"
    else
      mkDrv (
        {
          name = if name != null then name else baseNameOf (builtins.head allUrls);
          urls = allUrls;
          outputHash = h.value;
          outputHashMode = "flat";
        }
        // (if h.algo == "" then { } else { outputHashAlgo = h.algo; })
      );

  fetchFromGitHub =
    {
      owner,
      repo,
      rev ? null,
      tag ? null,
      hash ? null,
      sha256 ? null,
      ...
    }:
    (fetchurl {
      name = "source";
      url = "https://github.com/${owner}/${repo}/archive/${if tag != null then tag else rev}.tar.gz";
      inherit hash sha256;
    }).overrideAttrs
      { outputHashMode = "recursive"; };

  callPackageWith =
    scope: fn: overrides:
    let
      f = if builtins.isFunction fn then fn else import fn;
    in
    f (builtins.intersectAttrs (builtins.functionArgs f) scope // overrides);

  mkShell =
    {
      name ? "nix-shell",
      packages ? [ ],
      buildInputs ? [ ],
      nativeBuildInputs ? [ ],
      inputsFrom ? [ ],
      shellHook ? "",
      ...
    }@args:
    stdenv.mkDerivation (
      removeAttrs args [ "packages" "inputsFrom" ]
      // {
        inherit name shellHook buildInputs;
        nativeBuildInputs = packages ++ nativeBuildInputs;
      }
    );

  # dockerTools.streamLayeredImage/buildLayeredImage with the argument list
  # of nixpkgs 25.05 (no `...`: a misspelt argument is an error, as there).
  # `imageName`/`imageTag` are passthru as in nixpkgs; `conf` (the image's
  # JSON config) is a stub-only attribute the tests read.
  layeredImage =
    kind:
    {
      name,
      tag ? null,
      fromImage ? null,
      contents ? [ ],
      config ? { },
      architecture ? "amd64",
      created ? "1970-01-01T00:00:01Z",
      mtime ? "1970-01-01T00:00:01Z",
      uid ? 0,
      gid ? 0,
      uname ? "root",
      gname ? "root",
      maxLayers ? 100,
      extraCommands ? "",
      fakeRootCommands ? "",
      enableFakechroot ? false,
      includeStorePaths ? true,
      includeNixDB ? false,
      passthru ? { },
      meta ? { },
      layeringPipeline ? null,
      debug ? false,
      compressor ? "gz", # buildLayeredImage only
    }:
    let
      baseName = baseNameOf name;
    in
    mkDrv {
      name = if kind == "stream" then "stream-${baseName}" else "${baseName}.tar.gz";
      inherit contents extraCommands fakeRootCommands;
      # nixpkgs serialises `config` to the image's JSON config.
      conf = builtins.toJSON {
        inherit architecture created config;
        os = "linux";
      };
      passthru = passthru // {
        imageName = lib.toLower name;
        imageTag = if tag == null then "latest" else tag;
      };
      inherit meta;
    };

  dockerTools = {
    streamLayeredImage = layeredImage "stream";
    buildLayeredImage = layeredImage "build";
    buildImage =
      { name, tag ? null, copyToRoot ? null, config ? { }, ... }:
      mkDrv {
        name = "docker-image-${baseNameOf name}.tar.gz";
        conf = builtins.toJSON config;
        passthru.imageTag = if tag == null then "latest" else tag;
      };
    fakeNss = leaf "fake-nss" "stub" { };
    binSh = leaf "bin-sh" "stub" { };
    usrBinEnv = leaf "usr-bin-env" "stub" { };
    caCertificates = leaf "ca-certificates" "stub" { };
  };

  pythonPackageNames = [ "pymysql" "mysqlclient" "jsonschema" "pyyaml" "pytest" "pandas" "numpy" "scipy" "matplotlib" "requests" "jinja2" "click" "psutil" "snakemake" ];
  mkPython =
    version:
    let
      self = leaf "python3" version {
        passthru = {
          pkgs = leafSet "python${version}-" pythonPackageNames;
          withPackages =
            f:
            buildEnv {
              name = "python3-${version}-env";
              paths = [ self ] ++ f self.pkgs;
            };
        };
      };
    in
    self;

  rPackages = leafSet "r-" [ "ggplot2" "data_table" "dplyr" "tidyr" "readr" "scales" "tidyverse" "knitr" "rmarkdown" "jsonlite" "yaml" ];
  rWrapper =
    let
      wrap =
        packages:
        (mkDrv {
          name = "R-wrapper";
          inherit packages;
        })
        // {
          override = args: wrap (args.packages or packages);
        };
    in
    wrap [ ];

  texlivePackages = leafSet "texlive-" [ "latexmk" "scheme-small" "scheme-medium" "scheme-full" "scheme-basic" "collection-latexextra" "collection-fontsrecommended" "booktabs" "siunitx" "pgf" "xcolor" "biblatex" "biber" "hyperref" ];
  mkTexlive =
    scheme:
    let
      withPkgs =
        extra:
        (mkDrv {
          name = "texlive-${scheme}-env";
          paths = extra;
        })
        // {
          withPackages = f: withPkgs (extra ++ f texlivePackages);
        };
    in
    withPkgs [ texlivePackages.${scheme} ];

  openssl_1_1 = leaf "openssl" "1.1.1w" {
    meta = {
      platforms = lib.platforms.linux;
      knownVulnerabilities = [ "OpenSSL 1.1 is reaching its end of life on 2023/09/11 and cannot be supported through the NixOS 23.05 release cycle." ];
    };
  };

  # ---------------------------------------------------------------------------
  # The package set. Leaf versions are placeholders in the 25.05 series.
  # ---------------------------------------------------------------------------
  pkgs = {
    inherit lib pkgs stdenv fetchurl fetchFromGitHub mkShell dockerTools buildEnv rPackages rWrapper openssl_1_1;
    callPackage = callPackageWith pkgs;
    newScope = extra: callPackageWith (pkgs // extra);
    stdenvNoCC = stdenv;
    gcc9Stdenv = mkStdenv "9.5.0";
    gcc10Stdenv = mkStdenv "10.5.0";
    gcc11Stdenv = mkStdenv "11.5.0";
    gcc12Stdenv = mkStdenv "12.4.0";
    gcc13Stdenv = mkStdenv "13.3.0";
    gcc14Stdenv = stdenv;
    gccStdenv = stdenv;
    clangStdenv = mkStdenv "clang-19";
    runCommand =
      name: env: cmd:
      mkDrv (removeAttrs env [ "passthru" "meta" ] // { inherit name; buildCommand = cmd; });
    writeShellScriptBin = name: text: mkDrv { inherit name text; };
    symlinkJoin = { name, paths, ... }@args: buildEnv args;

    python3 = mkPython "3.12";
    python312 = mkPython "3.12";
    python313 = mkPython "3.13";
    python3Packages = pkgs.python3.pkgs;

    texliveSmall = mkTexlive "scheme-small";
    texliveMedium = mkTexlive "scheme-medium";
    texliveFull = mkTexlive "scheme-full";
    texlive = texlivePackages // {
      combine = set: mkDrv { name = "texlive-combined"; paths = builtins.attrValues set; };
      combined = lib.mapAttrs (n: p: mkDrv { name = "texlive-combined-${n}"; paths = [ p ]; }) {
        inherit (texlivePackages) scheme-small scheme-medium scheme-full scheme-basic;
      };
    };

    # Toolchain and libraries
    cmake = leaf "cmake" "3.31-stub" { };
    gnumake = leaf "gnumake" "4.4-stub" { };
    pkg-config = leaf "pkg-config-wrapper" "0.29-stub" { };
    bison = leaf "bison" "3.8-stub" { };
    flex = leaf "flex" "2.6-stub" { };
    perl = leaf "perl" "5.40-stub" { };
    ncurses = leaf "ncurses" "6.5-stub" { };
    readline = leaf "readline" "8.2-stub" { };
    libedit = leaf "libedit" "stub" { };
    libaio = leaf "libaio" "0.3-stub" { };
    numactl = leaf "numactl" "2.0-stub" { };
    zlib = leaf "zlib" "1.3-stub" { };
    lz4 = leaf "lz4" "1.10-stub" { };
    zstd = leaf "zstd" "1.5-stub" { };
    boost = leaf "boost" "1.87-stub" { };
    libevent = leaf "libevent" "2.1-stub" { };
    protobuf = leaf "protobuf" "stub" { };
    openssl = leaf "openssl" "3.4-stub" { };
    openssl_3 = pkgs.openssl;
    luajit = leaf "luajit" "2.1-stub" { };
    libtool = leaf "libtool" "2.5-stub" { };
    coreutils = leaf "coreutils" "9.7-stub" { };
    bash = leaf "bash" "5.2-stub" { };
    bashInteractive = leaf "bash-interactive" "5.2-stub" { };
    gnused = leaf "gnused" "4.9-stub" { };
    gnugrep = leaf "gnugrep" "3.11-stub" { };
    which = leaf "which" "2.23-stub" { };
    procps = leaf "procps" "stub" { };
    util-linux = leaf "util-linux" "2.41-stub" { };
    git = leaf "git" "2.49-stub" { };
    poppler_utils = leaf "poppler-utils" "stub" { };
    nodejs = leaf "nodejs" "22-stub" { };
    nodejs_20 = leaf "nodejs" "20-stub" { };
    nodejs_22 = pkgs.nodejs;
    R = leaf "R" "4.5-stub" { };
    snakemake = leaf "snakemake" "stub" { };

    # Databases and benchmarks (nixos-25.05 has no mysql56/mysql57/percona-server56)
    sysbench = leaf "sysbench" "1.0.20" { };
    hwloc = leaf "hwloc" "2.11-stub" { };
    mysql80 = leaf "mysql" "8.0-stub" { };
    mysql84 = leaf "mysql" "8.4-stub" { };
    libmysqlclient = leaf "libmysqlclient" "stub" { };
    mariadb_106 = leaf "mariadb-server" "10.6-stub" { };
    mariadb_1011 = leaf "mariadb-server" "10.11-stub" { };
    mariadb_114 = leaf "mariadb-server" "11.4-stub" { };
    mariadb = pkgs.mariadb_114;
    percona-server = leaf "percona-server" "8.4-stub" { };
    percona-server_8_0 = leaf "percona-server" "8.0-stub" { };
    postgresql = leaf "postgresql" "17-stub" { };
  };
in
# Overlays are not modelled (the artifact's flake does not use them): fail
# loudly instead of half-applying them.
if overlays != [ ] then throw "tests/nix/stub-nixpkgs does not model overlays" else pkgs
