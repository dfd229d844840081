// ServiceCache: include/etcd/recipes/service_cache.h. All of it is the
// children cache's; this names it and checks the service name.
#include "etcd/recipes/service_cache.h"

namespace etcd::recipes {

namespace {

PathChildrenCacheOptions children_options(ServiceCacheOptions& options) {
  PathChildrenCacheOptions out;
  out.start_mode = options.start_mode;
  out.recipe = std::move(options.recipe);
  return out;
}

}  // namespace

ServiceCache::ServiceCache(Client client, std::string service)
    : ServiceCache(std::move(client), std::move(service), ServiceCacheOptions()) {}

ServiceCache::ServiceCache(Client client, std::string service, ServiceCacheOptions options)
    : TypedPathChildrenCache(std::move(client), options.base_path + "/" + service, children_options(options),
                             std::make_shared<const ServiceInstanceCodec>(), "ServiceCache",
                             validate_segment("service name", service)) {}

std::string ServiceCache::service() const {
  const auto& p = path();
  return p.substr(p.rfind('/') + 1);
}

std::vector<ServiceInstance> ServiceCache::instances() const {
  std::vector<ServiceInstance> out;
  const auto snap = snapshot();
  out.reserve(snap.nodes.size());
  for (const auto& node : snap.nodes) {
    if (node.decoded()) out.push_back(*node.value);
  }
  return out;
}

}  // namespace etcd::recipes
