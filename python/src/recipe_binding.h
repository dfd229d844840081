// Helpers shared by the recipe bindings: the lifecycle every recipe has
// (RecipeHandle) and the holder surface of locks and latches.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"

namespace etcd::python {

// The keyword argument of every recipe constructor, after the positional
// ones: a RecipeOptions (bind_options.cpp), which the package builds from
// client_id, session, session_ttl and metrics.
#define ETCD_PY_RECIPE_KWARGS py::kw_only(), py::arg("options") = ::etcd::recipes::RecipeOptions()

inline py::object status_or_none(const Status& s) { return s.ok() ? py::object(py::none()) : make_exception(s); }

// name, identity, start, close, closed, state, errors, on_state_change, on_error.
template <class Cls>
Cls& def_recipe(Cls& cls) {
  using T = typename Cls::type;
  cls.def_property_readonly("name", [](const T& r) { return r.name(); })
      .def_property_readonly("identity", [](const T& r) { return r.identity(); })
      .def("start", [](T& r) { r.start(); }, py::call_guard<py::gil_scoped_release>())
      .def("close", [](T& r) { r.close(); }, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("closed", [](const T& r) { return r.closed(); })
      .def_property_readonly("state", [](const T& r) { return std::string(to_string(r.state())); })
      .def("errors",
           [](const T& r) {
             py::list out;
             for (const Status& s : r.errors()) out.append(make_exception(s));
             return out;
           })
      .def("clear_errors", [](T& r) { r.clear_errors(); })
      .def(
          "on_state_change",
          [](T& r, py::object f) {
            return wrap(r.on_state_change(listener<ConnectionState>(
                std::move(f), "etcd_recipes: on_state_change listener",
                [](const py::object& cb, ConnectionState s) { cb(std::string(to_string(s))); })));
          },
          py::arg("listener"))
      .def(
          "on_error",
          [](T& r, py::object f) {
            return wrap(r.on_error(listener<const Status&>(
                std::move(f), "etcd_recipes: on_error listener",
                [](const py::object& cb, const Status& s) { cb(make_exception(s)); })));
          },
          py::arg("listener"));
  return cls;
}

// hold, is_held, on_lost (recipes that keep a hold: the mutex, rwlock
// sides, latches, selectors).
template <class Cls>
Cls& def_holder(Cls& cls) {
  using T = typename Cls::type;
  cls.def_property_readonly("hold",
                            [](const T& r) -> py::object {
                              recipes::Hold h = r.hold();
                              if (!h.valid()) return py::none();
                              return py::cast(std::move(h));
                            })
      .def_property_readonly("is_held", [](const T& r) { return r.is_held(); })
      .def(
          "on_lost",
          [](T& r, py::object f) {
            return wrap(r.on_lost(listener<const Status&>(std::move(f), "etcd_recipes: on_lost listener",
                                                          [](const py::object& cb, const Status& s) {
                                                            cb(make_exception(s));
                                                          })));
          },
          py::arg("listener"));
  return cls;
}

// acquire, try_acquire, release as pending calls (mutex and rwlock sides).
template <class Cls>
Cls& def_lock(Cls& cls) {
  using T = typename Cls::type;
  cls.def("acquire", [](T& r) { return pending(r.acquire()); })
      .def("try_acquire", [](T& r) { return pending(r.try_acquire()); })
      .def("release", [](T& r) { return pending(r.release()); });
  return cls;
}

}  // namespace etcd::python
