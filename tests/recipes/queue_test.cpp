// DistributedQueue and TypedQueue against a real etcd member.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "etcd/recipes/queue.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedQueue;
using recipes::Enqueued;
using recipes::RecipeOptions;
using recipes::TypedQueue;

class QueueTest : public SingleMemberTest {
 protected:
  int64_t items(const std::string& name) {
    return client().get(name + "/items/", {.prefix = true, .count_only = true}).wait()->count;
  }
  static std::shared_ptr<recipes::PrometheusMetrics> metrics_of(RecipeOptions& opts) {
    auto m = std::make_shared<recipes::PrometheusMetrics>();
    opts.metrics = m;
    return m;
  }
  // Every event under NAME/items/ from `from` to now (the watch replays
  // history; a write to a sentinel key outside items/ ends the collection).
  std::vector<Event> history(const std::string& name, int64_t from) {
    Mailbox<bool> done;
    std::mutex mu;
    std::vector<Event> events;
    const std::string sentinel = name + "/~sentinel";
    Watcher w = client().watch(name + "/", {.prefix = true, .start_revision = from}, [&](Result<WatchResponse> r) {
      if (!r.ok()) return;
      std::lock_guard lock(mu);
      for (const auto& e : r->events) {
        if (e.kv.key == sentinel) done.put(true);
        if (e.kv.key.rfind(name + "/items/", 0) == 0) events.push_back(e);
      }
    });
    (void)client().put(sentinel, "").wait().value();
    EXPECT_TRUE(done.take(10s).has_value()) << "the history watch never reached the sentinel";
    w.cancel();
    std::lock_guard lock(mu);
    return events;
  }
};

TEST_F(QueueTest, KeyLayoutAndFifoOrderForOneConsumer) {
  const std::string name = key("fifo");
  DistributedQueue q(client(), name);
  EXPECT_EQ(q.identity(), "DistributedQueue[" + name + "]");
  std::vector<std::string> sent;
  for (int i = 0; i < 10; ++i) {
    sent.push_back("v" + std::to_string(i));
    Enqueued e = q.enqueue(sent.back()).wait().value();
    ASSERT_EQ(e.keys.size(), 1u);
    EXPECT_EQ(e.keys[0].rfind(name + "/items/", 0), 0u) << e.keys[0];
    auto got = client().get(e.keys[0]).wait().value();
    ASSERT_EQ(got.kvs.size(), 1u);
    EXPECT_EQ(got.kvs[0].value, sent.back());
    EXPECT_EQ(got.kvs[0].create_revision, e.revision);
  }
  // The producer key records the last sequence number, under NAME/producers/.
  auto producers = client().get(name + "/producers/", {.prefix = true}).wait().value();
  ASSERT_EQ(producers.kvs.size(), 1u);
  EXPECT_EQ(producers.kvs[0].value, "000000000000000a");
  EXPECT_EQ(q.size().wait().value(), 10);
  for (const auto& v : sent) EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), v);
  EXPECT_EQ(q.size().wait().value(), 0);
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);
  // A clean close() removes the producer key.
  q.close();
  EXPECT_TRUE(eventually([&] { return client().get(name + "/producers/", {.prefix = true}).wait()->kvs.empty(); }));
}

// Order is the commit order, not the key order: items of a producer whose
// random id sorts first still come after earlier items of another.
TEST_F(QueueTest, FifoByCommitOrderAcrossProducersAndForeignKeys) {
  const std::string name = key("commit-order");
  DistributedQueue a(client(), name);
  DistributedQueue b(client(), name);
  (void)client().put(name + "/items/zzz-first", "0").wait().value();  // any key under items/ is an item
  std::vector<std::string> sent{"0"};
  for (int i = 1; i <= 12; ++i) {
    sent.push_back(std::to_string(i));
    (void)(i % 2 ? a : b).enqueue(sent.back()).wait().value();
  }
  (void)client().put(name + "/items/aaa-last", "13").wait().value();
  sent.push_back("13");
  DistributedQueue consumer(client(), name);
  for (const auto& v : sent) EXPECT_EQ(consumer.dequeue().timeout(10s).wait().value(), v);
}

