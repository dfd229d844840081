// The backoff a client's RetryPolicy describes (internal): between a
// unary call's attempts, and between a stream's reconnections.
#pragma once

#include "etcd/client.h"
#include "etcd/retry.h"

namespace etcd::detail {

inline Backoff retry_backoff(const RetryPolicy& r) {
  return Backoff{r.initial_backoff, r.max_backoff, r.multiplier, r.jitter};
}

}  // namespace etcd::detail
