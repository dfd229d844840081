// Watch delivery latency: put start → event in the watch handler.
//
// The writer puts one key at a time and waits for its event before the
// next put, so a sample never includes queueing behind earlier samples.
// The send time travels in the value (steady_clock; writer and watcher are
// the same process).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "bench.h"

namespace bench::metrics_watch {
namespace {

using Millis = std::chrono::duration<double, std::milli>;

Samples sample_watch_latency(Context& ctx) {
  const std::string prefix = Context::key_prefix("watch_latency");
  const int warmup = ctx.settings.quick ? 20 : 50;
  const int measured = ctx.settings.quick ? 200 : 500;

  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<double> ms;
    std::optional<etcd::Status> error;
  };
  auto shared = std::make_shared<Shared>();

  etcd::WatchOptions options;
  options.prefix = true;
  etcd::Watcher watcher = ctx.client.watch(prefix, options, [shared](etcd::Result<etcd::WatchResponse> r) {
    const auto now = Clock::now();
    std::lock_guard lock(shared->mu);
    if (!r.ok()) {
      shared->error = r.status();
    } else {
      for (const auto& event : r->events) {
        if (event.type != etcd::Event::Type::kPut) continue;
        Clock::rep sent = 0;
        const auto& v = event.kv.value;
        std::from_chars(v.data(), v.data() + v.size(), sent);
        shared->ms.push_back(Millis(now - Clock::time_point(Clock::duration(sent))).count());
      }
    }
    shared->cv.notify_all();
  });
  if (!watcher.wait_created(Clock::now() + std::chrono::seconds(10))) {
    throw std::runtime_error("watch on " + prefix + " was not created within 10 s");
  }

  const std::size_t total = static_cast<std::size_t>(warmup + measured);
  for (std::size_t i = 0; i < total; ++i) {
    const auto sent = Clock::now();
    // A handful of keys: one key would make every event also a new version
    // of the same key, which is not what recipes watch.
    ctx.client.put(prefix + std::to_string(i % 16), std::to_string(sent.time_since_epoch().count())).wait().value();
    std::unique_lock lock(shared->mu);
    if (!shared->cv.wait_for(lock, std::chrono::seconds(5), [&] { return shared->error || shared->ms.size() > i; })) {
      throw std::runtime_error("watch event " + std::to_string(i) + " not delivered within 5 s");
    }
    if (shared->error) throw etcd::Error(*shared->error);
  }
  watcher.cancel();

  std::lock_guard lock(shared->mu);
  Samples samples{{shared->ms.begin() + warmup, shared->ms.end()}};
  std::ranges::sort(samples.ms);
  char line[160];
  std::snprintf(line, sizeof line, "watch latency: %zu samples, min %.3f p10 %.3f p90 %.3f max %.3f ms",
                samples.ms.size(), samples.ms.front(), samples.percentile(10), samples.percentile(90),
                samples.ms.back());
  ctx.note(line);
  return samples;
}

const Samples& samples(Context& ctx) {
  return ctx.memo<Samples>("watch_latency", [&] { return sample_watch_latency(ctx); });
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "watch_latency_p50_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 500,
     .run = [](Context& ctx) { return samples(ctx).percentile(50); }},
    {.name = "watch_latency_p99_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 501,
     .run = [](Context& ctx) { return samples(ctx).percentile(99); }},
});

}  // namespace
}  // namespace bench::metrics_watch
