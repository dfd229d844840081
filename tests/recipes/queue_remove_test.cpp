// remove(id) of the queues (DistributedQueue, TypedQueue, the priority
// queues, DistributedWorkQueue) against a real etcd member: a removed item
// is never delivered, a taken one is never removed, and a remove racing a
// take has exactly one winner.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/work_queue.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedPriorityQueue;
using recipes::DistributedQueue;
using recipes::DistributedWorkQueue;
using recipes::TypedQueue;

class QueueRemoveTest : public SingleMemberTest {
 protected:
  int64_t keys_under(const std::string& prefix) {
    return client().get(prefix, {.prefix = true, .count_only = true}).wait()->count;
  }
};

// The last segment of an item key: the id remove() also takes.
std::string id_of_item_key(const std::string& key) { return key.substr(key.rfind('/') + 1); }

TEST_F(QueueRemoveTest, RemovedItemIsNeverDeliveredAndASecondRemoveFindsNothing) {
  const std::string name = key("q");
  DistributedQueue q(client(), name);
  std::vector<std::string> keys;
  for (const char* v : {"a", "b", "c", "d"}) keys.push_back(q.enqueue(v).wait().value().keys.at(0));
  EXPECT_TRUE(q.remove(keys[1]).wait().value()) << "by the key enqueue returned";
  EXPECT_TRUE(q.remove(id_of_item_key(keys[2])).wait().value()) << "by the id (the key's last segment)";
  EXPECT_FALSE(q.remove(keys[1]).wait().value()) << "already removed";
  EXPECT_FALSE(q.remove(id_of_item_key(keys[1]) + "0").wait().value()) << "never enqueued";
  EXPECT_EQ(q.size().wait().value(), 2);
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "a");
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "d");
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);
  EXPECT_FALSE(q.remove(keys[0]).wait().value()) << "a taken item is not removed";
}

TEST_F(QueueRemoveTest, BadIdsAreRefusedBeforeAnyWrite) {
  const std::string name = key("bad");
  DistributedQueue q(client(), name);
  DistributedQueue other(client(), key("other"));
  const std::string other_key = other.enqueue("x").wait().value().keys.at(0);
  const int64_t before = client().get("probe").wait().value().header.revision;
  for (const std::string& bad : {std::string(), std::string("a/b"), other_key, name + "/items/", name + "/claims/x"}) {
    auto r = q.remove(bad).wait();
    ASSERT_FALSE(r.ok()) << "'" << bad << "' was accepted";
    EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
    EXPECT_NE(r.status().message().find("DistributedQueue[" + name + "]"), std::string::npos) << r.status().to_string();
  }
  EXPECT_EQ(client().get("probe").wait().value().header.revision, before) << "a refused remove wrote";
  EXPECT_EQ(keys_under(key("other") + "/items/"), 1) << "another queue's item was touched";
  q.close();
  EXPECT_TRUE(q.remove("x").wait().status().is(Errc::kClosed));
}

TEST_F(QueueRemoveTest, TypedAndPriorityQueuesRemoveToo) {
  TypedQueue<int64_t> typed(client(), key("typed"));
  const auto k1 = typed.enqueue(1).wait().value().keys.at(0);
  (void)typed.enqueue(2).wait().value();
  EXPECT_TRUE(typed.remove(k1).wait().value());
  EXPECT_EQ(typed.dequeue().timeout(10s).wait().value(), 2);

  // A poison item (not decimal text) is removed without being decoded.
  TypedQueue<int64_t> poisoned(client(), key("poison"));
  const std::string poison_key = key("poison") + "/items/raw";
  (void)client().put(poison_key, "not a number").wait().value();
  EXPECT_TRUE(poisoned.remove("raw").wait().value());
  EXPECT_EQ(keys_under(key("poison") + "/items/"), 0);

  DistributedPriorityQueue pq(client(), key("pq"));
  const auto urgent = pq.enqueue("urgent", 0).wait().value().keys.at(0);
  (void)pq.enqueue("later", 9).wait().value();
  EXPECT_TRUE(pq.remove(urgent).wait().value());
  EXPECT_EQ(pq.dequeue().timeout(10s).wait().value(), "later");
}

