// Resilience of the client under real faults on real etcd members: the raft
// leader killed under a stream of writes, the member a client talks to
// paused past the election timeout, a client link blackholed for longer
// than a lease TTL, a compaction while a watch is disconnected, and a
// member restart under an open watch.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <set>
#include <thread>
#include <vector>

#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using Ms = std::chrono::milliseconds;

// Records what a watch delivers: the mod revision of every event, the
// error that ended it, and whether anything arrived after that error.
struct Recorder {
  std::mutex mu;
  std::vector<int64_t> revisions;
  std::vector<Event> events;
  std::optional<Status> error;
  int calls_after_error = 0;
  std::atomic<int> in_handler{0};
  std::atomic<bool> overlapped{false};

  WatchHandler handler() {
    return [this](Result<WatchResponse> r) {
      if (in_handler.fetch_add(1) != 0) overlapped = true;
      {
        std::lock_guard lock(mu);
        if (error) ++calls_after_error;
        if (!r.ok()) {
          error = r.status();
        } else {
          for (auto& e : r->events) {
            revisions.push_back(e.kv.mod_revision);
            events.push_back(e);
          }
        }
      }
      in_handler.fetch_sub(1);
    };
  }
  size_t count() {
    std::lock_guard lock(mu);
    return revisions.size();
  }
  std::optional<Status> err() {
    std::lock_guard lock(mu);
    return error;
  }
  std::vector<int64_t> seen() {
    std::lock_guard lock(mu);
    return revisions;
  }
};

// Writes `k` create-if-absent, so that a write whose outcome is unknown can
// be sent again safely. `retryable` says which failures may be retried;
// anything else is returned at once. Gives up at `give_up`.
Result<TxnResponse> create_unique(Client& c, const std::string& k, const std::string& v, Deadline give_up,
                                  const std::function<bool(const Status&)>& retryable, Ms per_try = Ms(5000),
                                  std::vector<Status>* failures = nullptr) {
  Result<TxnResponse> r = Status(StatusCode::kUnknown, "not tried");
  while (true) {
    Txn txn;
    txn.when(Compare::absent(k)).then(Op::put(k, v)).otherwise(Op::get(k));
    const auto now = Clock::now();
    const auto deadline = std::min(give_up, now + per_try);
    r = c.txn(txn).deadline(deadline).wait();
    if (r.ok()) return r;
    if (failures) failures->push_back(r.status());
    if (!retryable(r.status()) || Clock::now() >= give_up) return r;
    // A failure that came back at once (e.g. every member refused the
    // connection): pace the next try a little.
    if (Clock::now() - now < Ms(20)) std::this_thread::sleep_for(Ms(20));
  }
}

std::set<int64_t> create_revisions_under(Client& c, const std::string& prefix) {
  std::set<int64_t> out;
  auto all = c.get(prefix, {.prefix = true}).timeout(Ms(10000)).wait();
  EXPECT_TRUE(all.ok()) << all.status().to_string();
  if (!all.ok()) return out;
  for (auto& kv : all->kvs) {
    EXPECT_EQ(kv.create_revision, kv.mod_revision) << kv.key << " was written twice";
    out.insert(kv.create_revision);
  }
  return out;
}

// Records connection-state changes as the listener sees them.
struct StateLog {
  std::mutex mu;
  std::vector<ConnectionState> states;
  void add(ConnectionState s) {
    std::lock_guard lock(mu);
    states.push_back(s);
  }
  std::vector<ConnectionState> get() {
    std::lock_guard lock(mu);
    return states;
  }
  bool contains(ConnectionState s) {
    auto v = get();
    return std::find(v.begin(), v.end(), s) != v.end();
  }
  std::string str() {
    std::string out;
    for (auto s : get()) {
      if (!out.empty()) out += " -> ";
      out += std::string(to_string(s));
    }
    return out;
  }
};

// ---------------------------------------------------------------------------
// Three members.

using ResilienceThreeTest = ThreeMemberTest;

