// Real faults on a 3-member cluster: the member a client talks to dies.
#include <map>
#include <set>

#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

TEST_F(ThreeMemberTest, ClientKeepsWorkingWhenItsMemberIsKilled) {
  ClientOptions o;
  o.endpoints = cluster_->endpoints();
  Client client(o);
  ASSERT_TRUE(client.put("/f/a", "1").wait().ok());
  const int victim = member_index_of(client.current_endpoint());
  ASSERT_GE(victim, 0);
  cluster_->kill(victim);

  // Reads are retried transparently on another member.
  auto got = client.get("/f/a").timeout(10s).wait();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->kvs.at(0).value, "1");
  EXPECT_NE(client.current_endpoint(), cluster_->endpoint(victim));

  // Writes work again; none is applied twice.
  for (int i = 0; i < 20; ++i) {
    auto put = client.put("/f/n", std::to_string(i)).timeout(10s).wait();
    ASSERT_TRUE(put.ok()) << i << ": " << put.status().to_string();
  }
  EXPECT_EQ(client.get("/f/n").wait()->kvs.at(0).version, 20);
  EXPECT_GE(client.stats().failovers, 1u);
}

TEST_F(ThreeMemberTest, WatchResumesAcrossAMemberKillWithoutLossOrDuplicates) {
  ClientOptions o;
  o.endpoints = cluster_->endpoints();
  Client watcher_client(o);
  // The writer talks to a different member so the writes keep flowing.
  std::mutex mu;
  std::vector<int64_t> seen;
  auto watcher = watcher_client.watch("/w/", {.prefix = true}, [&](Result<WatchResponse> r) {
    if (!r.ok()) return;
    std::lock_guard lock(mu);
    for (auto& e : r->events) seen.push_back(e.kv.mod_revision);
  });
  ASSERT_TRUE(watcher.wait_created(std::chrono::steady_clock::now() + 5s));
  const int victim = member_index_of(watcher_client.current_endpoint());
  ClientOptions wo;
  for (int i = 0; i < 3; ++i) {
    if (i != victim) wo.endpoints.push_back(cluster_->endpoint(i));
  }
  Client writer(wo);

  // Unique keys written create-if-absent: a write whose outcome was unknown
  // (the leader died under it) is simply tried again, and the keys left in
  // etcd are exactly the revisions the watch must have seen.
  for (int i = 0; i < 600; ++i) {
    if (i == 200) cluster_->kill(victim);
    const std::string k = "/w/" + std::to_string(i);
    Result<TxnResponse> r = Status(StatusCode::kUnknown, "not tried");
    for (int attempt = 0; attempt < 5 && !r.ok(); ++attempt) {
      r = writer.txn(Txn().when(Compare::absent(k)).then(Op::put(k, std::to_string(i)))).timeout(15s).wait();
      if (!r.ok()) {
        ASSERT_TRUE(r.status().is(Errc::kOutcomeUnknown) || r.status().is(Errc::kNoLeader)) << r.status().to_string();
      }
    }
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  std::set<int64_t> written;
  auto all = writer.get("/w/", {.prefix = true}).wait();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->kvs.size(), 600u);
  for (auto& kv : all->kvs) written.insert(kv.create_revision);
  ASSERT_TRUE(eventually(
      [&] {
        std::lock_guard lock(mu);
        return seen.size() >= written.size();
      },
      20s));
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), written.size());
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()), written);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_GE(watcher_client.stats().watch_stream_restarts, 1u);
}

}  // namespace
}  // namespace etcd::test
