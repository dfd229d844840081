// DistributedReadWriteLock against a real etcd member.
#include <atomic>
#include <cstdio>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "client/client_access.h"
#include "etcd/recipes/rwlock.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedReadWriteLock;
using recipes::RecipeOptions;
using Pending = std::future<Result<etcd::recipes::Hold>>;

#define ASSERT_OK(expr)                                        \
  do {                                                         \
    auto result_ = (expr);                                     \
    ASSERT_TRUE(result_.ok()) << result_.status().to_string(); \
  } while (0)

// Every behaviour on both contender layouts (the ordered one: keys that
// name a revision, core/ordered_key.h).
class RwLockTest : public SingleMemberTest, public ::testing::WithParamInterface<recipes::ContenderLayout> {
 protected:
  static RecipeOptions layout(RecipeOptions o = {}) {
    o.contender_layout = GetParam();
    return o;
  }
  static bool ordered() { return GetParam() == recipes::ContenderLayout::kOrdered; }
  int64_t count(const std::string& prefix) {
    return client().get(prefix, {.prefix = true, .count_only = true}).wait()->count;
  }
  // Waits until `n` contender keys exist under the lock.
  void queued(const std::string& name, int64_t n) {
    ASSERT_TRUE(eventually([&] { return count(name + "/") == n; })) << "expected " << n << " keys under " << name;
  }
};

TEST_P(RwLockTest, KeyLayoutFencingTokensAndTwoWritesPerCycle) {
  const std::string name = key("layout");
  DistributedReadWriteLock rw(client(), name, layout());
  EXPECT_EQ(rw.identity(), "DistributedReadWriteLock[" + name + "]");

  for (auto* side : {&rw.read_lock(), &rw.write_lock()}) {
    const std::string kind = side == &rw.read_lock() ? "read" : "write";
    ASSERT_TRUE(side->acquire().wait().ok());
    EXPECT_TRUE(side->is_held());
    const std::string k = side->hold().key();
    auto got = client().get(k).wait();
    ASSERT_EQ(got->kvs.size(), 1u) << k;
    if (ordered()) {
      // SPACE~<R>-<lease>-<n>, 16 hex digits each.
      const std::string space = name + "/" + kind + "/~";
      ASSERT_EQ(k.rfind(space, 0), 0u) << k;
      ASSERT_EQ(k.size(), space.size() + 16 + 1 + 16 + 1 + 16) << k;
      EXPECT_EQ(std::stoull(k.substr(space.size() + 17, 16), nullptr, 16), static_cast<uint64_t>(got->kvs[0].lease));
    } else {
      EXPECT_EQ(k, name + "/" + kind + "/" + hex(got->kvs[0].lease));
    }
    EXPECT_EQ(side->hold().token(), got->kvs[0].create_revision);
    EXPECT_TRUE(side->unlock());
    EXPECT_FALSE(side->is_held());
    EXPECT_EQ(side->hold().token(), 0);
    EXPECT_TRUE(client().get(k).wait()->kvs.empty());
    EXPECT_FALSE(side->unlock()) << "a second unlock has nothing to release";

    const int64_t before = client().put(key("probe"), "x").wait()->header.revision;
    ASSERT_TRUE(side->acquire().wait().ok());
    ASSERT_TRUE(side->unlock());
    const int64_t after = client().put(key("probe"), "y").wait()->header.revision;
    EXPECT_EQ(after - before - 1, 2) << "revisions consumed by one " << kind << " lock+unlock";
  }
}

TEST_P(RwLockTest, StandardLockAdaptersWorkOnBothSides) {
  DistributedReadWriteLock rw(client(), key("std"), layout());
  {
    std::unique_lock lock(rw.read_lock());
    EXPECT_TRUE(rw.read_lock().is_held());
  }
  EXPECT_FALSE(rw.read_lock().is_held());
  {
    std::scoped_lock lock(rw.write_lock());
    EXPECT_TRUE(rw.write_lock().is_held());
  }
  std::unique_lock lock(rw.write_lock(), std::defer_lock);
  EXPECT_TRUE(lock.try_lock_for(2s));
  lock.unlock();
  EXPECT_TRUE(rw.read_lock().with_lock([&] { return rw.read_lock().hold().token() > 0; }));
  EXPECT_FALSE(rw.read_lock().is_held());
}