TEST_F(ResilienceThreeTest, LeaderKilledDuringWritesWatchSeesEveryRevisionOnceInOrder) {
  const int leader = cluster_->wait_for_leader(10s);
  // Both clients know all three members and start on the leader, so the
  // kill takes away the member each of them talks to.
  const ClientOptions o = options_starting_at(leader);
  Client watcher_client(o);
  Client writer(o);
  const std::string prefix = "/res/kill/";

  Recorder rec;
  auto watcher = watcher_client.watch(prefix, {.prefix = true}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));
  ASSERT_EQ(member_index_of(watcher_client.current_endpoint()), leader);

  constexpr int kWrites = 2000;
  constexpr int kKillAfter = 600;
  std::atomic<int> completed{0};
  std::atomic<bool> killed{false};
  Clock::time_point kill_at{};
  // The killer runs beside the writer, so that a write is in flight (or
  // about to be) when the leader dies.
  std::thread killer([&] {
    const auto give_up = Clock::now() + 60s;
    while (completed.load() < kKillAfter && Clock::now() < give_up) std::this_thread::sleep_for(Ms(1));
    kill_at = Clock::now();
    cluster_->kill(leader);
    killed = true;
  });

  struct Done {
    Clock::time_point start, end;
  };
  std::vector<Done> done;
  done.reserve(kWrites);
  std::vector<Status> failures;
  // Outcome unknown, or refused before it was applied: no leader, or no
  // member to connect to (a write the client could send nowhere for its
  // retry attempts while the dead member is still in its list).
  const auto allowed = [](const Status& s) {
    return s.is(Errc::kOutcomeUnknown) || s.is(Errc::kNoLeader) || s.code() == StatusCode::kUnavailable;
  };
  bool aborted = false;
  for (int i = 0; i < kWrites && !aborted; ++i) {
    char k[64];
    std::snprintf(k, sizeof k, "%s%05d", prefix.c_str(), i);
    const auto start = Clock::now();
    auto r = create_unique(writer, k, std::to_string(i), start + 20s, allowed, Ms(5000), &failures);
    if (!r.ok()) {
      ADD_FAILURE() << "write " << i << ": " << r.status().to_string();
      aborted = true;
      break;
    }
    done.push_back({start, Clock::now()});
    completed.fetch_add(1);
  }
  killer.join();
  ASSERT_FALSE(aborted);
  ASSERT_TRUE(killed.load());
  for (const auto& f : failures) {
    EXPECT_TRUE(allowed(f)) << f.to_string();
  }

  // Timings: the longest single write, and the longest gap between two
  // consecutive completions (the stall the writer saw), relative to the kill.
  long long max_latency = 0, max_gap = 0;
  Clock::time_point gap_end{};
  for (size_t i = 0; i < done.size(); ++i) {
    max_latency = std::max(max_latency, ms_between(done[i].start, done[i].end));
    if (i > 0 && ms_between(done[i - 1].end, done[i].end) > max_gap) {
      max_gap = ms_between(done[i - 1].end, done[i].end);
      gap_end = done[i].end;
    }
  }
  report_timing("kill_leader.max_write_latency", max_latency);
  report_timing("kill_leader.max_completion_gap", max_gap);
  report_timing("kill_leader.max_gap_ended_after_kill", ms_between(kill_at, gap_end));
  std::cout << "[ info     ] writes that failed and were retried: " << failures.size() << std::endl;
  for (const auto& f : failures) std::cout << "[ info     ]   " << f.to_string() << std::endl;

  // Every committed write, exactly once, in order.
  const std::set<int64_t> written = create_revisions_under(writer, prefix);
  ASSERT_EQ(written.size(), static_cast<size_t>(kWrites));
  ASSERT_TRUE(eventually([&] { return rec.count() >= written.size() || rec.err().has_value(); }, 20s))
      << "watch delivered " << rec.count() << " of " << written.size();
  ASSERT_FALSE(rec.err().has_value()) << rec.err()->to_string();
  const std::vector<int64_t> seen = rec.seen();
  EXPECT_EQ(seen.size(), written.size());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), seen.size()) << "duplicated revisions";
  EXPECT_EQ(std::vector<int64_t>(written.begin(), written.end()), seen);
  EXPECT_FALSE(rec.overlapped.load());
  EXPECT_GE(watcher_client.stats().watch_stream_restarts, 1u);
  EXPECT_NE(member_index_of(watcher_client.current_endpoint()), leader);
}

