// etcd_recipes._core: the pybind11 module. The Python package
// (python/etcd_recipes/) re-exports it and adds the asyncio twins.
#include "common.h"

namespace etcd::python {
void bind_view(py::module_& m);  // KeyspaceView and the streams (bind_view.cpp)
void bind_reap(py::module_& m);  // reap() of bookkeeping keys (bind_reap.cpp)
}  // namespace etcd::python

PYBIND11_MODULE(_core, m) {
  using namespace etcd::python;
  m.doc() = "etcd-recipes' C++ library, bound for Python (use the etcd_recipes package, not this module)";
  init_errors();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const etcd::Error& e) {
      py::object exc = make_exception(e.status());
      PyErr_SetObject(exc.get_type().ptr(), exc.ptr());
    }
  });
  py::class_<AsyncOp, std::shared_ptr<AsyncOp>>(m, "AsyncOp").def("cancel", &AsyncOp::cancel);
  bind_client(m);
  bind_options(m);
  bind_recipes(m);
  bind_multi_lock(m);
  bind_bytes_recipes(m);
  bind_typed(m);
  bind_values(m);
  bind_testing(m);
  bind_view(m);
  bind_log(m);
  bind_presence(m);
  bind_reap(m);
}
