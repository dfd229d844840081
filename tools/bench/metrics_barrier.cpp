// Barrier metrics (issue 11): 16 waiting objects — each on its own client,
// as 16 processes would be — released by a gate's removal, or by the 16th
// party of a count barrier; and how many times each waiting object is woken
// per round (each wake-up is one watch response it has to look at).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "etcd/recipes/barrier.h"
#include "etcd/recipes/metrics.h"

namespace bench {
namespace {

using etcd::recipes::DistributedBarrier;
using etcd::recipes::DistributedBarrierWithCount;
using Millis = std::chrono::duration<double, std::milli>;

constexpr int kParties = 16;

std::string fmt(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

struct BarrierSamples {
  Samples release;  // the gate removed → the last of 16 waiters released
  Samples count;    // the 16th party arrives → the last party released
  double wakeups_per_party = 0;
};

// The time from `start` until every call in `calls` completed, in ms.
double until_all(std::vector<std::future<etcd::Result<void>>>& calls, Clock::time_point start, const char* what) {
  Clock::time_point last = start;
  for (auto& f : calls) {
    if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      throw std::runtime_error(std::string(what) + ": a waiter was not released within 10 s");
    }
    auto r = f.get();
    if (!r.ok()) throw etcd::Error(r.status());
    last = std::max(last, Clock::now());
  }
  return Millis(last - start).count();
}

// A Call consumed on its own thread, whose completion time we can read.
std::future<etcd::Result<void>> consume(etcd::Call<void> call) {
  return std::async(std::launch::async, [c = std::move(call)]() mutable { return std::move(c).wait(); });
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
      if (!setter.set().wait().value()) throw std::runtime_error("barrier_release: the gate was set already");
      // Each waiter's view must show the gate set before its wait parks.
      std::vector<std::future<etcd::Result<void>>> calls;
      for (auto& w : waiters) {
        if (w->wait_for(std::chrono::milliseconds(0))) {
          // Its view had not seen the set yet: wait for it to close.
          const auto deadline = Clock::now() + std::chrono::seconds(5);
          while (w->wait_for(std::chrono::milliseconds(0))) {
            if (Clock::now() > deadline) throw std::runtime_error("barrier_release: a view never saw the gate set");
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }
        calls.push_back(consume(w->wait()));
      }
      const auto start = Clock::now();
      if (!setter.remove().wait().value()) throw std::runtime_error("barrier_release: the gate was open");
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
      std::vector<std::future<etcd::Result<void>>> calls;
      for (int i = 0; i + 1 < kParties; ++i) calls.push_back(consume(parties[i]->wait()));
      // The 15 are in etcd (their arrivals counted) before the 16th comes.
      const auto deadline = Clock::now() + std::chrono::seconds(10);
      while (ctx.client.get(name + "/parties/", etcd::GetOptions{.prefix = true, .count_only = true})
                 .wait()
                 .value()
                 .count < kParties - 1) {
        if (Clock::now() > deadline) throw std::runtime_error("barrier_count: 15 parties did not arrive in 10 s");
      }
      const auto start = Clock::now();
      calls.push_back(consume(parties.back()->wait()));
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
}  // namespace bench
