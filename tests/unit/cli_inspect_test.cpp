// `etcd-recipes inspect`: keys laid out as each recipe writes them
// (docs/recipes.md) grouped into recipes, with their state, by the library's
// recognizer (etcd/recipes/inspect.h), and worded by the tool's text
// (tools/etcd-recipes/inspect_text.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "etcd/recipes/inspect.h"
#include "inspect_text.h"
#include "recipes/queues/work_record.h"
#include "unit/test_keys.h"

namespace etcd_cli::inspect {
namespace {

using namespace etcd::recipes::inspect;

using test_keys::kv;

const Recipe& only(const Report& r) {
  EXPECT_EQ(r.recipes.size(), 1u);
  return r.recipes.at(0);
}

const Recipe* find(const Report& r, Kind kind, const std::string& name) {
  for (const auto& x : r.recipes) {
    if (x.kind == kind && x.name == name) return &x;
  }
  return nullptr;
}

std::string text(const Report& r, const Leases& leases = {}, int64_t now_ms = 0) {
  std::string out;
  for (const auto& line : render_text(r, leases, now_ms)) out += line + "\n";
  return out;
}

TEST(CliInspect, LockHolderIsTheLowestCreateRevisionAndTheRestWaitInOrder) {
  // Listed out of order on purpose: order comes from create revisions, not keys.
  const Report r =
      build_report({kv("/locks/orders/7b", "host:3", 30, 0x7b), kv("/locks/orders/694d", "host:1", 10, 0x694d),
                    kv("/locks/orders/1a", "host:2", 20, 0x1a)},
                   40);
  const Recipe& lock = only(r);
  EXPECT_EQ(lock.kind, Kind::kLockOrElection);
  EXPECT_EQ(lock.name, "/locks/orders");
  ASSERT_EQ(lock.entries.size(), 3u);
  EXPECT_EQ(lock.entries[0].role, Role::kHolder);
  EXPECT_EQ(lock.entries[0].kv.value, "host:1");
  EXPECT_EQ(lock.entries[1].role, Role::kWaiting);
  EXPECT_EQ(lock.entries[1].kv.value, "host:2");
  EXPECT_EQ(lock.entries[2].kv.value, "host:3");
  const std::string t = text(r, {{0x694d, {7, 10}}});
  EXPECT_NE(
      t.find("lock or election /locks/orders: held by \"host:1\" (lease 000000000000694d, TTL 7/10 s), token 10; 2 "
             "waiting"),
      std::string::npos)
      << t;
}

TEST(CliInspect, AContenderKeyMustBeNamedByItsOwnLease) {
  // The same layout with a key that does not name its lease is not a contender.
  const Report r = build_report({kv("/locks/x/694d", "v", 10, 0x1234)}, 11);
  EXPECT_EQ(only(r).kind, Kind::kTransient);
}

// The ordered layout's keys (~<R>-<lease>-<n>, 16 hex digits each) are
// contenders too, in one lock with Go-layout keys, ordered by creation.
TEST(CliInspect, OrderedLayoutKeysAreContendersOfTheSameLock) {
  const Report r =
      build_report({kv("/locks/o/~0000000000000009-0000000000000abc-0000000000000001", "host:2", 12, 0xabc),
                    kv("/locks/o/7b", "host:1", 11, 0x7b),
                    kv("/locks/o/~0000000000000010-0000000000000abd-0000000000000002", "host:3", 13, 0xabd)},
                   14);
  const Recipe& lock = only(r);
  EXPECT_EQ(lock.kind, Kind::kLockOrElection);
  ASSERT_EQ(lock.entries.size(), 3u);
  EXPECT_EQ(lock.entries[0].role, Role::kHolder);
  EXPECT_EQ(lock.entries[0].kv.value, "host:1");
  EXPECT_EQ(lock.entries[1].kv.value, "host:2");
  // Named by another lease: not a contender.
  EXPECT_EQ(
      only(build_report({kv("/locks/p/~0000000000000009-0000000000000abc-0000000000000001", "v", 12, 0x1)}, 13)).kind,
      Kind::kTransient);
  // Read-write lock keys of the ordered layout.
  const Report rw = build_report({kv("/rw/write/~0000000000000009-0000000000000002-0000000000000001", "w", 10, 2),
                                  kv("/rw/read/~0000000000000009-0000000000000003-0000000000000002", "r", 11, 3)},
                                 12);
  EXPECT_EQ(only(rw).kind, Kind::kRwLock);
  EXPECT_EQ(count(only(rw), Role::kHolder), 1);
}

TEST(CliInspect, ParentPrefixGroupsManyRecipes) {
  const Report r =
      build_report({kv("/locks/a/1", "h1", 5, 1), kv("/locks/b/2", "h2", 6, 2), kv("/locks/b/3", "h3", 7, 3)}, 8);
  ASSERT_EQ(r.recipes.size(), 2u);
  EXPECT_EQ(r.recipes[0].name, "/locks/a");
  EXPECT_EQ(r.recipes[1].name, "/locks/b");
  EXPECT_EQ(count(r.recipes[1], Role::kWaiting), 1);
}

TEST(CliInspect, RwLockReadersBeforeTheFirstWriterHoldAndADowngradedWriterReads) {
  const Report r = build_report({kv("/rw/read/1", "r1", 10, 1), kv("/rw/write/2", "w2", 11, 2),
                                 kv("/rw/read/3", "r3", 12, 3), kv("/rw/write/4", "w4", 13, 4)},
                                14);
  const Recipe& rw = only(r);
  EXPECT_EQ(rw.kind, Kind::kRwLock);
  EXPECT_EQ(count(rw, Role::kHolder), 1);
  EXPECT_EQ(rw.entries[0].kv.value, "r1");
  // The writer at 11 downgraded (put again): it reads now, and so does the reader behind it.
  const Report d = build_report({kv("/rw/read/1", "r1", 10, 1), kv("/rw/write/2", "w2", 11, 2, 15),
                                 kv("/rw/read/3", "r3", 12, 3), kv("/rw/write/4", "w4", 13, 4)},
                                16);
  EXPECT_EQ(count(only(d), Role::kHolder), 3);
  EXPECT_EQ(only(d).entries[1].mode, "read");
  // A writer first holds alone.
  const Report w = build_report({kv("/rw/write/2", "w2", 11, 2), kv("/rw/read/3", "r3", 12, 3)}, 13);
  EXPECT_EQ(count(only(w), Role::kHolder), 1);
  EXPECT_NE(text(w).find("write-locked by \"w2\""), std::string::npos) << text(w);
}

TEST(CliInspect, SemaphoreHoldsTheFirstNAndQueuesTheRest) {
  const Report r = build_report({kv("/sem/permits", "2", 5), kv("/sem/holders/a-1", "h1", 5, 0xa),
                                 kv("/sem/holders/b-1", "h2", 6, 0xb), kv("/sem/holders/c-1", "h3", 7, 0xc)},
                                8);
  const Recipe& s = only(r);
  EXPECT_EQ(s.kind, Kind::kSemaphore);
  EXPECT_EQ(s.permits, 2);
  EXPECT_EQ(count(s, Role::kHolder), 2);
  EXPECT_EQ(count(s, Role::kWaiting), 1);
  EXPECT_NE(text(r).find("semaphore /sem: 2 of 2 permits held; 1 waiting"), std::string::npos) << text(r);
}

// The ordered layout: permits are the slot keys NAME/slots/<i>, waiters
// the queue keys NAME/queue/~<R>-<lease>-<n> in creation order.
TEST(CliInspect, AnOrderedSemaphoreHoldsItsSlotsAndQueuesTheRest) {
  const std::string q1 = "/os/queue/~0000000000000009-000000000000000c-0000000000000001";
  const std::string q2 = "/os/queue/~0000000000000008-000000000000000d-0000000000000002";
  const Report r = build_report(
      {kv("/os/permits", "2 ordered", 5), kv("/os/slots/0", "/os/queue/~x host:1", 9, 0xa),
       kv("/os/slots/1", "/os/queue/~y host:2", 7, 0xb), kv(q1, "host:3", 10, 0xc), kv(q2, "host:4", 11, 0xd)},
      12);
  const Recipe& s = only(r);
  EXPECT_EQ(s.kind, Kind::kSemaphore);
  EXPECT_EQ(s.permits, 2);
  EXPECT_EQ(count(s, Role::kHolder), 2);
  EXPECT_EQ(count(s, Role::kWaiting), 2);
  ASSERT_EQ(s.entries.size(), 5u);
  EXPECT_EQ(s.entries[3].kv.key, q1) << "waiters in creation order";
  EXPECT_NE(text(r).find("semaphore /os: 2 of 2 permits held; 2 waiting"), std::string::npos) << text(r);
  // Without "N ordered" in NAME/permits, NAME/queue/ keys are a lock's.
  const Report lock = build_report({kv(q1, "host:3", 10, 0xc)}, 12);
  EXPECT_EQ(only(lock).kind, Kind::kLockOrElection);
  EXPECT_EQ(only(lock).name, "/os/queue");
  // Summarised: the queue's total counts every waiter.
  const Report big = build_report({kv("/os/permits", "2 ordered", 5), kv("/os/slots/0", "/os/queue/~x h", 9, 0xa),
                                   kv("/os/slots/1", "/os/queue/~y h", 7, 0xb), kv(q1, "host:3", 10, 0xc)},
                                  9000, {{"/os/queue/", 4000}});
  EXPECT_EQ(total(only(big), Role::kHolder), 2);
  EXPECT_EQ(total(only(big), Role::kWaiting), 4000);
}

TEST(CliInspect, QueueDepthAndOldestItem) {
  const std::string p = "00000000000000aa";
  const Report r = build_report({kv("/q/items/" + p + "-0000000000000002", "b", 12),
                                 kv("/q/items/" + p + "-0000000000000001", "a", 11), kv("/q/producers/" + p, "2", 12)},
                                20);
  const Recipe& q = only(r);
  EXPECT_EQ(q.kind, Kind::kQueue);
  EXPECT_EQ(count(q, Role::kItem), 2);
  EXPECT_EQ(q.entries[0].kv.value, "a");
  EXPECT_NE(text(r).find("queue /q: 2 items, oldest created at revision 11 (9 revisions ago)"), std::string::npos)
      << text(r);
}

TEST(CliInspect, PriorityQueueServesLowerPrioritiesFirst) {
  const std::string p = "-00000000000000aa-000000000000000";
  const Report r = build_report({kv("/pq/items/000a" + p + "1", "ten", 10), kv("/pq/items/0000" + p + "2", "zero", 11),
                                 kv("/pq/items/manual", "lowest", 9)},
                                12);
  const Recipe& q = only(r);
  EXPECT_EQ(q.kind, Kind::kPriorityQueue);
  ASSERT_EQ(q.entries.size(), 3u);
  EXPECT_EQ(q.entries[0].kv.value, "zero");
  EXPECT_EQ(q.entries[1].priority, 10);
  EXPECT_EQ(q.entries[2].priority, 65535);
}

TEST(CliInspect, WorkQueueInFlightClaimsDelaysAndDeadLetters) {
  namespace wr = etcd::recipes::detail;
  const int64_t now = 1'700'000'000'000;
  const Report r = build_report(
      {
          kv("/wq/items/a", wr::encode_work_record("ready"), 10),
          // Claimed twice (version 3): this claim is its second delivery.
          kv("/wq/items/b", wr::encode_work_record("busy"), 11, 0, 20, 3),
          kv("/wq/claims/b", "worker:7", 20, 0x77),
          kv("/wq/items/c", wr::encode_work_record("later", now + 30'000), 12),
          kv("/wq/dead/d", wr::encode_dead_record("bad", 5, now - 90'000, "exit 3"), 13),
          kv("/wq/claims/gone", "worker:8", 21, 0x78),
      },
      22);
  const Recipe& q = only(r);
  EXPECT_EQ(q.kind, Kind::kWorkQueue);
  EXPECT_EQ(count(q, Role::kItem), 2);
  EXPECT_EQ(count(q, Role::kClaimed), 1);
  EXPECT_EQ(count(q, Role::kDead), 1);
  EXPECT_EQ(count(q, Role::kClaim), 1) << "a claim whose item is gone stays visible";
  const auto claimed =
      std::find_if(q.entries.begin(), q.entries.end(), [](const Entry& e) { return e.role == Role::kClaimed; });
  EXPECT_EQ(claimed->claimed_by, "worker:7");
  EXPECT_EQ(claimed->claim_lease, 0x77);
  EXPECT_EQ(claimed->deliveries, 2);
  EXPECT_EQ(claimed->payload, "busy");
  const std::string t = text(r, {{0x77, {25, 30}}}, now);
  EXPECT_NE(t.find("work queue /wq: 1 ready, 1 delayed, 1 in flight, 1 dead letter"), std::string::npos) << t;
  EXPECT_NE(t.find("in flight b claimed by \"worker:7\", attempt 2 (visibility lease 0000000000000077, TTL 25/30 s)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("delayed c \"later\" (ready in 30 s)"), std::string::npos) << t;
  EXPECT_NE(t.find("dead letter d after 5 deliveries, dead for 90 s: \"exit 3\""), std::string::npos) << t;
}

TEST(CliInspect, Barriers) {
  // A gate whose setter is alive, and one whose setter's lease is gone.
  const Report g =
      build_report({kv("/b", "setter:1", 5, 0x5), kv("/b/set-by", "setter:1", 5), kv("/g/set-by", "setter:2", 6)}, 7);
  ASSERT_EQ(g.recipes.size(), 2u);
  EXPECT_EQ(g.recipes[0].kind, Kind::kGate);
  EXPECT_EQ(g.recipes[0].entries.size(), 2u);
  EXPECT_NE(text(g).find("barrier /b: set by \"setter:1\" at revision 5 (setter alive"), std::string::npos) << text(g);
  EXPECT_NE(text(g).find("barrier /g: set by \"setter:2\" at revision 6 (the setter's lease is gone"),
            std::string::npos)
      << text(g);

  const Report c =
      build_report({kv("/c/parties/h:1-0123456789abcdef-1", "h:1", 8, 1),
                    kv("/c/parties/h-x:2-0123456789abcdee-3", "h-x:2", 9, 2), kv("/c/ready", "h:9", 3, 0, 4)},
                   10);
  EXPECT_EQ(only(c).kind, Kind::kCountBarrier);
  EXPECT_NE(text(c).find("count barrier /c: 2 parties waiting; last round completed at revision 4"), std::string::npos)
      << text(c);

  const Report d = build_report({kv("/d/parties/h:1-0123456789abcdef", "", 8, 1), kv("/d/ready", "", 9)}, 10);
  EXPECT_EQ(only(d).kind, Kind::kDoubleBarrier);
  EXPECT_NE(text(d).find("round in progress"), std::string::npos) << text(d);
}

TEST(CliInspect, CountersTransientAndPlainKeys) {
  const Report r =
      build_report({kv("/c", "42", 3, 0, 9, 4), kv("/c/receipts/h:1-0123456789abcdef", "7", 9), kv("/n", "-7", 4),
                    kv("/t", "busy", 5, 0x99), kv("/p", "hello\nworld", 6), kv("/z", "007", 7)},
                   10);
  ASSERT_EQ(r.recipes.size(), 5u);
  EXPECT_EQ(find(r, Kind::kCounter, "/c")->value, 42);
  EXPECT_EQ(count(*find(r, Kind::kCounter, "/c"), Role::kReceipt), 1);
  EXPECT_EQ(find(r, Kind::kCounter, "/n")->value, -7);
  EXPECT_NE(find(r, Kind::kTransient, "/t"), nullptr);
  EXPECT_NE(find(r, Kind::kPlain, "/p"), nullptr);
  EXPECT_NE(find(r, Kind::kPlain, "/z"), nullptr) << "007 is not what a counter writes";
  const std::string t = text(r, {{0x99, {-1, 10}}});
  EXPECT_NE(t.find("counter /c: 42 (4 writes, last at revision 9); 1 receipt"), std::string::npos) << t;
  EXPECT_NE(t.find("transient key /t: \"busy\" (lease 0000000000000099, expired"), std::string::npos) << t;
  EXPECT_NE(t.find("key /p: \"hello\\nworld\""), std::string::npos) << t;
}

TEST(CliInspect, ServicesGroupByBaseAndService) {
  const auto instance = [](const std::string& name, const std::string& id, int port) {
    return R"({"name":")" + name + R"(","id":")" + id + R"(","address":"10.0.0.1","port":)" + std::to_string(port) +
           R"(,"sslPort":null,"payload":null,"registrationTimeUTC":1,"enabled":true})";
  };
  const Report r = build_report({kv("/services/api/a1", instance("api", "a1", 8080), 5, 1),
                                 kv("/services/api/a2", instance("api", "a2", 8081), 6, 2),
                                 kv("/services/db/d1", instance("db", "d1", 5432), 7, 3),
                                 // Its JSON names another instance: not a registration of this key.
                                 kv("/services/db/d2", instance("db", "d1", 5432), 8, 4)},
                                9);
  const Recipe* s = find(r, Kind::kServices, "/services");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(count(*s, Role::kInstance), 3);
  EXPECT_NE(find(r, Kind::kTransient, "/services/db/d2"), nullptr);
  EXPECT_NE(text(r).find("services /services: api: 2 instances; db: 1 instance"), std::string::npos) << text(r);
  EXPECT_NE(text(r).find("  api a1 10.0.0.1:8080 (lease"), std::string::npos) << text(r);
}

// --- summaries: collections counted, their head read ---------------------------

TEST(CliInspect, CollectionsAreTheRecipesManyKeys) {
  using Head = Collection::Head;
  const auto c = [](etcd::KeyValue k) { return collection_of(k); };
  ASSERT_TRUE(c(kv("/q/items/00000000000000aa-0000000000000001", "a", 5)));
  EXPECT_EQ(c(kv("/q/items/x", "a", 5))->dir, "/q/items/");
  EXPECT_EQ(c(kv("/q/items/x", "a", 5))->head, Head::kPerGroup);
  EXPECT_EQ(c(kv("/wq/dead/x", "a", 5))->head, Head::kByKey);
  EXPECT_EQ(c(kv("/locks/a/694d", "h", 5, 0x694d))->dir, "/locks/a/");
  EXPECT_EQ(c(kv("/locks/a/694d", "h", 5, 0x694d))->head, Head::kByCreation);
  EXPECT_EQ(c(kv("/s/holders/694d-1", "h", 5, 0x694d))->head, Head::kByCreation);
  EXPECT_EQ(c(kv("/rw/write/694d", "h", 5, 0x694d))->dir, "/rw/write/");
  EXPECT_FALSE(c(kv("/locks/a/694d", "h", 5, 0x1234))) << "not on its own lease: a transient key";
  EXPECT_FALSE(c(kv("/plain", "v", 5)));
  EXPECT_FALSE(c(kv("/c/hits", "42", 5)));
}

TEST(CliInspect, ASummarisedLockCountsEveryWaiterAndListsTheHead) {
  std::vector<etcd::KeyValue> head;
  for (int i = 0; i < 20; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "%x", 0x100 + i);  // a contender's key names its lease
    head.push_back(kv(std::string("/l/") + name, "h" + std::to_string(i), 10 + i, 0x100 + i));
  }
  const Report r = build_report(head, 5000, {{"/l/", 1000}});
  const Recipe& lock = only(r);
  EXPECT_EQ(total(lock, Role::kHolder), 1);
  EXPECT_EQ(total(lock, Role::kWaiting), 999);
  const auto lines = render_text(r, {}, 0, {.lines_per_recipe = 10, .recipes = 40});
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_NE(lines[0].find("held by \"h0\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("; 999 waiting"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[11], "  ... and 990 more (inspect --all lists every key)");
}

TEST(CliInspect, ASummarisedSemaphoreHoldsNOfItsTotal) {
  std::vector<etcd::KeyValue> keys = {kv("/s/permits", "50", 1)};
  for (int i = 0; i < 20; ++i)
    keys.push_back(kv("/s/holders/" + std::to_string(100 + i) + "-1", "h", 10 + i, 0x100 + i));
  const Report r = build_report(keys, 9000, {{"/s/holders/", 5000}});
  const Recipe& sem = only(r);
  EXPECT_EQ(total(sem, Role::kHolder), 50);
  EXPECT_EQ(total(sem, Role::kWaiting), 4950);
  EXPECT_NE(render_text(r, {}, 0)[0].find("50 of 50 permits held; 4950 waiting"), std::string::npos)
      << render_text(r, {}, 0)[0];
}

TEST(CliInspect, ASummarisedQueueStatesItsDepthAndHeadInFewLines) {
  std::vector<etcd::KeyValue> keys;
  // The page read: producer aa's first keys; the per-producer heads: bb's oldest is the queue's head.
  for (int i = 1; i <= 30; ++i)
    keys.push_back(kv("/q/items/00000000000000aa-" + std::string(14, '0') + (i < 10 ? "0" : "") + std::to_string(i),
                      "a", 100 + 2 * i));
  keys.push_back(kv("/q/items/00000000000000bb-0000000000000001", "first", 50));
  const Report r = build_report(keys, 600000, {{"/q/items/", 500000}});
  const Recipe& q = only(r);
  EXPECT_EQ(total(q, Role::kItem), 500000);
  const auto lines = render_text(r, {}, 0, {.lines_per_recipe = 10, .recipes = 40});
  EXPECT_LE(lines.size(), 12u);
  EXPECT_NE(lines[0].find("queue /q: 500000 items, oldest created at revision 50"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"first\""), std::string::npos) << lines[1];
  EXPECT_EQ(lines.back(), "  ... and 499990 more (inspect --all lists every key)");
}

TEST(CliInspect, ASummarisedWorkQueueCountsInFlightAndDeadLettersWhole) {
  namespace wr = etcd::recipes::detail;
  const Report r = build_report(
      {
          kv("/wq/items/a", wr::encode_work_record("ready"), 10),
          kv("/wq/claims/z", "worker:7", 20, 0x77),  // its item is beyond the keys read
          kv("/wq/dead/d", wr::encode_dead_record("bad", 5, 0, "exit 3"), 13),
      },
      22, {{"/wq/items/", 100000}, {"/wq/claims/", 600}, {"/wq/dead/", 42}});
  const Recipe& q = only(r);
  EXPECT_EQ(total(q, Role::kClaimed), 600);
  EXPECT_EQ(total(q, Role::kItem), 100000 - 600);
  EXPECT_EQ(total(q, Role::kDead), 42);
  const std::string t = text(r);
  EXPECT_NE(t.find("work queue /wq: 99400 waiting (of the 1 read: 1 ready, 0 delayed), 600 in flight, 42 dead letters"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("claim z (its item not read), by \"worker:7\""), std::string::npos) << t;
}

TEST(CliInspect, ASummaryListsAtMostSoManyRecipes) {
  std::vector<etcd::KeyValue> keys;
  for (int i = 0; i < 50; ++i) keys.push_back(kv("/k/" + std::to_string(100 + i), "v", 10 + i));
  const auto lines = render_text(build_report(keys, 100), {}, 0, {.lines_per_recipe = 10, .recipes = 40});
  ASSERT_EQ(lines.size(), 41u);
  EXPECT_EQ(lines.back(), "... and 10 more recipes (inspect --all lists every key)");
}

TEST(CliInspect, Excerpts) {
  EXPECT_EQ(excerpt("abc"), "\"abc\"");
  EXPECT_EQ(excerpt(std::string("a\0b", 3)), "\"a\\x00b\"");
  EXPECT_EQ(excerpt("abcdef", 3), "\"abc\"...");
}

}  // namespace
}  // namespace etcd_cli::inspect
