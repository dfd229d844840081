// What Session and PresenceLease share at their public surface: starting
// (TTL checked before any I/O, the work done by the implementation while it
// lives) and closing (revoke once). Internal.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "etcd/call.h"
#include "etcd/lease.h"

namespace etcd::detail {

// `Impl` has begin_start(CallOptions, Callback<void>).
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
        self->begin_start(options, std::move(done));
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
