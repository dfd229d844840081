"""etcd_recipes.testing: test your code against real etcd.

    from etcd_recipes.testing import EtcdCluster, FaultProxy

    with EtcdCluster.start_single() as cluster:          # a private member on loopback
        client = etcd_recipes.Client(cluster.endpoints)
        ...
    cluster = EtcdCluster.start_three()                   # 3 members
    leader = cluster.wait_for_leader()
    cluster.kill(leader); cluster.restart(leader); cluster.pause(i); cluster.resume(i)
    proxy = FaultProxy.start(cluster.endpoint(0))         # point a client at proxy.endpoint
    proxy.blackhole(); proxy.set_delay(0.2); proxy.cut(); proxy.restore()

Members run the etcd binary in ``$ETCD_RECIPES_ETCD`` (``./dev.sh etcd 3.6``
prints one), else ``etcd`` on PATH (Debian 12's etcd-server is 3.4), or
``EtcdCluster.start(etcd_binary=PATH)``; ``cluster.version`` is the release it
started (``cluster.version.at_least(3, 6)``). Each member runs in its own
process group, killed when the cluster object goes away (or at close()/the end
of ``with``) and when the test process dies.
"""

from ._core import testing as _t

EtcdCluster = _t.EtcdCluster
EtcdVersion = _t.EtcdVersion
FaultProxy = _t.FaultProxy
TestCerts = _t.TestCerts
make_test_certs = _t.make_test_certs
default_etcd_binary = _t.default_etcd_binary
etcdctl_binary = _t.etcdctl_binary
etcd_version = _t.etcd_version


def have_etcd():
    """Whether the harness has an etcd to start (see default_etcd_binary)."""
    try:
        default_etcd_binary()
    except RuntimeError:
        return False
    return True


__all__ = [
    "EtcdCluster",
    "EtcdVersion",
    "FaultProxy",
    "TestCerts",
    "make_test_certs",
    "default_etcd_binary",
    "etcdctl_binary",
    "etcd_version",
    "have_etcd",
]
