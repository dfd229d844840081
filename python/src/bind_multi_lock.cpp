// MultiLock and MultiHold, and cooperative release on the mutex and on
// every Hold (request_release, on_release_requested, release_requested).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "etcd/recipes/multi_lock.h"
#include "etcd/recipes/mutex.h"
#include "recipe_binding.h"

namespace etcd::python {

using namespace etcd::recipes;

void bind_multi_lock(py::module_& m) {
  // Added to the classes bind_recipes made.
  py::object hold_cls = m.attr("Hold");
  hold_cls.attr("release_requested") = py::cpp_function(
      [](const Hold& h) { return h.release_requested().stop_requested(); }, py::is_method(hold_cls));
  hold_cls.attr("on_release_requested") = py::cpp_function(
      [](const Hold& h, py::object f) {
        return wrap(h.on_release_requested(listener<>(std::move(f), "etcd_recipes: Hold.on_release_requested listener",
                                                      [](const py::object& cb) { cb(); })));
      },
      py::is_method(hold_cls), py::arg("listener"));
  py::object mutex_cls = m.attr("DistributedMutex");
  mutex_cls.attr("request_release") = py::cpp_function(
      [](DistributedMutex& mx) { return pending(mx.request_release()); }, py::is_method(mutex_cls));
  mutex_cls.attr("on_release_requested") = py::cpp_function(
      [](DistributedMutex& mx, py::object f) {
        return wrap(mx.on_release_requested(listener<>(
            std::move(f), "etcd_recipes: on_release_requested listener", [](const py::object& cb) { cb(); })));
      },
      py::is_method(mutex_cls), py::arg("listener"));

  py::class_<MultiHold>(m, "MultiHold")
      .def_property_readonly("valid", &MultiHold::valid)
      .def("__bool__", &MultiHold::valid)
      .def_property_readonly("names", &MultiHold::names)
      .def_property_readonly("holds", &MultiHold::holds)
      .def(
          "hold",
          [](const MultiHold& h, const std::string& name) -> py::object {
            Hold one = h.hold(name);
            if (!one.valid()) return py::none();
            return py::cast(std::move(one));
          },
          py::arg("name"))
      .def_property_readonly("tokens", &MultiHold::tokens)
      .def(
          "token", [](const MultiHold& h, const std::string& name) { return h.token(name); }, py::arg("name"))
      .def_property_readonly("is_held", &MultiHold::is_held)
      .def_property_readonly("ended", [](const MultiHold& h) { return h.stop_token().stop_requested(); })
      .def(
          "on_lost",
          [](const MultiHold& h, py::object f) {
            return wrap(h.on_lost(listener<const Status&>(
                std::move(f), "etcd_recipes: MultiHold.on_lost listener",
                [](const py::object& cb, const Status& s) { cb(make_exception(s)); })));
          },
          py::arg("listener"))
      .def("release_requested", [](const MultiHold& h) { return h.release_requested().stop_requested(); })
      .def(
          "on_release_requested",
          [](const MultiHold& h, py::object f) {
            return wrap(h.on_release_requested(listener<>(
                std::move(f), "etcd_recipes: MultiHold.on_release_requested listener", [](const py::object& cb) { cb(); })));
          },
          py::arg("listener"))
      .def(
          "guarded", [](const MultiHold& h, const Txn& t) { return pending(h.guarded(t)); }, py::arg("txn"))
      .def("release", [](const MultiHold& h) { return pending(h.release()); })
      .def("__repr__", [](const MultiHold& h) {
        if (!h.valid()) return std::string("MultiHold(<empty>)");
        std::string out = "MultiHold(";
        for (const auto& [name, token] : h.tokens()) out += name + "=" + std::to_string(token) + ", ";
        return out + "held=" + (h.is_held() ? "True" : "False") + ")";
      });

  py::class_<MultiLock, std::shared_ptr<MultiLock>> multi(m, "MultiLock");
  multi
      .def(py::init([](Client client, std::vector<std::string> names, const RecipeOptions& options) {
             return make_releasing<MultiLock>(std::move(client), std::move(names), options);
           }),
           py::arg("client"), py::arg("names"), ETCD_PY_RECIPE_KWARGS)
      .def("acquire", [](MultiLock& l) { return pending(l.acquire()); })
      .def("try_acquire", [](MultiLock& l) { return pending(l.try_acquire()); })
      .def("release", [](MultiLock& l) { return pending(l.release()); })
      .def_property_readonly("hold",
                             [](const MultiLock& l) -> py::object {
                               MultiHold h = l.hold();
                               if (!h.valid()) return py::none();
                               return py::cast(std::move(h));
                             })
      .def_property_readonly("is_held", &MultiLock::is_held)
      .def_property_readonly("names", &MultiLock::names)
      .def(
          "on_lost",
          [](MultiLock& l, py::object f) {
            return wrap(l.on_lost(listener<const Status&>(std::move(f), "etcd_recipes: MultiLock.on_lost listener",
                                                          [](const py::object& cb, const Status& s) {
                                                            cb(make_exception(s));
                                                          })));
          },
          py::arg("listener"))
      .def(
          "on_release_requested",
          [](MultiLock& l, py::object f) {
            return wrap(l.on_release_requested(listener<>(
                std::move(f), "etcd_recipes: MultiLock.on_release_requested listener", [](const py::object& cb) { cb(); })));
          },
          py::arg("listener"));
  def_recipe(multi);
}

}  // namespace etcd::python
