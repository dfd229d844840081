"""Runs pytest for ctest: exit 77 (ctest's skip) when pytest is not installed."""
import sys

try:
    import pytest
except ImportError:
    print("pytest is not installed (python3-pytest): skipping the Python tests")
    sys.exit(77)

sys.exit(pytest.main(sys.argv[1:]))
