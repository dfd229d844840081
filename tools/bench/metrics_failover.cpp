// Client resilience under member kills (3 members only):
//
//   failover_via_leader_ms   a client writing sequentially; the raft leader
//   failover_via_follower_ms is SIGKILLed; the longest gap between two
//                            successful writes, with the client talking to
//                            the leader / to a surviving follower (median of
//                            3 kills; --quick: 1). With --go-peer, the same
//                            for etcd's Go client (go_failover_via_*).
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
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"

namespace bench::metrics_failover {
namespace {

using Millis = std::chrono::duration<double, std::milli>;

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

// --- failover_via_leader_ms / failover_via_follower_ms -----------------------

// A client writes sequentially; the raft leader is SIGKILLed. The figure is
// the longest gap between two successful writes (end to end), the measure
// of how long a writer is stopped. Via leader: the client talks to the
// member that dies; via follower: to a member that survives (its writes are
// forwarded to the dying leader).
struct FailoverCase {
  const char* name;
  bool via_leader;
};

// Endpoints for a case: the member the client should talk to first.
std::vector<std::string> failover_endpoints(Context& ctx, const FailoverCase& c, int leader) {
  return endpoints_starting_with(ctx, c.via_leader ? leader : (leader + 1) % 3);
}

double one_failover(Context& ctx, const FailoverCase& c, int round) {
  auto& cluster = mutable_cluster(ctx);
  const int leader = cluster.wait_for_leader(std::chrono::seconds(30));
  etcd::ClientOptions options;
  options.endpoints = failover_endpoints(ctx, c, leader);
  etcd::Client writer(options);
  const std::string key = Context::key_prefix(c.name) + "k";
  writer.put(key, "warm").wait().value();
  if (writer.current_endpoint() != options.endpoints.front()) {
    throw std::runtime_error(std::string(c.name) + ": the writer does not talk to the intended member");
  }

  std::atomic<bool> done{false};
  std::mutex mu;
  struct Success {
    Clock::time_point start, end;
  };
  std::vector<Success> successes;
  std::vector<std::string> errors;
  std::thread writer_thread([&] {
    while (!done.load()) {
      const auto start = Clock::now();
      auto r = writer.put(key, "v").wait();
      std::lock_guard lock(mu);
      if (r.ok()) {
        successes.push_back({start, Clock::now()});
      } else {
        errors.push_back(r.status().to_string().substr(0, 160));
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto kill_at = Clock::now();
  cluster.kill(leader);  // returns once the process is gone
  const auto killed = Clock::now();
  // How long the cluster itself took to elect a new leader (polled), to
  // tell the client's share of the gap from the election's.
  const int new_leader = cluster.wait_for_leader(std::chrono::seconds(30));
  const double election_ms = Millis(Clock::now() - kill_at).count();
  // Until a write sent after the leader was gone succeeded (bounded).
  const auto deadline = killed + std::chrono::seconds(60);
  const auto recovered = [&] { return !successes.empty() && successes.back().start >= killed; };
  while (Clock::now() < deadline) {
    {
      std::lock_guard lock(mu);
      if (recovered()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  done = true;
  writer_thread.join();
  if (!recovered()) {
    throw std::runtime_error(std::string(c.name) + ": no successful write within 60 s of killing the leader");
  }
  double ms = 0;
  for (size_t i = 1; i < successes.size(); ++i)
    ms = std::max(ms, Millis(successes[i].end - successes[i - 1].end).count());
  std::string failures;
  for (const auto& e : errors) failures += (failures.empty() ? "" : "; ") + e;
  ctx.note(fmt("%s: round %d: killed leader %d; longest gap %.1f ms; member %d led (polled) %.0f ms after the kill; "
               "%zu failed write(s)",
               c.name, round, leader, ms, new_leader, election_ms, errors.size()) +
           (failures.empty() ? std::string() : " (" + failures + ")"));
  restart_member(ctx, leader);
  return ms;
}

double failover(Context& ctx, const FailoverCase& c) {
  require_three(ctx);
  const int rounds = ctx.settings.quick ? 1 : 3;
  std::vector<double> ms;
  for (int i = 0; i < rounds; ++i) ms.push_back(one_failover(ctx, c, i + 1));
  std::ranges::sort(ms);
  return ms[ms.size() / 2];
}

// The same with etcd's Go client (each round runs for etcd's request
// timeout: a stranded Go write waits it out). Go's clientv3 balances calls round robin over
// its endpoints, so "via follower" gives it the surviving follower alone;
// "via leader" gives it all three, the leader first.
double one_go_failover(Context& ctx, const FailoverCase& c, int round) {
  auto& cluster = mutable_cluster(ctx);
  const int leader = cluster.wait_for_leader(std::chrono::seconds(30));
  std::vector<std::string> endpoints = failover_endpoints(ctx, c, leader);
  if (!c.via_leader) endpoints.resize(1);
  // Room for etcd's request timeout (5 s + 2 election timeouts) after the
  // kill, which comes 2 s in.
  const auto window = std::chrono::seconds(2) + std::chrono::seconds(5) +
                      2 * std::chrono::duration_cast<Clock::duration>(ctx.settings.election_timeout) +
                      std::chrono::seconds(4);
  std::optional<GoResults> results;
  std::exception_ptr failure;
  std::thread go_thread([&] {
    try {
      results = run_go_peer_failover(ctx, endpoints, window);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const auto kill_at = std::chrono::system_clock::now();
  cluster.kill(leader);
  const auto killed = std::chrono::system_clock::now();
  go_thread.join();
  restart_member(ctx, leader);
  if (failure) std::rethrow_exception(failure);
  const double gap_ms = results->at("gap_ms");
  const double gap_start = results->at("gap_start_unix");
  const double kill_s = std::chrono::duration<double>(kill_at.time_since_epoch()).count();
  const double killed_s = std::chrono::duration<double>(killed.time_since_epoch()).count();
  // A put committed just before the kill may complete just after it.
  if (gap_start > killed_s + 0.05 || gap_start + gap_ms / 1000 < kill_s) {
    throw std::runtime_error(
        fmt("go_%s: the Go client's longest gap (%.1f ms from %.3f) does not span the kill at %.3f", c.name, gap_ms,
            gap_start, kill_s));
  }
  ctx.note(fmt("go_%s: round %d: killed leader %d; longest gap %.1f ms; %.0f failed put(s)", c.name, round, leader,
               gap_ms, results->at("failed_puts")));
  return gap_ms;
}

double go_failover(Context& ctx, const FailoverCase& c) {
  require_three(ctx);
  const int rounds = ctx.settings.quick ? 1 : 3;
  std::vector<double> ms;
  for (int i = 0; i < rounds; ++i) ms.push_back(one_go_failover(ctx, c, i + 1));
  std::ranges::sort(ms);
  return ms[ms.size() / 2];
}

constexpr FailoverCase kViaLeader{"failover_via_leader_ms", true};
constexpr FailoverCase kViaFollower{"failover_via_follower_ms", false};

// --- watch_resume_gap_events ------------------------------------------------

double watch_resume_gap_events(Context& ctx) {
  require_three(ctx);
  auto& cluster = mutable_cluster(ctx);
  const std::string prefix = Context::key_prefix("watch_resume_gap_events");
  const int events = ctx.settings.quick ? 300 : 1000;
  const int leader = cluster.wait_for_leader(std::chrono::seconds(30));
  const int victim = (leader + 1) % 3;  // a follower: the writes go on without an election

  struct Seen {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int64_t> revisions;
    std::optional<etcd::Status> error;
  };
  auto seen = std::make_shared<Seen>();
  etcd::WatchOptions watch_options;
  watch_options.prefix = true;
  etcd::ClientOptions watcher_options;
  watcher_options.endpoints = endpoints_starting_with(ctx, victim);
  std::optional<etcd::Client> watcher_client;
  etcd::Watcher watcher;
  // The watch must run on the member to be killed; a loaded machine can
  // make a new client move on before its watch is created: try again.
  for (int attempt = 1;; ++attempt) {
    watcher_client.emplace(watcher_options);
    watcher = watcher_client->watch(prefix, watch_options, [seen](etcd::Result<etcd::WatchResponse> r) {
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
    if (watcher_client->current_endpoint() == ctx.cluster().endpoint(victim)) break;
    if (attempt == 3) throw std::runtime_error("the watcher does not talk to the member to be killed (3 tries)");
    watcher.cancel();
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
  const auto stats = watcher_client->stats();
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
    {.name = "failover_via_leader_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .base = "",
     .order = 950,
     .run = [](Context& ctx) { return failover(ctx, kViaLeader); }},
    {.name = "failover_via_follower_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .base = "",
     .order = 951,
     .run = [](Context& ctx) { return failover(ctx, kViaFollower); }},
    {.name = "go_failover_via_leader_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .base = "",
     .order = 952,
     .needs_go_peer = true,
     .run = [](Context& ctx) { return go_failover(ctx, kViaLeader); }},
    {.name = "go_failover_via_follower_ms",
     .unit = "ms",
     .kind = Kind::kLatency,
     .base = "",
     .order = 953,
     .needs_go_peer = true,
     .run = [](Context& ctx) { return go_failover(ctx, kViaFollower); }},
    {.name = "watch_resume_gap_events",
     .unit = "events",
     .kind = Kind::kCount,
     .base = "",
     .order = 960,
     .run = watch_resume_gap_events},
});

}  // namespace
}  // namespace bench::metrics_failover
