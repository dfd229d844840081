// The prefix view's pure logic, without etcd: what a resync reports (the
// differences between two reads) and how one revision's watch events change
// the view.
#include <gtest/gtest.h>

#include <random>

#include "../../src/recipes/core/prefix_view.h"
#include "support/view_replay.h"

namespace etcd::recipes::detail {
namespace {

using Type = ViewEvent::Type;
using etcd::test::replay;

ViewEntry entry(std::string value, int64_t create, int64_t mod, int64_t version = 1, int64_t lease = 0) {
  return ViewEntry{
      .value = std::move(value), .create_revision = create, .mod_revision = mod, .version = version, .lease = lease};
}

Event put(std::string key, std::string value, int64_t create, int64_t mod, int64_t version = 1) {
  Event ev;
  ev.type = Event::Type::kPut;
  ev.kv = KeyValue{std::move(key), std::move(value), create, mod, version, 0};
  return ev;
}

Event del(std::string key, int64_t rev) {
  Event ev;
  ev.type = Event::Type::kDelete;
  ev.kv.key = std::move(key);
  ev.kv.mod_revision = rev;
  return ev;
}

TEST(PrefixViewDiff, EqualStatesGiveNoEvent) {
  ViewMap a{{"/p/a", entry("1", 5, 5)}, {"/p/b", entry("2", 6, 7, 2)}};
  EXPECT_TRUE(diff_views(a, a).empty());
  EXPECT_TRUE(diff_views({}, {}).empty());
}

TEST(PrefixViewDiff, ReportsRemovedAddedAndUpdatedKeysInKeyOrder) {
  const ViewMap before{
      {"/p/a", entry("a", 2, 2)}, {"/p/b", entry("b", 3, 3)}, {"/p/c", entry("c", 4, 4)}, {"/p/e", entry("e", 9, 9)}};
  const ViewMap after{{"/p/b", entry("b2", 3, 11, 2)},  // updated
                      {"/p/c", entry("c", 4, 4)},       // unchanged
                      {"/p/d", entry("d", 12, 12)},     // added
                      {"/p/e", entry("e", 13, 13)}};    // deleted and created again
  const auto events = diff_views(before, after);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0], (ViewEvent{Type::kRemoved, "/p/a", entry("a", 2, 2), std::nullopt}));
  EXPECT_EQ(events[1], (ViewEvent{Type::kUpdated, "/p/b", entry("b2", 3, 11, 2), entry("b", 3, 3)}));
  EXPECT_EQ(events[2], (ViewEvent{Type::kAdded, "/p/d", entry("d", 12, 12), std::nullopt}));
  // A key re-created during the gap is an update whose create revision moved
  // (an election's term changed even though the key is the same).
  EXPECT_EQ(events[3], (ViewEvent{Type::kUpdated, "/p/e", entry("e", 13, 13), entry("e", 9, 9)}));
}

TEST(PrefixViewDiff, EverythingRemovedOrEverythingAdded) {
  const ViewMap some{{"/p/a", entry("a", 2, 2)}, {"/p/b", entry("b", 3, 3)}};
  auto gone = diff_views(some, {});
  ASSERT_EQ(gone.size(), 2u);
  EXPECT_EQ(gone[0].type, Type::kRemoved);
  EXPECT_EQ(gone[1].key, "/p/b");
  EXPECT_EQ(gone[1].entry.value, "b");  // the last value the view had
  auto fresh = diff_views({}, some);
  ASSERT_EQ(fresh.size(), 2u);
  EXPECT_EQ(fresh[0].type, Type::kAdded);
  EXPECT_EQ(fresh[0].key, "/p/a");
}

TEST(PrefixViewDiff, ReplayingTheDiffOnTheOldStateGivesTheNewOne) {
  // Random pairs of states: the diff is exactly what turns one into the
  // other, and it names each key at most once.
  std::mt19937 rng(42);
  for (int round = 0; round < 200; ++round) {
    ViewMap before, after;
    for (int k = 0; k < 40; ++k) {
      const std::string key = "/p/" + std::to_string(k);
      const int pick = static_cast<int>(rng() % 4);
      if (pick == 0 || pick == 2) before[key] = entry("v" + std::to_string(rng() % 3), k, k);
      if (pick == 1 || pick == 2) after[key] = entry("v" + std::to_string(rng() % 3), k, k + (rng() % 2));
    }
    const auto events = diff_views(before, after);
    EXPECT_EQ(replay(before, events), after) << "round " << round;
    for (size_t i = 1; i < events.size(); ++i) EXPECT_LT(events[i - 1].key, events[i].key);
  }
}

TEST(PrefixViewApply, PutsAndDeletesOfOneRevision) {
  ViewMap map{{"/p/a", entry("a", 2, 2)}, {"/p/b", entry("b", 3, 3)}};
  const std::vector<Event> txn = {put("/p/a", "a2", 2, 10, 2), del("/p/b", 10), put("/p/c", "c", 10, 10)};
  const auto events = apply_events(map, txn, 0, txn.size(), {});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], (ViewEvent{Type::kUpdated, "/p/a", entry("a2", 2, 10, 2), entry("a", 2, 2)}));
  EXPECT_EQ(events[1], (ViewEvent{Type::kRemoved, "/p/b", entry("b", 3, 3), std::nullopt}));
  EXPECT_EQ(events[2], (ViewEvent{Type::kAdded, "/p/c", entry("c", 10, 10), std::nullopt}));
  EXPECT_EQ(map, (ViewMap{{"/p/a", entry("a2", 2, 10, 2)}, {"/p/c", entry("c", 10, 10)}}));
}

TEST(PrefixViewApply, OnlyTheGivenSliceIsApplied) {
  ViewMap map;
  const std::vector<Event> events = {put("/p/a", "a", 5, 5), put("/p/b", "b", 6, 6), put("/p/c", "c", 7, 7)};
  const auto changed = apply_events(map, events, 1, 2, {});
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].key, "/p/b");
  EXPECT_EQ(map.size(), 1u);
}

TEST(PrefixViewApply, UnknownDeletesRepeatsAndFilteredKeysChangeNothing) {
  ViewMap map{{"/p/a", entry("a", 2, 2)}};
  const std::vector<Event> events = {del("/p/zzz", 8), put("/p/a", "a", 2, 2), put("/p/x/deep", "d", 8, 8),
                                     del("/p/x/other", 8)};
  const auto direct_children = [](std::string_view key) {
    return key.substr(3).find('/') == std::string_view::npos;  // below "/p/"
  };
  EXPECT_TRUE(apply_events(map, events, 0, events.size(), direct_children).empty());
  EXPECT_EQ(map, (ViewMap{{"/p/a", entry("a", 2, 2)}}));
  // Without the filter the deep key is kept.
  const auto all = apply_events(map, events, 0, events.size(), {});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].key, "/p/x/deep");
}

TEST(PrefixViewApply, KeyValueRoundTrip) {
  const KeyValue kv{"/p/k", "value", 3, 9, 4, 77};
  EXPECT_EQ(to_kv(kv.key, to_entry(kv)), kv);
}

}  // namespace
}  // namespace etcd::recipes::detail
