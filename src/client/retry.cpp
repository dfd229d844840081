#include "etcd/retry.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace etcd {

Retry classify(const Status& status) {
  if (status.ok()) return Retry::kNever;
  if (status.is(Errc::kOutcomeUnknown)) return Retry::kIfIdempotent;
  // The client retried the connection for RetryPolicy::refused_window
  // already: retried again above it, a dead endpoint would cost every
  // step of a recipe its whole deadline.
  if (status.is(Errc::kUnreachable)) return Retry::kNever;
  if (status.is(Errc::kNoLeader)) return Retry::kAlways;
  switch (status.code()) {
    case StatusCode::kUnavailable:
      return Retry::kAlways;
    case StatusCode::kDeadlineExceeded:
      return Retry::kIfIdempotent;
    default:
      return Retry::kNever;
  }
}

std::chrono::milliseconds Backoff::nominal(int failures) const {
  const double first = static_cast<double>(std::max<int64_t>(initial.count(), 0));
  const double cap = static_cast<double>(std::max(max, initial).count());
  const int steps = std::clamp(failures, 1, 64) - 1;
  const double ms = std::min(cap, first * std::pow(std::max(multiplier, 1.0), steps));
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

std::chrono::milliseconds Backoff::delay(int failures) const {
  const double ms = static_cast<double>(nominal(failures).count());
  const double spread = std::clamp(jitter, 0.0, 1.0);
  if (spread == 0) return std::chrono::milliseconds(static_cast<int64_t>(ms));
  thread_local std::minstd_rand rng{std::random_device{}()};
  std::uniform_real_distribution<double> factor(1.0 - spread, 1.0 + spread);
  return std::chrono::milliseconds(static_cast<int64_t>(ms * factor(rng)));
}

}  // namespace etcd
