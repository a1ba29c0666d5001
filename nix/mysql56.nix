# MySQL 5.6.51 Community Server, built from the upstream source tarball.
#
# nixpkgs has had no usable MySQL 5.6 since ~2017 (the old `mysql56` attribute
# was a never-updated 5.6.23 stub; `percona-server56` was dropped in 22.05),
# so the derivation lives here. It follows the last nixpkgs Percona 5.6
# derivation (pkgs/servers/sql/percona/5.6.x.nix) with the changes a modern
# toolchain needs:
#
#   * GCC 10 (`gcc10Stdenv`): 5.6 does not compile with GCC >= 11, whose
#     default is C++17. flake.nix passes `stdenv = gcc10Stdenv`, which exists
#     up to nixos-25.05.
#   * OpenSSL 1.1 (`openssl_1_1`): 5.6 has no OpenSSL 3 support, and its
#     bundled yaSSL is gone, so `-DWITH_SSL=system`. openssl_1_1 is marked
#     insecure in nixpkgs; flake.nix permits exactly "openssl-1.1.1w".
#   * CMake 3.x: the 5.6 CMake files set OLD policies that CMake 4 rejects.
#     nixos-25.05 still ships CMake 3.
#
# Arguments are filled in by `pkgs.callPackage`; `stdenv` and `openssl` are
# overridden in flake.nix.
{
  lib,
  stdenv,
  fetchurl,
  cmake,
  bison,
  perl,
  ncurses,
  openssl,
  libaio,
  zlib,
}:

let
  version = "5.6.51";
in
stdenv.mkDerivation {
  pname = "mysql";
  inherit version;

  src = fetchurl {
    # The same file under several names; fetchurl tries them in order, and the
    # store name is the basename of the first URL.
    urls = [
      "https://cdn.mysql.com/archives/mysql-5.6/mysql-${version}.tar.gz"
      "https://downloads.mysql.com/archives/get/p/23/file/mysql-${version}.tar.gz"
      "https://cdn.mysql.com/Downloads/MySQL-5.6/mysql-${version}.tar.gz"
    ];
    # sha256 of mysql-5.6.51.tar.gz (hex 262ccaf2930fca1f33787505dd125a7a04844f40d3421289a51974b5935d9abc,
    # as recorded by Homebrew's mysql@5.6 formula), written in Nix base32.
    # tests/unit/test_flake.py checks that this is the same hash.
    sha256 = "1g4sbn9vax0rln4i4hnk817q813sb89ds1bmg0rizjhgjgrclb16";
  };

  # The generic 5.6 CMake files call /usr/bin/libtool on macOS only; keep the
  # nixpkgs-standard fix so the source tree never names an FHS path.
  postPatch = ''
    sed -i -e 's|/usr/bin/libtool|libtool|' cmake/libutils.cmake
  '';

  nativeBuildInputs = [
    cmake
    bison
    perl
  ];
  # perl is also a run-time input: scripts/mysql_install_db (the 5.6 way to
  # initialise a datadir) is a Perl script, and patchShebangs points it at
  # this perl.
  buildInputs = [
    ncurses
    openssl
    libaio
    zlib
    perl
  ];

  cmakeFlags = [
    # The configuration of MySQL's official release binaries.
    "-DBUILD_CONFIG=mysql_release"
    "-DFEATURE_SET=community"
    "-DCMAKE_BUILD_TYPE=RelWithDebInfo"
    "-DWITH_SSL=system"
    "-DWITH_ZLIB=system"
    "-DWITH_EDITLINE=bundled"
    "-DWITH_EMBEDDED_SERVER=OFF"
    "-DWITH_UNIT_TESTS=OFF"
    "-DENABLE_DTRACE=OFF"
    # bin/, lib/, share/, scripts/ directly under $out: the same layout as the
    # official binary tarball the harness already knows how to run.
    "-DINSTALL_LAYOUT=STANDALONE"
    "-DINSTALL_MYSQLTESTDIR="
    "-DINSTALL_SQLBENCHDIR="
  ];

  env = {
    # Percona 5.6 needed the first flag with GCC >= 9; -fpermissive turns the
    # remaining pre-C++11 idioms in 5.6 into warnings (nixpkgs' mysql57 did
    # the same).
    NIX_CFLAGS_COMPILE = toString [
      "-Wno-error=address-of-packed-member"
      "-fpermissive"
    ];
    NIX_LDFLAGS = "-lgcc_s";
  };

  enableParallelBuilding = true;

  postInstall = ''
    rm -rf "$out/mysql-test" "$out/sql-bench" "$out/data"
    rm -f "$out"/lib/*.a
  '';

  passthru = {
    mysqlVersion = "5.6";
    # How the harness initialises a datadir for this family (see
    # config/builds.lock.yaml, family mysql-5.6).
    datadirInit = "scripts/mysql_install_db --no-defaults";
  };

  meta = {
    description = "MySQL 5.6.51 Community Server (final 5.6 release, EOL since Feb 2021), for benchmark reproduction only";
    homepage = "https://dev.mysql.com/doc/relnotes/mysql/5.6/en/news-5-6-51.html";
    license = lib.licenses.gpl2Only;
    platforms = lib.platforms.linux;
    mainProgram = "mysqld";
  };
}
