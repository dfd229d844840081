// DistributedMutex metrics (SPEC §9): the uncontended cycle, many locks in
// flight from one client, a contended handoff (latency and watch events per
// release), and the threads a process needs for 10,000 parked waiters.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"
#include "etcd/recipes/metrics.h"
#include "etcd/recipes/mutex.h"
#include "etcd/session.h"
#include "handoff.h"

namespace bench::metrics_lock {
namespace {

using etcd::recipes::DistributedMutex;
using etcd::recipes::RecipeOptions;

// Polls `pred` until it holds; throws after `bound`.
void wait_for(const std::function<bool()>& pred, Clock::duration bound, const std::string& what) {
  const auto give_up = Clock::now() + bound;
  while (!pred()) {
    if (Clock::now() > give_up) throw std::runtime_error(what);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int64_t count_keys(Context& ctx, const std::string& prefix) {
  etcd::GetOptions count_only;
  count_only.prefix = true;
  count_only.count_only = true;
  return ctx.client.get(prefix, count_only).timeout(kCallBound).wait().value().count;
}

// --- lock_cycle_seq ----------------------------------------------------------

// Uncontended lock+unlock, one at a time: two etcd writes, two round trips.
double lock_cycle_seq(Context& ctx) {
  DistributedMutex mutex(ctx.client, Context::key_prefix("lock_cycle_seq") + "lock");
  return measure_cycle_paired(ctx, [&] {
    mutex.acquire().timeout(kCallBound).wait().value();
    if (!mutex.release().timeout(kCallBound).wait().value()) throw std::runtime_error("lock_cycle_seq: release reported a lost hold");
  });
}

// --- lock_cycle_many ---------------------------------------------------------

// `locks` acquire→release chains, each issuing its next cycle from its own
// completion callback until the window ends.
class Chains : public std::enable_shared_from_this<Chains> {
 public:
  Chains(std::vector<std::shared_ptr<DistributedMutex>> locks, Clock::time_point end)
      : locks_(std::move(locks)), end_(end) {}

  void start() {
    {
      std::lock_guard lock(mu_);
      running_ = static_cast<int>(locks_.size());
    }
    for (std::size_t i = 0; i < locks_.size(); ++i) cycle(i);
  }

  // Cycles completed inside the window, and in all (the last ones of each
  // chain end after the window).
  std::pair<uint64_t, uint64_t> wait(Clock::time_point give_up) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, give_up, [&] { return running_ == 0; })) {
      throw std::runtime_error("lock chains did not drain in time");
    }
    if (error_) throw etcd::Error(*error_);
    return {completed_, completed_all_};
  }

 private:
  void cycle(std::size_t i) {
    auto self = shared_from_this();
    locks_[i]->acquire().then([self, i](etcd::Result<etcd::recipes::Hold> acquired) {
      if (!acquired.ok()) return self->stop(acquired.status());
      self->locks_[i]->release().then([self, i](etcd::Result<bool> released) {
        if (!released.ok()) return self->stop(released.status());
        if (!*released) return self->stop(etcd::Status(etcd::StatusCode::kAborted, "a release reported a lost hold"));
        const auto now = Clock::now();
        {
          std::lock_guard lock(self->mu_);
          ++self->completed_all_;
          if (now < self->end_) ++self->completed_;
          if (self->error_ || now >= self->end_) {
            if (--self->running_ == 0) self->cv_.notify_all();
            return;
          }
        }
        self->cycle(i);
      });
    });
  }

  void stop(etcd::Status why) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::move(why);
    if (--running_ == 0) cv_.notify_all();
  }

  std::vector<std::shared_ptr<DistributedMutex>> locks_;
  const Clock::time_point end_;
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  uint64_t completed_ = 0;
  uint64_t completed_all_ = 0;
  std::optional<etcd::Status> error_;
};

constexpr int kManyLocks = 256;

// 256 lock names in flight from one client, all on ONE shared session.
double lock_cycle_many(Context& ctx) {
  const std::string prefix = Context::key_prefix("lock_cycle_many");
  auto session = etcd::Session::create(ctx.client);
  session->start().timeout(kCallBound).wait().value();
  RecipeOptions options;
  options.session = session;
  std::vector<std::shared_ptr<DistributedMutex>> locks;
  for (int i = 0; i < kManyLocks; ++i) {
    locks.push_back(std::make_shared<DistributedMutex>(ctx.client, prefix + std::to_string(i), options));
  }
  const auto drain = ctx.client.options().default_timeout * 2 + std::chrono::seconds(5);
  uint64_t all_cycles = 0;
  const auto run = [&](Clock::duration window) {
    const auto start = Clock::now();
    auto chains = std::make_shared<Chains>(locks, start + window);
    chains->start();
    const auto [in_window, all] = chains->wait(start + window + drain);
    all_cycles = all;
    return static_cast<double>(in_window) / std::chrono::duration<double>(window).count();
  };
  run(ctx.settings.warmup);
  const uint64_t rpcs_before = ctx.client.stats().rpcs_started;
  const double rate = run(ctx.settings.duration);
  ctx.note(fmt("lock_cycle_many: %d locks on one session, %.2f RPCs per cycle (%llu cycles)", kManyLocks,
               static_cast<double>(ctx.client.stats().rpcs_started - rpcs_before) / static_cast<double>(all_cycles),
               static_cast<unsigned long long>(all_cycles)));
  for (auto& l : locks) l->close();
  (void)session->close().timeout(kCallBound).wait();
  return rate;
}