TEST_P(RwLockTest, ReadersShare) {
  const std::string name = key("share");
  DistributedReadWriteLock a(client(), name, layout()), b(client(), name, layout()), c(client(), name, layout());
  ASSERT_OK(a.read_lock().acquire().timeout(5s).wait());
  ASSERT_OK(b.read_lock().acquire().timeout(5s).wait());
  EXPECT_TRUE(c.read_lock().try_lock());
  EXPECT_TRUE(a.read_lock().is_held());
  EXPECT_TRUE(b.read_lock().is_held());
  EXPECT_TRUE(c.read_lock().is_held());
  EXPECT_EQ(count(name + "/read/"), 3);
  EXPECT_TRUE(a.read_lock().unlock());
  EXPECT_TRUE(b.read_lock().unlock());
  EXPECT_TRUE(c.read_lock().unlock());
}

TEST_P(RwLockTest, AWriterExcludesReadersAndWriters) {
  const std::string name = key("excl");
  DistributedReadWriteLock w(client(), name, layout()), r(client(), name, layout()), w2(client(), name, layout());
  ASSERT_OK(w.write_lock().acquire().wait());
  EXPECT_FALSE(r.read_lock().try_lock());
  EXPECT_FALSE(w2.write_lock().try_lock());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.read_lock().try_lock_for(300ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 290ms);
  // Declined attempts leave no key behind.
  EXPECT_TRUE(eventually([&] { return count(name + "/") == 1; }));

  auto reader = r.read_lock().acquire().timeout(10s).future();
  queued(name, 2);
  EXPECT_TRUE(still_waiting(reader));
  EXPECT_TRUE(w.write_lock().unlock());
  ASSERT_TRUE(ready(reader));
  EXPECT_TRUE(reader.get().ok());

  // And a reader excludes a writer.
  auto writer = w2.write_lock().acquire().timeout(10s).future();
  queued(name, 2);
  EXPECT_TRUE(still_waiting(writer));
  EXPECT_TRUE(r.read_lock().unlock());
  ASSERT_TRUE(ready(writer));
  EXPECT_TRUE(writer.get().ok());
  EXPECT_GT(w2.write_lock().hold().token(), w.write_lock().hold().token());
  EXPECT_TRUE(w2.write_lock().unlock());
}

TEST_P(RwLockTest, AQueuedWriterIsNotStarvedByLaterReaders) {
  const std::string name = key("starve");
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions opts = layout();
  opts.metrics = metrics;
  DistributedReadWriteLock reader1(client(), name, opts), writer(client(), name, opts), reader2(client(), name, opts);
  ASSERT_OK(reader1.read_lock().acquire().wait());
  auto w = writer.write_lock().acquire().timeout(20s).future();
  queued(name, 2);
  auto r2 = reader2.read_lock().acquire().timeout(20s).future();
  queued(name, 3);
  // reader2 came after the writer: it must not join reader1.
  EXPECT_TRUE(still_waiting(r2, 500ms));
  EXPECT_TRUE(still_waiting(w, 10ms));

  EXPECT_TRUE(reader1.read_lock().unlock());
  ASSERT_TRUE(ready(w));
  ASSERT_TRUE(w.get().ok());
  EXPECT_TRUE(writer.write_lock().is_held());
  EXPECT_TRUE(still_waiting(r2, 300ms)) << "a reader got in while the writer held";
  const int64_t write_token = writer.write_lock().hold().token();
  EXPECT_TRUE(writer.write_lock().unlock());
  ASSERT_TRUE(ready(r2));
  ASSERT_TRUE(r2.get().ok());
  EXPECT_GT(reader2.read_lock().hold().token(), write_token);
  EXPECT_TRUE(reader2.read_lock().unlock());
  // Two hand-offs, each one wake-up.
  EXPECT_LE(metrics->value("etcd_recipes_rwlock_wakeups_total", {{"lock", name}, {"mode", "write"}}), 1);
  EXPECT_LE(metrics->value("etcd_recipes_rwlock_wakeups_total", {{"lock", name}, {"mode", "read"}}), 1);
}

