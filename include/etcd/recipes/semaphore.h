// DistributedSemaphore: at most N holders across processes, FIFO, with
// RAII permits and fencing.
//
//   etcd::recipes::DistributedSemaphore sem(client, "/sem/downloads", 3);
//   {
//     auto permit = sem.acquire_blocking();            // RAII
//     download(permit.fencing_token());
//   }                                                  // released here
//   if (auto p = sem.try_acquire_for(2s)) { ...; (void)p->release(); }
//   auto permit = co_await sem.acquire();              // Result<Permit>
//   sem.acquire().then([](etcd::Result<DistributedSemaphore::Permit> p) { ... });
//
// Key layout:
//   NAME/permits                          the permit count N, as decimal text.
//       Stored once, without a lease: created if absent by the same Txn that
//       creates the first contender's key. An object asking for another N
//       fails with Errc::kMismatch naming both numbers (and writes nothing).
//       To change N, delete NAME/permits while nobody uses the semaphore.
//   NAME/holders/<lease hex>-<seq>        one key per acquisition (waiting or
//       holding), bound to the session's lease. <seq> is a process-wide
//       counter, so several permits of one object, or of several objects
//       sharing a session, use distinct keys.
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
// Fencing: a permit's token is its key's create revision. Tokens of
// concurrent permits differ, and grants are in token order.
//
// Loss: a permit lives as long as the session's lease. If the lease is lost,
// the permit is lost: its on_lost listeners run, hold_token() is requested,
// guarded() fails with Errc::kHoldLost and release() returns false. A lost
// permit is never re-created; the next acquire() uses a new session.
//
// close(): refuses new acquisitions and wakes parked ones with Errc::kClosed.
// Permits already granted are independent objects: they stay held until
// released or destroyed (they keep the session alive).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"
#include "etcd/txn.h"

namespace etcd::recipes {

namespace detail {
class SemaphoreState;
class PermitState;
struct PermitAccess;
}  // namespace detail

class DistributedSemaphore : public RecipeHandle {
 public:
  // One granted permit. Move-only; releases on destruction (fire and
  // forget, never blocking).
  class Permit {
   public:
    Permit() = default;  // empty
    Permit(Permit&&) noexcept = default;
    Permit& operator=(Permit&& other) noexcept;  // releases the permit it held
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    ~Permit();

    // Holds a permit that was not released (it may have been lost).
    bool valid() const noexcept { return state_ != nullptr; }
    explicit operator bool() const noexcept { return valid(); }
    // Advisory: valid and not seen lost.
    bool is_held() const;

    // Releases; true if the permit was still intact, false if it had been
    // lost (or this Permit is empty). Blocks for one round trip.
    [[nodiscard]] bool release();
    // The same, asynchronously. The release starts when the Call is
    // consumed (wait() runs it on the waiting thread); a Call dropped
    // unconsumed still releases, fire and forget.
    Call<bool> release_async();

    // The key's create revision (0 when empty).
    int64_t fencing_token() const;
    std::string key() const;
    // Requested when the permit is lost or released.
    std::stop_token hold_token() const;
    // Runs on the client's executor when the permit is lost; soon, if it
    // already was.
    Subscription on_lost(std::function<void(const Status&)> listener);
    // Runs `txn` only if this permit is still held, atomically (one etcd
    // Txn). Fails with Errc::kHoldLost when it is not.
    Call<TxnResponse> guarded(Txn txn);

   private:
    friend struct detail::PermitAccess;
    explicit Permit(std::shared_ptr<detail::PermitState> state) : state_(std::move(state)) {}
    std::shared_ptr<detail::PermitState> state_{};
  };

  // Does no I/O. An invalid name or permits < 1 is reported by every later
  // call (Errc::kBadArgument), before anything is written.
  DistributedSemaphore(Client client, std::string name, int permits, RecipeOptions options = RecipeOptions());
  ~DistributedSemaphore();  // closes (granted permits stay valid)
  DistributedSemaphore(const DistributedSemaphore&) = delete;
  DistributedSemaphore& operator=(const DistributedSemaphore&) = delete;

  // --- The async core (blocking, callback and co_await via Call<T>).
  // Waits until a permit is granted (or cancelled, timed out, closed, the
  // session lost). May be called concurrently: each call is its own
  // acquisition with its own key.
  Call<Permit> acquire();
  // A permit only if one can be granted now.
  Call<std::optional<Permit>> try_acquire();
  // N minus the number of keys (holders and waiters), at least 0.
  Call<int> available_permits();

  // --- Blocking.
  // Throws etcd::Error when no permit can be had (closed, session lost,
  // count mismatch, bad arguments).
  Permit acquire_blocking();
  // std::nullopt when the time ran out; throws etcd::Error on other errors.
  template <class Rep, class Period>
  std::optional<Permit> try_acquire_for(std::chrono::duration<Rep, Period> d) {
    return try_acquire_until(std::chrono::steady_clock::now() + d);
  }
  template <class C, class D>
  std::optional<Permit> try_acquire_until(std::chrono::time_point<C, D> t) {
    return try_acquire_until_steady(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - C::now()));
  }

  // The permit count this object asks for.
  int permits() const;

  // --- Recipe (name, identity, state and errors come from RecipeHandle).
  // Refuses new work; parked acquisitions finish with Errc::kClosed.
  // Idempotent.
  void close();

 private:
  std::optional<Permit> try_acquire_until_steady(Deadline deadline);
  std::shared_ptr<detail::SemaphoreState> state_;
};

}  // namespace etcd::recipes
