#!/usr/bin/env bash
# The Debian packages as a clean Debian 12 would get them: `cpack -G DEB`
# from the build tree, each package's control fields (dpkg-deb -I), every
# installed file in exactly one package, then the packages extracted
# (dpkg-deb -x) into a temporary root: examples/ built against that root and
# run against a private etcd, the C API used through its pkg-config file, the
# packaged CLI run. Where apt knows the Debian 12 archive, apt-get simulates
# installing each package on an empty system, and every file the consumer's
# build read and every library the binaries load must come from a package
# that installation (or any Debian system) has: a Depends missing from
# cmake/Packaging.cmake fails here even on this machine, where everything is
# installed.
#   deb_test.sh BUILD_DIR SOURCE_DIR
# Environment: CPACK_COMMAND (default cpack).
# shellcheck shell=bash disable=SC2016,SC2034
set -uo pipefail
# sort, comm and join must agree on the order.
export LC_ALL=C
BUILD=$(realpath "${1:?usage: deb_test.sh BUILD_DIR SOURCE_DIR}")
SRC=$(realpath "${2:?usage: deb_test.sh BUILD_DIR SOURCE_DIR}")
CPACK=${CPACK_COMMAND:-cpack}
# file: CPack's DEB generator finds the binaries to give dpkg-shlibdeps with it.
for tool in "$CPACK" dpkg-deb dpkg file; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool not found"
    exit 77
  fi
done
TEST_NAME=deb
# lib.sh takes the CLI as its first argument; the packaged one is not
# extracted yet, so BIN is set when it is.
set -- /bin/true
# shellcheck source=../cli/lib.sh
source "$SRC/tests/cli/lib.sh"

step() { echo "==> $*"; }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }

VERSION=$(cache_value CMAKE_PROJECT_VERSION)
ARCH=$(dpkg --print-architecture)
LIBDIR=$(cache_value CMAKE_INSTALL_LIBDIR)
declare -A EXPECTED=([dev]=etcd-recipes-dev)
[[ $(cache_value ETCD_RECIPES_BUILD_C_API) == ON ]] && EXPECTED[c]=libetcd-recipes-c0
[[ $(cache_value ETCD_RECIPES_BUILD_TOOLS) == ON ]] && EXPECTED[tools]=etcd-recipes-tools

step "cpack -G DEB (version $VERSION, $ARCH)"
if ! (cd "$WORK" && "$CPACK" -G DEB --config "$BUILD/CPackConfig.cmake" -B "$WORK/debs") >"$WORK/cpack.log" 2>&1; then
  tail -30 "$WORK/cpack.log"
  fail "cpack -G DEB"
  exit 1
fi
pass "cpack -G DEB"

