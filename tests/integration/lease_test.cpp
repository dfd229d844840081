// Leases: grant, time-to-live, revoke, list, keep-alive, and the RAII Lease.
#include <atomic>
#include <memory>

#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using LeaseTest = SingleMemberTest;

TEST_F(LeaseTest, GrantTimeToLiveWithKeysAndRevoke) {
  auto grant = client().lease_grant(std::chrono::seconds(30)).wait();
  ASSERT_TRUE(grant.ok()) << grant.status().to_string();
  EXPECT_GT(grant->id, 0);
  EXPECT_EQ(grant->ttl, 30);
  ASSERT_TRUE(client().put(key("leased"), "v", {.lease = grant->id}).wait().ok());

  auto ttl = client().lease_time_to_live(grant->id, /*with_keys=*/true).wait();
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(ttl->granted_ttl, 30);
  EXPECT_GT(ttl->ttl, 25);
  ASSERT_EQ(ttl->keys.size(), 1u);
  EXPECT_EQ(ttl->keys[0], key("leased"));

  auto list = client().lease_leases().wait();
  ASSERT_TRUE(list.ok());
  EXPECT_NE(std::find(list->leases.begin(), list->leases.end(), grant->id), list->leases.end());

  ASSERT_TRUE(client().lease_revoke(grant->id).wait().ok());
  EXPECT_TRUE(client().get(key("leased")).wait()->kvs.empty());
  auto again = client().lease_revoke(grant->id).wait();
  EXPECT_TRUE(again.status().is(Errc::kLeaseNotFound)) << again.status().to_string();
  auto gone = client().lease_time_to_live(grant->id).wait();
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->ttl, -1);
}

TEST_F(LeaseTest, KeepAliveOnceRenews) {
  auto grant = client().lease_grant(std::chrono::seconds(5)).wait();
  ASSERT_TRUE(grant.ok());
  auto renewed = client().lease_keep_alive_once(grant->id).wait();
  ASSERT_TRUE(renewed.ok()) << renewed.status().to_string();
  EXPECT_EQ(renewed->id, grant->id);
  EXPECT_EQ(renewed->ttl, 5);
  auto missing = client().lease_keep_alive_once(0x7fff0000).wait();
  EXPECT_TRUE(missing.status().is(Errc::kLeaseNotFound)) << missing.status().to_string();
}

TEST_F(LeaseTest, KeptLeaseOutlivesThreeTtlsAndUnkeptExpires) {
  const auto ttl = std::chrono::seconds(1);
  auto kept = client().lease(ttl).wait();
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  auto unkept = client().lease_grant(ttl).wait();
  ASSERT_TRUE(unkept.ok());
  ASSERT_TRUE(client().put(key("kept"), "v", {.lease = kept->id()}).wait().ok());
  ASSERT_TRUE(client().put(key("unkept"), "v", {.lease = unkept->id}).wait().ok());

  // The unkept key vanishes after its TTL (etcd checks expiry every ~500ms).
  EXPECT_TRUE(eventually([&] { return client().get(key("unkept")).wait()->kvs.empty(); }, 4s));

  const auto until = std::chrono::steady_clock::now() + 3 * ttl + 200ms;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(client().get(key("kept")).wait()->kvs.size(), 1u);
    ASSERT_TRUE(kept->alive());
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GT(kept->safe_until(), std::chrono::steady_clock::now());
}

TEST_F(LeaseTest, DestroyingTheLeaseRevokesIt) {
  int64_t id = 0;
  {
    auto lease = client().lease(std::chrono::seconds(30)).wait();
    ASSERT_TRUE(lease.ok());
    id = lease->id();
    ASSERT_TRUE(client().put(key("scoped"), "v", {.lease = id}).wait().ok());
  }
  EXPECT_TRUE(eventually([&] { return client().get(key("scoped")).wait()->kvs.empty(); }, 5s));
  EXPECT_EQ(client().lease_time_to_live(id).wait()->ttl, -1);
}

TEST_F(LeaseTest, LossIsReportedWhenTheLeaseIsRevokedElsewhere) {
  auto lease = client().lease(std::chrono::seconds(2)).wait();
  ASSERT_TRUE(lease.ok());
  Mailbox<Status> lost;
  auto lost_sub = lease->on_lost([&](const Status& why) { lost.put(why); });
  // A listener whose Subscription is gone never runs, like every listener.
  auto dropped_ran = std::make_shared<std::atomic<int>>(0);
  lease->on_lost([dropped_ran](const Status&) { dropped_ran->fetch_add(1); }).reset();
  auto token = lease->lost_token();
  EXPECT_FALSE(token.stop_requested());

  Client other(options());
  ASSERT_TRUE(other.lease_revoke(lease->id()).wait().ok());
  auto why = lost.take(5s);
  ASSERT_TRUE(why.has_value()) << "loss not reported";
  EXPECT_TRUE(why->is(Errc::kLeaseNotFound)) << why->to_string();
  EXPECT_TRUE(token.stop_requested());
  EXPECT_FALSE(lease->alive());

  // Registered after the loss: runs once, soon, with the same status.
  Mailbox<Status> late;
  auto late_sub = lease->on_lost([&](const Status& w) { late.put(w); });
  auto late_why = late.take(5s);
  ASSERT_TRUE(late_why.has_value()) << "a listener added after the loss must still run";
  EXPECT_TRUE(late_why->is(Errc::kLeaseNotFound)) << late_why->to_string();
  // The dropped listener's run would have been posted with the others.
  late_sub = lease->on_lost([&](const Status& w) { late.put(w); });
  ASSERT_TRUE(late.take(5s).has_value());
  EXPECT_EQ(dropped_ran->load(), 0) << "a listener whose Subscription was dropped ran";
}

TEST_F(LeaseTest, ExplicitRevokeCompletes) {
  auto lease = client().lease(std::chrono::seconds(30)).wait();
  ASSERT_TRUE(lease.ok());
  const int64_t id = lease->id();
  auto r = lease->revoke().wait();
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(client().lease_time_to_live(id).wait()->ttl, -1);
}

}  // namespace
}  // namespace etcd::test
