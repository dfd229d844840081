// PathChildrenCache: propagation latency (a put → the cache's listener
// runs), the time to load a 100k-key prefix, and the heap it costs per key.
//
// Propagation is sampled like watch_latency (one put at a time, the next
// only once the previous one was seen; the send time travels in the
// value), and interleaved with samples of a raw prefix watch on the same
// client, on a neighbouring prefix, so that the notes give the cache's
// cost over a watch measured in the same window. The registered comparison
// cache_propagation_vs_watch divides by watch_latency_p50_ms of the run.
#include <malloc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "etcd/recipes/path_children_cache.h"
#include "etcd/txn.h"

namespace bench::metrics_cache {
namespace {

using Millis = std::chrono::duration<double, std::milli>;
using etcd::recipes::ChildEvent;
using etcd::recipes::PathChildrenCache;
using etcd::recipes::PathChildrenCacheOptions;

double percentile(const std::vector<double>& sorted, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted.at(std::max<std::size_t>(rank, 1) - 1);
}

double elapsed_ms(const std::string& value, Clock::time_point now) {
  Clock::rep sent = 0;
  std::from_chars(value.data(), value.data() + value.size(), sent);
  return Millis(now - Clock::time_point(Clock::duration(sent))).count();
}

struct Propagation {
  std::vector<double> cache_ms;  // sorted
  std::vector<double> watch_ms;  // sorted, the interleaved raw watch
};

Propagation sample_propagation(Context& ctx) {
  const std::string path = Context::key_prefix("cache_propagation") + "cache";
  const std::string raw = Context::key_prefix("cache_propagation") + "watch/";
  const int warmup = ctx.settings.quick ? 20 : 50;
  const int measured = ctx.settings.quick ? 200 : 500;

  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<double> cache_ms;
    std::vector<double> watch_ms;
    std::optional<etcd::Status> error;
  };
  auto shared = std::make_shared<Shared>();

  PathChildrenCacheOptions options;
  options.start_mode = PathChildrenCacheOptions::StartMode::kBuildInitialCache;
  PathChildrenCache cache(ctx.client, path, options);
  auto sub = cache.on_event([shared](const ChildEvent<std::string>& e) {
    const auto now = Clock::now();
    if (!e.current) return;
    std::lock_guard lock(shared->mu);
    shared->cache_ms.push_back(elapsed_ms(*e.current->value, now));
    shared->cv.notify_all();
  });
  cache.start();
  cache.wait_initialized().timeout(std::chrono::seconds(10)).wait().value();

  etcd::WatchOptions w;
  w.prefix = true;
  etcd::Watcher watcher = ctx.client.watch(raw, w, [shared](etcd::Result<etcd::WatchResponse> r) {
    const auto now = Clock::now();
    std::lock_guard lock(shared->mu);
    if (!r.ok()) {
      shared->error = r.status();
    } else {
      for (const auto& event : r->events) {
        if (event.type == etcd::Event::Type::kPut) shared->watch_ms.push_back(elapsed_ms(event.kv.value, now));
      }
    }
    shared->cv.notify_all();
  });
  if (!watcher.wait_created(Clock::now() + std::chrono::seconds(10))) {
    throw std::runtime_error("watch on " + raw + " was not created within 10 s");
  }

  // Each round: one put seen by the cache, one seen by the raw watch.
  const std::size_t rounds = static_cast<std::size_t>(warmup + measured);
  for (std::size_t i = 0; i < rounds; ++i) {
    for (int side = 0; side < 2; ++side) {
      const std::string key = (side == 0 ? path + "/" : raw) + std::to_string(i % 16);
      const auto sent = Clock::now();
      ctx.client.put(key, std::to_string(sent.time_since_epoch().count())).timeout(kCallBound).wait().value();
      std::unique_lock lock(shared->mu);
      auto& got = side == 0 ? shared->cache_ms : shared->watch_ms;
      if (!shared->cv.wait_for(lock, std::chrono::seconds(5), [&] { return shared->error || got.size() > i; })) {
        throw std::runtime_error(std::string(side == 0 ? "cache" : "watch") + " event " + std::to_string(i) +
                                 " not delivered within 5 s");
      }
      if (shared->error) throw etcd::Error(*shared->error);
    }
  }
  watcher.cancel();
  cache.close();

