// RecipeOptions (what every recipe constructor takes) and the metrics hooks:
// PrometheusMetrics (the library's, aggregated in C++) and any Python object
// with add/observe/set (PyMetrics below).
#include <asio/post.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "common.h"
#include "etcd/recipes/metrics.h"
#include "etcd/recipes/recipe.h"

namespace etcd::python {
namespace {

using recipes::Labels;

// A Python metrics sink: an object with add(name, labels, delta),
// observe(name, labels, value) and set(name, labels, value), labels a dict.
//
// The library reports metrics inline, from wherever the work happens: a
// gRPC completion, a recipe's strand, a caller's thread — sometimes with a
// lock of the recipe held, or with the GIL held by the caller (a release()
// from Python). Taking the GIL there could deadlock and would run Python on
// gRPC's threads. So a report is only queued here, and one drain at a time
// runs the sink in report order on the binding's completion thread (the one
// that completes asyncio futures: never a gRPC thread, alive until the
// process ends, also after the client was closed).
class PyMetrics final : public recipes::Metrics, public std::enable_shared_from_this<PyMetrics> {
 public:
  // Reports beyond this many waiting for the sink are dropped, and the sink
  // is told how many (etcd_recipes_python_metrics_dropped_total): a sink
  // that blocks must not make the process run out of memory.
  static constexpr size_t kMaxPending = 100000;

  explicit PyMetrics(py::object sink) : sink_(std::move(sink)) {}

  void add(std::string_view name, const Labels& labels, double delta) override { push('a', name, labels, delta); }
  void observe(std::string_view name, const Labels& labels, double value) override { push('o', name, labels, value); }
  void set(std::string_view name, const Labels& labels, double value) override { push('s', name, labels, value); }

  const py::object& sink() const { return sink_.get(); }

 private:
  struct Report {
    char kind;
    std::string name;
    Labels labels;
    double value;
  };

  void push(char kind, std::string_view name, const Labels& labels, double value) {
    bool post = false;
    {
      std::lock_guard lock(mu_);
      if (pending_.size() >= kMaxPending) {
        ++dropped_;
        return;
      }
      if (dropped_ > 0) {
        pending_.push_back(Report{'a', "etcd_recipes_python_metrics_dropped_total", {}, static_cast<double>(dropped_)});
        dropped_ = 0;
      }
      pending_.push_back(Report{kind, std::string(name), labels, value});
      post = !draining_;
      draining_ = true;
    }
    if (post) asio::post(completion_executor(), [self = shared_from_this()] { self->drain(); });
  }

  void drain() {
    for (;;) {
      std::deque<Report> batch;
      {
        std::lock_guard lock(mu_);
        if (pending_.empty()) {
          draining_ = false;
          return;
        }
        batch.swap(pending_);
      }
      if (!python_alive()) continue;  // nobody to tell: drop them
      py::gil_scoped_acquire gil;
      for (const Report& r : batch) {
        try {
          py::dict labels;
          for (const auto& [k, v] : r.labels) labels[py::str(k)] = py::str(v);
          const char* method = r.kind == 'a' ? "add" : r.kind == 'o' ? "observe" : "set";
          sink_.get().attr(method)(r.name, labels, r.value);
        } catch (py::error_already_set& e) {
          e.discard_as_unraisable("etcd_recipes: a metrics sink");
        }
      }
    }
  }

