// The deadline rule of call.h, one test per kind of call: an RPC without
// .timeout() gets the client's default timeout, even against a member that
// answers nothing; a wait for what another party does (a receive, an
// acquisition, a count barrier's wait) without .timeout() waits until it
// happens, well past that default.
#include <future>
#include <string>

#include "etcd/recipes/barrier.h"
#include "etcd/recipes/mutex.h"
#include "etcd/recipes/work_queue.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedBarrierWithCount;
using recipes::DistributedMutex;
using recipes::DistributedWorkQueue;
using recipes::WorkItem;

class DeadlineRuleTest : public SingleMemberTest {};

// Resumes the member at the end of the scope, whatever the test did.
struct Paused {
  explicit Paused(etcd::testing::EtcdCluster& c) : cluster(c) { cluster.pause(0); }
  ~Paused() { cluster.resume(0); }
  etcd::testing::EtcdCluster& cluster;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TEST_F(DeadlineRuleTest, AnRpcWithoutTimeoutAgainstAPausedMemberEndsByTheClientsDefaultTimeout) {
  ASSERT_TRUE(client().put(key("k"), "v").wait().ok());  // connected
  ClientOptions shorter = options();
  shorter.default_timeout = 2s;
  Client quick(shorter);
  ASSERT_TRUE(quick.get(key("k")).wait().ok());

  Paused paused(cluster());
  auto started = Clock::now();
  auto put = quick.put(key("k"), "w").wait();
  const double put_took = seconds_since(started);
  EXPECT_EQ(put.status().code(), StatusCode::kDeadlineExceeded) << put.status().to_string();
  EXPECT_GE(put_took, 1.9);
  EXPECT_LT(put_took, 3.0) << "ClientOptions::default_timeout = 2 s";

  started = Clock::now();
  auto get = client().get(key("k")).wait();
  const double get_took = seconds_since(started);
  // The default default_timeout (5 s), neither sooner nor (much) later:
  // with one endpoint there is nowhere better to go, so the call waits for
  // its member until its deadline.
  EXPECT_EQ(get.status().code(), StatusCode::kDeadlineExceeded) << get.status().to_string();
  EXPECT_GE(get_took, 4.9) << get.status().to_string();
  EXPECT_LT(get_took, 6.0) << "the default default_timeout, 5 s: " << get.status().to_string();
}

TEST_F(DeadlineRuleTest, WaitsWithoutTimeoutWaitUntilWhatTheyWaitForHappens) {
  DistributedWorkQueue queue(client(), key("queue"));
  DistributedMutex holder(client(), key("lock"));
  auto held = holder.acquire().wait();
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  DistributedMutex waiter(client(), key("lock"));
  DistributedBarrierWithCount first(client(), key("barrier"), 2);

  auto receive = std::async(std::launch::async, [&] { return queue.receive().wait(); });
  auto acquire = std::async(std::launch::async, [&] { return waiter.acquire().wait(); });
  auto meet = std::async(std::launch::async, [&] { return first.wait().wait(); });

  // Past the client's default timeout (5 s), and then some: still waiting.
  EXPECT_EQ(receive.wait_for(7s), std::future_status::timeout) << "the receive ended without an item";
  EXPECT_EQ(acquire.wait_for(0s), std::future_status::timeout) << "the acquisition ended while the lock was held";
  EXPECT_EQ(meet.wait_for(0s), std::future_status::timeout) << "the barrier's wait ended with one party";

  ASSERT_TRUE(queue.enqueue("job").wait().ok());
  ASSERT_EQ(receive.wait_for(10s), std::future_status::ready);
  auto item = receive.get();
  ASSERT_TRUE(item.ok()) << item.status().to_string();
  EXPECT_EQ(item->value(), "job");
  EXPECT_TRUE(item->ack().wait().ok());

  ASSERT_TRUE(holder.release().wait().ok());
  ASSERT_EQ(acquire.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(acquire.get().ok());
  ASSERT_TRUE(waiter.release().wait().ok());

  DistributedBarrierWithCount second(client(), key("barrier"), 2);
  EXPECT_TRUE(second.wait_for(10s));
  ASSERT_EQ(meet.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(meet.get().ok());
}

}  // namespace
}  // namespace etcd::test