declare -A DEB=() # package name -> .deb
for f in "$WORK"/debs/*.deb; do
  [[ -e $f ]] || continue
  DEB[$(dpkg-deb -f "$f" Package)]=$f
done
got=$(printf '%s\n' "${!DEB[@]}" | sort | xargs)
want=$(printf '%s\n' "${EXPECTED[@]}" | sort | xargs)
if [[ $got == "$want" ]]; then
  pass "packages: $got"
else
  # An extra package (etcd-recipes-unspecified) is an install() without COMPONENT.
  fail "packages" "built: $got" "expected: $want"
  exit 1
fi

step "control fields (dpkg-deb -I)"
field() { dpkg-deb -f "${DEB[$1]}" "$2"; }
for p in "${EXPECTED[@]}"; do
  v=$(field "$p" Version)
  echo "    $p $v: Depends: $(field "$p" Depends)"
  check_fields=true
  [[ $v == "$VERSION"-* ]] || check_fields=false
  [[ $(field "$p" Architecture) == "$ARCH" ]] || check_fields=false
  for f in Maintainer Description Section Depends; do
    [[ -n $(field "$p" "$f") ]] || check_fields=false
  done
  # A ';' in a description is a CMake list separator: CPack keeps only the
  # text before it. Every description here ends with a full stop.
  [[ $(field "$p" Description) == *. ]] || check_fields=false
  if $check_fields; then
    pass "$p: version, architecture, maintainer, description, section, depends"
  else
    fail "$p: control fields" "$(dpkg-deb -I "${DEB[$p]}" | sed -n '/Package:/,$p')"
  fi
done
# depends_on PACKAGE REGEX...: every REGEX matches one of its Depends.
depends_on() {
  local p=$1 re missing=()
  shift
  local deps
  deps=$(field "$p" Depends | tr ',' '\n' | sed 's/^ *//')
  for re in "$@"; do
    grep -Eq -- "$re" <<<"$deps" || missing+=("$re")
  done
  if ((${#missing[@]} == 0)); then
    pass "$p depends on $*"
  else
    fail "$p: Depends" "no match for: ${missing[*]}" "Depends: $(field "$p" Depends)"
  fi
}
GRPC_RUNTIME='^libgrpc\+\+1\.[0-9]+ \(>='
PROTOBUF_RUNTIME='^libprotobuf[0-9]+ \(>='
depends_on etcd-recipes-dev '^libgrpc\+\+-dev \(>=' '^libgrpc\+\+-dev \(<<' '^libprotobuf-dev \(>=' \
  '^libprotobuf-dev \(<<' '^libasio-dev' '^protobuf-compiler-grpc$'
if [[ -n ${EXPECTED[c]:-} ]]; then
  depends_on etcd-recipes-dev "^libetcd-recipes-c0 \\(= $(field libetcd-recipes-c0 Version)\\)$"
  depends_on libetcd-recipes-c0 "$GRPC_RUNTIME" "$PROTOBUF_RUNTIME" '^libc6 '
  # Programs linked with it get their Depends from this (dpkg-shlibdeps), and
  # dpkg runs ldconfig after installing and removing it.
  shlibs=$(dpkg-deb -I "${DEB[libetcd-recipes-c0]}" shlibs 2>&1)
  postinst=$(dpkg-deb -I "${DEB[libetcd-recipes-c0]}" postinst 2>&1)
  postrm=$(dpkg-deb -I "${DEB[libetcd-recipes-c0]}" postrm 2>&1)
  c0_version=$(field libetcd-recipes-c0 Version)
  if [[ $shlibs == "libetcd_recipes_c 0 libetcd-recipes-c0 (= $c0_version)" && $postinst == *ldconfig* &&
    $postrm == *ldconfig* ]]; then
    pass "libetcd-recipes-c0: shlibs ($shlibs), ldconfig in postinst and postrm"
  else
    fail "libetcd-recipes-c0: shlibs and ldconfig" "shlibs: $shlibs" "postinst: $postinst" "postrm: $postrm"
  fi
fi
if [[ -n ${EXPECTED[tools]:-} ]]; then
  depends_on etcd-recipes-tools "$GRPC_RUNTIME" "$PROTOBUF_RUNTIME" '^libc6 '
fi

step "every installed file is in exactly one package"
if cmake --install "$BUILD" --prefix "$WORK/all" >"$WORK/install.log" 2>&1; then
  (cd "$WORK/all" && find . ! -type d | sed 's|^\./||' | sort) >"$WORK/installed.txt"
  for p in "${EXPECTED[@]}"; do
    # ./usr/lib/libx.a, and symbolic links as ./usr/lib/libx.so -> libx.so.0
    dpkg-deb --fsys-tarfile "${DEB[$p]}" | tar -t | grep -v '/$' | sed 's|^\./usr/||'
  done | sort >"$WORK/packaged.txt"
  dups=$(uniq -d "$WORK/packaged.txt")
  diffs=$(diff "$WORK/installed.txt" <(uniq "$WORK/packaged.txt"))
  if [[ -z $dups && -z $diffs && -s $WORK/installed.txt ]]; then
    pass "$(wc -l <"$WORK/installed.txt") files, each in one package"
  else
    fail "files" "in two packages: $dups" "cmake --install (<) vs the packages (>): $diffs"
  fi
else
  tail -20 "$WORK/install.log"
  fail "cmake --install"
fi

ROOT=$WORK/root
step "extract into $ROOT"
for p in "${EXPECTED[@]}"; do
  dpkg-deb -x "${DEB[$p]}" "$ROOT" || fail "dpkg-deb -x $p"
done
# cmake/PackagingStrip.cmake: a RelWithDebInfo build's static libraries are
# mostly debug information.
if command -v readelf >/dev/null; then
  with_debug=()
  for a in "$ROOT/usr/$LIBDIR"/*.a; do
    readelf -S -W "$a" 2>/dev/null | grep -q '\.debug_info' && with_debug+=("${a##*/}")
  done
  if ((${#with_debug[@]} == 0)); then
    pass "static libraries without debug information"
  else
    fail "static libraries with debug information: ${with_debug[*]}"
  fi
fi

# --- what a clean Debian 12 would have -------------------------------------------
# closure NAME DEB_OR_PACKAGE...: writes $WORK/closure.NAME, the packages an
# empty system gets from `apt-get install` of those and of what every Debian
# system has (Essential, Priority required), and $WORK/apt.NAME.rc.
closure() {
  local name=$1
  shift
  # Without Recommends, as dev.sh installs: Depends alone must be enough.
  # shellcheck disable=SC2046
  apt-get -s -q -o Dir::State::status="$WORK/empty-status" -o Debug::NoLocking=1 \
    -o APT::Install-Recommends=false install "$@" $(cat "$WORK/base") >"$WORK/apt.$name.log" 2>&1
  echo $? >"$WORK/apt.$name.rc"
  sed -n 's/^Inst \([^ :]*\).*/\1/p' "$WORK/apt.$name.log" | sort -u >"$WORK/closure.$name"
}
APT=false
if command -v apt-get >/dev/null && apt-cache show libgrpc++-dev >/dev/null 2>&1; then
  APT=true
  step "apt-get -s install on a minimal system"
  : >"$WORK/empty-status"
  dpkg-query -W -f '${Package} ${Priority} ${Essential}\n' | awk '$2 == "required" || $3 == "yes" { print $1 }' \
    >"$WORK/base"
  # In parallel: each resolution takes seconds.
  apt_pids=()
  for p in "${EXPECTED[@]}"; do
    debs=("${DEB[$p]}")
    [[ $p == etcd-recipes-dev && -n ${EXPECTED[c]:-} ]] && debs+=("${DEB[libetcd-recipes-c0]}")
    closure "$p" "${debs[@]}" &
    apt_pids+=($!)
  done
  # Building against the dev package also takes a compiler and CMake.
  closure build "${DEB[etcd-recipes-dev]}" ${EXPECTED[c]:+"${DEB[libetcd-recipes-c0]}"} build-essential cmake \
    ninja-build &
  apt_pids+=($!)
  wait "${apt_pids[@]}"
  for p in "${EXPECTED[@]}" build; do
    if [[ $(cat "$WORK/apt.$p.rc") == 0 ]]; then
      pass "$p installs on a minimal system ($(wc -l <"$WORK/closure.$p") packages in all)"
    else
      fail "$p: apt-get -s install" "$(grep -E '^ |^E:' "$WORK/apt.$p.log" | head -20)"
    fi
  done
  # The dpkg database as "path package" lines, with /lib, /bin, /sbin also
  # under /usr (merged /usr: a library is listed as /lib/... and opened as
  # /usr/lib/...).
  awk '{ p = FILENAME; sub(".*/", "", p); sub("[.]list$", "", p); sub(":.*", "", p)
         print $0 "\t" p; if ($0 ~ "^/(lib|lib64|bin|sbin)/") print "/usr" $0 "\t" p }' /var/lib/dpkg/info/*.list |
    sort -t$'\t' -k1,1 -u >"$WORK/owners"
else
  echo "    (apt does not know libgrpc++-dev: no clean-system checks; run apt-get update)"
fi

# owners_outside NAME: reads paths on stdin; fails for each one owned by a
# package outside $WORK/closure.NAME (files no package owns are skipped:
# they are the test's own, or generated on every system like ld.so.cache).
owners_outside() {
  local name=$1 what=$2
  local paths
  paths=$(grep '^/' | grep -vE "^($WORK|$SRC|/proc|/sys|/dev|/tmp)(/|$)" | sort -u)
  [[ -n $paths ]] || return 0
  # Lexically normalised (..), then, for alternatives and other links no
  # package lists, the resolved path. Not directories: many packages own
  # /usr/lib.
  paths=$({
    xargs -d '\n' realpath -s -m <<<"$paths"
    xargs -d '\n' realpath -m <<<"$paths"
  } | sort -u | while IFS= read -r f; do [[ -d $f ]] || echo "$f"; done)
  join -t$'\t' - "$WORK/owners" <<<"$paths" | cut -f2 | sort -u >"$WORK/used.$name"
  local outside
  outside=$(comm -23 "$WORK/used.$name" "$WORK/closure.$name" | grep -vxF -e etcd-recipes-dev -e libetcd-recipes-c0 \
    -e etcd-recipes-tools)
  if [[ -z $outside ]]; then
    pass "$what: every file from a package a clean install has ($(wc -l <"$WORK/used.$name") packages)"
  else
    local p detail=()
    for p in $outside; do
      detail+=("$p: $(join -t$'\t' - "$WORK/owners" <<<"$paths" | awk -F'\t' -v p="$p" \
        '$2 == p { print $1 }' | head -3 | xargs)")
    done
    fail "$what: uses packages no Depends brings" "${detail[@]}"
  fi
}
# ldd_paths FILE...: the libraries the dynamic loader resolves for them.
ldd_paths() { LD_LIBRARY_PATH=$ROOT/usr/$LIBDIR ldd "$@" | awk '$2 == "=>" { print $3 } $1 ~ /^\// { print $1 }'; }
not_found() { LD_LIBRARY_PATH=$ROOT/usr/$LIBDIR ldd "$@" | grep "not found"; }

# --- build examples/ against the root -----------------------------------------------
step "configure and build examples/ against $ROOT/usr"
# As on a clean system: no nlohmann_json (a Suggests), no compiler cache.
clean_path=$(tr ':' '\n' <<<"$PATH" | grep -v ccache | paste -sd:)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
trace=()
$APT && command -v strace >/dev/null && trace=(strace -f -q -qq -e trace=%file -o "$WORK/strace.log" --)
build_examples() {
  env -u CMAKE_CXX_COMPILER_LAUNCHER -u CMAKE_C_COMPILER_LAUNCHER PATH="$clean_path" \
    cmake -S "$SRC/examples" -B "$WORK/examples" "${generator[@]}" -DCMAKE_PREFIX_PATH="$ROOT/usr" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON >"$WORK/configure.log" 2>&1 || return 1
  # The tour would triple the build time; quick_start and lock_example use
  # both libraries (client, recipes).
  env -u CMAKE_CXX_COMPILER_LAUNCHER PATH="$clean_path" \
    cmake --build "$WORK/examples" -j2 --target quick_start lock_example >"$WORK/build.log" 2>&1 || return 2
}
"${trace[@]}" bash -c "$(declare -p WORK SRC ROOT clean_path generator); $(declare -f build_examples); build_examples"
rc=$?
if ((rc == 0)); then
  pass "examples built with find_package(etcd_recipes) from the packages"
else
  tail -30 "$WORK/configure.log" "$WORK/build.log" 2>/dev/null
  fail "examples: $( ((rc == 1)) && echo configure || echo build)"
fi
if ((${#trace[@]})); then
  # Paths of the file system calls that succeeded (configure and build).
  grep -v '= -1 ' "$WORK/strace.log" | sed -n 's/^[0-9]* *[a-z0-9_]*([^"]*"\(\/[^"]*\)".*/\1/p' |
    owners_outside build "consumer build"
fi

# --- a C program through pkg-config ------------------------------------------------
if [[ -n ${EXPECTED[c]:-} ]] && command -v pkg-config >/dev/null && command -v cc >/dev/null; then
  step "C API via pkg-config"
  pcdir=$(dirname "$(find "$ROOT" -name etcd_recipes_c.pc | head -1)")
  cat >"$WORK/version.c" <<'EOF'
#include <etcd_recipes.h>
#include <stdio.h>
int main(void) {
  printf("%s\n", etcdr_version_string());
  return etcdr_version() == ETCDR_VERSION ? 0 : 1;
}
EOF
  # shellcheck disable=SC2046
  if cc -o "$WORK/version" "$WORK/version.c" $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs etcd_recipes_c) \
    2>"$WORK/cc.err" && out=$(LD_LIBRARY_PATH=$ROOT/usr/$LIBDIR "$WORK/version") && [[ $out == "$VERSION" ]]; then
    pass "C program built with pkg-config etcd_recipes_c, loads the packaged library ($out)"
  else
    fail "C program" "$(cat "$WORK/cc.err")" "output: ${out:-}"
  fi
  if $APT; then
    not_found "$ROOT/usr/$LIBDIR"/libetcd_recipes_c.so.0 && fail "libetcd_recipes_c.so.0: unresolved libraries"
    ldd_paths "$ROOT/usr/$LIBDIR"/libetcd_recipes_c.so.0 | owners_outside libetcd-recipes-c0 "libetcd_recipes_c.so.0 loads"
  fi
fi

start_etcd_or_skip

if [[ -x $WORK/examples/quick_start ]]; then
  step "examples against the private etcd"
  for prog in quick_start lock_example; do
    if timeout -k 5 90 "$WORK/examples/$prog" "$EP" >"$WORK/$prog.out" 2>&1; then
      pass "$prog"
    else
      fail "$prog" "$(tail -20 "$WORK/$prog.out")"
    fi
  done
  $APT && ldd_paths "$WORK/examples/quick_start" | owners_outside build "quick_start loads"
fi

if [[ -n ${EXPECTED[tools]:-} ]]; then
  step "the packaged CLI"
  BIN=$ROOT/usr/bin/etcd-recipes
  out=$("$BIN" --version 2>&1)
  check "etcd-recipes --version: $out" eval '[[ $out == *"$VERSION"* ]]'
  run kv put deb/key "from the package"
  check "kv put" eval '((RC == 0))'
  run kv get deb/key
  check "kv get" eval '((RC == 0)) && [[ $OUT == *"from the package"* ]]'
  check "etcd-recipes-bench --help" eval '"$ROOT/usr/bin/etcd-recipes-bench" --help >/dev/null'
  if $APT; then
    not_found "$BIN" "$ROOT/usr/bin/etcd-recipes-bench" && fail "tools: unresolved libraries"
    ldd_paths "$BIN" "$ROOT/usr/bin/etcd-recipes-bench" | owners_outside etcd-recipes-tools "etcd-recipes tools load"
  fi
fi

echo "$passed passed, $failed failed"
((failed == 0))