// --- lock_handoff_* / lock_wakeups_per_release -----------------------------

constexpr int kHandoffWaiters = 16;

// One lock, a holder and 16 queued waiters (each its own session). Each
// holder releases as soon as it holds and queues again once its release
// completed, so 16 waiters stay parked. A sample is release call → the next
// holder's acquire completion.
HandoffSamples measure_handoff(Context& ctx) {
  const std::string name = Context::key_prefix("lock_handoff") + "lock";
  auto metrics = std::make_shared<etcd::recipes::PrometheusMetrics>();
  RecipeOptions options;
  options.metrics = metrics;
  std::vector<std::shared_ptr<DistributedMutex>> locks;
  for (int i = 0; i <= kHandoffWaiters; ++i)
    locks.push_back(std::make_shared<DistributedMutex>(ctx.client, name, options));
  const etcd::recipes::Labels labels{{"lock", name}};
  HandoffSpec spec{
      .what = "lock handoff",
      .contenders = locks.size(),
      .take =
          [locks, ex = ctx.client.executor()](std::size_t i) {
            // The runner waits for a Call<void>; the hold stays with the mutex.
            return etcd::Call<void>(
                [l = locks[i]](etcd::CallOptions, etcd::Callback<void> done) {
                  l->acquire().then([done](etcd::Result<etcd::recipes::Hold> r) {
                    done(r.ok() ? etcd::Result<void>() : etcd::Result<void>(std::move(r).status()));
                  });
                },
                ex);
          },
      .give = [locks](std::size_t i) { return locks[i]->release(); },
      .close_all =
          [locks] {
            for (auto& l : locks) l->close();
          },
      .wakeups = [metrics, labels] { return metrics->value("etcd_recipes_lock_wakeups_total", labels); },
      .warmup = ctx.settings.quick ? 20 : 50,
      .window = ctx.settings.duration,
  };
  auto h = measure_handoffs(spec, Clock::now() + ctx.settings.duration + std::chrono::seconds(60));
  ctx.note(fmt("lock handoff: %d waiters, ", kHandoffWaiters) + h.summary());
  return h;
}

const HandoffSamples& handoff(Context& ctx) {
  return ctx.memo<HandoffSamples>("lock_handoff", [&] { return measure_handoff(ctx); });
}

// --- waiters_threads ---------------------------------------------------------

constexpr int kParkedWaiters = 10'000;
constexpr int kParkNames = 200;
constexpr int kWaitersPerName = kParkedWaiters / kParkNames;  // 50: one session each
constexpr int kParkBatch = 5;  // waiters per name issued at once: 1,000 acquisitions in flight

// What this process held with the waiters parked.
struct Parked {
  int threads = 0;
  double rss_mb = 0;       // with the waiters parked
  double idle_rss_mb = 0;  // before the first session
};

