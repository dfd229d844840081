#!/usr/bin/env bash
# One entry point for newcomers and CI:
#   ./dev.sh demo        install what is missing, build the tool alone, run
#                        `etcd-recipes demo` (with Debian's etcd while the
#                        default release is not built yet)
#   ./dev.sh test        install what is missing, build, run the whole test suite
#   ./dev.sh test-asan   the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   ./dev.sh test-tsan   the same under ThreadSanitizer
#   ./dev.sh bench [ARGS...]   build (Release) and run etcd-recipes-bench
#   ./dev.sh chaos [--minutes N] [--seed S] [ARGS...]  the nemesis campaign
#                              (tests/chaos): faults against a 3-member
#                              cluster while every recipe family runs, each
#                              with a checker; report in build/chaos-report.txt
#   ./dev.sh etcd [VERSION]    provide etcd + etcdctl of a pinned release (3.4,
#                              3.5, 3.6, 3.7 or an exact x.y.z from
#                              tools/etcd-releases/versions.txt; default: the
#                              default release) and print the etcd binary's path
#   ./dev.sh test-matrix [VERSION...] [-- CTEST_ARGS...]  the recipes, fault
#                              and python labels on every pinned release
#                              (or the ones named; --others: all but the
#                              default), a summary per release
# Idempotent: packages are installed only when missing; builds are incremental.
#
# Which etcd: every command but `etcd` exports ETCD_RECIPES_ETCD (the binary
# the test harness, the tests, the demo and the bench start), unless it is
# already set, as the default release from tools/etcd-releases/versions.txt,
# built once from the Go module proxy into ~/.cache/etcd-recipes.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libasio-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  etcd-server etcd-client openssl procps
  nftables # partitions between members (etcd/testing/private_network.h)
  file strace # cpack -G DEB runs file(1); tests/packaging traces the consumer build
  pybind11-dev python3-dev python3-pytest python3-etcd3
  libcpp-httplib-dev # the exporter's HTTP server (tools/etcd-recipes/http_server.h)
  python3-prometheus-client python3-yaml # tests/cli/exporter_test.sh parses its metrics, docs' alert rules
  chromium chromium-driver python3-selenium # tests/cli/dashboard_test.sh drives the dashboard's page
)

install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "==> installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian's etcd-server package may start a system etcd on :2379; the project
  # never uses it (every test and the demo start private members).
}

