// Partitions between the members of a 3-member cluster (EtcdCluster::
// partition, isolate, partition_one_way, heal): the majority elects a leader
// and takes writes, the cut-off member refuses linearizable reads and our
// client moves to a member that can take the call, and after heal() the cut-off
// member catches up.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/testing/etcd_cluster.h"
#include "etcd/testing/private_network.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

class PartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = etcd::testing::partitions_unavailable()) GTEST_SKIP() << "partitions unavailable: " << *why;
    cluster_ = etcd::testing::EtcdCluster::start_three();
    old_leader_ = cluster_->wait_for_leader(10s);
    for (int i = 0; i < 3; ++i) {
      if (i != old_leader_) followers_.push_back(i);
    }
  }
  void TearDown() override {
    if (HasFailure() && cluster_) {
      for (int i = 0; i < cluster_->size(); ++i) {
        std::cerr << "--- member " << i << " log tail:\n" << cluster_->log_tail(i, 15) << "\n";
      }
    }
  }

  ClientOptions only(int member) const {
    ClientOptions o;
    o.endpoints = {cluster_->endpoint(member)};
    return o;
  }
  ClientOptions followers_only() const {
    ClientOptions o;
    for (int f : followers_) o.endpoints.push_back(cluster_->endpoint(f));
    return o;
  }
  // Every member, `first` first: a new client talks to it.
  ClientOptions starting_at(int first) const {
    ClientOptions o;
    o.endpoints.push_back(cluster_->endpoint(first));
    for (int i = 0; i < cluster_->size(); ++i) {
      if (i != first) o.endpoints.push_back(cluster_->endpoint(i));
    }
    return o;
  }
  // A leader other than the old one, reported by the members' metrics.
  bool new_leader_elected() const {
    auto l = cluster_->leader(200ms);
    return l && *l != old_leader_;
  }
  // What member `i` serves from its own store (a serializable read).
  std::optional<std::string> local_value(Client& c, const std::string& key) {
    auto r = c.get(key, GetOptions{.serializable = true}).timeout(1s).wait();
    if (!r.ok() || r->kvs.empty()) return std::nullopt;
    return r->kvs[0].value;
  }

  std::unique_ptr<etcd::testing::EtcdCluster> cluster_;
  int old_leader_ = -1;
  std::vector<int> followers_;
};

TEST_F(PartitionTest, IsolatedLeaderIsReplacedAndCatchesUpAfterHeal) {
  Client majority(followers_only());
  Client pinned(only(old_leader_));
  ASSERT_TRUE(majority.put("/p/before", "1").wait().ok());
  ASSERT_TRUE(eventually([&] { return local_value(pinned, "/p/before") == "1"; }, 5s));

  cluster_->isolate(old_leader_);
  EXPECT_EQ(cluster_->partitioned_links().size(), 4u);

  // The two followers elect a leader among themselves; the old one steps
  // down (it no longer hears a quorum).
  ASSERT_TRUE(eventually([&] { return new_leader_elected(); }, 10s)) << "no new leader among the followers";
  const int new_leader = *cluster_->leader();
  EXPECT_NE(new_leader, old_leader_);

  // Writes through the majority side succeed.
  for (int i = 0; i < 10; ++i) {
    auto r = majority.put("/p/during/" + std::to_string(i), "x").timeout(5s).wait();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }

  // The cut-off member still answers its clients (client traffic is not
  // partitioned) but only from its stale store: it has not seen the writes...
  EXPECT_EQ(local_value(pinned, "/p/before"), "1");
  EXPECT_EQ(local_value(pinned, "/p/during/9"), std::nullopt);
  // ...and it refuses linearizable reads: a client that knows only it fails.
  auto refused = pinned.get("/p/during/9").timeout(2s).wait();
  EXPECT_FALSE(refused.ok()) << "a member without quorum served a linearizable read";

  // A client that starts on the cut-off member moves to one that can take
  // the call, within the call's deadline.
  Client mover(starting_at(old_leader_));
  auto moved = mover.get("/p/during/9").timeout(8s).wait();
  ASSERT_TRUE(moved.ok()) << moved.status().to_string();
  ASSERT_EQ(moved->kvs.size(), 1u);
  EXPECT_NE(mover.current_endpoint(), cluster_->endpoint(old_leader_));

  // Heal: the old leader rejoins as a follower and catches up.
  cluster_->heal();
  EXPECT_TRUE(cluster_->partitioned_links().empty());
  ASSERT_TRUE(eventually([&] { return local_value(pinned, "/p/during/9") == "x"; }, 15s))
      << "the old leader did not catch up after heal()";
  cluster_->wait_healthy(15s);
  auto linear = pinned.get("/p/during/0").timeout(5s).wait();
  ASSERT_TRUE(linear.ok()) << linear.status().to_string();
  EXPECT_EQ(linear->kvs.size(), 1u);
  auto after = pinned.put("/p/after", "y").timeout(5s).wait();
  EXPECT_TRUE(after.ok()) << after.status().to_string();
}

