// etcd::Task, spawn, sync_wait and sleep_for, driven by real client calls.
#include <dirent.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "etcd/task.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using TaskTest = SingleMemberTest;

size_t thread_count() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

Task<int64_t> put_then_read(Client client, std::string k) {
  auto put = co_await client.put(k, "v1");
  const int64_t rev = put.value().header.revision;
  auto got = co_await client.get(k);
  EXPECT_EQ(got.value().first()->mod_revision, rev);
  co_return rev;
}

Task<int64_t> nested(Client client, std::string k) {
  // Awaiting a Task from a Task; the value comes back up.
  const int64_t a = co_await put_then_read(client, k);
  const int64_t b = co_await put_then_read(client, k);
  co_return b - a;
}

TEST_F(TaskTest, SyncWaitRunsAChainOfTasksOverClientCalls) { EXPECT_EQ(sync_wait(nested(client(), key("chain"))), 1); }

Task<void> throws_after_a_call(Client client, std::string k) {
  (void)co_await client.put(k, "x");
  throw std::runtime_error("boom");
}

Task<int> catches(Client client, std::string k) {
  try {
    co_await throws_after_a_call(client, k);
  } catch (const std::runtime_error& e) {
    co_return std::string(e.what()) == "boom" ? 1 : 2;
  }
  co_return 3;
}

TEST_F(TaskTest, ExceptionsPropagateToTheAwaiterAndToSyncWait) {
  EXPECT_EQ(sync_wait(catches(client(), key("ex"))), 1);
  EXPECT_THROW(sync_wait(throws_after_a_call(client(), key("ex2"))), std::runtime_error);
  // A failed call's value() throws etcd::Error through the task.
  auto bad = [](Client c) -> Task<int64_t> { co_return (co_await c.put("", "empty key")).value().header.revision; };
  try {
    sync_wait(bad(client()));
    FAIL() << "expected etcd::Error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.status().is(Errc::kBadArgument)) << e.status().to_string();
  }
}

TEST_F(TaskTest, ATaskThatIsNeverAwaitedNeverRuns) {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  {
    auto t = [](std::shared_ptr<std::atomic<bool>> r) -> Task<void> {
      r->store(true);
      co_return;
    }(ran);
    EXPECT_TRUE(t.valid());
  }
  EXPECT_FALSE(ran->load());
}

TEST_F(TaskTest, SpawnRunsDetachedOnTheClientExecutorAndReportsTheOutcome) {
  Mailbox<std::exception_ptr> done;
  auto body = [](Client c, std::string k) -> Task<void> {
    auto r = co_await c.put(k, "spawned");
    r.value();
  };
  spawn(client(), body(client(), key("spawned")), [&](std::exception_ptr e) { done.put(e); });
  auto outcome = done.take(10s);
  ASSERT_TRUE(outcome.has_value()) << "spawned task did not finish";
  EXPECT_FALSE(*outcome);
  EXPECT_EQ(client().get(key("spawned")).wait().value().first()->value, "spawned");

  spawn(client(), throws_after_a_call(client(), key("spawned2")), [&](std::exception_ptr e) { done.put(e); });
  auto failed = done.take(10s);
  ASSERT_TRUE(failed.has_value());
  EXPECT_TRUE(*failed) << "the task's exception must reach `done`";
}

TEST_F(TaskTest, SleepForWaitsAtLeastTheDuration) {
  auto sleeper = [](Client c, std::string k) -> Task<Clock::duration> {
    const auto start = Clock::now();
    co_await sleep_for(std::chrono::milliseconds(150));
    const auto slept = Clock::now() - start;
    (void)co_await c.put(k, "after sleep");  // calls still work after a sleep
    co_return slept;
  };
  EXPECT_GE(sync_wait(sleeper(client(), key("s"))), std::chrono::milliseconds(150));
  // Spawned (so on the client's executor) as well.
  Mailbox<Clock::duration> slept;
  spawn(client(), [](Mailbox<Clock::duration>* out) -> Task<void> {
    const auto start = Clock::now();
    co_await sleep_for(std::chrono::milliseconds(100));
    out->put(Clock::now() - start);
  }(&slept));
  auto d = slept.take(10s);
  ASSERT_TRUE(d.has_value());
  EXPECT_GE(*d, std::chrono::milliseconds(100));
}

