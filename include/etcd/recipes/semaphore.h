// DistributedSemaphore: at most N holders across processes, FIFO, with
// RAII permits and fencing.
//
//   etcd::recipes::DistributedSemaphore sem(client, "/sem/downloads", 3);
//   {
//     etcd::recipes::Hold permit = sem.acquire_blocking();   // RAII
//     download(permit.token());
//   }                                                  // released here
//   if (auto p = sem.try_acquire_for(2s)) { ...; (void)p->release().wait(); }
//   auto permit = co_await sem.acquire();              // Result<Hold>
//   sem.acquire().then([](etcd::Result<etcd::recipes::Hold> p) { ... });
//
// Two key layouts (RecipeOptions::contender_layout): the holders layout,
// the default, below; and the ordered layout (kOrdered), whose cost per
// acquisition does not grow with the number of waiters (see "The ordered
// layout" further down). Every user of one semaphore must use the same
// layout: each refuses the other's NAME/permits (Errc::kMismatch).
//
// Key layout (holders):
//   NAME/permits                          the permit count N, as decimal text.
//       Stored once, without a lease: created if absent by the same Txn that
//       creates the first contender's key (a create-if-absent Txn, so it is
//       retried safely and shares group commits with other recipes). An object asking for another N
//       fails with Errc::kMismatch naming both numbers (and writes nothing),
//       unless a resize wrote it (see "Resizing").
//   NAME/holders/<lease hex>-<seq>        one key per acquisition (waiting or
//       holding), bound to the session's lease. <seq> counts the permit
//       keys made on the session's client, so several permits of one
//       object, or of several objects sharing a session (through any
//       client), use distinct keys.
//
// Holders are the first N keys by create revision; the others wait in
// create-revision order (FIFO grants). A key among the first N stays there
// until deleted (no key can be created before it), so there are never more
// than N holders as seen by etcd. Waiting, without a thundering herd:
//   - the first waiter (exactly N keys before it) watches the deletion of
//     any key created before it: any release admits it;
//   - every later waiter watches only the key just before its own; it is
//     woken when that waiter gives up, or when that waiter is admitted — an
//     admitted waiter that has waiters behind it "nudges" its own key (one
//     guarded put, same create revision), which makes the next waiter the
//     first one.
// Every wait is anchored (read at revision R; the watch starts at its
// creation, and if the store moved past R before that, one read covers what
// came in between) and re-checks after each wake-up.
//
// (Watching only the key N places ahead is not enough: with N = 3, three
// holders and one waiter watching the oldest holder, the two others could
// release and the waiter would stay parked beside two free permits.)
//
// Costs:
//   acquire, uncontended: one Txn (one write; the first one ever also stores
//     NAME/permits in the same revision), one round trip.
//   release: one guarded delete (one write), one round trip.
//   a release while others wait: the first waiter gets one watch event and
//     does one read; if waiters remain behind it, it nudges (one more write)
//     and the next waiter gets one watch event and does one read. So a
//     contended hand-off is at most 2 writes, 2 watch events and 2 reads,
//     whatever the number of waiters. A waiter that gives up costs one
//     delete and wakes at most the waiter just behind it.
//   available_permits(): one read.
//
// What grows with the waiters (W) in this layout: the creation and each
// waiter's read sort the keys under NAME/holders/ by create revision, so
// etcd reads every key there: O(W) per acquisition.
//
// The ordered layout (kOrdered):
//   NAME/permits                   "N ordered".
//   NAME/queue/~<R>-<lease>-<n>    a waiter, in the ordered layout of the
//                                  mutex (mutex.h): keys in commit order.
//   NAME/slots/<i>                 a permit, 0 <= i < N, bound to the
//                                  holder's lease; its value is the queue
//                                  key it came from and the client id.
//   NAME~queue-tail, NAME~handoff  the queue's tail and hand-off records.
// A permit is a slot key, so there are never more than N. Waiters queue as
// the ordered mutex's contenders do; the first in line (nothing created
// before it is left) moves into a free slot with one Txn (its queue key
// deleted, the slot put, the hand-off recorded), which wakes the next in
// line; with no slot free, it alone watches NAME/slots/ for a release.
// Costs: uncontended, one Txn when nobody waits (it puts the slot itself),
// else two (the queue key, then the move into a free slot); release one
// delete. A contended hand-off: the release, one watch event and one read
// for the first in line, its move (one write), one watch event and one
// read for the next in line: 2 writes, 2 events, 2 reads of at most N + 1
// keys, whatever the number of waiters (docs/capacity.md). Permits' tokens are the slot keys'
// create revisions (increasing in grant order); the semaphore's ordered
// keys may share one session (RecipeOptions::session) across objects.
//
// Resizing: resize(n) reads NAME/permits and writes "n" (or "n ordered")
// with one Txn guarded by its mod revision (again if it changed
// meanwhile): one read and one write, two when NAME/permits was absent (a
// resized count always has version > 1). A stored count with version > 1
// is adopted by every object whatever N it was made with (its creation Txn
// fails the value compare, reads the count and creates again: one more
// round trip, once per resize); a count stored once and never resized
// that differs is still Errc::kMismatch. Every anchored read reads
// NAME/permits with the rest (no extra round trip), and the one waiter
// that waits for a release (the first waiter; in the ordered layout the
// first in line) also watches NAME/permits: a second watch, with no event
// unless the count changes. Growth admits that waiter, whose admission
// wakes the next (the nudge; the ordered layout's hand-off) and so on.
// Shrinking revokes nobody: no one is admitted until fewer than the new N
// hold. In the ordered layout a resized semaphore always queues (two
// Txns for an uncontended acquisition instead of one: its creation cannot
// tell whether slots beyond the new N are still held). In the holders
// layout, a waiter that arrives while more than the new N still hold
// after a shrink waits for the key just before its own (it cannot tell
// that key from a waiter's): it is admitted correctly, but possibly only
// when that holder releases rather than the first one.
// To start afresh instead, delete NAME/permits while nobody uses it.
//
// Fencing: a permit's token is its key's create revision. Tokens of
// concurrent permits differ, and grants are in token order.
//
// A permit is a Hold (hold.h): key(), token(), stop_token(), on_lost(),
// guarded(), release(); it is released when its last copy is destroyed.
// Loss: a permit lives as long as the session's lease. If the lease is lost,
// the permit is lost: its on_lost listeners run, its stop_token() is
// requested, guarded() fails with Errc::kHoldLost and release() gives false.
// A lost permit is never re-created; the next acquire() uses a new session.
//
// close(): refuses new acquisitions and wakes parked ones with Errc::kClosed.
// Permits already granted belong to their callers: they stay held until
// released or destroyed (they keep the session alive).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

