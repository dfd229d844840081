// Hold: the C++ face of "a hold can be lost".
//
// Every exclusive acquisition yields one: a DistributedMutex hold, a side of
// a DistributedReadWriteLock, a DistributedSemaphore permit, a leader's term.
// The same names mean the same thing on all of them:
//
//   etcd::recipes::Hold h = co_await mutex.acquire();   // Result<Hold>
//   write_orders(h.token());                           // fencing token
//   auto sub = h.on_lost([](const etcd::Status& why) { ... });
//   co_await h.guarded(etcd::Txn().then(etcd::Op::put("/orders/owner", "me")));
//   bool intact = (co_await h.release()).value();       // false: it had been lost
//
// - key():        the contender key that confers the hold (NAME/<lease hex>...).
// - token():      its create revision: the fencing token (a term token for a
//                 leader). It strictly increases from one holder to the next
//                 (for a semaphore: differs between concurrent permits).
// - lease():      the lease the key is bound to.
// - is_held():    advisory: not released and not seen lost.
// - stop_token(): requested when the hold ends — lost or released. Hand it to
//                 the work the hold protects.
// - on_lost():    runs (on the client's executor) when the hold is lost: its
//                 lease expired or was revoked, or its key was deleted by
//                 someone else. A lost hold is never re-created.
// - release_requested(): requested when someone asks the holder to let go
//                 (DistributedMutex::request_release); the hold goes on until
//                 released — distinct from stop_token(), which means it ended.
//                 Never requested for holds that take no requests.
// - on_release_requested(): runs (on the client's executor) once, then.
// - guarded(txn): runs `txn` only if the hold is still intact, atomically (one
//                 etcd Txn); fails with Errc::kHoldLost otherwise, with
//                 nothing written.
// - release():    deletes the key. True if the hold was still intact, false
//                 if it had been lost (the writes it protected may have
//                 raced with another holder).
//
// Copies of a Hold share one hold. It is released when released explicitly
// (here or through the recipe: unlock(), resign()) or, fire and forget, when
// the last copy is destroyed — a recipe that keeps its current hold (a mutex,
// a latch) keeps a copy until it releases. An empty Hold (default-constructed,
// or "not holding") is valid() == false: its stop_token() is already
// requested, guarded() fails with kHoldLost and release() gives false.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "etcd/call.h"
#include "etcd/connection.h"
#include "etcd/status.h"
#include "etcd/txn.h"

namespace etcd::recipes {

namespace detail {
class HoldState;
class HolderSlot;
struct HoldAccess;
}  // namespace detail

class Hold {
 public:
  Hold() = default;

  bool valid() const noexcept { return owner_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }

  std::string key() const;
  int64_t token() const;
  int64_t lease() const;
  bool is_held() const;
  std::stop_token stop_token() const;
  Subscription on_lost(std::function<void(const Status&)> listener) const;
  std::stop_token release_requested() const;
  Subscription on_release_requested(std::function<void()> listener) const;
  Call<TxnResponse> guarded(Txn txn) const;
  Call<bool> release() const;

 private:
  friend struct detail::HoldAccess;
  struct Owner;
  explicit Hold(std::shared_ptr<Owner> owner) : owner_(std::move(owner)) {}
  std::shared_ptr<Owner> owner_{};
};

// What every recipe that keeps a hold of its own answers (DistributedMutex,
// each side of a DistributedReadWriteLock, LeaderLatch): its current hold and
// the listeners for the loss of any of its holds.
class Holder {
 public:
  // The current hold (empty when not holding).
  Hold hold() const;
  // Advisory: holds and has not seen the hold lost.
  bool is_held() const;
  // Runs whenever a hold of this object is lost (not when it is released),
  // for every hold it takes from now on.
  Subscription on_lost(std::function<void(const Status&)> listener);

 protected:
  Holder() = default;
  void bind_holder(std::shared_ptr<detail::HolderSlot> slot) { slot_ = std::move(slot); }

 private:
  std::shared_ptr<detail::HolderSlot> slot_{};
};

// Lockable / TimedLockable for a recipe with acquire() -> Call<Hold> and
// release() -> Call<bool>, so that std::unique_lock, std::scoped_lock and
// std::lock_guard work. The blocking rule of every recipe applies: running
// out of time gives false; any other failure (closed, the session lost, bad
// input) throws etcd::Error. unlock() never throws: false means the hold had
// been lost, or the release failed (recorded in errors()).
template <class Derived>
class Lockable {
 public:
  void lock() { (void)self().acquire().wait().value(); }
  bool try_lock() { return self().try_acquire().wait().value().has_value(); }
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> d) {
    return try_lock_until(std::chrono::steady_clock::now() + d);
  }
  template <class C, class D>
  bool try_lock_until(std::chrono::time_point<C, D> t) {
    auto r = self().acquire().deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - C::now())).wait();
    if (r.ok()) return true;
    if (r.status().code() == StatusCode::kDeadlineExceeded) return false;
    throw Error(std::move(r).status());
  }
  [[nodiscard]] bool unlock() noexcept {
    try {
      auto r = self().release().wait();
      return r.ok() && *r;
    } catch (...) {
      return false;
    }
  }
  // Runs `f` while holding; releases afterwards (also on throw).
  template <class F>
  auto with_lock(F&& f) -> decltype(f()) {
    lock();
    struct Releaser {
      Lockable& l;
      ~Releaser() { (void)l.unlock(); }
    } releaser{*this};
    return std::forward<F>(f)();
  }

 protected:
  Lockable() = default;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace etcd::recipes
