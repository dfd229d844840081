// The key segments of the lock family (internal), named once for the locks
// that write them and the inspector (etcd/recipes/inspect.h) that reads
// them. The layouts they make are documented in include/etcd/recipes/
// rwlock.h and semaphore.h; the mutex's and the election's keys are
// NAME/<contender> (core/lowest_key.h, core/ordered_key.h) and have none.
#pragma once

#include <string_view>

namespace etcd::recipes::detail {

namespace rwlock_keys {
// NAME/read/<contender>, NAME/write/<contender>: a reader's and a writer's
// key (the Go layout's lease hex, or the ordered layout's ~<R>-<lease>-<n>).
inline constexpr std::string_view kRead = "read";
inline constexpr std::string_view kWrite = "write";
}  // namespace rwlock_keys

namespace semaphore_keys {
// NAME/permits: the permit count N, stored once without a lease: "N" (the
// holders layout) or "N ordered" (the ordered layout).
inline constexpr std::string_view kPermits = "permits";
inline constexpr std::string_view kOrderedSuffix = " ordered";
// The holders layout: NAME/holders/<lease hex>-<n>, the first N by create
// revision hold.
inline constexpr std::string_view kHolders = "holders";
// The ordered layout: NAME/slots/<i> (0 <= i < N) on a holder's lease, and
// NAME/queue/~<R>-<lease>-<n>, the waiters in order.
inline constexpr std::string_view kSlots = "slots";
inline constexpr std::string_view kQueue = "queue";
}  // namespace semaphore_keys

}  // namespace etcd::recipes::detail
