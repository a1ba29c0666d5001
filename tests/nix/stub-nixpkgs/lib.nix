# The few nixpkgs `lib` functions and constants a flake typically uses,
# implemented with builtins and with the same names and semantics as
# nixpkgs/lib. Anything missing is an "attribute missing" error, as it should
# be for a name nixpkgs' lib does not have.
let
  fix = f: let x = f x; in x;
  nameValuePair = name: value: { inherit name value; };
  mapAttrs' = f: set: builtins.listToAttrs (map (n: f n set.${n}) (builtins.attrNames set));
  genAttrs = names: f: builtins.listToAttrs (map (n: nameValuePair n (f n)) names);
  license = spdxId: fullName: { inherit spdxId fullName; free = true; };
in
{
  inherit fix nameValuePair mapAttrs' genAttrs;
  inherit (builtins) mapAttrs attrNames attrValues filter elem head tail concatStringsSep isFunction isAttrs isList isString;
  optional = cond: x: if cond then [ x ] else [ ];
  optionals = cond: xs: if cond then xs else [ ];
  optionalString = cond: s: if cond then s else "";
  optionalAttrs = cond: set: if cond then set else { };
  concatMap = f: xs: builtins.concatLists (map f xs);
  hasPrefix = pre: s: builtins.substring 0 (builtins.stringLength pre) s == pre;
  getExe = drv: "${drv}/bin/${drv.meta.mainProgram or (drv.pname or drv.name)}";
  makeBinPath = ps: builtins.concatStringsSep ":" (map (p: "${p}/bin") ps);
  toLower = builtins.replaceStrings
    (builtins.genList (i: builtins.substring i 1 "ABCDEFGHIJKLMNOPQRSTUVWXYZ") 26)
    (builtins.genList (i: builtins.substring i 1 "abcdefghijklmnopqrstuvwxyz") 26);
  recursiveUpdate = a: b: a // b; # shallow is enough for the stub
  licenses = {
    gpl2Only = license "GPL-2.0-only" "GNU General Public License v2.0 only";
    gpl2Plus = license "GPL-2.0-or-later" "GNU General Public License v2.0 or later";
    gpl3Plus = license "GPL-3.0-or-later" "GNU General Public License v3.0 or later";
    lgpl21Plus = license "LGPL-2.1-or-later" "GNU Lesser General Public License v2.1 or later";
    mit = license "MIT" "MIT License";
    bsd3 = license "BSD-3-Clause" "BSD 3-clause";
    asl20 = license "Apache-2.0" "Apache License 2.0";
  };
  platforms = {
    linux = [ "x86_64-linux" "aarch64-linux" "i686-linux" "armv7l-linux" "riscv64-linux" ];
    darwin = [ "x86_64-darwin" "aarch64-darwin" ];
    unix = [ "x86_64-linux" "aarch64-linux" "i686-linux" "x86_64-darwin" "aarch64-darwin" ];
    x86_64 = [ "x86_64-linux" "x86_64-darwin" ];
  };
  maintainers = { };
}