TEST_F(ResilienceThreeTest, PausedMemberReadsRecoverWithinAttemptTimeoutWritesNeverHang) {
  const int leader = cluster_->wait_for_leader(10s);
  // The client talks to the leader: pausing it also costs the cluster its
  // leader until the others elect a new one.
  Client c(options_starting_at(leader));
  const auto attempt_timeout = c.options().retry.attempt_timeout;
  ASSERT_TRUE(c.put("/res/pause/r", "v").wait().ok());
  const int victim = member_index_of(c.current_endpoint());
  ASSERT_EQ(victim, leader);

  constexpr auto kReadTimeout = 10s;
  constexpr auto kWriteTimeout = 2s;
  struct Outcome {
    Clock::time_point start, end;
    Status status;
  };
  std::mutex mu;
  std::vector<Outcome> reads, writes;
  std::atomic<bool> stop{false};

  const auto paused_at = Clock::now();
  cluster_->pause(victim);

  std::thread reader([&] {
    while (!stop.load()) {
      const auto start = Clock::now();
      auto r = c.get("/res/pause/r").timeout(kReadTimeout).wait();
      std::lock_guard lock(mu);
      reads.push_back({start, Clock::now(), r.status()});
    }
  });
  std::thread writer([&] {
    int i = 0;
    while (!stop.load()) {
      const auto start = Clock::now();
      auto r = c.put("/res/pause/w", std::to_string(i++)).timeout(kWriteTimeout).wait();
      std::lock_guard lock(mu);
      writes.push_back({start, Clock::now(), r.status()});
    }
  });
  // Keep going until reads and writes both succeed again (bounded), while
  // the member stays paused.
  const bool recovered = eventually(
      [&] {
        std::lock_guard lock(mu);
        const auto ok = [](const Outcome& o) { return o.status.ok(); };
        return std::any_of(reads.begin(), reads.end(), ok) && std::any_of(writes.begin(), writes.end(), ok);
      },
      15s, Ms(20));
  stop = true;
  reader.join();
  writer.join();
  EXPECT_TRUE(cluster_->is_paused(victim));
  cluster_->resume(victim);
  EXPECT_TRUE(recovered) << "reads and writes did not both succeed again while the member was paused";

  // Reads: every one succeeds (each has time for another attempt elsewhere)
  // and none takes much longer than one attempt timeout.
  long long max_read = 0, first_read_ok = -1;
  for (const auto& r : reads) {
    EXPECT_TRUE(r.status.ok()) << r.status.to_string();
    max_read = std::max(max_read, ms_between(r.start, r.end));
    if (r.status.ok() && first_read_ok < 0) first_read_ok = ms_between(paused_at, r.end);
  }
  report_timing("pause.max_read_latency", max_read);
  report_timing("pause.first_read_ok_after_pause", first_read_ok);
  EXPECT_LE(max_read, attempt_timeout.count() + 1500);
  EXPECT_GE(first_read_ok, 0);
  EXPECT_LE(first_read_ok, attempt_timeout.count() + 1500);

  // Writes: succeed, or fail as "outcome unknown" / deadline exceeded, and
  // never outlive their deadline.
  long long max_write = 0, first_write_ok = -1;
  int failed_writes = 0;
  for (const auto& w : writes) {
    const long long took = ms_between(w.start, w.end);
    max_write = std::max(max_write, took);
    if (w.status.ok()) {
      if (first_write_ok < 0) first_write_ok = ms_between(paused_at, w.end);
    } else {
      ++failed_writes;
      EXPECT_TRUE(w.status.is(Errc::kOutcomeUnknown) || w.status.code() == StatusCode::kDeadlineExceeded)
          << w.status.to_string();
    }
    EXPECT_LE(took, std::chrono::duration_cast<Ms>(kWriteTimeout).count() + 500) << w.status.to_string();
  }
  report_timing("pause.max_write_latency", max_write);
  report_timing("pause.first_write_ok_after_pause", first_write_ok);
  std::cout << "[ info     ] reads " << reads.size() << ", writes " << writes.size() << " (" << failed_writes
            << " failed)" << std::endl;

  // The member comes back and the client still works.
  cluster_->wait_healthy(15s);
  auto after = c.put("/res/pause/after", "1").timeout(5s).wait();
  EXPECT_TRUE(after.ok()) << after.status().to_string();
}

