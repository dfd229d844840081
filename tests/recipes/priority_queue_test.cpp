// DistributedPriorityQueue and TypedPriorityQueue against a real etcd member.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "etcd/recipes/priority_queue.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedPriorityQueue;
using recipes::Enqueued;
using recipes::RecipeOptions;
using recipes::TypedPriorityQueue;

class PriorityQueueTest : public SingleMemberTest {
 protected:
  int64_t items(const std::string& name) {
    return client().get(name + "/items/", {.prefix = true, .count_only = true}).wait()->count;
  }
  static bool is_hex(std::string_view s, size_t n) {
    return s.size() == n &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  }
};

TEST(PriorityKeys, PrefixAndParse) {
  EXPECT_EQ(recipes::detail::priority_key_prefix(0).value(), "0000-");
  EXPECT_EQ(recipes::detail::priority_key_prefix(10).value(), "000a-");
  EXPECT_EQ(recipes::detail::priority_key_prefix(65535).value(), "ffff-");
  for (int64_t bad :
       {int64_t{-1}, int64_t{65536}, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    auto r = recipes::detail::priority_key_prefix(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.status().is(Errc::kBadArgument));
  }
  using recipes::detail::priority_of_item;
  EXPECT_EQ(priority_of_item("0000-0123456789abcdef-0000000000000001"), 0u);
  EXPECT_EQ(priority_of_item("00ff-x"), 255u);
  EXPECT_EQ(priority_of_item("ffff-x"), 65535u);
  // Anything else is the lowest priority.
  for (const char* foreign : {"", "manual", "0001", "00A0-upper", "12345-five", "0x01-", "abc-"}) {
    EXPECT_EQ(priority_of_item(foreign), 65535u) << foreign;
  }
}

// Across producers: by priority first, by commit order within one; and the
// keys list in priority order for etcdctl.
TEST_F(PriorityQueueTest, PriorityOrderAcrossProducersAndFifoWithinAPriority) {
  const std::string name = key("order");
  DistributedPriorityQueue a(client(), name);
  Client other(options());
  DistributedPriorityQueue b(other, name);
  EXPECT_EQ(a.identity(), "DistributedPriorityQueue[" + name + "]");
  // (priority, value) in commit order; each producer's id is random, so
  // key order alone would not give commit order within a priority.
  std::vector<std::pair<int64_t, std::string>> sent;
  std::mt19937 rng(7);
  for (int i = 0; i < 40; ++i) {
    const int64_t priority = std::vector<int64_t>{0, 3, 3, 7, 65535, 300}[rng() % 6];
    sent.emplace_back(priority, "v" + std::to_string(i));
    Enqueued e = (i % 2 ? a : b).enqueue(sent.back().second, priority).wait().value();
    ASSERT_EQ(e.keys.size(), 1u);
    const std::string id = e.keys[0].substr((name + "/items/").size());
    // <priority 4 hex>-~<revision 16 hex>-<producer 16 hex>-<seq 16 hex>;
    // the revision is one the producer had seen: before the item's own.
    ASSERT_EQ(id.size(), 4u + 2 + 16 + 1 + 16 + 1 + 16) << e.keys[0];
    EXPECT_EQ(id.substr(0, 5), recipes::detail::priority_key_prefix(priority).value()) << e.keys[0];
    EXPECT_EQ(id[5], '~') << e.keys[0];
    EXPECT_TRUE(is_hex(id.substr(6, 16), 16) && id[22] == '-' && is_hex(id.substr(23, 16), 16) && id[39] == '-' &&
                is_hex(id.substr(40), 16))
        << e.keys[0];
    EXPECT_LT(std::stoll(id.substr(6, 16), nullptr, 16), e.revision) << e.keys[0];
  }
  // A plain range (key order, as etcdctl shows it) lists them by priority.
  auto listed = client().get(name + "/items/", {.prefix = true, .keys_only = true}).wait().value();
  ASSERT_EQ(listed.kvs.size(), sent.size());
  std::vector<uint32_t> listed_priorities;
  for (const auto& kv : listed.kvs) {
    listed_priorities.push_back(recipes::detail::priority_of_item(kv.key.substr((name + "/items/").size())));
  }
  EXPECT_TRUE(std::is_sorted(listed_priorities.begin(), listed_priorities.end()));

  std::stable_sort(sent.begin(), sent.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  DistributedPriorityQueue consumer(client(), name);
  EXPECT_EQ(consumer.size().wait().value(), 40);
  for (const auto& [priority, v] : sent) {
    EXPECT_EQ(consumer.dequeue().timeout(10s).wait().value(), v) << "priority " << priority;
  }
  EXPECT_EQ(consumer.try_dequeue().wait().value(), std::nullopt);
}

// A consumer whose view already runs serves a later, more urgent item
// before the older ones it knows of.
TEST_F(PriorityQueueTest, AMoreUrgentItemOvertakesOlderOnes) {
  const std::string name = key("overtake");
  RecipeOptions opts;
  auto metrics = std::make_shared<recipes::PrometheusMetrics>();
  opts.metrics = metrics;
  DistributedPriorityQueue q(client(), name, opts);
  auto known = [&] { return metrics->value("etcd_recipes_queue_depth", {{"queue", name}}); };
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);  // starts the view
  (void)q.enqueue("low-1", 9).wait().value();
  (void)q.enqueue("low-2", 9).wait().value();
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "low-1");
  ASSERT_TRUE(eventually([&] { return known() == 1; })) << known();  // the view saw the take
  (void)q.enqueue("urgent", 1).wait().value();
  // Priority orders what the view knows: wait until its watch reported the
  // urgent item (the depth gauge counts the items the view knows of).
  ASSERT_TRUE(eventually([&] { return known() == 2; })) << known();
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "urgent");
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "low-2");
}

