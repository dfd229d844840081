// DistributedMutex with the ordered contender layout (RecipeOptions::
// contender_layout = kOrdered) against a real etcd member: keys in commit
// order, exclusion together with the Go layout and etcdctl, FIFO with one
// wake-up per hand-off, contenders sharing one session.
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "etcd/recipes/metrics.h"
#include "etcd/recipes/mutex.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using namespace std::chrono_literals;
using recipes::ContenderLayout;
using recipes::DistributedMutex;
using recipes::RecipeOptions;
using OrderedMutexTest = SingleMemberTest;

RecipeOptions ordered(RecipeOptions o = {}) {
  o.contender_layout = ContenderLayout::kOrdered;
  return o;
}

// The value of `key`, or "" when it is absent.
std::string value_of(Client& c, const std::string& key) {
  auto got = c.get(key).wait();
  return got.ok() && !got->kvs.empty() ? got->kvs[0].value : std::string();
}

TEST_F(OrderedMutexTest, KeysNameARevisionTheLeaseAndACountAndTheTokenIsTheCreateRevision) {
  DistributedMutex m(client(), key("layout"), ordered());
  ASSERT_TRUE(m.acquire().timeout(10s).wait().ok());
  const std::string k = m.hold().key();
  const std::string head = key("layout") + "/~";
  ASSERT_EQ(k.rfind(head, 0), 0u) << k;
  ASSERT_EQ(k.size(), head.size() + 16 + 1 + 16 + 1 + 16) << k;
  auto got = client().get(k).wait();
  ASSERT_EQ(got->kvs.size(), 1u);
  const auto& kv = got->kvs[0];
  EXPECT_EQ(k.substr(head.size() + 17, 16), hex16(static_cast<uint64_t>(kv.lease)));
  EXPECT_LT(std::stoll(k.substr(head.size(), 16), nullptr, 16), kv.create_revision) << "R was seen before the commit";
  EXPECT_EQ(m.hold().token(), kv.create_revision);
  EXPECT_TRUE(m.unlock());
  EXPECT_EQ(count_under(client(), key("layout") + "/"), 0);
}

TEST_F(OrderedMutexTest, AnUncontendedCycleCostsTwoWrites) {
  DistributedMutex m(client(), key("cost"), ordered());
  ASSERT_TRUE(m.acquire().timeout(10s).wait().ok());  // warm: session granted, a revision seen
  ASSERT_TRUE(m.unlock());
  const int64_t before = client().put(key("probe"), "x").wait()->header.revision;
  ASSERT_TRUE(m.acquire().timeout(10s).wait().ok());
  ASSERT_TRUE(m.unlock());
  const int64_t after = client().put(key("probe"), "y").wait()->header.revision;
  EXPECT_EQ(after - before - 1, 2) << "revisions consumed by one lock+unlock";
}

// Create revisions decide, not key order: c's client last saw a revision
// before the others wrote, so c's key sorts below the holder's although it
// was created after it, and c still waits for it.
TEST_F(OrderedMutexTest, AKeyNamingAnOlderRevisionStillWaitsForTheHolder) {
  Client a_client(options());
  Client c_client(options());
  DistributedMutex early(c_client, key("stale"), ordered());
  ASSERT_TRUE(early.acquire().timeout(10s).wait().ok());
  ASSERT_TRUE(early.unlock());  // c's client has seen this revision, and no later one
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(client().put(key("noise"), std::to_string(i)).wait().ok());
  DistributedMutex a(a_client, key("stale"), ordered());
  ASSERT_TRUE(a.acquire().timeout(10s).wait().ok());  // names a later revision
  DistributedMutex c(c_client, key("stale"), ordered());
  auto pending_c = c.acquire().timeout(10s).future();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("stale") + "/") == 2; }));
  auto got = client().get(key("stale") + "/", {.prefix = true}).wait();
  ASSERT_EQ(got->kvs.size(), 2u);
  EXPECT_EQ(got->kvs[1].key, a.hold().key()) << "c's key sorts first";
  EXPECT_GT(got->kvs[0].create_revision, got->kvs[1].create_revision) << "and was created after a's";
  EXPECT_EQ(pending_c.wait_for(300ms), std::future_status::timeout) << "c waits for a";
  EXPECT_TRUE(a.unlock());
  ASSERT_EQ(pending_c.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(pending_c.get().ok());
  EXPECT_TRUE(c.unlock());
}

