// The key segments of DistributedAtomicLong (internal), named once for the
// counter and the inspector (etcd/recipes/inspect.h). The layout is
// documented in include/etcd/recipes/atomic_long.h: the value in NAME as
// decimal text, without a lease.
#pragma once

#include <string_view>

namespace etcd::recipes::detail::counter_keys {

// NAME/receipts/<client id>-<16 hex>: a client's receipt of its combined
// adds, while the client is open (add_combiner.h).
inline constexpr std::string_view kReceipts = "receipts";

}  // namespace etcd::recipes::detail::counter_keys
