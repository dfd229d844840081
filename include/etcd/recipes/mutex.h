// DistributedMutex: mutual exclusion across processes, with fencing.
//
//   etcd::recipes::DistributedMutex mutex(client, "/locks/orders");
//   {
//     std::unique_lock lock(mutex);          // TimedLockable: std locks work
//     write_orders(mutex.hold().token());
//   }
//   if (mutex.try_lock_for(2s)) { ...; (void)mutex.unlock(); }
//   etcd::recipes::Hold h = (co_await mutex.acquire()).value();   // or .wait(), .then(...)
//   co_await h.guarded(etcd::Txn().then(etcd::Op::put("/orders/owner", "me")));
//   (void)(co_await mutex.release());
//
// Key layout (the same as etcd's Go `concurrency.Mutex`, `etcdctl lock` and
// etcd's lock service, so mixed fleets share one lock): each contender puts
// NAME/<its session lease id in hex>, bound to its session's lease; the key
// with the lowest create revision holds the lock; every other contender
// watches only the key created just before its own (FIFO, no thundering
// herd), and re-checks after each wake-up.
//
// The ordered layout (RecipeOptions::contender_layout = kOrdered): each
// contender puts NAME/~<R>-<lease>-<n> (16 hex digits each: a store
// revision the client had seen before it sent the creation, its session's
// lease, a count), so every key created before it sorts below
// NAME/~<its create revision>.
// A waiter finds the key just before its own by looking back over short
// spans of R instead of sorting every waiter: an acquisition costs etcd the
// same with 10 or 10,000 waiters (docs/capacity.md), where the Go layout's
// sorted reads cost O(waiters). Keys are per acquisition, so mutexes may
// share one Session. The lowest create revision still holds across both
// layouts: ordered contenders, Go-layout ones and `etcdctl lock` on one
// name exclude each other (the Go layout's waiters keep their own cost).
// A holder's release records the hand-off in the key NAME~handoff (beside
// NAME/, in the same Txn as its delete), so the waiter it lets go holds
// after one compare, and a tail record NAME~tail names the key created
// last until the release of the holder it names, so an uncontended
// acquisition reads nothing of the layout (docs/capacity.md).
//
// Fencing: the holder's key's create revision is the fencing token. It
// strictly increases from one holder to the next. Pass it to the resource you
// protect and have it reject smaller tokens, or use guarded() to make an etcd
// transaction conditional on still holding the lock.
//
// Loss: the hold (a Hold, see hold.h) lives as long as the session's lease.
// If the lease is lost (process paused past the TTL, partition), the hold is
// lost: on_lost listeners run, hold().stop_token() is requested, guarded()
// fails with Errc::kHoldLost, and unlock()/release() return false. A lost
// hold is never re-created. A lease-based lock is only safe together with
// fencing.
//
// Re-entry: a DistributedMutex object is not recursive. lock() on an object
// that already holds (or is acquiring) fails at once with
// kFailedPrecondition instead of deadlocking. With the Go layout two objects
// on the same name that share one Session would share one key; the second
// one's acquire fails with kFailedPrecondition (give each its own session —
// the default — or use the ordered layout).
//
// Cooperative release: request_release() asks whoever holds the name now
// (any process, any object on the name) to let go. The asker reads the
// holder's key (the lowest create revision under NAME/) and re-puts it in
// one Txn guarded by its create and mod revisions, with its lease, create
// revision and fencing token unchanged and "\n~release requested" appended
// to its value. The holder's own watch of its key (which it keeps anyway to
// notice a loss) sees the put: hold().release_requested() is requested and
// on_release_requested listeners run; releasing is the holder's choice.
// The mark is in the holder's key, so it ends with that hold: it is never
// seen by the next holder. A holder that does not watch for requests (the
// Go package, `etcdctl lock`) just ignores it. To take a lock by force
// instead, delete the holder's key: that is a loss for the holder.
// Costs: request_release() is one read and one Txn (one write) — more only
// if the holder changes in between; the holder hears of it from a watch it
// already has (a watch from its acquisition's revision: etcd serves it
// from its pass over watches that start in the past, every 100 ms, so a
// request can take that long to be heard).
//
// Costs: an uncontended lock+unlock is two etcd writes and two round trips
// (one Txn that creates the key and reads the owner; one guarded delete).
// The ordered layout adds one round trip (no write) to a client's first
// acquisition, and to one whose revision was older than the tail's key.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

namespace detail {
class MutexDriver;
}

class DistributedMutex : public RecipeHandle, public Holder, public Lockable<DistributedMutex> {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle).
  DistributedMutex(Client client, std::string name);
  DistributedMutex(Client client, std::string name, RecipeOptions options);
  DistributedMutex(DistributedMutex&&) noexcept = default;
  DistributedMutex& operator=(DistributedMutex&&) noexcept = default;

  // --- The async core (blocking, callback and co_await via Call<T>).
  // Waits until held. Without a deadline given (etcd/call.h: a wait has
  // none of its own) it waits until held, cancelled
  // (stop token), closed, or its session is lost. The hold is also kept by
  // this object (hold()) until release().
  Call<Hold> acquire();
  // Takes the lock only if it is free now: the hold, or nullopt.
  Call<std::optional<Hold>> try_acquire();
  // Releases the current hold: true if it was still intact, false if it
  // had been lost (or nothing was held).
  Call<bool> release();

  // Asks the current holder of the name to release (see "Cooperative
  // release"): true if a holder was asked (now or before), false if the
  // name is free. Retries by itself if the holder changes meanwhile.
  Call<bool> request_release();
  // Runs (on the client's executor) whenever a hold of this object is asked
  // to release; the hold's release_requested() token tells the same.
  Subscription on_release_requested(std::function<void()> listener);

  // Lockable / TimedLockable (lock, try_lock, try_lock_for/until, unlock,
  // with_lock) come from Lockable; hold(), is_held(), on_lost() from Holder;
  // name, identity, start, close, state and errors from RecipeHandle.

 private:
  std::shared_ptr<detail::MutexDriver> driver_;
};

}  // namespace etcd::recipes
