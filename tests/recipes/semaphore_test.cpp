// DistributedSemaphore against a real etcd member.
#include <atomic>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "client/client_access.h"
#include "etcd/recipes/semaphore.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedSemaphore;
using recipes::RecipeOptions;
using Permit = DistributedSemaphore::Permit;
using Pending = std::future<Result<Permit>>;

std::string hex(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool ready(Pending& f, std::chrono::milliseconds within = 10s) {
  return f.wait_for(within) == std::future_status::ready;
}
bool still_waiting(Pending& f, std::chrono::milliseconds for_ = 300ms) {
  return f.wait_for(for_) == std::future_status::timeout;
}

class SemaphoreTest : public SingleMemberTest {
 protected:
  int64_t holders(const std::string& name) {
    return client().get(name + "/holders/", {.prefix = true, .count_only = true}).wait()->count;
  }
  void queued(const std::string& name, int64_t n) {
    ASSERT_TRUE(eventually([&] { return holders(name) == n; })) << "expected " << n << " keys under " << name;
  }
  static std::shared_ptr<recipes::PrometheusMetrics> metrics_of(RecipeOptions& opts) {
    auto m = std::make_shared<recipes::PrometheusMetrics>();
    opts.metrics = m;
    return m;
  }
};

TEST_F(SemaphoreTest, UncontendedPermitUsesTheKeyLayoutAndCostsTwoWrites) {
  const std::string name = key("layout");
  DistributedSemaphore sem(client(), name, 3);
  EXPECT_EQ(sem.identity(), "DistributedSemaphore[" + name + "]");
  EXPECT_EQ(sem.permits(), 3);
  EXPECT_EQ(sem.available_permits().wait().value(), 3);
  Permit p = sem.acquire().wait().value();
  ASSERT_TRUE(p.valid());
  EXPECT_TRUE(p.is_held());
  EXPECT_EQ(client().get(name + "/permits").wait()->kvs.at(0).value, "3");
  auto got = client().get(p.key()).wait();
  ASSERT_EQ(got->kvs.size(), 1u) << p.key();
  const std::string prefix = name + "/holders/" + hex(got->kvs[0].lease) + "-";
  EXPECT_EQ(p.key().rfind(prefix, 0), 0u) << p.key();
  EXPECT_EQ(p.token(), got->kvs[0].create_revision);
  EXPECT_EQ(sem.available_permits().wait().value(), 2);
  auto token = p.stop_token();
  const std::string k = p.key();
  EXPECT_TRUE(p.release().wait().value());
  EXPECT_FALSE(p.is_held());
  EXPECT_TRUE(token.stop_requested());
  EXPECT_TRUE(client().get(k).wait()->kvs.empty());
  EXPECT_FALSE(p.release().wait().value()) << "a released permit has nothing to release";
  EXPECT_FALSE(Permit().release().wait().value()) << "an empty permit has nothing to release";

  const int64_t before = client().put(key("probe"), "x").wait()->header.revision;
  {
    Permit q = sem.acquire_blocking();
    EXPECT_TRUE(q.release().wait().value());
  }
  const int64_t after = client().put(key("probe"), "y").wait()->header.revision;
  EXPECT_EQ(after - before - 1, 2) << "revisions consumed by one acquire+release";
}

TEST_F(SemaphoreTest, PermitsReleaseOnDestructionAndMove) {
  const std::string name = key("raii");
  DistributedSemaphore sem(client(), name, 2);
  std::string k1;
  {
    Permit p = sem.acquire_blocking();
    k1 = p.key();
    Permit moved = std::move(p);
    EXPECT_FALSE(p.valid());  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(moved.valid());
    EXPECT_EQ(moved.key(), k1);
  }
  EXPECT_TRUE(eventually([&] { return holders(name) == 0; })) << "released by the destructor";
  Permit a = sem.acquire_blocking();
  const std::string ka = a.key();
  a = sem.acquire_blocking();  // the old permit is released by the assignment
  EXPECT_NE(a.key(), ka);
  EXPECT_TRUE(eventually([&] { return holders(name) == 1; }));
  // A release Call does nothing until consumed; the permit is released
  // when its last copy goes.
  Permit copy = a;
  { auto dropped = a.release(); }
  a = Permit();
  EXPECT_EQ(holders(name), 1) << "a copy still holds it";
  copy = Permit();
  EXPECT_TRUE(eventually([&] { return holders(name) == 0; }));
}

TEST_F(SemaphoreTest, SeveralPermitsFromOneObjectUseDistinctKeys) {
  const std::string name = key("multi");
  DistributedSemaphore sem(client(), name, 3);
  std::vector<Permit> permits;
  for (int i = 0; i < 3; ++i) {
    auto p = sem.try_acquire().wait();
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_TRUE(p->has_value());
    permits.push_back(std::move(**p));
  }
  EXPECT_NE(permits[0].key(), permits[1].key());
  EXPECT_NE(permits[1].key(), permits[2].key());
  EXPECT_LT(permits[0].token(), permits[1].token());
  EXPECT_LT(permits[1].token(), permits[2].token());
  auto none = sem.try_acquire().wait();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_TRUE(eventually([&] { return holders(name) == 3; })) << "a declined try leaves no key";
  EXPECT_EQ(sem.available_permits().wait().value(), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(sem.try_acquire_for(300ms).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 290ms);
  EXPECT_TRUE(eventually([&] { return holders(name) == 3; }));
  EXPECT_TRUE(permits[1].release().wait().value());
  EXPECT_EQ(sem.available_permits().wait().value(), 1);
  auto again = sem.try_acquire_for(5s);
  ASSERT_TRUE(again.has_value());
  EXPECT_GT(again->token(), permits[2].token());
}

// Permit keys are named by the session's lease and a number: objects that
// share one session — on its client or on another one — still get distinct
// keys, and so never believe they hold one permit together.
TEST_F(SemaphoreTest, ObjectsSharingOneSessionHoldDistinctPermitsEvenThroughTwoClients) {
  const std::string name = key("shared");
  auto session = Session::create(client());
  RecipeOptions shared;
  shared.session = session;
  Client other(options());
  DistributedSemaphore a(client(), name, 3, shared), b(client(), name, 3, shared), c(other, name, 3, shared);
  Permit pa = a.acquire_blocking(), pb = b.acquire_blocking(), pc = c.acquire_blocking();
  EXPECT_EQ(pa.lease(), pb.lease());
  EXPECT_EQ(pb.lease(), pc.lease());
  EXPECT_NE(pa.key(), pb.key());
  EXPECT_NE(pb.key(), pc.key());
  EXPECT_NE(pa.key(), pc.key());
  EXPECT_EQ(holders(name), 3);
  EXPECT_EQ(a.available_permits().wait().value(), 0);
  EXPECT_FALSE(c.try_acquire().wait().value().has_value()) << "all three permits are taken";
  EXPECT_TRUE(pb.release().wait().value());
  EXPECT_TRUE(pa.is_held());
  EXPECT_TRUE(pc.is_held());
  EXPECT_EQ(holders(name), 2) << "releasing one deleted only its own key";
  EXPECT_TRUE(pa.release().wait().value());
  EXPECT_TRUE(pc.release().wait().value());
}

TEST_F(SemaphoreTest, TwentyContendersNeverExceedThePermitCount) {
  const std::string name = key("twenty");
  RecipeOptions opts;
  auto metrics = metrics_of(opts);
  constexpr int kContenders = 20;
  constexpr int kPermits = 3;
  std::atomic<int> current{0}, max_seen{0}, served{0};
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<DistributedSemaphore>> sems;
  for (int i = 0; i < kContenders; ++i)
    sems.push_back(std::make_unique<DistributedSemaphore>(client(), name, kPermits, opts));
  for (int i = 0; i < kContenders; ++i) {
    threads.emplace_back([&, i] {
      auto permit = sems[i]->try_acquire_for(60s);
      ASSERT_TRUE(permit.has_value());
      const int now = current.fetch_add(1) + 1;
      int seen = max_seen.load();
      while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(30ms);
      current.fetch_sub(1);
      ++served;
      EXPECT_TRUE(permit->release().wait().value());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(served.load(), kContenders);
  EXPECT_LE(max_seen.load(), kPermits);
  EXPECT_GE(max_seen.load(), 2) << "permits were used concurrently";
  EXPECT_EQ(holders(name), 0);
  const recipes::Labels labels{{"semaphore", name}};
  const double releases = metrics->value("etcd_recipes_semaphore_released_total", labels);
  const double wakeups = metrics->value("etcd_recipes_semaphore_wakeups_total", labels);
  EXPECT_EQ(releases, kContenders);
  EXPECT_EQ(metrics->value("etcd_recipes_semaphore_acquired_total", labels), kContenders);
  // A contended hand-off wakes the first waiter (admitted) and, through its
  // nudge, the next one (now first): at most two per release.
  EXPECT_LE(wakeups, 2.0 * releases) << wakeups << " wake-ups for " << releases << " releases";
  std::printf("semaphore: %g wake-ups, %g nudges for %g releases\n", wakeups,
              metrics->value("etcd_recipes_semaphore_nudges_total", labels), releases);
}

TEST_F(SemaphoreTest, AsyncContendersOnOneObjectNeverExceedThePermitCount) {
  const std::string name = key("async");
  DistributedSemaphore sem(client(), name, 2);
  constexpr int kContenders = 10;
  std::atomic<int> current{0}, max_seen{0}, served{0};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Permit> held;
  for (int i = 0; i < kContenders; ++i) {
    sem.acquire().timeout(60s).then([&](Result<Permit> r) {
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      const int now = current.fetch_add(1) + 1;
      int seen = max_seen.load();
      while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
      }
      std::lock_guard lock(mu);
      held.push_back(std::move(*r));
      cv.notify_all();
    });
  }
  // Release the permits as they come, from this thread.
  int released = 0;
  while (released < kContenders) {
    Permit p;
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return !held.empty(); }));
      p = std::move(held.front());
      held.erase(held.begin());
    }
    std::this_thread::sleep_for(20ms);
    current.fetch_sub(1);
    EXPECT_TRUE(p.release().wait().value());
    ++released;
  }
  EXPECT_LE(max_seen.load(), 2);
  EXPECT_EQ(holders(name), 0);
}

