// ServiceDiscovery: include/etcd/recipes/service_discovery.h. A facade: the
// registry, caches and providers do the work; this object reads what is
// registered and closes what it made.
#include "etcd/recipes/service_discovery.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "../core/calls.h"
#include "../core/own_presence.h"
#include "../core/recipe_core.h"

namespace etcd::recipes {
namespace detail {

namespace {

// The service name and instance id of `key` under `prefix` (BASE/), if it
// is an instance's key (exactly BASE/NAME/ID).
std::optional<std::pair<std::string_view, std::string_view>> split_instance_key(std::string_view key,
                                                                                std::string_view prefix) {
  if (!key.starts_with(prefix)) return std::nullopt;
  key.remove_prefix(prefix.size());
  const auto slash = key.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == key.size()) return std::nullopt;
  if (key.find('/', slash + 1) != std::string_view::npos) return std::nullopt;
  return std::make_pair(key.substr(0, slash), key.substr(slash + 1));
}

}  // namespace

// What close() needs, apart from the core (the close action owns it).
struct DiscoveryChildren {
  std::mutex mu;
  std::vector<std::weak_ptr<RecipeHandle>> handles;
  bool closed = false;

  // Adds `h`, or closes it at once if this discovery is closed.
  void add(const std::shared_ptr<RecipeHandle>& h) {
    {
      std::lock_guard lock(mu);
      std::erase_if(handles, [](const auto& w) { return w.expired(); });
      if (!closed) return handles.push_back(h);
    }
    h->close();
  }
  void close_all() {
    std::vector<std::weak_ptr<RecipeHandle>> all;
    {
      std::lock_guard lock(mu);
      closed = true;
      all.swap(handles);
    }
    for (auto& w : all) {
      if (auto h = w.lock()) h->close();
    }
  }
};

class DiscoveryState {
 public:
  DiscoveryState(Client client, ServiceDiscoveryOptions options)
      : core(OwnPresence::make_core(client, "ServiceDiscovery", options.base_path, options.recipe, Status())),
        registry(std::make_shared<ServiceRegistry>(
            std::move(client), ServiceRegistryOptions{.base_path = options.base_path, .recipe = options.recipe})),
        made(std::make_shared<DiscoveryChildren>()),
        options_(std::move(options)) {
    made->add(registry);
  }

  // A Client for a cache or provider made now: closed or bad input throws,
  // as start() does.
  Client client_for_new() const {
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) throw Error(st);
    return link->client();
  }

  std::shared_ptr<ServiceCache> cache(std::string service) {
    auto c =
        std::make_shared<ServiceCache>(client_for_new(), std::move(service),
                                       ServiceCacheOptions{.base_path = options_.base_path,
                                                           .start_mode = PathChildrenCacheOptions::StartMode::kNormal,
                                                           .recipe = options_.recipe});
    made->add(c);
    start_quietly(*c);
    return c;
  }

  std::shared_ptr<ServiceProvider> provider(std::string service, ServiceProviderOptions options) {
    options.base_path = options_.base_path;
    options.recipe = options_.recipe;
    auto p = std::make_shared<ServiceProvider>(client_for_new(), std::move(service), std::move(options));
    made->add(p);
    start_quietly(*p);
    return p;
  }

  Call<std::vector<std::string>> query_names() {
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return core->ready<std::vector<std::string>>(st);
    const std::string prefix = core->name() + "/";
    return then_call<std::vector<std::string>>(
        link->client().get(prefix, GetOptions{.prefix = true, .keys_only = true}), link,
        [core = core, prefix](Result<GetResponse> r) -> Result<std::vector<std::string>> {
          if (!r.ok()) return core->named(std::move(r).status());
          std::set<std::string, std::less<>> names;
          for (const auto& kv : r->kvs) {
            if (auto parts = split_instance_key(kv.key, prefix)) names.emplace(parts->first);
          }
          return std::vector<std::string>(names.begin(), names.end());
        });
  }

