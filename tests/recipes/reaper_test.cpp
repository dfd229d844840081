// reap() against a real etcd member: the bookkeeping keys of crashed
// processes are removed, those of live ones never are, while both run.
#include <atomic>
#include <chrono>
#include <stop_token>
#include <string>
#include <thread>

#include "etcd/recipes/atomic_long.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/reaper.h"
#include "etcd/recipes/semaphore.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedAtomicLong;
using recipes::DistributedQueue;
using recipes::DistributedSemaphore;
using recipes::ReapedKey;
using recipes::ReapOptions;
using recipes::ReapReport;

class ReaperTest : public ProxiedSingleMemberTest {
 protected:
  bool exists(const std::string& k) { return client().get(k).wait().value().kvs.size() == 1; }
  std::vector<std::string> keys_under(const std::string& prefix) {
    std::vector<std::string> out;
    for (auto& kv : client().get(prefix, {.prefix = true, .keys_only = true}).wait().value().kvs) {
      out.push_back(kv.key);
    }
    return out;
  }
  static const ReapedKey* find(const ReapReport& r, const std::string& k) {
    for (const auto& e : r.keys) {
      if (e.key == k) return &e;
    }
    return nullptr;
  }
  // Cuts the proxied client off and closes `recipe` on it: its clean-up
  // delete cannot get through, as when its process crashed.
  template <class R>
  void crash(R& recipe) {
    proxy_->cut();
    recipe.close();
  }
};

TEST_F(ReaperTest, CrashedProducerAndCounterKeysAreReapedLiveOnesNever) {
  const std::string dead_q = key("app/dead-q"), live_q = key("app/live-q");
  const std::string dead_c = key("app/dead-c"), live_c = key("app/live-c");
  // The crashed ones: a producer and a counter whose process is gone.
  DistributedQueue crashed_queue(proxied_client(), dead_q);
  (void)crashed_queue.enqueue("x").wait().value();
  DistributedAtomicLong crashed_counter(proxied_client(), dead_c);
  (void)crashed_counter.add(5).wait().value();
  crash(crashed_queue);
  crash(crashed_counter);
  const auto dead_producers = keys_under(dead_q + "/producers/");
  const auto dead_receipts = keys_under(dead_c + "/receipts/");
  ASSERT_EQ(dead_producers.size(), 1u) << "the crashed producer left its key";
  ASSERT_EQ(dead_receipts.size(), 1u) << "the crashed counter left its receipt";

  // The live ones keep working while the reaper runs.
  DistributedQueue producer(client(), live_q);
  DistributedAtomicLong counter(client(), live_c);
  std::atomic<bool> stop{false};
  std::atomic<int> enqueued{0}, added{0};
  std::thread live([&] {
    while (!stop) {
      if (producer.enqueue("v").timeout(5s).wait().ok()) ++enqueued;
      if (counter.increment().timeout(5s).wait().ok()) ++added;
      std::this_thread::sleep_for(50ms);
    }
  });
  // Their keys exist before the reaper reads.
  const bool live_started = eventually([&] { return enqueued > 0 && added > 0; }, 10s);
  auto reaped = recipes::reap(client(), key("app/"), ReapOptions{.idle = 1500ms}).timeout(30s).wait();
  stop = true;
  live.join();
  ASSERT_TRUE(live_started);
  ASSERT_TRUE(reaped.ok()) << reaped.status().to_string();
  const ReapReport& r = *reaped;

  for (const auto& k : {dead_producers[0], dead_receipts[0]}) {
    const ReapedKey* e = find(r, k);
    ASSERT_NE(e, nullptr) << k << " was not found";
    EXPECT_TRUE(e->reaped) << k << ": " << e->kept_because;
    EXPECT_FALSE(exists(k)) << k;
  }
  const auto live_producers = keys_under(live_q + "/producers/");
  const auto live_receipts = keys_under(live_c + "/receipts/");
  ASSERT_EQ(live_producers.size(), 1u);
  ASSERT_EQ(live_receipts.size(), 1u);
  for (const auto& k : {live_producers[0], live_receipts[0]}) {
    const ReapedKey* e = find(r, k);
    ASSERT_NE(e, nullptr) << k << " was not found";
    EXPECT_FALSE(e->reaped) << k << " of a live process was reaped";
    EXPECT_EQ(e->kept_because, "written meanwhile: in use");
  }
  EXPECT_EQ(find(r, dead_producers[0])->kind, recipes::inspect::Kind::kQueue);
  EXPECT_EQ(find(r, dead_producers[0])->role, recipes::inspect::Role::kProducer);
  EXPECT_EQ(find(r, dead_receipts[0])->role, recipes::inspect::Role::kReceipt);
  EXPECT_EQ(r.reaped(), 2u);
  // The live ones lost nothing: every enqueue is an item, every add counted.
  EXPECT_EQ(producer.size().wait().value(), enqueued.load());
  EXPECT_EQ(counter.get().wait().value(), added.load());
  EXPECT_GT(enqueued.load(), 5);
}

