// etcd_recipes.PresenceLease: a self-healing lease (etcd/presence.h) with
// the keys it owns — created where absent, and after each lease loss
// re-created on the new lease where still free.
#include "common.h"
#include "etcd/presence.h"

namespace etcd::python {

namespace {

using PresenceKeys = std::vector<std::pair<std::string, std::string>>;

// A PresenceLease, the client it was made on and the keys it owns.
struct PyPresenceLease {
  Client client;
  std::shared_ptr<PresenceLease> lease;
  PresenceKeys keys;
};

py::dict presence_put_result(const PutIfAbsentResult& r) {
  py::dict d;
  py::list created, refreshed, taken;
  for (const auto& k : r.created) created.append(py::bytes(k));
  for (const auto& k : r.refreshed) refreshed.append(py::bytes(k));
  for (const auto& kv : r.taken) taken.append(py::bytes(kv.key));
  d["created"] = created;
  d["refreshed"] = refreshed;
  d["taken"] = taken;
  return d;
}

}  // namespace

void bind_presence(py::module_& m) {
  py::class_<PyPresenceLease, std::shared_ptr<PyPresenceLease>>(m, "PresenceLease")
      .def(py::init([](Client client, double ttl, PresenceKeys keys) {
             PresenceOptions o;
             o.ttl = std::chrono::duration_cast<std::chrono::seconds>(to_duration(ttl, "ttl"));
             if (!keys.empty()) o.restore = PresenceLease::restore_keys(client, keys);
             auto lease = PresenceLease::create(client, o);
             return make_releasing<PyPresenceLease>(
                 PyPresenceLease{std::move(client), std::move(lease), std::move(keys)});
           }),
           py::arg("client"), py::kw_only(), py::arg("ttl") = 10.0, py::arg("keys") = PresenceKeys())
      .def("start", [](PyPresenceLease& p) { return pending(p.lease->start()); })
      // The owned keys, created where absent under the current lease (one
      // Txn per 64 keys): {"created", "refreshed", "taken"}, keys as bytes.
      .def("put_keys",
           [](PyPresenceLease& p) {
             return pending(PresenceLease::put_if_absent(p.client, p.keys, p.lease->lease_id()),
                            [](const PutIfAbsentResult& r) -> py::object { return presence_put_result(r); });
           })
      .def("close", [](PyPresenceLease& p) { return pending(p.lease->close()); })
      .def_property_readonly("lease_id", [](const PyPresenceLease& p) { return p.lease->lease_id(); })
      .def_property_readonly("ttl", [](const PyPresenceLease& p) { return p.lease->ttl().count(); })
      .def_property_readonly("alive", [](const PyPresenceLease& p) { return p.lease->alive(); })
      .def_property_readonly("closed", [](const PyPresenceLease& p) { return p.lease->closed(); })
      .def_property_readonly("keys",
                             [](const PyPresenceLease& p) {
                               py::dict d;
                               for (const auto& [k, v] : p.keys) d[py::bytes(k)] = py::bytes(v);
                               return d;
                             })
      .def(
          "on_event",
          [](PyPresenceLease& p, py::object f) {
            return wrap(p.lease->on_event(listener<PresenceEvent, const Status&>(
                std::move(f), "etcd_recipes: PresenceLease.on_event listener",
                [](const py::object& cb, PresenceEvent e, const Status& why) {
                  cb(std::string(to_string(e)), why.ok() ? py::object(py::none()) : make_exception(why));
                })));
          },
          py::arg("listener"));
}

}  // namespace etcd::python
