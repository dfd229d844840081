// Election metrics: LeaderLatch's uncontended campaign + resign,
// and a contended turnover between 8 candidates (latency, and watch
// wake-ups per leadership change). Only LeaderLatch's public API is used
// (start, await_leadership, resign, close).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/metrics.h"
#include "handoff.h"

namespace bench::metrics_election {
namespace {

using etcd::recipes::LeaderLatch;
using etcd::recipes::RecipeOptions;

// --- elect_cycle_seq -----------------------------------------------------------

// Campaign until leading, then resign: uncontended, one at a time.
double elect_cycle_seq(Context& ctx) {
  LeaderLatch latch(ctx.client, Context::key_prefix("elect_cycle_seq") + "election", "bench");
  const double rate = measure_cycle_paired(ctx, [&] {
    latch.start();
    latch.await_leadership().timeout(kCallBound).wait().value();
    if (!latch.resign().timeout(kCallBound).wait().value()) throw std::runtime_error("elect_cycle_seq: resign reported a lost term");
  });
  latch.close();
  return rate;
}

// --- elect_rpcs_seq / go_elect_rpcs_seq (the floor of each design) ---------

// The RPCs of one uncontended campaign + resign, sent by the raw client with
// no recipe code around them: LeaderLatch's (one Txn that creates the key
// when the election is empty, one delete) and etcd Go concurrency.Election's
// (a create-if-absent Txn, a Get of the last created key below ours, a Txn
// that deletes if the key is still ours). Measured interleaved with puts,
// like the cycles: the ratio of the two is the most elect_cycle_seq /
// go_elect_cycle_seq can be when neither side spends anything beyond its
// RPCs.
struct ElectRpcs {
  std::string prefix;
  std::string key;
  int64_t lease;
};

ElectRpcs elect_rpcs_setup(Context& ctx, const std::string& metric) {
  ElectRpcs e;
  e.prefix = Context::key_prefix(metric) + "election/";
  e.lease = ctx.client.lease_grant(std::chrono::seconds(120)).timeout(kCallBound).wait().value().id;
  char hex[32];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(e.lease));
  e.key = e.prefix + hex;
  return e;
}

double elect_rpcs_seq(Context& ctx) {
  const ElectRpcs e = elect_rpcs_setup(ctx, "elect_rpcs_seq");
  const auto run = measure_sequential_paired(ctx, [&] {
    etcd::Txn campaign;
    campaign.when(etcd::Compare::create_revision(e.prefix).with_prefix() == 0)
        .then(etcd::Op::put(e.key, "bench", etcd::PutOptions{.lease = e.lease}));
    if (!ctx.client.txn(campaign).timeout(kCallBound).wait().value().succeeded) throw std::runtime_error("elect_rpcs_seq: not empty");
    ctx.client.del(e.key, etcd::DeleteOptions{.prev_kv = true}).timeout(kCallBound).wait().value();
  });
  return run.rate;
}

double go_elect_rpcs_seq(Context& ctx) {
  const ElectRpcs e = elect_rpcs_setup(ctx, "go_elect_rpcs_seq");
  const auto run = measure_sequential_paired(ctx, [&] {
    etcd::Txn campaign;
    campaign.when(etcd::Compare::create_revision(e.key) == 0)
        .then(etcd::Op::put(e.key, "bench", etcd::PutOptions{.lease = e.lease}))
        .otherwise(etcd::Op::get(e.key));
    const auto created = ctx.client.txn(campaign).timeout(kCallBound).wait().value();
    const int64_t rev = created.header.revision;
    // waitDeletes: the last created key below ours (none here).
    const auto below = ctx.client
                           .get(e.prefix, etcd::GetOptions{.prefix = true,
                                                           .limit = 1,
                                                           .sort_order = etcd::SortOrder::kDescend,
                                                           .sort_target = etcd::SortTarget::kCreate,
                                                           .max_create_revision = rev - 1})
                           .timeout(kCallBound).wait()
                           .value();
    if (!below.kvs.empty()) throw std::runtime_error("go_elect_rpcs_seq: not alone");
    etcd::Txn resign;
    resign.when(etcd::Compare::create_revision(e.key) == rev).then(etcd::Op::del(e.key));
    ctx.client.txn(resign).timeout(kCallBound).wait().value();
  });
  return run.rate;
}

// --- elect_handoff_* / elect_wakeups_per_turnover ---------------------------------

constexpr int kCandidates = 8;

// 8 latches on one election (each its own session). Whoever leads resigns
// at once and starts again once its resign completed, so 7 stay queued. A
// sample is the leader's resign() call → the next leader's
// await_leadership() completion.
HandoffSamples measure_turnovers(Context& ctx) {
  const std::string name = Context::key_prefix("elect_handoff") + "election";
  auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
  RecipeOptions options;
  options.metrics = metrics;
  std::vector<std::shared_ptr<LeaderLatch>> latches;
  for (int i = 0; i < kCandidates; ++i) {
    latches.push_back(std::make_shared<LeaderLatch>(ctx.client, name, "candidate-" + std::to_string(i), options));
  }
  const etcd::recipes::Labels labels{{"election", name}};
  HandoffSpec spec{
      .what = "election turnover",
      .contenders = latches.size(),
      .take =
          [latches](std::size_t i) {
            latches[i]->start();
            return latches[i]->await_leadership();
          },
      .give = [latches](std::size_t i) { return latches[i]->resign(); },
      .close_all =
          [latches] {
            for (auto& l : latches) l->close();
          },
      .wakeups = [metrics, labels] { return metrics->value("etcd_recipes_election_wakeups_total", labels); },
      .warmup = ctx.settings.quick ? 20 : 50,
      .window = ctx.settings.duration,
  };
  auto t = measure_handoffs(spec, Clock::now() + ctx.settings.duration + std::chrono::seconds(60));
  ctx.note(fmt("election turnover: %d candidates, ", kCandidates) + t.summary());
  return t;
}

const HandoffSamples& turnovers(Context& ctx) {
  return ctx.memo<HandoffSamples>("elect_handoff", [&] { return measure_turnovers(ctx); });
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "elect_cycle_seq", .unit = "cycles/s", .order = 450, .run = elect_cycle_seq},
    {.name = "elect_rpcs_seq", .unit = "cycles/s", .order = 451, .run = elect_rpcs_seq},
    {.name = "go_elect_rpcs_seq", .unit = "cycles/s", .order = 452, .run = go_elect_rpcs_seq},
    {.name = "elect_handoff_p50_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 460,
     .run = [](Context& ctx) { return turnovers(ctx).percentile(50); }},
    {.name = "elect_handoff_p99_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 461,
     .run = [](Context& ctx) { return turnovers(ctx).percentile(99); }},
    {.name = "elect_wakeups_per_turnover",
     .unit = "events",
     .base = "",
     .order = 462,
     .run = [](Context& ctx) { return turnovers(ctx).wakeups_per_handoff; }},
});
[[maybe_unused]] const bool kComparisons =
    add_comparison({"elect_cycle_seq_vs_go", "elect_cycle_seq", "go_elect_cycle_seq"}) &&
    add_comparison({"elect_rpcs_vs_go_rpcs", "elect_rpcs_seq", "go_elect_rpcs_seq"});

}  // namespace
}  // namespace bench::metrics_election
