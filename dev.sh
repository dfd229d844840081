#!/usr/bin/env bash
# One entry point for newcomers and CI:
#   ./dev.sh demo        install what is missing, build, run `etcd-recipes demo`
#   ./dev.sh test        install what is missing, build, run the whole test suite
#   ./dev.sh test-asan   the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   ./dev.sh test-tsan   the same under ThreadSanitizer
#   ./dev.sh bench [ARGS...]   build (Release) and run etcd-recipes-bench
# Idempotent: packages are installed only when missing; builds are incremental.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libasio-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  etcd-server etcd-client openssl procps
  file strace # cpack -G DEB runs file(1); tests/packaging traces the consumer build
  pybind11-dev python3-dev python3-pytest python3-etcd3
)
# Only the benchmark needs these: etcd's own Go client, measured side by side.
BENCH_PACKAGES=(golang-go golang-etcd-server-dev)

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

build() {  # $1 = preset
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1"
}

cmd="${1:-test}"
shift || true
if [ "$cmd" = bench ]; then
  install_packages "${PACKAGES[@]}" "${BENCH_PACKAGES[@]}"
else
  install_packages "${PACKAGES[@]}"
fi
case "$cmd" in
  demo)
    build default
    exec ./build/tools/etcd-recipes/etcd-recipes demo "$@"
    ;;
  test)
    build default
    ctest --preset default "$@"
    ;;
  test-asan)
    build asan
    ctest --preset asan "$@"
    ;;
  test-tsan)
    build tsan
    # Debian's gRPC, Abseil and protobuf are not built with TSan: their
    # internal synchronisation is invisible to it (tests/tsan.supp).
    TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp ${TSAN_OPTIONS:-}" ctest --preset tsan "$@"
    ;;
  bench)
    cmake --preset release >/dev/null
    cmake --build --preset release --target etcd-recipes-bench
    exec ./build-release/tools/bench/etcd-recipes-bench "$@"
    ;;
  *)
    echo "usage: $0 demo|test|test-asan|test-tsan|bench [args]" >&2
    exit 2
    ;;
esac
