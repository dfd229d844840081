// DistributedAtomicLong against real etcd: values, interoperation with raw
// puts, compare-and-set, foreign values, overflow, exhaustion, and
// concurrent incrementers with and without faults.
#include <algorithm>
#include <atomic>
#include <future>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/metrics.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::AtomicLongOptions;
using recipes::DistributedAtomicLong;

class AtomicLongTest : public SingleMemberTest {
 protected:
  // The options of a client that reaches the member through `proxy`.
  ClientOptions through(const etcd::testing::FaultProxy& proxy) {
    ClientOptions via = options();
    via.endpoints = {proxy.endpoint()};
    return via;
  }
  std::string raw(const std::string& k) {
    auto r = client().get(k).wait().value();
    return r.kvs.empty() ? std::string("<absent>") : r.kvs[0].value;
  }
};

TEST_F(AtomicLongTest, AbsentReadsAsZeroAndAddsReturnWhatTheyCommitted) {
  const std::string name = key("basic");
  DistributedAtomicLong c(client(), name);
  EXPECT_EQ(c.identity(), "DistributedAtomicLong[" + name + "]");
  EXPECT_EQ(c.get().wait().value(), 0);
  EXPECT_EQ(raw(name), "<absent>") << "a read writes nothing";
  EXPECT_EQ(c.increment().wait().value(), 1);
  EXPECT_EQ(c.add(10).wait().value(), 11);
  EXPECT_EQ(c.decrement().wait().value(), 10);
  EXPECT_EQ(c.add(-15).wait().value(), -5);
  EXPECT_EQ(raw(name), "-5");
  c.set(42).wait().value();
  EXPECT_EQ(raw(name), "42");
  EXPECT_EQ(c.get().wait().value(), 42);
}

TEST_F(AtomicLongTest, InteroperatesWithRawPutsAndAnotherObject) {
  const std::string name = key("interop");
  (void)client().put(name, "41").wait().value();
  DistributedAtomicLong a(client(), name);
  DistributedAtomicLong b(client(), name);
  EXPECT_EQ(a.get().wait().value(), 41);
  EXPECT_EQ(a.increment().wait().value(), 42);
  EXPECT_EQ(raw(name), "42");
  // b has seen nothing: its first guard (absent) fails and brings the value.
  EXPECT_EQ(b.increment().wait().value(), 43);
  (void)client().put(name, "100").wait().value();
  // a's cache is stale now: one failed guard, then the add.
  EXPECT_EQ(a.add(5).wait().value(), 105);
}

TEST_F(AtomicLongTest, AnUncontendedAddWithACurrentCacheIsOneRoundTrip) {
  const std::string name = key("one-rtt");
  DistributedAtomicLong c(client(), name);
  (void)c.get().wait().value();
  for (int i = 1; i <= 5; ++i) {
    const auto before = client().stats().rpcs_started;
    EXPECT_EQ(c.increment().wait().value(), i);
    EXPECT_EQ(client().stats().rpcs_started - before, 1u) << "add #" << i;
  }
  // Absent and never seen: the first guard assumes absence, so one too.
  DistributedAtomicLong fresh(client(), key("one-rtt-fresh"));
  const auto before = client().stats().rpcs_started;
  EXPECT_EQ(fresh.increment().wait().value(), 1);
  EXPECT_EQ(client().stats().rpcs_started - before, 1u);
}

TEST_F(AtomicLongTest, CompareAndSet) {
  const std::string name = key("cas");
  DistributedAtomicLong c(client(), name);
  EXPECT_FALSE(c.compare_and_set(5, 6).wait().value()) << "absent is 0, not 5";
  EXPECT_EQ(raw(name), "<absent>");
  EXPECT_TRUE(c.compare_and_set(0, 5).wait().value()) << "absent is 0";
  EXPECT_EQ(raw(name), "5");
  EXPECT_FALSE(c.compare_and_set(0, 7).wait().value());
  EXPECT_TRUE(c.compare_and_set(5, -6).wait().value());
  EXPECT_EQ(c.get().wait().value(), -6);
  (void)client().put(name, "0").wait().value();
  EXPECT_TRUE(c.compare_and_set(0, 1).wait().value()) << "a stored 0 is 0 too";
  EXPECT_EQ(raw(name), "1");
  // After a CAS, the cache is current: the next add is one round trip.
  const auto before = client().stats().rpcs_started;
  EXPECT_EQ(c.increment().wait().value(), 2);
  EXPECT_EQ(client().stats().rpcs_started - before, 1u);
}