TEST_P(RwLockTest, FifoAcrossReadersAndWriters) {
  const std::string name = key("fifo");
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions opts = layout();
  opts.metrics = metrics;
  DistributedReadWriteLock w0(client(), name, opts), r1(client(), name, opts), r2(client(), name, opts),
      w3(client(), name, opts), r4(client(), name, opts), w5(client(), name, opts);
  ASSERT_OK(w0.write_lock().acquire().wait());
  auto f1 = r1.read_lock().acquire().timeout(30s).future();
  queued(name, 2);
  auto f2 = r2.read_lock().acquire().timeout(30s).future();
  queued(name, 3);
  auto f3 = w3.write_lock().acquire().timeout(30s).future();
  queued(name, 4);
  auto f4 = r4.read_lock().acquire().timeout(30s).future();
  queued(name, 5);
  auto f5 = w5.write_lock().acquire().timeout(30s).future();
  queued(name, 6);

  EXPECT_TRUE(w0.write_lock().unlock());
  // r1 and r2 share; w3, r4, w5 wait in order.
  ASSERT_TRUE(ready(f1));
  ASSERT_TRUE(ready(f2));
  EXPECT_TRUE(f1.get().ok());
  EXPECT_TRUE(f2.get().ok());
  EXPECT_TRUE(still_waiting(f3));
  EXPECT_TRUE(still_waiting(f4, 10ms));
  EXPECT_TRUE(r2.read_lock().unlock());  // out of order: r2 first
  EXPECT_TRUE(still_waiting(f3));
  EXPECT_TRUE(r1.read_lock().unlock());
  ASSERT_TRUE(ready(f3));
  EXPECT_TRUE(f3.get().ok());
  EXPECT_TRUE(still_waiting(f4));
  EXPECT_TRUE(w3.write_lock().unlock());
  ASSERT_TRUE(ready(f4));
  EXPECT_TRUE(f4.get().ok());
  EXPECT_TRUE(still_waiting(f5));
  EXPECT_TRUE(r4.read_lock().unlock());
  ASSERT_TRUE(ready(f5));
  EXPECT_TRUE(f5.get().ok());
  EXPECT_TRUE(w5.write_lock().unlock());

  const double wakeups = metrics->value("etcd_recipes_rwlock_wakeups_total", {{"lock", name}, {"mode", "read"}}) +
                         metrics->value("etcd_recipes_rwlock_wakeups_total", {{"lock", name}, {"mode", "write"}});
  // Five releases with waiters; w3 waits on r2 then on r1 (one extra).
  EXPECT_LE(wakeups, 5 * 1.5) << "wake-ups for 5 releases";
  EXPECT_EQ(metrics->value("etcd_recipes_rwlock_acquired_total", {{"lock", name}, {"mode", "read"}}), 3);
  EXPECT_EQ(metrics->value("etcd_recipes_rwlock_acquired_total", {{"lock", name}, {"mode", "write"}}), 3);
}