TEST_F(PriorityQueueTest, EnqueueAllIsOneOrderedTxnAndAllOrNothing) {
  const std::string name = key("batch");
  DistributedPriorityQueue q(client(), name);
  std::vector<std::string> batch;
  for (int i = 0; i < 20; ++i) batch.push_back("b" + std::to_string(i));
  (void)q.enqueue("later-priority", 6).wait().value();
  Enqueued e = q.enqueue_all(batch, 5).wait().value();
  ASSERT_EQ(e.keys.size(), 20u);
  EXPECT_TRUE(std::is_sorted(e.keys.begin(), e.keys.end())) << "keys order the items of one revision";
  auto all = client().get(name + "/items/", {.prefix = true}).wait().value();
  int in_batch = 0;
  for (const auto& kv : all.kvs) in_batch += kv.create_revision == e.revision;
  EXPECT_EQ(in_batch, 20) << "one Txn: one revision";
  (void)q.enqueue("same-priority-after", 5).wait().value();
  for (const auto& v : batch) EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), v);
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "same-priority-after");
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "later-priority");

  // More operations than the server allows in one Txn: refused whole.
  auto refused = q.enqueue_all(std::vector<std::string>(200, "x"), 1).wait();
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().is(Errc::kTooManyOps)) << refused.status().to_string();
  EXPECT_EQ(items(name), 0) << "nothing of a refused batch was written";
  // An empty batch commits nothing.
  const auto rpcs = client().stats().rpcs_started;
  EXPECT_TRUE(q.enqueue_all({}, 1).wait().value().keys.empty());
  EXPECT_EQ(client().stats().rpcs_started, rpcs);
}

// Concurrent enqueues of several priorities share Txns (group commit) and
// come out by priority, then in the order they were made.
TEST_F(PriorityQueueTest, ConcurrentEnqueuesOfMixedPrioritiesShareTxns) {
  const std::string name = key("group");
  DistributedPriorityQueue q(client(), name);
  std::vector<std::future<Result<Enqueued>>> pending;
  std::vector<std::pair<int64_t, std::string>> sent;
  for (int i = 0; i < 150; ++i) {
    sent.emplace_back(2 - i % 3, std::to_string(i));
    pending.push_back(q.enqueue(sent.back().second, sent.back().first).future());
  }
  std::set<int64_t> revisions;
  for (auto& f : pending) revisions.insert(f.get().value().revision);
  EXPECT_LT(revisions.size(), 150u) << "enqueues in flight together share Txns";
  std::stable_sort(sent.begin(), sent.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [priority, v] : sent) ASSERT_EQ(q.dequeue().timeout(10s).wait().value(), v) << priority;
}

