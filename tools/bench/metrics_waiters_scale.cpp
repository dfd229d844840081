// Locks with many waiters (--scale): W waiters on one name, spread over 4
// processes, each waiter its own recipe object — on its own session (one
// lease each) for the Go layout's mutex and the holders layout's
// semaphore, on its process's one session for the ordered layout's mutex,
// read-write lock writers and semaphore — each looping acquire → release → acquire, so that the lock
// passes through every waiter in turn while the others stay parked. The
// value is acquisitions per second over a window; the detail gives etcd's
// CPU per acquisition (what grows when an acquisition's reads grow with the
// waiters), the failed acquisitions (each waiter tries again after a
// failure at the worker's next tick, every 0.5 s) and the sessions lost
// (a waiter whose session was lost gets a fresh one).
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/session.h"
#include "process.h"
#include "server_metrics.h"

namespace bench::metrics_waiters_scale {
namespace {

using Seconds = std::chrono::duration<double>;

constexpr auto kWorkerFlag = "--scale-waiters-worker";
constexpr int kProcesses = 4;
constexpr int kPermits = 4;
// Sessions (and first acquisitions) a worker starts at once.
constexpr int kStartWave = 250;
constexpr auto kStartBound = std::chrono::seconds(150);
constexpr auto kSettle = std::chrono::seconds(5);
constexpr auto kWindow = std::chrono::seconds(20);
constexpr auto kSignalBound = kStartBound + kSettle + kWindow + std::chrono::seconds(120);

// Counts shared by a worker's loops.
struct Counts {
  std::atomic<int64_t> acquired{0};
  std::atomic<int64_t> failed{0};  // acquisitions or releases that failed (not closed)
  std::atomic<int> lost{0};        // sessions lost (not by close)
  std::atomic<bool> stopping{false};
};

struct Loop;

// Loops whose acquisition failed, started again by the worker's main thread
// at its next tick (a failure is not retried at once: a lost session fails
// the next acquisition at once too).
struct Retries {
  std::mutex mu;
  std::vector<std::shared_ptr<Loop>> loops;
};

// One waiter: acquire, release at once, again, until the worker stops.
struct Loop : std::enable_shared_from_this<Loop> {
  std::function<etcd::Call<etcd::recipes::Hold>()> acquire;
  std::shared_ptr<Counts> counts;
  std::shared_ptr<Retries> retries;

