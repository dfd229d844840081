// DistributedMutex against a real etcd member.
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "client/client_access.h"
#include "etcd/recipes/mutex.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedMutex;
using recipes::Hold;
using recipes::RecipeOptions;
using MutexTest = SingleMemberTest;

TEST_F(MutexTest, UncontendedCycleUsesGoKeyLayoutAndFencingToken) {
  DistributedMutex m(client(), key("lock"));
  ASSERT_TRUE(m.acquire().wait().ok());
  EXPECT_TRUE(m.is_held());
  const std::string k = m.hold().key();
  ASSERT_EQ(k.rfind(key("lock") + "/", 0), 0u) << k;
  auto got = client().get(k).wait();
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(k, key("lock") + "/" + hex(got->kvs[0].lease));
  EXPECT_EQ(m.hold().token(), got->kvs[0].create_revision);
  EXPECT_TRUE(m.unlock());
  EXPECT_FALSE(m.is_held());
  EXPECT_EQ(m.hold().token(), 0);
  EXPECT_TRUE(client().get(k).wait()->kvs.empty());
}

TEST_F(MutexTest, UncontendedCycleCostsTwoWrites) {
  DistributedMutex m(client(), key("cost"));
  ASSERT_TRUE(m.acquire().wait().ok());  // warm: session granted
  ASSERT_TRUE(m.unlock());
  const int64_t before = client().put(key("probe"), "x").wait()->header.revision;
  ASSERT_TRUE(m.acquire().wait().ok());
  ASSERT_TRUE(m.unlock());
  const int64_t after = client().put(key("probe"), "y").wait()->header.revision;
  EXPECT_EQ(after - before - 1, 2) << "revisions consumed by one lock+unlock";
}

TEST_F(MutexTest, StandardLockAdaptersWork) {
  DistributedMutex m(client(), key("std"));
  {
    std::unique_lock lock(m);
    EXPECT_TRUE(m.is_held());
  }
  EXPECT_FALSE(m.is_held());
  {
    std::scoped_lock lock(m);
    EXPECT_TRUE(m.is_held());
  }
  std::unique_lock lock(m, std::defer_lock);
  EXPECT_TRUE(lock.try_lock_for(2s));
  lock.unlock();
  EXPECT_EQ(m.with_lock([&] { return m.hold().token() > 0; }), true);
  EXPECT_FALSE(m.is_held());
}

TEST_F(MutexTest, TryLockFailsWhileHeldAndLeavesNoKeyBehind) {
  DistributedMutex a(client(), key("try")), b(client(), key("try"));
  ASSERT_TRUE(a.try_lock());
  EXPECT_FALSE(b.try_lock());
  EXPECT_EQ(client().get(key("try/"), {.prefix = true, .count_only = true}).wait()->count, 1);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(b.try_lock_for(300ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 290ms);
  EXPECT_TRUE(
      eventually([&] { return client().get(key("try/"), {.prefix = true, .count_only = true}).wait()->count == 1; }));
  EXPECT_TRUE(a.unlock());
  EXPECT_TRUE(b.try_lock());
  EXPECT_TRUE(b.unlock());
}

TEST_F(MutexTest, SecondLockOnTheSameObjectFailsInsteadOfDeadlocking) {
  DistributedMutex m(client(), key("reent"));
  ASSERT_TRUE(m.acquire().wait().ok());
  auto again = m.acquire().timeout(5s).wait();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status().to_string();
  EXPECT_TRUE(m.unlock());
}

// Two objects on one name and one session would share one key (it is
// named by the lease) and both believe they hold it; the second is refused,
// also when it uses another client than the session's: a key is claimed on
// its session's client.
TEST_F(MutexTest, TwoObjectsOnOneSessionNeverShareAKeyEvenThroughTwoClients) {
  auto session = Session::create(client());
  RecipeOptions shared;
  shared.session = session;
  Client other(options());
  DistributedMutex a(client(), key("shared"), shared);
  DistributedMutex same_client(client(), key("shared"), shared);
  DistributedMutex other_client(other, key("shared"), shared);
  ASSERT_TRUE(a.acquire().wait().ok());
  for (auto* m : {&same_client, &other_client}) {
    auto refused = m->acquire().timeout(5s).wait();
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().to_string();
    EXPECT_NE(refused.status().message().find("give it its own session"), std::string::npos)
        << refused.status().to_string();
  }
  EXPECT_TRUE(a.unlock());
  // The claim ends with the hold: the key is free for the others now.
  ASSERT_TRUE(other_client.acquire().timeout(5s).wait().ok());
  EXPECT_TRUE(other_client.unlock());
}

// An acquisition started while the previous hold's delete is in flight
// must not adopt the key that delete is about to remove.
TEST_F(MutexTest, AcquiringWhileAReleaseIsInFlightNeverYieldsABrokenHold) {
  DistributedMutex m(client(), key("overlap"));
  int refused = 0;
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(m.acquire().wait().ok());
    auto released = m.release().future();  // in flight
    auto again = m.acquire().timeout(5s).wait();
    ASSERT_EQ(released.wait_for(5s), std::future_status::ready);
    EXPECT_TRUE(released.get().value());
    if (!again.ok()) {
      EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status().to_string();
      ++refused;
      continue;
    }
    // Held: its key exists and is the one its fencing token names.
    auto got = client().get(m.hold().key()).wait();
    ASSERT_EQ(got->kvs.size(), 1u) << "round " << i << ": held, but the key is gone";
    EXPECT_EQ(got->kvs[0].create_revision, m.hold().token());
    EXPECT_TRUE(m.unlock());
  }
  RecordProperty("refused_while_releasing", refused);
}