TEST_F(TaskTest, SleepForWithAStopTokenEndsEarlyWithCancelled) {
  std::stop_source stop;
  Mailbox<std::pair<Status, Clock::duration>> out;
  spawn(client(), [](std::stop_token st, Mailbox<std::pair<Status, Clock::duration>>* o) -> Task<void> {
    const auto start = Clock::now();
    Status s = co_await sleep_for(std::chrono::seconds(30), st);
    o->put({s, Clock::now() - start});
  }(stop.get_token(), &out));
  std::this_thread::sleep_for(50ms);  // let it start sleeping; the stop works either way
  stop.request_stop();
  auto r = out.take(5s);
  ASSERT_TRUE(r.has_value()) << "a stop must end the sleep";
  EXPECT_EQ(r->first.code(), StatusCode::kCancelled) << r->first.to_string();
  EXPECT_LT(r->second, 5s);

  // Already requested: ends at once. Not requested: OK after the time.
  auto check = [](std::stop_token st, std::chrono::milliseconds d) -> Task<Status> {
    co_return co_await sleep_for(d, st);
  };
  EXPECT_EQ(sync_wait(check(stop.get_token(), 30s)).code(), StatusCode::kCancelled);
  std::stop_source fresh;
  EXPECT_TRUE(sync_wait(check(fresh.get_token(), 20ms)).ok());
}

TEST_F(TaskTest, ManySleepersShareThreads) {
  const size_t before = thread_count();
  constexpr int kSleepers = 300;
  std::atomic<int> finished{0};
  std::stop_source stop;
  for (int i = 0; i < kSleepers; ++i) {
    spawn(client(), [](std::stop_token st, std::atomic<int>* f) -> Task<void> {
      (void)co_await sleep_for(std::chrono::seconds(30), st);
      f->fetch_add(1);
    }(stop.get_token(), &finished));
  }
  std::this_thread::sleep_for(100ms);
  const size_t during = thread_count();
  EXPECT_LE(during, before + 2) << "sleepers must not get threads of their own";
  stop.request_stop();
  EXPECT_TRUE(eventually([&] { return finished.load() == kSleepers; }, 10s)) << finished.load();
}

TEST_F(TaskTest, TxnBuilderTemporariesInsideCoAwaitAreDestroyedOnce) {
  // GCC 12 destroyed a defaulted class-type argument (DeleteOptions) twice
  // in exactly this expression: free(): invalid pointer, or an ASan report.
  auto body = [](Client c, std::string k) -> Task<int64_t> {
    (void)co_await c.put(k, "v");
    auto r = co_await c.txn(Txn().when(Compare::exists(k)).then(Op::del(k)).otherwise(Op::get(k)));
    auto again = co_await c.txn(Txn().then(Op::put(k, "w"), Op::get(k)));
    EXPECT_TRUE(again.ok());
    co_return r.value().succeeded ? r.value().responses.at(0).del().deleted : -1;
  };
  EXPECT_EQ(sync_wait(body(client(), key("txn"))), 1);
}

TEST_F(TaskTest, RangeForOverAWaitedGetDoesNotDangle) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client().put(key("r/") + std::to_string(i), "v").wait().ok());
  GetOptions prefix;
  prefix.prefix = true;
  int seen = 0;
  // The README's chaining style: Result dies at the end of the range-init.
  for (auto& kv : client().get(key("r/"), prefix).wait().value().kvs) {
    EXPECT_EQ(kv.value, "v");
    ++seen;
  }
  EXPECT_EQ(seen, 3);
}

}  // namespace
}  // namespace etcd::test
