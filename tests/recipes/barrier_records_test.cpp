// A count barrier's records (NAME/ready, NAME/gave-up) against a real etcd:
// they last the outcome window after their last write and then vanish, so
// rounds leave nothing behind, with a new name per round or one name for
// all of them.
#include <future>
#include <string>

#include "etcd/recipes/barrier.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::CountBarrierOptions;
using recipes::DistributedBarrierWithCount;
using recipes::RecipeOptions;

class BarrierRecordsTest : public SingleMemberTest {
 protected:
  int64_t count(const std::string& prefix) {
    return client().get(prefix, GetOptions{.prefix = true, .count_only = true}).wait().value().count;
  }
  // A round of two parties, one of them on another thread.
  void round(DistributedBarrierWithCount& a, DistributedBarrierWithCount& b) {
    auto other = std::async(std::launch::async, [&] { return b.wait_for(10s); });
    EXPECT_TRUE(a.wait_for(10s));
    EXPECT_TRUE(other.get());
  }
  static CountBarrierOptions window(std::chrono::seconds s) {
    CountBarrierOptions o;
    o.outcome_window = s;
    return o;
  }
};

TEST_F(BarrierRecordsTest, FiftyRoundsWithAFreshNameEachLeaveNothingAfterTheWindow) {
  for (int i = 0; i < 50; ++i) {
    const std::string name = key("fresh/round-" + std::to_string(i));
    DistributedBarrierWithCount a(client(), name, 2, RecipeOptions(), window(2s));
    DistributedBarrierWithCount b(client(), name, 2, RecipeOptions(), window(2s));
    round(a, b);
    // Just after its round, the record is there (the party keys are gone):
    // what a party cut off meanwhile reads to learn that the round completed.
    if (i == 0) {
      EXPECT_EQ(count(name), 1);
      EXPECT_EQ(client().get(name + "/ready").wait().value().kvs.size(), 1u);
    }
  }
  EXPECT_TRUE(eventually([&] { return count(key("fresh/")) == 0; }, 30s))
      << count(key("fresh/")) << " keys are left under the prefix";
}

TEST_F(BarrierRecordsTest, FiftyRoundsOnOneNameWithAGiveUpLeaveNothingAfterTheWindow) {
  const std::string name = key("same");
  DistributedBarrierWithCount a(client(), name, 2, RecipeOptions(), window(1s));
  DistributedBarrierWithCount b(client(), name, 2, RecipeOptions(), window(1s));
  EXPECT_FALSE(a.wait_for(100ms)) << "alone: gives up (and touches NAME/gave-up)";
  for (int i = 0; i < 50; ++i) round(a, b);
  EXPECT_EQ(client().get(name + "/gave-up").wait().value().kvs.size(), 1u);
  EXPECT_EQ(client().get(name + "/ready").wait().value().kvs.size(), 1u);
  EXPECT_TRUE(eventually([&] { return count(name) == 0; }, 30s)) << count(name) << " keys are left under the name";
  // The name still serves rounds afterwards.
  round(a, b);
}

TEST_F(BarrierRecordsTest, AWindowBelowOneSecondIsRefusedBeforeAnyWrite) {
  DistributedBarrierWithCount b(client(), key("bad"), 2, RecipeOptions(), window(0s));
  auto r = b.wait().wait();
  EXPECT_TRUE(r.status().is(Errc::kBadArgument)) << r.status().to_string();
  EXPECT_EQ(count(key("bad")), 0);
}

}  // namespace
}  // namespace etcd::test