TEST_F(QueueTest, EnqueueAllIsOneOrderedTxnAndAllOrNothing) {
  const std::string name = key("batch");
  DistributedQueue q(client(), name);
  std::vector<std::string> batch;
  for (int i = 0; i < 20; ++i) batch.push_back("b" + std::to_string(i));
  (void)q.enqueue("before").wait().value();
  Enqueued e = q.enqueue_all(batch).wait().value();
  ASSERT_EQ(e.keys.size(), 20u);
  EXPECT_TRUE(std::is_sorted(e.keys.begin(), e.keys.end())) << "keys order the items of one revision";
  auto all = client().get(name + "/items/", {.prefix = true}).wait().value();
  int in_batch = 0;
  for (const auto& kv : all.kvs) in_batch += kv.create_revision == e.revision;
  EXPECT_EQ(in_batch, 20) << "one Txn: one revision";
  (void)q.enqueue("after").wait().value();
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "before");
  for (const auto& v : batch) EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), v);
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "after");

  // More operations than the server allows in one Txn: refused whole.
  std::vector<std::string> too_many(200, "x");
  auto refused = q.enqueue_all(too_many).wait();
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().is(Errc::kTooManyOps)) << refused.status().to_string();
  EXPECT_EQ(items(name), 0) << "nothing of a refused batch was written";
  // The object enqueues normally afterwards.
  (void)q.enqueue("later").wait().value();
  EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), "later");

  // An empty batch commits nothing.
  const auto rpcs = client().stats().rpcs_started;
  Enqueued none = q.enqueue_all({}).wait().value();
  EXPECT_TRUE(none.keys.empty());
  EXPECT_EQ(client().stats().rpcs_started, rpcs);
}

// Concurrent enqueues on one object share Txns (group commit) and keep the
// order in which they were made.
TEST_F(QueueTest, ConcurrentEnqueuesOnOneObjectAreGroupedAndOrdered) {
  const std::string name = key("group");
  DistributedQueue q(client(), name);
  std::vector<std::future<Result<Enqueued>>> pending;
  for (int i = 0; i < 200; ++i) pending.push_back(q.enqueue(std::to_string(i)).future());
  std::set<int64_t> revisions;
  for (auto& f : pending) revisions.insert(f.get().value().revision);
  EXPECT_LT(revisions.size(), 200u) << "enqueues in flight together share Txns";
  for (int i = 0; i < 200; ++i) ASSERT_EQ(q.dequeue().timeout(10s).wait().value(), std::to_string(i));
}