TEST_F(AtomicLongTest, AForeignValueIsADecodeErrorNamingTheKeyAndIsNeverOverwritten) {
  const std::string name = key("foreign");
  (void)client().put(name, "+5").wait().value();
  DistributedAtomicLong c(client(), name);
  for (auto st : {c.get().wait().status(), c.increment().wait().status(), c.compare_and_set(5, 6).wait().status(),
                  c.compare_and_set(0, 6).wait().status()}) {
    EXPECT_TRUE(st.is(Errc::kDecodeFailed)) << st.to_string();
    EXPECT_EQ(st.code(), StatusCode::kDataLoss);
    EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
  }
  EXPECT_EQ(raw(name), "+5");
  c.set(5).wait().value();  // set() is the repair
  EXPECT_EQ(c.increment().wait().value(), 6);
}

TEST_F(AtomicLongTest, OverflowIsAnErrorBeforeAnyWrite) {
  const std::string name = key("overflow");
  DistributedAtomicLong c(client(), name);
  c.set(std::numeric_limits<int64_t>::max()).wait().value();
  auto st = c.increment().wait().status();
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.to_string();
  EXPECT_NE(st.message().find("overflows int64"), std::string::npos) << st.message();
  EXPECT_EQ(raw(name), "9223372036854775807");
  c.set(std::numeric_limits<int64_t>::min()).wait().value();
  EXPECT_EQ(c.decrement().wait().status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(c.add(std::numeric_limits<int64_t>::max()).wait().value(), -1);
}

TEST_F(AtomicLongTest, ContentionPastMaxAttemptsFailsAndWritesNothing) {
  const std::string name = key("exhausted");
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  AtomicLongOptions o;
  o.max_attempts = 1;
  o.recipe.metrics = metrics;
  DistributedAtomicLong c(client(), name, o);
  EXPECT_EQ(c.get().wait().value(), 0);
  (void)client().put(name, "7").wait().value();  // a concurrent writer
  auto st = c.increment().wait().status();
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st.to_string();
  EXPECT_NE(st.message().find("gave up after 1 attempts under contention"), std::string::npos) << st.message();
  EXPECT_EQ(raw(name), "7") << "nothing written by the failed call";
  EXPECT_EQ(metrics->value("etcd_recipes_counter_gave_up_total", {{"counter", name}}), 1);
  // The failed guard brought the value: the next add commits at once.
  EXPECT_EQ(c.increment().wait().value(), 8);
}

TEST_F(AtomicLongTest, BadOptionsAreReportedByEveryOperation) {
  AtomicLongOptions o;
  o.max_attempts = 0;
  DistributedAtomicLong c(client(), key("bad"), o);
  EXPECT_THROW(c.start(), Error);
  EXPECT_TRUE(c.increment().wait().status().is(Errc::kBadArgument));
  EXPECT_TRUE(c.get().wait().status().is(Errc::kBadArgument));
}

// 16 objects (as 16 processes) × `per` increments on `clients`. Returns the
// values the successful adds committed; counts unknown outcomes.
struct IncrementRun {
  std::vector<int64_t> committed;
  int unknown = 0;
  int other_failures = 0;
  std::string first_failure;
};
IncrementRun increment_concurrently(std::vector<Client*> clients, const std::string& name, int threads, int per,
                                    const AtomicLongOptions& o) {
  IncrementRun run;
  std::mutex mu;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      DistributedAtomicLong c(*clients[t % clients.size()], name, o);
      for (int i = 0; i < per; ++i) {
        auto r = c.increment().timeout(20s).wait();
        std::lock_guard lock(mu);
        if (r.ok()) {
          run.committed.push_back(*r);
        } else if (r.status().is(Errc::kOutcomeUnknown)) {
          ++run.unknown;
        } else {
          ++run.other_failures;
          if (run.first_failure.empty()) run.first_failure = r.status().to_string();
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  return run;
}

// The adds of one client to one name are combined: while one is in
// flight, those that come (from any object of that client and name) wait,
// then go out in one Txn, each told the value its own increment reached in
// the order they came; one whose increment would overflow fails alone,
// before anything is written for it.
TEST_F(AtomicLongTest, AddsThatComeWhileOneIsInFlightGoOutTogetherInOneTxn) {
  const std::string name = key("combined");
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  AtomicLongOptions o;
  o.recipe.metrics = metrics;
  Client c(through(*proxy));
  DistributedAtomicLong a(c, name, o);
  DistributedAtomicLong b(c, name, o);
  DistributedAtomicLong d(c, name, o);
  const int64_t top = std::numeric_limits<int64_t>::max();
  a.set(top - 10).wait().value();
  const recipes::Labels labels{{"counter", name}};
  auto txns = [&] { return metrics->value("etcd_recipes_counter_txns_total", labels); };
  proxy->set_delay(std::chrono::milliseconds(300));
  std::promise<Result<int64_t>> first, second, third, fourth;
  a.add(1).timeout(10s).then([&](Result<int64_t> r) { first.set_value(std::move(r)); });
  ASSERT_TRUE(eventually([&] { return txns() == 1; }, 5s)) << "the first add was not sent";
  b.add(5).timeout(10s).then([&](Result<int64_t> r) { second.set_value(std::move(r)); });
  d.add(100).timeout(10s).then([&](Result<int64_t> r) { third.set_value(std::move(r)); });  // overflows
  a.add(-3).timeout(10s).then([&](Result<int64_t> r) { fourth.set_value(std::move(r)); });
  EXPECT_EQ(first.get_future().get().value(), top - 9);
  EXPECT_EQ(second.get_future().get().value(), top - 4);
  auto overflow = third.get_future().get();
  EXPECT_EQ(overflow.status().code(), StatusCode::kOutOfRange) << overflow.status().to_string();
  EXPECT_EQ(fourth.get_future().get().value(), top - 7);
  EXPECT_EQ(txns(), 2) << "the three adds that waited went out in one Txn";
  EXPECT_EQ(metrics->value("etcd_recipes_counter_adds_total", labels), 3);
  proxy->pass();
  EXPECT_EQ(raw(name), std::to_string(top - 7));
}

// Sixteen objects of one client adding at once: far fewer Txns than adds,
// no conflicts (nobody else writes), every value distinct, the sum exact.
TEST_F(AtomicLongTest, SixteenObjectsOfOneClientShareTheirTxns) {
  const std::string name = key("shared");
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  AtomicLongOptions o;
  o.recipe.metrics = metrics;
  IncrementRun run = increment_concurrently({&client()}, name, 16, 100, o);
  EXPECT_EQ(run.other_failures, 0) << run.first_failure;
  ASSERT_EQ(run.committed.size(), 1600u);
  std::set<int64_t> distinct(run.committed.begin(), run.committed.end());
  EXPECT_EQ(distinct.size(), 1600u);
  EXPECT_EQ(*distinct.rbegin(), 1600);
  EXPECT_EQ(raw(name), "1600");
  const recipes::Labels labels{{"counter", name}};
  const double txns = metrics->value("etcd_recipes_counter_txns_total", labels);
  std::cout << "[ counter  ] 1600 adds in " << txns << " Txns\n";
  EXPECT_LT(txns, 1600 / 2) << "the adds were not combined";
  EXPECT_LE(metrics->value("etcd_recipes_counter_conflicts_total", labels), 1) << "only a stale first guard";
}

TEST_F(AtomicLongTest, SixteenIncrementersEndAtExactly3200WithDistinctValues) {
  const std::string name = key("sixteen");
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  AtomicLongOptions o;
  o.recipe.metrics = metrics;
  Client second(options());
  IncrementRun run = increment_concurrently({&client(), &second}, name, 16, 200, o);
  EXPECT_EQ(run.other_failures, 0) << run.first_failure;
  EXPECT_EQ(run.unknown, 0);
  ASSERT_EQ(run.committed.size(), 3200u);
  std::set<int64_t> distinct(run.committed.begin(), run.committed.end());
  EXPECT_EQ(distinct.size(), 3200u) << "every increment committed its own value";
  EXPECT_EQ(*distinct.begin(), 1);
  EXPECT_EQ(*distinct.rbegin(), 3200);
  EXPECT_EQ(raw(name), "3200");
  const double conflicts = metrics->value("etcd_recipes_counter_conflicts_total", {{"counter", name}});
  std::cout << "[ counter  ] " << conflicts / 3200.0 << " failed guards per add\n";
  // The objects closed: their receipts are gone.
  EXPECT_TRUE(eventually([&] {
    return client().get(name + "/receipts/", GetOptions{.prefix = true, .count_only = true}).wait().value().count == 0;
  }));
}

// Links reset under the incrementers: attempts end with unknown outcomes,
// and each is resolved by its receipt: the counter ends at exactly 3,200,
// every add reporting the value it committed.
TEST_F(AtomicLongTest, SixteenIncrementersUnderLinkResetsEndAtExactly3200) {
  const std::string name = key("faults");
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  AtomicLongOptions o;
  o.recipe.metrics = metrics;
  Client a(through(*proxy));
  Client b(through(*proxy));
  std::atomic<bool> stop{false};
  std::thread chaos([&] {
    int i = 0;
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(40 + 37 * (i % 3)));
      if (i++ % 4 == 3) {
        proxy->set_delay(std::chrono::milliseconds(5));
      } else {
        proxy->pass();
        proxy->reset_all();
      }
    }
    proxy->pass();
  });
  IncrementRun run = increment_concurrently({&a, &b}, name, 16, 200, o);
  stop = true;
  chaos.join();
  EXPECT_EQ(run.other_failures, 0) << run.first_failure;
  EXPECT_EQ(run.unknown, 0);
  ASSERT_EQ(run.committed.size(), 3200u);
  std::set<int64_t> distinct(run.committed.begin(), run.committed.end());
  EXPECT_EQ(distinct.size(), 3200u) << "a value reported by two adds";
  EXPECT_EQ(*distinct.rbegin(), 3200);
  EXPECT_EQ(raw(name), "3200") << "an add applied twice, or one was lost";
  const double resolved = metrics->value("etcd_recipes_counter_unknown_resolved_total", {{"counter", name}});
  std::cout << "[ counter  ] 3200 committed, " << resolved << " unknown attempts resolved by their receipts\n";
  EXPECT_GT(resolved, 0) << "the faults never made an outcome unknown";
}

class AtomicLongClusterTest : public ThreeMemberTest {};

// A member killed (the leader, where the clients start) while 16 objects
// increment 200 times each: the adds carry on through the others, and the
// counter ends at exactly 3,200.
TEST_F(AtomicLongClusterTest, IncrementsSurviveALeaderKill) {
  const int leader = cluster_->wait_for_leader(10s);
  Client a(options_starting_at(leader));
  Client b(options_starting_at((leader + 1) % 3));
  const std::string name = "/t/AtomicLongClusterTest/kill";
  std::thread killer([&] {
    std::this_thread::sleep_for(300ms);
    cluster_->kill(leader);
  });
  IncrementRun run = increment_concurrently({&a, &b}, name, 16, 200, AtomicLongOptions());
  killer.join();
  EXPECT_EQ(run.other_failures, 0) << run.first_failure;
  EXPECT_EQ(run.unknown, 0);
  ASSERT_EQ(run.committed.size(), 3200u);
  std::set<int64_t> distinct(run.committed.begin(), run.committed.end());
  EXPECT_EQ(distinct.size(), 3200u);
  auto stored = b.get(name).wait().value();
  ASSERT_EQ(stored.kvs.size(), 1u);
  EXPECT_EQ(stored.kvs[0].value, "3200") << "exactly the sum, across the leader kill";
}

}  // namespace
}  // namespace etcd::test
