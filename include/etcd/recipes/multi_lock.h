// MultiLock: several mutex names held as one, without deadlock whatever
// order callers name them in.
//
//   etcd::recipes::MultiLock accounts(client, {"/locks/acct/42", "/locks/acct/7"});
//   {
//     std::scoped_lock lock(accounts);             // TimedLockable: std locks work
//     auto tokens = accounts.hold().tokens();      // one fencing token per name
//   }
//   etcd::recipes::MultiHold h = (co_await accounts.acquire()).value();  // or .wait(), .then(...)
//   co_await h.guarded(etcd::Txn().then(etcd::Op::put("/acct/42", "..."), etcd::Op::put("/acct/7", "...")));
//   (void)(co_await accounts.release());
//
// Each name is a DistributedMutex (mutex.h) of the same key layout, so a
// MultiLock on {A, B} and a DistributedMutex or `etcdctl lock` on A exclude
// each other. The names are sorted (byte order) and de-duplicated into one
// global order, and acquire() takes them one after the other in that
// order: two MultiLocks that share names always want their common names in
// the same order, so no cycle of waiters can form (no deadlock, whatever
// order each caller listed them in). If one name cannot be had — a declined
// try, the deadline, a cancel (stop token), close(), the session lost — the
// names already taken are released before the caller hears back, so a
// failed acquisition leaves nothing held and no key behind.
//
// Key layout: that of each name's DistributedMutex (NAME/<lease hex>, or the
// ordered layout with RecipeOptions::contender_layout = kOrdered). All the
// names' keys are bound to one session (one lease): one keep-alive for the
// whole hold, and a lease loss ends every name at once.
//
// Input (checked before anything is written, Errc::kBadArgument on every
// operation): at least one name; each a valid recipe name (not empty, no
// NUL, no trailing '/'); no name may be a path prefix of another ("a" and
// "a/b": the keys of "a/b" would sit under "a/" and queue with its
// contenders). Repeated names count once.
//
// Fencing: one token per name (its key's create revision), each strictly
// increasing from one holder of that name to the next. guarded(txn) runs
// `txn` in one etcd Txn only if every name is still held (one compare per
// name), so writes to the resources of several names are fenced together.
//
// Loss: the multi-hold is lost when any of its names is lost (the lease
// expired, a key deleted by someone else). Its on_lost listeners and the
// MultiLock's run once, its stop_token() is requested, guarded() fails with
// Errc::kHoldLost, and the names still held are released at once (not left
// for the caller). release() then gives false.
//
// Cooperative release: asking the holder of any one name to release
// (DistributedMutex::request_release on it, `etcd-recipes lock --revoke`)
// asks the whole multi-hold: its release_requested() token is requested
// and its on_release_requested listeners and the MultiLock's run, once.
// Releasing stays the holder's choice, and lets every name go. It costs the
// holder nothing: each name's hold hears of it from the watch of its own
// key it keeps anyway (mutex.h).
//
// Re-entry: a MultiLock object is not recursive: acquire() while it holds
// or is acquiring fails at once with kFailedPrecondition.
//
// Costs, for K names: an uncontended acquire is K Txns in K round trips
// (each creates one key: K writes), taken one after the other; release is K
// deletes (K writes) sent together (one round trip of latency). A contended
// name costs what it costs a DistributedMutex (one watch event and one read
// per hand-off). guarded() is one Txn with K compares. Nothing grows with
// the number of waiters beyond each mutex's own (mutex.h).
//
// Metrics: those of the DistributedMutex of each name (etcd_recipes_lock_*,
// labelled lock=NAME), which share the MultiLock's RecipeOptions::metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

namespace detail {
class MultiLockDriver;
class MultiHoldState;
}  // namespace detail

// The hold of a MultiLock: one Hold per name, held and lost together.
// Copies share one multi-hold. An empty MultiHold (default-constructed, or
// "not holding") is valid() == false: its stop_token() is requested,
// guarded() fails with kHoldLost and release() gives false.
class MultiHold {
 public:
  MultiHold() = default;

  bool valid() const noexcept { return state_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }

  // The names, sorted and de-duplicated (the order they were taken in).
  const std::vector<std::string>& names() const;
  // One Hold per name, in names() order.
  const std::vector<Hold>& holds() const;
  // The hold of `name` (empty if it is not one of the names).
  Hold hold(std::string_view name) const;
  // The fencing token of each name.
  std::map<std::string, int64_t> tokens() const;
  // The fencing token of `name`; 0 if it is not one of the names.
  int64_t token(std::string_view name) const;

  // Advisory: not released and no name seen lost.
  bool is_held() const;
  // Requested when the multi-hold ends: released, or any name lost.
  std::stop_token stop_token() const;
  // Runs (on the client's executor) once, when any name is lost.
  Subscription on_lost(std::function<void(const Status&)> listener) const;
  // Requested when someone asks the holder of any of the names to release
  // (DistributedMutex::request_release, `etcd-recipes lock --revoke`); the
  // multi-hold goes on until released. Never requested for an empty one.
  std::stop_token release_requested() const;
  // Runs (on the client's executor) once, at the first such request; a
  // listener added after it runs at once.
  Subscription on_release_requested(std::function<void()> listener) const;
  // Runs `txn` only if every name is still held, atomically (one Txn with
  // one compare per name); Errc::kHoldLost otherwise, nothing written.
  Call<TxnResponse> guarded(Txn txn) const;
  // Releases every name: true if all were still intact.
  Call<bool> release() const;

 private:
  friend class detail::MultiLockDriver;
  explicit MultiHold(std::shared_ptr<detail::MultiHoldState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::MultiHoldState> state_{};
};

class MultiLock : public RecipeHandle, public Lockable<MultiLock> {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle). Bad names are kept and
  // reported by every operation, before anything is written.
  MultiLock(Client client, std::vector<std::string> names);
  MultiLock(Client client, std::vector<std::string> names, RecipeOptions options);
  MultiLock(MultiLock&&) noexcept = default;
  MultiLock& operator=(MultiLock&&) noexcept = default;

  // --- The async core (blocking, callback and co_await via Call<T>).
  // Takes every name, in the global order; no deadline unless given one
  // (etcd/call.h). On failure nothing stays held. The hold is also kept by
  // this object (hold()) until release().
  Call<MultiHold> acquire();
  // Takes every name only if each is free now: the hold, or nullopt (with
  // nothing held).
  Call<std::optional<MultiHold>> try_acquire();
  // Releases the current multi-hold: true if every name was still intact,
  // false if one had been lost (or nothing was held).
  Call<bool> release();

  // The current multi-hold (empty when not holding).
  MultiHold hold() const;
  // Advisory: holds and has not seen a name lost.
  bool is_held() const;
  // Runs whenever a multi-hold of this object is lost (not when released).
  Subscription on_lost(std::function<void(const Status&)> listener);
  // Runs whenever a multi-hold of this object is first asked to release.
  Subscription on_release_requested(std::function<void()> listener);
  // The names in the order they are taken (sorted, de-duplicated).
  const std::vector<std::string>& names() const;

  // Lockable / TimedLockable (lock, try_lock, try_lock_for/until, unlock,
  // with_lock) come from Lockable; name ("NAME1,NAME2,..."), identity,
  // start, close, state and errors from RecipeHandle.

 private:
  std::shared_ptr<detail::MultiLockDriver> driver_;
};

}  // namespace etcd::recipes