// Grouping is bounded by bytes as well as by count: 24 concurrent enqueues
// of 256 KiB would make one 6 MiB Txn, which etcd refuses (its default
// --max-request-bytes is 1.5 MiB); each must still go through.
TEST_F(QueueTest, ConcurrentLargeEnqueuesAreGroupedWithinTheServersRequestSize) {
  const std::string name = key("bigitems");
  DistributedQueue q(client(), name);
  std::vector<std::future<Result<Enqueued>>> pending;
  for (int i = 0; i < 24; ++i) pending.push_back(q.enqueue(std::string(256 * 1024, char('a' + i))).future());
  for (auto& f : pending) {
    auto r = f.get();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  for (int i = 0; i < 24; ++i) {
    auto v = q.dequeue().timeout(10s).wait();
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    ASSERT_EQ(*v, std::string(256 * 1024, char('a' + i)));
  }
}

TEST_F(QueueTest, EachItemGoesToExactlyOneOfEightRacingConsumers) {
  const std::string name = key("race");
  constexpr int kItems = 400;
  // 8 consumers: 4 clients, 2 queue objects each; one of the objects has
  // two consumers of its own.
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(std::make_unique<Client>(options()));
  RecipeOptions opts;
  auto metrics = metrics_of(opts);
  std::vector<std::unique_ptr<DistributedQueue>> objects;
  for (int i = 0; i < 7; ++i) objects.push_back(std::make_unique<DistributedQueue>(*clients[i % 4], name, opts));
  std::mutex mu;
  std::map<std::string, int> received;
  std::atomic<int> total{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> consumers;
  for (int c = 0; c < 8; ++c) {
    DistributedQueue* q = objects[c % 7].get();
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
  DistributedQueue producer_a(client(), name);
  DistributedQueue producer_b(*clients[0], name);
  std::thread pa([&] {
    for (int i = 0; i < kItems / 2; ++i) (void)producer_a.enqueue("a" + std::to_string(i)).wait().value();
  });
  std::thread pb([&] {
    for (int i = 0; i < kItems / 2; i += 10) {
      std::vector<std::string> batch;
      for (int j = i; j < i + 10; ++j) batch.push_back("b" + std::to_string(j));
      (void)producer_b.enqueue_all(batch).wait().value();
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
  const double conflicts = metrics->value("etcd_recipes_queue_take_conflicts_total", {{"queue", name}});
  std::cout << "[ info     ] " << kItems << " items, 8 consumers on 7 objects: " << conflicts
            << " failed takes (conflicts)" << std::endl;
  RecordProperty("take_conflicts", std::to_string(conflicts));
}

// The cost of an item when N consumer objects (as N processes would) each
// keep one dequeue parked: printed for the docs, exactly-once checked.
// Items arrive one at a time (every object goes for each one) or 32 per
// Txn (objects spread over the batch after a conflict).
TEST_F(QueueTest, CostPerItemWithNConsumerObjects) {
  for (int batch : {1, 32}) {
    for (int n : {1, 2, 4, 8}) {
      const std::string name = key("cost-" + std::to_string(batch) + "-" + std::to_string(n));
      constexpr int kItems = 192;
      RecipeOptions opts;
      auto metrics = metrics_of(opts);
      std::vector<std::unique_ptr<DistributedQueue>> objects;
      for (int i = 0; i < n; ++i) objects.push_back(std::make_unique<DistributedQueue>(client(), name, opts));
      std::mutex mu;
      std::set<std::string> got;
      std::atomic<int> total{0};
      std::atomic<bool> stop{false};
      std::vector<std::thread> consumers;
      for (auto& q : objects) {
        (void)q->try_dequeue().wait().value();  // the view runs before the items come
        consumers.emplace_back([&, q = q.get()] {
          while (!stop.load()) {
            auto v = q->dequeue_for(100ms);
            if (!v) continue;
            std::lock_guard lock(mu);
            EXPECT_TRUE(got.insert(*v).second) << *v << " twice";
            ++total;
          }
        });
      }
      DistributedQueue producer(client(), name);
      const auto rpcs = client().stats().rpcs_started;
      for (int i = 0; i < kItems; i += batch) {
        std::vector<std::string> values;
        for (int j = i; j < i + batch; ++j) values.push_back(std::to_string(j));
        (void)producer.enqueue_all(values).wait().value();
      }
      EXPECT_TRUE(eventually([&] { return total.load() >= kItems; }, 30s));
      const auto sent = client().stats().rpcs_started - rpcs;
      stop = true;
      for (auto& t : consumers) t.join();
      const double conflicts = metrics->value("etcd_recipes_queue_take_conflicts_total", {{"queue", name}});
      std::printf("[ cost     ] %2d items per Txn, %d consumer objects: %.2f failed takes and %.2f RPCs per item\n",
                  batch, n, conflicts / kItems, static_cast<double>(sent) / kItems);
      RecordProperty("failed_takes_per_item_" + std::to_string(batch) + "_" + std::to_string(n),
                     std::to_string(conflicts / kItems));
      EXPECT_EQ(total.load(), kItems);
      if (n == 1) {
        EXPECT_EQ(conflicts, 0) << "a lone consumer never conflicts";
      }
    }
  }
}

// An object that enqueues and dequeues serves commit order: an item another
// client committed just before the object's own comes first, even when the
// object's enqueue answer arrives before the other item's watch event.
TEST_F(QueueTest, AnObjectThatAlsoEnqueuesServesCommitOrder) {
  const std::string name = key("mixed");
  RecipeOptions opts;
  auto metrics = metrics_of(opts);
  DistributedQueue q(client(), name, opts);
  Client other(options());
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);  // starts the view
  for (int i = 0; i < 50; ++i) {
    (void)other.put(name + "/items/foreign-" + std::to_string(i), "foreign").wait().value();
    (void)q.enqueue("own").wait().value();
    ASSERT_EQ(q.dequeue().timeout(10s).wait().value(), "foreign") << "round " << i;
    ASSERT_EQ(q.dequeue().timeout(10s).wait().value(), "own") << "round " << i;
  }
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);
  EXPECT_EQ(metrics->value("etcd_recipes_queue_take_conflicts_total", {{"queue", name}}), 0);
  EXPECT_EQ(metrics->value("etcd_recipes_queue_dequeued_total", {{"queue", name}}), 100);
}

TEST_F(QueueTest, ConsumersOfOneObjectShareOneWatchAndGetDistinctItems) {
  const std::string name = key("local");
  RecipeOptions opts;
  auto metrics = metrics_of(opts);
  DistributedQueue q(client(), name, opts);
  std::vector<std::future<Result<std::string>>> parked;
  for (int i = 0; i < 20; ++i) parked.push_back(q.dequeue().timeout(20s).future());
  ASSERT_TRUE(eventually([&] { return client().stats().watches_open >= 1; }));
  const auto watches = client().stats().watches_open;
  EXPECT_EQ(watches, 1u) << "one view for all parked consumers of an object";
  DistributedQueue producer(client(), name);
  std::vector<std::string> batch;
  for (int i = 0; i < 20; ++i) batch.push_back(std::to_string(i));
  (void)producer.enqueue_all(batch).wait().value();
  std::vector<std::string> got;
  for (auto& f : parked) got.push_back(f.get().value());
  // Handed out in the order the consumers called.
  EXPECT_EQ(got, batch);
  EXPECT_EQ(metrics->value("etcd_recipes_queue_take_conflicts_total", {{"queue", name}}), 0)
      << "consumers of one object never race each other";
}

TEST_F(QueueTest, AParkedConsumerIsWokenByAnEnqueue) {
  const std::string name = key("wake");
  DistributedQueue consumer(client(), name);
  auto parked = consumer.dequeue().timeout(20s).future();
  EXPECT_EQ(parked.wait_for(300ms), std::future_status::timeout) << "it waits while the queue is empty";
  Client other(options());
  DistributedQueue producer(other, name);
  const auto t0 = Clock::now();
  (void)producer.enqueue("hello").wait().value();
  ASSERT_EQ(parked.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(parked.get().value(), "hello");
  report_timing("queue_wake_ms", ms_between(t0, Clock::now()));
}

TEST_F(QueueTest, DequeueForTimesOutAndTryDequeueIsLinearizable) {
  const std::string name = key("timeout");
  DistributedQueue q(client(), name);
  const auto t0 = Clock::now();
  EXPECT_EQ(q.dequeue_for(300ms), std::nullopt);
  EXPECT_GE(Clock::now() - t0, 250ms);
  auto timed = q.dequeue().timeout(200ms).wait();
  EXPECT_EQ(timed.status().code(), StatusCode::kDeadlineExceeded) << timed.status().to_string();
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);
  // An item committed through another client before the try started is
  // seen by it, even if this object's view has not had the event yet.
  Client other(options());
  DistributedQueue producer(other, name);
  for (int i = 0; i < 20; ++i) {
    (void)producer.enqueue(std::to_string(i)).wait().value();
    EXPECT_EQ(q.try_dequeue().wait().value(), std::optional<std::string>(std::to_string(i)));
  }
  EXPECT_EQ(q.try_dequeue().wait().value(), std::nullopt);
}

TEST_F(QueueTest, CloseEndsParkedConsumersWithClosedAndRefusesNewWork) {
  const std::string name = key("close");
  DistributedQueue q(client(), name);
  std::vector<std::future<Result<std::string>>> parked;
  for (int i = 0; i < 3; ++i) parked.push_back(q.dequeue().future());
  EXPECT_EQ(parked[0].wait_for(300ms), std::future_status::timeout);
  q.close();
  for (auto& f : parked) {
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
    EXPECT_TRUE(f.get().status().is(Errc::kClosed));
  }
  EXPECT_TRUE(q.enqueue("x").wait().status().is(Errc::kClosed));
  EXPECT_TRUE(q.size().wait().status().is(Errc::kClosed));
  EXPECT_THROW((void)q.dequeue_for(100ms), Error);
  EXPECT_EQ(items(name), 0);
}

TEST_F(QueueTest, BadNamesAreRefusedBeforeAnyWrite) {
  const auto before = client().stats().rpcs_started;
  for (const std::string& bad : {std::string(), key("trailing/"), std::string("nul\0byte", 8)}) {
    DistributedQueue q(client(), bad);
    auto st = q.enqueue("x").wait().status();
    EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
    EXPECT_NE(st.message().find("DistributedQueue"), std::string::npos) << st.message();
    EXPECT_TRUE(q.enqueue_all({"a", "b"}).wait().status().is(Errc::kBadArgument));
    EXPECT_TRUE(q.dequeue().timeout(1s).wait().status().is(Errc::kBadArgument));
    EXPECT_TRUE(q.try_dequeue().wait().status().is(Errc::kBadArgument));
    EXPECT_TRUE(q.size().wait().status().is(Errc::kBadArgument));
    EXPECT_THROW(q.start(), Error);
  }
  EXPECT_EQ(client().stats().rpcs_started, before) << "nothing was sent";
}

// A typed queue decodes before it takes: a poison value is an error naming
// its key, and the item stays for an untyped consumer (or an operator).
TEST_F(QueueTest, TypedQueueReportsAPoisonItemByKeyAndNeverLosesIt) {
  const std::string name = key("typed");
  TypedQueue<int64_t> numbers(client(), name);
  EXPECT_EQ(numbers.identity(), "TypedQueue[" + name + "]");
  (void)numbers.enqueue(41).wait().value();
  (void)numbers.enqueue_all({-7, 1000000000000}).wait().value();
  EXPECT_EQ(client().get(name + "/items/", {.prefix = true}).wait()->kvs.size(), 3u);
  EXPECT_EQ(numbers.dequeue().timeout(10s).wait().value(), 41);
  EXPECT_EQ(numbers.dequeue_for(10s), std::optional<int64_t>(-7));
  EXPECT_EQ(numbers.try_dequeue().wait().value(), std::optional<int64_t>(1000000000000));

  const std::string poison = name + "/items/0-poison";
  (void)client().put(poison, "forty-two").wait().value();
  (void)numbers.enqueue(43).wait().value();
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
  DistributedQueue raw(client(), name);
  EXPECT_EQ(raw.dequeue().timeout(10s).wait().value(), "forty-two");
  // An encoder failure writes nothing.
  struct Refuses {
    static Result<std::string> encode(int) { return InvalidArgument("odd numbers only"); }
    static Result<int> decode(std::string_view, std::string_view) { return 0; }
  };
  TypedQueue<int, Refuses> refusing(client(), name);
  auto st = refusing.enqueue_all({1, 2}).wait().status();
  EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
  EXPECT_EQ(items(name), 0);
}

// An enqueue whose first attempt applied while its answer was lost is sent
// again by the recipe. Its item was taken by a consumer in between, so a
// plain create-if-absent retry would create it a second time; the producer
// key's guard makes the retry see that it applied.
TEST_F(QueueTest, ARetriedEnqueueNeverDuplicatesEvenIfTheItemWasTakenMeanwhile) {
  const std::string name = key("retry");
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions via_proxy = options();
  via_proxy.endpoints = {proxy->endpoint()};
  Client flaky(via_proxy);
  RecipeOptions opts;
  auto metrics = metrics_of(opts);
  DistributedQueue producer(flaky, name, opts);
  (void)producer.enqueue("warm-up").wait().value();  // connects, and sets the producer's guard
  DistributedQueue consumer(client(), name);
  EXPECT_EQ(consumer.dequeue().timeout(10s).wait().value(), "warm-up");
  const int64_t from = client().get("any").wait()->header.revision + 1;

  // The request reaches etcd 300 ms after it was sent; its answer is held
  // for 300 ms more, and the connection is reset meanwhile.
  auto parked = consumer.dequeue().timeout(20s).future();
  proxy->set_delay(300ms);
  auto sent = producer.enqueue("once").timeout(20s).future();
  ASSERT_TRUE(eventually([&] { return items(name) == 1 || parked.wait_for(0ms) == std::future_status::ready; }, 5s))
      << "the first attempt was never applied";
  std::this_thread::sleep_for(100ms);  // the answer is on its way back, inside the proxy
  proxy->reset_all();
  proxy->pass();
  ASSERT_EQ(parked.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(parked.get().value(), "once");
  auto result = sent.get();
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_GE(metrics->value("etcd_recipes_queue_enqueue_retries_total", {{"queue", name}}), 1)
      << "the enqueue was sent again";
  EXPECT_EQ(consumer.dequeue_for(500ms), std::nullopt) << "no second copy";
  int puts = 0;
  for (const auto& e : history(name, from)) puts += e.type == Event::Type::kPut;
  EXPECT_EQ(puts, 1) << "the item was created once";
  // After an unknown outcome, close() leaves the producer key: a stale
  // attempt guarded by its absence could otherwise still apply.
  producer.close();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(client().get(name + "/producers/", {.prefix = true}).wait()->kvs.size(), 1u);
}

}  // namespace
}  // namespace etcd::test
