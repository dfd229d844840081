// WaiterSet (src/recipes/core/waiters.h), the parking of calls that wait
// for a condition (a view's first read, leadership, a barrier round): a
// waiter added while another thread makes the condition hold completes
// exactly once, with success, whichever thread wins.
#include <atomic>
#include <latch>
#include <memory>
#include <thread>

#include "recipes/core/recipe_core.h"
#include "recipes/core/waiters.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::RecipeOptions;
using recipes::detail::RecipeCore;
using recipes::detail::WaiterSet;

class WaiterSetTest : public SingleMemberTest {};

TEST_F(WaiterSetTest, AWaiterAddedWhileTheConditionBecomesTrueCompletesExactlyOnce) {
  auto core = std::make_shared<RecipeCore>(client(), "WaiterSetTest", key("w"), RecipeOptions());
  constexpr int kRounds = 5000;
  std::atomic<int> calls{0};
  std::atomic<int> failures{0};
  for (int i = 0; i < kRounds; ++i) {
    auto set = std::make_shared<WaiterSet>(core);
    std::latch go(2);
    std::thread other([&] {
      go.arrive_and_wait();
      set->set_ready(true);
    });
    go.arrive_and_wait();
    set->add(
        CallOptions{},
        [&](Result<void> r) {
          if (!r.ok()) ++failures;
          ++calls;
        },
        "the condition");
    other.join();
  }
  // Each waiter ends on one of the two threads, before both are joined.
  EXPECT_EQ(calls.load(), kRounds);
  EXPECT_EQ(failures.load(), 0);
  core->close();
}

}  // namespace
}  // namespace etcd::test