TEST_F(PriorityQueueTest, OutOfRangePrioritiesAreRefusedBeforeAnyWrite) {
  const std::string name = key("range");
  DistributedPriorityQueue q(client(), name);
  TypedPriorityQueue<int64_t> typed(client(), name);
  const auto before = client().stats().rpcs_started;
  for (int64_t bad : {int64_t{-1}, int64_t{65536}, int64_t{1} << 40, std::numeric_limits<int64_t>::min()}) {
    for (const Status& st : {q.enqueue("x", bad).wait().status(), q.enqueue_all({"a", "b"}, bad).wait().status(),
                             typed.enqueue(1, bad).wait().status(), typed.enqueue_all({1, 2}, bad).wait().status()}) {
      EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
      EXPECT_NE(st.message().find(std::to_string(bad)), std::string::npos) << st.message();
      EXPECT_NE(st.message().find("0..65535"), std::string::npos) << st.message();
      EXPECT_NE(st.message().find("PriorityQueue[" + name + "]"), std::string::npos) << st.message();
    }
  }
  EXPECT_EQ(client().stats().rpcs_started, before) << "nothing was sent";
  EXPECT_EQ(items(name), 0);
  EXPECT_TRUE(client().get(name + "/", {.prefix = true}).wait()->kvs.empty()) << "no producer key either";
  // The bounds themselves are priorities.
  EXPECT_EQ(q.enqueue("last", 65535).wait().value().keys.at(0).substr((name + "/items/").size(), 5), "ffff-");
  EXPECT_EQ(q.enqueue("first", 0).wait().value().keys.at(0).substr((name + "/items/").size(), 5), "0000-");
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "first");
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "last");
}

// Keys put under NAME/items/ by other means: a valid priority prefix is
// their priority; anything else is priority 65535, in commit order with
// the items of that priority.
TEST_F(PriorityQueueTest, ForeignKeysTakeTheirPrefixOrTheLowestPriority) {
  const std::string name = key("foreign");
  const std::string items_prefix = name + "/items/";
  DistributedPriorityQueue q(client(), name);
  (void)client().put(items_prefix + "manual", "foreign-plain").wait().value();
  (void)q.enqueue("own-lowest", 65535).wait().value();
  (void)client().put(items_prefix + "00A0-upper", "foreign-upper").wait().value();
  (void)client().put(items_prefix + "0001", "foreign-no-dash").wait().value();
  (void)client().put(items_prefix + "0003-manual", "foreign-3").wait().value();
  (void)q.enqueue("own-5", 5).wait().value();
  (void)q.enqueue("own-2", 2).wait().value();
  (void)client().put(items_prefix + "a/b", "foreign-nested").wait().value();
  for (const char* v : {"own-2", "foreign-3", "own-5", "foreign-plain", "own-lowest", "foreign-upper",
                        "foreign-no-dash", "foreign-nested"}) {
    EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), v);
  }
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);
}

