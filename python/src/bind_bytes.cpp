// Queues, the work queue, the counter, barriers, transient keys, caches and
// service discovery, over bytes. The same recipes over a Python codec
// (codec= in the package) are in bind_typed.cpp.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache_binding.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/barrier.h"
#include "etcd/recipes/node_cache.h"
#include "etcd/recipes/path_children_cache.h"
#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/service_cache.h"
#include "etcd/recipes/service_discovery.h"
#include "etcd/recipes/service_instance.h"
#include "etcd/recipes/service_provider.h"
#include "etcd/recipes/service_registry.h"
#include "etcd/recipes/transient.h"
#include "etcd/recipes/work_queue.h"
#include "value_binding.h"

namespace etcd::python {

void discard(recipes::WorkItem& item) {
  // Claimed for nobody: put it back at once rather than after the
  // visibility timeout.
  std::move(item.requeue()).then([](Result<bool>) {});
}

namespace {

using namespace etcd::recipes;
using Node = CachedNode<std::string>;

struct ToOptionalBytes {
  py::object operator()(std::optional<std::string>&& s) const {
    if (!s) return py::none();
    return py::bytes(*s);
  }
};

std::shared_ptr<ProviderStrategy> strategy(const std::string& s) {
  if (s == "round_robin") return round_robin_strategy();
  if (s == "random") return random_strategy();
  if (s == "sticky") return sticky_strategy();
  throw_status(InvalidArgument("strategy must be 'round_robin', 'random' or 'sticky' (got '" + s + "')"));
}

// A ProviderStrategy written in Python: a callable given the candidates (a
// list of ServiceInstance, sorted by id) that returns an index or None. It
// runs under the provider's lock, with the GIL (pick() is bound without
// it, so a thread waiting for that lock never holds the GIL). What it
// raises, or an index out of range, is reported as unraisable and picks
// nothing.
class PythonProviderStrategy : public ProviderStrategy {
 public:
  explicit PythonProviderStrategy(py::object f) : f_(std::move(f)) {}
  std::optional<std::size_t> pick(std::span<const ServiceInstance> candidates) override {
    if (!python_alive()) return std::nullopt;
    py::gil_scoped_acquire gil;
    try {
      py::list given;
      for (const auto& c : candidates) given.append(py::cast(c));
      py::object chosen = f_.get()(given);
      if (chosen.is_none()) return std::nullopt;
      const long long i = chosen.cast<long long>();
      if (i < 0 || static_cast<std::size_t>(i) >= candidates.size()) {
        PyErr_SetString(PyExc_IndexError, ("a provider strategy returned " + std::to_string(i) + " for " +
                                           std::to_string(candidates.size()) + " candidates")
                                              .c_str());
        throw py::error_already_set();
      }
      return static_cast<std::size_t>(i);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("etcd_recipes: provider strategy");
    } catch (const py::cast_error& e) {
      const std::string why = std::string("a provider strategy must return an int or None: ") + e.what();
      PyErr_SetString(PyExc_TypeError, why.c_str());
      py::error_already_set err;
      err.discard_as_unraisable("etcd_recipes: provider strategy");
    }
    return std::nullopt;
  }

