// Service discovery: how fast a registry registers, and what a provider's
// pick() costs (no I/O: a lock, a revision check, the strategy, a copy).
#include <chrono>
#include <cstdio>
#include <string>

#include "bench.h"
#include "etcd/recipes/service_discovery.h"

namespace bench::metrics_discovery {
namespace {

using etcd::recipes::ServiceInstance;

constexpr int kInstances = 8;

// Appended, not "i" + to_string(n): GCC 12 at -O3 warns (-Wrestrict) about
// the concatenation of a literal and a temporary, a known false positive.
std::string id_of(int n) {
  std::string id = "i";
  id += std::to_string(n);
  return id;
}

etcd::recipes::ServiceInstance instance(std::string id) {
  return ServiceInstance{
      .name = "api", .id = std::move(id), .address = "10.0.0.7", .port = 8080, .payload = R"({"zone":"eu-west-1a"})"};
}

// Registrations one at a time, each a new id (a lease grant and one create
// Txn); all are removed when the registry closes.
double register_seq(Context& ctx) {
  const std::string base = Context::key_prefix("discovery_register_seq") + "services";
  etcd::recipes::ServiceRegistry registry(ctx.client, etcd::recipes::ServiceRegistryOptions{.base_path = base});
  int next = 0;
  const auto rpcs_before = ctx.client.stats().rpcs_started;
  const double rate = measure_sequential(
      ctx, [&] { registry.register_instance(instance(id_of(next++))).timeout(kCallBound).wait().value(); });
  const double rpcs = static_cast<double>(ctx.client.stats().rpcs_started - rpcs_before);
  char line[200];
  std::snprintf(line, sizeof line, "discovery_register_seq: %d registrations, %.2f RPCs each (lease grant + Txn)", next,
                rpcs / next);
  ctx.note(line);
  registry.close();
  etcd::DeleteOptions all;
  all.prefix = true;
  ctx.client.del(base + "/", all).timeout(std::chrono::seconds(30)).wait().value();
  return rate;
}

// Nanoseconds per pick() among kInstances cached instances, round robin.
double pick_ns(Context& ctx) {
  const std::string base = Context::key_prefix("provider_pick_ns") + "services";
  etcd::recipes::ServiceRegistry registry(ctx.client, etcd::recipes::ServiceRegistryOptions{.base_path = base});
  for (int i = 0; i < kInstances; ++i) registry.register_instance(instance(id_of(i))).timeout(kCallBound).wait().value();
  etcd::recipes::ServiceProvider provider(ctx.client, "api", etcd::recipes::ServiceProviderOptions{.base_path = base});
  provider.wait_initialized().timeout(std::chrono::seconds(10)).wait().value();
  const int picks = ctx.settings.quick ? 200'000 : 2'000'000;
  std::size_t endpoint_bytes = 0;  // keeps the picks from being optimised away
  for (int i = 0; i < picks / 10; ++i) endpoint_bytes += provider.pick()->address.size();
  const auto t0 = Clock::now();
  for (int i = 0; i < picks; ++i) endpoint_bytes += provider.pick()->address.size();
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / picks;
  if (endpoint_bytes == 0) throw std::runtime_error("no picks");
  provider.close();
  registry.close();
  return ns;
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "discovery_register_seq",
     .unit = "registrations/s",
     .order = 506,
     .run = [](Context& ctx) { return register_seq(ctx); }},
    // Nanoseconds with decimals; no ratio (no I/O to compare with).
    {.name = "provider_pick_ns",
     .unit = "ns",
     .kind = Kind::kLatency,
     .base = "",
     .order = 507,
     .run = [](Context& ctx) { return pick_ns(ctx); }},
});

}  // namespace
}  // namespace bench::metrics_discovery