// 10,000 DistributedMutex objects parked behind 200 held locks. A name's
// contenders need distinct sessions (one session = one key per name), so
// waiter j of every name shares session j with the other names' waiter j:
// 51 sessions (leases) in all.
Parked park_waiters(Context& ctx) {
  Parked parked;
  parked.idle_rss_mb = rss_mb();
  const std::string prefix = Context::key_prefix("waiters_threads");
  const auto started = Clock::now();
  std::vector<std::shared_ptr<etcd::Session>> sessions;
  for (int j = 0; j <= kWaitersPerName; ++j) sessions.push_back(etcd::Session::create(ctx.client));
  for (auto& s : sessions) s->start().timeout(kCallBound).wait().value();
  const auto name = [&](int n) { return prefix + std::to_string(n); };

  struct Completions {
    std::mutex mu;
    std::condition_variable cv;
    int done = 0;
    int ok = 0;
    std::optional<etcd::Status> unexpected;
  };
  auto completions = std::make_shared<Completions>();
  const auto on_done = [completions](bool expect_ok) {
    return [completions, expect_ok](etcd::Result<etcd::recipes::Hold> r) {
      std::lock_guard lock(completions->mu);
      ++completions->done;
      if (r.ok()) ++completions->ok;
      // Holders must get their lock; waiters may only end by being closed.
      const bool expected = expect_ok ? r.ok() : !r.ok() && r.status().is(etcd::Errc::kClosed);
      if (!expected && !completions->unexpected) {
        completions->unexpected =
            r.ok() ? etcd::Status(etcd::StatusCode::kInternal, "a parked waiter got the lock") : r.status();
      }
      completions->cv.notify_all();
    };
  };
  const auto wait_done = [&](int n, Clock::duration bound, const char* what) {
    std::unique_lock lock(completions->mu);
    if (!completions->cv.wait_for(lock, bound, [&] { return completions->done >= n; })) {
      throw std::runtime_error(fmt("%s: %d of %d completions in time", what, completions->done, n));
    }
  };

  // The holders (session 0).
  std::vector<std::shared_ptr<DistributedMutex>> holders;
  RecipeOptions holder_options;
  holder_options.session = sessions[0];
  for (int n = 0; n < kParkNames; ++n) {
    holders.push_back(std::make_shared<DistributedMutex>(ctx.client, name(n), holder_options));
    holders.back()->acquire().then(on_done(true));
  }
  wait_done(kParkNames, std::chrono::seconds(30), "holders");
  if (completions->ok != kParkNames) throw std::runtime_error("not every holder got its lock");
  const uint64_t watches_before = ctx.client.stats().watches_open;

  // The waiters, parked in batches: an acquisition's internal RPCs run under
  // the client's default timeout, so 10,000 issued at once would time out
  // in etcd's queue (see README.md).
  std::vector<std::shared_ptr<DistributedMutex>> waiters;
  waiters.reserve(kParkedWaiters);
  const auto park_deadline = Clock::now() + std::chrono::seconds(120);
  const auto park = [&](uint64_t n_parked) {
    while (ctx.client.stats().watches_open < watches_before + n_parked) {
      std::unique_lock lock(completions->mu);
      if (completions->unexpected || Clock::now() > park_deadline) {
        throw std::runtime_error(fmt("%llu of %d waiters parked (%d acquisitions ended)",
                                     static_cast<unsigned long long>(ctx.client.stats().watches_open - watches_before),
                                     kParkedWaiters, completions->done - kParkNames) +
                                 (completions->unexpected ? "; first: " + completions->unexpected->to_string()
                                                          : std::string(", timed out")));
      }
      completions->cv.wait_for(lock, std::chrono::milliseconds(10));
    }
  };
  for (int j = 1; j <= kWaitersPerName; ++j) {
    RecipeOptions options;
    options.session = sessions[j];
    for (int n = 0; n < kParkNames; ++n) {
      waiters.push_back(std::make_shared<DistributedMutex>(ctx.client, name(n), options));
      waiters.back()->acquire().then(on_done(false));
    }
    if (j % kParkBatch == 0) park(waiters.size());
  }
  park(kParkedWaiters);
  const int64_t keys = count_keys(ctx, prefix);
  {
    std::lock_guard lock(completions->mu);
    if (completions->unexpected) throw etcd::Error(*completions->unexpected);
    if (completions->done != kParkNames) throw std::runtime_error("a parked waiter finished early");
  }
  const double park_s = std::chrono::duration<double>(Clock::now() - started).count();

  const auto threads = thread_names();
  parked.threads = total(threads);
  parked.rss_mb = rss_mb();
  ctx.note(fmt("%s: %d threads and %.0f MB resident (%.0f MB before) with %d parked waiters (%lld lock keys, %llu "
               "watches, %zu sessions, parked in %.1f s): ",
               ctx.metric().c_str(), parked.threads, parked.rss_mb, parked.idle_rss_mb, kParkedWaiters,
               static_cast<long long>(keys), static_cast<unsigned long long>(ctx.client.stats().watches_open),
               sessions.size(), park_s) +
           describe(threads));

  // Close them: parked waiters end with kClosed; sessions revoke the keys.
  for (auto& w : waiters) w->close();
  wait_done(kParkNames + kParkedWaiters, std::chrono::seconds(60), "closing the waiters");
  for (auto& h : holders) h->close();
  for (auto& s : sessions) (void)s->close().timeout(kCallBound).wait();
  waiters.clear();
  holders.clear();
  wait_for([&] { return count_keys(ctx, prefix) == 0; }, std::chrono::seconds(30), "lock keys left behind");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the clean-up RPCs drain
  return parked;
}

// Both figures come from one parking per run.
Parked parked_once(Context& ctx) {
  static std::optional<Parked> parked;
  if (!parked) parked = park_waiters(ctx);
  return *parked;
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "lock_cycle_seq", .unit = "cycles/s", .order = 400, .run = lock_cycle_seq},
    {.name = "lock_cycle_many", .unit = "cycles/s", .base = "put_pipelined", .order = 410, .run = lock_cycle_many},
    {.name = "lock_handoff_p50_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 420,
     .run = [](Context& ctx) { return handoff(ctx).percentile(50); }},
    {.name = "lock_handoff_p99_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .order = 421,
     .run = [](Context& ctx) { return handoff(ctx).percentile(99); }},
    {.name = "lock_wakeups_per_release",
     .unit = "events",
     .base = "",
     .order = 422,
     .run = [](Context& ctx) { return handoff(ctx).wakeups_per_handoff; }},
    {.name = "waiters_threads",
     .unit = "threads",
     .kind = Kind::kCount,
     .base = "",
     .order = 910,
     .run = [](Context& ctx) { return static_cast<double>(parked_once(ctx).threads); }},
    {.name = "waiters_rss_mb",
     .unit = "MB",
     .kind = Kind::kCount,
     .base = "",
     .order = 911,
     .run = [](Context& ctx) { return parked_once(ctx).rss_mb; }},
});

}  // namespace
}  // namespace bench::metrics_lock
