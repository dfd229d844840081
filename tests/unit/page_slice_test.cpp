// Where a paged read's next page ends (page_slice.h), without etcd: the
// interpolation, its limits, and that pages planned with it cover a range
// of any shape contiguously, each returning about the keys it asked for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../../src/recipes/core/page_slice.h"

namespace etcd::recipes::detail {
namespace {

std::string numbered(const std::string& prefix, int n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08d", n);
  return prefix + buf;
}

TEST(PageSliceTest, ThePageAfterOneOfEvenlySpreadKeysEndsAboutAsFarOn) {
  // /c/00000000 .. : a page of 1000 keys from 0 to 1000.
  const std::string end = next_page_end(numbered("/c/", 0), numbered("/c/", 1000), 1000, 1000);
  ASSERT_FALSE(end.empty());
  EXPECT_GT(end, numbered("/c/", 1000));
  // Decimal digits are not evenly spread bytes, but the end stays within
  // the next few thousand keys.
  EXPECT_LT(end, numbered("/c/", 10000));
}

TEST(PageSliceTest, AnEmptyOrSparsePageWidensTheNextByFourAtMost) {
  const std::string a = next_page_end("/c/a", "/c/b", 0, 1000);
  const std::string b = next_page_end("/c/a", "/c/b", 1000, 1000);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_GT(a, b);
  EXPECT_EQ(a, "/c/f");  // b + 4 * (b - a)
  EXPECT_EQ(b, "/c/c");
}

TEST(PageSliceTest, NoEndWhenItCannotTell) {
  EXPECT_EQ(next_page_end("/c/b", "/c/a", 10, 10), "");  // not after the start
  EXPECT_EQ(next_page_end("/c/a", "/c/a", 10, 10), "");
  EXPECT_EQ(next_page_end("/c/a", "/c/b", 10, 0), "");
  // Past the last key of the shared prefix: the end of those keys.
  EXPECT_EQ(next_page_end("/c/\x01", "/c/\xf0", 1, 1000), "/c0");
  EXPECT_EQ(next_page_end(std::string("\x01"), std::string("\xf0"), 1, 1000), "");
}

// Pages planned this way over key sets of different shapes: every key is
// read exactly once, in order, and no page walks far more keys than it
// returns (what etcd counts).
TEST(PageSliceTest, PagesCoverAnyRangeContiguouslyAndWalkAboutWhatTheyReturn) {
  std::mt19937_64 rng(42);
  std::vector<std::vector<std::string>> shapes(4);
  for (int i = 0; i < 100000; ++i) shapes[0].push_back(numbered("/cache/item-", i));
  for (int i = 0; i < 50000; ++i) {
    shapes[1].push_back("/cache/" + std::to_string(rng()));  // random spread
  }
  for (int i = 0; i < 30000; ++i) shapes[2].push_back(numbered("/cache/a/", i));  // clusters far apart
  for (int i = 0; i < 30000; ++i) shapes[2].push_back(numbered("/cache/zzzz/", i));
  for (int i = 0; i < 20000; ++i) shapes[3].push_back(numbered("/cache/x", i * i % 1000003));  // uneven
  const size_t want = 1000;
  for (auto& keys : shapes) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    const std::string range_end = "/cache0";
    std::string from = "/cache/", slice;
    std::vector<std::string> got;
    size_t pages = 0, walked = 0, worst = 0;
    while (true) {
      ++pages;
      ASSERT_LT(pages, 10000u) << "no progress";
      const std::string stop = slice.empty() || slice >= range_end ? range_end : slice;
      auto first = std::lower_bound(keys.begin(), keys.end(), from);
      auto last = std::lower_bound(keys.begin(), keys.end(), stop);
      const size_t in_range = static_cast<size_t>(last - first);
      const size_t n = std::min(in_range, want);
      walked += in_range;
      if (pages > 1) worst = std::max(worst, in_range);
      got.insert(got.end(), first, first + static_cast<ptrdiff_t>(n));
      const bool more = in_range > want;
      const bool sliced = !more && stop != range_end;
      if (!more && !sliced) break;
      const std::string start = n > 0 ? *first : from;
      from = more ? *(first + static_cast<ptrdiff_t>(n) - 1) + '\0' : stop;
      slice = next_page_end(start, from, n, want);
    }
    EXPECT_EQ(got, keys);
    // The first page walks everything; the others a few times what they
    // return (measured: 2.7x for decimal numbers, whose digits fill 10 of
    // a byte's 256 values), never the rest of the range, in a few times
    // the fewest pages.
    EXPECT_LT(walked, 5 * keys.size()) << keys.front();
    EXPECT_LT(worst, 32 * want) << keys.front();
    EXPECT_LT(pages, 6 * keys.size() / want) << keys.front();
  }
}

}  // namespace
}  // namespace etcd::recipes::detail