// A key whose revision is stale sorts below keys created before it: the
// waiter created after it, which finds the holder first, must not take the
// holder's hand-off as "nothing is left before me".
TEST_F(OrderedMutexTest, AHandOffDoesNotSkipAWaiterWhoseKeySortsLower) {
  Client p_client(options());
  Client stale_client(options());
  DistributedMutex early(stale_client, key("skip"), ordered());
  ASSERT_TRUE(early.acquire().timeout(10s).wait().ok());
  ASSERT_TRUE(early.unlock());  // the stale client has seen this revision, and no later one
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(client().put(key("noise"), std::to_string(i)).wait().ok());
  DistributedMutex p(p_client, key("skip"), ordered());
  ASSERT_TRUE(p.acquire().timeout(10s).wait().ok());
  DistributedMutex stale(stale_client, key("skip"), ordered());
  auto pending_stale = stale.acquire().timeout(20s).future();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("skip") + "/") == 2; }));
  DistributedMutex fresh(client(), key("skip"), ordered());
  auto pending_fresh = fresh.acquire().timeout(20s).future();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("skip") + "/") == 3; }));
  EXPECT_EQ(pending_stale.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(pending_fresh.wait_for(1ms), std::future_status::timeout);
  ASSERT_TRUE(p.unlock());
  ASSERT_EQ(pending_stale.wait_for(10s), std::future_status::ready) << "the older waiter is next";
  EXPECT_TRUE(pending_stale.get().ok());
  EXPECT_EQ(pending_fresh.wait_for(500ms), std::future_status::timeout) << "two holders at once";
  EXPECT_TRUE(stale.unlock());
  ASSERT_EQ(pending_fresh.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(pending_fresh.get().ok());
  EXPECT_TRUE(fresh.unlock());
}

// The tail record names a waiter that gave up: the next waiter's
// predecessor is gone before it looks, and it must still wait for the
// holder (and hold once it is released).
TEST_F(OrderedMutexTest, AWaiterWhosePredecessorIsGoneStillWaitsForTheHolder) {
  DistributedMutex holder(client(), key("gone"), ordered()), quitter(client(), key("gone"), ordered()),
      waiter(client(), key("gone"), ordered());
  ASSERT_TRUE(holder.acquire().timeout(10s).wait().ok());
  auto quits = quitter.acquire().timeout(300ms).wait();
  EXPECT_EQ(quits.status().code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("gone") + "/") == 1; }));
  EXPECT_NE(value_of(client(), key("gone") + "~tail"), holder.hold().key()) << "the tail names the quitter";
  auto pending = waiter.acquire().timeout(20s).future();
  EXPECT_EQ(pending.wait_for(500ms), std::future_status::timeout) << "held while the holder holds";
  ASSERT_TRUE(holder.unlock());
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(pending.get().ok());
  EXPECT_TRUE(waiter.unlock());
}

