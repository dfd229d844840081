// The one listener container: posting, order, unsubscribing, exceptions.
#include "listener_set.h"

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/strand.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace etcd::detail {
namespace {

TEST(ListenerSetTest, NotifyPostsEveryListenerInOrderAndNeverInline) {
  asio::io_context io;
  auto strand = asio::make_strand(io);
  ListenerSet<int> set;
  std::vector<std::string> heard;
  auto a = set.add([&heard](int v) { heard.push_back("a" + std::to_string(v)); });
  auto b = set.add([&heard](int v) { heard.push_back("b" + std::to_string(v)); });
  set.notify(strand, nullptr, 1);
  set.notify(strand, nullptr, 2);
  EXPECT_TRUE(heard.empty());
  io.run();
  EXPECT_EQ(heard, (std::vector<std::string>{"a1", "b1", "a2", "b2"}));
}

TEST(ListenerSetTest, AnUnsubscribedListenerWhosePostedCallHadNotBegunDoesNotRun) {
  asio::io_context io;
  ListenerSet<> set;
  int runs = 0;
  auto sub = set.add([&runs] { ++runs; });
  set.notify(io.get_executor(), nullptr);
  sub.reset();
  io.run();
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(set.empty());
}

TEST(ListenerSetTest, PastUnsubscribeAListenerHearsOfWhatCameWhileItWasSubscribed) {
  asio::io_context io;
  ListenerSet<int> set;
  std::vector<int> heard;
  auto sub = set.add([&heard](int v) { heard.push_back(v); });
  set.notify_past_unsubscribe(io.get_executor(), nullptr, 1);
  sub.reset();
  set.notify_past_unsubscribe(io.get_executor(), nullptr, 2);
  io.run();
  EXPECT_EQ(heard, std::vector<int>{1});
}

TEST(ListenerSetTest, ALateListenerHearsOnceUnlessItsSubscriptionGoesFirst) {
  asio::io_context io;
  int heard = 0, stopped = 0;
  auto kept = ListenerSet<int>::notify_one(
      io.get_executor(), nullptr, [&heard](int v) { heard += v; }, 5);
  auto dropped = ListenerSet<int>::notify_one(
      io.get_executor(), nullptr, [&stopped](int v) { stopped += v; }, 5);
  dropped.reset();
  io.run();
  EXPECT_EQ(heard, 5);
  EXPECT_EQ(stopped, 0);
}

TEST(ListenerSetTest, AThrowGoesToTheSinkOrLeavesTheListenerWithoutOne) {
  ListenerSet<> set;
  auto sub = set.add([] { throw std::runtime_error("boom"); });
  std::vector<Status> recorded;
  set.call([&recorded](Status s) { recorded.push_back(std::move(s)); });
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].message(), "a listener threw: boom");
  // The client's own listeners have no sink: as a callback's would.
  EXPECT_THROW(set.call(nullptr), std::runtime_error);
}

TEST(ListenerSetTest, ClearDropsTheListenersButNotCallsAlreadyPosted) {
  asio::io_context io;
  ListenerSet<> set;
  int runs = 0;
  auto sub = set.add([&runs] { ++runs; });
  set.notify(io.get_executor(), nullptr);
  set.clear();
  set.notify(io.get_executor(), nullptr);
  io.run();
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace etcd::detail