// A client that only writes (as a lock or a queue mostly does) must not stay
// stuck on a member that stopped answering: a write that ran out of time
// there is reported as "outcome unknown", and the next one goes elsewhere.
TEST_F(ResilienceThreeTest, WriteOnlyClientMovesOffAPausedMember) {
  const int leader = cluster_->wait_for_leader(10s);
  // Talk to a follower, so that the cluster keeps its leader: only this
  // client's member is gone.
  const int victim = (leader + 1) % cluster_->size();
  Client c(options_starting_at(victim));
  ASSERT_TRUE(c.put("/res/wo/k", "0").wait().ok());
  ASSERT_EQ(member_index_of(c.current_endpoint()), victim);

  constexpr auto kWriteTimeout = 2s;
  const auto paused_at = Clock::now();
  cluster_->pause(victim);
  long long first_ok = -1;
  int timed_out = 0;
  for (int i = 1; Clock::now() - paused_at < 16s; ++i) {
    const auto start = Clock::now();
    auto r = c.put("/res/wo/k", std::to_string(i)).timeout(kWriteTimeout).wait();
    EXPECT_LE(ms_between(start, Clock::now()), std::chrono::duration_cast<Ms>(kWriteTimeout).count() + 500);
    if (r.ok()) {
      first_ok = ms_between(paused_at, Clock::now());
      break;
    }
    ++timed_out;
    EXPECT_TRUE(r.status().is(Errc::kOutcomeUnknown) || r.status().code() == StatusCode::kDeadlineExceeded)
        << r.status().to_string();
  }
  cluster_->resume(victim);
  report_timing("pause_write_only.first_write_ok_after_pause", first_ok);
  std::cout << "[ info     ] writes that timed out first: " << timed_out << std::endl;
  ASSERT_GE(first_ok, 0) << "no write succeeded in 16 s while one member of three was paused";
  // One timed-out write is enough to give up on the member.
  EXPECT_LE(first_ok, 2 * std::chrono::duration_cast<Ms>(kWriteTimeout).count() + 1000);
  EXPECT_NE(member_index_of(c.current_endpoint()), victim);
}

// A watch whose member stopped answering (no event, no error: the TCP
// connection stays up) moves to another member and misses nothing.
TEST_F(ResilienceThreeTest, WatchOnAPausedMemberResumesElsewhere) {
  const int leader = cluster_->wait_for_leader(10s);
  const int victim = (leader + 1) % cluster_->size();
  Client watcher_client(options_starting_at(victim));
  ClientOptions wo;
  wo.endpoints = {cluster_->endpoint(leader)};
  Client writer(wo);
  Recorder rec;
  auto watcher = watcher_client.watch("/res/wp/", {.prefix = true}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));
  ASSERT_EQ(member_index_of(watcher_client.current_endpoint()), victim);
  auto before = writer.put("/res/wp/before", "1").wait();
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(eventually([&] { return rec.count() == 1; }, 5s));

  const auto paused_at = Clock::now();
  cluster_->pause(victim);
  std::vector<int64_t> written{before->header.revision};
  // Keep writing while waiting for the watch to catch up elsewhere.
  const bool resumed = eventually(
      [&] {
        auto r = writer.put("/res/wp/during", std::to_string(written.size())).wait();
        if (r.ok()) written.push_back(r->header.revision);
        return rec.count() >= 2;
      },
      20s, Ms(250));
  const long long resumed_after = ms_between(paused_at, Clock::now());
  cluster_->resume(victim);
  report_timing("pause_watch.first_event_after_pause", resumed ? resumed_after : -1);
  ASSERT_TRUE(resumed) << "the watch stayed silent for 20 s on its paused member";
  // The hub asks an idle stream for progress every 2 s and gives up on one
  // that stayed silent for 6 s; that (plus margin), not gRPC's keep-alive
  // (10 s + 3 s), must bound the silence.
  EXPECT_LE(resumed_after, 10000);
  ASSERT_TRUE(eventually([&] { return rec.count() >= written.size(); }, 10s));
  EXPECT_EQ(rec.seen(), written);
  EXPECT_FALSE(rec.err().has_value());
}

// ---------------------------------------------------------------------------
// One member, shared by the tests of this suite.

class ResilienceSingleTest : public ProxiedSingleMemberTest {};

