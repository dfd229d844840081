// DistributedWorkQueue and TypedWorkQueue against a real etcd member.
#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "etcd/recipes/metrics.h"
#include "etcd/recipes/work_queue.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DeadLetter;
using recipes::DistributedWorkQueue;
using recipes::TypedWorkQueue;
using recipes::WorkItem;
using recipes::WorkQueueOptions;

WorkQueueOptions visibility(std::chrono::seconds s, int max_deliveries = 5) {
  WorkQueueOptions o;
  o.visibility_timeout = s;
  o.max_deliveries = max_deliveries;
  return o;
}

// Refuses to encode negative numbers.
struct NonNegative {
  static Result<std::string> encode(int64_t v) {
    if (v < 0) return InvalidArgument("negative");
    return std::to_string(v);
  }
  static Result<int64_t> decode(std::string_view bytes, std::string_view key) {
    return recipes::IntegerCodec<int64_t>::decode(bytes, key);
  }
};

class WorkQueueTest : public SingleMemberTest {
 protected:
  int64_t count(const std::string& prefix) {
    return client().get(prefix, {.prefix = true, .count_only = true}).wait()->count;
  }
  std::optional<KeyValue> get(const std::string& k) {
    auto r = client().get(k).wait().value();
    if (r.kvs.empty()) return std::nullopt;
    return r.kvs.front();
  }
};

TEST_F(WorkQueueTest, ReceiveClaimsUnderTheConsumersLeaseAndAckDeletesTheItem) {
  const std::string name = key("basic");
  DistributedWorkQueue wq(client(), name);
  EXPECT_EQ(wq.identity(), "DistributedWorkQueue[" + name + "]");
  const auto e = wq.enqueue_all({"a", "b", "c"}).wait().value();
  ASSERT_EQ(e.keys.size(), 3u);
  EXPECT_EQ(wq.size().wait().value(), 3);

  WorkItem a = wq.receive().timeout(10s).wait().value();
  EXPECT_EQ(a.value(), "a");
  EXPECT_EQ(a.key(), e.keys[0]);
  EXPECT_EQ(a.key(), name + "/items/" + a.id());
  EXPECT_EQ(a.attempt(), 1);
  EXPECT_FALSE(a.stop_token().stop_requested());
  // The claim: under NAME/claims/<id>, bound to a lease, created at the
  // claim's revision; the item stays where it was.
  auto claim = get(name + "/claims/" + a.id());
  ASSERT_TRUE(claim.has_value());
  EXPECT_NE(claim->lease, 0);
  EXPECT_EQ(claim->create_revision, a.claim());
  EXPECT_TRUE(get(a.key()).has_value());
  EXPECT_EQ(wq.size().wait().value(), 3);

  // FIFO: a claimed item is skipped, not waited for.
  WorkItem b = wq.receive().timeout(10s).wait().value();
  EXPECT_EQ(b.value(), "b");

  EXPECT_TRUE(a.ack().wait().value());
  EXPECT_TRUE(a.stop_token().stop_requested()) << "the claim ended";
  EXPECT_FALSE(get(a.key()).has_value());
  EXPECT_FALSE(get(name + "/claims/" + a.id()).has_value());
  EXPECT_FALSE(a.ack().wait().value()) << "a second ack finds no claim";
  EXPECT_TRUE(b.ack().wait().value());
  auto c = wq.try_receive().wait().value();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->value(), "c");
  EXPECT_TRUE(c->ack().wait().value());
  EXPECT_EQ(wq.try_receive().wait().value(), std::nullopt);
  EXPECT_EQ(wq.size().wait().value(), 0);
}

TEST_F(WorkQueueTest, RequeueKeepsThePlaceAndCountsTheDelivery) {
  const std::string name = key("requeue");
  DistributedWorkQueue wq(client(), name);
  (void)wq.enqueue_all({"first", "second"}).wait().value();
  WorkItem first = wq.receive().timeout(10s).wait().value();
  EXPECT_EQ(first.value(), "first");
  EXPECT_TRUE(first.requeue().wait().value());
  EXPECT_FALSE(first.ack().wait().value()) << "requeued: the claim is gone";
  WorkItem again = wq.receive().timeout(10s).wait().value();
  EXPECT_EQ(again.value(), "first") << "back in its place, before 'second'";
  EXPECT_EQ(again.attempt(), 2);
  EXPECT_NE(again.claim(), first.claim());
  EXPECT_TRUE(again.ack().wait().value());
}

