// What the bindings of the caches share: PathChildrenCache and NodeCache
// exist twice in Python, over bytes (values as stored) and over a Python
// codec (TypedPathChildrenCache, TypedNodeCache: values decoded), with the
// same surface. The node and event classes are bound once per value type.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "etcd/recipes/node_cache.h"
#include "etcd/recipes/path_children_cache.h"
#include "recipe_binding.h"

namespace etcd::python {

template <class V>
const char* child_event_name(typename recipes::ChildEvent<V>::Type t) {
  using T = typename recipes::ChildEvent<V>::Type;
  switch (t) {
    case T::kAdded:
      return "ADDED";
    case T::kUpdated:
      return "UPDATED";
    case T::kRemoved:
      return "REMOVED";
    case T::kInitialized:
      return "INITIALIZED";
    case T::kReset:
      return "RESET";
  }
  return "UNKNOWN";
}

template <class V>
const char* node_event_name(typename recipes::NodeEvent<V>::Type t) {
  using T = typename recipes::NodeEvent<V>::Type;
  switch (t) {
    case T::kInitialized:
      return "INITIALIZED";
    case T::kCreated:
      return "CREATED";
    case T::kUpdated:
      return "UPDATED";
    case T::kDeleted:
      return "DELETED";
  }
  return "UNKNOWN";
}

inline recipes::PathChildrenCacheOptions::StartMode start_mode(const std::string& s) {
  using M = recipes::PathChildrenCacheOptions::StartMode;
  if (s == "normal") return M::kNormal;
  if (s == "build_initial_cache") return M::kBuildInitialCache;
  if (s == "post_initialized_event") return M::kPostInitializedEvent;
  throw_status(InvalidArgument("start_mode must be 'normal', 'build_initial_cache' or 'post_initialized_event' (got '" +
                               s + "')"));
}

inline recipes::PathChildrenCacheOptions children_cache_options(const std::string& mode, bool subtree,
                                                                int64_t page_size,
                                                                const recipes::RecipeOptions& options) {
  recipes::PathChildrenCacheOptions o;
  o.start_mode = start_mode(mode);
  o.scope = subtree ? recipes::PathChildrenCacheOptions::Scope::kSubtree
                    : recipes::PathChildrenCacheOptions::Scope::kDirectChildren;
  o.page_size = page_size;
  o.recipe = options;
  return o;
}

// CachedNode, ChildEvent and NodeEvent of value type V under the given
// names. `value(node)` is the node's value for Python (GIL held); it may
// raise (a typed node whose value did not decode raises its DecodeFailed).
template <class V, class Value>
void bind_cache_types(py::module_& m, const char* node_name, const char* child_event, const char* node_event,
                      Value value) {
  using Node = recipes::CachedNode<V>;
  py::class_<Node>(m, node_name)
      .def_readonly("key", &Node::key)
      .def_readonly("name", &Node::name)
      .def_property_readonly("value", value)
      // None, or the DecodeFailed of a value the codec could not decode
      // (always None in a bytes cache).
      .def_property_readonly("error", [](const Node& n) { return status_or_none(n.error); })
      .def_property_readonly("decoded", [](const Node& n) { return n.error.ok(); })
      .def_readonly("create_revision", &Node::create_revision)
      .def_readonly("mod_revision", &Node::mod_revision)
      .def_readonly("version", &Node::version)
      .def_readonly("lease", &Node::lease)
      .def("__repr__", [node_name, value](const Node& n) {
        std::string v = n.error.ok() ? py::repr(value(n)).template cast<std::string>() : std::string("<undecodable>");
        return std::string(node_name) + "(name=" + n.name + ", value=" + v +
               ", mod_revision=" + std::to_string(n.mod_revision) + ")";
      });

  using CE = recipes::ChildEvent<V>;
  py::class_<CE>(m, child_event)
      .def_property_readonly("type", [](const CE& e) { return child_event_name<V>(e.type); })
      .def_readonly("key", &CE::key)
      .def_readonly("name", &CE::name)
      .def_readonly("previous", &CE::previous)
      .def_readonly("current", &CE::current)
      .def_readonly("revision", &CE::revision)
      .def_readonly("resync", &CE::resync)
      .def("__repr__", [child_event](const CE& e) {
        return std::string(child_event) + "(" + child_event_name<V>(e.type) + ", " + e.name + ")";
      });

  using NE = recipes::NodeEvent<V>;
  py::class_<NE>(m, node_event)
      .def_property_readonly("type", [](const NE& e) { return node_event_name<V>(e.type); })
      .def_readonly("previous", &NE::previous)
      .def_readonly("current", &NE::current)
      .def_readonly("revision", &NE::revision)
      .def_readonly("resync", &NE::resync);
}

// The caches' common surface.
template <class Cls>
Cls& def_cache(Cls& cls) {
  using T = typename Cls::type;
  cls.def("wait_initialized", [](T& c) { return pending(c.wait_initialized()); })
      .def_property_readonly("initialized", [](const T& c) { return c.initialized(); })
      .def_property_readonly("revision", [](const T& c) { return c.revision(); })
      .def_property_readonly("resyncs", [](const T& c) { return c.resyncs(); })
      .def("__len__", [](const T& c) { return c.size(); });
  return def_recipe(cls);
}

// path, snapshot, get, on_event (PathChildrenCache, TypedPathChildrenCache).
template <class Cls>
Cls& def_children_cache(Cls& cls) {
  using C = typename Cls::type;
  using Event = typename C::Event;
  cls.def_property_readonly("path", &C::path)
      .def("snapshot",
           [](const C& c) {
             auto snap = c.snapshot();
             py::dict nodes;
             for (auto& n : snap.nodes) {
               py::str key(n.name);  // before n is moved from
               nodes[key] = py::cast(std::move(n));
             }
             return py::make_tuple(nodes, snap.revision);
           })
      .def(
          "get", [](const C& c, const std::string& name) { return c.get(name); }, py::arg("name"))
      .def(
          "on_event",
          [](C& c, py::object f) {
            return wrap(
                c.on_event(listener<const Event&>(std::move(f), "etcd_recipes: PathChildrenCache.on_event listener",
                                                  [](const py::object& cb, const Event& e) { cb(e); })));
          },
          py::arg("listener"));
  return def_cache(cls);
}

// key, current, exists, on_change (NodeCache, TypedNodeCache).
template <class Cls>
Cls& def_node_cache(Cls& cls) {
  using C = typename Cls::type;
  using Event = typename C::Event;
  cls.def_property_readonly("key", &C::key)
      .def_property_readonly("current", &C::current)
      .def_property_readonly("exists", &C::exists)
      .def(
          "on_change",
          [](C& c, py::object f) {
            return wrap(c.on_change(listener<const Event&>(std::move(f), "etcd_recipes: NodeCache.on_change listener",
                                                           [](const py::object& cb, const Event& e) { cb(e); })));
          },
          py::arg("listener"));
  return def_cache(cls);
}

}  // namespace etcd::python
