import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_core_stub_matches_the_built_module():
    """python/etcd_recipes/_core.pyi is regenerated from the module's signatures: a
    binding changed without regenerating the stub fails here."""
    gen = os.path.join(HERE, "..", "tools", "gen_core_stub.py")
    stub = os.path.join(HERE, "..", "etcd_recipes", "_core.pyi")
    r = subprocess.run([sys.executable, gen, "--check", stub], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_core_stub_is_valid_python():
    import ast
    with open(os.path.join(HERE, "..", "etcd_recipes", "_core.pyi")) as f:
        ast.parse(f.read())
