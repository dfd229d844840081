"""Runs the Python examples of docs/recipes/*.md for ctest (docs.python_examples).

Exit 77, ctest's skip, when they cannot run here: pytest is not installed, or
the etcd_recipes module was not built (no pybind11, a sanitizer build).
"""
import sys

try:
    import pytest
except ImportError:
    print("pytest is not installed (python3-pytest): skipping the documentation's Python examples")
    sys.exit(77)
try:
    import etcd_recipes  # noqa: F401
except ModuleNotFoundError as e:
    # Only a package that is not there at all is a skip: one that is there
    # but fails to load is a failure.
    if e.name != "etcd_recipes":
        raise
    print("the etcd_recipes module is not built: skipping the documentation's Python examples")
    sys.exit(77)

sys.exit(pytest.main(sys.argv[1:]))