  std::lock_guard lock(shared->mu);
  Propagation p{{shared->cache_ms.begin() + warmup, shared->cache_ms.end()},
                {shared->watch_ms.begin() + warmup, shared->watch_ms.end()}};
  std::ranges::sort(p.cache_ms);
  std::ranges::sort(p.watch_ms);
  char line[240];
  std::snprintf(line, sizeof line,
                "cache propagation: %zu samples, min %.3f p10 %.3f p90 %.3f max %.3f ms; interleaved raw watch p50 "
                "%.3f p99 %.3f ms (cache p50 / watch p50 = %.2f)",
                p.cache_ms.size(), p.cache_ms.front(), percentile(p.cache_ms, 10), percentile(p.cache_ms, 90),
                p.cache_ms.back(), percentile(p.watch_ms, 50), percentile(p.watch_ms, 99),
                percentile(p.cache_ms, 50) / percentile(p.watch_ms, 50));
  ctx.note(line);
  return p;
}

const Propagation& propagation(Context& ctx) {
  return ctx.memo<Propagation>("cache_propagation", [&] { return sample_propagation(ctx); });
}

// --- the 100k-key load -----------------------------------------------------------------

constexpr int kLoadKeys = 100'000;
constexpr std::size_t kKeyBytes = 40;
constexpr std::size_t kValueBytes = 100;

struct Load {
  double seconds = 0;
  double bytes_per_key = 0;
};

Load measure_load(Context& ctx) {
  const std::string path = Context::key_prefix("cache_load") + "k";
  const auto key_of = [&](int i) {
    char n[64];
    std::snprintf(n, sizeof n, "%s/%0*d", path.c_str(), static_cast<int>(kKeyBytes - path.size() - 1), i);
    return std::string(n);
  };
  const std::string value(kValueBytes, 'v');
  put_all(ctx.client, kLoadKeys, [&](int i) { return std::pair{key_of(i), value}; },
          Clock::now() + std::chrono::minutes(5));

  Load load;
  const std::size_t heap_before = mallinfo2().uordblks;
  {
    PathChildrenCache cache(ctx.client, path);
    std::atomic<int> added{0};
    auto sub = cache.on_event([&](const ChildEvent<std::string>& e) {
      if (e.type == ChildEvent<std::string>::Type::kAdded) ++added;
    });
    const auto started = Clock::now();
    cache.start();
    cache.wait_initialized().timeout(std::chrono::seconds(60)).wait().value();
    load.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (added.load() != kLoadKeys || cache.size() != static_cast<std::size_t>(kLoadKeys)) {
      throw std::runtime_error("the cache loaded " + std::to_string(cache.size()) + " keys, not " +
                               std::to_string(kLoadKeys));
    }
    // The first read's batch (a copy of every key, for the events) is freed
    // once the cache's strand moved on: a change seen after it tells.
    const std::string probe = key_of(7);
    ctx.client.put(probe, value + "!").timeout(kCallBound).wait().value();
    const auto give_up = Clock::now() + std::chrono::seconds(10);
    while (*cache.get(probe.substr(path.size() + 1))->value == value) {
      if (Clock::now() > give_up) throw std::runtime_error("the cache never saw the probe");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const std::size_t heap_after = mallinfo2().uordblks;
    load.bytes_per_key = static_cast<double>(heap_after - std::min(heap_before, heap_after)) / kLoadKeys;
    char line[200];
    std::snprintf(line, sizeof line,
                  "cache load: %d keys of %zu + %zu bytes in %.2f s, %.0f heap bytes per key (bar: 3 x %zu = %zu)",
                  kLoadKeys, kKeyBytes, kValueBytes, load.seconds, load.bytes_per_key, kKeyBytes + kValueBytes,
                  3 * (kKeyBytes + kValueBytes));
    ctx.note(line);
    cache.close();
  }
  etcd::DeleteOptions all;
  all.prefix = true;
  // Deleting a prefix is safe to repeat: after an unknown outcome (a member
  // too busy with 100k deletes to answer the client's check in time) the
  // same delete again leaves the prefix empty either way.
  auto deleting = ctx.client.del(path + "/", all).timeout(std::chrono::seconds(30)).wait();
  for (int attempt = 1; attempt < 5 && !deleting.ok() && deleting.status().is(etcd::Errc::kOutcomeUnknown); ++attempt) {
    deleting = ctx.client.del(path + "/", all).timeout(std::chrono::seconds(30)).wait();
  }
  const auto deleted = std::move(deleting).value();
  // 100k deleted keys stay in etcd's index as tombstones until a compaction:
  // without one, every later write of the run was ~7x slower (counter_add_seq
  // measured 189 adds/s after this load, 1,400 without it).
  // A retried compaction whose first attempt got through answers "compacted".
  // Physical: it returns once the tombstones are gone, which on 3.4 on a
  // loaded 2-core machine took over a minute.
  auto compacted =
      ctx.client.compact(deleted.header.revision, /*physical=*/true).timeout(std::chrono::seconds(180)).wait();
  if (!compacted.ok() && !compacted.status().is(etcd::Errc::kCompacted)) {
    throw std::runtime_error("compaction after the load: " + compacted.status().to_string());
  }
  return load;
}

const Load& load(Context& ctx) {
  return ctx.memo<Load>("cache_load", [&] { return measure_load(ctx); });
}

[[maybe_unused]] const bool kRegistered =
    add_metrics({
        {.name = "cache_propagation_p50_ms",
         .unit = "ms",
         .kind = Kind::kLatency,
         .order = 502,
         .run = [](Context& ctx) { return percentile(propagation(ctx).cache_ms, 50); }},
        {.name = "cache_propagation_p99_ms",
         .unit = "ms",
         .kind = Kind::kLatency,
         .order = 503,
         .run = [](Context& ctx) { return percentile(propagation(ctx).cache_ms, 99); }},
        // Seconds with decimals (a kCount would be rounded); no ratio.
        {.name = "cache_load_100k_s",
         .unit = "s",
         .kind = Kind::kLatency,
         .base = "",
         .order = 504,
         .run = [](Context& ctx) { return load(ctx).seconds; }},
        {.name = "cache_bytes_per_key",
         .unit = "bytes",
         .kind = Kind::kCount,
         .base = "",
         .order = 505,
         .run = [](Context& ctx) { return load(ctx).bytes_per_key; }},
    }) &&
    add_comparison({"cache_propagation_vs_watch", "cache_propagation_p50_ms", "watch_latency_p50_ms"});

}  // namespace
}  // namespace bench::metrics_cache
