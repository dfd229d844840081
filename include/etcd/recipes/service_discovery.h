// ServiceDiscovery: one object for a process's part in service discovery —
// its own registrations (service_registry.h), queries of what is
// registered, and the caches (service_cache.h) and providers
// (service_provider.h) it makes, all closed with it.
//
//   etcd::recipes::ServiceDiscovery discovery(client);            // base path "/services"
//   discovery.register_instance({.name = "api", .id = "api-1", .address = "10.0.0.7", .port = 8080})
//       .wait().value();
//   auto names = discovery.query_names().wait().value();          // {"api", "billing", ...}
//   auto apis = discovery.query_instances("api").wait().value();  // one read, sorted by id
//   auto provider = discovery.provider("api");                    // started; closed with `discovery`
//   if (auto instance = provider->pick()) use(instance->endpoint());
//
// Queries are one Range each, read at the latest revision (linearizable);
// instances whose JSON does not decode are left out and recorded in
// errors(). For instances that change, a cache or a provider follows them
// with a watch instead of polling.
//
// The constructor does no I/O; lifecycle as every recipe (recipe.h).
// close() closes the registry (every registration goes at once) and every
// cache and provider made here that is still alive; a cache or provider the
// caller still holds then answers kClosed.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"
#include "etcd/recipes/service_cache.h"
#include "etcd/recipes/service_instance.h"
#include "etcd/recipes/service_provider.h"
#include "etcd/recipes/service_registry.h"

namespace etcd::recipes {

struct ServiceDiscoveryOptions {
  std::string base_path = kDefaultServicesPath;
  // Shared by the registry, caches and providers made here (client id,
  // registration TTL as session_ttl, metrics).
  RecipeOptions recipe{};
};

namespace detail {
class DiscoveryState;
}

class ServiceDiscovery : public RecipeHandle {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle).
  explicit ServiceDiscovery(Client client);
  ServiceDiscovery(Client client, ServiceDiscoveryOptions options);
  ServiceDiscovery(ServiceDiscovery&&) noexcept = default;
  ServiceDiscovery& operator=(ServiceDiscovery&&) noexcept = default;

  const std::string& base_path() const { return name(); }

  // This process's registrations: see ServiceRegistry.
  Call<void> register_instance(ServiceInstance instance);
  Call<void> update(ServiceInstance instance);
  [[nodiscard]] Call<bool> unregister(std::string service, std::string id);
  ServiceRegistry& registry();

  // The names of the services with at least one instance, sorted.
  Call<std::vector<std::string>> query_names();
  // The instances of `service`, sorted by id.
  Call<std::vector<ServiceInstance>> query_instances(std::string service);
  // One instance, or std::nullopt if it is not registered.
  Call<std::optional<ServiceInstance>> query_instance(std::string service, std::string id);

  // A started cache of `service` (shared options), closed with this object.
  // After close() (or with this object's bad input) these throw
  // etcd::Error, as start() does.
  std::shared_ptr<ServiceCache> cache(std::string service);
  // A started provider of `service`, closed with this object; `options`'
  // base_path and recipe options are this object's.
  std::shared_ptr<ServiceProvider> provider(std::string service);
  std::shared_ptr<ServiceProvider> provider(std::string service, ServiceProviderOptions options);

 private:
  std::shared_ptr<detail::DiscoveryState> state_;
};

}  // namespace etcd::recipes
