"""The Python examples of docs/recipes/*.md, run against a private etcd: one
test per page, its ```python blocks run in order (docs/recipes/README.md).

Each block runs in a fresh module namespace with ``client`` bound to an
``etcd_recipes.Client`` whose keys live under a namespace of the block's own,
so blocks may use the same names without seeing each other's keys. A block
fails the test by raising, a failed ``assert`` included; the traceback names
the Markdown file and line.
"""

import importlib.util
import os
import pathlib
import sys

import pytest

import etcd_recipes
from etcd_recipes.testing import EtcdCluster, have_etcd

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_PAGES = pathlib.Path(os.environ.get("ETCD_RECIPES_DOC_PAGES", _ROOT / "docs" / "recipes"))


def _extractor():
    spec = importlib.util.spec_from_file_location("extract_examples", _ROOT / "tools" / "docs" / "extract_examples.py")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: its dataclass looks its own module up.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_extract = _extractor()
_pages = sorted(p for p in _PAGES.glob("*.md") if p.name != "README.md")


@pytest.fixture(scope="module")
def cluster():
    if not have_etcd():
        pytest.skip("no etcd to start (set ETCD_RECIPES_ETCD, or install etcd-server)")
    with EtcdCluster.start_single() as c:
        yield c


def test_there_are_pages():
    assert _pages, f"no pages in {_PAGES}"


@pytest.mark.parametrize("page", _pages, ids=[p.stem for p in _pages])
def test_page(cluster, page):
    blocks = _extract.blocks(str(page))
    # Every recipe page shows both languages (docs/recipes/README.md).
    assert any(b.lang == "cpp" for b in blocks), f"{page.name} has no C++ example"
    python = [b for b in blocks if b.lang == "python"]
    assert python, f"{page.name} has no Python example"
    for block in python:
        client = etcd_recipes.Client(cluster.endpoints, namespace=f"docs/{page.name}/{block.line}")
        try:
            # Blank lines in front, so that the traceback's line numbers are
            # the page's.
            source = "\n" * (block.line - 1) + "\n".join(block.code)
            code = compile(source, str(page), "exec")
            exec(code, {"__name__": f"docs_{page.stem}_{block.line}", "client": client})
        finally:
            client.close()