TEST_F(MutexTest, WaitersAreServedFifoAndEachWakesOnce) {
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions opts;
  opts.metrics = metrics;
  DistributedMutex holder(client(), key("fifo"), opts);
  ASSERT_TRUE(holder.acquire().wait().ok());

  constexpr int kWaiters = 8;
  std::vector<std::unique_ptr<DistributedMutex>> waiters;
  std::mutex order_mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<DistributedMutex>(client(), key("fifo"), opts));
    auto* w = waiters.back().get();
    threads.emplace_back([&, w, i] {
      w->lock();
      {
        std::lock_guard lock(order_mu);
        order.push_back(i);
      }
      EXPECT_TRUE(w->unlock());
    });
    // Queue them one by one, so arrival order is known.
    ASSERT_TRUE(eventually(
        [&] { return client().get(key("fifo/"), {.prefix = true, .count_only = true}).wait()->count == i + 2; }));
  }
  const double wakeups_before = metrics->value("etcd_recipes_lock_wakeups_total", {{"lock", key("fifo")}});
  EXPECT_TRUE(holder.unlock());
  for (auto& t : threads) t.join();
  std::vector<int> expected(kWaiters);
  for (int i = 0; i < kWaiters; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
  const double wakeups = metrics->value("etcd_recipes_lock_wakeups_total", {{"lock", key("fifo")}}) - wakeups_before;
  EXPECT_LE(wakeups, kWaiters * 1.5) << "wake-ups for " << kWaiters << " releases";
  EXPECT_EQ(metrics->value("etcd_recipes_lock_acquired_total", {{"lock", key("fifo")}}), kWaiters + 1);
}

TEST_F(MutexTest, HandoffIsPromptWhileOtherWritesLandBetweenAWaitersReadAndItsWatch) {
  // Other writers keep etcd's store moving, so a waiter's watch is created
  // after writes its anchored read did not see. etcd (3.4) serves a watch
  // whose start revision is already in the store from a loop that runs
  // every 100 ms; a handoff must not wait for that loop. (Watching from the
  // read's next revision, even with a re-check read when the watch is
  // created, put 18 to 28 of these 40 handoffs over 40 ms.)
  Client noisy(options());
  NoiseWriters writers(noisy, key("noise"));
  DistributedMutex holder(client(), key("prompt")), waiter(client(), key("prompt"));
  constexpr int kHandoffs = 40;
  std::vector<double> ms;
  for (int i = 0; i < kHandoffs; ++i) {
    ASSERT_TRUE(holder.acquire().wait().ok());
    auto pending = waiter.acquire().future();
    ASSERT_TRUE(eventually(
        [&] { return client().get(key("prompt/"), {.prefix = true, .count_only = true}).wait()->count == 2; }));
    std::this_thread::sleep_for(5ms);  // the waiter reads its predecessor and watches it
    const auto released = std::chrono::steady_clock::now();
    ASSERT_TRUE(holder.unlock());
    ASSERT_EQ(pending.wait_for(5s), std::future_status::ready);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - released).count());
    ASSERT_TRUE(pending.get().ok());
    ASSERT_TRUE(waiter.unlock());
  }
  std::sort(ms.begin(), ms.end());
  const auto slow = std::count_if(ms.begin(), ms.end(), [](double v) { return v > 40.0; });
  std::printf("handoff under writes: min %.1f median %.1f max %.1f ms, %d of %d over 40 ms\n", ms.front(),
              ms[ms.size() / 2], ms.back(), static_cast<int>(slow), kHandoffs);
  // A few may still meet etcd's loop: a write can land between the server
  // reading its revision for the watch and creating it (about 1 in 40 here).
  EXPECT_LE(slow, kHandoffs * 3 / 20);
}

