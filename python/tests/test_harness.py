"""etcd_recipes.testing: ETCD_RECIPES_ETCD decides which etcd starts, and the
cluster reports the release it started."""
import os
import subprocess

from etcd_recipes import testing


def _reported(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("etcd Version: "))


def test_cluster_reports_the_release_it_started(cluster):
    assert cluster.binary == testing.default_etcd_binary()
    if os.environ.get("ETCD_RECIPES_ETCD"):
        assert cluster.binary == os.path.abspath(os.environ["ETCD_RECIPES_ETCD"])
    v = cluster.version
    assert str(v) == v.text == _reported(cluster.binary)
    assert v == testing.etcd_version(cluster.binary)
    assert v.at_least(3, 4) and not v.at_least(4, 0)
    assert f"{v.major}.{v.minor}.{v.patch}" == v.text.split("-")[0]


def test_etcd_recipes_etcd_decides_what_starts(tmp_path, monkeypatch):
    real = testing.default_etcd_binary()
    marker = tmp_path / "started"
    wrapper = tmp_path / "etcd"
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> '{marker}'\nexec '{real}' \"$@\"\n")
    wrapper.chmod(0o700)
    monkeypatch.setenv("ETCD_RECIPES_ETCD", str(wrapper))
    assert testing.default_etcd_binary() == str(wrapper)
    with testing.EtcdCluster.start() as c:
        assert c.binary == str(wrapper)
        assert c.version.text == _reported(real)
    assert "--name m0" in marker.read_text()
