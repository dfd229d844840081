// KeyspaceView and the streams (etcd/stream.h): the view, its events, and
// one stream class per event type (the view's, a raw watch's, the caches'),
// whose next() is a pending call the package consumes blocking or with
// asyncio (python/etcd_recipes/view.py).
#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cache_binding.h"
#include "common.h"
#include "etcd/recipes/keyspace_view.h"
#include "etcd/stream.h"
#include "recipe_binding.h"

namespace etcd::python {
namespace {

using recipes::KeyspaceEvent;
using recipes::KeyspaceView;
using recipes::KeyspaceViewOptions;
using recipes::RecipeOptions;

// "ADDED", "UPDATED", ...: the upper-case form of to_string(t).
std::string keyspace_event_type_name(KeyspaceEvent::Type t) {
  std::string s(to_string(t));
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

KeyspaceViewOptions::Start keyspace_view_start(const std::string& s) {
  using S = KeyspaceViewOptions::Start;
  if (s == "from_now") return S::kFromNow;
  if (s == "with_snapshot") return S::kWithSnapshot;
  if (s == "from_revision") return S::kFromRevision;
  throw_status(InvalidArgument("start must be 'from_now', 'with_snapshot' or 'from_revision' (got '" + s + "')"));
}

// A Stream<E> for Python: next() is a pending call giving the event, or None
// once the stream ended.
template <class E>
void bind_event_stream(py::module_& m, const char* name) {
  using S = Stream<E>;
  py::class_<S, std::shared_ptr<S>>(m, name)
      .def("next",
           [](S& s) {
             return pending(s.next(), [](std::optional<E>&& e) -> py::object {
               if (!e) return py::none();
               return py::cast(std::move(*e));
             });
           })
      .def(
          "close", [](S& s) { s.close(); }, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("buffered", [](const S& s) { return s.buffered(); })
      .def_property_readonly("overflows", [](const S& s) { return s.overflows(); });
}

template <class E>
std::shared_ptr<Stream<E>> stream_for_python(Stream<E> s) {
  return releasing(std::make_shared<Stream<E>>(std::move(s)));
}

}  // namespace

void bind_view(py::module_& m) {
  py::class_<KeyspaceEvent>(m, "KeyspaceEvent")
      .def_property_readonly("type", [](const KeyspaceEvent& e) { return keyspace_event_type_name(e.type); })
      .def_readonly("key", &KeyspaceEvent::key)
      .def_readonly("previous", &KeyspaceEvent::previous)
      .def_readonly("current", &KeyspaceEvent::current)
      .def_readonly("revision", &KeyspaceEvent::revision)
      .def_readonly("changes", &KeyspaceEvent::changes)
      .def_property_readonly("cause", [](const KeyspaceEvent& e) { return status_or_none(e.cause); })
      .def("__repr__", [](const KeyspaceEvent& e) {
        std::string out = std::string("KeyspaceEvent(") + keyspace_event_type_name(e.type);
        if (!e.key.empty()) out += ", " + e.key;
        if (e.type == KeyspaceEvent::Type::kReset) out += ", " + std::to_string(e.changes.size()) + " changes";
        return out + ", revision=" + std::to_string(e.revision) + ")";
      });

  bind_event_stream<KeyspaceEvent>(m, "KeyspaceEventStream");
  bind_event_stream<WatchResponse>(m, "WatchStream");
  bind_event_stream<recipes::ChildEvent<std::string>>(m, "ChildEventStream");
  bind_event_stream<recipes::NodeEvent<std::string>>(m, "NodeEventStream");

  py::class_<KeyspaceView, std::shared_ptr<KeyspaceView>> v(m, "KeyspaceView");
  v.def(py::init([](Client client, std::string key, const std::string& start, int64_t start_revision,
                    std::string range_end, int64_t page_size, const RecipeOptions& options) {
          KeyspaceViewOptions o;
          o.start = keyspace_view_start(start);
          o.start_revision = start_revision;
          o.range_end = std::move(range_end);
          o.page_size = page_size;
          o.recipe = options;
          return make_releasing<KeyspaceView>(std::move(client), std::move(key), std::move(o));
        }),
        py::arg("client"), py::arg("key"), py::kw_only(), py::arg("start") = "from_now", py::arg("start_revision") = 0,
        py::arg("range_end") = "", py::arg("page_size") = 1000, py::arg("options") = RecipeOptions())
      .def_property_readonly("key", [](const KeyspaceView& x) { return x.key(); })
      .def_property_readonly("range_end", [](const KeyspaceView& x) { return py::bytes(x.range_end()); })
      .def("wait_initialized", [](KeyspaceView& x) { return pending(x.wait_initialized()); })
      .def_property_readonly("initialized", [](const KeyspaceView& x) { return x.initialized(); })
      .def_property_readonly("revision", [](const KeyspaceView& x) { return x.revision(); })
      .def_property_readonly("resyncs", [](const KeyspaceView& x) { return x.resyncs(); })
      .def("__len__", [](const KeyspaceView& x) { return x.size(); })
      .def(
          "get", [](const KeyspaceView& x, const std::string& key) { return x.get(key); }, py::arg("key"))
      .def("snapshot",
           [](const KeyspaceView& x) {
             auto snap = x.snapshot();
             return py::make_tuple(py::cast(std::move(snap.kvs)), snap.revision);
           })
      .def("resync", [](KeyspaceView& x) { x.resync(); })
      .def(
          "on_event",
          [](KeyspaceView& x, py::object f) {
            return wrap(x.on_event(
                listener<const KeyspaceEvent&>(std::move(f), "etcd_recipes: KeyspaceView.on_event listener",
                                               [](const py::object& cb, const KeyspaceEvent& e) { cb(e); })));
          },
          py::arg("listener"))
      .def(
          "events",
          [](KeyspaceView& x, size_t capacity) { return stream_for_python(x.events({.capacity = capacity})); },
          py::arg("capacity") = 1024);
  def_recipe(v);

  // The other sources' streams: a raw watch, the bytes caches.
  m.def(
      "watch_stream",
      [](Client& c, std::string key, bool prefix, std::string range_end, int64_t start_revision, bool prev_kv,
         size_t capacity) {
        WatchOptions o;
        o.prefix = prefix;
        o.range_end = std::move(range_end);
        o.start_revision = start_revision;
        o.prev_kv = prev_kv;
        return stream_for_python(watch_stream(c, std::move(key), std::move(o), {.capacity = capacity}));
      },
      py::arg("client"), py::arg("key"), py::kw_only(), py::arg("prefix") = false, py::arg("range_end") = "",
      py::arg("start_revision") = 0, py::arg("prev_kv") = false, py::arg("capacity") = 1024);
  m.def(
      "path_children_cache_events",
      [](recipes::PathChildrenCache& c, size_t capacity) {
        return stream_for_python(c.events({.capacity = capacity}));
      },
      py::arg("cache"), py::arg("capacity") = 1024);
  m.def(
      "node_cache_events",
      [](recipes::NodeCache<std::string>& c, size_t capacity) {
        return stream_for_python(c.events({.capacity = capacity}));
      },
      py::arg("cache"), py::arg("capacity") = 1024);
}

}  // namespace etcd::python
