// A selector term's end, by name: the words the CLI, the Python package and
// the logs use.
#include <gtest/gtest.h>

#include "etcd/recipes/election.h"

namespace etcd::recipes {
namespace {

static_assert(to_string(TermEnd::kReturned) == "returned");

TEST(TermEnd, EveryEndHasItsName) {
  EXPECT_EQ(to_string(TermEnd::kReturned), "returned");
  EXPECT_EQ(to_string(TermEnd::kThrew), "threw");
  EXPECT_EQ(to_string(TermEnd::kLost), "lost");
  EXPECT_EQ(to_string(TermEnd::kInterrupted), "interrupted");
  EXPECT_EQ(to_string(TermEnd::kResigned), "resigned");
  EXPECT_EQ(to_string(TermEnd::kClosed), "closed");
}

}  // namespace
}  // namespace etcd::recipes