TEST_F(ResilienceSingleTest, BlackholedLinkLosesTheKeptLeaseWithinTtlAndTheClientRecovers) {
  Client c(proxied());
  StateLog log;
  auto sub = c.on_state_change([&](ConnectionState s) { log.add(s); });
  constexpr auto kTtl = 2s;
  auto lease = c.lease(kTtl).wait();
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  ASSERT_EQ(lease->ttl(), kTtl);
  const int64_t id = lease->id();
  ASSERT_TRUE(c.put(key("leased"), "v", {.lease = id}).wait().ok());
  // Let at least one renewal go through the proxy.
  const auto first_expiry = lease->safe_until();
  ASSERT_TRUE(eventually([&] { return lease->safe_until() > first_expiry; }, 3s));

  Mailbox<std::pair<Status, Clock::time_point>> lost;
  auto lost_sub = lease->on_lost([&](const Status& why) { lost.put({why, Clock::now()}); });
  const auto token = lease->lost_token();

  const auto blackholed_at = Clock::now();
  proxy_->blackhole();
  auto why = lost.take(10s);
  ASSERT_TRUE(why.has_value()) << "loss not reported; states: " << log.str();
  const long long loss_after = ms_between(blackholed_at, why->second);
  report_timing("blackhole.lease_loss_reported_after", loss_after);
  EXPECT_LE(loss_after, std::chrono::duration_cast<Ms>(kTtl).count() + 1000);
  EXPECT_TRUE(why->first.is(Errc::kLeaseExpired)) << why->first.to_string();
  EXPECT_FALSE(lease->alive());
  EXPECT_TRUE(token.stop_requested());

  // SUSPENDED (calls/streams failing), then LOST (a lease is gone).
  ASSERT_TRUE(eventually([&] { return log.contains(ConnectionState::kLost); }, 2s)) << log.str();
  {
    auto v = log.get();
    auto suspended = std::find(v.begin(), v.end(), ConnectionState::kSuspended);
    auto lost_state = std::find(v.begin(), v.end(), ConnectionState::kLost);
    EXPECT_TRUE(suspended != v.end() && suspended < lost_state) << log.str();
  }
  EXPECT_EQ(c.state(), ConnectionState::kLost);

  // The server agrees: the lease died with the link (it is not kept
  // alive by anyone, so it must expire there too).
  ASSERT_TRUE(eventually([&] { return client().get(key("leased")).wait()->kvs.empty(); }, 5s));

  const auto restored_at = Clock::now();
  proxy_->restore();
  ASSERT_TRUE(eventually([&] { return c.get(key("leased")).timeout(3s).wait().ok(); }, 20s, Ms(50)))
      << "client did not recover after restore; states: " << log.str();
  report_timing("blackhole.first_read_ok_after_restore", ms_between(restored_at, Clock::now()));
  auto put = c.put(key("after"), "1").timeout(5s).wait();
  EXPECT_TRUE(put.ok()) << put.status().to_string();
  EXPECT_EQ(c.state(), ConnectionState::kReconnected);
  EXPECT_TRUE(eventually([&] { return !log.get().empty() && log.get().back() == ConnectionState::kReconnected; }, 2s))
      << log.str();

  // The lost lease stays lost: never re-granted, never renewed again.
  EXPECT_FALSE(lease->alive());
  EXPECT_EQ(lease->id(), id);
  EXPECT_EQ(c.stats().leases_kept, 0u);
  auto ttl = client().lease_time_to_live(id).wait();
  ASSERT_TRUE(ttl.ok()) << ttl.status().to_string();
  EXPECT_EQ(ttl->ttl, -1);
}

