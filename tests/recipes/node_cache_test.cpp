// NodeCache<T> against a real etcd: events with old and new values, the
// state and its revision, values that do not decode, convergence after a
// member restart and after a compaction while the client was cut off.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "etcd/recipes/node_cache.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"
#include "support/event_log.h"

namespace etcd::test {
namespace {

using recipes::NodeCache;
using recipes::NodeEvent;

template <class T>
using NodeEvents = EventLog<NodeEvent<T>>;

using NodeType = NodeEvent<std::string>::Type;

class NodeCacheTest : public SingleMemberTest {};

TEST_F(NodeCacheTest, ReportsCreateUpdateDeleteWithOldAndNewValues) {
  const std::string k = key("node");
  NodeCache<std::string> cache(client(), k);
  NodeEvents<std::string> events;
  auto sub = cache.on_change(events.listener());
  EXPECT_EQ(cache.wait_initialized().wait().status().code(), StatusCode::kFailedPrecondition) << "before start()";
  cache.start();
  ASSERT_TRUE(cache.wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(events.wait_for(1));
  EXPECT_EQ(events.at(0).type, NodeType::kInitialized);
  EXPECT_FALSE(events.at(0).current.has_value());
  EXPECT_FALSE(cache.exists());

  auto created = client().put(k, "one").wait();
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(events.wait_for(2));
  auto e = events.at(1);
  EXPECT_EQ(e.type, NodeType::kCreated);
  ASSERT_TRUE(e.current && e.current->decoded());
  EXPECT_EQ(*e.current->value, "one");
  EXPECT_EQ(e.current->key, k);
  EXPECT_EQ(e.current->mod_revision, created->header.revision);
  EXPECT_EQ(e.revision, created->header.revision);
  EXPECT_FALSE(e.previous.has_value());
  EXPECT_FALSE(e.resync);

  ASSERT_TRUE(client().put(k, "two").wait().ok());
  ASSERT_TRUE(events.wait_for(3));
  e = events.at(2);
  EXPECT_EQ(e.type, NodeType::kUpdated);
  EXPECT_EQ(*e.previous->value, "one");
  EXPECT_EQ(*e.current->value, "two");
  EXPECT_EQ(e.current->version, 2);
  ASSERT_TRUE(cache.current().has_value());
  EXPECT_EQ(*cache.current()->value, "two");
  EXPECT_GE(cache.revision(), e.revision);

  ASSERT_TRUE(client().put(key("node2"), "a neighbour sharing the key as a prefix").wait().ok());
  auto deleted = client().del(k).wait();
  ASSERT_TRUE(deleted.ok());
  ASSERT_TRUE(events.wait_for(4));
  e = events.at(3);
  EXPECT_EQ(e.type, NodeType::kDeleted);
  EXPECT_EQ(*e.previous->value, "two");
  EXPECT_FALSE(e.current.has_value());
  EXPECT_EQ(e.revision, deleted->header.revision);
  EXPECT_FALSE(cache.exists());
  EXPECT_EQ(events.size(), 4u) << "the neighbour key was reported";
  EXPECT_FALSE(events.overlapped.load());
  EXPECT_TRUE(cache.errors().empty());
  cache.close();
}

TEST_F(NodeCacheTest, AValueThatDoesNotDecodeIsReportedNeverThrown) {
  const std::string k = key("limit");
  ASSERT_TRUE(client().put(k, "not a number").wait().ok());
  NodeCache<int64_t> cache(client(), k);
  NodeEvents<int64_t> events;
  auto sub = cache.on_change(events.listener());
  Mailbox<Status> reported;
  auto on_error = cache.on_error([&](const Status& s) { reported.put(s); });
  cache.start();
  ASSERT_TRUE(cache.wait_initialized().timeout(10s).wait().ok());
  ASSERT_TRUE(events.wait_for(1));
  auto e = events.at(0);
  ASSERT_TRUE(e.current.has_value()) << "an undecodable value is still a value the key has";
  EXPECT_FALSE(e.current->decoded());
  EXPECT_TRUE(e.current->error.is(Errc::kDecodeFailed)) << e.current->error.to_string();
  EXPECT_EQ(e.current->error.code(), StatusCode::kDataLoss);
  EXPECT_NE(e.current->error.message().find(k), std::string::npos) << "names the key";
  auto st = reported.take();
  ASSERT_TRUE(st.has_value());
  EXPECT_NE(st->message().find(k), std::string::npos);
  EXPECT_NE(st->message().find("NodeCache"), std::string::npos) << st->message();
  ASSERT_EQ(cache.errors().size(), 1u);

  ASSERT_TRUE(client().put(k, "42").wait().ok());
  ASSERT_TRUE(events.wait_for(2));
  e = events.at(1);
  EXPECT_EQ(e.type, NodeEvent<int64_t>::Type::kUpdated);
  EXPECT_FALSE(e.previous->decoded());
  ASSERT_TRUE(e.current->decoded());
  EXPECT_EQ(*e.current->value, 42);
  EXPECT_TRUE(e.current->error.ok());
  EXPECT_EQ(*cache.current()->value, 42);
  EXPECT_EQ(cache.errors().size(), 1u) << "reported once per stored version";
  cache.close();
}

TEST_F(NodeCacheTest, AfterACompactionWhileCutOffItReportsWhatChanged) {
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions o;
  o.endpoints = {proxy->endpoint()};
  Client cut_off(o);
  const std::string updated = key("updated");
  const std::string deleted = key("deleted");
  const std::string created = key("created");
  const std::string same = key("same");
  for (const auto& k : {updated, deleted, same}) ASSERT_TRUE(client().put(k, "before").wait().ok());

  struct Watched {
    std::unique_ptr<NodeCache<std::string>> cache;
    NodeEvents<std::string> events;
    Subscription sub;
  };
  std::vector<std::unique_ptr<Watched>> caches;
  for (const auto& k : {updated, deleted, created, same}) {
    auto w = std::make_unique<Watched>();
    w->cache = std::make_unique<NodeCache<std::string>>(cut_off, k);
    w->sub = w->cache->on_change(w->events.listener());
    w->cache->start();
    ASSERT_TRUE(w->cache->wait_initialized().timeout(10s).wait().ok());
    caches.push_back(std::move(w));
  }

  proxy->cut();
  ASSERT_TRUE(client().put(updated, "after").wait().ok());
  ASSERT_TRUE(client().del(deleted).wait().ok());
  ASSERT_TRUE(client().put(created, "new").wait().ok());
  ASSERT_TRUE(client().put(same, "tmp").wait().ok());  // changed and changed back: still an update
  ASSERT_TRUE(client().put(same, "before").wait().ok());
  auto probe = client().put(key("probe"), "x").wait();
  ASSERT_TRUE(probe.ok());
  ASSERT_TRUE(client().compact(probe->header.revision).wait().ok());
  proxy->restore();

  for (auto& w : caches) {
    ASSERT_TRUE(w->events.wait_for(2)) << w->cache->key();
    EXPECT_TRUE(eventually([&] { return w->cache->resyncs() == 1; })) << w->cache->key();
  }
  auto e = caches[0]->events.at(1);
  EXPECT_EQ(e.type, NodeType::kUpdated);
  EXPECT_TRUE(e.resync);
  EXPECT_EQ(*e.previous->value, "before");
  EXPECT_EQ(*e.current->value, "after");
  EXPECT_GE(e.revision, probe->header.revision);
  e = caches[1]->events.at(1);
  EXPECT_EQ(e.type, NodeType::kDeleted);
  EXPECT_TRUE(e.resync);
  EXPECT_EQ(*e.previous->value, "before");
  e = caches[2]->events.at(1);
  EXPECT_EQ(e.type, NodeType::kCreated);
  EXPECT_EQ(*e.current->value, "new");
  e = caches[3]->events.at(1);
  EXPECT_EQ(e.type, NodeType::kUpdated) << "a new version with the old bytes";
  EXPECT_EQ(e.current->version, 3);

  // And each follows the key after the resync.
  ASSERT_TRUE(client().put(updated, "later").wait().ok());
  ASSERT_TRUE(caches[0]->events.wait_for(3));
  EXPECT_EQ(*caches[0]->events.at(2).current->value, "later");
  EXPECT_FALSE(caches[0]->events.at(2).resync);
  for (auto& w : caches) {
    EXPECT_FALSE(w->events.overlapped.load());
    w->cache->close();
  }
}

class NodeCacheRestartTest : public ThreeMemberTest {};

TEST_F(NodeCacheRestartTest, ConvergesAfterItsMemberRestarts) {
  // The cache's client talks to member 0 only; writes go through member 1.
  ClientOptions only0;
  only0.endpoints = {cluster_->endpoint(0)};
  Client watcher(only0);
  Client writer(options_starting_at(1));
  const std::string k = "/t/restart/node";
  ASSERT_TRUE(writer.put(k, "v0").wait().ok());
  NodeCache<std::string> cache(watcher, k);
  NodeEvents<std::string> events;
  auto sub = cache.on_change(events.listener());
  cache.start();
  ASSERT_TRUE(cache.wait_initialized().timeout(15s).wait().ok());

  cluster_->stop(0);
  ASSERT_TRUE(writer.put(k, "v1").timeout(10s).wait().ok());
  ASSERT_TRUE(writer.put(k, "v2").timeout(10s).wait().ok());
  cluster_->restart(0);

  ASSERT_TRUE(eventually([&] { return cache.current() && *cache.current()->value == "v2"; }, 30s))
      << "the cache did not converge";
  // No compaction: the watch resumed where it stopped, so both writes are
  // reported as they happened, in order.
  ASSERT_TRUE(events.wait_for(3));
  EXPECT_EQ(*events.at(1).current->value, "v1");
  EXPECT_EQ(*events.at(2).current->value, "v2");
  EXPECT_FALSE(events.at(2).resync);
  EXPECT_LT(events.at(1).revision, events.at(2).revision);
  cache.close();
}

}  // namespace
}  // namespace etcd::test
