// The names of queue items (internal): how a producer names the keys it
// writes under NAME/items/, so that their byte order follows etcd's commit
// order closely enough for a consumer to find the head with one bounded
// Range (consumer.h: its window).
//
//   NAME/items/<rank>~<R>-<producer>-<seq>
//
// <rank> is what the queue kind puts first (the priority queue's
// "<4 hex>-", nothing for the others); <R>, <producer> and <seq> are 16
// lower-case hex digits each: R a revision the producer had seen before it
// sent the Txn (so the item commits at a revision C > R), the producer's
// random id, and its item count. Items of one rank therefore sort by R,
// and whatever sorts at or after a key with revision R commits after R:
// a consumer that holds every key before that key can serve the ones that
// committed at or before R + 1 in exact commit order.
//
// '~' sorts after digits and letters, so keys of other layouts (items
// written by earlier versions, "<producer>-<seq>", and keys put by other
// means) sort before the queue's own and are served first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../core/hex_number.h"

namespace etcd::recipes::detail {

// The name of an item under NAME/items/ (the layout above).
std::string item_name(std::string_view rank, int64_t revision, std::string_view producer, uint64_t seq);

// The revision R in an item name of the layout above (`name`: the key
// after NAME/items/, rank included); none for names of other layouts.
std::optional<int64_t> item_revision(std::string_view name);

// Where a consumer's read on from the item key `from` (under `items`, the
// NAME/items/ prefix) may stop (PrefixView::Options::window_slice): the
// keys of from's rank whose R is below R + kSliceRevisions * step; past
// the view's `revision`, the end of the rank's keys of this layout (none
// has a greater R yet). Empty (read to the range's end) for a key of
// another layout.
inline constexpr int64_t kSliceRevisions = 256;
std::string window_slice(std::string_view items, std::string_view from, uint64_t step, int64_t revision);

}  // namespace etcd::recipes::detail
