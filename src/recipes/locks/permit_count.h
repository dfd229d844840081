// A semaphore's permit count and where it is stored (internal): what both
// of DistributedSemaphore's layouts check in their creation Txn, and what
// makes them refuse each other (semaphore.h, "Key layout").
#pragma once

#include <string>

#include "etcd/status.h"

namespace etcd::recipes::detail {

struct PermitCount {
  int n = 0;
  // NAME/permits: stored once, without a lease, by the first creation.
  std::string key;
  // Its value: "N" (the holders layout) or "N ordered".
  std::string stored;

  // An object that asks for another count, or for the other layout.
  Status mismatch(const std::string& found) const {
    return Status(StatusCode::kFailedPrecondition,
                  "permit count mismatch: " + key + " stores " + found + ", this object asks for " + stored,
                  Errc::kMismatch);
  }
};

}  // namespace etcd::recipes::detail
