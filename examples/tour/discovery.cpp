// Service discovery as a service and its callers use it: register, query,
// a provider's picks with error ejection, unregister — blocking and with
// co_await (a named ServiceInstance: GCC 12 destroys a braced aggregate that
// owns memory twice inside a co_await expression, docs/client.md).
#include "etcd/recipes/service_discovery.h"
#include "tour.h"

ETCD_TOUR_SECTION(discovery_blocking) {
  etcd::recipes::ServiceDiscovery discovery(client,
                                            etcd::recipes::ServiceDiscoveryOptions{.base_path = prefix + "services"});
  discovery.register_instance({.name = "api", .id = "api-1", .address = "10.0.0.7", .port = 8080}).wait().value();
  discovery.register_instance({.name = "api", .id = "api-2", .address = "10.0.0.8", .port = 8080}).wait().value();
  tour::expect(discovery.query_names().wait().value() == std::vector<std::string>{"api"}, "one service");
  tour::expect(discovery.query_instances("api").wait().value().size() == 2, "two instances");

  etcd::recipes::ServiceProviderOptions options;
  options.errors_before_ejection = 1;
  options.ejection_time = std::chrono::seconds(30);
  auto provider = discovery.provider("api", options);
  provider->wait_initialized().timeout(std::chrono::seconds(5)).wait().value();
  auto first = provider->pick();
  tour::expect(first.has_value(), "a pick");
  provider->note_error(*first);  // one error ejects it (errors_before_ejection = 1)
  for (int i = 0; i < 10; ++i) tour::expect(provider->pick()->id != first->id, "an ejected instance is left out");

  tour::expect(discovery.unregister("api", "api-1").wait().value(), "unregistered");
  discovery.close();  // unregisters api-2, closes the provider
  tour::expect(provider->closed(), "closed with the facade");
}

ETCD_TOUR_TASK(discovery_coawait) {
  etcd::recipes::ServiceRegistryOptions registry_options;
  registry_options.base_path = prefix + "services";
  etcd::recipes::ServiceRegistry registry(client, registry_options);
  etcd::recipes::ServiceInstance api{.name = "api", .id = "api-1", .address = "10.0.0.7", .port = 8080};
  tour::expect((co_await registry.register_instance(api)).ok(), "registered");
  api.enabled = false;
  tour::expect((co_await registry.update(api)).ok(), "disabled in place");

  etcd::recipes::ServiceProviderOptions provider_options;
  provider_options.base_path = registry_options.base_path;
  etcd::recipes::ServiceProvider provider(client, "api", provider_options);
  auto none = co_await provider.get_instance();
  tour::expect(none.status().code() == etcd::StatusCode::kNotFound, "a disabled instance is never picked");
  tour::expect((co_await registry.unregister("api", "api-1")).value(), "unregistered");
  co_return;
}
