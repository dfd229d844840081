// The key segments of the barriers (internal), named once for the
// barriers that write them and the inspector (etcd/recipes/inspect.h) that
// reads them. The layouts are documented in include/etcd/recipes/barrier.h.
#pragma once

#include <string_view>

namespace etcd::recipes::detail::barrier_keys {

// DistributedBarrier (the gate): NAME itself on the setter's lease, and
// NAME/set-by without a lease (the gate stays set after that lease ends).
inline constexpr std::string_view kSetBy = "set-by";
// The count and double barriers: NAME/parties/<party>, one per party (a
// count barrier's <client id>-<16 hex>-<n>, a double barrier's
// <client id>-<16 hex>), and NAME/ready, the round's completion.
inline constexpr std::string_view kParties = "parties";
inline constexpr std::string_view kReady = "ready";
// The count barrier: NAME/gave-up, touched by every party that gives up.
inline constexpr std::string_view kGaveUp = "gave-up";

}  // namespace etcd::recipes::detail::barrier_keys
