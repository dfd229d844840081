// What Session and PresenceLease share (internal): starting (TTL checked
// before any I/O; the first start() grants the lease, a start() arriving
// meanwhile waits for the same grant, and the implementation takes the
// lease while it lives) and closing (revoke once).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "client_access.h"
#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/lease.h"
#include "single_flight.h"

namespace etcd::detail {

// `Impl` (enable_shared_from_this) has, guarded by its `mu`:
// - `starting`, a SingleFlight<Result<void>> (the grant start() waits for);
// - settled_locked(): start()'s answer without a grant (started already,
//   lost, closed), or nullopt;
// - started_locked(Lease&&): takes the granted lease;
// and `client`, `options.ttl`. Its close lands `starting` with kClosed.
template <class Impl>
void finish_lease_holder_start(Impl& impl, Result<Lease> r) {
  typename decltype(impl.starting)::Landing waiters;
  std::optional<Lease> discard;
  {
    std::lock_guard lock(impl.mu);
    if (!impl.starting.running()) {
      // Closed meanwhile (its waiters were told): give the lease back.
      if (r.ok()) discard.emplace(std::move(*r));
      return;
    }
    waiters = impl.starting.land();
    if (r.ok()) impl.started_locked(std::move(*r));
  }
  std::move(waiters).complete(r.ok() ? Result<void>() : Result<void>(r.status()));
}

template <class Impl>
void begin_lease_holder_start(Impl& impl, const CallOptions& call_options, Callback<void> done) {
  std::unique_lock lock(impl.mu);
  if (auto answer = impl.settled_locked()) {
    lock.unlock();
    done(std::move(*answer));
    return;
  }
  if (!impl.starting.join(std::move(done))) return;
  lock.unlock();
  std::weak_ptr<Impl> weak = impl.weak_from_this();
  // Completes on whatever thread finished the grant: only bookkeeping here;
  // the waiters' callbacks move on to their executors themselves.
  CallAccess::start_inherited(impl.client.lease(impl.options.ttl), CallAccess::off_caller_thread(call_options),
                              [weak](Result<Lease> r) {
                                if (auto self = weak.lock()) finish_lease_holder_start(*self, std::move(r));
                                // else: the holder is gone; the Lease (if any) revokes itself.
                              });
}

template <class Impl>
Call<void> start_lease_holder(const std::shared_ptr<Impl>& impl, const char* what, std::chrono::seconds ttl,
                              Executor ex) {
  if (ttl < std::chrono::seconds(1)) {
    return Call<void>::ready(
        InvalidArgument(std::string(what) + " TTL must be at least 1 s, got " + std::to_string(ttl.count()) + " s"),
        ex);
  }
  std::weak_ptr<Impl> weak = impl;
  return Call<void>(
      [weak, what](CallOptions options, Callback<void> done) {
        auto self = weak.lock();
        if (!self) return done(Closed(what));
        begin_lease_holder_start(*self, options, std::move(done));
      },
      ex);
}

// `Impl` has shut(bool& already) returning the lease to revoke (if any).
template <class Impl>
Call<void> close_lease_holder(Impl& impl, Executor ex) {
  bool already = false;
  auto lease = impl.shut(already);
  if (already || !lease) return Call<void>::ready(Result<void>(), ex);
  return lease->revoke().on(ex);
}

}  // namespace etcd::detail
