// ServiceProvider: picks one instance of a service for each request, from a
// ServiceCache (service_cache.h), with a strategy and error ejection.
//
//   etcd::recipes::ServiceProvider api(client, "api",
//       {.strategy = etcd::recipes::round_robin_strategy(), .errors_before_ejection = 3,
//        .ejection_time = std::chrono::seconds(30)});
//   api.start();
//   api.wait_initialized().timeout(5s).wait().value();
//   if (auto instance = api.pick()) {                       // std::nullopt: none to pick
//     if (!call(instance->endpoint())) api.note_error(*instance);
//   }
//   auto one = api.get_instance().timeout(2s).wait();        // waits for the first read; kNotFound when none
//
// What it picks from: the cached instances that are enabled and not
// ejected, sorted by id. pick() sees the cache as it is at that moment:
// once the cache has applied an instance's removal (its revision moved
// past it), no later pick() returns it — the candidates are rebuilt from
// the cache whenever its revision changed, not when a listener gets round
// to it.
//
// Ejection (Curator's "down instance policy"): note_error(instance) counts
// errors per instance id; the errors_before_ejection-th one leaves the
// instance out for ejection_time, after which it rejoins with its count
// reset. An ejected instance that is the only one left is still left out:
// pick() gives std::nullopt rather than an instance known to fail.
//
// Strategies: random_strategy(), round_robin_strategy() (the default),
// sticky_strategy() (the same instance while it is a candidate, a random
// other one when it no longer is), or your own ProviderStrategy. pick()
// calls the strategy under the provider's lock, so a strategy object used
// by one provider needs no locking of its own; the built-in ones may also
// be shared.
//
// Cost of pick(): no I/O; a lock, a comparison of revisions, the strategy
// and a copy of the instance (bench: provider_pick_ns). The constructor
// does no I/O; lifecycle as every recipe (recipe.h): start() starts the
// cache, close() closes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"
#include "etcd/recipes/service_cache.h"
#include "etcd/recipes/service_instance.h"

namespace etcd::recipes {

class ProviderStrategy {
 public:
  virtual ~ProviderStrategy() = default;
  // The index of the instance to use among `candidates` (never empty,
  // sorted by id), or std::nullopt to give none.
  virtual std::optional<std::size_t> pick(std::span<const ServiceInstance> candidates) = 0;
};

std::shared_ptr<ProviderStrategy> random_strategy();
std::shared_ptr<ProviderStrategy> round_robin_strategy();
std::shared_ptr<ProviderStrategy> sticky_strategy();

struct ServiceProviderOptions {
  std::string base_path = kDefaultServicesPath;
  // Null: round_robin_strategy().
  std::shared_ptr<ProviderStrategy> strategy{};
  // Errors noted against an instance before it is left out; at least 1.
  int errors_before_ejection = 2;
  // How long an ejected instance stays out; at least 1 ms.
  std::chrono::milliseconds ejection_time{30000};
  RecipeOptions recipe{};
};

namespace detail {
class ProviderState;
}

class ServiceProvider : public RecipeHandle {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle). Bad options
  // (errors_before_ejection < 1, ejection_time < 1 ms, a service name that
  // is not one key segment) are Errc::kBadArgument.
  ServiceProvider(Client client, std::string service);
  ServiceProvider(Client client, std::string service, ServiceProviderOptions options);
  ServiceProvider(ServiceProvider&&) noexcept = default;
  ServiceProvider& operator=(ServiceProvider&&) noexcept = default;

  std::string service() const;

  // Completes once the cache's first read is applied (starting it).
  Call<void> wait_initialized();
  // An instance (see the top of this file), or std::nullopt when there is
  // none to pick or the first read is not done yet.
  std::optional<ServiceInstance> pick();
  // Waits for the first read, then picks; NOT_FOUND when there is none to
  // pick (the message says how many are registered, ejected, disabled).
  Call<ServiceInstance> get_instance();
  // Every cached instance that decodes, ejected and disabled ones included.
  std::vector<ServiceInstance> all_instances() const;
  // The candidates pick() chooses among now.
  std::vector<ServiceInstance> candidates();

  // A request to `instance` failed (see Ejection above). Only its id counts.
  void note_error(const ServiceInstance& instance);

  // The cache the provider picks from (for its events and snapshot).
  ServiceCache& cache();

 private:
  std::shared_ptr<detail::ProviderState> state_;
};

}  // namespace etcd::recipes