TEST_F(ReaperTest, AnIdleLiveProducerThatWasReapedEnqueuesOnWithoutDuplicates) {
  const std::string name = key("idle/q");
  DistributedQueue q(client(), name);
  (void)q.enqueue("a").wait().value();
  ReapReport r = recipes::reap(client(), key("idle/"), ReapOptions{.idle = 300ms}).timeout(10s).wait().value();
  ASSERT_EQ(r.reaped(), 1u);
  EXPECT_TRUE(keys_under(name + "/producers/").empty());
  (void)q.enqueue("b").wait().value();
  (void)q.enqueue_all({"c", "d"}).wait().value();
  EXPECT_EQ(keys_under(name + "/producers/").size(), 1u) << "the producer key is back";
  EXPECT_EQ(q.size().wait().value(), 4);
  for (const char* v : {"a", "b", "c", "d"}) EXPECT_EQ(q.dequeue().timeout(10s).wait().value(), v);
}

TEST_F(ReaperTest, SemaphorePermitsAreReapedOnlyWithoutHoldersOrWaiters) {
  const std::string idle = key("sem/idle"), busy = key("sem/busy");
  {
    DistributedSemaphore s(client(), idle, 2);
    auto h = s.acquire_blocking();
    (void)h.release().wait().value();
  }
  DistributedSemaphore held(client(), busy, 1);
  auto hold = held.acquire_blocking();
  ReapReport r = recipes::reap(client(), key("sem/"), ReapOptions{.idle = 0ms}).timeout(10s).wait().value();
  const ReapedKey* a = find(r, idle + "/permits");
  const ReapedKey* b = find(r, busy + "/permits");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(a->reaped) << a->kept_because;
  EXPECT_EQ(a->kind, recipes::inspect::Kind::kSemaphore);
  EXPECT_FALSE(b->reaped);
  EXPECT_EQ(b->kept_because, "the semaphore has holders or waiters");
  EXPECT_TRUE(exists(busy + "/permits"));
  EXPECT_TRUE(hold.is_held());
  // With its count gone, the next user's N is stored.
  DistributedSemaphore wider(client(), idle, 3);
  auto h = wider.acquire_blocking();
  EXPECT_EQ(client().get(idle + "/permits").wait().value().kvs.at(0).value, "3");
  (void)h.release().wait().value();
  (void)hold.release().wait().value();
}

TEST_F(ReaperTest, DryRunWritesNothingAndBadInputIsRefused) {
  const std::string name = key("dry/q");
  {
    DistributedQueue q(proxied_client(), name);
    (void)q.enqueue("x").wait().value();
    crash(q);
  }
  const int64_t before = client().get("probe").wait().value().header.revision;
  ReapReport r = recipes::reap(client(), key("dry/"), ReapOptions{.idle = 100ms, .dry_run = true}).wait().value();
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_TRUE(r.keys[0].reaped) << "would be reaped";
  EXPECT_EQ(client().get("probe").wait().value().header.revision, before) << "a dry run wrote";
  EXPECT_EQ(keys_under(name + "/producers/").size(), 1u);

  EXPECT_TRUE(recipes::reap(client(), "", ReapOptions{}).wait().status().is(Errc::kBadArgument));
  EXPECT_TRUE(recipes::reap(client(), key("dry/"), ReapOptions{.idle = -1ms}).wait().status().is(Errc::kBadArgument));
  auto early = recipes::reap(client(), key("dry/"), ReapOptions{.idle = 10s}).timeout(1s).wait();
  EXPECT_EQ(early.status().code(), StatusCode::kDeadlineExceeded) << early.status().to_string();
  EXPECT_EQ(keys_under(name + "/producers/").size(), 1u);
  // A stop ends the wait, nothing deleted.
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  auto stopped = recipes::reap(client(), key("dry/"), ReapOptions{.idle = 30s}).stop_token(stop.get_token()).wait();
  stopper.join();
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled) << stopped.status().to_string();
  EXPECT_EQ(keys_under(name + "/producers/").size(), 1u);
}

}  // namespace
}  // namespace etcd::test