  Call<std::vector<ServiceInstance>> query_instances(std::string service) {
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return core->ready<std::vector<ServiceInstance>>(st);
    if (Status st = validate_segment("service name", service); !st.ok()) {
      return core->ready<std::vector<ServiceInstance>>(core->named(st));
    }
    const std::string prefix = core->name() + "/";
    return then_call<std::vector<ServiceInstance>>(
        link->client().get(prefix + service + "/", GetOptions{.prefix = true}), link,
        [core = core, prefix](Result<GetResponse> r) -> Result<std::vector<ServiceInstance>> {
          if (!r.ok()) return core->named(std::move(r).status());
          std::vector<ServiceInstance> out;
          for (const auto& kv : r->kvs) {
            if (!split_instance_key(kv.key, prefix)) continue;  // deeper keys are not instances
            auto decoded = ServiceInstanceCodec::decode(kv.value, kv.key);
            if (decoded.ok()) {
              out.push_back(std::move(*decoded));
            } else {
              core->record_error(std::move(decoded).status());
            }
          }
          return out;  // sorted by key: by id
        });
  }

  Call<std::optional<ServiceInstance>> query_instance(std::string service, std::string id) {
    using Out = std::optional<ServiceInstance>;
    auto link = core->link();
    if (Status st = core->usable(link); !st.ok()) return core->ready<Out>(st);
    if (Status st = validate_segment("service name", service); !st.ok()) return core->ready<Out>(core->named(st));
    if (Status st = validate_segment("instance id", id); !st.ok()) return core->ready<Out>(core->named(st));
    return then_call<Out>(link->client().get(core->name() + "/" + service + "/" + id), link,
                          [core = core](Result<GetResponse> r) -> Result<Out> {
                            if (!r.ok()) return core->named(std::move(r).status());
                            const KeyValue* kv = r->first();
                            if (!kv) return Out();
                            auto decoded = ServiceInstanceCodec::decode(kv->value, kv->key);
                            if (!decoded.ok()) return std::move(decoded).status();
                            return Out(std::move(*decoded));
                          });
  }

  std::shared_ptr<RecipeCore> core;
  std::shared_ptr<ServiceRegistry> registry;
  std::shared_ptr<DiscoveryChildren> made;

 private:
  static void start_quietly(RecipeHandle& h) {
    try {
      h.start();
    } catch (const Error&) {
      // Its own bad input: reported by its every operation.
    }
  }

  ServiceDiscoveryOptions options_;
};

}  // namespace detail

ServiceDiscovery::ServiceDiscovery(Client client) : ServiceDiscovery(std::move(client), ServiceDiscoveryOptions()) {}

ServiceDiscovery::ServiceDiscovery(Client client, ServiceDiscoveryOptions options)
    : state_(std::make_shared<detail::DiscoveryState>(std::move(client), std::move(options))) {
  state_->core->set_close_action([made = state_->made] { made->close_all(); });
  bind_recipe(state_->core);
}

Call<void> ServiceDiscovery::register_instance(ServiceInstance instance) {
  if (Status st = state_->core->usable(); !st.ok()) return state_->core->ready<void>(st);
  return state_->registry->register_instance(std::move(instance));
}
Call<void> ServiceDiscovery::update(ServiceInstance instance) {
  if (Status st = state_->core->usable(); !st.ok()) return state_->core->ready<void>(st);
  return state_->registry->update(std::move(instance));
}
Call<bool> ServiceDiscovery::unregister(std::string service, std::string id) {
  if (Status st = state_->core->usable(); !st.ok()) return state_->core->ready<bool>(st);
  return state_->registry->unregister(std::move(service), std::move(id));
}
ServiceRegistry& ServiceDiscovery::registry() { return *state_->registry; }
Call<std::vector<std::string>> ServiceDiscovery::query_names() { return state_->query_names(); }
Call<std::vector<ServiceInstance>> ServiceDiscovery::query_instances(std::string service) {
  return state_->query_instances(std::move(service));
}
Call<std::optional<ServiceInstance>> ServiceDiscovery::query_instance(std::string service, std::string id) {
  return state_->query_instance(std::move(service), std::move(id));
}
std::shared_ptr<ServiceCache> ServiceDiscovery::cache(std::string service) { return state_->cache(std::move(service)); }
std::shared_ptr<ServiceProvider> ServiceDiscovery::provider(std::string service) {
  return provider(std::move(service), ServiceProviderOptions());
}
std::shared_ptr<ServiceProvider> ServiceDiscovery::provider(std::string service, ServiceProviderOptions options) {
  return state_->provider(std::move(service), std::move(options));
}

}  // namespace etcd::recipes
