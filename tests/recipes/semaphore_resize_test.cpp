// DistributedSemaphore::resize against a real etcd member: growing admits
// waiters at once, shrinking revokes nobody and admits nobody until fewer
// than the new count hold, objects made with the old count adopt the new
// one, a count never resized still refuses another, bad input writes
// nothing. Both layouts.
#include <future>
#include <memory>
#include <vector>

#include "etcd/recipes/semaphore.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedSemaphore;
using recipes::RecipeOptions;
using ResizePermit = DistributedSemaphore::Permit;
using ResizePending = std::future<Result<ResizePermit>>;

class SemaphoreResizeTest : public SingleMemberTest, public ::testing::WithParamInterface<recipes::ContenderLayout> {
 protected:
  static RecipeOptions layout() {
    RecipeOptions o;
    o.contender_layout = GetParam();
    return o;
  }
  static bool ordered() { return GetParam() == recipes::ContenderLayout::kOrdered; }
  // Keys that take a place: holders and waiters.
  int64_t places(const std::string& name) {
    const auto count = [&](const std::string& prefix) {
      return client().get(prefix, {.prefix = true, .count_only = true}).wait()->count;
    };
    if (ordered()) return count(name + "/slots/") + count(name + "/queue/");
    return count(name + "/holders/");
  }
  // Waiters, each on its own object, parked before returning.
  std::vector<ResizePending> park(std::vector<std::unique_ptr<DistributedSemaphore>>& sems, const std::string& name,
                                  int n, int waiters) {
    std::vector<ResizePending> pending;
    const int64_t already = places(name);
    for (int i = 0; i < waiters; ++i) {
      sems.push_back(std::make_unique<DistributedSemaphore>(client(), name, n, layout()));
      pending.push_back(sems.back()->acquire().timeout(60s).future());
      EXPECT_TRUE(eventually([&] { return places(name) == already + i + 1; })) << "waiter " << i << " queued";
    }
    return pending;
  }
};

TEST_P(SemaphoreResizeTest, GrowingAdmitsBlockedWaitersPromptly) {
  const std::string name = key("grow");
  DistributedSemaphore sem(client(), name, 1, layout());
  ResizePermit held = sem.acquire_blocking();
  std::vector<std::unique_ptr<DistributedSemaphore>> sems;
  auto pending = park(sems, name, 1, 3);
  for (auto& p : pending) EXPECT_TRUE(still_waiting(p, 100ms));

  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(sem.resize(3).wait().ok());
  EXPECT_EQ(sem.permits(), 3);
  // Two more permits: the first two waiters get them, promptly.
  std::vector<ResizePermit> granted;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(ready(pending[i], 5s)) << "waiter " << i << " admitted by the growth";
    auto r = pending[i].get();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    granted.push_back(std::move(*r));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_TRUE(still_waiting(pending[2], 300ms)) << "three permits are held";
  EXPECT_EQ(client().get(name + "/permits").wait()->kvs.at(0).value, ordered() ? "3 ordered" : "3");

  EXPECT_TRUE(held.release().wait().value());
  ASSERT_TRUE(ready(pending[2], 5s)) << "a release still admits the next";
  auto last = pending[2].get();
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(sems[2]->permits(), 3) << "the waiter made with 1 adopted the new count";
}

TEST_P(SemaphoreResizeTest, ShrinkingRevokesNobodyAndAdmitsNobodyUntilFewerThanTheNewCountHold) {
  const std::string name = key("shrink");
  DistributedSemaphore sem(client(), name, 3, layout());
  std::vector<ResizePermit> held;
  for (int i = 0; i < 3; ++i) held.push_back(sem.acquire_blocking());
  std::vector<std::unique_ptr<DistributedSemaphore>> sems;
  auto pending = park(sems, name, 3, 1);

  ASSERT_TRUE(sem.resize(1).wait().ok());
  for (auto& p : held) EXPECT_TRUE(p.is_held()) << "a shrink revokes nothing";
  EXPECT_EQ(sem.available_permits().wait().value(), 0);

  EXPECT_TRUE(held[2].release().wait().value());
  EXPECT_TRUE(still_waiting(pending[0], 500ms)) << "two hold, the count is 1";
  EXPECT_TRUE(held[0].release().wait().value());
  EXPECT_TRUE(still_waiting(pending[0], 500ms)) << "one holds, the count is 1";
  auto none = sem.try_acquire().wait();
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_FALSE(none->has_value()) << "a try gets nothing either";
  EXPECT_TRUE(held[1].release().wait().value());
  ASSERT_TRUE(ready(pending[0], 5s)) << "nobody holds: the waiter is admitted";
  auto r = pending[0].get();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->is_held());
  EXPECT_EQ(places(name), 1);
}

