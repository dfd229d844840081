// A semaphore acquisition that times out while its key's creation is held
// up in the network (a blackholed link) must not leave that key behind once
// the creation arrives: the key would take a permit for as long as the
// session lives. Another client then gets the only permit.
#include <atomic>
#include <chrono>

#include "etcd/recipes/semaphore.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using PermitCleanupTest = SingleMemberTest;

TEST_F(PermitCleanupTest, AnAcquisitionThatTimedOutBehindABlackholeLeavesNoKeyOnceTheLinkHeals) {
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  Client via_proxy(ClientOptions{.endpoints = {proxy->endpoint()}});
  const std::string name = key("sem");
  etcd::recipes::RecipeOptions ro;
  ro.session_ttl = 30s;  // outlives the test: only a clean-up can free the permit
  etcd::recipes::DistributedSemaphore cut_off(via_proxy, name, 1, ro);
  {
    auto warm = cut_off.acquire().timeout(5s).wait();  // the session exists from here on
    ASSERT_TRUE(warm.ok()) << warm.status().to_string();
    ASSERT_TRUE(warm->release().wait().ok());
  }
  // Watch every key the semaphore gets, to know whether the held creation
  // arrived.
  std::atomic<int> puts{0};
  auto watch = client().watch(name + "/holders/", WatchOptions{.prefix = true}, [&](Result<WatchResponse> r) {
    if (!r.ok()) return;
    for (const auto& e : r->events) puts += e.type == Event::Type::kPut ? 1 : 0;
  });
  const int before = puts.load();

  proxy->blackhole();
  auto timed_out = cut_off.acquire().timeout(300ms).wait();
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), StatusCode::kDeadlineExceeded) << timed_out.status().to_string();
  proxy->restore();  // what the link held arrives now, the creation included

  etcd::recipes::DistributedSemaphore other(client(), name, 1);
  auto got = other.acquire().timeout(10s).wait();
  ASSERT_TRUE(got.ok()) << "the permit stayed taken by a key the timed-out acquisition left: "
                        << got.status().to_string() << " (keys created meanwhile: " << puts.load() - before << ")";
  EXPECT_TRUE(got->release().wait().ok());
  // No key of the cut-off object's session is left.
  ASSERT_TRUE(eventually(
      [&] {
        auto r = client().get(name + "/holders/", GetOptions{.prefix = true, .count_only = true}).wait();
        return r.ok() && r->count == 0;
      },
      10s));
}

}  // namespace
}  // namespace etcd::test
