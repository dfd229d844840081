#!/usr/bin/env bash
# A user's view of the library: install the build into a temporary prefix,
# build examples/ against it as a separate project (find_package), with the
# project's C++ compiler and AddressSanitizer, and run the programs (blocking
# and co_await styles) against a private etcd. Any ASan report fails it.
# The examples build in unity batches of 5 files (CMake's own switch, as a
# user may set it): half the compile time, the same code and warnings.
#   consumer_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
# shellcheck shell=bash
set -uo pipefail
BUILD=$1
SRC=$2
CXX=$3
TEST_NAME=consumer
BIN=/bin/true
# shellcheck source=../cli/lib.sh
source "$SRC/tests/cli/lib.sh"

step() { echo "==> $*"; }

step "install into $WORK/prefix"
if ! cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log" 2>&1; then
  tail -20 "$WORK/install.log"
  fail "cmake --install"
  exit 1
fi
pass "install"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
step "configure examples/ against the installed package"
if ! cmake -S "$SRC/examples" -B "$WORK/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=5 \
  -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" >"$WORK/configure.log" 2>&1; then
  tail -30 "$WORK/configure.log"
  fail "configure"
  exit 1
fi
pass "configure (find_package(etcd_recipes), no C++ standard set by the consumer)"

step "build"
if ! cmake --build "$WORK/build" -j2 >"$WORK/build.log" 2>&1; then
  grep -E "error|Error" -A3 "$WORK/build.log" | head -40
  fail "build"
  exit 1
fi
pass "build"

start_etcd_or_skip

export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1"
# run_program NAME ARGS...: passes when it exits 0 and ASan said nothing.
run_program() {
  local name=$1
  shift
  timeout -k 5 90 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
  local rc=$?
  if ((rc == 0)) && ! grep -q "AddressSanitizer" "$WORK/$name.err"; then
    pass "$name"
  else
    fail "$name" "rc=$rc" "$(tail -40 "$WORK/$name.out")" "$(head -60 "$WORK/$name.err")"
  fi
}

run_program quick_start "$WORK/build/quick_start" "$EP"
run_program lock_example "$WORK/build/lock_example" "$EP"
run_program braced_options "$WORK/build/braced_options" "$EP"
run_program tour "$WORK/build/tour" "$EP"
sed 's/^/      /' "$WORK/tour.out"
# The JSON codec's section is built only when the package's json component
# (etcd_recipes::json, nlohmann_json) was found; here it must have been.
if grep -q "^ok   typed_values$" "$WORK/tour.out"; then
  pass "tour: typed values with etcd_recipes::json"
else
  fail "tour: typed values with etcd_recipes::json" "section missing or failed (is nlohmann-json3-dev installed?)"
fi

# The documentation's C++ examples (tests/docs as a project of its own),
# each as written and in its co_await form, against the installed package.
step "the documentation's examples against the installed package"
if cmake -S "$SRC/tests/docs" -B "$WORK/docs" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" >"$WORK/docs-configure.log" 2>&1 &&
  cmake --build "$WORK/docs" -j2 >"$WORK/docs-build.log" 2>&1; then
  pass "docs: build"
  run_program doc_examples "$WORK/docs/doc_examples"
  grep -c "^ok .*(co_await)" "$WORK/doc_examples.out" | sed 's/^/      co_await forms run: /'
else
  fail "docs: build" "$(grep -E "error|Error" -A3 "$WORK/docs-configure.log" "$WORK/docs-build.log" | head -40)"
fi

step "pkg-config"
if command -v pkg-config >/dev/null; then
  pcdir=$(dirname "$(find "$WORK/prefix" -name etcd_recipes_json.pc | head -1)")
  if PKG_CONFIG_PATH="$pcdir" pkg-config --exists --print-errors etcd_recipes etcd_recipes_json 2>"$WORK/pkgconfig.err"; then
    pass "pkg-config finds etcd_recipes and etcd_recipes_json"
  else
    fail "pkg-config" "$(cat "$WORK/pkgconfig.err")"
  fi
fi

echo "$passed passed, $failed failed"
((failed == 0))