TEST_F(SemaphoreTest, GrantsAreFifoEvenWhenHoldersReleaseOutOfOrder) {
  const std::string name = key("fifo");
  RecipeOptions opts;
  auto metrics = metrics_of(opts);
  DistributedSemaphore a(client(), name, 2, opts), b(client(), name, 2, opts);
  Permit pa = a.acquire_blocking();
  Permit pb = b.acquire_blocking();
  constexpr int kWaiters = 5;
  std::vector<std::unique_ptr<DistributedSemaphore>> sems;
  std::vector<Pending> pending;
  for (int i = 0; i < kWaiters; ++i) {
    sems.push_back(std::make_unique<DistributedSemaphore>(client(), name, 2, opts));
    pending.push_back(sems.back()->acquire().timeout(60s).future());
    queued(name, i + 3);
  }
  std::vector<Permit> granted(kWaiters);
  auto expect_only = [&](int i) {
    ASSERT_TRUE(ready(pending[i])) << "waiter " << i;
    auto r = pending[i].get();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    granted[i] = std::move(*r);
    for (int j = i + 1; j < kWaiters; ++j) EXPECT_TRUE(still_waiting(pending[j], j == i + 1 ? 300ms : 1ms)) << j;
  };
  // The newer holder releases first: the first waiter must still be admitted
  // (it does not wait for the oldest holder).
  EXPECT_TRUE(pb.release().wait().value());
  expect_only(0);
  EXPECT_TRUE(still_waiting(pending[1]));
  EXPECT_TRUE(pa.release().wait().value());
  expect_only(1);
  EXPECT_TRUE(granted[1].release().wait().value());  // the newer one again
  expect_only(2);
  EXPECT_TRUE(granted[0].release().wait().value());
  expect_only(3);
  EXPECT_TRUE(granted[3].release().wait().value());
  expect_only(4);
  for (auto& g : granted) (void)g.release().wait().value();
  const recipes::Labels labels{{"semaphore", name}};
  const double wakeups = metrics->value("etcd_recipes_semaphore_wakeups_total", labels);
  EXPECT_LE(wakeups, 2.0 * 5) << "wake-ups for 5 contended releases";
  std::printf("semaphore fifo: %g wake-ups, %g nudges for 5 contended releases\n", wakeups,
              metrics->value("etcd_recipes_semaphore_nudges_total", labels));
  EXPECT_EQ(holders(name), 0);
}

