// The library's one retry policy: whether a failed call may be tried again
// (classify) and how long to wait before it is (Backoff). The client's
// unary calls, its watch and keep-alive streams and every recipe's
// background retries use these two and nothing else.
#pragma once

#include <chrono>

#include "etcd/status.h"

namespace etcd {

// What a failure allows a retry to do.
enum class Retry {
  // Final: retrying cannot help (a bad argument, a failed guard, not found,
  // permission denied, cancelled, closed).
  kNever,
  // The request may have been applied (its outcome is unknown, or its
  // deadline ran out after it was sent): only a call that is safe to
  // repeat (a read, or a write whose guard makes a second copy harmless)
  // may be sent again; any other resolves its outcome first or reports
  // Errc::kOutcomeUnknown.
  kIfIdempotent,
  // The request was certainly not applied (it was never sent, or the
  // member refused it before proposing it: no leader, unavailable): any
  // call may be sent again, within its deadline.
  kAlways,
};

// The one classification of failures, of a status as the client's calls
// return it (a write whose request may have gone out fails with
// Errc::kOutcomeUnknown, never with a plain kUnavailable); pure.
//   Errc::kUnreachable                                        -> kNever
//   kUnavailable (without kOutcomeUnknown), Errc::kNoLeader  -> kAlways
//   Errc::kOutcomeUnknown, kDeadlineExceeded                  -> kIfIdempotent
//   everything else                                           -> kNever
// Errc::kUnreachable (code kUnavailable) is a call whose connection was
// refused, or whose host did not resolve, on every try for
// RetryPolicy::refused_window: the client has spent the retry budget of
// "nothing listens there" already, so it is final for whatever made the
// call, reads and writes alike (the request was never sent).
// Whether there is time left to retry is the caller's deadline's business.
Retry classify(const Status& status);

// Exponential backoff with jitter: the delay before the next try after
// `failures` failures in a row (1: the first retry) is
//   min(max, initial * multiplier^(failures - 1)) * (1 ± jitter),
// the spread keeping many clients that failed together from retrying in
// step. Thread-safe; delay() draws its jitter from a thread-local source.
struct Backoff {
  std::chrono::milliseconds initial{50};
  std::chrono::milliseconds max{1000};
  double multiplier = 2.0;
  double jitter = 0.2;  // a fraction of each delay, 0 for none

  std::chrono::milliseconds delay(int failures) const;
  // The same without jitter: the middle of delay()'s range.
  std::chrono::milliseconds nominal(int failures) const;
};

}  // namespace etcd
