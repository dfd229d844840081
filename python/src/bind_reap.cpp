// reap(): the bookkeeping keys a crashed process leaves (etcd/recipes/reaper.h),
// found under a prefix and removed where safe; its report as Python objects.
#include <chrono>
#include <string>

#include "common.h"
#include "etcd/recipes/inspect.h"
#include "etcd/recipes/reaper.h"

namespace etcd::python {

void bind_reap(py::module_& m) {
  using recipes::ReapedKey;
  using recipes::ReapReport;
  py::class_<ReapedKey>(m, "ReapedKey")
      .def_readonly("key", &ReapedKey::key)
      .def_readonly("recipe", &ReapedKey::recipe)
      .def_property_readonly("kind", [](const ReapedKey& k) { return std::string(recipes::inspect::kind_id(k.kind)); })
      .def_property_readonly("role", [](const ReapedKey& k) { return std::string(recipes::inspect::role_id(k.role)); })
      .def_readonly("mod_revision", &ReapedKey::mod_revision)
      .def_readonly("reaped", &ReapedKey::reaped)
      .def_readonly("kept_because", &ReapedKey::kept_because)
      .def("__repr__", [](const ReapedKey& k) {
        return "ReapedKey(" + k.key + ", " + (k.reaped ? std::string("reaped") : "kept: " + k.kept_because) + ")";
      });
  py::class_<ReapReport>(m, "ReapReport")
      .def_readonly("revision", &ReapReport::revision)
      .def_readonly("keys", &ReapReport::keys)
      .def_property_readonly("reaped", &ReapReport::reaped);
  m.def(
      "reap",
      [](Client client, std::string prefix, double idle, bool dry_run) {
        recipes::ReapOptions options;
        options.idle = to_duration(idle, "idle");
        options.dry_run = dry_run;
        return pending(recipes::reap(std::move(client), std::move(prefix), options));
      },
      py::arg("client"), py::arg("prefix"), py::kw_only(), py::arg("idle") = 600.0, py::arg("dry_run") = false);
}

}  // namespace etcd::python