TEST_F(WorkQueueTest, AStaleAckFailsAfterARedelivery) {
  const std::string name = key("stale");
  DistributedWorkQueue a(client(), name, visibility(2s));
  DistributedWorkQueue b(client(), name, visibility(2s));
  (void)a.enqueue("job").wait().value();
  WorkItem first = a.receive().timeout(10s).wait().value();
  // a's lease ends (as if it had been cut off for the visibility timeout).
  const int64_t lease = get(name + "/claims/" + first.id())->lease;
  (void)client().lease_revoke(lease).wait().value();
  WorkItem second = b.receive().timeout(10s).wait().value();
  EXPECT_EQ(second.id(), first.id());
  EXPECT_EQ(second.attempt(), 2);
  EXPECT_TRUE(eventually([&] { return first.stop_token().stop_requested(); }, 10s))
      << "the first delivery learns that its claim is gone";
  EXPECT_FALSE(first.ack().wait().value()) << "guarded by the claim, not the consumer";
  EXPECT_FALSE(first.requeue().wait().value());
  EXPECT_TRUE(get(second.key()).has_value()) << "the stale ack deleted nothing";
  EXPECT_TRUE(second.ack().wait().value());
}

TEST_F(WorkQueueTest, AClaimUnderTheConsumersLeaseThatItNeverGotIsGivenBack) {
  // What a take leaves behind when it applied but its consumer never
  // learned so (the outcome unknown twice): a claim under the consumer's
  // lease, which lives as long as the consumer does. Written here by hand,
  // exactly as the take writes it.
  const std::string name = key("orphan");
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  WorkQueueOptions with_metrics = visibility(30s);
  with_metrics.recipe.metrics = metrics;
  DistributedWorkQueue a(client(), name, with_metrics);
  DistributedWorkQueue b(client(), name, visibility(30s));
  (void)a.enqueue("warm-up").wait().value();
  WorkItem warm = a.receive().timeout(10s).wait().value();
  const int64_t lease = get(name + "/claims/" + warm.id())->lease;
  ASSERT_TRUE(warm.ack().wait().value());

  const std::string job = a.enqueue("job").wait().value().keys.at(0);
  const std::string id = job.substr((name + "/items/").size());
  Txn claim;
  claim.when(Compare::create_revision(name + "/claims/" + id) == 0)
      .then(Op::put(name + "/claims/" + id, "orphan", PutOptions{.lease = lease}),
            Op::put(job, "", PutOptions{.ignore_value = true}));
  ASSERT_TRUE(client().txn(std::move(claim)).wait()->succeeded);

  // `a` sees a claim under its lease that no take of its was given, and
  // deletes it: the item is delivered again, here to `b`, while `a` lives.
  WorkItem again = b.receive().timeout(10s).wait().value();
  EXPECT_EQ(again.value(), "job");
  EXPECT_EQ(again.attempt(), 2) << "the orphaned claim counted as a delivery";
  EXPECT_NE(get(name + "/claims/" + id)->lease, lease);
  EXPECT_TRUE(again.ack().wait().value());
  EXPECT_EQ(metrics->value("etcd_recipes_workqueue_orphaned_claims_released_total", {{"queue", name}}), 1);
}

TEST_F(WorkQueueTest, CloseGivesUnackedItemsBackAtOnce) {
  const std::string name = key("close");
  auto a = std::make_unique<DistributedWorkQueue>(client(), name, visibility(60s));
  DistributedWorkQueue b(client(), name, visibility(60s));
  (void)a->enqueue("job").wait().value();
  WorkItem held = a->receive().timeout(10s).wait().value();
  auto next = b.receive().timeout(20s).future();
  EXPECT_EQ(next.wait_for(300ms), std::future_status::timeout) << "claimed: not ready";
  const auto closed_at = Clock::now();
  a->close();
  ASSERT_EQ(next.wait_for(10s), std::future_status::ready);
  auto got = next.get();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->id(), held.id());
  EXPECT_LT(Clock::now() - closed_at, 5s) << "far sooner than the 60 s visibility timeout";
  EXPECT_TRUE(held.stop_token().stop_requested());
  auto late = held.ack().wait();
  ASSERT_FALSE(late.ok());
  EXPECT_TRUE(late.status().is(Errc::kClosed)) << late.status().to_string();
  EXPECT_TRUE(got->ack().wait().value());
}