TEST_P(RwLockTest, DowngradeKeepsItsPlaceAheadOfLaterWriters) {
  const std::string name = key("down");
  DistributedReadWriteLock holder(client(), name, layout()), early_reader(client(), name, layout()),
      writer(client(), name, layout()), late_reader(client(), name, layout());
  ASSERT_OK(holder.write_lock().acquire().wait());
  const std::string write_key = holder.write_lock().hold().key();
  const int64_t token = holder.write_lock().hold().token();
  auto write_stopped = holder.write_lock().hold().stop_token();

  auto early = early_reader.read_lock().acquire().timeout(20s).future();
  queued(name, 2);
  auto w = writer.write_lock().acquire().timeout(20s).future();
  queued(name, 3);
  auto late = late_reader.read_lock().acquire().timeout(20s).future();
  queued(name, 4);
  EXPECT_TRUE(still_waiting(early));

  const int64_t before = client().get(key("probe")).wait()->header.revision;
  auto d = holder.downgrade().timeout(5s).wait();
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_FALSE(holder.write_lock().is_held());
  EXPECT_TRUE(holder.read_lock().is_held());
  EXPECT_EQ(holder.read_lock().hold().token(), token) << "a downgraded hold keeps its token";
  EXPECT_EQ(holder.read_lock().hold().key(), write_key);
  EXPECT_TRUE(write_stopped.stop_requested()) << "the write hold ended";
  EXPECT_FALSE(holder.read_lock().hold().stop_token().stop_requested());
  const int64_t after = client().get(key("probe")).wait()->header.revision;
  EXPECT_EQ(after - before, 1) << "one write";

  // The reader that queued before the writer shares with us now...
  ASSERT_TRUE(ready(early));
  EXPECT_TRUE(early.get().ok());
  // ...the writer that queued meanwhile still waits, and so does the reader
  // behind it.
  EXPECT_TRUE(still_waiting(w, 500ms));
  EXPECT_TRUE(still_waiting(late, 10ms));

  // The write side's guard fails; the read side's works.
  auto refused = holder.write_lock().hold().guarded(Txn().then(Op::put(key("fenced"), "w"))).wait();
  EXPECT_TRUE(refused.status().is(Errc::kHoldLost)) << refused.status().to_string();
  auto ok = holder.read_lock().hold().guarded(Txn().then(Op::put(key("fenced"), "r"))).wait();
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_FALSE(holder.write_lock().unlock()) << "the write side is no longer held";

  EXPECT_TRUE(holder.read_lock().unlock());
  EXPECT_TRUE(still_waiting(w));  // early_reader still reads
  EXPECT_TRUE(early_reader.read_lock().unlock());
  ASSERT_TRUE(ready(w));
  EXPECT_TRUE(w.get().ok());
  EXPECT_GT(writer.write_lock().hold().token(), token);
  EXPECT_TRUE(still_waiting(late));
  EXPECT_TRUE(writer.write_lock().unlock());
  ASSERT_TRUE(ready(late));
  EXPECT_TRUE(late.get().ok());
  EXPECT_TRUE(late_reader.read_lock().unlock());
}

TEST_P(RwLockTest, DowngradeWithoutWriteHoldFails) {
  DistributedReadWriteLock rw(client(), key("nodown"), layout());
  auto r = rw.downgrade().wait();
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().to_string();
  ASSERT_OK(rw.read_lock().acquire().wait());
  r = rw.downgrade().wait();
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().to_string();
  EXPECT_TRUE(rw.read_lock().unlock());
}

TEST_P(RwLockTest, UpgradeIsRefusedAtOnce) {
  const std::string name = key("up");
  DistributedReadWriteLock rw(client(), name, layout());
  ASSERT_OK(rw.read_lock().acquire().wait());
  const auto before = client().stats().rpcs_started;
  auto up = rw.write_lock().acquire().timeout(5s).wait();
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.status().code(), StatusCode::kFailedPrecondition) << up.status().to_string();
  EXPECT_NE(up.status().message().find("upgrade"), std::string::npos) << up.status().message();
  EXPECT_NE(up.status().message().find("write lock"), std::string::npos) << up.status().message();
  // The blocking rule: anything but running out of time throws.
  EXPECT_THROW((void)rw.write_lock().try_lock(), etcd::Error);
  EXPECT_EQ(client().stats().rpcs_started, before) << "refused without any request";
  EXPECT_TRUE(rw.read_lock().is_held());
  EXPECT_EQ(count(name + "/write/"), 0);
  EXPECT_TRUE(rw.read_lock().unlock());

  // Read while holding write is refused too (downgrade() is the way).
  ASSERT_OK(rw.write_lock().acquire().wait());
  auto rd = rw.read_lock().acquire().wait();
  EXPECT_EQ(rd.status().code(), StatusCode::kFailedPrecondition) << rd.status().to_string();
  EXPECT_NE(rd.status().message().find("downgrade"), std::string::npos) << rd.status().message();
  // And a side is not recursive.
  auto again = rw.write_lock().acquire().wait();
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status().to_string();
  EXPECT_TRUE(rw.write_lock().unlock());
}