 private:
  SharedPy f_;
};

// A strategy's name, or a Python callable.
std::shared_ptr<ProviderStrategy> strategy(const py::object& s) {
  if (py::isinstance<py::str>(s)) return strategy(s.cast<std::string>());
  if (PyCallable_Check(s.ptr()) != 0) return std::make_shared<PythonProviderStrategy>(s);
  throw_status(InvalidArgument("strategy must be 'round_robin', 'random', 'sticky' or a callable"));
}

// on_lost(listener(instance, error)) and on_restored(listener(instance)) of
// the registrations of a ServiceRegistry (a ServiceDiscovery's: its own).
template <class Cls, class Registry>
Cls& def_registration_listeners(Cls& cls, Registry registry) {
  using T = typename Cls::type;
  cls.def(
         "on_lost",
         [registry](T& owner, py::object f) {
           return wrap(registry(owner).on_lost(listener<const ServiceInstance&, const Status&>(
               std::move(f), "etcd_recipes: ServiceRegistry.on_lost listener",
               [](const py::object& cb, const ServiceInstance& i, const Status& s) { cb(i, make_exception(s)); })));
         },
         py::arg("listener"))
      .def(
          "on_restored",
          [registry](T& owner, py::object f) {
            return wrap(registry(owner).on_restored(
                listener<const ServiceInstance&>(std::move(f), "etcd_recipes: ServiceRegistry.on_restored listener",
                                                 [](const py::object& cb, const ServiceInstance& i) { cb(i); })));
          },
          py::arg("listener"));
  return cls;
}

// A bytes queue takes every value as it is: no item is ever poison, so the
// listener never runs (it has on_poison all the same, so that code written
// for queues with and without a codec is the same).
PySubscriptionPtr no_poison(py::object, py::object) { return wrap(Subscription()); }

}  // namespace

void bind_bytes_recipes(py::module_& m) {
  py::class_<Enqueued>(m, "Enqueued")
      .def_readonly("revision", &Enqueued::revision)
      .def_readonly("keys", &Enqueued::keys);

  // --- queues
  py::class_<DistributedQueue, std::shared_ptr<DistributedQueue>> queue(m, "DistributedQueue");
  queue
      .def(py::init([](Client client, std::string name, const RecipeOptions& options) {
             return make_releasing<DistributedQueue>(std::move(client), std::move(name), options);
           }),
           py::arg("client"), py::arg("name"), ETCD_PY_RECIPE_KWARGS)
      .def(
          "enqueue", [](DistributedQueue& q, std::string v) { return pending(q.enqueue(std::move(v))); },
          py::arg("value"))
      .def(
          "enqueue_all",
          [](DistributedQueue& q, std::vector<std::string> v) { return pending(q.enqueue_all(std::move(v))); },
          py::arg("values"))
      .def("dequeue", [](DistributedQueue& q) { return pending(q.dequeue(), ToBytes()); })
      .def("try_dequeue", [](DistributedQueue& q) { return pending(q.try_dequeue(), ToOptionalBytes()); })
      .def("size", [](DistributedQueue& q) { return pending(q.size()); })
      .def(
          "remove", [](DistributedQueue& q, std::string id) { return pending(q.remove(std::move(id))); }, py::arg("id"))
      .def("on_poison", &no_poison, py::arg("listener"));
  def_recipe(queue);

  py::class_<DistributedPriorityQueue, std::shared_ptr<DistributedPriorityQueue>> pq(m, "DistributedPriorityQueue");
  pq.def(py::init([](Client client, std::string name, const RecipeOptions& options) {
           return make_releasing<DistributedPriorityQueue>(std::move(client), std::move(name), options);
         }),
         py::arg("client"), py::arg("name"), ETCD_PY_RECIPE_KWARGS)
      .def(
          "enqueue",
          [](DistributedPriorityQueue& q, std::string v, int64_t priority) {
            return pending(q.enqueue(std::move(v), priority));
          },
          py::arg("value"), py::arg("priority"))
      .def(
          "enqueue_all",
          [](DistributedPriorityQueue& q, std::vector<std::string> v, int64_t priority) {
            return pending(q.enqueue_all(std::move(v), priority));
          },
          py::arg("values"), py::arg("priority"))
      .def("dequeue", [](DistributedPriorityQueue& q) { return pending(q.dequeue(), ToBytes()); })
      .def("try_dequeue", [](DistributedPriorityQueue& q) { return pending(q.try_dequeue(), ToOptionalBytes()); })
      .def("size", [](DistributedPriorityQueue& q) { return pending(q.size()); })
      .def(
          "remove", [](DistributedPriorityQueue& q, std::string id) { return pending(q.remove(std::move(id))); },
          py::arg("id"))
      .def("on_poison", &no_poison, py::arg("listener"));
  def_recipe(pq);

  // --- work queue
  py::class_<WorkItem> item(m, "WorkItem");
  item.def_property_readonly("value", [](const WorkItem& w) { return py::bytes(w.value()); });
  def_work_item(item);
  py::class_<DeadLetter>(m, "DeadLetter")
      .def_readonly("id", &DeadLetter::id)
      .def_readonly("key", &DeadLetter::key)
      // The payload as it was enqueued (a typed queue's too: a dead letter
      // may be one that does not decode).
      .def_property_readonly("value", [](const DeadLetter& d) { return py::bytes(d.value); })
      .def_readonly("deliveries", &DeadLetter::deliveries)
      .def_readonly("reason", &DeadLetter::reason)
      .def_property_readonly(
          "since",
          [](const DeadLetter& d) { return std::chrono::duration<double>(d.since.time_since_epoch()).count(); })
      .def_readonly("revision", &DeadLetter::revision);
  py::class_<DistributedWorkQueue, std::shared_ptr<DistributedWorkQueue>> wq(m, "DistributedWorkQueue");
  wq.def(py::init([](Client client, std::string name, double visibility_timeout, int max_deliveries,
                     const RecipeOptions& options) {
           return make_releasing<DistributedWorkQueue>(std::move(client), std::move(name),
                                                       work_queue_options(visibility_timeout, max_deliveries, options));
         }),
         py::arg("client"), py::arg("name"), py::kw_only(), py::arg("visibility_timeout") = 30.0,
         py::arg("max_deliveries") = 5, py::arg("options") = RecipeOptions())
      .def(
          "enqueue",
          [](DistributedWorkQueue& q, std::string v, double delay) {
            return pending(q.enqueue(std::move(v), millis(delay, "delay")));
          },
          py::arg("value"), py::kw_only(), py::arg("delay") = 0.0)
      .def(
          "enqueue_all",
          [](DistributedWorkQueue& q, std::vector<std::string> v, double delay) {
            return pending(q.enqueue_all(std::move(v), millis(delay, "delay")));
          },
          py::arg("values"), py::kw_only(), py::arg("delay") = 0.0)
      .def("receive", [](DistributedWorkQueue& q) { return pending(q.receive()); })
      .def("try_receive", [](DistributedWorkQueue& q) { return pending(q.try_receive()); });
  def_work_queue(wq);

  // --- counter
  py::class_<DistributedAtomicLong, std::shared_ptr<DistributedAtomicLong>> counter(m, "DistributedAtomicLong");
  counter
      .def(py::init([](Client client, std::string name, const RecipeOptions& options) {
             return make_releasing<DistributedAtomicLong>(std::move(client), std::move(name), options);
           }),
           py::arg("client"), py::arg("name"), ETCD_PY_RECIPE_KWARGS)
      .def("get", [](DistributedAtomicLong& c) { return pending(c.get()); })
      .def(
          "set", [](DistributedAtomicLong& c, int64_t v) { return pending(c.set(v)); }, py::arg("value"))
      .def(
          "add", [](DistributedAtomicLong& c, int64_t d) { return pending(c.add(d)); }, py::arg("delta"))
      .def("increment", [](DistributedAtomicLong& c) { return pending(c.increment()); })
      .def("decrement", [](DistributedAtomicLong& c) { return pending(c.decrement()); })
      .def(
          "compare_and_set",
          [](DistributedAtomicLong& c, int64_t expected, int64_t desired) {
            return pending(c.compare_and_set(expected, desired));
          },
          py::arg("expected"), py::arg("desired"));
  def_recipe(counter);

  // --- barriers
  py::class_<DistributedBarrier, std::shared_ptr<DistributedBarrier>> gate(m, "DistributedBarrier");
  gate.def(py::init([](Client client, std::string name, bool wait_until_set, const RecipeOptions& options) {
             GateOptions g;
             g.wait_until_set = wait_until_set;
             return make_releasing<DistributedBarrier>(std::move(client), std::move(name), options, g);
           }),
           py::arg("client"), py::arg("name"), py::kw_only(), py::arg("wait_until_set") = false,
           py::arg("options") = RecipeOptions())
      .def("set", [](DistributedBarrier& b) { return pending(b.set()); })
      .def("remove", [](DistributedBarrier& b) { return pending(b.remove()); })
      .def("wait", [](DistributedBarrier& b) { return pending(b.wait()); })
      .def_property_readonly("is_set_by_me", &DistributedBarrier::is_set_by_me);
  def_recipe(gate);

  py::class_<DistributedBarrierWithCount, std::shared_ptr<DistributedBarrierWithCount>> rendezvous(
      m, "DistributedBarrierWithCount");
  rendezvous
      .def(py::init([](Client client, std::string name, int64_t parties, const RecipeOptions& options) {
             return make_releasing<DistributedBarrierWithCount>(std::move(client), std::move(name), parties, options);
           }),
           py::arg("client"), py::arg("name"), py::arg("parties"), ETCD_PY_RECIPE_KWARGS)
      .def_property_readonly("parties", &DistributedBarrierWithCount::parties)
      .def("wait", [](DistributedBarrierWithCount& b) { return pending(b.wait()); })
      .def("waiting", [](DistributedBarrierWithCount& b) { return pending(b.waiting()); });
  def_recipe(rendezvous);

  py::class_<DistributedDoubleBarrier, std::shared_ptr<DistributedDoubleBarrier>> dbl(m, "DistributedDoubleBarrier");
  dbl.def(py::init([](Client client, std::string name, int64_t parties, const RecipeOptions& options) {
            return make_releasing<DistributedDoubleBarrier>(std::move(client), std::move(name), parties, options);
          }),
          py::arg("client"), py::arg("name"), py::arg("parties"), ETCD_PY_RECIPE_KWARGS)
      .def_property_readonly("parties", &DistributedDoubleBarrier::parties)
      .def("enter", [](DistributedDoubleBarrier& b) { return pending(b.enter()); })
      .def("leave", [](DistributedDoubleBarrier& b) { return pending(b.leave()); })
      .def_property_readonly("entered", &DistributedDoubleBarrier::entered);
  def_recipe(dbl);

  // --- transient key/value
  py::class_<TransientKeyValue, std::shared_ptr<TransientKeyValue>> transient(m, "TransientKeyValue");
  transient
      .def(py::init([](Client client, std::string key, std::string value, const RecipeOptions& options) {
             return make_releasing<TransientKeyValue>(std::move(client), std::move(key), std::move(value), options);
           }),
           py::arg("client"), py::arg("key"), py::arg("value"), ETCD_PY_RECIPE_KWARGS)
      .def_property_readonly("value", [](const TransientKeyValue& t) { return py::bytes(t.value()); })
      .def(
          "set_value", [](TransientKeyValue& t, std::string v) { return pending(t.set_value(std::move(v))); },
          py::arg("value"));
  def_transient(transient);

  // --- caches (bytes; the typed ones are in bind_typed.cpp)
  bind_cache_types<std::string>(m, "CachedNode", "ChildEvent", "NodeEvent", [](const Node& n) -> py::object {
    if (!n.value) return py::none();
    return py::bytes(*n.value);
  });

  py::class_<PathChildrenCache, std::shared_ptr<PathChildrenCache>> pcc(m, "PathChildrenCache");
  pcc.def(py::init([](Client client, std::string path, const std::string& mode, bool subtree, int64_t page_size,
                      const RecipeOptions& options) {
            return make_releasing<PathChildrenCache>(std::move(client), std::move(path),
                                                     children_cache_options(mode, subtree, page_size, options));
          }),
          py::arg("client"), py::arg("path"), py::kw_only(), py::arg("start_mode") = "normal",
          py::arg("subtree") = false, py::arg("page_size") = 1000, py::arg("options") = RecipeOptions());
  def_children_cache(pcc);

  py::class_<NodeCache<std::string>, std::shared_ptr<NodeCache<std::string>>> nc(m, "NodeCache");
  nc.def(py::init([](Client client, std::string key, const RecipeOptions& options) {
           return make_releasing<NodeCache<std::string>>(std::move(client), std::move(key), options);
         }),
         py::arg("client"), py::arg("key"), ETCD_PY_RECIPE_KWARGS);
  def_node_cache(nc);

  // --- service discovery
  py::class_<ServiceInstance>(m, "ServiceInstance")
      .def(py::init([](std::string name, std::string id, std::string address, std::optional<uint16_t> port,
                       std::optional<uint16_t> ssl_port, std::string payload, bool enabled) {
             ServiceInstance i;
             i.name = std::move(name);
             i.id = std::move(id);
             i.address = std::move(address);
             i.port = port;
             i.ssl_port = ssl_port;
             i.payload = std::move(payload);
             i.enabled = enabled;
             return i;
           }),
           py::arg("name"), py::arg("id") = "", py::arg("address") = "", py::arg("port") = py::none(),
           py::arg("ssl_port") = py::none(), py::arg("payload") = "", py::arg("enabled") = true)
      .def_readwrite("name", &ServiceInstance::name)
      .def_readwrite("id", &ServiceInstance::id)
      .def_readwrite("address", &ServiceInstance::address)
      .def_readwrite("port", &ServiceInstance::port)
      .def_readwrite("ssl_port", &ServiceInstance::ssl_port)
      .def_readwrite("payload", &ServiceInstance::payload)
      .def_readwrite("enabled", &ServiceInstance::enabled)
      .def_readonly("registration_time_ms", &ServiceInstance::registration_time_ms)
      .def_property_readonly("endpoint", &ServiceInstance::endpoint)
      .def("__eq__", [](const ServiceInstance& a, const ServiceInstance& b) { return a == b; })
      .def("__repr__", [](const ServiceInstance& i) {
        return "ServiceInstance(name=" + i.name + ", id=" + i.id + ", endpoint=" + i.endpoint() + ")";
      });

  py::class_<ServiceRegistry, std::shared_ptr<ServiceRegistry>> registry(m, "ServiceRegistry");
  registry
      .def(py::init([](Client client, std::string base_path, const RecipeOptions& options) {
             ServiceRegistryOptions o;
             o.base_path = std::move(base_path);
             o.recipe = options;
             return make_releasing<ServiceRegistry>(std::move(client), std::move(o));
           }),
           py::arg("client"), py::kw_only(), py::arg("base_path") = kDefaultServicesPath,
           py::arg("options") = RecipeOptions())
      .def(
          "register_instance", [](ServiceRegistry& r, ServiceInstance i) { return pending(r.register_instance(i)); },
          py::arg("instance"))
      .def(
          "update", [](ServiceRegistry& r, ServiceInstance i) { return pending(r.update(i)); }, py::arg("instance"))
      .def(
          "unregister",
          [](ServiceRegistry& r, std::string service, std::string id) {
            return pending(r.unregister(std::move(service), std::move(id)));
          },
          py::arg("service"), py::arg("id"))
      .def("registered", &ServiceRegistry::registered)
      .def("key_of", &ServiceRegistry::key_of, py::arg("instance"));
  def_registration_listeners(registry, [](ServiceRegistry& r) -> ServiceRegistry& { return r; });
  def_recipe(registry);

  py::class_<ServiceCache, std::shared_ptr<ServiceCache>> scache(m, "ServiceCache");
  scache
      .def(py::init([](Client client, std::string service, std::string base_path, const RecipeOptions& options) {
             ServiceCacheOptions o;
             o.base_path = std::move(base_path);
             o.recipe = options;
             return make_releasing<ServiceCache>(std::move(client), std::move(service), std::move(o));
           }),
           py::arg("client"), py::arg("service"), py::kw_only(), py::arg("base_path") = kDefaultServicesPath,
           py::arg("options") = RecipeOptions())
      .def_property_readonly("service", &ServiceCache::service)
      .def("instances", &ServiceCache::instances);
  def_cache(scache);

  py::class_<ServiceProvider, std::shared_ptr<ServiceProvider>> provider(m, "ServiceProvider");
  provider
      .def(py::init([](Client client, std::string service, std::string base_path, const py::object& strat,
                       int errors_before_ejection, double ejection_time, const RecipeOptions& options) {
             ServiceProviderOptions o;
             o.base_path = std::move(base_path);
             o.strategy = strategy(strat);
             o.errors_before_ejection = errors_before_ejection;
             o.ejection_time = millis(ejection_time, "ejection_time");
             o.recipe = options;
             return make_releasing<ServiceProvider>(std::move(client), std::move(service), std::move(o));
           }),
           py::arg("client"), py::arg("service"), py::kw_only(), py::arg("base_path") = kDefaultServicesPath,
           py::arg("strategy") = "round_robin", py::arg("errors_before_ejection") = 2, py::arg("ejection_time") = 30.0,
           py::arg("options") = RecipeOptions())
      .def_property_readonly("service", &ServiceProvider::service)
      .def("wait_initialized", [](ServiceProvider& p) { return pending(p.wait_initialized()); })
      .def("pick", &ServiceProvider::pick, py::call_guard<py::gil_scoped_release>())
      .def("get_instance", [](ServiceProvider& p) { return pending(p.get_instance()); })
      .def("all_instances", &ServiceProvider::all_instances)
      .def("candidates", &ServiceProvider::candidates)
      // The provider's own cache: alive as long as the provider's Python object.
      .def(
          "cache", [](ServiceProvider& p) { return &p.cache(); }, py::return_value_policy::reference_internal)
      .def("note_error", &ServiceProvider::note_error, py::arg("instance"));
  def_recipe(provider);

  py::class_<ServiceDiscovery, std::shared_ptr<ServiceDiscovery>> discovery(m, "ServiceDiscovery");
  discovery
      .def(py::init([](Client client, std::string base_path, const RecipeOptions& options) {
             ServiceDiscoveryOptions o;
             o.base_path = std::move(base_path);
             o.recipe = options;
             return make_releasing<ServiceDiscovery>(std::move(client), std::move(o));
           }),
           py::arg("client"), py::kw_only(), py::arg("base_path") = kDefaultServicesPath,
           py::arg("options") = RecipeOptions())
      .def(
          "register_instance", [](ServiceDiscovery& d, ServiceInstance i) { return pending(d.register_instance(i)); },
          py::arg("instance"))
      .def(
          "update", [](ServiceDiscovery& d, ServiceInstance i) { return pending(d.update(i)); }, py::arg("instance"))
      .def(
          "unregister",
          [](ServiceDiscovery& d, std::string service, std::string id) {
            return pending(d.unregister(std::move(service), std::move(id)));
          },
          py::arg("service"), py::arg("id"))
      .def("query_names", [](ServiceDiscovery& d) { return pending(d.query_names()); })
      .def(
          "query_instances",
          [](ServiceDiscovery& d, std::string service) { return pending(d.query_instances(std::move(service))); },
          py::arg("service"))
      .def(
          "query_instance",
          [](ServiceDiscovery& d, std::string service, std::string id) {
            return pending(d.query_instance(std::move(service), std::move(id)));
          },
          py::arg("service"), py::arg("id"))
      .def(
          "cache", [](ServiceDiscovery& d, std::string service) { return releasing(d.cache(std::move(service))); },
          py::arg("service"))
      .def(
          "provider",
          [](ServiceDiscovery& d, std::string service, const py::object& strat) {
            ServiceProviderOptions o;
            o.base_path = d.base_path();
            o.strategy = strategy(strat);
            return releasing(d.provider(std::move(service), std::move(o)));
          },
          py::arg("service"), py::kw_only(), py::arg("strategy") = "round_robin");
  def_registration_listeners(discovery, [](ServiceDiscovery& d) -> ServiceRegistry& { return d.registry(); });
  def_recipe(discovery);
}

}  // namespace etcd::python