TEST_F(ResilienceSingleTest, CompactionWhileAWatchIsDisconnectedReportsResyncNeeded) {
  Client watcher_client(proxied());
  Recorder rec;
  auto watcher = watcher_client.watch(key("k"), {}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));

  auto first = client().put(key("k"), "1").wait();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(eventually([&] { return rec.count() == 1; }, 5s));

  proxy_->cut();
  int64_t last = 0;
  for (int i = 2; i <= 4; ++i) {
    auto r = client().put(key("k"), std::to_string(i)).wait();
    ASSERT_TRUE(r.ok());
    last = r->header.revision;
  }
  // Past the watch's resume point (first + 1), and past the missed writes.
  auto other = client().put(key("other"), "x").wait();
  ASSERT_TRUE(other.ok());
  const int64_t compact_rev = other->header.revision;
  ASSERT_GT(compact_rev, last);
  ASSERT_TRUE(client().compact(compact_rev).wait().ok());
  proxy_->restore();

  ASSERT_TRUE(eventually([&] { return rec.err().has_value(); }, 15s)) << "no error after restore";
  const Status err = *rec.err();
  EXPECT_TRUE(err.is(Errc::kResyncNeeded)) << err.to_string();
  EXPECT_EQ(err.code(), StatusCode::kOutOfRange) << err.to_string();
  EXPECT_EQ(err.revision(), compact_rev) << err.to_string();
  // Delivered: the first event only, nothing from the gap, nothing after.
  EXPECT_EQ(rec.seen(), std::vector<int64_t>{first->header.revision});
  EXPECT_FALSE(watcher.active());
  EXPECT_EQ(watcher_client.stats().watches_open, 0u);
  EXPECT_GE(watcher_client.stats().watch_stream_restarts, 1u);
  {
    std::lock_guard lock(rec.mu);
    EXPECT_EQ(rec.calls_after_error, 0);
  }
}

// ---------------------------------------------------------------------------
// A member restarted under an open watch.

TEST(ResilienceRestartTest, WatchResumesAfterItsMemberIsRestarted) {
  auto cluster = etcd::testing::EtcdCluster::start_single();
  ClientOptions o;
  o.endpoints = cluster->endpoints();
  Client watcher_client(o);
  Client writer(o);
  const std::string prefix = "/res/restart/";
  Recorder rec;
  auto watcher = watcher_client.watch(prefix, {.prefix = true}, rec.handler());
  ASSERT_TRUE(watcher.wait_created(Clock::now() + 5s));

  // While the only member is down, a write fails as unavailable (nothing
  // sent) or with an unknown outcome; both are safe to repeat here.
  const auto allowed = [](const Status& s) {
    return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
  };
  std::atomic<int> next{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::string failure;
  std::vector<Status> retried;
  auto write_one = [&](std::vector<Status>* log) {
    char k[64];
    const int i = next.fetch_add(1);
    std::snprintf(k, sizeof k, "%s%05d", prefix.c_str(), i);
    auto r = create_unique(writer, k, std::to_string(i), Clock::now() + 20s, allowed, Ms(3000), log);
    if (!r.ok()) {
      failed = true;
      failure = r.status().to_string();
    }
    return r.ok();
  };

  for (int i = 0; i < 50; ++i) ASSERT_TRUE(write_one(nullptr)) << failure;  // before
  std::atomic<int> during{0};
  std::thread background([&] {  // while
    while (!stop.load() && !failed.load()) {
      if (write_one(&retried)) during.fetch_add(1);
    }
  });
  ASSERT_TRUE(eventually([&] { return during.load() >= 20 || failed.load(); }, 10s));
  const auto restart_at = Clock::now();
  cluster->restart(0);
  cluster->wait_healthy(15s);
  const int at_healthy = during.load();
  const bool wrote_after = eventually([&] { return during.load() >= at_healthy + 20 || failed.load(); }, 15s);
  report_timing("restart.member_down_and_back", ms_between(restart_at, Clock::now()));
  stop = true;
  background.join();
  ASSERT_FALSE(failed.load()) << failure;
  ASSERT_TRUE(wrote_after);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(write_one(nullptr)) << failure;  // after
  std::cout << "[ info     ] writes retried during the restart: " << retried.size() << std::endl;

  const std::set<int64_t> written = create_revisions_under(writer, prefix);
  ASSERT_EQ(written.size(), static_cast<size_t>(next.load()));
  ASSERT_TRUE(eventually([&] { return rec.count() >= written.size() || rec.err().has_value(); }, 15s))
      << rec.count() << " of " << written.size();
  ASSERT_FALSE(rec.err().has_value()) << rec.err()->to_string();
  const auto seen = rec.seen();
  EXPECT_EQ(std::vector<int64_t>(written.begin(), written.end()), seen);
  EXPECT_GE(watcher_client.stats().watch_stream_restarts, 1u);
  EXPECT_TRUE(watcher.active());
}

}  // namespace
}  // namespace etcd::test
