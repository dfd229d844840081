// PathChildrenCache loads at scale (--scale): a cache of 100,000 and one of
// 1,000,000 keys (40-byte keys, 100-byte values, as cache_load_100k_s)
// under two prefixes of one private member, each loaded by a new cache
// with its defaults. The value is the 1M load; the detail says how it
// grows (1M against 100k: 10 is linear) and how many reads each took.
#include <cstdio>
#include <string>
#include <utility>

#include "bench.h"
#include "etcd/recipes/path_children_cache.h"

namespace bench::metrics_cache_scale {
namespace {

using Seconds = std::chrono::duration<double>;

constexpr std::size_t kKeyBytes = 40;
constexpr std::size_t kValueBytes = 100;
constexpr auto kLoadBound = std::chrono::seconds(120);

struct Loaded {
  double seconds = 0;
  double reads = 0;  // Range RPCs the client sent for the load
};

// Fills `prefix` with `count` keys and loads a new cache of it.
Loaded fill_and_load(etcd::Client& client, const std::string& prefix, int count) {
  const auto key_of = [&](int i) {
    char n[64];
    std::snprintf(n, sizeof n, "%s/%0*d", prefix.c_str(), static_cast<int>(kKeyBytes - prefix.size() - 1), i);
    return std::string(n);
  };
  const std::string value(kValueBytes, 'v');
  put_all(client, count, [&](int i) { return std::pair{key_of(i), value}; }, Clock::now() + std::chrono::minutes(10));
  etcd::recipes::PathChildrenCache cache(client, prefix);
  const auto rpcs_before = client.stats().rpcs_started;
  const auto started = Clock::now();
  cache.start();
  cache.wait_initialized().timeout(kLoadBound).wait().value();
  Loaded loaded{.seconds = Seconds(Clock::now() - started).count(),
                .reads = static_cast<double>(client.stats().rpcs_started - rpcs_before)};
  if (cache.size() != static_cast<std::size_t>(count)) {
    throw std::runtime_error(fmt("the cache of %s loaded %zu keys, not %d", prefix.c_str(), cache.size(), count));
  }
  cache.close();
  return loaded;
}

double cache_load_1m(Context& ctx) {
  auto member = ctx.private_member();
  etcd::Client client(worker_client_options(member->endpoints_csv()));
  const Loaded small = fill_and_load(client, "scale/cache-100k", 100'000);
  const Loaded large = fill_and_load(client, "scale/cache-1m", 1'000'000);
  ctx.set_detail(ctx.metric(), {{"load_s_100k", small.seconds},
                                {"reads_100k", small.reads},
                                {"reads_1m", large.reads},
                                {"ratio_1m_to_100k", large.seconds / small.seconds}});
  ctx.note(fmt("cache_load_s_1m: etcd %s, PathChildrenCache loads (defaults) of 100,000 and 1,000,000 keys of %zu + "
               "%zu bytes: %.2f s in %.0f RPCs, %.2f s in %.0f RPCs (%.1fx; 10x is linear)",
               member->version().text.c_str(), kKeyBytes, kValueBytes, small.seconds, small.reads, large.seconds,
               large.reads, large.seconds / small.seconds));
  return large.seconds;
}

[[maybe_unused]] const bool kRegistered =
    add_metrics({scale_metric("cache_load_s_1m", "s", Kind::kCost, 4050, cache_load_1m)});

}  // namespace
}  // namespace bench::metrics_cache_scale