TEST_F(WorkQueueTest, ACutOffConsumersItemComesBackAfterTheVisibilityTimeout) {
  const std::string name = key("cut");
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions via_proxy = options();
  via_proxy.endpoints = {proxy->endpoint()};
  Client flaky(via_proxy);
  DistributedWorkQueue a(flaky, name, visibility(2s));
  DistributedWorkQueue b(client(), name, visibility(2s));
  (void)b.enqueue("job").wait().value();
  WorkItem held = a.receive().timeout(10s).wait().value();
  const auto ttl = client().lease_time_to_live(get(name + "/claims/" + held.id())->lease).wait().value();
  auto next = b.receive().timeout(30s).future();
  const auto cut_at = Clock::now();
  proxy->blackhole();
  ASSERT_EQ(next.wait_for(20s), std::future_status::ready);
  const auto redelivered = Clock::now() - cut_at;
  auto got = next.get();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->id(), held.id());
  EXPECT_EQ(got->attempt(), 2);
  // The lease had up to its TTL left when the link was cut.
  EXPECT_LE(redelivered, std::chrono::seconds(ttl.granted_ttl) + 1s)
      << std::chrono::duration_cast<std::chrono::milliseconds>(redelivered).count() << " ms";
  ::testing::Test::RecordProperty(
      "redelivery_ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(redelivered).count()));
  EXPECT_TRUE(eventually([&] { return held.stop_token().stop_requested(); }, 10s));
  EXPECT_TRUE(got->ack().wait().value());
  proxy->pass();
  // a heals: a new lease, and it receives again.
  (void)b.enqueue("after").wait().value();
  auto after = a.receive().timeout(20s).wait();
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(after->value(), "after");
  EXPECT_TRUE(after->ack().wait().value());
}

TEST_F(WorkQueueTest, AnItemDeliveredMaxDeliveriesTimesGoesToTheDeadLetters) {
  const std::string name = key("dead");
  DistributedWorkQueue wq(client(), name, visibility(10s, 2));
  (void)wq.enqueue_all({"bad", "good"}).wait().value();
  for (int attempt = 1; attempt <= 2; ++attempt) {
    WorkItem item = wq.receive().timeout(10s).wait().value();
    ASSERT_EQ(item.value(), "bad");
    EXPECT_EQ(item.attempt(), attempt);
    EXPECT_TRUE(item.requeue().wait().value());  // a handler that always fails
  }
  // Its third delivery would exceed max_deliveries: it is moved, and the
  // receive gets the next item.
  WorkItem good = wq.receive().timeout(10s).wait().value();
  EXPECT_EQ(good.value(), "good");
  EXPECT_TRUE(good.ack().wait().value());
  std::vector<DeadLetter> dead = wq.dead_letters().wait().value();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].value, "bad");
  EXPECT_EQ(dead[0].deliveries, 2);
  EXPECT_NE(dead[0].reason.find("max_deliveries 2"), std::string::npos) << dead[0].reason;
  EXPECT_EQ(dead[0].key, name + "/dead/" + dead[0].id);
  EXPECT_LE(std::chrono::system_clock::now() - dead[0].since, 60s);
  EXPECT_EQ(wq.size().wait().value(), 0);

  // Requeued from the dead letters with fresh deliveries.
  EXPECT_TRUE(wq.requeue_dead(dead[0].id).wait().value());
  EXPECT_FALSE(wq.requeue_dead(dead[0].id).wait().value()) << "no such dead letter any more";
  WorkItem back = wq.receive().timeout(10s).wait().value();
  EXPECT_EQ(back.value(), "bad");
  EXPECT_EQ(back.attempt(), 1);
  EXPECT_TRUE(back.requeue().wait().value());
  back = wq.receive().timeout(10s).wait().value();
  EXPECT_TRUE(back.requeue().wait().value());
  EXPECT_EQ(wq.receive_for(500ms), std::nullopt);
  dead = wq.dead_letters().wait().value();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_TRUE(wq.purge_dead(dead[0].id).wait().value());
  EXPECT_FALSE(wq.purge_dead(dead[0].id).wait().value());
  EXPECT_TRUE(wq.dead_letters().wait().value().empty());
  auto bad = wq.purge_dead("a/b").wait();
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().is(Errc::kBadArgument));
}

