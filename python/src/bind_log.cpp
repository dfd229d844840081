// etcd_recipes.set_log_sink: the library's log records (etcd/log.h) handed
// to a Python callable, with the GIL, on the client's executor thread.
#include "common.h"
#include "etcd/log.h"

namespace etcd::python {

namespace {

LogLevel log_level_named(const std::string& name) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (to_string(l) == name) return l;
  }
  throw Error(InvalidArgument("log level must be debug, info, warning or error, got '" + name + "'"));
}

}  // namespace

void bind_log(py::module_& m) {
  py::class_<LogRecord>(m, "LogRecord")
      .def_property_readonly("level", [](const LogRecord& r) { return std::string(to_string(r.level)); })
      .def_property_readonly(
          "time", [](const LogRecord& r) { return std::chrono::duration<double>(r.time.time_since_epoch()).count(); })
      .def_property_readonly("source_kind", [](const LogRecord& r) { return r.source.kind; })
      .def_property_readonly("source_name", [](const LogRecord& r) { return r.source.name; })
      .def_property_readonly("message", [](const LogRecord& r) { return r.message; })
      .def_property_readonly("status",
                             [](const LogRecord& r) -> py::object {
                               if (r.status.ok()) return py::none();
                               return make_exception(r.status);
                             })
      .def("__str__", &LogRecord::to_string)
      .def("__repr__", [](const LogRecord& r) { return "<LogRecord " + r.to_string() + ">"; });
  m.def(
      "set_log_sink",
      [](py::object sink, const std::string& level) {
        const LogLevel min_level = log_level_named(level);
        if (sink.is_none()) {
          set_log_sink(nullptr);
          return;
        }
        set_log_sink(listener<const LogRecord&>(std::move(sink), "etcd_recipes: log sink",
                                                [](const py::object& cb, const LogRecord& r) { cb(r); }),
                     min_level);
      },
      py::arg("sink"), py::arg("level") = "info");
}

}  // namespace etcd::python