TEST_F(SemaphoreTest, PermitCountMismatchIsAClearErrorAndWritesNothing) {
  const std::string name = key("mismatch");
  DistributedSemaphore three(client(), name, 3), five(client(), name, 5);
  Permit p = three.acquire_blocking();
  const int64_t rev = client().get(key("probe")).wait()->header.revision;
  auto r = five.acquire().wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kMismatch)) << r.status().to_string();
  EXPECT_NE(r.status().message().find("stores 3"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("asks for 5"), std::string::npos) << r.status().message();
  EXPECT_EQ(client().get(key("probe")).wait()->header.revision, rev) << "nothing written";
  EXPECT_TRUE(five.available_permits().wait().status().is(Errc::kMismatch));
  EXPECT_THROW((void)five.try_acquire_for(1s), Error);
  EXPECT_EQ(three.available_permits().wait().value(), 2);
  EXPECT_TRUE(p.release().wait().value());
}

TEST_F(SemaphoreTest, BadArgumentsAreRejectedBeforeAnyRequest) {
  const auto before = client().stats().rpcs_started;
  for (int n : {0, -1}) {
    DistributedSemaphore sem(client(), key("bad"), n);
    auto r = sem.acquire().wait();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    EXPECT_NE(r.status().message().find("permits"), std::string::npos) << r.status().message();
    EXPECT_EQ(sem.try_acquire().wait().status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(sem.available_permits().wait().status().code(), StatusCode::kInvalidArgument);
    EXPECT_THROW((void)sem.acquire_blocking(), Error);
  }
  for (std::string bad : {std::string(), key("trailing/"), std::string("nul\0byte", 8)}) {
    DistributedSemaphore sem(client(), bad, 2);
    EXPECT_EQ(sem.acquire().wait().status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(client().stats().rpcs_started, before);
}

TEST_F(SemaphoreTest, CloseWakesParkedWaitersWithClosed) {
  const std::string name = key("close");
  DistributedSemaphore holder(client(), name, 1), waiter(client(), name, 1);
  Permit p = holder.acquire_blocking();
  auto w1 = waiter.acquire().future();
  auto w2 = waiter.acquire().future();
  queued(name, 3);
  waiter.close();
  ASSERT_TRUE(ready(w1, 5s));
  ASSERT_TRUE(ready(w2, 5s));
  EXPECT_TRUE(w1.get().status().is(Errc::kClosed));
  EXPECT_TRUE(w2.get().status().is(Errc::kClosed));
  EXPECT_TRUE(eventually([&] { return holders(name) == 1; })) << "their keys are gone";
  EXPECT_TRUE(waiter.acquire().wait().status().is(Errc::kClosed));
  // A granted permit outlives close() of its semaphore.
  holder.close();
  EXPECT_TRUE(p.is_held());
  EXPECT_TRUE(p.release().wait().value());
}

TEST_F(SemaphoreTest, StopTokenCancelsAWaitAndLeavesNoKey) {
  const std::string name = key("stop");
  DistributedSemaphore sem(client(), name, 1);
  Permit p = sem.acquire_blocking();
  std::stop_source stop;
  auto pending = sem.acquire().stop_token(stop.get_token()).future();
  queued(name, 2);
  EXPECT_TRUE(still_waiting(pending, 200ms));
  stop.request_stop();
  ASSERT_TRUE(ready(pending, 5s));
  EXPECT_EQ(pending.get().status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(eventually([&] { return holders(name) == 1; }));
  EXPECT_TRUE(p.release().wait().value());
}

TEST_F(SemaphoreTest, LossIsReportedAndReleaseReturnsFalse) {
  const std::string name = key("loss");
  DistributedSemaphore sem(client(), name, 2);
  Permit p = sem.acquire_blocking();
  Mailbox<Status> lost;
  auto sub = p.on_lost([&](const Status& why) { lost.put(why); });
  auto token = p.stop_token();
  ASSERT_TRUE(p.guarded(Txn().then(Op::put(key("fenced"), "1"))).wait().ok());

  const int64_t lease = client().get(p.key()).wait()->kvs.at(0).lease;
  Client other(options());
  ASSERT_TRUE(other.lease_revoke(lease).wait().ok());
  auto why = lost.take(5s);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->is(Errc::kHoldLost)) << why->to_string();
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(p.is_held());
  EXPECT_TRUE(p.valid());
  auto refused = p.guarded(Txn().then(Op::put(key("fenced"), "2"))).wait();
  EXPECT_TRUE(refused.status().is(Errc::kHoldLost)) << refused.status().to_string();
  EXPECT_EQ(client().get(key("fenced")).wait()->kvs.at(0).value, "1");
  // A listener registered after the loss hears of it too.
  Mailbox<Status> late;
  auto sub2 = p.on_lost([&](const Status& w) { late.put(w); });
  EXPECT_TRUE(late.take(5s).has_value());
  EXPECT_FALSE(p.release().wait().value());
  EXPECT_FALSE(sem.errors().empty());

  // The semaphore grants again, on a new session.
  Permit q = sem.acquire().timeout(5s).wait().value();
  EXPECT_NE(client().get(q.key()).wait()->kvs.at(0).lease, lease);
  EXPECT_TRUE(q.release().wait().value());
}

TEST_F(SemaphoreTest, AWaiterWhoseSessionDiedNeverReportsSuccess) {
  const std::string name = key("dead");
  DistributedSemaphore holder(client(), name, 1), waiter(client(), name, 1);
  Permit p = holder.acquire_blocking();
  auto pending = waiter.acquire().timeout(20s).future();
  queued(name, 2);
  auto kvs = client()
                 .get(name + "/holders/",
                      {.prefix = true, .sort_order = SortOrder::kAscend, .sort_target = SortTarget::kCreate})
                 .wait()
                 ->kvs;
  ASSERT_EQ(kvs.size(), 2u);
  ASSERT_TRUE(client().lease_revoke(kvs[1].lease).wait().ok());
  ASSERT_TRUE(ready(pending));
  auto r = pending.get();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kHoldLost)) << r.status().to_string();
  EXPECT_TRUE(p.is_held());
  EXPECT_TRUE(p.release().wait().value());
}

TEST_F(SemaphoreTest, ATimedOutAcquireNeverLeavesItsKeyBehind) {
  const std::string name = key("orphan");
  DistributedSemaphore sem(client(), name, 1), other(client(), name, 1);
  ASSERT_TRUE(sem.acquire_blocking().release().wait().value());  // warm: session granted, count stored
  for (int i = 0; i < 20; ++i) {
    auto r = sem.acquire().timeout(std::chrono::microseconds(200 + 100 * i)).wait();
    if (r.ok()) {
      ASSERT_TRUE(r->release().wait().value());
    }
    ASSERT_TRUE(eventually([&] { return holders(name) == 0; }, 3s)) << "attempt " << i << " left a key";
  }
  auto p = other.try_acquire().wait();
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->has_value());
}

