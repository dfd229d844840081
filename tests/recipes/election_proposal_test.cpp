// The size limit of an election's proposal (election.h,
// max_proposal_bytes): a value at the limit campaigns against a real etcd
// with its default --max-request-bytes, one byte more is refused before any
// write, and the limit is within a few bytes of what etcd itself refuses.
#include <string>

#include "etcd/recipes/election.h"
#include "recipes/core/keys.h"
#include "recipes/core/lowest_key.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::LeaderLatch;
using recipes::LeaderSelector;
using recipes::LeaderTerm;
using recipes::max_proposal_bytes;

class ElectionProposalTest : public SingleMemberTest {};

int64_t keys_under(Client& c, const std::string& prefix) {
  GetOptions o;
  o.prefix = true;
  o.count_only = true;
  return c.get(prefix, o).wait().value().count;
}

TEST_F(ElectionProposalTest, TheLimitIsAboutAThirdOfEtcdsDefaultRequestLimit) {
  const size_t limit = max_proposal_bytes(client(), key("e"));
  EXPECT_GT(limit, 520'000u);
  EXPECT_LT(limit, 1536u * 1024 / 3);
  // A longer name leaves less room: the name is in the request six times.
  EXPECT_LT(max_proposal_bytes(client(), key(std::string(300, 'n'))), limit - 500);
  ClientOptions o = options();
  o.namespace_prefix = std::string(300, 'p') + "/";
  EXPECT_LT(max_proposal_bytes(Client(o), key("e")), limit - 500);
}

TEST_F(ElectionProposalTest, AProposalAtTheLimitCampaignsAndOneByteMoreIsRefusedBeforeAnyWrite) {
  const std::string name = key("e");
  const size_t limit = max_proposal_bytes(client(), name);

  LeaderLatch over(client(), name, std::string(limit + 1, 'x'));
  try {
    over.start();
    ADD_FAILURE() << "start() accepted a proposal over the limit";
  } catch (const Error& e) {
    EXPECT_TRUE(e.status().is(Errc::kBadArgument)) << e.status().to_string();
    EXPECT_NE(e.status().message().find(std::to_string(limit)), std::string::npos) << e.status().message();
  }
  EXPECT_TRUE(over.await_leadership().wait().status().is(Errc::kBadArgument));
  LeaderSelector selector(client(), name, std::string(limit + 1, 'x'), [](LeaderTerm&) {});
  EXPECT_THROW(selector.start(), Error);
  EXPECT_EQ(keys_under(client(), name + "/"), 0);

  // Under the limit: a campaign that is queued behind a leader (the Txn
  // with all three copies) and then leads.
  LeaderLatch first(client(), name, std::string(limit, 'a'));
  first.start();
  ASSERT_TRUE(first.await_for(10s));
  LeaderLatch second(client(), name, std::string(limit, 'b'));
  second.start();
  ASSERT_TRUE(eventually([&] { return keys_under(client(), name + "/") == 2; }));
  EXPECT_TRUE(second.errors().empty());
  ASSERT_TRUE(*first.resign().wait());
  ASSERT_TRUE(second.await_for(10s));
  EXPECT_EQ(second.leader().wait().value()->value, std::string(limit, 'b'));

  // proclaim(): the same limit, and nothing written over it.
  auto refused = second.proclaim(std::string(limit + 1, 'c')).wait();
  EXPECT_TRUE(refused.status().is(Errc::kBadArgument)) << refused.status().to_string();
  EXPECT_EQ(second.leader().wait().value()->value, std::string(limit, 'b'));
  EXPECT_TRUE(second.proclaim(std::string(limit, 'd')).wait().ok());
  EXPECT_EQ(second.leader().wait().value()->value, std::string(limit, 'd'));
  EXPECT_TRUE(*second.resign().wait());
}

TEST_F(ElectionProposalTest, EtcdItselfRefusesTheCampaignOfAValueAFewBytesOverTheLimit) {
  const std::string prefix = key("raw") + "/";
  const size_t limit = max_proposal_bytes(client(), key("raw"));
  auto lease = client().lease_grant(10s).wait().value().id;
  const std::string k = prefix + recipes::detail::lease_hex(lease);
  auto campaign = [&](size_t bytes) {
    return client().txn(recipes::detail::LowestKeyDriver::create_txn(prefix, k, std::string(bytes, 'v'), lease)).wait();
  };
  auto over = campaign(limit + 16);
  EXPECT_TRUE(over.status().is(Errc::kRequestTooLarge)) << over.status().to_string();
  auto at = campaign(limit);
  EXPECT_TRUE(at.ok()) << at.status().to_string();
  (void)client().lease_revoke(lease).wait();
}

}  // namespace
}  // namespace etcd::test
