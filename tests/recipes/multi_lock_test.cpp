// MultiLock against a real etcd member.
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "etcd/recipes/multi_lock.h"
#include "etcd/recipes/mutex.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedMutex;
using recipes::MultiHold;
using recipes::MultiLock;
using MultiLockTest = SingleMemberTest;

class MultiLockFixture : public MultiLockTest {
 protected:
  int64_t keys_under(const std::string& name) {
    return client().get(name + "/", {.prefix = true, .count_only = true}).wait()->count;
  }
};

TEST_F(MultiLockFixture, TakesEveryNameInSortedOrderWithOneTokenPerName) {
  const std::string a = key("a"), b = key("b"), c = key("c");
  MultiLock lock(client(), {c, a, b, a});
  EXPECT_EQ(lock.names(), (std::vector<std::string>{a, b, c}));
  MultiHold h = lock.acquire().timeout(10s).wait().value();
  ASSERT_TRUE(h.is_held());
  EXPECT_TRUE(lock.is_held());
  EXPECT_EQ(h.names(), lock.names());
  ASSERT_EQ(h.holds().size(), 3u);
  // One key per name, all on one lease; each name's token is its key's
  // create revision, taken in the global order.
  int64_t lease = 0, last = 0;
  for (const auto& n : lock.names()) {
    auto got = client().get(n + "/", {.prefix = true}).wait().value();
    ASSERT_EQ(got.kvs.size(), 1u) << n;
    EXPECT_EQ(h.token(n), got.kvs[0].create_revision);
    EXPECT_EQ(h.hold(n).key(), got.kvs[0].key);
    EXPECT_GT(h.token(n), last);
    last = h.token(n);
    if (lease == 0) lease = got.kvs[0].lease;
    EXPECT_EQ(got.kvs[0].lease, lease);
  }
  EXPECT_EQ(h.tokens().size(), 3u);
  EXPECT_EQ(h.tokens().at(b), h.token(b));
  EXPECT_EQ(h.token(key("other")), 0);
  EXPECT_FALSE(h.hold(key("other")).valid());
  EXPECT_FALSE(h.stop_token().stop_requested());

  EXPECT_TRUE(lock.release().wait().value());
  EXPECT_TRUE(h.stop_token().stop_requested());
  EXPECT_FALSE(h.is_held());
  EXPECT_FALSE(lock.hold().valid());
  for (const auto& n : lock.names()) EXPECT_EQ(keys_under(n), 0) << n;
  EXPECT_FALSE(h.release().wait().value());  // released already
}

TEST_F(MultiLockFixture, StandardLockAdaptersWork) {
  MultiLock lock(client(), {key("x"), key("y")});
  {
    std::scoped_lock guard(lock);
    EXPECT_TRUE(lock.is_held());
  }
  EXPECT_FALSE(lock.is_held());
  std::unique_lock u(lock, std::defer_lock);
  EXPECT_TRUE(u.try_lock_for(5s));
  u.unlock();
  EXPECT_TRUE(lock.with_lock([&] { return lock.hold().tokens().size() == 2; }));
  EXPECT_FALSE(lock.is_held());
}

TEST_F(MultiLockFixture, BadInputIsRefusedBeforeAnyWrite) {
  const int64_t before = client().put(key("probe"), "x").wait()->header.revision;
  auto refused = [&](std::vector<std::string> names, const std::string& says) {
    MultiLock lock(client(), names);
    auto r = lock.acquire().timeout(5s).wait();
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().to_string();
    EXPECT_FALSE(lock.try_acquire().wait().ok());
    EXPECT_THROW(lock.start(), Error);
    EXPECT_THROW(lock.lock(), Error);
  };
  refused({}, "at least one name");
  refused({key("ok"), ""}, "invalid name");
  refused({key("ok"), key("trailing/")}, "invalid name");
  refused({key("dir"), key("dir-2"), key("dir/sub")}, "path prefix");
  const int64_t after = client().put(key("probe"), "y").wait()->header.revision;
  EXPECT_EQ(after, before + 1) << "nothing was written";
  // A string prefix that is not a path prefix is fine.
  MultiLock fine(client(), {key("p"), key("pq")});
  EXPECT_TRUE(fine.try_lock());
  EXPECT_TRUE(fine.unlock());
}

TEST_F(MultiLockFixture, TryAcquireDeclinesAndLeavesNothingWhenOneNameIsTaken) {
  DistributedMutex other(client(), key("n3"));
  ASSERT_TRUE(other.try_lock());
  MultiLock lock(client(), {key("n1"), key("n2"), key("n3")});
  auto r = lock.try_acquire().wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->has_value());
  EXPECT_FALSE(lock.is_held());
  EXPECT_EQ(keys_under(key("n1")), 0);
  EXPECT_EQ(keys_under(key("n2")), 0);
  EXPECT_EQ(keys_under(key("n3")), 1);
  ASSERT_TRUE(other.unlock());
  EXPECT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.unlock());
}

