// When a recipe's background loop gives up (internal).
//
// A recipe that keeps trying on its own — a LeaderLatch or LeaderSelector
// campaign, a transient key's creation by start(), the contender engine's
// steps of an acquisition the caller waits for — stops for good only on a
// failure that retrying cannot fix: permission denied, failed
// authentication, an invalid argument, the recipe or its client closed, a
// fixed shared session (RecipeOptions::session) that ended. Every other
// failure is recorded (RecipeCore::record_error: errors(), on_error) and the
// loop tries again after the step backoff (kStepBackoff), for as long as the
// recipe is open and the user has not stopped it.
#pragma once

#include "etcd/retry.h"
#include "etcd/status.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

// Whether a background loop that failed with `st` tries again. True for
//   - what the client's classification (etcd/retry.h) allows to retry:
//     unavailable, no leader, a deadline, an unknown outcome (a lease
//     granted after all just expires by its TTL; a key created after all is
//     adopted or cleaned up by the contender engine);
//   - participation that a new key or a new session restores: our key or
//     hold vanished (kHoldLost), or the session's lease is gone
//     (kLeaseNotFound, kLeaseExpired).
// False for everything else, and always for kClosed.
inline bool background_retry_heals(const Status& st) {
  if (st.ok() || st.is(Errc::kClosed)) return false;
  // The link or the cluster failing for a while, and what is final for a
  // single call but passes with time: no endpoint taking a connection (a
  // member restarting).
  if (classify(st) != Retry::kNever || st.is(Errc::kUnreachable)) return true;
  // Participation that heals.
  return st.is(Errc::kHoldLost) || st.is(Errc::kLeaseNotFound) || st.is(Errc::kLeaseExpired);
}

// The same for a loop of `core`'s: a fixed shared session that ended is the
// user's to replace, so nothing heals once it has.
inline bool background_retry_heals(const RecipeCore& core, const Status& st) {
  return background_retry_heals(st) && !core.shared_session_ended();
}

}  // namespace etcd::recipes::detail
