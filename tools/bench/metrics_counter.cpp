// DistributedAtomicLong metrics: uncontended adds one at a time,
// paired with txn_seq's guarded Txn (the floor of an add: the same Txn
// shape with no recipe code), 16 objects of one client adding to one
// counter, and (--scale) adders in many processes on one counter.

#include <algorithm>
#include <atomic>
#include <csignal>
#include <mutex>
#include <sstream>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"
#include "process.h"
#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/metrics.h"

namespace bench::metrics_counter {
namespace {

using etcd::recipes::AtomicLongOptions;
using etcd::recipes::DistributedAtomicLong;

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

// What `n` objects of one client did, each keeping one add in flight (the
// adds of one client to one name are combined into shared Txns).
struct AddersRun {
  uint64_t committed = 0;      // in the measured window
  uint64_t committed_all = 0;  // every add that committed, first to last
  double seconds = 0;          // the measured window
  double conflicts = 0;        // failed guards, in the window
  double txns = 0;             // guarded Txns sent, in the window
  uint64_t gave_up = 0;        // ABORTED: max_attempts under contention
  uint64_t unknown = 0;        // ended with an unknown outcome
  uint64_t other_failures = 0;
  std::string first_failure;
};

AddersRun run_adders(etcd::Client& client, const std::string& name, int n, Clock::duration warmup,
                     Clock::duration duration) {
  auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
  AtomicLongOptions o;
  o.recipe.metrics = metrics;
  std::vector<std::unique_ptr<DistributedAtomicLong>> objects;
  for (int i = 0; i < n; ++i) objects.push_back(std::make_unique<DistributedAtomicLong>(client, name, o));
  struct Shared {
    CallsInFlight calls;
    std::atomic<uint64_t> committed{0};
    std::mutex mu;
    AddersRun failures;
  };
  auto shared = std::make_shared<Shared>();
  std::function<void(DistributedAtomicLong*)> next = [&](DistributedAtomicLong* c) {
    if (shared->calls.stopping()) return;
    shared->calls.begin();
    c->increment().timeout(kCallBound).then([&, c](etcd::Result<int64_t> r) {
      if (r.ok()) {
        shared->committed += 1;
      } else {
        std::lock_guard lock(shared->mu);
        auto& f = shared->failures;
        if (r.status().code() == etcd::StatusCode::kAborted) {
          ++f.gave_up;
        } else if (r.status().is(etcd::Errc::kOutcomeUnknown)) {
          ++f.unknown;
        } else {
          ++f.other_failures;
        }
        if (f.first_failure.empty()) f.first_failure = r.status().to_string();
      }
      next(c);
      shared->calls.end();
    });
  };
  const etcd::recipes::Labels labels{{"counter", name}};
  for (auto& c : objects) next(c.get());
  std::this_thread::sleep_for(warmup);
  const uint64_t at_start = shared->committed.load();
  const double conflicts_at_start = metrics->value("etcd_recipes_counter_conflicts_total", labels);
  const double txns_at_start = metrics->value("etcd_recipes_counter_txns_total", labels);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(duration);
  AddersRun run;
  run.committed = shared->committed.load() - at_start;
  run.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run.conflicts = metrics->value("etcd_recipes_counter_conflicts_total", labels) - conflicts_at_start;
  run.txns = metrics->value("etcd_recipes_counter_txns_total", labels) - txns_at_start;
  shared->calls.stop();
  shared->calls.drain("adders");
  run.committed_all = shared->committed.load();
  {
    std::lock_guard lock(shared->mu);
    run.gave_up = shared->failures.gave_up;
    run.unknown = shared->failures.unknown;
    run.other_failures = shared->failures.other_failures;
    run.first_failure = shared->failures.first_failure;
  }
  for (auto& c : objects) c->close();
  return run;
}

// 16 objects (as 16 threads of one process would use them) on one
// counter, each keeping one add in flight; committed adds per second.
constexpr int kContenders = 16;

double counter_add_16c(Context& ctx) {
  const std::string name = Context::key_prefix("counter_add_16c") + "counter";
  const AddersRun run = run_adders(ctx.client, name, kContenders, ctx.settings.warmup, ctx.settings.duration);
  if (run.gave_up + run.unknown + run.other_failures > 0) throw std::runtime_error("counter_add_16c: " + run.first_failure);
  const double adds = static_cast<double>(run.committed);
  ctx.note(fmt("counter_add_16c: %.0f adds in %.1f s among %d objects of one client; %.2f guarded Txns and %.3f "
               "failed guards per add",
               adds, run.seconds, kContenders, adds > 0 ? run.txns / adds : 0.0, adds > 0 ? run.conflicts / adds : 0.0));
  return adds / run.seconds;
}

// --- many processes on one counter (--scale) ---------------------------------

constexpr auto kAddersWorkerFlag = "--scale-counter-worker";

// etcd-recipes-bench --scale-counter-worker ENDPOINTS NAME ADDERS START_MS
// WARMUP_MS DURATION_MS: at START_MS (ms since the epoch, so that every
// worker starts together), ADDERS objects of one client add to NAME for
// WARMUP_MS, then are measured for DURATION_MS; prints "done COMMITTED
// COMMITTED_ALL CONFLICTS TXNS GAVE_UP UNKNOWN OTHER SECONDS" and exits.
int adders_worker(const std::vector<std::string>& args) {
  return run_worker(args, 6, kAddersWorkerFlag, "ENDPOINTS NAME ADDERS START_MS WARMUP_MS DURATION_MS", [&] {
    etcd::Client client(worker_client_options(args[0]));
    const std::chrono::system_clock::time_point start{std::chrono::milliseconds(std::stoll(args[3]))};
    if (start - std::chrono::system_clock::now() > std::chrono::seconds(60)) throw std::runtime_error("start too far");
    std::this_thread::sleep_until(start);
    const AddersRun run = run_adders(client, args[1], std::stoi(args[2]), std::chrono::milliseconds(std::stoll(args[4])),
                                     std::chrono::milliseconds(std::stoll(args[5])));
    std::printf("done %llu %llu %.0f %.0f %llu %llu %llu %.3f\n", static_cast<unsigned long long>(run.committed),
                static_cast<unsigned long long>(run.committed_all), run.conflicts, run.txns,
                static_cast<unsigned long long>(run.gave_up), static_cast<unsigned long long>(run.unknown),
                static_cast<unsigned long long>(run.other_failures), run.seconds);
    if (!run.first_failure.empty()) std::printf("failure %s\n", run.first_failure.c_str());
    std::fflush(stdout);
    return 0;
  });
}

enum class Figure { kRate, kGiveUps };

// `processes` workers of `adders` objects each on one counter, against a
// private member; the counter's final value must be exactly the adds that
// committed (a worker that lost an answer it could not resolve says so).
double counter_processes(Context& ctx, int processes, int adders, Figure figure) {
  auto member = ctx.private_member();  // Skipped with --endpoints
  const std::string name = Context::key_prefix(ctx.metric()) + "counter";
  const auto warmup = std::chrono::duration_cast<std::chrono::milliseconds>(ctx.settings.warmup);
  const auto duration = std::chrono::duration_cast<std::chrono::milliseconds>(ctx.settings.duration);
  const auto start = std::chrono::system_clock::now() + std::chrono::seconds(3);
  const auto start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(start.time_since_epoch()).count();
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < processes; ++i) {
    workers.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        self_path().string(), kAddersWorkerFlag, member->endpoints_csv(), name, std::to_string(adders),
        std::to_string(start_ms), std::to_string(warmup.count()), std::to_string(duration.count())}));
  }
  const auto deadline = Clock::now() + std::chrono::seconds(3) + warmup + duration + kCallBound + std::chrono::seconds(40);
  uint64_t committed = 0, committed_all = 0, gave_up = 0, unknown = 0, other = 0;
  double conflicts = 0, txns = 0, seconds = 0;
  std::string failure;
  for (int i = 0; i < processes; ++i) {
    auto& w = *workers[static_cast<std::size_t>(i)];
    const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                               std::chrono::milliseconds(1));
    const auto line = w.read_line(left);
    std::istringstream in(line && line->starts_with("done ") ? line->substr(5) : std::string());
    unsigned long long c = 0, a = 0, g = 0, u = 0, o = 0;
    double f = 0, t = 0, s = 0;
    if (!(in >> c >> a >> f >> t >> g >> u >> o >> s)) {
      throw std::runtime_error(fmt("worker %d said '%s'", i, line.value_or("(nothing)").c_str()));
    }
    if (auto more = w.read_line(std::chrono::milliseconds(200)); more && more->starts_with("failure ") && failure.empty()) {
      failure = more->substr(8);
    }
    committed += c;
    committed_all += a;
    conflicts += f;
    txns += t;
    gave_up += g;
    unknown += u;
    other += o;
    seconds = std::max(seconds, s);
  }
  etcd::ClientOptions check_options;
  check_options.endpoints = member->endpoints();
  etcd::Client check(std::move(check_options));
  auto got = check.get(name).timeout(kCallBound).wait().value();
  const std::string value = got.kvs.empty() ? "0" : got.kvs.front().value;
  const double rate = static_cast<double>(committed) / seconds;
  const double adds = static_cast<double>(committed);
  ctx.note(fmt("%s: etcd %s, %d processes x %d objects: %.0f adds/s; %.2f guarded Txns and %.2f failed guards per add; "
               "%llu gave up, %llu unknown, %llu other failures%s%s; final value %s, %llu adds committed",
               ctx.metric().c_str(), member->version().text.c_str(), processes, adders, rate,
               adds > 0 ? txns / adds : 0.0, adds > 0 ? conflicts / adds : 0.0, static_cast<unsigned long long>(gave_up),
               static_cast<unsigned long long>(unknown), static_cast<unsigned long long>(other),
               failure.empty() ? "" : " (first: ", failure.empty() ? "" : (failure + ")").c_str(), value.c_str(),
               static_cast<unsigned long long>(committed_all)));
  ctx.set_detail(ctx.metric(), {{"txns_per_add", adds > 0 ? txns / adds : 0.0},
                                {"conflicts_per_add", adds > 0 ? conflicts / adds : 0.0},
                                {"gave_up", static_cast<double>(gave_up)},
                                {"unknown", static_cast<double>(unknown)}});
  if (unknown == 0 && value != std::to_string(committed_all)) {
    throw std::runtime_error(ctx.metric() + ": the counter holds " + value + " after " +
                             std::to_string(committed_all) + " committed adds");
  }
  return figure == Figure::kRate ? rate : static_cast<double>(gave_up);
}

Metric counter_scale(std::string name, int order, int processes, int adders, Figure figure, std::string base) {
  return {.name = std::move(name),
          .unit = figure == Figure::kRate ? "adds/s" : "adds",
          .kind = figure == Figure::kRate ? Kind::kRate : Kind::kCount,
          .base = std::move(base),
          .order = order,
          .needs_scale = true,
          .run = [processes, adders, figure](Context& ctx) { return counter_processes(ctx, processes, adders, figure); }};
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "counter_add_seq", .unit = "adds/s", .base = "txn_seq", .order = 1500, .run = counter_add_seq},
    {.name = "counter_add_16c", .unit = "adds/s", .base = "counter_add_seq", .order = 1510, .run = counter_add_16c},
    counter_scale("counter_add_per_s_a1", 4010, 1, 1, Figure::kRate, ""),
    counter_scale("counter_add_per_s_a64", 4011, 8, 8, Figure::kRate, "counter_add_per_s_a1"),
    counter_scale("counter_give_ups_a64", 4012, 8, 8, Figure::kGiveUps, ""),
}) && add_helper_mode({.flag = kAddersWorkerFlag, .run = adders_worker});

}  // namespace
}  // namespace bench::metrics_counter
