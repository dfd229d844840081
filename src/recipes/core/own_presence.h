// OwnPresence (internal): the presence lease (etcd/presence.h) that one
// recipe object owns for keys that only confer presence — a transient key,
// a work-queue consumer's claims, barrier parties, registrations. Never for
// exclusive holds (those use a Session and stay lost).
//
// The lease is created and started on first use, not by the constructor;
// concurrent first uses share one grant.
//
// Shared (a transient key's, hence a registration's, by default): every
// shared OwnPresence of one client with the same TTL and backoff is a member
// of one lease (LeaseSlot), so a process keeps one lease and one keep-alive
// stream for thousands of keys. Each member still heals alone: when the
// lease is lost, every member hears kExpired; after the re-grant each
// member's restore hook runs, and a member whose hook fails (its key taken
// meanwhile) hears kRestoreFailed and is tried again by itself, with the
// lease's backoff, without touching the others. A member that leaves (drop
// for good) does not revoke the lease while others use it: it deletes its own
// keys first (the recipes do, guarded); the last one to leave revokes it. Its events and its restore hook
// reach the owner through the handlers given at construction, which must
// hold the owner weakly (the lease must never keep its owner alive). drop()
// revokes it (its keys go with it): a recipe drops it at close(), or after
// a failed first use so that the next use starts from a fresh lease.
#pragma once

#include <asio/strand.hpp>
#include <asio/system_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "client_link.h"
#include "etcd/call.h"
#include "etcd/presence.h"
#include "etcd/status.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

class OwnPresence : public std::enable_shared_from_this<OwnPresence> {
 public:
  using EventHandler = std::function<void(PresenceEvent, const Status&)>;

  // The core of a recipe whose keys live on its OwnPresence: it checks
  // RecipeOptions::session_ttl (the lease's TTL, at least 1 s) with the
  // recipe's own `input` checks, and drops the session options — presence
  // heals, so it never rides on a (shared) session, which is for exclusive
  // holds that stay lost.
  static std::shared_ptr<RecipeCore> make_core(Client client, const char* kind, std::string name, RecipeOptions options,
                                               Status input);

  // `what` names the lease in errors ("the consumer's lease"). With
  // `share_with`, a member of that client's shared lease for this TTL and
  // backoff (above); without, a lease of its own.
  OwnPresence(PresenceOptions options, std::string what, EventHandler on_event, PresenceRestoreHook restore,
              const Client* share_with = nullptr);
  OwnPresence(const OwnPresence&) = delete;
  OwnPresence& operator=(const OwnPresence&) = delete;
  ~OwnPresence();

  // Runs `then` with the current lease id, creating and starting the lease
  // through `link` on first use. Fails with kClosed after close(), with
  // kUnavailable while the lease heals after a loss (its restore hook will
  // follow), and with the grant's failure (a first grant that did not get
  // through is tried again a few times first). `then` runs inline when the
  // lease is there already, otherwise on `resume_on` when given (else on
  // the thread that completed the grant).
  void with_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
                  const asio::strand<Executor>* resume_on = nullptr);
  // The current lease id: 0 before the first use, while healing, after drop().
  int64_t lease_id() const;

  std::chrono::seconds ttl() const { return ttl_; }

  // Revokes the lease, if there is one (its keys go with it), and forgets
  // it; `then` (if any) runs once the revoke is done. With `for_good`
  // (close), every later with_lease() fails with kClosed; otherwise the
  // next one starts a new lease. Shared: only the last member revokes (a
  // drop that is not for good revokes nothing while others use the lease).
  void drop(bool for_good, std::function<void()> then);

  class LeaseSlot;

 private:
  OwnPresence(std::chrono::seconds ttl, std::string what, std::pair<std::shared_ptr<LeaseSlot>, uint64_t> slot);
  void start(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
             std::optional<asio::strand<Executor>> resume_on, int attempt);

  const std::chrono::seconds ttl_;
  const std::string what_;
  const std::shared_ptr<LeaseSlot> slot_;
  const uint64_t member_;

  mutable std::mutex mu_;
  bool closed_ = false;
};

// The OwnPresence of a presence recipe's state object, wired as each of them
// does: its events go to owner->presence_event(event, why), its restore hook
// to owner->restore(lease) (held weakly: once the owner is gone the hook
// answers closed), and the recipe's close() revokes the lease (its keys go
// with it).
template <class Owner>
std::shared_ptr<OwnPresence> attach_presence(const std::shared_ptr<Owner>& owner, RecipeCore& core,
                                             std::chrono::seconds ttl, std::string what) {
  std::weak_ptr<Owner> weak = owner;
  auto presence = std::make_shared<OwnPresence>(
      PresenceOptions{.ttl = ttl}, what,
      [weak](PresenceEvent event, const Status& why) {
        if (auto self = weak.lock()) self->presence_event(event, why);
      },
      [weak, what](int64_t lease) -> Call<void> {
        auto self = weak.lock();
        if (!self) return Call<void>::ready(Closed(what), Executor(asio::system_executor()));
        return self->restore(lease);
      });
  core.set_close_action([presence] { presence->drop(/*for_good=*/true, nullptr); });
  return presence;
}

// How a presence recipe tells its user about a lost lease: recorded in
// errors() (kHoldLost unless the cause says more) and state() kLost; once
// the lease is back and its keys restored, state() kReconnected. Only a
// loss that took keys of the owner's is news, and then its end.
class PresenceLossReport {
 public:
  // `owns_keys`: the lease carried keys of the owner's when the event came.
  // `consequence` completes "the <lease> was lost: <why>; ...".
  void on_event(RecipeCore& core, PresenceEvent event, const Status& why, bool owns_keys, std::string_view lease,
                std::string_view consequence);

 private:
  std::mutex mu_;
  bool reported_ = false;
};

}  // namespace etcd::recipes::detail
