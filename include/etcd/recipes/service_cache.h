// ServiceCache: the registered instances of one service (service_registry.h),
// kept current by a watch — a PathChildrenCache (path_children_cache.h) of
// BASE/NAME whose values are ServiceInstance JSON.
//
//   etcd::recipes::ServiceCache api(client, "api");
//   auto sub = api.on_event([](const etcd::recipes::ServiceCache::Event& e) { ... });   // kAdded, kUpdated, kRemoved
//   api.start();
//   api.wait_initialized().timeout(5s).wait().value();
//   for (const auto& instance : api.instances()) connect(instance.endpoint());
//
// Everything the children cache promises holds: read at a revision and
// watched from the next, events in revision order on the client's executor,
// exactly the differences after a gap. An instance whose JSON does not
// decode stays out of instances() and is reported in errors() (once per
// stored version), never thrown.
#pragma once

#include <string>
#include <vector>

#include "etcd/recipes/path_children_cache.h"
#include "etcd/recipes/service_instance.h"
#include "etcd/recipes/service_registry.h"

namespace etcd::recipes {

struct ServiceCacheOptions {
  // Where the registries write: base_path/NAME/ID.
  std::string base_path = kDefaultServicesPath;
  PathChildrenCacheOptions::StartMode start_mode = PathChildrenCacheOptions::StartMode::kNormal;
  RecipeOptions recipe{};
};

class ServiceCache : public TypedPathChildrenCache<ServiceInstance, ServiceInstanceCodec> {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle). A service name that is
  // not one key segment is Errc::kBadArgument.
  ServiceCache(Client client, std::string service);
  ServiceCache(Client client, std::string service, ServiceCacheOptions options);
  ServiceCache(ServiceCache&&) noexcept = default;
  ServiceCache& operator=(ServiceCache&&) noexcept = default;

  // The service's name.
  std::string service() const;
  // Every instance that decodes now, sorted by id.
  std::vector<ServiceInstance> instances() const;
};

}  // namespace etcd::recipes
