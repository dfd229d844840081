// The queues on a backlog longer than a consumer's window (the consumer
// holds only the head, consumer.h): order, priorities, old key layouts,
// claimed and delayed heads, against a real etcd member.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
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
using recipes::Enqueued;
using recipes::RecipeOptions;
using recipes::WorkItem;

// Well past the consumer's window (256 item keys), so that it refills and
// its bound moves many times.
constexpr int kBacklog = 1500;
constexpr int64_t kMostHeld = 2 * 256;

class QueueWindowTest : public SingleMemberTest {
 protected:
  // Commit order of items: (create revision, key).
  using Position = std::pair<int64_t, std::string>;

  static void record(std::map<Position, std::string>& order, const Enqueued& e, const std::vector<std::string>& values) {
    ASSERT_EQ(e.keys.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) order[{e.revision, e.keys[i]}] = values[i];
  }
  Position put_raw(const std::string& key, const std::string& value) {
    auto r = client().put(key, value).timeout(10s).wait().value();
    return {r.header.revision, key};
  }
};

// Items of three producers, enqueued in batches of different sizes, with a
// key written by a producer whose revision is far behind (it sorts first
// but commits in the middle) and a key of another form: one consumer gets
// them all in exact commit order, holding at most a bounded part.
TEST_F(QueueWindowTest, ALongBacklogIsServedInExactCommitOrderHoldingOnlyItsHead) {
  const std::string name = key("order");
  DistributedQueue a(client(), name), b(client(), name), c(client(), name);
  DistributedQueue* producers[] = {&a, &b, &c};
  std::map<Position, std::string> order;
  int n = 0;
  for (int round = 0; n < kBacklog; ++round) {
    std::vector<std::string> values;
    const int size = 1 + (round * 7) % 40;
    for (int i = 0; i < size && n < kBacklog; ++i) values.push_back("v" + std::to_string(n++));
    record(order, producers[round % 3]->enqueue_all(values).timeout(10s).wait().value(), values);
    if (round == 20) {
      // A producer whose revision is 1: its key sorts before every other.
      order[put_raw(name + "/items/~" + hex16(1) + "-" + hex16(0xfeed) + "-" + hex16(1), "stale")] = "stale";
      order[put_raw(name + "/items/other-form", "other")] = "other";
    }
  }
  RecipeOptions opts;
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  opts.metrics = metrics;
  DistributedQueue consumer(client(), name, opts);
  int64_t most = 0;
  int i = 0;
  for (const auto& [pos, value] : order) {
    ASSERT_EQ(consumer.dequeue().timeout(10s).wait().value(), value) << "item " << i << " (" << pos.second << ")";
    most = std::max<int64_t>(most, static_cast<int64_t>(metrics->value("etcd_recipes_queue_depth", {{"queue", name}})));
    ++i;
  }
  EXPECT_EQ(consumer.try_dequeue().timeout(10s).wait().value(), std::nullopt);
  EXPECT_LE(most, kMostHeld) << "the consumer holds the head, not the backlog";
  EXPECT_GT(most, 0);
}

// Items keep coming while the consumer drains a backlog past its window:
// none is lost or served twice, and each producer's items stay in order.
TEST_F(QueueWindowTest, ItemsThatArriveWhileALongBacklogDrainsAreNotLost) {
  const std::string name = key("arrive");
  DistributedQueue producer(client(), name);
  std::vector<std::string> first;
  for (int i = 0; i < kBacklog; ++i) first.push_back("a" + std::to_string(i));
  for (size_t i = 0; i < first.size(); i += 100) {
    (void)producer
        .enqueue_all(std::vector<std::string>(first.begin() + static_cast<ptrdiff_t>(i),
                                              first.begin() + static_cast<ptrdiff_t>(std::min(first.size(), i + 100))))
        .timeout(10s).wait()
        .value();
  }
  DistributedQueue consumer(client(), name);
  std::vector<std::string> got;
  for (int i = 0; i < kBacklog + 300; ++i) {
    if (i < 300) (void)producer.enqueue("b" + std::to_string(i)).timeout(10s).wait().value();
    got.push_back(consumer.dequeue().timeout(10s).wait().value());
  }
  EXPECT_EQ(consumer.try_dequeue().timeout(10s).wait().value(), std::nullopt);
  std::vector<std::string> want = first;
  for (int i = 0; i < 300; ++i) want.push_back("b" + std::to_string(i));
  EXPECT_EQ(got, want) << "one producer: its items in its order";
}

