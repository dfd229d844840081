// Barrier metrics: 16 waiting objects — each on its own client,
// as 16 processes would be — released by a gate's removal, or by the 16th
// party of a count barrier; and how many times each waiting object is woken
// per round (each wake-up is one watch response it has to look at).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "etcd/recipes/barrier.h"
#include "etcd/recipes/metrics.h"

namespace bench::metrics_barrier {
namespace {

using etcd::recipes::DistributedBarrier;
using etcd::recipes::DistributedBarrierWithCount;
using Millis = std::chrono::duration<double, std::milli>;

constexpr int kParties = 16;

struct BarrierSamples {
  Samples release;  // the gate removed → the last of 16 waiters released
  Samples count;    // the 16th party arrives → the last party released
  double wakeups_per_party = 0;
};

// The time from `start` until every call in `calls` completed, in ms.
double until_all(Completions& calls, Clock::time_point start, const char* what) {
  const Clock::time_point last = calls.wait_all(start + std::chrono::seconds(10), what);
  return Millis(std::max(last, start) - start).count();
}

BarrierSamples sample_barriers(Context& ctx) {
  const int rounds = ctx.settings.quick ? 20 : 60;
  const int warmup = 5;
  std::vector<std::unique_ptr<etcd::Client>> clients;
  for (int i = 0; i < kParties; ++i) clients.push_back(std::make_unique<etcd::Client>(ctx.client.options()));
  BarrierSamples out;

  {  // The gate.
    const std::string name = Context::key_prefix("barrier_release") + "gate";
    DistributedBarrier setter(ctx.client, name);
    std::vector<std::unique_ptr<DistributedBarrier>> waiters;
    for (auto& c : clients) waiters.push_back(std::make_unique<DistributedBarrier>(*c, name));
    for (int round = 0; round < warmup + rounds; ++round) {
      if (!setter.set().timeout(kCallBound).wait().value()) {
        throw std::runtime_error("barrier_release: the gate was set already");
      }
      // Each wait reads the gate at its own revision and parks (the gate
      // is set). A round trip on each waiter's client after its wait went
      // out lets the reads be answered before the gate is removed (a read
      // answered after the removal finds the gate open and returns, which
      // the measurement counts like a release).
      Completions calls;
      for (auto& w : waiters) calls.add(w->wait().timeout(kCallBound));
      for (auto& c : clients) (void)c->get(name).timeout(kCallBound).wait().value();
      const auto start = Clock::now();
      if (!setter.remove().timeout(kCallBound).wait().value()) {
        throw std::runtime_error("barrier_release: the gate was open");
      }
      const double ms = until_all(calls, start, "barrier_release");
      if (round >= warmup) out.release.ms.push_back(ms);
    }
  }

  {  // The count barrier.
    const std::string name = Context::key_prefix("barrier_count") + "rendezvous";
    auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
    etcd::recipes::RecipeOptions options;
    options.metrics = metrics;
    std::vector<std::unique_ptr<DistributedBarrierWithCount>> parties;
    for (auto& c : clients)
      parties.push_back(std::make_unique<DistributedBarrierWithCount>(*c, name, kParties, options));
    const etcd::recipes::Labels labels{{"name", name}};
    double wakeups_at_start = 0;
    for (int round = 0; round < warmup + rounds; ++round) {
      if (round == warmup) wakeups_at_start = metrics->value("etcd_recipes_barrier_wakeups_total", labels);
      Completions calls;
      for (int i = 0; i + 1 < kParties; ++i) calls.add(parties[i]->wait().timeout(kCallBound));
      // The 15 are in etcd (their arrivals counted) before the 16th comes.
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while (ctx.client.get(name + "/parties/", etcd::GetOptions{.prefix = true, .count_only = true})
                 .timeout(kCallBound).wait()
                 .value()
                 .count < kParties - 1) {
        if (Clock::now() > deadline) throw std::runtime_error("barrier_count: 15 parties did not arrive in 10 s");
      }
      const auto start = Clock::now();
      calls.add(parties.back()->wait().timeout(kCallBound));
      const double ms = until_all(calls, start, "barrier_count");
      if (round >= warmup) out.count.ms.push_back(ms);
    }
    const double wakeups = metrics->value("etcd_recipes_barrier_wakeups_total", labels) - wakeups_at_start;
    out.wakeups_per_party = wakeups / static_cast<double>(rounds * kParties);
  }
  std::ranges::sort(out.release.ms);
  std::ranges::sort(out.count.ms);
  ctx.note(
      fmt("barriers (16 waiters on 16 clients, %d rounds): gate removed -> all released p50 %.2f p90 %.2f max "
          "%.2f ms; 16th arrival -> all released p50 %.2f p90 %.2f max %.2f ms; %.2f wake-ups per party",
          rounds, out.release.percentile(50), out.release.percentile(90), out.release.ms.back(),
          out.count.percentile(50), out.count.percentile(90), out.count.ms.back(), out.wakeups_per_party));
  return out;
}

const BarrierSamples& samples(Context& ctx) {
  return ctx.memo<BarrierSamples>("barriers", [&] { return sample_barriers(ctx); });
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "barrier_release_p50_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 1600,
     .run = [](Context& ctx) { return samples(ctx).release.percentile(50); }},
    {.name = "barrier_count_p50_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 1610,
     .run = [](Context& ctx) { return samples(ctx).count.percentile(50); }},
    {.name = "barrier_wakeups_per_party",
     .unit = "wake-ups",
     .kind = Kind::kCount,
     .base = "",
     .order = 1620,
     .run = [](Context& ctx) { return samples(ctx).wakeups_per_party; }},
});

}  // namespace
}  // namespace bench::metrics_barrier
