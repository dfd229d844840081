// The typed recipes over a Python codec (py_codec.h): TypedQueue,
// TypedPriorityQueue, TypedWorkQueue, TypedTransientKeyValue,
// TypedPathChildrenCache and TypedNodeCache. The package picks these when a
// recipe is given codec=, the bytes ones (bind_bytes.cpp) otherwise;
// both have the same surface, values being Python objects here.
#include <optional>
#include <string>
#include <vector>

#include "cache_binding.h"
#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"
#include "py_codec.h"
#include "value_binding.h"

namespace etcd::python {

namespace {

// "TypeError: Object of type set is not JSON serializable" (GIL held).
std::string describe(py::error_already_set& e) {
  try {
    std::string type = py::str(e.type().attr("__name__")).cast<std::string>();
    std::string message = py::str(e.value()).cast<std::string>();
    return message.empty() ? type : type + ": " + message;
  } catch (py::error_already_set&) {
    return "an exception that cannot be shown";
  }
}

// While the interpreter exits no codec can run: the value is neither
// encoded nor judged (UNAVAILABLE is not a decode error, so a queue leaves
// the item where it is).
Status interpreter_gone() { return Status(StatusCode::kUnavailable, "the Python interpreter is shutting down"); }

}  // namespace

Result<std::string> PyCodec::encode(const PyValue& value) const {
  if (!python_alive()) return interpreter_gone();
  py::gil_scoped_acquire gil;  // also from the caller's thread, which holds it already
  try {
    py::object out = codec_.get().attr("encode")(to_object(value));
    if (!py::isinstance<py::bytes>(out)) {
      return InvalidArgument("cannot encode the value: the codec's encode() returned " +
                             py::str(py::type::of(out).attr("__name__")).cast<std::string>() + ", not bytes");
    }
    return out.cast<std::string>();
  } catch (py::error_already_set& e) {
    return InvalidArgument("cannot encode the value: " + describe(e));
  }
}

Result<PyValue> PyCodec::decode(std::string_view bytes, std::string_view key) const {
  if (!python_alive()) return interpreter_gone();
  py::gil_scoped_acquire gil;
  try {
    return to_value(codec_.get().attr("decode")(py::bytes(bytes.data(), bytes.size())));
  } catch (py::error_already_set& e) {
    return recipes::decode_error(key, "could not be decoded: " + describe(e));
  }
}

void discard(recipes::TypedWorkItem<PyValue>& item) {
  // As discard(WorkItem&): back in the queue at once.
  std::move(item.requeue()).then([](Result<bool>) {});
}

namespace {

using namespace etcd::recipes;

using PyQueue = TypedQueue<PyValue, PyCodec>;
using PyPriorityQueue = TypedPriorityQueue<PyValue, PyCodec>;
using PyWorkQueue = TypedWorkQueue<PyValue, PyCodec>;
using PyWorkItem = TypedWorkItem<PyValue>;
using PyTransient = TypedTransientKeyValue<PyValue, PyCodec>;
using PyChildrenCache = TypedPathChildrenCache<PyValue, PyCodec>;
using PyNodeCache = NodeCache<PyValue, PyCodec>;

struct ToObject {
  py::object operator()(PyValue&& v) const { return to_object(v); }
};
struct ToOptionalObject {
  py::object operator()(std::optional<PyValue>&& v) const { return v ? to_object(*v) : py::object(py::none()); }
};

std::vector<PyValue> to_values(const std::vector<py::object>& objects) {
  std::vector<PyValue> out;
  out.reserve(objects.size());
  for (const auto& o : objects) out.push_back(to_value(o));
  return out;
}

// dequeue, try_dequeue, size, remove, on_poison (TypedQueue, TypedPriorityQueue).
template <class Cls>
Cls& def_typed_queue(Cls& cls) {
  using Q = typename Cls::type;
  cls.def("dequeue", [](Q& q) { return pending(q.dequeue(), ToObject()); })
      .def("try_dequeue", [](Q& q) { return pending(q.try_dequeue(), ToOptionalObject()); })
      .def("size", [](Q& q) { return pending(q.size()); })
      .def(
          "remove", [](Q& q, std::string id) { return pending(q.remove(std::move(id))); }, py::arg("id"))
      .def(
          "on_poison",
          [](Q& q, py::object f) {
            return wrap(q.on_poison(listener<const std::string&, const Status&>(
                std::move(f), "etcd_recipes: on_poison listener",
                [](const py::object& cb, const std::string& key, const Status& s) { cb(key, make_exception(s)); })));
          },
          py::arg("listener"));
  return def_recipe(cls);
}

}  // namespace

void bind_typed(py::module_& m) {
  // --- queues
  py::class_<PyQueue, std::shared_ptr<PyQueue>> queue(m, "TypedQueue");
  queue
      .def(py::init([](Client client, std::string name, py::object codec, const RecipeOptions& options) {
             return make_releasing<PyQueue>(std::move(client), std::move(name), options, PyCodec(std::move(codec)));
           }),
           py::arg("client"), py::arg("name"), py::arg("codec"), ETCD_PY_RECIPE_KWARGS)
      .def(
          "enqueue", [](PyQueue& q, py::object v) { return pending(q.enqueue(to_value(std::move(v)))); },
          py::arg("value"))
      .def(
          "enqueue_all",
          [](PyQueue& q, const std::vector<py::object>& v) { return pending(q.enqueue_all(to_values(v))); },
          py::arg("values"));
  def_typed_queue(queue);

  py::class_<PyPriorityQueue, std::shared_ptr<PyPriorityQueue>> pq(m, "TypedPriorityQueue");
  pq.def(py::init([](Client client, std::string name, py::object codec, const RecipeOptions& options) {
           return make_releasing<PyPriorityQueue>(std::move(client), std::move(name), options,
                                                  PyCodec(std::move(codec)));
         }),
         py::arg("client"), py::arg("name"), py::arg("codec"), ETCD_PY_RECIPE_KWARGS)
      .def(
          "enqueue",
          [](PyPriorityQueue& q, py::object v, int64_t priority) {
            return pending(q.enqueue(to_value(std::move(v)), priority));
          },
          py::arg("value"), py::arg("priority"))
      .def(
          "enqueue_all",
          [](PyPriorityQueue& q, const std::vector<py::object>& v, int64_t priority) {
            return pending(q.enqueue_all(to_values(v), priority));
          },
          py::arg("values"), py::arg("priority"));
  def_typed_queue(pq);

  // --- work queue: a value that does not decode goes to the dead letters
  // (reason "poison: ...") instead of being delivered.
  py::class_<PyWorkItem> item(m, "TypedWorkItem");
  item.def_property_readonly("value", [](const PyWorkItem& w) { return to_object(w.value()); });
  def_work_item(item);

  py::class_<PyWorkQueue, std::shared_ptr<PyWorkQueue>> wq(m, "TypedWorkQueue");
  wq.def(py::init([](Client client, std::string name, py::object codec, double visibility_timeout, int max_deliveries,
                     const RecipeOptions& options) {
           return make_releasing<PyWorkQueue>(std::move(client), std::move(name),
                                              work_queue_options(visibility_timeout, max_deliveries, options),
                                              PyCodec(std::move(codec)));
         }),
         py::arg("client"), py::arg("name"), py::arg("codec"), py::kw_only(), py::arg("visibility_timeout") = 30.0,
         py::arg("max_deliveries") = 5, py::arg("options") = RecipeOptions())
      .def(
          "enqueue",
          [](PyWorkQueue& q, py::object v, double delay) {
            return pending(q.enqueue(to_value(std::move(v)), millis(delay, "delay")));
          },
          py::arg("value"), py::kw_only(), py::arg("delay") = 0.0)
      .def(
          "enqueue_all",
          [](PyWorkQueue& q, const std::vector<py::object>& v, double delay) {
            return pending(q.enqueue_all(to_values(v), millis(delay, "delay")));
          },
          py::arg("values"), py::kw_only(), py::arg("delay") = 0.0)
      .def("receive", [](PyWorkQueue& q) { return pending(q.receive()); })
      .def("try_receive", [](PyWorkQueue& q) { return pending(q.try_receive()); });
  def_work_queue(wq);

  // --- transient key/value: encoded when given (a value the codec refuses
  // is InvalidArgument from every operation, or from that set_value).
  py::class_<PyTransient, std::shared_ptr<PyTransient>> transient(m, "TypedTransientKeyValue");
  transient
      .def(py::init(
               [](Client client, std::string key, py::object value, py::object codec, const RecipeOptions& options) {
                 return make_releasing<PyTransient>(std::move(client), std::move(key), to_value(std::move(value)),
                                                    options, PyCodec(std::move(codec)));
               }),
           py::arg("client"), py::arg("key"), py::arg("value"), py::arg("codec"), ETCD_PY_RECIPE_KWARGS)
      .def_property_readonly("value", [](const PyTransient& t) { return to_object(t.value()); })
      .def(
          "set_value", [](PyTransient& t, py::object v) { return pending(t.set_value(to_value(std::move(v)))); },
          py::arg("value"));
  def_transient(transient);

  // --- caches: a value that does not decode is cached as a node whose
  // `value` raises DecodeFailed (naming the key) and whose `error` is it.
  bind_cache_types<PyValue>(m, "TypedCachedNode", "TypedChildEvent", "TypedNodeEvent",
                            [](const CachedNode<PyValue>& n) -> py::object {
                              if (!n.error.ok()) throw_status(n.error);
                              return n.value ? to_object(*n.value) : py::object(py::none());
                            });

  py::class_<PyChildrenCache, std::shared_ptr<PyChildrenCache>> pcc(m, "TypedPathChildrenCache");
  pcc.def(py::init([](Client client, std::string path, py::object codec, const std::string& mode, bool subtree,
                      int64_t page_size, const RecipeOptions& options) {
            return make_releasing<PyChildrenCache>(std::move(client), std::move(path),
                                                   children_cache_options(mode, subtree, page_size, options),
                                                   PyCodec(std::move(codec)));
          }),
          py::arg("client"), py::arg("path"), py::arg("codec"), py::kw_only(), py::arg("start_mode") = "normal",
          py::arg("subtree") = false, py::arg("page_size") = 1000, py::arg("options") = RecipeOptions());
  def_children_cache(pcc);

  py::class_<PyNodeCache, std::shared_ptr<PyNodeCache>> nc(m, "TypedNodeCache");
  nc.def(py::init([](Client client, std::string key, py::object codec, const RecipeOptions& options) {
           return make_releasing<PyNodeCache>(std::move(client), std::move(key), options, PyCodec(std::move(codec)));
         }),
         py::arg("client"), py::arg("key"), py::arg("codec"), ETCD_PY_RECIPE_KWARGS);
  def_node_cache(nc);
}

}  // namespace etcd::python