TEST_F(PartitionTest, MinorityFollowerRefusesAndMajorityKeepsLeader) {
  const int cut = followers_[0];
  Client pinned(only(cut));
  Client rest(starting_at(old_leader_));
  cluster_->partition({cut}, {old_leader_, followers_[1]});

  // The leader keeps its quorum (itself and the other follower).
  for (int i = 0; i < 5; ++i) {
    auto r = rest.put("/q/" + std::to_string(i), "v").timeout(5s).wait();
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  EXPECT_EQ(cluster_->leader(), old_leader_);
  // The cut-off follower loses its leader and says so at once ("no
  // leader") or lets the call run out of time; either way it serves
  // no linearizable read.
  ASSERT_TRUE(eventually(
      [&] {
        auto r = pinned.get("/q/4").timeout(1500ms).wait();
        return !r.ok();
      },
      10s));
  cluster_->heal();
  ASSERT_TRUE(eventually([&] { return local_value(pinned, "/q/4") == "v"; }, 15s));
}

// One way: the leader's packets to the followers are dropped, theirs to it
// still arrive. The followers stop hearing heartbeats and elect a leader of
// their own; the old leader hears the higher term and steps down.
TEST_F(PartitionTest, OneWayPartitionFromLeader) {
  Client majority(followers_only());
  Client pinned(only(old_leader_));
  cluster_->partition_one_way({old_leader_}, followers_);
  EXPECT_EQ(cluster_->partitioned_links().size(), 2u);

  ASSERT_TRUE(eventually([&] { return new_leader_elected(); }, 10s)) << "the followers elected no leader";
  auto w = majority.put("/o/during", "1").timeout(5s).wait();
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  // What the old leader sends never arrives, so it cannot answer a
  // linearizable read (its read-index request to the new leader is lost).
  EXPECT_FALSE(pinned.get("/o/during").timeout(2s).wait().ok());

  cluster_->heal();
  ASSERT_TRUE(eventually([&] { return local_value(pinned, "/o/during") == "1"; }, 15s));
  cluster_->wait_healthy(15s);
}

// The other way: the leader's packets reach the followers, but nothing of
// theirs reaches it. It stops hearing its quorum and steps down
// (check-quorum); a follower takes over.
TEST_F(PartitionTest, OneWayPartitionToLeader) {
  Client majority(followers_only());
  Client pinned(only(old_leader_));
  cluster_->partition_one_way(followers_, {old_leader_});
  ASSERT_TRUE(eventually([&] { return new_leader_elected(); }, 10s)) << "the followers elected no leader";
  auto w = majority.put("/o2/during", "1").timeout(5s).wait();
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  EXPECT_EQ(local_value(pinned, "/o2/during"), std::nullopt);
  cluster_->heal();
  ASSERT_TRUE(eventually([&] { return local_value(pinned, "/o2/during") == "1"; }, 15s));
  cluster_->wait_healthy(15s);
}

// A paused partition is not a dead connection: a watch on a follower that
// is cut off and healed again delivers every event, none twice.
TEST_F(PartitionTest, WatchOnCutOffMemberResumesAfterHeal) {
  const int cut = followers_[0];
  Client watcher(only(cut));
  Client writer(followers_only());
  std::mutex mu;
  std::vector<std::string> seen;
  auto watch = watcher.watch("/w/", WatchOptions{.prefix = true}, [&](Result<WatchResponse> r) {
    if (!r.ok()) return;
    std::lock_guard lk(mu);
    for (const auto& e : r->events) seen.push_back(e.kv.value);
  });
  // A watch starts at the store's revision when etcd creates it: the first
  // put must come after that, or its event is before the watch.
  ASSERT_TRUE(watch.wait_created(std::chrono::steady_clock::now() + 10s));
  ASSERT_TRUE(writer.put("/w/k", "0").wait().ok());
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lk(mu);
    return seen.size() == 1;
  }));
  cluster_->isolate(cut);
  Client rest(ClientOptions{.endpoints = {cluster_->endpoint(old_leader_), cluster_->endpoint(followers_[1])}});
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(rest.put("/w/k", std::to_string(i)).timeout(5s).wait().ok());
  cluster_->heal();
  ASSERT_TRUE(eventually(
      [&] {
        std::lock_guard lk(mu);
        return seen.size() >= 6;
      },
      20s));
  std::lock_guard lk(mu);
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
}

}  // namespace
}  // namespace etcd::test
