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

Members are Debian's /usr/bin/etcd (3.4), each in its own process group, killed
when the cluster object goes away (or at close()/the end of ``with``) and when
the test process dies.
"""

from ._core import testing as _t

EtcdCluster = _t.EtcdCluster
FaultProxy = _t.FaultProxy
TestCerts = _t.TestCerts
make_test_certs = _t.make_test_certs

__all__ = ["EtcdCluster", "FaultProxy", "TestCerts", "make_test_certs"]
