#!/usr/bin/env bash
# What `./dev.sh demo` does on a fresh clone, without building or starting
# anything: a copy of dev.sh and tools/etcd-releases runs with cmake, ctest,
# go, dpkg-query and the tool itself replaced by stubs that record their
# arguments.
#
#   bash tests/dev/demo_test.sh SOURCE_DIR
#
# Checks that the demo builds only the etcd-recipes target, that it does not
# build the default etcd release (go) when it is not cached but uses
# Debian's /usr/bin/etcd and says so in one line, that a cached default
# release is used as it is, and that `./dev.sh test` still builds
# everything. Exits 77 (skip) without /usr/bin/etcd.

set -u
SRC=${1:?usage: $(basename "$0") SOURCE_DIR}
if [[ ! -x /usr/bin/etcd ]]; then
  echo "skipped: no /usr/bin/etcd (Debian's etcd-server)" >&2
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/etcd-recipes-dev-demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

passed=0
failed=0
check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "PASS: $name"
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
    echo "      output: $(cat "$WORK/out" 2>/dev/null)"
    echo "      cmake: $(cat "$WORK/cmake.log" 2>/dev/null)"
  fi
}

clone="$WORK/clone"
mkdir -p "$clone/tools" "$clone/build/tools/etcd-recipes" "$WORK/stubs"
cp "$SRC/dev.sh" "$clone/"
cp -r "$SRC/tools/etcd-releases" "$clone/tools/"
stub() {  # NAME BODY: a command on PATH that logs its arguments to $WORK/NAME.log
  printf '#!/usr/bin/env bash\necho "$*" >>"%s/%s.log"\n%s\n' "$WORK" "$1" "$2" >"$WORK/stubs/$1"
  chmod +x "$WORK/stubs/$1"
}
stub cmake 'exit 0'
stub ctest 'exit 0'
stub go 'exit 1'
stub apt-get 'exit 1'
stub dpkg-query 'printf "install ok installed"'
printf '#!/usr/bin/env bash\necho "ETCD=$ETCD_RECIPES_ETCD ARGS=$*" >"%s/tool.log"\n' "$WORK" \
  >"$clone/build/tools/etcd-recipes/etcd-recipes"
chmod +x "$clone/build/tools/etcd-recipes/etcd-recipes"

dev() {  # ARGS...: dev.sh in the clone, stubs first on PATH, an empty etcd cache
  : >"$WORK/cmake.log"
  rm -f "$WORK/go.log" "$WORK/tool.log"
  timeout -k 5 60 env -u ETCD_RECIPES_ETCD -u ETCD_RECIPES_ETCDCTL PATH="$WORK/stubs:$PATH" \
    ETCD_RECIPES_CACHE="$WORK/cache" bash "$clone/dev.sh" "$@" >"$WORK/out" 2>&1
  RC=$?
}

# --- a fresh clone: nothing cached ---------------------------------------------------------
dev demo --no-view
check "demo exits as the tool did (0)" eval '((RC == 0))'
check "demo builds only the etcd-recipes target" \
  eval 'grep -qx -- "--build --preset default --target etcd-recipes" "$WORK/cmake.log" &&
        ! grep -- "--build" "$WORK/cmake.log" | grep -qv -- "--target etcd-recipes"'
check "demo does not build the default etcd release (no go)" eval '[[ ! -e $WORK/go.log ]]'
check "demo runs the tool with Debian's etcd" \
  eval '[[ $(cat "$WORK/tool.log") == "ETCD=/usr/bin/etcd ARGS=demo --no-view" ]]'
check "one line says so, and how to get the default release" \
  eval '(($(grep -c "Debian" "$WORK/out") == 1)) && grep "Debian" "$WORK/out" | grep -q "./dev.sh etcd"'

# --- the default release cached -----------------------------------------------------------------
version=$(bash "$clone/tools/etcd-releases/provide.sh" --resolve default)
mkdir -p "$WORK/cache/etcd/$version"
for b in etcd etcdctl; do
  printf '#!/bin/sh\necho "etcd Version: %s"\n' "$version" >"$WORK/cache/etcd/$version/$b"
  chmod +x "$WORK/cache/etcd/$version/$b"
done
dev demo
check "with the default release cached, demo uses it and says nothing of Debian" \
  eval '((RC == 0)) && [[ $(cat "$WORK/tool.log") == "ETCD=$WORK/cache/etcd/$version/etcd ARGS=demo" ]] && ! grep -q Debian "$WORK/out"'

# --- test builds the rest ------------------------------------------------------------------------
dev test
check "test builds every target" eval '((RC == 0)) && grep -qx -- "--build --preset default" "$WORK/cmake.log"'

echo "$passed passed, $failed failed"
((failed == 0))