// A queue that earlier versions wrote (NAME/items/<producer>-<seq>) keeps
// working: its items come first, each producer's in order, then the new
// ones in commit order; none is lost.
TEST_F(QueueWindowTest, ItemsOfTheEarlierKeyLayoutComeFirstAndNoneIsLost) {
  const std::string name = key("layout");
  const int kOld = 600;
  for (int i = 0; i < kOld; i += 50) {
    Txn txn;
    for (int k = i; k < i + 50; ++k) {
      const uint64_t producer = 0xa0 + k % 2;
      txn.then(Op::put(name + "/items/" + hex16(producer) + "-" + hex16(static_cast<uint64_t>(k / 2 + 1)),
                       "old" + std::to_string(k)));
    }
    (void)client().txn(std::move(txn)).timeout(10s).wait().value();
  }
  DistributedQueue producer(client(), name);
  for (int i = 0; i < 100; ++i) (void)producer.enqueue("new" + std::to_string(i)).timeout(10s).wait().value();
  DistributedQueue consumer(client(), name);
  std::map<std::string, int> last_old;  // producer parity -> last index seen
  std::set<std::string> seen;
  for (int i = 0; i < kOld + 100; ++i) {
    const std::string v = consumer.dequeue().timeout(10s).wait().value();
    ASSERT_TRUE(seen.insert(v).second) << "served twice: " << v;
    if (i < kOld) {
      ASSERT_EQ(v.rfind("old", 0), 0u) << "item " << i << " is " << v << ": the old layout's items come first";
      const int k = std::stoi(v.substr(3));
      const std::string p = std::to_string(k % 2);
      if (last_old.count(p)) {
        EXPECT_GT(k, last_old[p]) << "a producer's items in its order";
      }
      last_old[p] = k;
    } else {
      ASSERT_EQ(v, "new" + std::to_string(i - kOld));
    }
  }
  EXPECT_EQ(consumer.try_dequeue().timeout(10s).wait().value(), std::nullopt);
}

// Priorities past the window: every item of a better priority first, each
// priority in commit order, whichever priority the window began with.
TEST_F(QueueWindowTest, APriorityQueueServesByPriorityThenCommitOrderPastItsWindow) {
  const std::string name = key("priority");
  DistributedPriorityQueue a(client(), name), b(client(), name);
  std::map<int64_t, std::vector<std::string>> want;  // priority -> values in commit order
  int n = 0;
  for (int round = 0; round < 60; ++round) {
    const int64_t priority = round % 3 == 0 ? 9 : round % 3 == 1 ? 5 : 1;
    std::vector<std::string> values;
    for (int i = 0; i < 25; ++i) values.push_back("p" + std::to_string(priority) + "-" + std::to_string(n++));
    (void)(round % 2 ? a : b).enqueue_all(values, priority).timeout(10s).wait().value();
    for (auto& v : values) want[priority].push_back(v);
  }
  DistributedPriorityQueue consumer(client(), name);
  for (const auto& [priority, values] : want) {
    for (const auto& v : values) ASSERT_EQ(consumer.dequeue().timeout(10s).wait().value(), v);
  }
  EXPECT_EQ(consumer.try_dequeue().timeout(10s).wait().value(), std::nullopt);
}

