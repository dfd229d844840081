// The facade etcd::recipes::Recipes: every recipe it makes carries its
// shared options (checked by their effects: a client id in the keys, a bad
// TTL refused by every recipe alike).
#include <functional>
#include <vector>

#include "etcd/recipes/recipes.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::RecipeHandle;
using recipes::RecipeOptions;
using recipes::Recipes;

TEST_F(SingleMemberTest, TheFacadeMakesEveryRecipeWithItsSharedOptions) {
  RecipeOptions shared;
  shared.client_id = "facade-7";
  Recipes recipes(client(), shared);
  auto mutex = recipes.mutex(key("lock"));
  auto hold = mutex.acquire().timeout(std::chrono::seconds(10)).wait().value();
  auto r = client().get(hold.key()).wait().value();
  ASSERT_EQ(r.kvs.size(), 1u);
  EXPECT_EQ(r.kvs[0].value, "facade-7") << "the lock key carries the facade's client id";
  EXPECT_TRUE(mutex.release().wait().value());

  auto queue = recipes.typed_queue<int64_t>(key("q"));
  queue.enqueue(42).wait().value();
  EXPECT_EQ(queue.dequeue().timeout(std::chrono::seconds(5)).wait().value(), 42);
  auto counter = recipes.counter(key("n"));
  EXPECT_EQ(counter.add(5).wait().value(), 5);
}

TEST_F(SingleMemberTest, ABadSharedOptionIsEveryRecipesBadInput) {
  RecipeOptions bad;
  bad.session_ttl = std::chrono::seconds(0);
  Recipes recipes(client(), bad);
  const auto rpcs = client().stats().rpcs_started;
  std::vector<std::function<void()>> starts = {
      [&] { recipes.mutex(key("a")).start(); },
      [&] { recipes.read_write_lock(key("b")).start(); },
      [&] { recipes.semaphore(key("c"), 2).start(); },
      [&] { recipes.leader_latch(key("d"), "me").start(); },
      [&] { recipes.leader_observer(key("e")).start(); },
      [&] { recipes.queue(key("f")).start(); },
      [&] { recipes.priority_queue(key("g")).start(); },
      [&] { recipes.barrier(key("h")).start(); },
      [&] { recipes.barrier_with_count(key("i"), 2).start(); },
      [&] { recipes.double_barrier(key("j"), 2).start(); },
      [&] { recipes.counter(key("k")).start(); },
      [&] { recipes.transient(key("l"), "v").start(); },
      [&] { recipes.node_cache(key("m")).start(); },
      [&] { recipes.path_children_cache(key("n")).start(); },
      [&] { recipes.discovery().start(); },
  };
  for (size_t i = 0; i < starts.size(); ++i) {
    try {
      starts[i]();
      ADD_FAILURE() << "recipe " << i << " accepted a session TTL of 0 s";
    } catch (const Error& e) {
      EXPECT_TRUE(e.status().is(Errc::kBadArgument)) << i << ": " << e.what();
    }
  }
  EXPECT_EQ(client().stats().rpcs_started, rpcs) << "nothing was sent";
}

}  // namespace
}  // namespace etcd::test
