// What the bindings of the recipes that carry values share: the queues, the
// work queue and the transient key exist twice in Python, over bytes and
// over a Python codec (TypedQueue, TypedPriorityQueue, TypedWorkQueue,
// TypedTransientKeyValue; bind_typed.cpp), with the same surface.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "etcd/recipes/transient.h"
#include "etcd/recipes/work_queue.h"
#include "recipe_binding.h"

namespace etcd::python {

// A delay or timeout in seconds as the library's duration.
inline std::chrono::milliseconds millis(double seconds, const char* what) { return to_duration(seconds, what); }

inline recipes::WorkQueueOptions work_queue_options(double visibility_timeout, int max_deliveries,
                                                    const recipes::RecipeOptions& options) {
  recipes::WorkQueueOptions o;
  o.visibility_timeout =
      std::chrono::duration_cast<std::chrono::seconds>(millis(visibility_timeout, "visibility_timeout"));
  o.max_deliveries = max_deliveries;
  o.recipe = options;
  return o;
}

// id, key, attempt, claim, lost, ack, requeue (WorkItem, TypedWorkItem);
// `value` is each one's own.
template <class Cls>
Cls& def_work_item(Cls& cls) {
  using W = typename Cls::type;
  cls.def_property_readonly("id", &W::id)
      .def_property_readonly("key", &W::key)
      .def_property_readonly("attempt", &W::attempt)
      .def_property_readonly("claim", &W::claim)
      .def_property_readonly("lost", [](const W& w) { return w.stop_token().stop_requested(); })
      .def("ack", [](const W& w) { return pending(w.ack()); })
      .def(
          "requeue",
          [](const W& w, std::optional<double> delay) {
            return delay ? pending(w.requeue(millis(*delay, "delay"))) : pending(w.requeue());
          },
          py::arg("delay") = py::none());
  return cls;
}

// size, dead_letters, requeue_dead, purge_dead, remove and the recipe surface
// (DistributedWorkQueue, TypedWorkQueue).
template <class Cls>
Cls& def_work_queue(Cls& cls) {
  using Q = typename Cls::type;
  cls.def("size", [](Q& q) { return pending(q.size()); })
      .def("dead_letters", [](Q& q) { return pending(q.dead_letters()); })
      .def(
          "requeue_dead", [](Q& q, std::string id) { return pending(q.requeue_dead(std::move(id))); }, py::arg("id"))
      .def(
          "purge_dead", [](Q& q, std::string id) { return pending(q.purge_dead(std::move(id))); }, py::arg("id"))
      .def(
          "remove", [](Q& q, std::string id) { return pending(q.remove(std::move(id))); }, py::arg("id"));
  return def_recipe(cls);
}

// key, create, release, is_held, create_revision, lease, on_lost,
// on_restored and the recipe surface (TransientKeyValue,
// TypedTransientKeyValue); `value` and set_value are each one's own.
template <class Cls>
Cls& def_transient(Cls& cls) {
  using T = typename Cls::type;
  cls.def_property_readonly("key", [](const T& t) { return t.key(); })
      .def("create", [](T& t) { return pending(t.create()); })
      .def("release", [](T& t) { return pending(t.release()); })
      .def_property_readonly("is_held", [](const T& t) { return t.is_held(); })
      .def_property_readonly("create_revision", [](const T& t) { return t.create_revision(); })
      .def_property_readonly("lease", [](const T& t) { return t.lease(); })
      .def(
          "on_lost",
          [](T& t, py::object f) {
            return wrap(t.on_lost(
                listener<const Status&>(std::move(f), "etcd_recipes: TransientKeyValue.on_lost listener",
                                        [](const py::object& cb, const Status& s) { cb(make_exception(s)); })));
          },
          py::arg("listener"))
      .def(
          "on_restored",
          [](T& t, py::object f) {
            return wrap(t.on_restored(listener<>(std::move(f), "etcd_recipes: TransientKeyValue.on_restored listener",
                                                 [](const py::object& cb) { cb(); })));
          },
          py::arg("listener"));
  return def_recipe(cls);
}

}  // namespace etcd::python