// Large values: the window stops at its byte budget (8 MiB of keys and
// values), not at its key count, and still serves every item in order.
TEST_F(QueueWindowTest, LargeValuesKeepTheWindowWithinItsBytes) {
  const std::string name = key("bytes");
  DistributedQueue producer(client(), name);
  constexpr int kItems = 300;
  const std::string big(100 * 1024, 'x');  // 300 x 100 KiB = 30 MiB in all
  for (int i = 0; i < kItems; ++i) (void)producer.enqueue(std::to_string(i) + ":" + big).timeout(10s).wait().value();
  RecipeOptions opts;
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  opts.metrics = metrics;
  DistributedQueue consumer(client(), name, opts);
  int64_t most = 0;
  for (int i = 0; i < kItems; ++i) {
    const std::string v = consumer.dequeue().timeout(10s).wait().value();
    ASSERT_EQ(v.substr(0, v.find(':')), std::to_string(i));
    most = std::max<int64_t>(most, static_cast<int64_t>(metrics->value("etcd_recipes_queue_depth", {{"queue", name}})));
  }
  EXPECT_EQ(consumer.try_dequeue().timeout(10s).wait().value(), std::nullopt);
  // 8 MiB / 100 KiB is 81 items; a refill may bring one page more.
  EXPECT_LE(most, 2 * 82) << "held at most about its bytes' worth";
  EXPECT_GT(most, 0);
}

// A work-queue consumer whose window begins with items it cannot take
// (claimed by another consumer, or delayed) widens it and gets the next
// ready item; a try finds it too instead of answering "empty".
TEST_F(QueueWindowTest, AWorkQueueConsumerReachesReadyItemsPastClaimedAndDelayedOnes) {
  const std::string name = key("work");
  DistributedWorkQueue producer(client(), name);
  std::vector<std::string> delayed;
  for (int i = 0; i < 400; ++i) delayed.push_back("later" + std::to_string(i));
  for (size_t i = 0; i < delayed.size(); i += 100) {
    (void)producer
        .enqueue_all(std::vector<std::string>(delayed.begin() + static_cast<ptrdiff_t>(i),
                                              delayed.begin() + static_cast<ptrdiff_t>(i + 100)),
                     std::chrono::hours(1))
        .timeout(10s).wait()
        .value();
  }
  std::vector<std::string> ready;
  for (int i = 0; i < 700; ++i) ready.push_back("now" + std::to_string(i));
  for (size_t i = 0; i < ready.size(); i += 100) {
    (void)producer
        .enqueue_all(std::vector<std::string>(ready.begin() + static_cast<ptrdiff_t>(i),
                                              ready.begin() + static_cast<ptrdiff_t>(i + 100)))
        .timeout(10s).wait()
        .value();
  }
  DistributedWorkQueue holder(client(), name);
  std::vector<WorkItem> held;
  for (int i = 0; i < 400; ++i) {
    held.push_back(holder.receive().timeout(10s).wait().value());
    ASSERT_EQ(held.back().value(), ready[static_cast<size_t>(i)]) << "past the delayed ones, in order";
  }
  DistributedWorkQueue other(client(), name);
  auto tried = other.try_receive().timeout(10s).wait().value();
  ASSERT_TRUE(tried.has_value()) << "800 items are claimed or delayed at the head; 300 are ready after them";
  EXPECT_EQ(tried->value(), ready[400]);
  EXPECT_TRUE(tried->ack().timeout(10s).wait().value());
  for (int i = 401; i < 700; ++i) {
    WorkItem item = other.receive().timeout(10s).wait().value();
    ASSERT_EQ(item.value(), ready[static_cast<size_t>(i)]);
    EXPECT_TRUE(item.ack().timeout(10s).wait().value());
  }
  EXPECT_EQ(other.try_receive().timeout(10s).wait().value(), std::nullopt) << "the rest is claimed or delayed";
  for (auto& item : held) EXPECT_TRUE(item.ack().timeout(10s).wait().value());
}

}  // namespace
}  // namespace etcd::test
