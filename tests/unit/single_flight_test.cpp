// Start once, join while it runs: SingleFlight's contract.
#include "single_flight.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace etcd::detail {
namespace {

TEST(SingleFlightTest, TheFirstCallerStartsAndLaterOnesJoin) {
  SingleFlight<std::string> flight;
  std::vector<std::string> heard;
  auto waiter = [&heard](std::string r) { heard.push_back(std::move(r)); };
  EXPECT_FALSE(flight.running());
  EXPECT_TRUE(flight.join(waiter));
  EXPECT_TRUE(flight.running());
  EXPECT_FALSE(flight.join(waiter));
  EXPECT_FALSE(flight.join(waiter));
  EXPECT_TRUE(heard.empty());  // nothing completes before the landing
  auto landing = flight.land();
  EXPECT_FALSE(flight.running());
  EXPECT_TRUE(heard.empty());  // not until complete(): the owner's lock is released first
  std::move(landing).complete("token");
  EXPECT_EQ(heard, (std::vector<std::string>{"token", "token", "token"}));
}

TEST(SingleFlightTest, CompletesEachWaiterOnce) {
  SingleFlight<int> flight;
  int calls = 0;
  ASSERT_TRUE(flight.join([&calls](int) { ++calls; }));
  auto landing = flight.land();
  std::move(landing).complete(1);
  std::move(landing).complete(2);  // already completed: nobody is left
  EXPECT_EQ(calls, 1);
}

TEST(SingleFlightTest, StartsAgainAfterALanding) {
  SingleFlight<int> flight;
  std::vector<int> first, second;
  ASSERT_TRUE(flight.join([&first](int r) { first.push_back(r); }));
  auto landing = flight.land();
  // A caller arriving after the landing (before its waiters ran) starts a
  // new flight, and the old landing does not complete it.
  EXPECT_TRUE(flight.join([&second](int r) { second.push_back(r); }));
  std::move(landing).complete(1);
  EXPECT_EQ(first, std::vector<int>{1});
  EXPECT_TRUE(second.empty());
  std::move(flight.land()).complete(2);
  EXPECT_EQ(second, std::vector<int>{2});
}

TEST(SingleFlightTest, AWaiterMayJoinTheNextFlightFromItsCompletion) {
  SingleFlight<int> flight;
  bool restarted = false;
  ASSERT_TRUE(flight.join([&](int) { restarted = flight.join([](int) {}); }));
  std::move(flight.land()).complete(0);
  EXPECT_TRUE(restarted);
  EXPECT_TRUE(flight.running());
}

TEST(SingleFlightTest, AnEmptyLandingCompletesNobody) {
  SingleFlight<int> flight;
  std::move(flight.land()).complete(0);  // a close with no start in flight
  SingleFlight<int>::Landing none;
  std::move(none).complete(0);
  EXPECT_FALSE(flight.running());
}

}  // namespace
}  // namespace etcd::detail
