// Call::wait(std::stop_token): the blocking wait that a stop request from
// another thread ends, on a wait for another party (a contended lock) and
// on a plain RPC; and its polled form, whose poll runs on the waiting
// thread and may request the stop itself.
#include <atomic>
#include <chrono>
#include <optional>
#include <stop_token>
#include <thread>

#include "etcd/recipes/mutex.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using namespace std::chrono_literals;
using recipes::DistributedMutex;

class CallWaitTest : public SingleMemberTest {
 protected:
  // A lock that this test's client holds, and another client's mutex on
  // the same name, whose acquire() waits until it is stopped.
  DistributedMutex& blocked_waiter() {
    holder_.emplace(client(), key("lock"));
    EXPECT_TRUE(holder_->acquire().wait().ok());
    other_.emplace(options());
    waiter_.emplace(*other_, key("lock"));
    return *waiter_;
  }
  // The waiter gave up and the holder still holds.
  void expect_only_the_holder_holds() {
    EXPECT_FALSE(waiter_->is_held());
    EXPECT_TRUE(holder_->is_held());
  }
  void TearDown() override {
    waiter_.reset();
    holder_.reset();
    other_.reset();
    SingleMemberTest::TearDown();
  }

 private:
  std::optional<Client> other_;
  std::optional<DistributedMutex> holder_, waiter_;
};

TEST_F(CallWaitTest, AWaitThatIsNotStoppedReturnsTheValue) {
  ASSERT_TRUE(client().put(key("k"), "v").wait().ok());
  std::stop_source never;
  auto got = client().get(key("k")).wait(never.get_token());
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].value, "v");

  DistributedMutex m(client(), key("lock"));
  auto held = m.acquire().wait(never.get_token());
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  EXPECT_TRUE(m.is_held());
  EXPECT_GT(held->token(), 0);
}

TEST_F(CallWaitTest, AStopFromAnotherThreadEndsABlockedAcquirePromptly) {
  DistributedMutex& waiter = blocked_waiter();

  std::stop_source cancel;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(300ms);
    cancel.request_stop();
  });
  const auto start = Clock::now();
  auto r = waiter.acquire().wait(cancel.get_token());
  const auto took = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().to_string();
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3s) << "the stop request must end the wait promptly";
  expect_only_the_holder_holds();
}

TEST_F(CallWaitTest, AStopRequestedBeforeTheWaitCancelsAtOnce) {
  DistributedMutex& waiter = blocked_waiter();
  std::stop_source cancel;
  cancel.request_stop();
  const auto start = Clock::now();
  auto r = waiter.acquire().wait(cancel.get_token());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().to_string();
  EXPECT_LT(Clock::now() - start, 3s);
  expect_only_the_holder_holds();
}

TEST_F(CallWaitTest, TheCallsOwnStopTokenStillCancels) {
  DistributedMutex& waiter = blocked_waiter();
  std::stop_source own, unused;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(200ms);
    own.request_stop();
  });
  auto r = waiter.acquire().stop_token(own.get_token()).wait(unused.get_token());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().to_string();
  EXPECT_FALSE(unused.stop_requested());
  expect_only_the_holder_holds();
}

TEST_F(CallWaitTest, ThePollRunsOnTheWaitingThreadAndMayRequestTheStop) {
  DistributedMutex& waiter = blocked_waiter();
  std::stop_source cancel;
  int polls = 0;
  bool on_this_thread = true;
  const auto self = std::this_thread::get_id();
  auto r = waiter.acquire().wait(cancel.get_token(), 20ms, [&] {
    on_this_thread = on_this_thread && std::this_thread::get_id() == self;
    if (++polls == 5) cancel.request_stop();
  });
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().to_string();
  EXPECT_EQ(polls, 5) << "no poll after the stop request";
  EXPECT_TRUE(on_this_thread);
  expect_only_the_holder_holds();
}

TEST_F(CallWaitTest, ACallThatCompletesIsNotPolled) {
  ASSERT_TRUE(client().put(key("k"), "v").wait().ok());
  std::stop_source cancel;
  std::atomic<int> polls{0};
  auto got = client().get(key("k")).wait(cancel.get_token(), 10s, [&] { ++polls; });
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(polls.load(), 0);
}

}  // namespace
}  // namespace etcd::test
