// OwnPresence (internal): the presence lease (etcd/presence.h) that one
// recipe object owns for keys that only confer presence — a transient key,
// a work-queue consumer's claims, barrier parties, registrations. Never for
// exclusive holds (those use a Session and stay lost).
//
// The lease is created and started on first use, not by the constructor;
// concurrent first uses share one grant. Its events and its restore hook
// reach the owner through the handlers given at construction, which must
// hold the owner weakly (the lease must never keep its owner alive). drop()
// revokes it (its keys go with it): a recipe drops it at close(), or after
// a failed first use so that the next use starts from a fresh lease.
#pragma once

#include <asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "client_link.h"
#include "etcd/call.h"
#include "etcd/presence.h"
#include "etcd/status.h"

namespace etcd::recipes::detail {

class OwnPresence {
 public:
  using EventHandler = std::function<void(PresenceEvent, const Status&)>;

  // `what` names the lease in errors ("the consumer's lease").
  OwnPresence(PresenceOptions options, std::string what, EventHandler on_event, PresenceRestoreHook restore);
  OwnPresence(const OwnPresence&) = delete;
  OwnPresence& operator=(const OwnPresence&) = delete;
  ~OwnPresence();

  // Runs `then` with the current lease id, creating and starting the lease
  // through `link` on first use. Fails with kClosed after close(), with
  // kUnavailable while the lease heals after a loss (its restore hook will
  // follow), and with the grant's failure. `then` runs inline when the
  // lease is there already, otherwise on `resume_on` when given (else on
  // the thread that completed the grant).
  void with_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
                  const asio::strand<Executor>* resume_on = nullptr);
  // The current lease id: 0 before the first use, while healing, after drop().
  int64_t lease_id() const;
  std::chrono::seconds ttl() const { return options_.ttl; }

  // Revokes the lease, if there is one (its keys go with it), and forgets
  // it; `then` (if any) runs once the revoke is done. With `for_good`
  // (close), every later with_lease() fails with kClosed; otherwise the
  // next one starts a new lease.
  void drop(bool for_good, std::function<void()> then);

 private:
  const PresenceOptions options_;
  const std::string what_;
  const EventHandler on_event_;
  const PresenceRestoreHook restore_;

  mutable std::mutex mu_;
  std::shared_ptr<PresenceLease> lease_;
  Subscription sub_;
  bool closed_ = false;
};

}  // namespace etcd::recipes::detail
