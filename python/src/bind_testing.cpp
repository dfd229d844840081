// The test harness (etcd_recipes.testing): real etcd members on loopback
// and the TCP fault proxy. Everything that waits for processes runs
// without the GIL.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "etcd/testing/certs.h"
#include "etcd/testing/etcd_cluster.h"
#include "etcd/testing/fault_proxy.h"

namespace etcd::python {
namespace {

using etcd::testing::EtcdCluster;
using etcd::testing::EtcdClusterOptions;
using etcd::testing::EtcdVersion;
using etcd::testing::FaultProxy;
using etcd::testing::TestCerts;

using ClusterPtr = std::unique_ptr<EtcdCluster, ReleasingDeleter<EtcdCluster>>;
using ProxyPtr = std::unique_ptr<FaultProxy, ReleasingDeleter<FaultProxy>>;

std::chrono::milliseconds ms(double seconds) { return to_duration(seconds, "timeout"); }

}  // namespace

void bind_testing(py::module_& m) {
  py::module_ t = m.def_submodule("testing", "etcd-recipes' test harness");

  py::class_<TestCerts>(t, "TestCerts")
      .def_property_readonly("dir", [](const TestCerts& c) { return c.dir.string(); })
      .def_property_readonly("ca_cert", [](const TestCerts& c) { return c.ca_cert.string(); })
      .def_property_readonly("server_cert", [](const TestCerts& c) { return c.server_cert.string(); })
      .def_property_readonly("server_key", [](const TestCerts& c) { return c.server_key.string(); })
      .def_property_readonly("client_cert", [](const TestCerts& c) { return c.client_cert.string(); })
      .def_property_readonly("client_key", [](const TestCerts& c) { return c.client_key.string(); })
      .def_property_readonly("other_ca_cert", [](const TestCerts& c) { return c.other_ca_cert.string(); });
  t.def(
      "make_test_certs",
      [](const std::string& dir, const std::string& cn) {
        py::gil_scoped_release nogil;
        return etcd::testing::make_test_certs(dir, cn);
      },
      py::arg("dir"), py::arg("client_common_name") = "root");

  py::class_<EtcdVersion>(t, "EtcdVersion", "An etcd release as `etcd --version` reports it")
      .def_readonly("major", &EtcdVersion::major)
      .def_readonly("minor", &EtcdVersion::minor)
      .def_readonly("patch", &EtcdVersion::patch)
      .def_readonly("text", &EtcdVersion::text)
      .def("at_least", &EtcdVersion::at_least, py::arg("major"), py::arg("minor"), py::arg("patch") = 0)
      .def("__str__", [](const EtcdVersion& v) { return v.text; })
      .def("__repr__", [](const EtcdVersion& v) { return "EtcdVersion('" + v.text + "')"; })
      .def("__eq__", [](const EtcdVersion& a, const EtcdVersion& b) { return a == b; })
      .def("__lt__", [](const EtcdVersion& a, const EtcdVersion& b) { return a < b; })
      .def("__le__", [](const EtcdVersion& a, const EtcdVersion& b) { return a <= b; })
      .def("__gt__", [](const EtcdVersion& a, const EtcdVersion& b) { return a > b; })
      .def("__ge__", [](const EtcdVersion& a, const EtcdVersion& b) { return a >= b; })
      .def("__hash__", [](const EtcdVersion& v) { return py::hash(py::make_tuple(v.major, v.minor, v.patch)); });
  t.def("default_etcd_binary", &etcd::testing::default_etcd_binary,
        "The etcd the harness starts: $ETCD_RECIPES_ETCD, else etcd on PATH; raises RuntimeError if there is none");
  t.def("etcdctl_binary", py::overload_cast<const std::string&>(&etcd::testing::etcdctl_binary),
        py::arg("etcd_binary") = "",
        "$ETCD_RECIPES_ETCDCTL, else the etcdctl next to the etcd binary, else etcdctl on PATH; '' if none");
  t.def(
      "etcd_version",
      [](const std::string& binary) {
        py::gil_scoped_release nogil;
        return etcd::testing::etcd_version(binary);
      },
      py::arg("binary"), "What `BINARY --version` reports (asked once per binary)");

  py::class_<EtcdCluster, ClusterPtr>(t, "EtcdCluster")
      .def_static(
          "start",
          [](int members, double heartbeat, double election_timeout, std::string etcd_binary,
             std::vector<std::string> extra_args, std::optional<TestCerts> tls, bool client_cert_auth,
             double start_timeout) {
            EtcdClusterOptions o;
            o.members = members;
            o.heartbeat = ms(heartbeat);
            o.election_timeout = ms(election_timeout);
            o.etcd_binary = std::move(etcd_binary);
            o.extra_args = std::move(extra_args);
            o.tls = std::move(tls);
            o.client_cert_auth = client_cert_auth;
            o.start_timeout = std::chrono::duration_cast<std::chrono::seconds>(ms(start_timeout));
            py::gil_scoped_release nogil;
            return ClusterPtr(EtcdCluster::start(std::move(o)).release());
          },
          py::kw_only(), py::arg("members") = 1, py::arg("heartbeat") = 0.025, py::arg("election_timeout") = 0.25,
          py::arg("etcd_binary") = "", py::arg("extra_args") = std::vector<std::string>(),
          py::arg("tls") = py::none(), py::arg("client_cert_auth") = false, py::arg("start_timeout") = 30.0)
      .def_static("start_single",
                  [] {
                    py::gil_scoped_release nogil;
                    return ClusterPtr(EtcdCluster::start_single().release());
                  })
      .def_static("start_three",
                  [] {
                    py::gil_scoped_release nogil;
                    return ClusterPtr(EtcdCluster::start_three().release());
                  })
      .def_property_readonly("size", &EtcdCluster::size)
      .def_property_readonly("binary", &EtcdCluster::binary)
      .def_property_readonly("version", &EtcdCluster::version)
      .def_property_readonly("etcdctl", &EtcdCluster::etcdctl)
      .def_property_readonly("tls", &EtcdCluster::tls)
      .def_property_readonly("endpoints", &EtcdCluster::endpoints)
      .def("endpoint", &EtcdCluster::endpoint, py::arg("i"))
      .def_property_readonly("endpoints_csv", &EtcdCluster::endpoints_csv)
      .def_property_readonly("client_urls", &EtcdCluster::client_urls)
      .def("client_port", &EtcdCluster::client_port, py::arg("i"))
      .def("stop", &EtcdCluster::stop, py::arg("i"), py::call_guard<py::gil_scoped_release>())
      .def("kill", &EtcdCluster::kill, py::arg("i"), py::call_guard<py::gil_scoped_release>())
      .def("pause", &EtcdCluster::pause, py::arg("i"), py::call_guard<py::gil_scoped_release>())
      .def("resume", &EtcdCluster::resume, py::arg("i"), py::call_guard<py::gil_scoped_release>())
      .def("restart", &EtcdCluster::restart, py::arg("i"), py::call_guard<py::gil_scoped_release>())
      .def("is_running", &EtcdCluster::is_running, py::arg("i"))
      .def("is_paused", &EtcdCluster::is_paused, py::arg("i"))
      .def("pid", &EtcdCluster::pid, py::arg("i"))
      .def(
          "healthy", [](const EtcdCluster& c, int i, double timeout) {
            auto d = ms(timeout);
            py::gil_scoped_release nogil;
            return c.healthy(i, d);
          },
          py::arg("i"), py::arg("timeout") = 1.0)
      .def(
          "leader", [](const EtcdCluster& c, double timeout) {
            auto d = ms(timeout);
            py::gil_scoped_release nogil;
            return c.leader(d);
          },
          py::arg("timeout") = 1.0)
      .def(
          "wait_for_leader", [](const EtcdCluster& c, double timeout) {
            auto d = ms(timeout);
            py::gil_scoped_release nogil;
            return c.wait_for_leader(d);
          },
          py::arg("timeout") = 10.0)
      .def(
          "wait_healthy", [](const EtcdCluster& c, double timeout) {
            auto d = ms(timeout);
            py::gil_scoped_release nogil;
            c.wait_healthy(d);
          },
          py::arg("timeout") = 10.0)
      .def_property_readonly("dir", [](const EtcdCluster& c) { return c.dir().string(); })
      .def(
          "log_tail", [](const EtcdCluster& c, int i, int lines) { return c.log_tail(i, lines); }, py::arg("i"),
          py::arg("lines") = 40)
      .def("mark_failed", &EtcdCluster::mark_failed)
      // The members die with the object; close() (and leaving `with`) kills
      // them now, without waiting for Python to drop the last reference.
      .def("close",
           [](EtcdCluster& c) {
             py::gil_scoped_release nogil;
             for (int i = 0; i < c.size(); ++i) c.kill(i);
           })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](EtcdCluster& c, py::args) {
        py::gil_scoped_release nogil;
        for (int i = 0; i < c.size(); ++i) c.kill(i);
      });

  py::class_<FaultProxy, ProxyPtr>(t, "FaultProxy")
      .def_static(
          "start",
          [](std::string target) {
            py::gil_scoped_release nogil;
            return ProxyPtr(FaultProxy::start(std::move(target)).release());
          },
          py::arg("target"))
      .def_property_readonly("endpoint", &FaultProxy::endpoint)
      .def_property_readonly("port", &FaultProxy::port)
      .def_property_readonly("target", &FaultProxy::target)
      .def("pass_", &FaultProxy::pass, py::call_guard<py::gil_scoped_release>())
      .def(
          "set_delay", [](FaultProxy& p, double seconds) {
            auto d = ms(seconds);
            py::gil_scoped_release nogil;
            p.set_delay(d);
          },
          py::arg("seconds"))
      .def("blackhole", &FaultProxy::blackhole, py::call_guard<py::gil_scoped_release>())
      .def("blackhole_then_reset", &FaultProxy::blackhole_then_reset, py::call_guard<py::gil_scoped_release>())
      .def("reset_all", &FaultProxy::reset_all, py::call_guard<py::gil_scoped_release>())
      .def("cut", &FaultProxy::cut, py::call_guard<py::gil_scoped_release>())
      .def("restore", &FaultProxy::restore, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("connections", &FaultProxy::connections)
      .def_property_readonly("bytes_forwarded", &FaultProxy::bytes_forwarded)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](FaultProxy& p, py::args) {
        py::gil_scoped_release nogil;
        p.cut();
      });
}

}  // namespace etcd::python