TEST_F(MultiLockFixture, DeadlineAndCancelReleaseTheNamesAlreadyTaken) {
  DistributedMutex other(client(), key("z"));
  ASSERT_TRUE(other.try_lock());
  MultiLock lock(client(), {key("z"), key("a")});  // "a" first, then waits on "z"
  const auto start = std::chrono::steady_clock::now();
  auto timed = lock.acquire().timeout(400ms).wait();
  ASSERT_FALSE(timed.ok());
  EXPECT_EQ(timed.status().code(), StatusCode::kDeadlineExceeded) << timed.status().to_string();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 390ms);
  EXPECT_EQ(keys_under(key("a")), 0);
  EXPECT_EQ(keys_under(key("z")), 1);
  EXPECT_FALSE(lock.try_lock_for(200ms));

  std::stop_source stop;
  auto pending = std::async(std::launch::async, [&] { return lock.acquire().stop_token(stop.get_token()).wait(); });
  // Wait until it holds "a" and queues on "z".
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (keys_under(key("z")) < 2 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(keys_under(key("z")), 2);
  EXPECT_EQ(keys_under(key("a")), 1);
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready);
  auto cancelled = pending.get();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled) << cancelled.status().to_string();
  EXPECT_EQ(keys_under(key("a")), 0);
  EXPECT_EQ(keys_under(key("z")), 1);
  ASSERT_TRUE(other.unlock());
  EXPECT_TRUE(lock.try_lock_for(5s));
  EXPECT_TRUE(lock.unlock());
}

TEST_F(MultiLockFixture, GuardedChecksEveryNameInOneTxn) {
  MultiLock lock(client(), {key("g1"), key("g2")});
  MultiHold h = lock.acquire().timeout(10s).wait().value();
  auto ok = h.guarded(Txn().then(Op::put(key("res1"), "v"), Op::put(key("res2"), "v"))).wait();
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(client().get(key("res1")).wait()->kvs.size(), 1u);
  ASSERT_TRUE(lock.release().wait().value());
  auto late = h.guarded(Txn().then(Op::put(key("res1"), "late"))).wait();
  EXPECT_TRUE(late.status().is(Errc::kHoldLost)) << late.status().to_string();
  EXPECT_EQ(client().get(key("res1")).wait()->kvs.at(0).value, "v");
  EXPECT_TRUE(MultiHold().guarded(Txn()).wait().status().is(Errc::kHoldLost));
  EXPECT_TRUE(MultiHold().stop_token().stop_requested());
  EXPECT_FALSE(MultiHold().release().wait().value());
}