TEST_F(MutexTest, LossIsReportedAndGuardedWritesFail) {
  DistributedMutex m(client(), key("loss"));
  ASSERT_TRUE(m.acquire().wait().ok());
  Mailbox<Status> lost;
  auto sub = m.on_lost([&](const Status& why) { lost.put(why); });
  auto token = m.hold().stop_token();

  auto ok = m.hold().guarded(Txn().then(Op::put(key("fenced"), "1"))).wait();
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();

  auto lease = client().get(m.hold().key()).wait()->kvs.at(0).lease;
  Client other(options());
  ASSERT_TRUE(other.lease_revoke(lease).wait().ok());  // the session dies under us
  auto why = lost.take(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->is(Errc::kHoldLost)) << why->to_string();
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(m.is_held());

  auto refused = m.hold().guarded(Txn().then(Op::put(key("fenced"), "2"))).wait();
  EXPECT_TRUE(refused.status().is(Errc::kHoldLost)) << refused.status().to_string();
  EXPECT_EQ(client().get(key("fenced")).wait()->kvs.at(0).value, "1");
  EXPECT_FALSE(m.unlock());
  // The loss was recorded with the recipe's identity, and can be cleared.
  auto errors = m.errors();
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors.back().message().find(m.identity()), std::string::npos) << errors.back().to_string();
  m.clear_errors();
  EXPECT_TRUE(m.errors().empty());

  // The object can contend again, on a new session.
  ASSERT_TRUE(m.acquire().timeout(5s).wait().ok());
  EXPECT_TRUE(m.unlock());
}

TEST_F(MutexTest, AWaiterWhoseSessionDiedNeverReportsSuccess) {
  DistributedMutex holder(client(), key("dead")), waiter(client(), key("dead"));
  ASSERT_TRUE(holder.acquire().wait().ok());
  auto pending = waiter.acquire().timeout(20s).future();
  ASSERT_TRUE(
      eventually([&] { return client().get(key("dead/"), {.prefix = true, .count_only = true}).wait()->count == 2; }));
  // Kill the waiter's session by revoking its lease.
  auto kvs =
      client()
          .get(key("dead/"), {.prefix = true, .sort_order = SortOrder::kAscend, .sort_target = SortTarget::kCreate})
          .wait()
          ->kvs;
  ASSERT_EQ(kvs.size(), 2u);
  ASSERT_TRUE(client().lease_revoke(kvs[1].lease).wait().ok());
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready);
  auto r = pending.get();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kHoldLost)) << r.status().to_string();
  EXPECT_TRUE(holder.is_held());
  EXPECT_TRUE(holder.unlock());
}

