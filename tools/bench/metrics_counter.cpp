// DistributedAtomicLong metrics: uncontended adds one at a time,
// paired with txn_seq's guarded Txn (the floor of an add: the same Txn
// shape with no recipe code), and 16 objects contending for one counter.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/metrics.h"

namespace bench {
namespace {

using etcd::recipes::AtomicLongOptions;
using etcd::recipes::DistributedAtomicLong;

std::string fmt(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// Slices of uncontended adds alternate with slices of txn_seq's Txn (its
// own key, guarded by the revision of its previous write), as
// measure_sequential_paired alternates with puts: the ratio of the two is
// what the recipe costs beyond its one Txn, at the same moment.
double counter_add_seq(Context& ctx) {
  using Seconds = std::chrono::duration<double>;
  DistributedAtomicLong counter(ctx.client, Context::key_prefix("counter_add_seq") + "counter");
  const std::string txn_key = Context::key_prefix("counter_add_seq") + "txn";
  int64_t revision = ctx.client.put(txn_key, kValue).timeout(kCallBound).wait().value().header.revision;
  const auto add = [&] { (void)counter.increment().timeout(kCallBound).wait().value(); };
  const auto txn = [&] {
    etcd::Txn t;
    t.when(etcd::Compare::mod_revision(txn_key) == revision).then(etcd::Op::put(txn_key, kValue));
    auto r = ctx.client.txn(t).timeout(kCallBound).wait().value();
    if (!r.succeeded) throw std::runtime_error("counter_add_seq: the txn's guard moved");
    revision = r.header.revision;
  };
  const auto run_slice = [](const auto& fn, Clock::duration slice) {
    const auto start = Clock::now();
    uint64_t n = 0;
    for (; Clock::now() < start + slice; ++n) fn();
    return std::pair(n, Clock::now() - start);
  };
  run_slice(add, ctx.settings.warmup);
  uint64_t adds = 0, txns = 0;
  Clock::duration add_time{}, txn_time{};
  uint64_t add_rpcs = 0;
  while (add_time < ctx.settings.duration) {
    const auto slice = std::min<Clock::duration>(kPairedSlice, ctx.settings.duration - add_time);
    const uint64_t before = ctx.client.stats().rpcs_started;
    const auto [n, took] = run_slice(add, slice);
    add_rpcs += ctx.client.stats().rpcs_started - before;
    adds += n;
    add_time += took;
    const auto [m, txn_took] = run_slice(txn, took);
    txns += m;
    txn_time += txn_took;
  }
  const double add_rate = static_cast<double>(adds) / Seconds(add_time).count();
  const double txn_rate = static_cast<double>(txns) / Seconds(txn_time).count();
  ctx.note(
      fmt("counter_add_seq: %.0f adds/s, paired txn_seq-shaped Txn %.0f txns/s: %.3f x txn_seq (paired); "
          "%.2f RPCs per add",
          add_rate, txn_rate, add_rate / txn_rate, static_cast<double>(add_rpcs) / static_cast<double>(adds)));
  counter.close();
  return add_rate;
}

// 16 objects (as 16 processes would be) on one counter, each keeping one
// add in flight; committed adds per second, and failed guards per add.
constexpr int kContenders = 16;

double counter_add_16c(Context& ctx) {
  const std::string name = Context::key_prefix("counter_add_16c") + "counter";
  auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
  AtomicLongOptions o;
  o.recipe.metrics = metrics;
  std::vector<std::unique_ptr<DistributedAtomicLong>> objects;
  for (int i = 0; i < kContenders; ++i) objects.push_back(std::make_unique<DistributedAtomicLong>(ctx.client, name, o));
  auto calls = std::make_shared<CallsInFlight>();
  auto committed = std::make_shared<std::atomic<uint64_t>>(0);
  std::function<void(DistributedAtomicLong*)> next = [&](DistributedAtomicLong* c) {
    if (calls->stopping()) return;
    calls->begin();
    c->increment().then([&, c](etcd::Result<int64_t> r) {
      if (r.ok()) {
        *committed += 1;
        next(c);
      } else {
        calls->fail(r.status());
      }
      calls->end();
    });
  };
  for (auto& c : objects) next(c.get());
  std::this_thread::sleep_for(ctx.settings.warmup);
  const etcd::recipes::Labels labels{{"counter", name}};
  const uint64_t at_start = committed->load();
  const double conflicts_at_start = metrics->value("etcd_recipes_counter_conflicts_total", labels);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(ctx.settings.duration);
  const uint64_t adds = committed->load() - at_start;
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double conflicts = metrics->value("etcd_recipes_counter_conflicts_total", labels) - conflicts_at_start;
  calls->stop();
  calls->drain("counter_add_16c");
  ctx.note(fmt("counter_add_16c: %llu adds in %.1f s among %d objects; %.2f retries (failed guards) per add",
               static_cast<unsigned long long>(adds), seconds, kContenders,
               adds ? conflicts / static_cast<double>(adds) : 0.0));
  return static_cast<double>(adds) / seconds;
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "counter_add_seq", .unit = "adds/s", .base = "txn_seq", .order = 1500, .run = counter_add_seq},
    {.name = "counter_add_16c", .unit = "adds/s", .base = "counter_add_seq", .order = 1510, .run = counter_add_16c},
});

}  // namespace
}  // namespace bench