TEST_F(OrderedMutexTest, WaitersAreServedFifoAndEachWakesOnce) {
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  const RecipeOptions opts = ordered([&] {
    RecipeOptions o;
    o.metrics = metrics;
    return o;
  }());
  DistributedMutex holder(client(), key("fifo"), opts);
  ASSERT_TRUE(holder.acquire().timeout(10s).wait().ok());
  constexpr int kWaiters = 8;
  std::vector<std::unique_ptr<DistributedMutex>> waiters;
  std::mutex order_mu;
  std::vector<int> order;
  std::vector<std::future<void>> done;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<DistributedMutex>(client(), key("fifo"), opts));
    auto* w = waiters.back().get();
    done.push_back(std::async(std::launch::async, [&, w, i] {
      ASSERT_TRUE(w->try_lock_for(20s));
      {
        std::lock_guard lock(order_mu);
        order.push_back(i);
      }
      EXPECT_TRUE(w->unlock());
    }));
    ASSERT_TRUE(eventually([&] { return count_under(client(), key("fifo") + "/") == i + 2; }));
  }
  const recipes::Labels labels{{"lock", key("fifo")}};
  const double wakeups_before = metrics->value("etcd_recipes_lock_wakeups_total", labels);
  EXPECT_TRUE(holder.unlock());
  for (auto& f : done) ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  std::vector<int> expected(kWaiters);
  for (int i = 0; i < kWaiters; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
  EXPECT_LE(metrics->value("etcd_recipes_lock_wakeups_total", labels) - wakeups_before, kWaiters * 1.5);
  EXPECT_EQ(metrics->value("etcd_recipes_lock_acquired_total", labels), kWaiters + 1);
}

// Many contenders on one session (one lease): each has its own key, and
// the lock still excludes.
TEST_F(OrderedMutexTest, ContendersSharingOneSessionExcludeEachOther) {
  auto session = Session::create(client());
  RecipeOptions shared = ordered();
  shared.session = session;
  constexpr int kContenders = 12;
  constexpr int kRounds = 5;
  // Half of them through another client: the session's keys are numbered
  // by the client it was made on.
  Client other(options());
  std::vector<std::unique_ptr<DistributedMutex>> mutexes;
  for (int i = 0; i < kContenders; ++i)
    mutexes.push_back(std::make_unique<DistributedMutex>(i % 2 ? other : client(), key("share"), shared));
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> acquired{0};
  std::vector<std::future<void>> done;
  for (auto& m : mutexes) {
    done.push_back(std::async(std::launch::async, [&, mp = m.get()] {
      for (int r = 0; r < kRounds; ++r) {
        if (!mp->try_lock_for(30s)) return;
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        std::this_thread::sleep_for(2ms);
        inside.fetch_sub(1);
        acquired.fetch_add(1);
        EXPECT_TRUE(mp->unlock());
      }
    }));
  }
  for (auto& f : done) ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(acquired.load(), kContenders * kRounds);
  EXPECT_EQ(count_under(client(), key("share") + "/"), 0);
}

// Contenders that cycle (acquire, release, acquire) queue behind the
// others each time: every one of them is parked or holding, none spins.
// Four clients (as four processes), each with one session for its five.
TEST_F(OrderedMutexTest, CyclingContendersOfFourClientsAllStayQueued) {
  constexpr int kClients = 4;
  constexpr int kContenders = 20;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::shared_ptr<Session>> sessions;
  std::vector<std::unique_ptr<DistributedMutex>> mutexes;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(std::make_unique<Client>(options()));
    sessions.push_back(Session::create(*clients.back()));
  }
  for (int i = 0; i < kContenders; ++i) {
    RecipeOptions shared = ordered();
    shared.session = sessions[i % kClients];
    mutexes.push_back(std::make_unique<DistributedMutex>(*clients[i % kClients], key("cycle"), shared));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> acquired{0};
  std::atomic<int> failed{0};
  std::vector<std::future<void>> done;
  for (auto& m : mutexes) {
    done.push_back(std::async(std::launch::async, [&, mp = m.get()] {
      while (!stop.load()) {
        auto h = mp->acquire().timeout(20s).wait();
        if (!h.ok()) {
          failed.fetch_add(1);
          std::fprintf(stderr, "acquire failed: %s\n", h.status().to_string().c_str());
          continue;
        }
        acquired.fetch_add(1);
        EXPECT_TRUE(mp->release().timeout(10s).wait().ok());
      }
    }));
  }
  std::this_thread::sleep_for(2s);
  int64_t fewest = kContenders;
  for (int i = 0; i < 10; ++i) {
    fewest = std::min(fewest, count_under(client(), key("cycle") + "/"));
    std::this_thread::sleep_for(100ms);
  }
  stop.store(true);
  for (auto& f : done) ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
  std::printf("%d acquisitions, %d failed, fewest keys %lld\n", acquired.load(), failed.load(),
              static_cast<long long>(fewest));
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GE(fewest, kContenders - 2) << "contenders without a key are spinning, not queued";
}

