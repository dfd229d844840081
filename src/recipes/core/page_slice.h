// Where the next page of a paged read may end (internal), so that etcd's
// work for it stays about the keys it returns.
//
// etcd answers a Range with a limit after walking every key from its start
// to its end, to count them (all releases to 3.6: mvcc's treeIndex visits
// the whole range; 3.4 also collects a revision per key). Pages of one
// long range that each run to its end cost O(remaining) apiece, the load
// O(N^2 / page). A page that ends where about `want` keys will have been
// seen costs O(page) instead, and the load O(N).
//
// The end is interpolated: keys are read as numbers (the 8 bytes after the
// longest prefix the last page's start and the next one's share), the last
// page covered [start, next) and held `keys` keys, and the next page spans
// as much key space again, scaled by want / keys (by 4 at most when it held
// few or none, so that sparse stretches are crossed in a few reads). A
// wrong guess costs a read that returns fewer keys (the next widens) or one
// that stops at its limit (the next begins after its last key); neither
// skips a key, since pages remain contiguous.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace etcd::recipes::detail {

// The end of the page after one whose first key was `start` (its start,
// if it held none), that ended at `next`
// (exclusive: the next page's first key, or the end of a slice) and held
// `keys` keys, sized for `want` keys; empty when it cannot tell (the next
// page runs to the range's end). Always greater than `next` when not empty.
std::string next_page_end(std::string_view start, std::string_view next, size_t keys, size_t want);

}  // namespace etcd::recipes::detail