namespace detail {
class SemaphoreDriver;
}

class DistributedSemaphore : public RecipeHandle {
 public:
  // A granted permit.
  using Permit = Hold;

  // Do no I/O (see RecipeHandle for the lifecycle). permits < 1 is invalid
  // input (Errc::kBadArgument), reported before anything is written.
  DistributedSemaphore(Client client, std::string name, int permits);
  DistributedSemaphore(Client client, std::string name, int permits, RecipeOptions options);
  DistributedSemaphore(DistributedSemaphore&&) noexcept = default;
  DistributedSemaphore& operator=(DistributedSemaphore&&) noexcept = default;

  // --- The async core (blocking, callback and co_await via Call<T>).
  // Waits until a permit is granted (or cancelled, timed out, closed, the
  // session lost); no deadline unless given one (etcd/call.h). May be called concurrently: each call is its own
  // acquisition with its own key.
  Call<Hold> acquire();
  // A permit only if one can be granted now.
  Call<std::optional<Hold>> try_acquire();
  // N minus the number of keys (holders and waiters), at least 0.
  Call<int> available_permits();
  // Changes N for everyone using the semaphore (see "Resizing"): growing
  // admits waiters at once; shrinking revokes no permit but admits nobody
  // until fewer than the new N are held. permits < 1 is Errc::kBadArgument
  // before any write; a semaphore of the other layout is Errc::kMismatch.
  Call<void> resize(int permits);

  // --- Blocking.
  // Throws etcd::Error when no permit can be had (closed, session lost,
  // count mismatch, bad arguments).
  Hold acquire_blocking();
  // std::nullopt when the time ran out; throws etcd::Error on other errors.
  template <class Rep, class Period>
  std::optional<Hold> try_acquire_for(std::chrono::duration<Rep, Period> d) {
    return try_acquire_until(std::chrono::steady_clock::now() + d);
  }
  template <class C, class D>
  std::optional<Hold> try_acquire_until(std::chrono::time_point<C, D> t) {
    return try_acquire_until_steady(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - C::now()));
  }

  // The permit count as this object knows it: the one it asked for, or
  // the one it adopted from a resize (updated by its own operations).
  int permits() const;

 private:
  std::optional<Hold> try_acquire_until_steady(Deadline deadline);
  std::shared_ptr<detail::SemaphoreDriver> driver_;
};

}  // namespace etcd::recipes