TEST_F(MultiLockFixture, LosingOneNameLosesTheMultiHoldAndReleasesTheOthers) {
  MultiLock lock(client(), {key("l1"), key("l2"), key("l3")});
  std::promise<Status> lock_heard, hold_heard;
  auto sub = lock.on_lost([&](const Status& s) { lock_heard.set_value(s); });
  MultiHold h = lock.acquire().timeout(10s).wait().value();
  auto hold_sub = h.on_lost([&](const Status& s) { hold_heard.set_value(s); });
  // Someone else deletes the middle name's key (a forced take-over).
  ASSERT_TRUE(client().del(h.hold(key("l2")).key()).wait().ok());
  auto f = lock_heard.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  const Status why = f.get();
  EXPECT_TRUE(why.is(Errc::kHoldLost)) << why.to_string();
  EXPECT_NE(why.message().find(key("l2")), std::string::npos) << why.to_string();
  auto g = hold_heard.get_future();
  ASSERT_EQ(g.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(h.stop_token().stop_requested());
  EXPECT_FALSE(h.is_held());
  EXPECT_TRUE(h.guarded(Txn().then(Op::put(key("w"), "x"))).wait().status().is(Errc::kHoldLost));
  EXPECT_FALSE(lock.release().wait().value());
  // The names still held were let go.
  EXPECT_EQ(keys_under(key("l1")), 0);
  EXPECT_EQ(keys_under(key("l3")), 0);
  // A listener added after the loss still hears of it.
  std::promise<void> late;
  auto late_sub = h.on_lost([&](const Status&) { late.set_value(); });
  EXPECT_EQ(late.get_future().wait_for(10s), std::future_status::ready);
  // And the lock can be taken again.
  EXPECT_TRUE(lock.try_lock_for(5s));
  EXPECT_TRUE(lock.unlock());
}

TEST_F(MultiLockFixture, ARequestForAnyNameAsksTheWholeMultiHoldOnce) {
  MultiLock lock(client(), {key("q1"), key("q2")});
  std::atomic<int> lock_heard{0}, hold_heard{0};
  std::promise<void> lock_first, hold_first;
  auto sub = lock.on_release_requested([&] {
    if (lock_heard.fetch_add(1) == 0) lock_first.set_value();
  });
  MultiHold h = lock.acquire().timeout(10s).wait().value();
  auto hold_sub = h.on_release_requested([&] {
    if (hold_heard.fetch_add(1) == 0) hold_first.set_value();
  });
  EXPECT_FALSE(h.release_requested().stop_requested());
  DistributedMutex second(client(), key("q2"));
  ASSERT_TRUE(second.request_release().timeout(5s).wait().value());
  ASSERT_EQ(lock_first.get_future().wait_for(10s), std::future_status::ready);
  ASSERT_EQ(hold_first.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(h.release_requested().stop_requested());
  EXPECT_TRUE(h.is_held()) << "a request, not a loss";
  EXPECT_FALSE(h.stop_token().stop_requested());
  EXPECT_TRUE(h.guarded(Txn().then(Op::put(key("w"), "x"))).wait().ok()) << "still fenced by both names";
  // A request for the other name too: the multi-hold was asked already.
  DistributedMutex first(client(), key("q1"));
  ASSERT_TRUE(first.request_release().timeout(5s).wait().value());
  // A listener added after the request runs at once.
  std::promise<void> late;
  auto late_sub = h.on_release_requested([&] { late.set_value(); });
  ASSERT_EQ(late.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(lock.release().wait().value()) << "releasing is the holder's choice; both names were intact";
  EXPECT_EQ(lock_heard.load(), 1);
  EXPECT_EQ(hold_heard.load(), 1);
  EXPECT_EQ(keys_under(key("q1")), 0);
  EXPECT_EQ(keys_under(key("q2")), 0);
  // The next multi-hold starts unasked.
  MultiHold again = lock.acquire().timeout(10s).wait().value();
  EXPECT_FALSE(again.release_requested().stop_requested());
  EXPECT_TRUE(lock.release().wait().value());
  EXPECT_FALSE(MultiHold().release_requested().stop_requested());
}

TEST_F(MultiLockFixture, IsNotRecursiveAndExcludesAPlainMutex) {
  MultiLock lock(client(), {key("r1"), key("r2")});
  ASSERT_TRUE(lock.try_lock());
  auto again = lock.acquire().timeout(2s).wait();
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status().to_string();
  DistributedMutex plain(client(), key("r2"));
  EXPECT_FALSE(plain.try_lock());
  EXPECT_TRUE(lock.unlock());
  EXPECT_TRUE(plain.try_lock());
  EXPECT_TRUE(plain.unlock());
}

TEST_F(MultiLockFixture, CloseWakesAWaiterAndLeavesNothing) {
  DistributedMutex other(client(), key("c2"));
  ASSERT_TRUE(other.try_lock());
  auto lock = std::make_unique<MultiLock>(client(), std::vector<std::string>{key("c1"), key("c2")});
  auto pending = std::async(std::launch::async, [&] { return lock->acquire().timeout(20s).wait(); });
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (keys_under(key("c2")) < 2 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(keys_under(key("c2")), 2);
  lock->close();
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready);
  auto r = pending.get();
  EXPECT_TRUE(r.status().is(Errc::kClosed)) << r.status().to_string();
  const auto gone = std::chrono::steady_clock::now() + 10s;
  while (keys_under(key("c1")) > 0 && std::chrono::steady_clock::now() < gone) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(keys_under(key("c1")), 0);
  EXPECT_TRUE(lock->acquire().wait().status().is(Errc::kClosed));
  EXPECT_TRUE(other.unlock());
}

TEST_F(MultiLockFixture, OppositeOrdersNeverDeadlock) {
  const std::string p = key("p"), q = key("q"), r = key("r");
  std::atomic<int> inside{0}, overlaps{0}, done{0};
  auto worker = [&](std::vector<std::string> names) {
    MultiLock lock(client(), std::move(names));
    for (int i = 0; i < 15; ++i) {
      if (!lock.try_lock_for(20s)) return;
      if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
      std::this_thread::sleep_for(1ms);
      inside.fetch_sub(1);
      if (!lock.unlock()) return;
    }
    done.fetch_add(1);
  };
  std::thread t1(worker, std::vector<std::string>{p, q, r});
  std::thread t2(worker, std::vector<std::string>{r, q, p});
  std::thread t3(worker, std::vector<std::string>{q, p});
  t1.join();
  t2.join();
  t3.join();
  EXPECT_EQ(done.load(), 3);
  EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
}  // namespace etcd::test