// A client whose contenders keep the lock busy does not keep another
// client's contender from joining the queue.
TEST_F(OrderedMutexTest, ABusyClientDoesNotKeepAnotherOutOfTheQueue) {
  Client busy_client(options());
  Client other_client(options());
  auto busy_session = Session::create(busy_client);
  RecipeOptions busy_opts = ordered();
  busy_opts.session = busy_session;
  constexpr int kBusy = 10;
  std::vector<std::unique_ptr<DistributedMutex>> busy;
  for (int i = 0; i < kBusy; ++i)
    busy.push_back(std::make_unique<DistributedMutex>(busy_client, key("busy"), busy_opts));
  std::atomic<bool> stop{false};
  std::vector<std::future<void>> loops;
  for (auto& m : busy) {
    loops.push_back(std::async(std::launch::async, [&, mp = m.get()] {
      while (!stop.load()) {
        if (!mp->try_lock_for(10s)) continue;
        (void)mp->unlock();
      }
    }));
  }
  std::this_thread::sleep_for(500ms);
  DistributedMutex other(other_client, key("busy"), ordered());
  int got = 0;
  for (int i = 0; i < 5; ++i) {
    if (other.try_lock_for(5s)) {
      ++got;
      EXPECT_TRUE(other.unlock());
    }
  }
  stop.store(true);
  for (auto& f : loops) ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(got, 5);
}

// The Go layout's contenders (ours, and so etcd's Go package) and the
// ordered ones share one lock: the lowest create revision holds.
TEST_F(OrderedMutexTest, ExcludesTogetherWithTheGoLayoutBothWays) {
  DistributedMutex go(client(), key("mixed"));
  DistributedMutex ord(client(), key("mixed"), ordered());
  ASSERT_TRUE(go.acquire().timeout(10s).wait().ok());
  EXPECT_FALSE(ord.try_lock());
  auto waiting = ord.acquire().timeout(10s).future();
  EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout) << "the ordered contender waits for the Go holder";
  ASSERT_TRUE(go.unlock());
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(waiting.get().ok());
  auto go_waiting = go.acquire().timeout(10s).future();
  EXPECT_EQ(go_waiting.wait_for(300ms), std::future_status::timeout) << "the Go contender waits for the ordered holder";
  ASSERT_TRUE(ord.unlock());
  ASSERT_EQ(go_waiting.wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(go_waiting.get().ok());
  EXPECT_TRUE(go.unlock());
}