TEST_F(WorkQueueTest, APoisonValueGoesToTheDeadLettersWithTheDecodeError) {
  const std::string name = key("poison");
  TypedWorkQueue<int64_t> wq(client(), name);
  (void)client().put(name + "/items/0-poison", "not a number").wait().value();
  (void)wq.enqueue(42).wait().value();
  auto item = wq.receive().timeout(10s).wait().value();
  EXPECT_EQ(item.value(), 42);
  EXPECT_TRUE(item.ack().wait().value());
  auto dead = wq.dead_letters().wait().value();
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].id, "0-poison");
  EXPECT_EQ(dead[0].value, "not a number") << "nothing lost";
  EXPECT_NE(dead[0].reason.find("poison"), std::string::npos) << dead[0].reason;
  EXPECT_NE(dead[0].reason.find(name + "/items/0-poison"), std::string::npos) << "names the key: " << dead[0].reason;
  bool recorded = false;
  for (const auto& e : wq.errors()) recorded = recorded || e.is(Errc::kDecodeFailed);
  EXPECT_TRUE(recorded);
  // A value the codec cannot encode is refused before any write.
  TypedWorkQueue<int64_t, NonNegative> counts(client(), key("nonneg"));
  auto refused = counts.enqueue_all({1, -1}).wait();
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().is(Errc::kBadArgument));
  EXPECT_EQ(count(key("nonneg") + "/"), 0) << "none of the values";
}

TEST_F(WorkQueueTest, DelayedItemsAreNeitherEarlyNorMoreThanOneSecondLate) {
  const std::string name = key("delay");
  DistributedWorkQueue producer(client(), name);
  DistributedWorkQueue consumer(client(), name);
  auto parked = consumer.receive().timeout(20s).future();
  std::this_thread::sleep_for(100ms);  // the consumer is parked on its view
  const auto sent = Clock::now();
  (void)producer.enqueue("later", 1500ms).wait().value();
  (void)producer.enqueue("now").wait().value();
  ASSERT_EQ(parked.wait_for(10s), std::future_status::ready);
  auto now = parked.get();
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->value(), "now") << "the delayed item is not ready yet";
  EXPECT_TRUE(now->ack().wait().value());
  auto later = consumer.receive().timeout(20s).wait().value();
  const auto waited = Clock::now() - sent;
  EXPECT_EQ(later.value(), "later");
  EXPECT_GE(waited, 1500ms);
  EXPECT_LE(waited, 2500ms) << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms";
  // Requeued with a delay: back after it, still counted.
  const auto requeued = Clock::now();
  EXPECT_TRUE(later.requeue(800ms).wait().value());
  auto again = consumer.receive().timeout(20s).wait().value();
  EXPECT_GE(Clock::now() - requeued, 800ms);
  EXPECT_LE(Clock::now() - requeued, 1800ms);
  EXPECT_EQ(again.attempt(), 2);
  EXPECT_TRUE(again.ack().wait().value());
  auto negative = producer.enqueue("x", -1ms).wait();
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(negative.status().is(Errc::kBadArgument));
}

TEST_F(WorkQueueTest, EachItemGoesToOneOfEightRacingConsumersWithoutFaults) {
  const std::string name = key("race");
  constexpr int kItems = 200;
  constexpr int kConsumers = 8;
  DistributedWorkQueue producer(client(), name);
  std::vector<std::unique_ptr<DistributedWorkQueue>> consumers;
  for (int i = 0; i < kConsumers; ++i) consumers.push_back(std::make_unique<DistributedWorkQueue>(client(), name));
  std::mutex mu;
  std::map<std::string, int> seen;
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (auto& c : consumers) {
    threads.emplace_back([&, q = c.get()] {
      while (acked.load() < kItems) {
        auto item = q->receive_for(300ms);
        if (!item) continue;
        {
          std::lock_guard lock(mu);
          ++seen[item->value()];
        }
        if (item->ack().wait().value()) ++acked;
      }
    });
  }
  for (int i = 0; i < kItems; i += 10) {
    std::vector<std::string> batch;
    for (int j = i; j < i + 10; ++j) batch.push_back(std::to_string(j));
    (void)producer.enqueue_all(batch).wait().value();
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(acked.load(), kItems);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kItems));
  for (const auto& [v, n] : seen) EXPECT_EQ(n, 1) << v << " delivered " << n << " times without any fault";
  EXPECT_EQ(count(name + "/items/"), 0);
  EXPECT_EQ(count(name + "/claims/"), 0);
}