TEST_P(RwLockTest, LossIsReportedToTheHoldingSide) {
  const std::string name = key("loss");
  DistributedReadWriteLock rw(client(), name, layout());
  ASSERT_OK(rw.read_lock().acquire().wait());
  Mailbox<Status> lost_read, lost_write;
  auto s1 = rw.read_lock().on_lost([&](const Status& why) { lost_read.put(why); });
  auto s2 = rw.write_lock().on_lost([&](const Status& why) { lost_write.put(why); });
  auto token = rw.read_lock().hold().stop_token();
  ASSERT_TRUE(rw.read_lock().hold().guarded(Txn().then(Op::put(key("fenced"), "1"))).wait().ok());

  auto lease = client().get(rw.read_lock().hold().key()).wait()->kvs.at(0).lease;
  Client other(options());
  ASSERT_TRUE(other.lease_revoke(lease).wait().ok());
  auto why = lost_read.take(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->is(Errc::kHoldLost)) << why->to_string();
  EXPECT_NE(why->message().find("read lock lost"), std::string::npos) << why->message();
  EXPECT_FALSE(lost_write.take(100ms).has_value());
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(rw.read_lock().is_held());
  auto refused = rw.read_lock().hold().guarded(Txn().then(Op::put(key("fenced"), "2"))).wait();
  EXPECT_TRUE(refused.status().is(Errc::kHoldLost)) << refused.status().to_string();
  EXPECT_EQ(client().get(key("fenced")).wait()->kvs.at(0).value, "1");
  EXPECT_FALSE(rw.read_lock().unlock());

  // The object contends again, on a new session.
  ASSERT_OK(rw.write_lock().acquire().timeout(5s).wait());
  EXPECT_NE(client().get(rw.write_lock().hold().key()).wait()->kvs.at(0).lease, lease);
  EXPECT_TRUE(rw.write_lock().unlock());
}

TEST_P(RwLockTest, AWaiterWhoseSessionDiedNeverReportsSuccess) {
  const std::string name = key("dead");
  DistributedReadWriteLock holder(client(), name, layout()), waiter(client(), name, layout());
  ASSERT_OK(holder.read_lock().acquire().wait());
  auto pending = waiter.write_lock().acquire().timeout(20s).future();
  queued(name, 2);
  auto kvs = client().get(name + "/write/", {.prefix = true}).wait()->kvs;
  ASSERT_EQ(kvs.size(), 1u);
  ASSERT_TRUE(client().lease_revoke(kvs[0].lease).wait().ok());
  ASSERT_TRUE(ready(pending));
  auto r = pending.get();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kHoldLost)) << r.status().to_string();
  EXPECT_TRUE(holder.read_lock().is_held());
  EXPECT_TRUE(holder.read_lock().unlock());
}

TEST_P(RwLockTest, CloseWakesParkedWaitersWithClosed) {
  const std::string name = key("close");
  DistributedReadWriteLock holder(client(), name, layout()), waiter(client(), name, layout());
  ASSERT_OK(holder.write_lock().acquire().wait());
  auto pending = waiter.read_lock().acquire().future();
  queued(name, 2);
  waiter.close();
  ASSERT_TRUE(ready(pending, 5s));
  EXPECT_TRUE(pending.get().status().is(Errc::kClosed));
  EXPECT_TRUE(eventually([&] { return count(name + "/") == 1; })) << "its key is gone";
  EXPECT_TRUE(waiter.write_lock().acquire().wait().status().is(Errc::kClosed));
  // Closing the holder releases its hold.
  holder.close();
  EXPECT_TRUE(eventually([&] { return count(name + "/") == 0; }));
}

