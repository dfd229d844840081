// The public inspection model (etcd/recipes/inspect.h), as a dashboard or a
// user's tool would use it: keys as the recipes write them, recognized into
// recipes with roles, counts from a bounded summary, and the stable ids a
// machine renders. (Included first: the header stands alone.)
#include "etcd/recipes/inspect.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "recipes/queues/work_record.h"
#include "unit/test_keys.h"

namespace etcd::recipes::inspect {
namespace {

using test_keys::kv;

// ~<R>-<lease>-<n>: a key of the ordered contender layout on `lease`.
std::string ordered(int64_t revision, int64_t lease, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "~%016llx-%016llx-%016llx", static_cast<unsigned long long>(revision),
                static_cast<unsigned long long>(lease), static_cast<unsigned long long>(n));
  return buf;
}

TEST(Inspect, OrderedSemaphoreSlotsHoldAndTheQueueWaitsInOrder) {
  const Report r = build_report(
      {kv("/s/permits", "2 ordered", 3), kv("/s/slots/1", "b", 6, 0xb), kv("/s/slots/0", "a", 5, 0xa),
       kv("/s/queue/" + ordered(8, 0xd, 1), "d", 9, 0xd), kv("/s/queue/" + ordered(6, 0xc, 1), "c", 7, 0xc)},
      10);
  ASSERT_EQ(r.recipes.size(), 1u);
  const Recipe& s = r.recipes[0];
  EXPECT_EQ(s.kind, Kind::kSemaphore);
  EXPECT_EQ(s.name, "/s");
  EXPECT_EQ(s.permits, 2);
  ASSERT_EQ(s.entries.size(), 5u);
  EXPECT_EQ(s.entries[0].role, Role::kPermits);
  EXPECT_EQ(s.entries[1].role, Role::kHolder);
  EXPECT_EQ(s.entries[1].kv.value, "a");
  EXPECT_EQ(s.entries[2].role, Role::kHolder);
  EXPECT_EQ(s.entries[2].kv.value, "b");
  EXPECT_EQ(s.entries[3].role, Role::kWaiting);
  EXPECT_EQ(s.entries[3].kv.value, "c") << "waiters in the order they are served";
  EXPECT_EQ(s.entries[4].kv.value, "d");
  EXPECT_EQ(total(s, Role::kHolder), 2);
  EXPECT_EQ(total(s, Role::kWaiting), 2);
  EXPECT_FALSE(summarised(s, Role::kWaiting));
}

TEST(Inspect, DeadLettersCarryTheirReasonAndDeliveries) {
  namespace wr = etcd::recipes::detail;
  const Report r =
      build_report({kv("/wq/items/a", wr::encode_work_record("job", 1'700'000'060'000), 4),
                    kv("/wq/dead/z", wr::encode_dead_record("poison", 3, 1'700'000'000'000, "bad input\nline 2"), 5)},
                   6);
  ASSERT_EQ(r.recipes.size(), 1u);
  const Recipe& q = r.recipes[0];
  EXPECT_EQ(q.kind, Kind::kWorkQueue);
  ASSERT_EQ(q.entries.size(), 2u);
  EXPECT_EQ(q.entries[0].role, Role::kItem);
  EXPECT_EQ(q.entries[0].id, "a");
  EXPECT_EQ(q.entries[0].payload, "job");
  EXPECT_EQ(q.entries[0].not_before_ms, 1'700'000'060'000);
  EXPECT_EQ(q.entries[1].role, Role::kDead);
  EXPECT_EQ(q.entries[1].id, "z");
  EXPECT_EQ(q.entries[1].payload, "poison");
  EXPECT_EQ(q.entries[1].reason, "bad input line 2");
  EXPECT_EQ(q.entries[1].deliveries, 3);
  EXPECT_EQ(q.entries[1].since_ms, 1'700'000'000'000);
}

TEST(Inspect, CollectionsAndHowTheirHeadIsRead) {
  using Head = Collection::Head;
  struct Case {
    std::string key;
    int64_t lease;
    std::string dir;
    Head head;
  };
  for (const Case& c : std::vector<Case>{
           {"/q/items/~0000000000000001-abc-1", 0, "/q/items/", Head::kPerGroup},
           {"/l/694d", 0x694d, "/l/", Head::kByCreation},
           {"/s/holders/694d-1", 0x694d, "/s/holders/", Head::kByCreation},
           {"/rw/write/694d", 0x694d, "/rw/write/", Head::kByCreation},
           {"/b/parties/host-0123456789abcdef-1", 0x1, "/b/parties/", Head::kByCreation},
           {"/q/dead/x", 0, "/q/dead/", Head::kByKey},
           {"/q/claims/x", 0x2, "/q/claims/", Head::kByKey},
           {"/c/receipts/x", 0x3, "/c/receipts/", Head::kByKey},
       }) {
    const auto collection = collection_of(kv(c.key, "v", 2, c.lease));
    ASSERT_TRUE(collection) << c.key;
    EXPECT_EQ(collection->dir, c.dir) << c.key;
    EXPECT_EQ(collection->head, c.head) << c.key;
  }
  EXPECT_FALSE(collection_of(kv("/config/limit", "10", 2)));
  EXPECT_FALSE(collection_of(kv("/l/694d", "h", 2, 0x1234))) << "a contender key names its own lease";
}

TEST(Inspect, ASummaryCountsWhatItDidNotRead) {
  // Two of a queue's 1000 items read (the head of each producer), and its
  // producer key; the size came from a count_only read.
  const Report r = build_report(
      {kv("/q/items/~0000000000000001-aaaa-1", "first", 2), kv("/q/items/~0000000000000005-bbbb-1", "second", 6),
       kv("/q/producers/0123456789abcdef", "", 1, 0x7)},
      1200, {{"/q/items/", 1000}});
  ASSERT_EQ(r.recipes.size(), 1u);
  const Recipe& q = r.recipes[0];
  EXPECT_EQ(q.kind, Kind::kQueue);
  EXPECT_EQ(q.totals.at("items"), 1000);
  EXPECT_EQ(count(q, Role::kItem), 2);
  EXPECT_EQ(total(q, Role::kItem), 1000);
  EXPECT_EQ(unread(q), 998);
  EXPECT_TRUE(summarised(q, Role::kItem));
  EXPECT_FALSE(summarised(q, Role::kDead));
  EXPECT_EQ(total(q, Role::kProducer), 1);
  // Read in full, the same keys are exact: nothing unread, nothing summarised.
  const Report full = build_report({kv("/q/items/~0000000000000001-aaaa-1", "first", 2)}, 3);
  EXPECT_EQ(unread(full.recipes.at(0)), 0);
  EXPECT_FALSE(summarised(full.recipes.at(0), Role::kItem));
}

TEST(Inspect, StableIdsForMachines) {
  EXPECT_STREQ(kind_id(Kind::kLockOrElection), "lock_or_election");
  EXPECT_STREQ(kind_id(Kind::kWorkQueue), "work_queue");
  EXPECT_STREQ(kind_id(Kind::kGate), "barrier");
  EXPECT_STREQ(kind_id(Kind::kBarrier), "count_or_double_barrier");
  EXPECT_STREQ(kind_id(Kind::kPlain), "key");
  EXPECT_STREQ(role_id(Role::kClaimed), "in_flight");
  EXPECT_STREQ(role_id(Role::kDead), "dead_letter");
  EXPECT_STREQ(role_id(Role::kWaiting), "waiting");
  EXPECT_STREQ(role_id(Role::kGateKey), "gate");
}

TEST(Inspect, ServiceInstancesAreDecoded) {
  const Report r =
      build_report({kv("/services/api/api-1",
                       R"({"name":"api","id":"api-1","address":"10.0.0.7","port":8080,"enabled":false})", 4, 0x9)},
                   5);
  ASSERT_EQ(r.recipes.size(), 1u);
  const Recipe& s = r.recipes[0];
  EXPECT_EQ(s.kind, Kind::kServices);
  EXPECT_EQ(s.name, "/services");
  ASSERT_EQ(s.entries.size(), 1u);
  EXPECT_EQ(s.entries[0].role, Role::kInstance);
  EXPECT_EQ(s.entries[0].id, "api-1");
  ASSERT_TRUE(s.entries[0].instance);
  EXPECT_EQ(s.entries[0].instance->address, "10.0.0.7");
  EXPECT_FALSE(s.entries[0].instance->enabled);
}

}  // namespace
}  // namespace etcd::recipes::inspect