  void again() {
    if (counts->stopping.load()) return;
    acquire().then([self = shared_from_this()](etcd::Result<etcd::recipes::Hold> r) {
      if (!r.ok()) {
        if (!r.status().is(etcd::Errc::kClosed)) self->counts->failed.fetch_add(1);
        std::lock_guard lock(self->retries->mu);
        self->retries->loops.push_back(self);
        return;
      }
      self->counts->acquired.fetch_add(1);
      r->release().then([self](etcd::Result<bool> released) {
        if (!released.ok() || !*released) self->counts->failed.fetch_add(1);
        self->again();
      });
    });
  }
};

// etcd-recipes-bench --scale-waiters-worker KIND ENDPOINTS NAME COUNT:
// COUNT waiters (KIND mutex, ordered-mutex, ordered-rwlock-writer,
// semaphore or ordered-semaphore of kPermits permits) on NAME, each on a
// session of its own (the ordered kinds: all on one), started kStartWave
// at a time; prints
// "ready"; at the bench's first signal "mark ACQUIRED FAILED LOST", at its
// second "done ACQUIRED FAILED LOST"; then stops and exits.
int waiters_worker(const std::vector<std::string>& args) {
  return run_worker(args, 4, kWorkerFlag, "KIND ENDPOINTS NAME COUNT", [&] {
    const std::string& kind = args[0];
    if (kind != "mutex" && kind != "ordered-mutex" && kind != "ordered-rwlock-writer" && kind != "semaphore" &&
        kind != "ordered-semaphore") {
      throw std::runtime_error("KIND is mutex, ordered-mutex, ordered-rwlock-writer, semaphore or ordered-semaphore");
    }
    const bool shared_session = kind.rfind("ordered-", 0) == 0;
    etcd::Client client(worker_client_options(args[1]));
    const std::string& name = args[2];
    const int count = std::stoi(args[3]);
    auto counts = std::make_shared<Counts>();
    auto retries = std::make_shared<Retries>();
    // Every session the waiters use, each counted when lost.
    struct Sessions {
      std::mutex mu;
      std::vector<std::shared_ptr<etcd::Session>> all;
      std::vector<etcd::Subscription> subs;
    };
    auto sessions = std::make_shared<Sessions>();
    const std::function<std::shared_ptr<etcd::Session>()> new_session = [&client, counts, sessions] {
      auto session = etcd::Session::create(client);
      auto sub = session->on_lost([counts](const etcd::Status& why) {
        if (!why.is(etcd::Errc::kClosed)) counts->lost.fetch_add(1);
      });
      std::lock_guard lock(sessions->mu);
      sessions->all.push_back(session);
      sessions->subs.push_back(std::move(sub));
      return session;
    };
    std::vector<std::shared_ptr<etcd::recipes::DistributedMutex>> mutexes;
    std::vector<std::shared_ptr<etcd::recipes::DistributedSemaphore>> semaphores;
    std::vector<std::shared_ptr<etcd::recipes::DistributedReadWriteLock>> rwlocks;
    std::vector<std::shared_ptr<Loop>> loops;
    Completions started;
    const auto start_deadline = Clock::now() + kStartBound;
    // The ordered mutexes' one session, replaced once lost.
    struct Shared {
      std::mutex mu;
      std::shared_ptr<etcd::Session> session;
    };
    auto shared = std::make_shared<Shared>();
    if (shared_session) {
      shared->session = new_session();
      started.add(shared->session->start().timeout(kCallBound));
    }
    for (int i = 0; i < count; ++i) {
      etcd::recipes::RecipeOptions options;
      if (shared_session) {
        options.contender_layout = etcd::recipes::ContenderLayout::kOrdered;
        options.session_factory = [shared, new_session] {
          std::lock_guard lock(shared->mu);
          if (shared->session->lost_token().stop_requested()) shared->session = new_session();
          return shared->session;
        };
      } else {
        auto session = new_session();
        started.add(session->start().timeout(kCallBound));
        // Its first session started here (in waves); after a loss the
        // recipe asks for a fresh one.
        options.session_factory = [first = std::make_shared<std::shared_ptr<etcd::Session>>(session), new_session] {
          if (*first) return std::exchange(*first, nullptr);
          return new_session();
        };
      }
      auto loop = std::make_shared<Loop>();
      loop->counts = counts;
      loop->retries = retries;
      if (kind == "ordered-rwlock-writer") {
        auto rw = std::make_shared<etcd::recipes::DistributedReadWriteLock>(client, name, options);
        loop->acquire = [rw] { return rw->write_lock().acquire(); };
        rwlocks.push_back(std::move(rw));
      } else if (kind != "semaphore" && kind != "ordered-semaphore") {
        auto m = std::make_shared<etcd::recipes::DistributedMutex>(client, name, options);
        loop->acquire = [m] { return m->acquire(); };
        mutexes.push_back(std::move(m));
      } else {
        auto s = std::make_shared<etcd::recipes::DistributedSemaphore>(client, name, kPermits, options);
        loop->acquire = [s] { return s->acquire(); };
        semaphores.push_back(std::move(s));
      }
      loops.push_back(std::move(loop));
      if ((i + 1) % kStartWave == 0 || i + 1 == count) {
        started.wait_all(start_deadline, "session starts");
        for (size_t k = loops.size() - static_cast<size_t>((i % kStartWave) + 1); k < loops.size(); ++k)
          loops[k]->again();
      }
    }
    std::printf("ready %d\n", count);
    std::fflush(stdout);
    const auto report = [&](const char* word) {
      std::printf("%s %lld %lld %d\n", word, static_cast<long long>(counts->acquired.load()),
                  static_cast<long long>(counts->failed.load()), counts->lost.load());
      std::fflush(stdout);
    };
    const auto retry = [&] {
      std::vector<std::shared_ptr<Loop>> due;
      {
        std::lock_guard lock(retries->mu);
        due.swap(retries->loops);
      }
      for (auto& l : due) l->again();
    };
    const auto deadline = Clock::now() + kSignalBound;
    if (!await_signal(deadline, retry)) throw std::runtime_error("the bench never started the window");
    report("mark");
    if (!await_signal(deadline, retry)) throw std::runtime_error("the bench never ended the window");
    report("done");
    counts->stopping.store(true);
    for (auto& m : mutexes) m->close();
    for (auto& s : semaphores) s->close();
    for (auto& rw : rwlocks) rw->close();
    Completions closed;
    std::vector<std::shared_ptr<etcd::Session>> all;
    {
      std::lock_guard lock(sessions->mu);
      all = sessions->all;
    }
    for (const auto& s : all) closed.add(s->close().timeout(kCallBound));
    closed.wait_all(Clock::now() + kCallBound + std::chrono::seconds(5), "session closes");
    return 0;
  });
}

struct Tally {
  long long acquired = 0, failed = 0, lost = 0;
};

Tally parse_tally(const std::string& line, int index) {
  std::istringstream in(line);
  Tally t;
  if (!(in >> t.acquired >> t.failed >> t.lost))
    throw std::runtime_error(fmt("worker %d said '%s'", index, line.c_str()));
  return t;
}

double waiters_rate(Context& ctx, const std::string& kind, int total) {
  auto member = ctx.private_member();
  const std::string metrics_endpoint = "127.0.0.1:" + std::to_string(member->metrics_port(0));
  const std::string name = "scale/" + kind;
  const auto workers = start_workers(kProcesses, total, [&](int n) {
    return std::vector<std::string>{kWorkerFlag, kind, member->endpoints_csv(), name, std::to_string(n)};
  });
  const auto started_at = Clock::now();
  (void)expect_lines(workers, "ready", started_at + kStartBound + std::chrono::seconds(10));
  // Started is not parked: the window opens once (nearly) every waiter has
  // its key (all but one in flight per process).
  {
    etcd::Client client(worker_client_options(member->endpoints_csv()));
    const auto parked_deadline = started_at + kStartBound + std::chrono::seconds(10);
    for (;;) {
      auto r = client.get(name + "/", {.prefix = true, .count_only = true}).timeout(kCallBound).wait();
      if (r.ok() && r->count >= total - kProcesses) break;
      if (Clock::now() > parked_deadline) throw std::runtime_error(fmt("%d waiters never parked", total));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  const double start_s = Seconds(Clock::now() - started_at).count();
  // ETCD_RECIPES_BENCH_WAITERS_SETTLE_S: a longer settle, to measure once
  // the keys made while parking have all been through the lock.
  const char* settle_s = std::getenv("ETCD_RECIPES_BENCH_WAITERS_SETTLE_S");
  std::this_thread::sleep_for(settle_s ? std::chrono::seconds(std::atoi(settle_s)) : kSettle);
  // ETCD_RECIPES_BENCH_WAITERS_COMPACT=1: compact the history first (what
  // a cluster with auto-compaction does every few minutes): the keys of
  // past acquisitions leave etcd's index.
  if (std::getenv("ETCD_RECIPES_BENCH_WAITERS_COMPACT")) {
    etcd::Client client(worker_client_options(member->endpoints_csv()));
    auto head = client.get("bench-compact-probe").timeout(kCallBound).wait();
    if (head.ok()) (void)client.compact(head->header.revision, /*physical=*/true).timeout(kCallBound).wait();
  }
  const auto cpu = [&] { return etcd_cpu_seconds(metrics_endpoint); };
  const double cpu_before = cpu();
  // Every worker's counts, summed: what each said after the word.
  const auto collect = [&](const std::string& word) {
    Tally sum;
    const auto lines = expect_lines(workers, word, Clock::now() + std::chrono::seconds(30));
    for (size_t i = 0; i < lines.size(); ++i) {
      const Tally t = parse_tally(lines[i], static_cast<int>(i));
      sum.acquired += t.acquired;
      sum.failed += t.failed;
      sum.lost += t.lost;
    }
    return sum;
  };
  const auto from = Clock::now();
  signal_workers(workers);
  const Tally mark = collect("mark");
  std::this_thread::sleep_until(from + kWindow);
  signal_workers(workers);
  const double cpu_after = cpu();
  const double window_s = Seconds(Clock::now() - from).count();
  const Tally done = collect("done");
  const auto closed_deadline = Clock::now() + kCallBound + std::chrono::seconds(10);
  drain_workers(workers, closed_deadline);
  const double acquisitions = static_cast<double>(done.acquired - mark.acquired);
  const double rate = acquisitions / window_s;
  const double cpu_ms = acquisitions > 0 ? 1000.0 * (cpu_after - cpu_before) / acquisitions : 0;
  ctx.set_detail(ctx.metric(), {{"etcd_cpu_ms_per_acquisition", cpu_ms},
                                {"failed_in_window", static_cast<double>(done.failed - mark.failed)},
                                {"failed_while_starting", static_cast<double>(mark.failed)},
                                {"sessions_lost", static_cast<double>(done.lost)},
                                {"start_s", start_s}});
  ctx.note(
      fmt("%s: etcd %s, %d %s waiters (%s) in %d processes, each looping acquire + release: "
          "%.1f acquisitions/s over %.0f s, etcd CPU %.2f ms per acquisition; %lld failed acquisitions or "
          "releases while starting, %lld in the window; %lld sessions lost; started in %.1f s",
          ctx.metric().c_str(), member->version().text.c_str(), total, kind.c_str(),
          kind.rfind("ordered-", 0) == 0 ? "one session per process" : "a session each", kProcesses, rate, window_s,
          cpu_ms, mark.failed, done.failed - mark.failed, done.lost, start_s));
  return rate;
}

Metric waiters(std::string name, const std::string& kind, int order, int total) {
  return scale_metric(std::move(name), "acq/s", Kind::kCost, order,
                      [kind, total](Context& ctx) { return waiters_rate(ctx, kind, total); });
}

[[maybe_unused]] const bool kRegistered =
    add_metrics({
        waiters("mutex_acq_per_s_w100", "mutex", 4060, 100),
        waiters("mutex_acq_per_s_w1000", "mutex", 4061, 1000),
        waiters("mutex_acq_per_s_w10000", "mutex", 4062, 10000),
        waiters("semaphore_acq_per_s_w10000", "semaphore", 4063, 10000),
        waiters("mutex_ordered_acq_per_s_w100", "ordered-mutex", 4064, 100),
        waiters("mutex_ordered_acq_per_s_w1000", "ordered-mutex", 4065, 1000),
        waiters("mutex_ordered_acq_per_s_w10000", "ordered-mutex", 4066, 10000),
        waiters("rwlock_ordered_write_acq_per_s_w100", "ordered-rwlock-writer", 4068, 100),
        waiters("rwlock_ordered_write_acq_per_s_w10000", "ordered-rwlock-writer", 4069, 10000),
        waiters("semaphore_ordered_acq_per_s_w100", "ordered-semaphore", 4070, 100),
        waiters("semaphore_ordered_acq_per_s_w10000", "ordered-semaphore", 4071, 10000),
    }) &&
    add_helper_mode({.flag = kWorkerFlag, .run = waiters_worker});

}  // namespace
}  // namespace bench::metrics_waiters_scale