// A permit is the caller's: it outlives its semaphore's close() as a hold,
// keeping its client (and so its session) until it is released; then the
// client goes, and the permit answers without it.
TEST_F(SemaphoreTest, APermitOutlivesItsClosedSemaphoreAndKeepsItsClientUntilReleased) {
  const std::string name = key("outlives");
  std::weak_ptr<detail::ClientCore> core;
  std::optional<DistributedSemaphore> sem;
  std::optional<Permit> p;
  {
    Client c(options());
    core = etcd::detail::ClientAccess::core(c);
    sem.emplace(c, name, 1);
    p = sem->acquire_blocking();
    sem->close();
  }
  EXPECT_TRUE(p->is_held());
  EXPECT_FALSE(core.expired()) << "a held permit keeps its client";
  EXPECT_EQ(holders(name), 1);
  ASSERT_TRUE(p->guarded(Txn().then(Op::put(key("fenced"), "x"))).wait().ok());
  EXPECT_TRUE(p->release().wait().value());
  EXPECT_EQ(holders(name), 0);
  EXPECT_TRUE(eventually([&] { return core.expired(); }, 15s)) << "the released permit still holds its client";
  EXPECT_FALSE(p->is_held());
  EXPECT_FALSE(p->release().wait().value());
  EXPECT_TRUE(p->guarded(Txn().then(Op::put(key("fenced"), "y"))).wait().status().is(Errc::kHoldLost));
  EXPECT_TRUE(sem->acquire().wait().status().is(Errc::kClosed));
  EXPECT_TRUE(sem->available_permits().wait().status().is(Errc::kClosed));
  p.reset();
  sem.reset();
}

TEST_F(SemaphoreTest, WaitingDoesNotKeepTheClientAlive) {
  std::weak_ptr<detail::ClientCore> core;
  {
    Client c(options());
    core = etcd::detail::ClientAccess::core(c);
    DistributedSemaphore a(c, key("alive"), 1), b(c, key("alive"), 1);
    Permit p = a.acquire_blocking();
    auto f = b.acquire().timeout(10s).future();
    ASSERT_TRUE(eventually(
        [&] { return c.get(key("alive/holders/"), {.prefix = true, .count_only = true}).wait()->count == 2; }));
    EXPECT_TRUE(p.release().wait().value());
    ASSERT_TRUE(ready(f));
    auto q = f.get();
    ASSERT_TRUE(q.ok());
    EXPECT_TRUE(q->release().wait().value());
    Permit again = a.acquire_blocking();
    EXPECT_FALSE(b.try_acquire_for(200ms).has_value());  // a timed-out waiter too
  }
  EXPECT_TRUE(eventually([&] { return core.expired(); }, 5s)) << "the client outlived every handle";
}

}  // namespace
}  // namespace etcd::test