build() {  # $1 = preset, then optional targets (default: everything)
  local preset="$1"
  shift
  cmake --preset "$preset" >/dev/null
  if [ $# -gt 0 ]; then
    cmake --build --preset "$preset" --target "$@"
  else
    cmake --build --preset "$preset"
  fi
}

etcd_release() { tools/etcd-releases/provide.sh "$@"; }

# ETCD_RECIPES_ETCD (and the etcdctl beside it) of the default release,
# unless the caller chose one.
use_default_etcd() {
  if [ -z "${ETCD_RECIPES_ETCD:-}" ]; then
    ETCD_RECIPES_ETCD="$(etcd_release default)"
    export ETCD_RECIPES_ETCD
  fi
  echo "==> etcd: $ETCD_RECIPES_ETCD ($("$ETCD_RECIPES_ETCD" --version | sed -n 's/^etcd Version: //p'))"
}

# For the demo: the default release if it is built already, else Debian's
# etcd (installed with the packages) at once, rather than minutes of
# building the default release first; one line says which and why.
use_demo_etcd() {
  if [ -n "${ETCD_RECIPES_ETCD:-}" ]; then
    use_default_etcd
    return
  fi
  local cached
  if cached="$(etcd_release --cached default)"; then
    ETCD_RECIPES_ETCD="$cached"
    export ETCD_RECIPES_ETCD
    use_default_etcd
    return
  fi
  ETCD_RECIPES_ETCD=/usr/bin/etcd
  export ETCD_RECIPES_ETCD
  echo "==> etcd: Debian's $ETCD_RECIPES_ETCD ($("$ETCD_RECIPES_ETCD" --version | sed -n 's/^etcd Version: //p')) for the demo; the default release $(etcd_release --resolve default) is not built yet (./dev.sh etcd builds it once, in a few minutes; ./dev.sh test does too)"
}

# The labels whose tests talk to etcd through the library on each release:
# the recipes, the faults and the Python package. The CLI is a thin tool
# over the same library; its tests run with the whole suite on the default
# release. A summary per release at the end. $@: versions (default: every
# pinned release).
MATRIX_LABELS='recipes|fault|python'
# Six at a time on 2 cores: most of these tests wait on etcd and timers (at
# four the CPU sat two-thirds idle), and 3.5's 661 ran in 118 s at six
# against ~190 s at four, all passing. CTEST_ARGS may say otherwise (-j N).
MATRIX_JOBS=6
test_matrix() {
  local versions=("$@") v etcd log rc summary=() failed=0
  if [ ${#versions[@]} -eq 0 ] || [ "${versions[0]}" = --others ]; then
    # --others: every release but the default, whose whole suite ./dev.sh
    # test runs (CI runs both).
    local skip=""
    [ "${versions[0]:-}" = --others ] && skip="$(etcd_release --resolve default)"
    mapfile -t versions < <(etcd_release --list | awk -v skip="$skip" '$2 != skip { print $1 }')
  fi
  mkdir -p build/test-matrix
  rm -f build/test-matrix/*.log
  for v in "${versions[@]}"; do
    etcd="$(etcd_release "$v")"
    local exact
    exact="$(etcd_release --resolve "$v")"
    log="build/test-matrix/etcd-$exact.log"
    echo "==> etcd $exact ($etcd): ctest -L '$MATRIX_LABELS' (log: $log)"
    rc=0
    # ETCD_RECIPES_ETCDCTL is left to default to the etcdctl beside $etcd.
    env -u ETCD_RECIPES_ETCDCTL ETCD_RECIPES_ETCD="$etcd" \
      ctest --preset default -j "$MATRIX_JOBS" -L "$MATRIX_LABELS" --output-on-failure "${CTEST_ARGS[@]}" >"$log" 2>&1 || rc=$?
    local line
    line="$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)"
    [ -n "$line" ] || line="ctest exited $rc (see $log)"
    summary+=("etcd $exact: $line")
    if [ "$rc" -ne 0 ]; then
      failed=1
      while IFS= read -r l; do summary+=("    $l"); done < <(sed -n '/^The following tests FAILED:/,$p' "$log" | sed '1d' | grep -E '^\s+[0-9]+ - ')
    fi
    tail -3 "$log"
  done
  echo
  echo "==> test-matrix summary"
  printf '%s\n' "${summary[@]}"
  return "$failed"
}

cmd="${1:-test}"
shift || true
case "$cmd" in
  etcd) exec tools/etcd-releases/provide.sh "$@" ;;
  *) install_packages "${PACKAGES[@]}" ;;
esac
case "$cmd" in
  demo)
    # Only what the demo runs: the tests and the rest build with ./dev.sh test.
    build default etcd-recipes
    use_demo_etcd
    exec ./build/tools/etcd-recipes/etcd-recipes demo "$@"
    ;;
  test)
    build default
    use_default_etcd
    ctest --preset default "$@"
    ;;
  test-matrix)
    build default
    VERSIONS=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do VERSIONS+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    CTEST_ARGS=("$@")
    test_matrix "${VERSIONS[@]}"
    ;;
  test-asan)
    build asan
    use_default_etcd
    ctest --preset asan "$@"
    ;;
  test-tsan)
    build tsan
    use_default_etcd
    # Debian's gRPC, Abseil and protobuf are not built with TSan: their
    # internal synchronisation is invisible to it (tests/tsan.supp).
    TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp ${TSAN_OPTIONS:-}" ctest --preset tsan "$@"
    ;;
  chaos)
    cmake --preset default >/dev/null
    cmake --build --preset default --target etcd-recipes-chaos
    use_default_etcd
    exec ./build/tests/etcd-recipes-chaos --report build/chaos-report.txt "$@"
    ;;
  bench)
    cmake --preset release >/dev/null
    cmake --build --preset release --target etcd-recipes-bench
    use_default_etcd
    exec ./build-release/tools/bench/etcd-recipes-bench "$@"
    ;;
  *)
    echo "usage: $0 demo|test|test-matrix|test-asan|test-tsan|bench|chaos|etcd [args]" >&2
    exit 2
    ;;
esac