TEST_F(MutexTest, CloseWakesParkedWaitersWithClosed) {
  DistributedMutex holder(client(), key("close")), waiter(client(), key("close"));
  ASSERT_TRUE(holder.acquire().wait().ok());
  auto pending = waiter.acquire().future();
  ASSERT_TRUE(
      eventually([&] { return client().get(key("close/"), {.prefix = true, .count_only = true}).wait()->count == 2; }));
  waiter.close();
  ASSERT_EQ(pending.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(pending.get().status().is(Errc::kClosed));
  // Its key is gone, so it does not block the queue.
  EXPECT_TRUE(
      eventually([&] { return client().get(key("close/"), {.prefix = true, .count_only = true}).wait()->count == 1; }));
  EXPECT_TRUE(waiter.acquire().wait().status().is(Errc::kClosed));
  EXPECT_TRUE(holder.unlock());
}

// An operator's `etcdctl del` of the holder's key ends the
// hold (and says so), instead of letting a second holder in unnoticed.
TEST_F(MutexTest, DeletingTheHoldersKeyIsALossThatNamesItsCause) {
  DistributedMutex holder(client(), key("deleted")), waiter(client(), key("deleted"));
  Hold h = holder.acquire().wait().value();
  std::promise<Status> lost;
  auto sub = holder.on_lost([&](const Status& why) { lost.set_value(why); });
  auto stop = h.stop_token();
  auto next = waiter.acquire().future();
  ASSERT_TRUE(client().del(h.key()).wait().ok());
  auto why = lost.get_future();
  ASSERT_EQ(why.wait_for(3s), std::future_status::ready) << "the deletion was not noticed";
  const Status st = why.get();
  EXPECT_TRUE(st.is(Errc::kHoldLost)) << st.to_string();
  EXPECT_NE(st.message().find("key was deleted"), std::string::npos) << st.message();
  EXPECT_TRUE(stop.stop_requested());
  EXPECT_FALSE(holder.is_held());
  EXPECT_TRUE(h.guarded(Txn().then(Op::put(key("deleted-w"), "late"))).wait().status().is(Errc::kHoldLost));
  ASSERT_EQ(next.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(next.get().ok()) << "the waiter took over";
  EXPECT_FALSE(holder.unlock()) << "releasing a lost hold reports the loss";
  EXPECT_TRUE(waiter.unlock());
}

// close() releases the mutex's hold; a copy the caller kept answers after
// that without the client, which is gone once the caller's handle is.
TEST_F(MutexTest, AHoldCopyOutlivesItsClosedMutexAndItsClient) {
  std::weak_ptr<detail::ClientCore> core;
  std::optional<DistributedMutex> m;
  Hold copy;
  {
    Client c(options());
    core = etcd::detail::ClientAccess::core(c);
    m.emplace(c, key("outlives"));
    copy = m->acquire().wait().value();
    auto stop = copy.stop_token();
    m->close();
    EXPECT_TRUE(stop.stop_requested()) << "close() released the hold";
  }
  EXPECT_TRUE(eventually([&] { return core.expired(); }, 15s)) << "the closed mutex or its hold still holds the client";
  EXPECT_FALSE(copy.is_held());
  EXPECT_FALSE(copy.release().wait().value());
  EXPECT_TRUE(copy.guarded(Txn().then(Op::put(key("fenced"), "x"))).wait().status().is(Errc::kHoldLost));
  auto sub = copy.on_lost([](const Status&) {});
  EXPECT_TRUE(client().get(key("outlives/"), {.prefix = true, .count_only = true}).wait()->count == 0)
      << "the released key is gone";
  EXPECT_TRUE(m->acquire().wait().status().is(Errc::kClosed));
  EXPECT_TRUE(m->release().wait().ok());
  copy = Hold();
  m.reset();
}

TEST_F(MutexTest, StopTokenCancelsAWait) {
  DistributedMutex holder(client(), key("stop")), waiter(client(), key("stop"));
  ASSERT_TRUE(holder.acquire().wait().ok());
  std::stop_source stop;
  auto pending = waiter.acquire().stop_token(stop.get_token()).future();
  EXPECT_EQ(pending.wait_for(200ms), std::future_status::timeout);
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(pending.get().status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(holder.unlock());
}

TEST_F(MutexTest, BadNameIsRejectedBeforeAnyWrite) {
  const auto before = client().stats().rpcs_started;
  for (std::string bad : {std::string(), key("trailing/"), std::string("nul\0byte", 8)}) {
    DistributedMutex m(client(), bad);
    auto r = m.acquire().wait();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  }
  EXPECT_EQ(client().stats().rpcs_started, before);
}

TEST_F(MutexTest, SharesOneLockWithEtcdctl) {
  const std::string name = key("interop");
  const std::string endpoints = cluster().endpoint(0);
  // etcdctl holds the lock for as long as its command runs.
  const std::string etcdctl = etcd::testing::etcdctl_binary();
  FILE* p = popen(("ETCDCTL_API=3 " + etcdctl + " --endpoints=" + endpoints + " lock " + name + " sleep 3 2>&1").c_str(),
                  "r");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(
      eventually([&] { return client().get(name + "/", {.prefix = true, .count_only = true}).wait()->count == 1; }));
  DistributedMutex m(client(), name);
  EXPECT_FALSE(m.try_lock());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(m.acquire().timeout(15s).wait().ok());  // granted when etcdctl releases
  EXPECT_GT(std::chrono::steady_clock::now() - start, 1s);
  pclose(p);
  // While we hold it, etcdctl waits.
  const int rc = std::system(
      ("timeout -k 1 2 env ETCDCTL_API=3 " + etcdctl + " --endpoints=" + endpoints + " lock " + name +
       " true >/dev/null 2>&1")
          .c_str());
  // 124: timed out waiting (137 if it also ignored the TERM and was killed).
  EXPECT_TRUE(WEXITSTATUS(rc) == 124 || WEXITSTATUS(rc) == 137) << "etcdctl got the lock while we held it";
  EXPECT_TRUE(m.unlock());
}

}  // namespace
}  // namespace etcd::test