TEST_F(PriorityQueueTest, EachItemGoesToExactlyOneOfEightRacingConsumers) {
  const std::string name = key("race");
  constexpr int kItems = 400;
  // 8 consumers: 4 clients, 7 queue objects; one object has two consumers.
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(std::make_unique<Client>(options()));
  std::vector<std::unique_ptr<DistributedPriorityQueue>> objects;
  for (int i = 0; i < 7; ++i) objects.push_back(std::make_unique<DistributedPriorityQueue>(*clients[i % 4], name));
  std::mutex mu;
  std::map<std::string, int> received;
  std::atomic<int> total{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> consumers;
  for (int c = 0; c < 8; ++c) {
    DistributedPriorityQueue* q = objects[c % 7].get();
    consumers.emplace_back([&, q] {
      while (!stop.load()) {
        auto v = q->dequeue_for(200ms);
        if (!v) continue;
        std::lock_guard lock(mu);
        ++received[*v];
        ++total;
      }
    });
  }
  // Producers each guard their own key: racing consumers and the other
  // producer never make an enqueue go out again.
  RecipeOptions producer_opts;
  auto producer_metrics = std::make_shared<recipes::PrometheusMetrics>();
  producer_opts.metrics = producer_metrics;
  DistributedPriorityQueue producer_a(client(), name, producer_opts);
  DistributedPriorityQueue producer_b(*clients[0], name, producer_opts);
  std::thread pa([&] {
    for (int i = 0; i < kItems / 2; ++i) (void)producer_a.enqueue("a" + std::to_string(i), i % 7).wait().value();
  });
  std::thread pb([&] {
    for (int i = 0; i < kItems / 2; i += 10) {
      std::vector<std::string> batch;
      for (int j = i; j < i + 10; ++j) batch.push_back("b" + std::to_string(j));
      (void)producer_b.enqueue_all(batch, (i / 10) % 3).wait().value();
    }
  });
  pa.join();
  pb.join();
  EXPECT_TRUE(eventually([&] { return total.load() >= kItems; }, 60s)) << total.load() << " of " << kItems;
  stop = true;
  for (auto& t : consumers) t.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(received.size(), static_cast<size_t>(kItems));
  for (const auto& [v, n] : received) EXPECT_EQ(n, 1) << v << " delivered " << n << " times";
  EXPECT_EQ(total.load(), kItems);
  EXPECT_EQ(items(name), 0);
  EXPECT_EQ(producer_metrics->value("etcd_recipes_queue_enqueued_total", {{"queue", name}}), kItems);
  EXPECT_EQ(producer_metrics->value("etcd_recipes_queue_enqueue_retries_total", {{"queue", name}}), 0);
}

// A typed priority queue decodes before it takes: a poison value is an
// error naming its key, and the item stays for an untyped consumer.
TEST_F(PriorityQueueTest, TypedPriorityQueueReportsAPoisonItemByKeyAndNeverLosesIt) {
  const std::string name = key("typed");
  TypedPriorityQueue<int64_t> numbers(client(), name);
  EXPECT_EQ(numbers.identity(), "TypedPriorityQueue[" + name + "]");
  (void)numbers.enqueue(41, 10).wait().value();
  (void)numbers.enqueue_all({-7, 1000000000000}, 1).wait().value();
  EXPECT_EQ(numbers.dequeue().timeout(10s).wait().value(), -7);
  EXPECT_EQ(numbers.dequeue_for(10s), std::optional<int64_t>(1000000000000));
  EXPECT_EQ(numbers.try_dequeue().wait().value(), std::optional<int64_t>(41));

  // The poison item is the most urgent one.
  const std::string poison = name + "/items/0000-poison";
  (void)client().put(poison, "forty-two").wait().value();
  (void)numbers.enqueue(43, 9).wait().value();
  Mailbox<std::string> heard;
  auto sub = numbers.on_poison([&](const std::string& k, const Status&) { heard.put(k); });
  auto bad = numbers.dequeue().timeout(10s).wait();
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().is(Errc::kDecodeFailed)) << bad.status().to_string();
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find(poison), std::string::npos) << "names the key: " << bad.status().message();
  EXPECT_EQ(heard.take(5s), std::optional<std::string>(poison));
  ASSERT_FALSE(numbers.errors().empty());
  EXPECT_NE(numbers.errors().back().message().find(poison), std::string::npos);
  // Not lost: still there; this object goes on with the next item.
  EXPECT_EQ(client().get(poison).wait()->kvs.size(), 1u);
  EXPECT_EQ(numbers.dequeue().timeout(10s).wait().value(), 43);
  EXPECT_EQ(numbers.try_dequeue().wait().value(), std::nullopt) << "the poison item is skipped, not retried";
  EXPECT_EQ(numbers.size().wait().value(), 1);
  // An untyped queue takes it as bytes.
  DistributedPriorityQueue raw(client(), name);
  EXPECT_EQ(raw.dequeue().timeout(10s).wait().value(), "forty-two");
  // An encoder failure writes nothing.
  struct Refuses {
    static Result<std::string> encode(int) { return InvalidArgument("odd numbers only"); }
    static Result<int> decode(std::string_view, std::string_view) { return 0; }
  };
  TypedPriorityQueue<int, Refuses> refusing(client(), name);
  auto st = refusing.enqueue_all({1, 2}, 3).wait().status();
  EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
  EXPECT_TRUE(refusing.enqueue(1, 3).wait().status().is(Errc::kBadArgument));
  EXPECT_EQ(items(name), 0);
}

TEST_F(PriorityQueueTest, CloseEndsParkedConsumersAndAParkedConsumerIsWoken) {
  const std::string name = key("close");
  DistributedPriorityQueue consumer(client(), name);
  auto woken = consumer.dequeue().timeout(20s).future();
  EXPECT_EQ(woken.wait_for(300ms), std::future_status::timeout) << "it waits while the queue is empty";
  Client other(options());
  DistributedPriorityQueue producer(other, name);
  (void)producer.enqueue("hello", 42).wait().value();
  ASSERT_EQ(woken.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(woken.get().value(), "hello");

  auto parked = consumer.dequeue().future();
  EXPECT_EQ(parked.wait_for(300ms), std::future_status::timeout);
  consumer.close();
  ASSERT_EQ(parked.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(parked.get().status().is(Errc::kClosed));
  EXPECT_TRUE(consumer.enqueue("x", 1).wait().status().is(Errc::kClosed));
  EXPECT_THROW((void)consumer.dequeue_for(100ms), Error);
  // A clean close() removes the producer key.
  producer.close();
  EXPECT_TRUE(eventually([&] { return client().get(name + "/producers/", {.prefix = true}).wait()->kvs.empty(); }));
}

}  // namespace
}  // namespace etcd::test
