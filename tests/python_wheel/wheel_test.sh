#!/usr/bin/env bash
# The Python package as Python users get it: `python -m build python` (an
# sdist carrying the C++ project, then a wheel from that sdist, each in an
# isolated environment with setuptools and pybind11 from PyPI) and
# `pip install ./python`; the wheel installed into a fresh venv runs the
# Python tests (python/tests) against a private etcd.
#   wheel_test.sh BUILD_DIR SOURCE_DIR PYTHON
# The module is built in BUILD_DIR (ETCD_RECIPES_BUILD_DIR, see
# python/setup.py), which the suite has built already: the packaging is what
# is tested here, not a second compile of the library. Exit 77 (a skip) when
# PyPI cannot be reached.
# shellcheck shell=bash
set -uo pipefail
BUILD=$1
SRC=$2
PYTHON=$3
WORK=$(mktemp -d /tmp/etcd-recipes-wheel.XXXXXX)
trap '[[ -n ${KEEP_WORK:-} ]] || rm -rf "$WORK"' EXIT
started=$SECONDS
step() { echo "==> $* ($((SECONDS - started)) s)"; }
die() {
  echo "FAIL: $*" >&2
  exit 1
}
unset PYTHONPATH PIP_INDEX_URL_OVERRIDE 2>/dev/null || true
export PIP_DISABLE_PIP_VERSION_CHECK=1

step "a venv with build, from PyPI"
"$PYTHON" -m venv "$WORK/tools" || die "python3 -m venv (python3-venv)"
if ! timeout 120 "$WORK/tools/bin/pip" install -q build >"$WORK/pip-build.log" 2>&1; then
  if grep -qiE "connection|resolve|network|timed out|Could not find a version" "$WORK/pip-build.log"; then
    echo "PyPI cannot be reached: skipping the wheel test ($(grep -iE "connection|resolve|network|timed out|Could not find" "$WORK/pip-build.log" | head -1))"
    exit 77
  fi
  cat "$WORK/pip-build.log"
  die "pip install build"
fi

step "python -m build python (sdist, then a wheel from the sdist, isolated)"
export ETCD_RECIPES_BUILD_DIR=$BUILD
if ! (cd "$WORK" && "$WORK/tools/bin/python" -m build --outdir "$WORK/dist" "$SRC/python") >"$WORK/build.log" 2>&1; then
  tail -40 "$WORK/build.log"
  die "python -m build"
fi
grep -q "Creating isolated environment\|isolated environment" "$WORK/build.log" || die "the build was not isolated"
sdist=$(ls "$WORK"/dist/*.tar.gz 2>/dev/null | head -1)
wheel=$(ls "$WORK"/dist/*.whl 2>/dev/null | head -1)
[[ -n $sdist && -n $wheel ]] || die "no sdist and wheel in dist/: $(ls "$WORK/dist")"
# (Listings in variables: grep -q ending a pipe early fails it under pipefail.)
sdist_files=$(tar tzf "$sdist")
grep -q "_project/src/client/client.cpp" <<<"$sdist_files" || die "the sdist does not carry the C++ project"
wheel_files=$("$PYTHON" -m zipfile -l "$wheel")
for f in etcd_recipes/__init__.py etcd_recipes/aio.py etcd_recipes/py.typed etcd_recipes/_core.pyi "etcd_recipes/_core.*\.so"; do
  grep -qE "^$f" <<<"$wheel_files" || die "the wheel lacks $f"
done
echo "    $(basename "$sdist"), $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KB)"

step "the wheel into a fresh venv"
# --system-site-packages: the system's pytest (python3-pytest) runs the tests.
"$PYTHON" -m venv --system-site-packages "$WORK/venv" || die "venv"
"$WORK/venv/bin/pip" install -q --no-index "$wheel" >"$WORK/install.log" 2>&1 || {
  cat "$WORK/install.log"
  die "pip install the wheel"
}
where=$(cd "$WORK" && "$WORK/venv/bin/python" -c 'import etcd_recipes, etcd_recipes.aio; print(etcd_recipes.__file__)')
[[ $where == "$WORK/venv/"* ]] || die "etcd_recipes was imported from $where, not the venv"

step "pip install ./python (isolated) into another venv"
"$PYTHON" -m venv "$WORK/venv2" || die "venv"
if ! "$WORK/venv2/bin/pip" install -q "$SRC/python" >"$WORK/pip-install.log" 2>&1; then
  tail -30 "$WORK/pip-install.log"
  die "pip install ./python"
fi
(cd "$WORK" && "$WORK/venv2/bin/python" -c 'import etcd_recipes.aio as aio; assert aio.DistributedWorkQueue.enqueue_all') ||
  die "the package pip installed does not import"

step "the Python tests against the installed wheel"
if ! (cd "$WORK" && "$WORK/venv/bin/python" "$SRC/python/tests/run_pytest.py" -q -p no:cacheprovider "$SRC/python/tests"); then
  die "pytest against the wheel"
fi
step "done"