// b's receive starts while a's give-back is in flight, and b's view has
// not seen a's claim yet: b goes for the item with what its view has, that
// take fails, and the view reports the claim and its release before the
// failure comes back. The item must reach b as soon as b's view shows it
// ready. b's link is slowed so that its view lags a's writes in every
// round (the C API test saw the same race now and then under CPU load).
TEST_F(WorkQueueTest, AnItemGivenBackWhileAnotherConsumersTakeOfItFailsReachesThatConsumer) {
  const std::string name = key("giveback");
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  proxy->set_delay(25ms);
  ClientOptions via_proxy = options();
  via_proxy.endpoints = {proxy->endpoint()};
  Client slow(via_proxy);
  DistributedWorkQueue a(client(), name, visibility(10s));
  constexpr int kRounds = 10;
  int raced = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // A new object each round: after a failed take an object waits a random
    // moment before its next ones, which would mostly let its view catch up.
    auto metrics = std::make_shared<recipes::PrometheusMetrics>();
    WorkQueueOptions o = visibility(10s);
    o.recipe.metrics = metrics;
    DistributedWorkQueue b(slow, name, o);
    // b's view and lease exist before the race.
    (void)a.enqueue("warm-up").wait().value();
    WorkItem warm = b.receive().timeout(10s).wait().value();
    EXPECT_TRUE(warm.ack().wait().value());

    (void)a.enqueue("job").wait().value();
    WorkItem held = a.receive().timeout(10s).wait().value();
    auto given_back = held.requeue().future();
    auto got = b.receive().timeout(5s).wait();
    ASSERT_TRUE(got.ok()) << got.status().to_string() << " (the claim was released "
                          << (get(name + "/claims/" + held.id()) ? "not yet" : "already") << ")";
    EXPECT_EQ(got->id(), held.id());
    EXPECT_EQ(got->attempt(), 2);
    EXPECT_TRUE(given_back.get().value());
    EXPECT_TRUE(got->ack().wait().value());
    if (metrics->value("etcd_recipes_workqueue_take_conflicts_total", {{"queue", name}}) > 0) ++raced;
  }
  EXPECT_EQ(count(name + "/items/"), 0);
  // Otherwise the test no longer sets up the race it is about.
  EXPECT_GT(raced, kRounds / 2) << raced << " of " << kRounds << " rounds had b's take fail";
  RecordProperty("raced_rounds", std::to_string(raced));
}

TEST_F(WorkQueueTest, APureProducerTakesNoLeaseAndBadOptionsAreRefusedBeforeAnyWrite) {
  const std::string name = key("producer");
  const auto leases = [&] {
    auto ids = client().lease_leases().wait().value().leases;
    return std::set<int64_t>(ids.begin(), ids.end());
  };
  const auto before = leases();
  DistributedWorkQueue producer(client(), name);
  (void)producer.enqueue_all({"a", "b"}).wait().value();
  for (int64_t id : leases()) EXPECT_TRUE(before.count(id)) << "a new lease " << id;
  producer.close();

  DistributedWorkQueue short_visibility(client(), key("bad1"), visibility(0s));
  auto r = short_visibility.enqueue("x").wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
  DistributedWorkQueue no_deliveries(client(), key("bad2"), visibility(10s, 0));
  auto r2 = no_deliveries.receive().timeout(2s).wait();
  ASSERT_FALSE(r2.ok());
  EXPECT_TRUE(r2.status().is(Errc::kBadArgument)) << r2.status().to_string();
  DistributedWorkQueue bad_name(client(), key("bad3") + "/");
  EXPECT_FALSE(bad_name.enqueue("x").wait().ok());
  EXPECT_EQ(count(key("bad")), 0);
}

}  // namespace
}  // namespace etcd::test
