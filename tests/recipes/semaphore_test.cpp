// DistributedSemaphore against a real etcd member.
#include <atomic>
#include <functional>
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

// Every behaviour on both layouts (the ordered one: a queue and N permit
// slots, semaphore.h).
class SemaphoreTest : public SingleMemberTest, public ::testing::WithParamInterface<recipes::ContenderLayout> {
 protected:
  static RecipeOptions layout(RecipeOptions o = {}) {
    o.contender_layout = GetParam();
    return o;
  }
  static bool ordered() { return GetParam() == recipes::ContenderLayout::kOrdered; }
  // The keys that take a place: holders and waiters.
  int64_t holders(const std::string& name) {
    const auto count = [&](const std::string& prefix) {
      return client().get(prefix, {.prefix = true, .count_only = true}).wait()->count;
    };
    if (ordered()) return count(name + "/slots/") + count(name + "/queue/");
    return count(name + "/holders/");
  }
  // The waiters' keys, oldest first.
  std::vector<KeyValue> waiting(const std::string& name) {
    return client()
        .get(name + (ordered() ? "/queue/" : "/holders/"),
             {.prefix = true, .sort_order = SortOrder::kAscend, .sort_target = SortTarget::kCreate})
        .wait()
        ->kvs;
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

TEST_P(SemaphoreTest, UncontendedPermitUsesTheKeyLayoutAndCostsTwoWrites) {
  const std::string name = key("layout");
  DistributedSemaphore sem(client(), name, 3, layout());
  EXPECT_EQ(sem.identity(), "DistributedSemaphore[" + name + "]");
  EXPECT_EQ(sem.permits(), 3);
  EXPECT_EQ(sem.available_permits().wait().value(), 3);
  Permit p = sem.acquire().wait().value();
  ASSERT_TRUE(p.valid());
  EXPECT_TRUE(p.is_held());
  EXPECT_EQ(client().get(name + "/permits").wait()->kvs.at(0).value, ordered() ? "3 ordered" : "3");
  auto got = client().get(p.key()).wait();
  ASSERT_EQ(got->kvs.size(), 1u) << p.key();
  if (ordered()) {
    // A slot NAME/slots/<i>, 0 <= i < 3, whose value names the client.
    EXPECT_EQ(p.key().rfind(name + "/slots/", 0), 0u) << p.key();
    const std::string i = p.key().substr(name.size() + 7);
    EXPECT_TRUE(i == "0" || i == "1" || i == "2") << p.key();
    EXPECT_NE(got->kvs[0].value.find(recipes::default_client_id()), std::string::npos) << got->kvs[0].value;
    EXPECT_EQ(got->kvs[0].lease, p.lease());
  } else {
    const std::string prefix = name + "/holders/" + hex(got->kvs[0].lease) + "-";
    EXPECT_EQ(p.key().rfind(prefix, 0), 0u) << p.key();
  }
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

TEST_P(SemaphoreTest, PermitsReleaseOnDestructionAndMove) {
  const std::string name = key("raii");
  DistributedSemaphore sem(client(), name, 2, layout());
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

TEST_P(SemaphoreTest, SeveralPermitsFromOneObjectUseDistinctKeys) {
  const std::string name = key("multi");
  DistributedSemaphore sem(client(), name, 3, layout());
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
TEST_P(SemaphoreTest, ObjectsSharingOneSessionHoldDistinctPermitsEvenThroughTwoClients) {
  const std::string name = key("shared");
  auto session = Session::create(client());
  RecipeOptions shared = layout();
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

TEST_P(SemaphoreTest, TwentyContendersNeverExceedThePermitCount) {
  const std::string name = key("twenty");
  RecipeOptions opts = layout();
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

TEST_P(SemaphoreTest, AsyncContendersOnOneObjectNeverExceedThePermitCount) {
  const std::string name = key("async");
  DistributedSemaphore sem(client(), name, 2, layout());
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

TEST_P(SemaphoreTest, GrantsAreFifoEvenWhenHoldersReleaseOutOfOrder) {
  const std::string name = key("fifo");
  RecipeOptions opts = layout();
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

TEST_P(SemaphoreTest, PermitCountMismatchIsAClearErrorAndWritesNothing) {
  const std::string name = key("mismatch");
  DistributedSemaphore three(client(), name, 3, layout()), five(client(), name, 5, layout());
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

TEST_P(SemaphoreTest, BadArgumentsAreRejectedBeforeAnyRequest) {
  const auto before = client().stats().rpcs_started;
  for (int n : {0, -1}) {
    DistributedSemaphore sem(client(), key("bad"), n, layout());
    auto r = sem.acquire().wait();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
    EXPECT_NE(r.status().message().find("permits"), std::string::npos) << r.status().message();
    EXPECT_EQ(sem.try_acquire().wait().status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(sem.available_permits().wait().status().code(), StatusCode::kInvalidArgument);
    EXPECT_THROW((void)sem.acquire_blocking(), Error);
  }
  for (std::string bad : {std::string(), key("trailing/"), std::string("nul\0byte", 8)}) {
    DistributedSemaphore sem(client(), bad, 2, layout());
    EXPECT_EQ(sem.acquire().wait().status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(client().stats().rpcs_started, before);
}

TEST_P(SemaphoreTest, CloseWakesParkedWaitersWithClosed) {
  const std::string name = key("close");
  DistributedSemaphore holder(client(), name, 1, layout()), waiter(client(), name, 1, layout());
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

TEST_P(SemaphoreTest, StopTokenCancelsAWaitAndLeavesNoKey) {
  const std::string name = key("stop");
  DistributedSemaphore sem(client(), name, 1, layout());
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

TEST_P(SemaphoreTest, LossIsReportedAndReleaseReturnsFalse) {
  const std::string name = key("loss");
  DistributedSemaphore sem(client(), name, 2, layout());
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

TEST_P(SemaphoreTest, AWaiterWhoseSessionDiedNeverReportsSuccess) {
  const std::string name = key("dead");
  DistributedSemaphore holder(client(), name, 1, layout()), waiter(client(), name, 1, layout());
  Permit p = holder.acquire_blocking();
  auto pending = waiter.acquire().timeout(20s).future();
  queued(name, 2);
  auto kvs = waiting(name);
  ASSERT_EQ(kvs.size(), ordered() ? 1u : 2u);
  ASSERT_TRUE(client().lease_revoke(kvs.back().lease).wait().ok());
  ASSERT_TRUE(ready(pending));
  auto r = pending.get();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kHoldLost)) << r.status().to_string();
  EXPECT_TRUE(p.is_held());
  EXPECT_TRUE(p.release().wait().value());
}

TEST_P(SemaphoreTest, ATimedOutAcquireNeverLeavesItsKeyBehind) {
  const std::string name = key("orphan");
  DistributedSemaphore sem(client(), name, 1, layout()), other(client(), name, 1, layout());
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
TEST_P(SemaphoreTest, APermitOutlivesItsClosedSemaphoreAndKeepsItsClientUntilReleased) {
  const std::string name = key("outlives");
  std::weak_ptr<detail::ClientCore> core;
  std::optional<DistributedSemaphore> sem;
  std::optional<Permit> p;
  {
    Client c(options());
    core = etcd::detail::ClientAccess::core(c);
    sem.emplace(c, name, 1, layout());
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

TEST_P(SemaphoreTest, WaitingDoesNotKeepTheClientAlive) {
  std::weak_ptr<detail::ClientCore> core;
  {
    Client c(options());
    core = etcd::detail::ClientAccess::core(c);
    DistributedSemaphore a(c, key("alive"), 1, layout()), b(c, key("alive"), 1, layout());
    Permit p = a.acquire_blocking();
    auto f = b.acquire().timeout(10s).future();
    ASSERT_TRUE(eventually([&] { return holders(key("alive")) == 2; }));
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

// The ordered layout's own rules (semaphore.h, "The ordered layout").
class OrderedSemaphoreTest : public SingleMemberTest {
 protected:
  static RecipeOptions ordered() {
    RecipeOptions o;
    o.contender_layout = recipes::ContenderLayout::kOrdered;
    return o;
  }
  int64_t count(const std::string& prefix) {
    return client().get(prefix, {.prefix = true, .count_only = true}).wait()->count;
  }
  bool exists(const std::string& k) { return !client().get(k).wait()->kvs.empty(); }
  // Revisions consumed by `fn` (etcd writes it made).
  int64_t writes(const std::function<void()>& fn) {
    const int64_t before = client().put(key("probe"), "x").wait()->header.revision;
    fn();
    return client().put(key("probe"), "y").wait()->header.revision - before - 1;
  }
};

TEST_F(OrderedSemaphoreTest, TheTwoLayoutsRefuseEachOtherBeforeAnyWrite) {
  const std::string name = key("layouts");
  DistributedSemaphore ordered_sem(client(), name, 2, ordered()), holders_sem(client(), name, 2);
  Permit p = ordered_sem.acquire_blocking();
  const int64_t rev = client().get(key("probe")).wait()->header.revision;
  auto r = holders_sem.acquire().wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kMismatch)) << r.status().to_string();
  EXPECT_NE(r.status().message().find("stores 2 ordered"), std::string::npos) << r.status().message();
  EXPECT_EQ(client().get(key("probe")).wait()->header.revision, rev) << "nothing written";
  EXPECT_TRUE(p.release().wait().value());

  const std::string other = key("layouts2");
  DistributedSemaphore first(client(), other, 2), second(client(), other, 2, ordered());
  Permit q = first.acquire_blocking();
  auto s = second.try_acquire().wait();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().is(Errc::kMismatch)) << s.status().to_string();
  EXPECT_NE(s.status().message().find("asks for 2 ordered"), std::string::npos) << s.status().message();
  EXPECT_TRUE(second.available_permits().wait().status().is(Errc::kMismatch));
  EXPECT_TRUE(q.release().wait().value());
}

// Nobody waits: a permit is one write, a release another, whether the
// semaphore is free or partly taken (the creation tries a slot itself, and
// otherwise the first in line moves into a free one).
TEST_F(OrderedSemaphoreTest, AnUncontendedPermitIsOneWriteAndItsReleaseAnother) {
  const std::string name = key("cost");
  DistributedSemaphore sem(client(), name, 3, ordered());
  ASSERT_TRUE(sem.acquire_blocking().release().wait().value());  // warm: session, count stored
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(writes([&] {
                Permit p = sem.acquire_blocking();
                EXPECT_TRUE(p.release().wait().value());
              }),
              2)
        << "cycle " << i;
  }
  Permit a = sem.acquire_blocking(), b = sem.acquire_blocking();
  for (int i = 0; i < 6; ++i) {
    // The third permit: one write when the creation's slot is the free one,
    // two (a queue key, then the move into the free slot) when it is not.
    const int64_t w = writes([&] {
      Permit p = sem.acquire_blocking();
      EXPECT_TRUE(p.release().wait().value());
    });
    EXPECT_GE(w, 2);
    EXPECT_LE(w, 3);
  }
  EXPECT_EQ(count(name + "/queue/"), 0);
  EXPECT_FALSE(exists(name + "~queue-tail")) << "no queue left behind";
}

// A try that finds every permit taken leaves as the first in line: it
// hands off (so no stale tail record makes the next creation look back),
// and the next permit is again one write.
TEST_F(OrderedSemaphoreTest, ADeclinedTryLeavesTheQueueAsItFoundIt) {
  const std::string name = key("decline");
  DistributedSemaphore sem(client(), name, 1, ordered()), other(client(), name, 1, ordered());
  ASSERT_TRUE(other.acquire_blocking().release().wait().value());  // warm
  Permit p = sem.acquire_blocking();
  for (int i = 0; i < 5; ++i) {
    auto none = other.try_acquire().wait();
    ASSERT_TRUE(none.ok()) << none.status().to_string();
    EXPECT_FALSE(none->has_value());
    EXPECT_EQ(count(name + "/queue/"), 0);
    EXPECT_FALSE(exists(name + "~queue-tail")) << "the declined try left the tail record";
  }
  EXPECT_TRUE(p.release().wait().value());
  EXPECT_EQ(writes([&] {
              Permit q = other.acquire_blocking();
              EXPECT_TRUE(q.release().wait().value());
            }),
            2);
}

// The first in line, waiting for a slot, times out: the next waiter takes
// its place, and gets the next permit.
TEST_F(OrderedSemaphoreTest, TheFirstInLineTimingOutHandsItsPlaceToTheNext) {
  const std::string name = key("giveup");
  DistributedSemaphore holder(client(), name, 1, ordered()), a(client(), name, 1, ordered()),
      b(client(), name, 1, ordered());
  Permit p = holder.acquire_blocking();
  auto first = a.acquire().timeout(600ms).future();
  ASSERT_TRUE(eventually([&] { return count(name + "/queue/") == 1; }));
  auto second = b.acquire().timeout(30s).future();
  ASSERT_TRUE(eventually([&] { return count(name + "/queue/") == 2; }));
  ASSERT_TRUE(ready(first, 5s));
  EXPECT_EQ(first.get().status().code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(eventually([&] { return count(name + "/queue/") == 1; }));
  EXPECT_TRUE(still_waiting(second, 200ms)) << "the permit is still held";
  EXPECT_TRUE(p.release().wait().value());
  ASSERT_TRUE(ready(second, 5s));
  auto q = second.get();
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_TRUE(q->release().wait().value());
  EXPECT_EQ(count(name + "/queue/"), 0);
  EXPECT_EQ(count(name + "/slots/"), 0);
  EXPECT_FALSE(exists(name + "~queue-tail"));
}

// Acquisitions cut short at every step (the creation, the wait, the move
// into a slot) while a holder cycles: never more than N slots, and nothing
// left behind.
TEST_F(OrderedSemaphoreTest, AcquisitionsCutShortAnywhereLeaveNothingBehind) {
  const std::string name = key("cut");
  DistributedSemaphore cycler(client(), name, 1, ordered()), cut(client(), name, 1, ordered());
  std::atomic<bool> stop{false};
  std::thread t([&] {
    while (!stop) {
      auto p = cycler.try_acquire_for(2s);
      if (p) {
        std::this_thread::sleep_for(2ms);
        (void)p->release().wait();
      }
    }
  });
  int granted = 0;
  for (int i = 0; i < 40; ++i) {
    auto r = cut.acquire().timeout(std::chrono::microseconds(300 + 150 * i)).wait();
    if (r.ok()) {
      ++granted;
      ASSERT_TRUE(r->release().wait().value());
    }
    EXPECT_LE(count(name + "/slots/"), 1);
  }
  stop = true;
  t.join();
  EXPECT_TRUE(eventually([&] { return count(name + "/slots/") + count(name + "/queue/") == 0; }, 10s))
      << "a cut-short acquisition left a key";
  std::printf("cut short: %d of 40 granted\n", granted);
  auto p = cut.try_acquire().wait();
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->has_value());
}

INSTANTIATE_TEST_SUITE_P(Layouts, SemaphoreTest,
                         ::testing::Values(recipes::ContenderLayout::kGoConcurrency,
                                           recipes::ContenderLayout::kOrdered),
                         [](const ::testing::TestParamInfo<recipes::ContenderLayout>& layout_info) {
                           return layout_info.param == recipes::ContenderLayout::kOrdered ? std::string("Ordered")
                                                                                          : std::string("Holders");
                         });

}  // namespace
}  // namespace etcd::test
