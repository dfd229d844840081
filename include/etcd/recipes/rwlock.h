// DistributedReadWriteLock: many readers or one writer, across processes,
// fair to writers, with fencing.
//
//   etcd::recipes::DistributedReadWriteLock rw(client, "/locks/catalog");
//   {
//     std::unique_lock lock(rw.read_lock());   // each side is a full lock;
//                                              // readers share it
//     read_catalog(rw.read_lock().hold().token());
//   }
//   rw.write_lock().with_lock([&] { rewrite_catalog(rw.write_lock().hold().token()); });
//   co_await rw.write_lock().acquire();         // or .wait(), .then(...)
//   co_await rw.downgrade();                    // keep reading what we wrote
//   (void)rw.read_lock().unlock();
//
// Each side (read_lock(), write_lock()) has the surface of DistributedMutex:
// acquire / try_acquire / release Calls, Lockable / TimedLockable (lock,
// try_lock, try_lock_for/until, unlock→bool), with_lock, and the Holder's
// hold(), is_held() and on_lost(); a side's hold is a Hold (key, token,
// stop_token, on_lost, guarded, release). The recipe (name, identity,
// start, close, state, errors) is the DistributedReadWriteLock itself.
//
// Key layout: one key per contender and kind, bound to the session's lease:
//   NAME/read/<session lease id in hex>    a reader (waiting or holding)
//   NAME/write/<session lease id in hex>   a writer (waiting or holding)
// (so one object, or one session, has at most one key of each kind). Order
// is the keys' create revision, across both kinds (FIFO):
//   - a reader holds when no writer key created before its own exists; it
//     waits for (watches) only the last writer key created before it;
//   - a writer holds when no key of either kind created before its own
//     exists; it waits for only the last key of either kind created before
//     it.
// So a queued writer is never starved by readers that arrive after it: they
// queue behind it. Every wait is anchored (read at revision R; the watch
// starts at its creation, and if the store moved past R before that, one
// read covers what came in between) and re-checks after each wake-up, so a
// wake-up that does not unblock (an earlier waiter gave up) only moves the
// watch one key back.
//
// The ordered layout (RecipeOptions::contender_layout = kOrdered, as for
// DistributedMutex): keys NAME/read/~<R>-<lease>-<n> and
// NAME/write/~<R>-<lease>-<n> (16 hex digits each: a revision the client had
// seen before the creation, the lease, a count). A reader finds the last
// writer key created before its own, and a writer the last key of either
// kind, by looking back over short spans of R in each kind's keys instead
// of sorting every key of the kind: an acquisition costs etcd the same at
// any number of waiters. The rules above are the same, across both layouts
// (contenders of either layout on one name share one lock), and sides of
// many objects may share one Session.
//
// Downgrade: downgrade() turns a write hold into a read hold atomically,
// keeping its place: one guarded put re-purposes the write key as the read
// hold (same key, same create revision; its mod revision no longer equals
// its create revision, which is how readers recognise a downgraded write
// key). Writers queued behind it keep waiting; readers queued behind it (and
// before the next writer) are admitted. read_lock().hold().key() is then the
// NAME/write/... key until the read hold is released.
//
// Upgrade is refused: write_lock().acquire() while this object holds or is
// acquiring the read lock fails at once with kFailedPrecondition (two
// readers upgrading would wait for each other forever); release the read
// lock first. Likewise read_lock().acquire() while holding the write lock
// fails with kFailedPrecondition (use downgrade()). A side is not recursive:
// acquiring it again while held fails with kFailedPrecondition.
//
// Fencing: a hold's token is its key's create revision.
//   - Write tokens strictly increase from one write hold to the next.
//   - Every read hold has a token of its own too (readers that hold at once
//     have different tokens, none of which excludes another), and it is
//     greater than the token of every write hold that ended before the read
//     hold began and smaller than the token of every write hold that begins
//     after it: a resource that remembers the highest write token it saw,
//     and accepts any token above it from readers, can reject stale readers
//     as well as stale writers.
//   - A downgraded hold keeps its write token as its read token (same key).
// guarded(txn) makes a transaction conditional on the hold, atomically: for
// the write side, on the write key still existing with its create revision
// and not downgraded; for the read side, on the key still existing.
//
// Loss: as for DistributedMutex. Both sides share one session (one lease):
// if it is lost, the current hold is lost (on_lost listeners of that side,
// hold_token(), release()/unlock() → false, guarded() → kHoldLost), and a
// lost hold is never re-created.
//
// Costs: an uncontended acquire+release of either side is two etcd writes
// and two round trips (one Txn that creates the key and reads the nearest
// conflicting predecessor; one guarded delete). The key-creating Txns of
// many locks of one client share transactions, as for DistributedMutex
// (two contenders of one lock name never share one). Each waiter watches
// one key, so a release wakes only the waiters that watch that key: the
// writer just behind it, or the readers queued directly behind a writer
// (all of which are then admitted together), one watch event and one read
// each; a waiter whose predecessor leaves out of order moves its watch one
// key back. So there is at most one wake-up per waiter per release of its
// predecessor.
// downgrade() is one write and wakes each reader waiting on the downgraded
// key once (they are admitted); writers ignore it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

namespace detail {
class RwSide;
}

class DistributedReadWriteLock : public RecipeHandle {
 public:
  enum class Mode { kRead = 0, kWrite = 1 };

  // One side of the lock. Lives as long as its DistributedReadWriteLock.
  class LockView : public Holder, public Lockable<LockView> {
   public:
    LockView(const LockView&) = delete;
    LockView& operator=(const LockView&) = delete;

    // Waits until held (or cancelled, timed out, closed, session lost); no
    // deadline unless given one (etcd/call.h).
    Call<Hold> acquire();
    // Takes this side only if it can be held now.
    Call<std::optional<Hold>> try_acquire();
    // Releases: true if the hold was still intact, false if it had been lost
    // (or this side was not held).
    Call<bool> release();
    Mode mode() const { return mode_; }

   private:
    friend class DistributedReadWriteLock;
    LockView() = default;
    void bind(std::shared_ptr<detail::RwSide> side, Mode mode);
    std::shared_ptr<detail::RwSide> side_{};
    Mode mode_ = Mode::kRead;
  };

  // Do no I/O (see RecipeHandle for the lifecycle).
  DistributedReadWriteLock(Client client, std::string name);
  DistributedReadWriteLock(Client client, std::string name, RecipeOptions options);
  // Movable: the views move along (references to them do not).
  DistributedReadWriteLock(DistributedReadWriteLock&& other) noexcept;
  DistributedReadWriteLock& operator=(DistributedReadWriteLock&& other) noexcept;

  LockView& read_lock() { return read_; }
  LockView& write_lock() { return write_; }

  // Turns the write hold into a read hold, atomically and keeping its place
  // ahead of writers that queued meanwhile (see above). Fails with
  // kFailedPrecondition when the write side is not held, with kHoldLost when
  // the hold was lost. On success write_lock().is_held() is false and
  // read_lock().is_held() true, with the same key and token; the write
  // hold's stop_token is requested.
  Call<void> downgrade();

 private:
  LockView read_;
  LockView write_;
};

}  // namespace etcd::recipes
