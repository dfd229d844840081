// Queues, the work queue, the counter, barriers, transient keys, caches and
// service discovery. Values are bytes (the untyped recipes); typed values
// are the caller's to encode (json.dumps, ...).
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
#include "recipe_binding.h"

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

std::chrono::milliseconds millis(double seconds, const char* what) { return to_duration(seconds, what); }

const char* child_event_name(ChildEvent<std::string>::Type t) {
  using T = ChildEvent<std::string>::Type;
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

const char* node_event_name(NodeEvent<std::string>::Type t) {
  using T = NodeEvent<std::string>::Type;
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

PathChildrenCacheOptions::StartMode start_mode(const std::string& s) {
  if (s == "normal") return PathChildrenCacheOptions::StartMode::kNormal;
  if (s == "build_initial_cache") return PathChildrenCacheOptions::StartMode::kBuildInitialCache;
  if (s == "post_initialized_event") return PathChildrenCacheOptions::StartMode::kPostInitializedEvent;
  throw_status(InvalidArgument("start_mode must be 'normal', 'build_initial_cache' or 'post_initialized_event' (got '" +
                               s + "')"));
}

std::shared_ptr<ProviderStrategy> strategy(const std::string& s) {
  if (s == "round_robin") return round_robin_strategy();
  if (s == "random") return random_strategy();
  if (s == "sticky") return sticky_strategy();
  throw_status(InvalidArgument("strategy must be 'round_robin', 'random' or 'sticky' (got '" + s + "')"));
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

}  // namespace

void bind_more_recipes(py::module_& m) {
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
      .def("size", [](DistributedQueue& q) { return pending(q.size()); });
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
      .def("size", [](DistributedPriorityQueue& q) { return pending(q.size()); });
  def_recipe(pq);

  // --- work queue
  py::class_<WorkItem>(m, "WorkItem")
      .def_property_readonly("value", [](const WorkItem& w) { return py::bytes(w.value()); })
      .def_property_readonly("id", &WorkItem::id)
      .def_property_readonly("key", &WorkItem::key)
      .def_property_readonly("attempt", &WorkItem::attempt)
      .def_property_readonly("claim", &WorkItem::claim)
      .def_property_readonly("lost", [](const WorkItem& w) { return w.stop_token().stop_requested(); })
      .def("ack", [](const WorkItem& w) { return pending(w.ack()); })
      .def(
          "requeue",
          [](const WorkItem& w, std::optional<double> delay) {
            return delay ? pending(w.requeue(millis(*delay, "delay"))) : pending(w.requeue());
          },
          py::arg("delay") = py::none());
  py::class_<DeadLetter>(m, "DeadLetter")
      .def_readonly("id", &DeadLetter::id)
      .def_readonly("key", &DeadLetter::key)
      .def_property_readonly("value", [](const DeadLetter& d) { return py::bytes(d.value); })
      .def_readonly("deliveries", &DeadLetter::deliveries)
      .def_readonly("reason", &DeadLetter::reason)
      .def_property_readonly("since",
                             [](const DeadLetter& d) {
                               return std::chrono::duration<double>(d.since.time_since_epoch()).count();
                             })
      .def_readonly("revision", &DeadLetter::revision);
  py::class_<DistributedWorkQueue, std::shared_ptr<DistributedWorkQueue>> wq(m, "DistributedWorkQueue");
  wq.def(py::init([](Client client, std::string name, double visibility_timeout, int max_deliveries,
                     const RecipeOptions& options) {
           WorkQueueOptions o;
           o.visibility_timeout =
               std::chrono::duration_cast<std::chrono::seconds>(millis(visibility_timeout, "visibility_timeout"));
           o.max_deliveries = max_deliveries;
           o.recipe = options;
           return make_releasing<DistributedWorkQueue>(std::move(client), std::move(name), std::move(o));
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
      .def("try_receive", [](DistributedWorkQueue& q) { return pending(q.try_receive()); })
      .def("size", [](DistributedWorkQueue& q) { return pending(q.size()); })
      .def("dead_letters", [](DistributedWorkQueue& q) { return pending(q.dead_letters()); })
      .def(
          "requeue_dead", [](DistributedWorkQueue& q, std::string id) { return pending(q.requeue_dead(std::move(id))); },
          py::arg("id"))
      .def(
          "purge_dead", [](DistributedWorkQueue& q, std::string id) { return pending(q.purge_dead(std::move(id))); },
          py::arg("id"));
  def_recipe(wq);

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
      .def_property_readonly("key", &TransientKeyValue::key)
      .def_property_readonly("value", [](const TransientKeyValue& t) { return py::bytes(t.value()); })
      .def(
          "set_value", [](TransientKeyValue& t, std::string v) { return pending(t.set_value(std::move(v))); },
          py::arg("value"))
      .def("create", [](TransientKeyValue& t) { return pending(t.create()); })
      .def("release", [](TransientKeyValue& t) { return pending(t.release()); })
      .def_property_readonly("is_held", &TransientKeyValue::is_held)
      .def_property_readonly("create_revision", &TransientKeyValue::create_revision)
      .def_property_readonly("lease", &TransientKeyValue::lease)
      .def(
          "on_lost",
          [](TransientKeyValue& t, py::object f) {
            return wrap(t.on_lost(listener<const Status&>(
                std::move(f), "etcd_recipes: TransientKeyValue.on_lost listener",
                [](const py::object& cb, const Status& s) { cb(make_exception(s)); })));
          },
          py::arg("listener"))
      .def(
          "on_restored",
          [](TransientKeyValue& t, py::object f) {
            return wrap(t.on_restored(listener<>(std::move(f), "etcd_recipes: TransientKeyValue.on_restored listener",
                                                 [](const py::object& cb) { cb(); })));
          },
          py::arg("listener"));
  def_recipe(transient);

  // --- caches
  py::class_<Node>(m, "CachedNode")
      .def_readonly("key", &Node::key)
      .def_readonly("name", &Node::name)
      .def_property_readonly("value",
                             [](const Node& n) -> py::object {
                               if (!n.value) return py::none();
                               return py::bytes(*n.value);
                             })
      .def_readonly("create_revision", &Node::create_revision)
      .def_readonly("mod_revision", &Node::mod_revision)
      .def_readonly("version", &Node::version)
      .def_readonly("lease", &Node::lease)
      .def("__repr__", [](const Node& n) {
        return "CachedNode(name=" + n.name + ", value=" +
               (n.value ? py::repr(py::bytes(*n.value)).cast<std::string>() : std::string("None")) +
               ", mod_revision=" + std::to_string(n.mod_revision) + ")";
      });
  py::class_<ChildEvent<std::string>>(m, "ChildEvent")
      .def_property_readonly("type", [](const ChildEvent<std::string>& e) { return child_event_name(e.type); })
      .def_readonly("key", &ChildEvent<std::string>::key)
      .def_readonly("name", &ChildEvent<std::string>::name)
      .def_readonly("previous", &ChildEvent<std::string>::previous)
      .def_readonly("current", &ChildEvent<std::string>::current)
      .def_readonly("revision", &ChildEvent<std::string>::revision)
      .def_readonly("resync", &ChildEvent<std::string>::resync)
      .def("__repr__", [](const ChildEvent<std::string>& e) {
        return std::string("ChildEvent(") + child_event_name(e.type) + ", " + e.name + ")";
      });
  py::class_<NodeEvent<std::string>>(m, "NodeEvent")
      .def_property_readonly("type", [](const NodeEvent<std::string>& e) { return node_event_name(e.type); })
      .def_readonly("previous", &NodeEvent<std::string>::previous)
      .def_readonly("current", &NodeEvent<std::string>::current)
      .def_readonly("revision", &NodeEvent<std::string>::revision)
      .def_readonly("resync", &NodeEvent<std::string>::resync);

  py::class_<PathChildrenCache, std::shared_ptr<PathChildrenCache>> pcc(m, "PathChildrenCache");
  pcc.def(py::init([](Client client, std::string path, const std::string& mode, bool subtree, int64_t page_size,
                      const RecipeOptions& options) {
            PathChildrenCacheOptions o;
            o.start_mode = start_mode(mode);
            o.scope = subtree ? PathChildrenCacheOptions::Scope::kSubtree
                              : PathChildrenCacheOptions::Scope::kDirectChildren;
            o.page_size = page_size;
            o.recipe = options;
            return make_releasing<PathChildrenCache>(std::move(client), std::move(path), std::move(o));
          }),
          py::arg("client"), py::arg("path"), py::kw_only(), py::arg("start_mode") = "normal",
          py::arg("subtree") = false, py::arg("page_size") = 1000, py::arg("options") = RecipeOptions())
      .def_property_readonly("path", &PathChildrenCache::path)
      .def("snapshot",
           [](const PathChildrenCache& c) {
             auto snap = c.snapshot();
             py::dict nodes;
             for (auto& n : snap.nodes) {
               py::str key(n.name);  // before n is moved from
               nodes[key] = py::cast(std::move(n));
             }
             return py::make_tuple(nodes, snap.revision);
           })
      .def(
          "get", [](const PathChildrenCache& c, const std::string& name) { return c.get(name); }, py::arg("name"))
      .def(
          "on_event",
          [](PathChildrenCache& c, py::object f) {
            return wrap(c.on_event(listener<const ChildEvent<std::string>&>(
                std::move(f), "etcd_recipes: PathChildrenCache.on_event listener",
                [](const py::object& cb, const ChildEvent<std::string>& e) { cb(e); })));
          },
          py::arg("listener"));
  def_cache(pcc);

  py::class_<NodeCache<std::string>, std::shared_ptr<NodeCache<std::string>>> nc(m, "NodeCache");
  nc.def(py::init([](Client client, std::string key, const RecipeOptions& options) {
           return make_releasing<NodeCache<std::string>>(std::move(client), std::move(key), options);
         }),
         py::arg("client"), py::arg("key"), ETCD_PY_RECIPE_KWARGS)
      .def_property_readonly("key", &NodeCache<std::string>::key)
      .def_property_readonly("current", &NodeCache<std::string>::current)
      .def_property_readonly("exists", &NodeCache<std::string>::exists)
      .def(
          "on_change",
          [](NodeCache<std::string>& c, py::object f) {
            return wrap(c.on_change(listener<const NodeEvent<std::string>&>(
                std::move(f), "etcd_recipes: NodeCache.on_change listener",
                [](const py::object& cb, const NodeEvent<std::string>& e) { cb(e); })));
          },
          py::arg("listener"));
  def_cache(nc);

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
      .def(py::init([](Client client, std::string service, std::string base_path, const std::string& strat,
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
      .def("pick", &ServiceProvider::pick)
      .def("get_instance", [](ServiceProvider& p) { return pending(p.get_instance()); })
      .def("all_instances", &ServiceProvider::all_instances)
      .def("candidates", &ServiceProvider::candidates)
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
          [](ServiceDiscovery& d, std::string service, const std::string& strat) {
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
