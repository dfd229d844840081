// The queues' item names without etcd: their layout, the revision a
// consumer reads from them, and the parts of the range a consumer's reads
// on from its window stay in.
#include <gtest/gtest.h>

#include "../../src/recipes/queues/item_key.h"

namespace etcd::recipes::detail {
namespace {

const std::string kItems = "/q/items/";
const std::string kProducer = "00000000000000aa";

TEST(QueueItemKeyTest, NamesSortByTheRevisionTheProducerHadSeenThenByProducerAndSequence) {
  const std::string a = item_name("", 5, kProducer, 9);
  EXPECT_EQ(a, "~0000000000000005-00000000000000aa-0000000000000009");
  EXPECT_LT(a, item_name("", 6, "0000000000000001", 0));
  EXPECT_LT(a, item_name("", 5, kProducer, 10));
  EXPECT_EQ(item_name("000a-", 5, kProducer, 9), "000a-" + a);
  // Names of other layouts sort before every name of this one.
  EXPECT_LT(std::string(kProducer + "-0000000000000001"), a);
  EXPECT_LT(std::string("manual"), a);
}

TEST(QueueItemKeyTest, TheRevisionOfANameOfThisLayoutOnly) {
  EXPECT_EQ(item_revision(item_name("", 0x1234, kProducer, 1)), 0x1234);
  EXPECT_EQ(item_revision(item_name("ffff-", 7, kProducer, 1)), 7);
  EXPECT_EQ(item_revision(kProducer + "-0000000000000001"), std::nullopt);  // earlier versions
  EXPECT_EQ(item_revision("manual"), std::nullopt);
  EXPECT_EQ(item_revision("~12"), std::nullopt);
  EXPECT_EQ(item_revision("~000000000000000g-x"), std::nullopt);  // not hex
  EXPECT_EQ(item_revision("~0000000000000005"), std::nullopt);    // a slice's end, not an item
  EXPECT_EQ(item_revision("~ffffffffffffffff-x"), std::nullopt);  // past int64
}

TEST(QueueItemKeyTest, ASliceCoversTheRevisionsAfterItsStartWideningWithEachStep) {
  const std::string from = kItems + item_name("", 1000, kProducer, 3);
  EXPECT_EQ(window_slice(kItems, from, 1, 1'000'000), kItems + "~" + hex16(1000 + kSliceRevisions));
  EXPECT_EQ(window_slice(kItems, from, 4, 1'000'000), kItems + "~" + hex16(1000 + 4 * kSliceRevisions));
  // The next slice starts where the last ended.
  const std::string next = window_slice(kItems, from, 1, 1'000'000);
  EXPECT_EQ(window_slice(kItems, next, 2, 1'000'000), kItems + "~" + hex16(1000 + 3 * kSliceRevisions));
  // Past the view's revision no key of the layout exists: the slice ends
  // after the last revision, and from there on there is none.
  EXPECT_EQ(window_slice(kItems, from, 1, 1100), kItems + "~" + hex16(1101));
  EXPECT_EQ(window_slice(kItems, from, 1, 10), kItems + "~" + hex16(11));
  // Within a priority: the slice keeps the rank.
  EXPECT_EQ(window_slice(kItems, kItems + item_name("0003-", 1000, kProducer, 0), 1, 1'000'000),
            kItems + "0003-~" + hex16(1000 + kSliceRevisions));
  // Keys of other layouts, or outside the items: to the range's end.
  EXPECT_EQ(window_slice(kItems, kItems + kProducer + "-0000000000000001", 1, 1'000'000), "");
  EXPECT_EQ(window_slice(kItems, "/other/" + item_name("", 1000, kProducer, 0), 1, 1'000'000), "");
}

}  // namespace
}  // namespace etcd::recipes::detail
