// Contender-key creation of many mutexes of one client is group-committed
// (src/recipes/txn_batcher.h). These tests pin down what that must never
// change: every acquisition meets its own outcome, two contenders of one
// lock never share a revision, and a server with a small --max-txn-ops still
// serves every acquisition.
#include <future>
#include <set>
#include <vector>

#include "etcd/recipes/mutex.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedMutex;
using recipes::RecipeOptions;
using BatchingTest = SingleMemberTest;

std::shared_ptr<Session> started_session(Client& client) {
  auto session = Session::create(client);
  EXPECT_TRUE(session->start().wait().ok());
  return session;
}

std::vector<std::unique_ptr<DistributedMutex>> mutexes(Client& client, const std::string& prefix, int n,
                                                       const std::shared_ptr<Session>& session) {
  RecipeOptions options;
  options.session = session;
  std::vector<std::unique_ptr<DistributedMutex>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(std::make_unique<DistributedMutex>(client, prefix + std::to_string(i), options));
  }
  return out;
}

TEST_F(BatchingTest, ManyLockNamesOfOneClientShareTransactionsAndEachHoldsItsOwnKey) {
  constexpr int kLocks = 64;
  auto session = started_session(client());
  auto locks = mutexes(client(), key("many/"), kLocks, session);
  std::vector<std::future<Result<etcd::recipes::Hold>>> pending;
  for (auto& m : locks) pending.push_back(m->acquire().timeout(20s).future());
  std::set<int64_t> revisions;
  for (int i = 0; i < kLocks; ++i) {
    auto r = pending[i].get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().to_string();
    ASSERT_TRUE(locks[i]->is_held());
    auto got = client().get(locks[i]->hold().key()).wait();
    ASSERT_EQ(got->kvs.size(), 1u) << locks[i]->hold().key();
    EXPECT_EQ(got->kvs[0].lease, session->lease_id());
    EXPECT_EQ(locks[i]->hold().token(), got->kvs[0].create_revision);
    revisions.insert(got->kvs[0].create_revision);
  }
  // Issued together, the acquisitions were committed in a few Txns.
  // Without batching every key would have its own revision. How many
  // share one depends on how fast this loop issues them against the first
  // completions (a sanitizer build issues slowly): typically a dozen
  // revisions, a little over half the count under ASan.
  EXPECT_LT(revisions.size(), static_cast<std::size_t>(kLocks * 3 / 4)) << "distinct create revisions";
  for (auto& m : locks) EXPECT_TRUE(m->unlock());
  EXPECT_EQ(client().get(key("many/"), {.prefix = true, .count_only = true}).wait()->count, 0);
}

TEST_F(BatchingTest, ContendersOfOneLockNeverShareARevision) {
  constexpr int kContenders = 6;
  constexpr int kOthers = 24;
  auto shared = started_session(client());
  for (int round = 0; round < 3; ++round) {
    const std::string name = key("same" + std::to_string(round));
    std::vector<std::unique_ptr<DistributedMutex>> contenders;
    for (int i = 0; i < kContenders; ++i) {
      RecipeOptions own;
      own.session = started_session(client());  // one key per contender
      contenders.push_back(std::make_unique<DistributedMutex>(client(), name, own));
    }
    auto others = mutexes(client(), key("other" + std::to_string(round) + "/"), kOthers, shared);
    // Interleave them so that both kinds queue together.
    std::vector<std::future<Result<etcd::recipes::Hold>>> contending, rest;
    for (int i = 0; i < kOthers; ++i) {
      rest.push_back(others[i]->acquire().timeout(20s).future());
      if (i < kContenders) contending.push_back(contenders[i]->acquire().timeout(30s).future());
    }
    for (auto& f : rest) ASSERT_TRUE(f.get().ok());
    ASSERT_TRUE(eventually(
        [&] { return client().get(name + "/", {.prefix = true, .count_only = true}).wait()->count == kContenders; }));
    auto keys = client().get(name + "/", {.prefix = true}).wait()->kvs;
    std::set<int64_t> revisions;
    for (const auto& kv : keys) revisions.insert(kv.create_revision);
    EXPECT_EQ(revisions.size(), static_cast<std::size_t>(kContenders)) << "round " << round;
    // Exactly one holds at a time; releasing hands the lock down the queue.
    for (int served = 0; served < kContenders; ++served) {
      int holder = -1;
      ASSERT_TRUE(eventually([&] {
        int ready = 0;
        for (int i = 0; i < kContenders; ++i) {
          if (contending[i].valid() && contending[i].wait_for(0s) == std::future_status::ready) {
            ++ready;
            holder = i;
          }
        }
        return ready == 1;
      })) << "round "
          << round << ", hand-over " << served;
      int holding = 0;
      for (auto& c : contenders) holding += c->is_held() ? 1 : 0;
      EXPECT_EQ(holding, 1);
      ASSERT_TRUE(contending[holder].get().ok());
      EXPECT_TRUE(contenders[holder]->unlock());
    }
    for (auto& m : others) EXPECT_TRUE(m->unlock());
  }
}

TEST_F(BatchingTest, AnAcquisitionWhoseLeaseIsGoneFailsAloneAndTheRestSucceed) {
  auto good = started_session(client());
  auto bad = started_session(client());
  // The lease dies on the server; the session has not noticed yet (its next
  // keep-alive is seconds away), so the acquisition reaches etcd with it.
  Client other(options());
  ASSERT_TRUE(other.lease_revoke(bad->lease_id()).wait().ok());
  RecipeOptions bad_options;
  bad_options.session = bad;
  DistributedMutex doomed(client(), key("doomed"), bad_options);
  auto locks = mutexes(client(), key("fine/"), 20, good);
  std::vector<std::future<Result<etcd::recipes::Hold>>> pending;
  // Two go out alone at once; the doomed one queues with the rest.
  pending.push_back(locks[0]->acquire().timeout(20s).future());
  pending.push_back(locks[1]->acquire().timeout(20s).future());
  auto doomed_result = doomed.acquire().timeout(20s).future();
  for (std::size_t i = 2; i < locks.size(); ++i) pending.push_back(locks[i]->acquire().timeout(20s).future());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    auto r = pending[i].get();
    EXPECT_TRUE(r.ok()) << i << ": " << r.status().to_string();
  }
  auto r = doomed_result.get();
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(doomed.is_held());
  EXPECT_EQ(client().get(key("doomed/"), {.prefix = true, .count_only = true}).wait()->count, 0);
  for (auto& m : locks) EXPECT_TRUE(m->unlock());
}

TEST(BatchingSmallServerTest, AServerWithFewTxnOpsStillServesEveryAcquisition) {
  etcd::testing::EtcdClusterOptions small;
  small.extra_args = {"--max-txn-ops=8"};
  auto cluster = etcd::testing::EtcdCluster::start(small);
  ClientOptions options;
  options.endpoints = cluster->endpoints();
  Client client(options);
  auto session = started_session(client);
  auto locks = mutexes(client, "/small/", 40, session);
  std::vector<std::future<Result<etcd::recipes::Hold>>> pending;
  for (auto& m : locks) pending.push_back(m->acquire().timeout(20s).future());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    auto r = pending[i].get();
    EXPECT_TRUE(r.ok()) << i << ": " << r.status().to_string();
  }
  for (auto& m : locks) EXPECT_TRUE(m->unlock());
}

}  // namespace
}  // namespace etcd::test