  SharedPy sink_;
  std::mutex mu_;
  std::deque<Report> pending_;
  bool draining_ = false;
  uint64_t dropped_ = 0;
};

Labels to_labels(const std::optional<py::dict>& labels) {
  Labels out;
  if (!labels) return out;
  for (auto [k, v] : *labels) out.emplace_back(py::str(k).cast<std::string>(), py::str(v).cast<std::string>());
  return out;
}

std::shared_ptr<recipes::Metrics> to_metrics(py::object metrics) {
  if (metrics.is_none()) return nullptr;
  // The library's own: aggregated in C++, no Python on the way.
  if (py::isinstance<recipes::PrometheusMetrics>(metrics)) {
    return metrics.cast<std::shared_ptr<recipes::PrometheusMetrics>>();
  }
  for (const char* method : {"add", "observe", "set"}) {
    if (!py::hasattr(metrics, method)) {
      throw_status(InvalidArgument(std::string("metrics must be a PrometheusMetrics or have add, observe and set "
                                               "methods (") +
                                   py::repr(metrics).cast<std::string>() + " has no " + method + ")"));
    }
  }
  return std::make_shared<PyMetrics>(std::move(metrics));
}

// A Python callable as RecipeOptions::session_factory. The recipe calls it
// without any lock of its own held (on the caller's thread or the client's
// executor), so taking the GIL here cannot deadlock against a Python thread
// waiting on the recipe. What it raises becomes a C++ exception that the
// recipe turns into a FAILED_PRECONDITION error naming it.
std::function<std::shared_ptr<Session>()> to_session_factory(py::object factory) {
  if (factory.is_none()) return nullptr;
  if (!PyCallable_Check(factory.ptr())) {
    throw_status(InvalidArgument("session_factory must be callable, returning a Session (got " +
                                 py::repr(factory).cast<std::string>() + ")"));
  }
  return [f = SharedPy(std::move(factory))]() -> std::shared_ptr<Session> {
    if (!python_alive()) throw std::runtime_error("the Python interpreter is shutting down");
    py::gil_scoped_acquire gil;
    try {
      py::object made = f.get()();
      if (made.is_none()) return nullptr;
      if (!py::isinstance<Session>(made)) {
        throw std::runtime_error("it returned " + py::repr(made).cast<std::string>() + ", not a Session");
      }
      return made.cast<std::shared_ptr<Session>>();
    } catch (py::error_already_set& e) {
      throw std::runtime_error(e.what());
    }
  };
}

}  // namespace

void bind_options(py::module_& m) {
  py::class_<recipes::PrometheusMetrics, std::shared_ptr<recipes::PrometheusMetrics>>(m, "PrometheusMetrics")
      .def(py::init<>())
      .def(
          "add",
          [](recipes::PrometheusMetrics& p, const std::string& name, std::optional<py::dict> labels, double delta) {
            p.add(name, to_labels(labels), delta);
          },
          py::arg("name"), py::arg("labels") = py::none(), py::arg("delta") = 1.0)
      .def(
          "observe",
          [](recipes::PrometheusMetrics& p, const std::string& name, std::optional<py::dict> labels, double value) {
            p.observe(name, to_labels(labels), value);
          },
          py::arg("name"), py::arg("labels"), py::arg("value"))
      .def(
          "set",
          [](recipes::PrometheusMetrics& p, const std::string& name, std::optional<py::dict> labels, double value) {
            p.set(name, to_labels(labels), value);
          },
          py::arg("name"), py::arg("labels"), py::arg("value"))
      .def("render", &recipes::PrometheusMetrics::render)
      .def(
          "value",
          [](const recipes::PrometheusMetrics& p, const std::string& name, std::optional<py::dict> labels) {
            return p.value(name, to_labels(labels));
          },
          py::arg("name"), py::arg("labels") = py::none());

  py::class_<recipes::RecipeOptions>(m, "RecipeOptions")
      .def(py::init([](std::optional<std::string> client_id, std::shared_ptr<Session> session,
                       std::optional<double> session_ttl, py::object metrics, const std::string& contender_layout,
                       py::object session_factory) {
             recipes::RecipeOptions o;
             if (contender_layout == "ordered") {
               o.contender_layout = recipes::ContenderLayout::kOrdered;
             } else if (contender_layout != "go") {
               throw py::value_error("contender_layout is 'go' or 'ordered', not '" + contender_layout + "'");
             }
             if (client_id) o.client_id = std::move(*client_id);
             o.session = std::move(session);
             if (session_ttl) {
               // Whole seconds, as the library counts them: below 1 s is
               // refused by the recipe itself (every operation, before any
               // write), as in C++.
               o.session_ttl =
                   std::chrono::duration_cast<std::chrono::seconds>(to_duration(*session_ttl, "session_ttl"));
             }
             o.metrics = to_metrics(std::move(metrics));
             o.session_factory = to_session_factory(std::move(session_factory));
             return o;
           }),
           py::kw_only(), py::arg("client_id") = py::none(), py::arg("session") = py::none(),
           py::arg("session_ttl") = py::none(), py::arg("metrics") = py::none(), py::arg("contender_layout") = "go",
           py::arg("session_factory") = py::none())
      .def_readonly("client_id", &recipes::RecipeOptions::client_id)
      .def_property_readonly("contender_layout",
                             [](const recipes::RecipeOptions& o) {
                               return o.contender_layout == recipes::ContenderLayout::kOrdered ? "ordered" : "go";
                             })
      .def_property_readonly("session_ttl",
                             [](const recipes::RecipeOptions& o) { return static_cast<double>(o.session_ttl.count()); })
      .def_property_readonly("metrics", [](const recipes::RecipeOptions& o) -> py::object {
        if (!o.metrics) return py::none();
        if (auto* p = dynamic_cast<PyMetrics*>(o.metrics.get())) return p->sink();
        if (auto p = std::dynamic_pointer_cast<recipes::PrometheusMetrics>(o.metrics)) return py::cast(p);
        return py::none();
      });
}

}  // namespace etcd::python