TEST_P(SemaphoreResizeTest, ANewObjectWithTheOldCountAdoptsTheResizedOne) {
  const std::string name = key("adopt");
  DistributedSemaphore sem(client(), name, 2, layout());
  ResizePermit first = sem.acquire_blocking();  // stores the count
  ASSERT_TRUE(sem.resize(4).wait().ok());

  DistributedSemaphore late(client(), name, 2, layout());
  EXPECT_EQ(late.available_permits().wait().value(), 3);
  std::vector<ResizePermit> permits;
  for (int i = 0; i < 3; ++i) {
    auto p = late.try_acquire().wait();
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_TRUE(p->has_value()) << "permit " << i + 2 << " of the 4";
    permits.push_back(std::move(**p));
  }
  EXPECT_EQ(late.permits(), 4);
  auto fifth = late.try_acquire().wait();
  ASSERT_TRUE(fifth.ok());
  EXPECT_FALSE(fifth->has_value()) << "four are held";

  // Resizing to the count already stored writes nothing.
  const int64_t rev = client().put(key("probe"), "x").wait()->header.revision;
  ASSERT_TRUE(late.resize(4).wait().ok());
  EXPECT_EQ(client().get(key("probe")).wait()->header.revision, rev);
}

TEST_P(SemaphoreResizeTest, ACountNeverResizedStillRefusesAnother) {
  const std::string name = key("mismatch");
  DistributedSemaphore three(client(), name, 3, layout()), five(client(), name, 5, layout());
  ResizePermit p = three.acquire_blocking();
  auto r = five.acquire().wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kMismatch)) << r.status().to_string();
  EXPECT_TRUE(five.available_permits().wait().status().is(Errc::kMismatch));
}

TEST_P(SemaphoreResizeTest, BadInputIsRefusedBeforeAnyWrite) {
  const std::string name = key("bad");
  DistributedSemaphore sem(client(), name, 2, layout());
  const int64_t rev = client().put(key("probe"), "x").wait()->header.revision;
  for (int n : {0, -3}) {
    auto r = sem.resize(n).wait();
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
  }
  EXPECT_EQ(client().get(key("probe")).wait()->header.revision, rev) << "nothing written";

  // The other layout's semaphore is not resized by this one.
  RecipeOptions other;
  other.contender_layout =
      ordered() ? recipes::ContenderLayout::kGoConcurrency : recipes::ContenderLayout::kOrdered;
  DistributedSemaphore theirs(client(), name, 2, other);
  ASSERT_TRUE(theirs.acquire().wait().ok());
  auto r = sem.resize(3).wait();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kMismatch)) << r.status().to_string();
}

TEST_P(SemaphoreResizeTest, ResizingAnUnusedSemaphoreStoresTheCount) {
  const std::string name = key("fresh");
  DistributedSemaphore sem(client(), name, 1, layout());
  ASSERT_TRUE(sem.resize(2).wait().ok());
  auto kv = client().get(name + "/permits").wait()->kvs.at(0);
  EXPECT_EQ(kv.value, ordered() ? "2 ordered" : "2");
  EXPECT_GT(kv.version, 1) << "marked as resized: others adopt it";
  DistributedSemaphore other(client(), name, 7, layout());
  ResizePermit a = other.acquire_blocking(), b = other.acquire_blocking();
  auto c = other.try_acquire().wait();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->has_value());
}

INSTANTIATE_TEST_SUITE_P(Layouts, SemaphoreResizeTest,
                         ::testing::Values(recipes::ContenderLayout::kGoConcurrency,
                                           recipes::ContenderLayout::kOrdered),
                         [](const ::testing::TestParamInfo<recipes::ContenderLayout>& resize_layout) {
                           return resize_layout.param == recipes::ContenderLayout::kOrdered ? std::string("Ordered")
                                                                                             : std::string("Holders");
                         });

}  // namespace
}  // namespace etcd::test
