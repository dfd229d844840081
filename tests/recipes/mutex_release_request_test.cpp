// DistributedMutex::request_release (cooperative release) against a real
// etcd member, both key layouts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "etcd/recipes/mutex.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::ContenderLayout;
using recipes::DistributedMutex;
using recipes::Hold;
using recipes::RecipeOptions;

class MutexReleaseRequestTest : public SingleMemberTest, public ::testing::WithParamInterface<ContenderLayout> {
 protected:
  RecipeOptions layout() const {
    RecipeOptions o;
    o.contender_layout = GetParam();
    return o;
  }
};

TEST_P(MutexReleaseRequestTest, HolderHearsTheRequestAndKeepsItsTokenUntilItReleases) {
  DistributedMutex holder(client(), key("lock"), layout()), asker(client(), key("lock"), layout());
  EXPECT_FALSE(asker.request_release().timeout(5s).wait().value()) << "nobody holds: nobody to ask";
  std::promise<void> heard;
  auto sub = holder.on_release_requested([&] { heard.set_value(); });
  ASSERT_TRUE(holder.try_lock());
  const Hold h = holder.hold();
  EXPECT_FALSE(h.release_requested().stop_requested());
  EXPECT_TRUE(asker.request_release().timeout(5s).wait().value());
  ASSERT_EQ(heard.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(h.release_requested().stop_requested());
  // Still held, same key and token: the request is not a loss.
  EXPECT_TRUE(h.is_held());
  EXPECT_FALSE(h.stop_token().stop_requested());
  auto got = client().get(h.key()).wait().value();
  ASSERT_EQ(got.kvs.size(), 1u);
  EXPECT_EQ(got.kvs[0].create_revision, h.token());
  EXPECT_EQ(got.kvs[0].lease, h.lease());
  EXPECT_TRUE(h.guarded(Txn().then(Op::put(key("res"), "x"))).wait().ok());
  // Asking again writes nothing more.
  const int64_t before = client().put(key("probe"), "x").wait()->header.revision;
  EXPECT_TRUE(asker.request_release().timeout(5s).wait().value());
  EXPECT_EQ(client().put(key("probe"), "y").wait()->header.revision, before + 1);
  // A listener added after the request still hears of it.
  std::promise<void> late;
  auto late_sub = h.on_release_requested([&] { late.set_value(); });
  EXPECT_EQ(late.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(holder.unlock());
  // The mark went with the holder's key: the next holder is not asked.
  ASSERT_TRUE(asker.try_lock());
  EXPECT_FALSE(asker.hold().release_requested().stop_requested());
  auto next = client().get(asker.hold().key()).wait().value();
  EXPECT_EQ(next.kvs.at(0).value.find("release"), std::string::npos) << next.kvs[0].value;
  EXPECT_TRUE(asker.unlock());
}

TEST_P(MutexReleaseRequestTest, ClosedOrBadInputAsksNobody) {
  DistributedMutex bad(client(), "", layout());
  EXPECT_TRUE(bad.request_release().wait().status().is(Errc::kBadArgument));
  DistributedMutex closed(client(), key("c"), layout());
  closed.close();
  EXPECT_TRUE(closed.request_release().wait().status().is(Errc::kClosed));
}

// The bar: a holder whose listener releases, and an asker waiting in
// acquire(), which holds within 50 ms of the release (median of 20).
TEST_P(MutexReleaseRequestTest, AskerWaitingInAcquireHoldsSoonAfterTheRelease) {
  constexpr int kRounds = 20;
  std::vector<double> after_release_ms, after_request_ms;
  DistributedMutex holder(client(), key("bar"), layout()), asker(client(), key("bar"), layout());
  auto released_at = std::make_shared<std::promise<std::chrono::steady_clock::time_point>>();
  std::mutex mu;
  auto sub = holder.on_release_requested([&] {
    // On the client's executor: release without blocking it.
    holder.release().then([&](Result<bool> r) {
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(mu);
      EXPECT_TRUE(r.ok() && *r);
      released_at->set_value(now);
    });
  });
  for (int i = 0; i < kRounds; ++i) {
    {
      std::lock_guard lock(mu);
      released_at = std::make_shared<std::promise<std::chrono::steady_clock::time_point>>();
    }
    auto released = released_at->get_future();
    ASSERT_TRUE(holder.try_lock_for(10s));
    auto waiting = std::async(std::launch::async, [&] {
      auto r = asker.acquire().timeout(20s).wait();
      return std::make_pair(r.ok(), std::chrono::steady_clock::now());
    });
    // The asker queues first (its key exists), then asks.
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (client().get(key("bar/"), {.prefix = true, .count_only = true}).wait()->count < 2 &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(2ms);
    }
    const auto asked = std::chrono::steady_clock::now();
    ASSERT_TRUE(asker.request_release().timeout(10s).wait().value());
    ASSERT_EQ(waiting.wait_for(20s), std::future_status::ready);
    auto [ok, acquired] = waiting.get();
    ASSERT_TRUE(ok);
    ASSERT_EQ(released.wait_for(10s), std::future_status::ready);
    const auto release_done = released.get();
    after_release_ms.push_back(std::chrono::duration<double, std::milli>(acquired - release_done).count());
    after_request_ms.push_back(std::chrono::duration<double, std::milli>(acquired - asked).count());
    ASSERT_TRUE(asker.unlock());
  }
  std::sort(after_release_ms.begin(), after_release_ms.end());
  std::sort(after_request_ms.begin(), after_request_ms.end());
  const double median = (after_release_ms[kRounds / 2 - 1] + after_release_ms[kRounds / 2]) / 2;
  const double median_request = (after_request_ms[kRounds / 2 - 1] + after_request_ms[kRounds / 2]) / 2;
  std::printf("[ release request ] asker holds %.1f ms after the release (median of %d; max %.1f), %.1f ms after "
              "asking (median)\n",
              median, kRounds, after_release_ms.back(), median_request);
  EXPECT_LT(median, 50.0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, MutexReleaseRequestTest,
                         ::testing::Values(ContenderLayout::kGoConcurrency, ContenderLayout::kOrdered),
                         [](const auto& layout_info) {
                           return std::string(layout_info.param == ContenderLayout::kOrdered ? "Ordered" : "Go");
                         });

}  // namespace
}  // namespace etcd::test
