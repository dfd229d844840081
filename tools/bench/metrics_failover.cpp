// Client resilience under member kills (3 members only):
//
//   failover_ms              a client writing sequentially to the leader; the
//                            leader is SIGKILLed; time from the kill to the
//                            completion of the first write issued after it
//                            that succeeds (median of 3 kills; --quick: 1).
//   watch_resume_gap_events  a prefix watch through a client whose member is
//                            SIGKILLed while a writer on the other members
//                            writes N unique keys; the number of written
//                            revisions the watch never delivered (must be 0).
//
// Both kill members, so they run last (orders 950/960) and restart the
// member (and wait for a healthy cluster) before returning.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"

namespace bench {
namespace {

using Millis = std::chrono::duration<double, std::milli>;

std::string fmt(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// The registry hands metrics a const cluster; killing and restarting members
// needs the mutable one. The object itself is not const (main() owns it
// through a unique_ptr<EtcdCluster>), so casting the reference is defined.
etcd::testing::EtcdCluster& mutable_cluster(Context& ctx) {
  return const_cast<etcd::testing::EtcdCluster&>(ctx.cluster());
}

void require_three(const Context& ctx) {
  if (ctx.cluster().size() != 3 || ctx.settings.members != 3) throw Skipped("needs --members 3");
}

// Endpoints with member `first` first: a Client talks to its first endpoint
// until that fails.
std::vector<std::string> endpoints_starting_with(const Context& ctx, int first) {
  std::vector<std::string> eps = ctx.cluster().endpoints();
  std::rotate(eps.begin(), eps.begin() + first, eps.end());
  return eps;
}

void restart_member(Context& ctx, int member) {
  auto& cluster = mutable_cluster(ctx);
  cluster.restart(member);
  cluster.wait_healthy(std::chrono::seconds(30));
}

// --- failover_ms -----------------------------------------------------------

double one_failover(Context& ctx, int round) {
  auto& cluster = mutable_cluster(ctx);
  const int leader = cluster.wait_for_leader(std::chrono::seconds(30));
  etcd::ClientOptions options;
  options.endpoints = endpoints_starting_with(ctx, leader);
  etcd::Client writer(options);
  const std::string key = Context::key_prefix("failover_ms") + "k";
  writer.put(key, "warm").wait().value();
  if (writer.current_endpoint() != ctx.cluster().endpoint(leader)) {
    throw std::runtime_error("the writer does not talk to the leader");
  }

  // kill_at is written before `killed` is set, and read only after.
  Clock::time_point kill_at{};
  std::atomic<bool> killed{false};
  struct Attempt {
    Clock::time_point start, end;
    bool ok;
    std::string error;
  };
  std::vector<Attempt> attempts;  // writes issued after the kill; the writer's until joined
  // Writes back to back; returns after the first write issued after the kill
  // that succeeded (or 60 s after the kill).
  std::thread writer_thread([&] {
    while (true) {
      const bool after_kill = killed.load();
      const auto start = Clock::now();
      auto r = writer.put(key, std::to_string(start.time_since_epoch().count())).wait();
      if (!r.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!after_kill) continue;
      attempts.push_back({start, Clock::now(), r.ok(), r.ok() ? std::string() : r.status().to_string()});
      if (r.ok() || Clock::now() - kill_at > std::chrono::seconds(60)) return;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill_at = Clock::now();
  cluster.kill(leader);
  killed.store(true);
  writer_thread.join();
  const auto first_ok = std::find_if(attempts.begin(), attempts.end(), [](const Attempt& a) { return a.ok; });
  if (first_ok == attempts.end()) throw std::runtime_error("no successful write within 60 s of killing the leader");
  const double ms = Millis(first_ok->end - kill_at).count();
  std::string errors;
  for (const auto& a : attempts) {
    if (!a.ok) errors += (errors.empty() ? "" : "; ") + a.error.substr(0, 120);
  }
  ctx.note(fmt("failover_ms: round %d: killed leader %d; %zu failed write(s) before the first success %.1f ms after "
               "the kill",
               round, leader, attempts.size() - 1, ms) +
           (errors.empty() ? std::string() : " (" + errors + ")"));
  restart_member(ctx, leader);
  return ms;
}

double failover_ms(Context& ctx) {
  require_three(ctx);
  const int rounds = ctx.settings.quick ? 1 : 3;
  std::vector<double> ms;
  for (int i = 0; i < rounds; ++i) ms.push_back(one_failover(ctx, i + 1));
  std::ranges::sort(ms);
  return ms[ms.size() / 2];
}

// --- watch_resume_gap_events ------------------------------------------------

double watch_resume_gap_events(Context& ctx) {
  require_three(ctx);
  auto& cluster = mutable_cluster(ctx);
  const std::string prefix = Context::key_prefix("watch_resume_gap_events");
  const int events = ctx.settings.quick ? 300 : 1000;
  const int leader = cluster.wait_for_leader(std::chrono::seconds(30));
  const int victim = (leader + 1) % 3;  // a follower: the writes go on without an election

  etcd::ClientOptions watcher_options;
  watcher_options.endpoints = endpoints_starting_with(ctx, victim);
  etcd::Client watcher_client(watcher_options);
  struct Seen {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int64_t> revisions;
    std::optional<etcd::Status> error;
  };
  auto seen = std::make_shared<Seen>();
  etcd::WatchOptions watch_options;
  watch_options.prefix = true;
  etcd::Watcher watcher = watcher_client.watch(prefix, watch_options, [seen](etcd::Result<etcd::WatchResponse> r) {
    std::lock_guard lock(seen->mu);
    if (!r.ok()) {
      seen->error = r.status();
    } else {
      for (const auto& e : r->events) seen->revisions.push_back(e.kv.mod_revision);
    }
    seen->cv.notify_all();
  });
  if (!watcher.wait_created(Clock::now() + std::chrono::seconds(10))) {
    throw std::runtime_error("the watch was not created within 10 s");
  }
  if (watcher_client.current_endpoint() != ctx.cluster().endpoint(victim)) {
    throw std::runtime_error("the watcher does not talk to the member to be killed");
  }

  etcd::ClientOptions writer_options;
  for (int i = 0; i < 3; ++i) {
    if (i != victim) writer_options.endpoints.push_back(ctx.cluster().endpoint(i));
  }
  etcd::Client writer(writer_options);
  // Create-if-absent on unique keys: a write whose outcome was unknown is
  // simply tried again, and the revision that created the key is known
  // either way.
  std::set<int64_t> written;
  int retries = 0;
  for (int i = 0; i < events; ++i) {
    if (i == events / 3) cluster.kill(victim);
    const std::string key = prefix + std::to_string(i);
    etcd::Txn txn;
    txn.when(etcd::Compare::create_revision(key) == 0).then(etcd::Op::put(key, "x")).otherwise(etcd::Op::get(key));
    for (int attempt = 1;; ++attempt) {
      auto r = writer.txn(txn).timeout(std::chrono::seconds(10)).wait();
      if (r.ok()) {
        written.insert(r->succeeded ? r->header.revision : r->responses.at(0).get().kvs.at(0).mod_revision);
        break;
      }
      if (attempt >= 10) throw etcd::Error(r.status());
      ++retries;
    }
  }
  {
    std::unique_lock lock(seen->mu);
    seen->cv.wait_for(lock, std::chrono::seconds(20), [&] {
      return seen->error || std::set<int64_t>(seen->revisions.begin(), seen->revisions.end()).size() >= written.size();
    });
  }
  watcher.cancel();
  std::lock_guard lock(seen->mu);
  const std::set<int64_t> delivered(seen->revisions.begin(), seen->revisions.end());
  int missing = 0;
  for (const int64_t rev : written) missing += delivered.contains(rev) ? 0 : 1;
  const auto stats = watcher_client.stats();
  ctx.note(
      fmt("watch_resume_gap_events: killed member %d under the watch after %d of %d writes; %zu events "
          "delivered, %d missing, %zu duplicates, %llu stream restart(s), %d writer retries%s",
          victim, events / 3, events, seen->revisions.size(), missing, seen->revisions.size() - delivered.size(),
          static_cast<unsigned long long>(stats.watch_stream_restarts), retries,
          seen->error ? (", watch error: " + seen->error->to_string()).c_str() : ""));
  restart_member(ctx, victim);
  return missing;
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "failover_ms", .unit = "ms", .kind = Kind::kLatency, .base = "", .order = 950, .run = failover_ms},
    {.name = "watch_resume_gap_events",
     .unit = "events",
     .kind = Kind::kCount,
     .base = "",
     .order = 960,
     .run = watch_resume_gap_events},
});

}  // namespace
}  // namespace bench