TEST_F(QueueRemoveTest, WorkQueueRemovesOnlyPendingItems) {
  const std::string name = key("wq");
  DistributedWorkQueue wq(client(), name, {.visibility_timeout = 5s});
  const auto first = wq.enqueue("first").wait().value().keys.at(0);
  const auto delayed = wq.enqueue("delayed", std::chrono::hours(1)).wait().value().keys.at(0);
  recipes::WorkItem item = wq.receive().timeout(10s).wait().value();
  ASSERT_EQ(item.key(), first);
  EXPECT_FALSE(wq.remove(first).wait().value()) << "claimed: its consumer decides";
  EXPECT_EQ(keys_under(name + "/items/"), 2) << "a claimed item was deleted";
  EXPECT_TRUE(item.ack().wait().value()) << "the remove did not disturb the claim";
  EXPECT_TRUE(wq.remove(id_of_item_key(delayed)).wait().value()) << "a delayed item is pending";
  EXPECT_FALSE(wq.remove(delayed).wait().value());
  EXPECT_EQ(keys_under(name + "/"), 1) << "only the producer key is left";
  EXPECT_TRUE(wq.remove("a/b").wait().status().is(Errc::kBadArgument));
}

// Each item is enqueued while a consumer of another client waits for it,
// and removed at once: exactly one of the remove and the take gets it.
template <class Q, class Take>
void race_remove_against_take(Client& producer_client, Client& consumer_client, const std::string& name, Take take) {
  constexpr int kRounds = 60;
  Q producer(producer_client, name);
  Q consumer(consumer_client, name);
  std::set<std::string> delivered;
  std::atomic<bool> consumer_done{false};
  std::thread taker([&] {
    for (;;) {
      auto got = take(consumer);
      ASSERT_TRUE(got.has_value()) << "the consumer waited 20 s for the stop item";
      if (*got == "stop") break;
      EXPECT_TRUE(delivered.insert(*got).second) << *got << " delivered twice";
    }
    consumer_done = true;
  });
  std::set<std::string> removed;
  std::mt19937 rng(7);
  for (int i = 0; i < kRounds; ++i) {
    const std::string value = "item-" + std::to_string(i);
    const auto k = producer.enqueue(value).wait().value().keys.at(0);
    // Spread the removes around the moment the consumer goes for the item.
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    if (producer.remove(k).wait().value()) removed.insert(value);
  }
  (void)producer.enqueue("stop").wait().value();
  taker.join();
  ASSERT_TRUE(consumer_done);
  for (const auto& v : removed) EXPECT_FALSE(delivered.contains(v)) << v << " was removed and delivered";
  EXPECT_EQ(removed.size() + delivered.size(), size_t{kRounds}) << "an item was neither removed nor delivered";
  std::printf("remove vs take, %s: %zu removed, %zu delivered\n", name.c_str(), removed.size(), delivered.size());
}

TEST_F(QueueRemoveTest, RemoveRacingATakeHasExactlyOneWinner) {
  Client consumer_client(options());
  race_remove_against_take<DistributedQueue>(client(), consumer_client, key("race"),
                                             [](DistributedQueue& q) { return q.dequeue_for(20s); });
  race_remove_against_take<TypedQueue<std::string>>(client(), consumer_client, key("race-typed"),
                                                    [](TypedQueue<std::string>& q) { return q.dequeue_for(20s); });
}

TEST_F(QueueRemoveTest, WorkQueueRemoveRacingAClaimHasExactlyOneWinner) {
  Client consumer_client(options());
  race_remove_against_take<DistributedWorkQueue>(client(), consumer_client, key("race-wq"),
                                                 [](DistributedWorkQueue& q) -> std::optional<std::string> {
                                                   auto item = q.receive_for(20s);
                                                   if (!item) return std::nullopt;
                                                   EXPECT_TRUE(item->ack().wait().value());
                                                   return item->value();
                                                 });
}

}  // namespace
}  // namespace etcd::test
