import itertools

import pytest

import etcd_recipes
from etcd_recipes.testing import EtcdCluster, have_etcd

_names = itertools.count()


@pytest.fixture(scope="session")
def cluster():
    """One private etcd member for the whole run (each test uses its own names)."""
    if not have_etcd():
        pytest.skip("no etcd to start (set ETCD_RECIPES_ETCD, or install etcd-server)")
    with EtcdCluster.start_single() as c:
        yield c


@pytest.fixture
def client(cluster):
    c = etcd_recipes.Client(cluster.endpoints)
    yield c
    c.close()


@pytest.fixture
def name(request):
    """A key prefix no other test uses."""
    return f"/pytest/{request.node.name}-{next(_names)}"
