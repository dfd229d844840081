// DistributedMutex: mutual exclusion across processes, with fencing.
//
//   etcd::recipes::DistributedMutex mutex(client, "/locks/orders");
//   {
//     std::unique_lock lock(mutex);          // TimedLockable: std locks work
//     write_orders(mutex.fencing_token());
//   }
//   if (mutex.try_lock_for(2s)) { ...; (void)mutex.unlock(); }
//   co_await mutex.acquire();                 // or async: .then(...), .wait()
//
// Key layout (the same as etcd's Go `concurrency.Mutex`, `etcdctl lock` and
// etcd's lock service, so mixed fleets share one lock): each contender puts
// NAME/<its session lease id in hex>, bound to its session's lease; the key
// with the lowest create revision holds the lock; every other contender
// watches only the key created just before its own (FIFO, no thundering
// herd), and re-checks after each wake-up.
//
// Fencing: the holder's key's create revision is the fencing token. It
// strictly increases from one holder to the next. Pass it to the resource you
// protect and have it reject smaller tokens, or use guarded() to make an etcd
// transaction conditional on still holding the lock.
//
// Loss: the hold lives as long as the session's lease. If the lease is lost
// (process paused past the TTL, partition), the hold is lost: on_lost
// listeners run, hold_token() is requested, guarded() fails with
// Errc::kHoldLost, and unlock()/release() return false. A lost hold is never
// re-created. A lease-based lock is only safe together with fencing.
//
// Re-entry: a DistributedMutex object is not recursive. lock() on an object
// that already holds (or is acquiring) fails at once with
// kFailedPrecondition instead of deadlocking. Two objects on the same name
// that share one Session would share one key; the second one's acquire
// fails with kFailedPrecondition (give each its own session — the default).
//
// Costs: an uncontended lock+unlock is two etcd writes and two round trips
// (one Txn that creates the key and reads the owner; one guarded delete).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"
#include "etcd/txn.h"

namespace etcd::recipes {

namespace detail {
class MutexState;
}

class DistributedMutex : public RecipeHandle {
 public:
  // Does no I/O. An invalid name is reported by every later call.
  DistributedMutex(Client client, std::string name, RecipeOptions options = RecipeOptions());
  ~DistributedMutex();  // releases a hold (without waiting) and closes
  DistributedMutex(const DistributedMutex&) = delete;
  DistributedMutex& operator=(const DistributedMutex&) = delete;

  // --- The async core (blocking, callback and co_await via Call<T>).
  // Waits until held. Without a deadline it waits until held, cancelled
  // (stop token), closed, or its session is lost.
  Call<void> acquire();
  // Takes the lock only if it is free now: true if held.
  Call<bool> try_acquire();
  // Releases: true if the hold was still intact, false if it had been lost.
  Call<bool> release();

  // --- Lockable / TimedLockable.
  void lock();  // throws etcd::Error if it cannot be held (closed, session lost)
  bool try_lock();
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> d) {
    return try_lock_until(std::chrono::steady_clock::now() + d);
  }
  template <class C, class D>
  bool try_lock_until(std::chrono::time_point<C, D> t) {
    return try_lock_until_steady(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - C::now()));
  }
  // False if the hold had been lost (the write it guarded may have raced).
  [[nodiscard]] bool unlock() noexcept;

  // Runs `f` while holding the lock; releases afterwards (also on throw).
  template <class F>
  auto with_lock(F&& f) -> decltype(f()) {
    lock();
    struct Releaser {
      DistributedMutex& m;
      ~Releaser() { (void)m.unlock(); }
    } releaser{*this};
    return std::forward<F>(f)();
  }

  // --- The hold.
  // Advisory: this object holds the lock and has not seen it lost.
  bool is_locked() const;
  // The fencing token of the current hold (0 when not held).
  int64_t fencing_token() const;
  // The key of this contender (empty before the first acquire).
  std::string key() const;
  // Requested when the current hold is lost (or released).
  std::stop_token hold_token() const;
  Subscription on_lost(std::function<void(const Status&)> listener);
  // Runs `txn` only if this object still holds the lock, atomically (one
  // etcd Txn). Fails with Errc::kHoldLost when it does not.
  Call<TxnResponse> guarded(Txn txn);

  // --- Recipe (name, identity, state and errors come from RecipeHandle).
  // Refuses new work; parked waiters finish with Errc::kClosed; a hold is
  // released. Idempotent.
  void close();

 private:
  bool try_lock_until_steady(Deadline deadline);
  std::shared_ptr<detail::MutexState> state_;
};

}  // namespace etcd::recipes
