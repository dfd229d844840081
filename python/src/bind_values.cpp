// SharedValue (bytes, and TypedSharedValue over a Python codec) and
// GroupMember. The package picks TypedSharedValue when given codec=.
#include <map>
#include <string>

#include "etcd/recipes/group_member.h"
#include "etcd/recipes/shared_value.h"
#include "py_codec.h"
#include "recipe_binding.h"

namespace etcd::python {

namespace {

using namespace etcd::recipes;

using BytesSharedValue = SharedValue<std::string>;
using PySharedValue = SharedValue<PyValue, PyCodec>;

const char* group_event_name(GroupEvent::Type t) {
  switch (t) {
    case GroupEvent::Type::kJoined:
      return "JOINED";
    case GroupEvent::Type::kUpdated:
      return "UPDATED";
    case GroupEvent::Type::kLeft:
      return "LEFT";
  }
  return "UNKNOWN";
}

// VersionedValue and SharedValueEvent of value type V under the given
// names; `value(v)` is the value for Python (GIL held; may raise).
template <class V, class Value>
void bind_shared_value_types(py::module_& m, const char* versioned_name, const char* event_name, Value value) {
  using VV = VersionedValue<V>;
  py::class_<VV>(m, versioned_name)
      .def_property_readonly("value", value)
      .def_property_readonly("error", [](const VV& v) { return status_or_none(v.error); })
      .def_property_readonly("decoded", [](const VV& v) { return v.error.ok(); })
      .def_readonly("exists", &VV::exists)
      .def_readonly("mod_revision", &VV::mod_revision)
      .def_readonly("version", &VV::version)
      .def_readonly("create_revision", &VV::create_revision)
      .def_readonly("revision", &VV::revision)
      .def("__repr__", [versioned_name, value](const VV& v) {
        std::string shown = !v.exists      ? "<absent>"
                            : v.error.ok() ? py::repr(value(v)).template cast<std::string>()
                                           : std::string("<undecodable>");
        return std::string(versioned_name) + "(value=" + shown + ", mod_revision=" + std::to_string(v.mod_revision) +
               ")";
      });
  using E = SharedValueEvent<V>;
  py::class_<E>(m, event_name)
      .def_readonly("previous", &E::previous)
      .def_readonly("current", &E::current)
      .def_readonly("resync", &E::resync);
}

// key, get, set, compare_and_set, try_set, on_change, wait_initialized, ...
template <class Cls, class ToValue>
Cls& def_shared_value(Cls& cls, ToValue to) {
  using S = typename Cls::type;
  using Event = typename S::Event;
  cls.def_property_readonly("key", [](const S& s) { return s.key(); })
      .def("get", [](const S& s) { return s.get(); })
      .def(
          "set", [to](S& s, py::object v) { return pending(s.set(to(std::move(v)))); }, py::arg("value"))
      .def(
          "compare_and_set",
          [to](S& s, int64_t expected, py::object v) { return pending(s.compare_and_set(expected, to(std::move(v)))); },
          py::arg("expected_revision"), py::arg("value"))
      .def(
          "try_set", [to](S& s, py::object v) { return pending(s.try_set(to(std::move(v)))); }, py::arg("value"))
      .def("wait_initialized", [](S& s) { return pending(s.wait_initialized()); })
      .def_property_readonly("initialized", [](const S& s) { return s.initialized(); })
      .def_property_readonly("resyncs", [](const S& s) { return s.resyncs(); })
      .def(
          "on_change",
          [](S& s, py::object f) {
            return wrap(s.on_change(listener<const Event&>(std::move(f), "etcd_recipes: SharedValue.on_change listener",
                                                           [](const py::object& cb, const Event& e) { cb(e); })));
          },
          py::arg("listener"));
  return def_recipe(cls);
}

}  // namespace

void bind_values(py::module_& m) {
  // --- shared value
  bind_shared_value_types<std::string>(m, "VersionedValue", "SharedValueEvent",
                                       [](const VersionedValue<std::string>& v) -> py::object {
                                         if (!v.value) return py::none();
                                         return py::bytes(*v.value);
                                       });
  bind_shared_value_types<PyValue>(m, "TypedVersionedValue", "TypedSharedValueEvent",
                                   [](const VersionedValue<PyValue>& v) -> py::object {
                                     if (!v.error.ok()) throw_status(v.error);
                                     return v.value ? to_object(*v.value) : py::object(py::none());
                                   });

  py::class_<BytesSharedValue, std::shared_ptr<BytesSharedValue>> sv(m, "SharedValue");
  sv.def(py::init([](Client client, std::string key, const RecipeOptions& options) {
           return make_releasing<BytesSharedValue>(std::move(client), std::move(key), options);
         }),
         py::arg("client"), py::arg("key"), ETCD_PY_RECIPE_KWARGS);
  def_shared_value(sv, [](py::object v) { return v.cast<std::string>(); });

  py::class_<PySharedValue, std::shared_ptr<PySharedValue>> tsv(m, "TypedSharedValue");
  tsv.def(py::init([](Client client, std::string key, py::object codec, const RecipeOptions& options) {
            return make_releasing<PySharedValue>(std::move(client), std::move(key), options, PyCodec(std::move(codec)));
          }),
          py::arg("client"), py::arg("key"), py::arg("codec"), ETCD_PY_RECIPE_KWARGS);
  def_shared_value(tsv, [](py::object v) { return to_value(std::move(v)); });

  // --- group membership
  py::class_<GroupEvent>(m, "GroupEvent")
      .def_property_readonly("type", [](const GroupEvent& e) { return group_event_name(e.type); })
      .def_readonly("id", &GroupEvent::id)
      .def_property_readonly("payload", [](const GroupEvent& e) { return py::bytes(e.payload); })
      .def_property_readonly("previous_payload", [](const GroupEvent& e) { return py::bytes(e.previous_payload); })
      .def_readonly("revision", &GroupEvent::revision)
      .def_readonly("initial", &GroupEvent::initial)
      .def_readonly("resync", &GroupEvent::resync)
      .def("__repr__", [](const GroupEvent& e) {
        return std::string("GroupEvent(") + group_event_name(e.type) + ", " + e.id + ")";
      });

  py::class_<GroupMember, std::shared_ptr<GroupMember>> gm(m, "GroupMember");
  gm.def(py::init(
             [](Client client, std::string group, std::string id, std::string payload, const RecipeOptions& options) {
               return make_releasing<GroupMember>(std::move(client), std::move(group), std::move(id),
                                                  std::move(payload), options);
             }),
         py::arg("client"), py::arg("group"), py::arg("id"), py::arg("payload"), ETCD_PY_RECIPE_KWARGS)
      .def_property_readonly("group", [](const GroupMember& g) { return g.group(); })
      .def_property_readonly("id", [](const GroupMember& g) { return g.id(); })
      .def_property_readonly("member_key", [](const GroupMember& g) { return g.member_key(); })
      .def_property_readonly("payload", [](const GroupMember& g) { return py::bytes(g.payload()); })
      .def("join", [](GroupMember& g) { return pending(g.join()); })
      .def(
          "set_payload", [](GroupMember& g, std::string p) { return pending(g.set_payload(std::move(p))); },
          py::arg("payload"))
      .def("leave", [](GroupMember& g) { return pending(g.leave()); })
      .def_property_readonly("is_member", [](const GroupMember& g) { return g.is_member(); })
      .def_property_readonly("lease", [](const GroupMember& g) { return g.lease(); })
      .def("members",
           [](const GroupMember& g) {
             py::dict out;
             for (const auto& [id, payload] : g.members()) out[py::str(id)] = py::bytes(payload);
             return out;
           })
      .def_property_readonly("revision", [](const GroupMember& g) { return g.revision(); })
      .def("wait_initialized", [](GroupMember& g) { return pending(g.wait_initialized()); })
      .def_property_readonly("resyncs", [](const GroupMember& g) { return g.resyncs(); })
      .def(
          "on_change",
          [](GroupMember& g, py::object f) {
            return wrap(
                g.on_change(listener<const GroupEvent&>(std::move(f), "etcd_recipes: GroupMember.on_change listener",
                                                        [](const py::object& cb, const GroupEvent& e) { cb(e); })));
          },
          py::arg("listener"))
      .def(
          "on_lost",
          [](GroupMember& g, py::object f) {
            return wrap(g.on_lost(
                listener<const Status&>(std::move(f), "etcd_recipes: GroupMember.on_lost listener",
                                        [](const py::object& cb, const Status& s) { cb(make_exception(s)); })));
          },
          py::arg("listener"))
      .def(
          "on_restored",
          [](GroupMember& g, py::object f) {
            return wrap(g.on_restored(listener<>(std::move(f), "etcd_recipes: GroupMember.on_restored listener",
                                                 [](const py::object& cb) { cb(); })));
          },
          py::arg("listener"));
  def_recipe(gm);
}

}  // namespace etcd::python