TEST_F(OrderedMutexTest, SharesOneLockWithEtcdctl) {
  const std::string name = key("interop");
  const std::string endpoints = cluster().endpoint(0);
  const std::string etcdctl = etcd::testing::etcdctl_binary();
  FILE* p = popen(
      ("ETCDCTL_API=3 " + etcdctl + " --endpoints=" + endpoints + " lock " + name + " sleep 3 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(eventually([&] { return count_under(client(), name + "/") == 1; }));
  DistributedMutex m(client(), name, ordered());
  EXPECT_FALSE(m.try_lock());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(m.acquire().timeout(15s).wait().ok());  // granted when etcdctl releases
  EXPECT_GT(std::chrono::steady_clock::now() - start, 1s);
  pclose(p);
  const int rc = std::system(("timeout -k 1 2 env ETCDCTL_API=3 " + etcdctl + " --endpoints=" + endpoints + " lock " +
                              name + " true >/dev/null 2>&1")
                                 .c_str());
  EXPECT_TRUE(WEXITSTATUS(rc) == 124 || WEXITSTATUS(rc) == 137) << "etcdctl got the lock while we held it";
  EXPECT_TRUE(m.unlock());
}

// A waiter in the middle that gives up leaves the queue whole: the one
// behind it now waits for the one before, and every key is gone at the end.
TEST_F(OrderedMutexTest, AWaiterThatTimesOutInTheMiddleLeavesTheQueueWhole) {
  DistributedMutex holder(client(), key("middle"), ordered());
  DistributedMutex quitter(client(), key("middle"), ordered());
  DistributedMutex last(client(), key("middle"), ordered());
  ASSERT_TRUE(holder.acquire().timeout(10s).wait().ok());
  auto quits = std::async(std::launch::async, [&] { return quitter.try_lock_for(600ms); });
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("middle") + "/") == 2; }));
  auto gets = last.acquire().timeout(20s).future();
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("middle") + "/") == 3; }));
  ASSERT_EQ(quits.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(quits.get());
  ASSERT_TRUE(eventually([&] { return count_under(client(), key("middle") + "/") == 2; }));
  EXPECT_EQ(gets.wait_for(300ms), std::future_status::timeout) << "the holder still holds";
  ASSERT_TRUE(holder.unlock());
  ASSERT_EQ(gets.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(gets.get().ok());
  EXPECT_TRUE(last.unlock());
  EXPECT_EQ(count_under(client(), key("middle") + "/"), 0);
}

// Waiters that arrived more than a window of revisions apart (other writes
// in between) still find the one before them.
TEST_F(OrderedMutexTest, AWaiterFindsAPredecessorOlderThanItsWindow) {
  DistributedMutex holder(client(), key("far"), ordered());
  DistributedMutex waiter(client(), key("far"), ordered());
  ASSERT_TRUE(holder.acquire().timeout(10s).wait().ok());
  for (int i = 0; i < 300; ++i)
    ASSERT_TRUE(client().put(key("noise"), std::to_string(i)).wait().ok());  // > 256 revisions
  auto gets = waiter.acquire().timeout(20s).future();
  EXPECT_EQ(gets.wait_for(300ms), std::future_status::timeout) << "the holder was found past the window";
  ASSERT_TRUE(holder.unlock());
  ASSERT_EQ(gets.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(gets.get().ok());
  EXPECT_TRUE(waiter.unlock());
}

// A holder's release records the hand-off in NAME~handoff (beside NAME/); the
// waiter it lets go holds without looking back. A waiter that gives up and
// a hold that is lost record nothing.
TEST_F(OrderedMutexTest, AReleaseRecordsTheHandOffAndAWaiterThatGivesUpOrALostHoldDoesNot) {
  const std::string name = key("handoff");
  const auto record = [&] { return value_of(client(), name + "~handoff"); };
  DistributedMutex holder(client(), name, ordered());
  DistributedMutex quitter(client(), name, ordered());
  DistributedMutex waiter(client(), name, ordered());
  ASSERT_TRUE(holder.acquire().timeout(10s).wait().ok());
  const std::string held = holder.hold().key();
  EXPECT_FALSE(quitter.try_lock_for(300ms));
  EXPECT_EQ(record(), "") << "a waiter that gave up recorded a hand-off";
  auto gets = waiter.acquire().timeout(20s).future();
  ASSERT_TRUE(eventually([&] { return count_under(client(), name + "/") == 2; }));
  ASSERT_TRUE(holder.unlock());
  EXPECT_EQ(record(), held);
  ASSERT_EQ(gets.wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(gets.get().ok());
  // Lost, not released: nothing recorded.
  std::promise<void> lost;
  auto sub = waiter.on_lost([&](const Status&) { lost.set_value(); });
  ASSERT_TRUE(client().lease_revoke(waiter.hold().lease()).wait().ok());
  ASSERT_EQ(lost.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(waiter.unlock());
  EXPECT_EQ(record(), held);
  EXPECT_EQ(count_under(client(), name + "/"), 0);
}

// With many of the layout's keys deleted below the waiters (etcd keeps them
// in its index until a compaction; a hand-off does not read them, see
// core/ordered_key.h), the lock still passes FIFO through 20 waiters of one
// session, each woken once.
TEST_F(OrderedMutexTest, HandOffsStayFifoAndWakeEachWaiterOnceOverManyDeletedKeys) {
  const std::string name = key("history");
  for (int batch = 0; batch < 20; ++batch) {
    Txn puts;
    for (int i = 0; i < 100; ++i) puts.then(Op::put(name + "/~" + hex16(1) + "-" + hex16(batch) + "-" + hex16(i), "x"));
    ASSERT_TRUE(client().txn(std::move(puts)).wait().ok());
    // (a range delete leaves one index entry per key, as releases do)
  }
  ASSERT_TRUE(client().del(name + "/~", {.prefix = true}).wait().ok());
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  RecipeOptions o = ordered();
  o.metrics = metrics;
  o.session = Session::create(client());
  std::vector<std::unique_ptr<DistributedMutex>> ms;
  for (int i = 0; i < 20; ++i) ms.push_back(std::make_unique<DistributedMutex>(client(), name, o));
  ASSERT_TRUE(ms[0]->acquire().timeout(10s).wait().ok());
  std::vector<std::future<Result<recipes::Hold>>> pending;
  for (int i = 1; i < 20; ++i) {
    pending.push_back(ms[i]->acquire().timeout(30s).future());
    ASSERT_TRUE(eventually([&] { return count_under(client(), name + "/") == i + 1; }));
  }
  for (int i = 1; i < 20; ++i) {
    ASSERT_TRUE(ms[i - 1]->unlock());
    ASSERT_EQ(pending[i - 1].wait_for(10s), std::future_status::ready) << i;
    ASSERT_TRUE(pending[i - 1].get().ok()) << i;
  }
  EXPECT_TRUE(ms[19]->unlock());
  EXPECT_EQ(metrics->value("etcd_recipes_lock_wakeups_total", {{"lock", name}}), 19);
}

// The tail record names the key created last and goes with the release
// of the holder it names (then the only key): an uncontended acquisition
// reads nothing of the layout. A waiter that gives up leaves it naming its
// gone key; the next acquisition looks back, holds, and clears it again.
TEST_F(OrderedMutexTest, TheTailRecordNamesTheLastKeyAndGoesWithTheLastHolder) {
  const std::string name = key("tail");
  const auto tail = [&] { return value_of(client(), name + "~tail"); };
  DistributedMutex a(client(), name, ordered());
  DistributedMutex b(client(), name, ordered());
  ASSERT_TRUE(a.acquire().timeout(10s).wait().ok());
  EXPECT_EQ(tail(), a.hold().key());
  ASSERT_TRUE(a.unlock());
  EXPECT_EQ(tail(), "") << "the last holder's release removes the tail record";
  ASSERT_TRUE(a.acquire().timeout(10s).wait().ok());
  const std::string held = a.hold().key();
  EXPECT_FALSE(b.try_lock_for(200ms));
  const std::string gone = tail();
  EXPECT_NE(gone, "");
  EXPECT_NE(gone, held) << "the tail record names the waiter that gave up";
  ASSERT_TRUE(a.unlock());
  EXPECT_EQ(tail(), gone) << "a holder that is not the tail leaves it";
  ASSERT_TRUE(b.acquire().timeout(10s).wait().ok());
  EXPECT_EQ(tail(), b.hold().key());
  ASSERT_TRUE(b.unlock());
  EXPECT_EQ(tail(), "");
  EXPECT_EQ(count_under(client(), name + "/"), 0);
}

}  // namespace
}  // namespace etcd::test