TEST_P(RwLockTest, StopTokenAndDeadlineEndAWaitAndLeaveNoKey) {
  const std::string name = key("stop");
  DistributedReadWriteLock holder(client(), name, layout()), waiter(client(), name, layout());
  ASSERT_OK(holder.write_lock().acquire().wait());
  std::stop_source stop;
  auto pending = waiter.write_lock().acquire().stop_token(stop.get_token()).future();
  queued(name, 2);
  stop.request_stop();
  ASSERT_TRUE(ready(pending, 5s));
  EXPECT_EQ(pending.get().status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(eventually([&] { return count(name + "/") == 1; }));

  auto timed = waiter.read_lock().acquire().timeout(200ms).wait();
  EXPECT_EQ(timed.status().code(), StatusCode::kDeadlineExceeded) << timed.status().to_string();
  EXPECT_TRUE(eventually([&] { return count(name + "/") == 1; }));
  EXPECT_TRUE(holder.write_lock().unlock());
  EXPECT_TRUE(waiter.read_lock().try_lock());
  EXPECT_TRUE(waiter.read_lock().unlock());
}

TEST_P(RwLockTest, BadNameIsRejectedBeforeAnyWrite) {
  const auto before = client().stats().rpcs_started;
  for (std::string bad : {std::string(), key("trailing/"), std::string("nul\0byte", 8)}) {
    DistributedReadWriteLock rw(client(), bad);
    auto r = rw.read_lock().acquire().wait();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    auto w = rw.write_lock().try_acquire().wait();
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << w.status().to_string();
  }
  EXPECT_EQ(client().stats().rpcs_started, before);
}

TEST_P(RwLockTest, ManyReadersAndWritersNeverOverlap) {
  const std::string name = key("stress");
  constexpr int kThreads = 8;
  constexpr int kRounds = 5;
  std::atomic<int> readers{0}, writers{0};
  std::atomic<bool> violation{false};
  std::atomic<int> max_readers{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      DistributedReadWriteLock rw(client(), name, layout());
      for (int i = 0; i < kRounds; ++i) {
        if ((t + i) % 3 == 0) {
          rw.write_lock().lock();
          if (writers.fetch_add(1) != 0 || readers.load() != 0) violation = true;
          std::this_thread::sleep_for(5ms);
          writers.fetch_sub(1);
          EXPECT_TRUE(rw.write_lock().unlock());
        } else {
          rw.read_lock().lock();
          const int now = readers.fetch_add(1) + 1;
          if (writers.load() != 0) violation = true;
          int seen = max_readers.load();
          while (now > seen && !max_readers.compare_exchange_weak(seen, now)) {
          }
          std::this_thread::sleep_for(10ms);
          readers.fetch_sub(1);
          EXPECT_TRUE(rw.read_lock().unlock());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(violation.load());
  EXPECT_GE(max_readers.load(), 1);
  EXPECT_EQ(count(name + "/"), 0);
}

TEST_P(RwLockTest, ATimedOutAcquireNeverLeavesItsKeyBehind) {
  // Deadlines so short that they often fire while the create Txn is in
  // flight: the key it creates must still be removed.
  const std::string name = key("orphan");
  DistributedReadWriteLock rw(client(), name, layout()), other(client(), name, layout());
  ASSERT_OK(rw.write_lock().acquire().wait());  // warm: session granted
  ASSERT_TRUE(rw.write_lock().unlock());
  for (int i = 0; i < 20; ++i) {
    auto side = i % 2 ? &rw.read_lock() : &rw.write_lock();
    auto r = side->acquire().timeout(std::chrono::microseconds(200 + 100 * i)).wait();
    if (r.ok()) {
      ASSERT_TRUE(side->unlock());
    }
    ASSERT_TRUE(eventually([&] { return count(name + "/") == 0; }, 3s)) << "attempt " << i << " left a key";
  }
  EXPECT_TRUE(other.write_lock().try_lock());
  EXPECT_TRUE(other.write_lock().unlock());
}

std::shared_ptr<Session> started_session(Client& client) {
  auto session = Session::create(client);
  EXPECT_TRUE(session->start().wait().ok());
  return session;
}

// Key creation of many read-write locks of one client is group-committed
// (src/recipes/txn_batcher.h), as for the mutex.
TEST_P(RwLockTest, ManyLockNamesOfOneClientShareTransactionsAndEachHoldsItsOwnKey) {
  constexpr int kLocks = 64;
  RecipeOptions options = layout();
  options.session = started_session(client());
  std::vector<std::unique_ptr<DistributedReadWriteLock>> locks;
  std::vector<Pending> pending;
  for (int i = 0; i < kLocks; ++i) {
    locks.push_back(std::make_unique<DistributedReadWriteLock>(client(), key("many/" + std::to_string(i)), options));
    auto& side = i % 2 ? locks.back()->write_lock() : locks.back()->read_lock();
    pending.push_back(side.acquire().timeout(20s).future());
  }
  std::set<int64_t> revisions;
  for (int i = 0; i < kLocks; ++i) {
    auto r = pending[i].get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
    auto& side = i % 2 ? locks[i]->write_lock() : locks[i]->read_lock();
    ASSERT_TRUE(side.is_held());
    auto got = client().get(side.hold().key()).wait();
    ASSERT_EQ(got->kvs.size(), 1u) << side.hold().key();
    EXPECT_EQ(got->kvs[0].lease, options.session->lease_id());
    EXPECT_EQ(side.hold().token(), got->kvs[0].create_revision);
    revisions.insert(got->kvs[0].create_revision);
  }
  // Issued together, the acquisitions were committed in a few Txns.
  // Without batching every key would have its own revision. How many
  // share one depends on how fast this loop issues them against the first
  // completions (a sanitizer build issues slowly): typically a dozen
  // revisions, a little over half the count under ASan.
  EXPECT_LT(revisions.size(), static_cast<std::size_t>(kLocks * 3 / 4)) << "distinct create revisions";
  for (int i = 0; i < kLocks; ++i) EXPECT_TRUE((i % 2 ? locks[i]->write_lock() : locks[i]->read_lock()).unlock());
  // No contender key is left; in the ordered layout each lock whose writer
  // released keeps its hand-off record (the key NAME~handoff), and each
  // lock that had a reader its readers' tail record (NAME~read-tail).
  EXPECT_EQ(count(key("many/")), ordered() ? kLocks : 0);
}

TEST_P(RwLockTest, ContendersOfOneLockNeverShareARevisionWhenOthersAreBatched) {
  constexpr int kContenders = 6;  // writers and readers, alternating
  constexpr int kOthers = 24;
  RecipeOptions shared = layout();
  shared.session = started_session(client());
  const std::string name = key("same");
  std::vector<std::unique_ptr<DistributedReadWriteLock>> contenders, others;
  for (int i = 0; i < kContenders; ++i) {
    RecipeOptions own = layout();
    own.session = started_session(client());  // one key per contender
    contenders.push_back(std::make_unique<DistributedReadWriteLock>(client(), name, own));
  }
  for (int i = 0; i < kOthers; ++i) {
    others.push_back(std::make_unique<DistributedReadWriteLock>(client(), key("other/" + std::to_string(i)), shared));
  }
  auto side = [&](int i) -> DistributedReadWriteLock::LockView& {
    return i % 2 ? contenders[i]->read_lock() : contenders[i]->write_lock();
  };
  // Interleaved, so that both kinds queue together.
  std::vector<Pending> contending, rest;
  for (int i = 0; i < kOthers; ++i) {
    rest.push_back(others[i]->write_lock().acquire().timeout(20s).future());
    if (i < kContenders) contending.push_back(side(i).acquire().timeout(30s).future());
  }
  for (auto& f : rest) ASSERT_TRUE(f.get().ok());
  queued(name, kContenders);
  std::set<int64_t> revisions;
  auto keys = client().get(name + "/", {.prefix = true}).wait();
  ASSERT_TRUE(keys.ok());
  for (const auto& kv : keys->kvs) revisions.insert(kv.create_revision);
  EXPECT_EQ(revisions.size(), static_cast<std::size_t>(kContenders));
  // Every contender is served, and a writer never holds beside anyone.
  std::vector<bool> served(kContenders, false);
  for (int done = 0; done < kContenders;) {
    std::vector<int> holding;
    ASSERT_TRUE(eventually([&] {
      holding.clear();
      for (int i = 0; i < kContenders; ++i) {
        if (!served[i] && contending[i].wait_for(0s) == std::future_status::ready) holding.push_back(i);
      }
      return !holding.empty();
    })) << done
        << " served";
    for (int i : holding) {
      ASSERT_TRUE(contending[i].get().ok());
      if (i % 2 == 0) {
        EXPECT_EQ(holding.size(), 1u) << "writer " << i << " holds beside others";
      }
    }
    for (int i : holding) {
      EXPECT_TRUE(side(i).unlock());
      served[i] = true;
      ++done;
    }
  }
  for (auto& o : others) EXPECT_TRUE(o->write_lock().unlock());
}

TEST_P(RwLockTest, WaitingDoesNotKeepTheClientAlive) {
  std::weak_ptr<detail::ClientCore> core;
  {
    Client c(options());
    core = etcd::detail::ClientAccess::core(c);
    DistributedReadWriteLock holder(c, key("alive"), layout()), waiter(c, key("alive"), layout());
    ASSERT_OK(holder.write_lock().acquire().wait());
    auto f = waiter.read_lock().acquire().timeout(10s).future();
    queued(key("alive"), 2);
    EXPECT_TRUE(holder.write_lock().unlock());
    ASSERT_TRUE(ready(f));
    EXPECT_TRUE(f.get().ok());
    EXPECT_TRUE(waiter.read_lock().unlock());
  }
  EXPECT_TRUE(eventually([&] { return core.expired(); }, 5s)) << "the client outlived every handle";
}

// The two layouts share one lock: a contender of either waits for the
// conflicting keys of both (the lowest create revision goes first).
using RwLockMixedLayoutsTest = SingleMemberTest;

TEST_F(RwLockMixedLayoutsTest, ReadersAndWritersOfBothLayoutsExcludeEachOther) {
  const std::string name = key("mixed");
  RecipeOptions ordered;
  ordered.contender_layout = recipes::ContenderLayout::kOrdered;
  DistributedReadWriteLock go_w(client(), name), ord_r(client(), name, ordered), go_r(client(), name),
      ord_w(client(), name, ordered);
  // Each contender's key is in etcd before the next one starts: the queue
  // order is the order of their create revisions.
  const auto queued = [&](int64_t n) {
    ASSERT_TRUE(eventually([&] {
      return client().get(name + "/", {.prefix = true, .count_only = true}).wait()->count == n;
    })) << "expected " << n << " contenders";
  };
  ASSERT_OK(go_w.write_lock().acquire().timeout(10s).wait());
  auto r = ord_r.read_lock().acquire().timeout(20s).future();
  queued(2);
  EXPECT_TRUE(still_waiting(r)) << "an ordered reader waits for a Go-layout writer";
  auto w = ord_w.write_lock().acquire().timeout(20s).future();
  queued(3);
  EXPECT_TRUE(still_waiting(w, 10ms));
  auto gr = go_r.read_lock().acquire().timeout(20s).future();
  queued(4);
  EXPECT_TRUE(still_waiting(gr)) << "a Go-layout reader behind an ordered writer";
  EXPECT_TRUE(go_w.write_lock().unlock());
  ASSERT_TRUE(ready(r));
  ASSERT_TRUE(r.get().ok());
  EXPECT_TRUE(still_waiting(w)) << "the ordered writer waits for the ordered reader";
  EXPECT_TRUE(still_waiting(gr, 10ms));
  EXPECT_TRUE(ord_r.read_lock().unlock());
  ASSERT_TRUE(ready(w));
  ASSERT_TRUE(w.get().ok());
  EXPECT_TRUE(still_waiting(gr)) << "the Go-layout reader waits for the ordered writer";
  EXPECT_TRUE(ord_w.write_lock().unlock());
  ASSERT_TRUE(ready(gr));
  ASSERT_TRUE(gr.get().ok());
  EXPECT_TRUE(go_r.read_lock().unlock());
  EXPECT_EQ(client().get(name + "/", {.prefix = true, .count_only = true}).wait()->count, 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, RwLockTest,
                         ::testing::Values(recipes::ContenderLayout::kGoConcurrency,
                                           recipes::ContenderLayout::kOrdered),
                         [](const ::testing::TestParamInfo<recipes::ContenderLayout>& layout_info) {
                           return layout_info.param == recipes::ContenderLayout::kOrdered ? std::string("Ordered")
                                                                                          : std::string("Go");
                         });

}  // namespace
}  // namespace etcd::test
