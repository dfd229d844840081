// The state behind one Lease handle (internal): its id and TTL, the expiry
// the confirmed renewals prove, and its loss, told once to the loss
// listeners (on the client's executor) and to the client's connection
// state when the server lost it. The LeaseKeeper renews it and decides
// when it is lost; the handle reaches its client through `client()`.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>

#include "etcd/call.h"
#include "etcd/lease.h"
#include "listener_set.h"

namespace etcd::detail {

class ClientCore;
class ConnectionMonitor;

class LeaseState : public std::enable_shared_from_this<LeaseState> {
 public:
  // `client`: the client the lease belongs to (for its Lease handle);
  // `connection` hears of a loss on the server's side.
  LeaseState(std::weak_ptr<ClientCore> client, std::weak_ptr<ConnectionMonitor> connection, Executor ex, int64_t id,
             std::chrono::seconds ttl, Deadline granted_at)
      : client_(std::move(client)),
        connection_(std::move(connection)),
        executor_(std::move(ex)),
        id_(id),
        ttl_(ttl),
        expires_at_(granted_at + ttl) {}

  int64_t id() const { return id_; }
  std::chrono::seconds ttl() const { return ttl_; }
  bool alive() const;
  Deadline safe_until() const;
  std::stop_token lost_token() const { return lost_source_.get_token(); }
  Subscription on_lost(std::function<void(const Status&)> listener);
  // Fires the loss once; later calls do nothing.
  void mark_lost(Status why);
  // A renewal sent at `sent_at` was confirmed with `ttl` seconds.
  void confirm(Deadline sent_at, int64_t ttl);
  Deadline expires_at() const;
  std::weak_ptr<ClientCore> client() const { return client_; }

 private:
  std::weak_ptr<ClientCore> client_;
  std::weak_ptr<ConnectionMonitor> connection_;
  Executor executor_;
  const int64_t id_;
  const std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  Deadline expires_at_;
  bool lost_ = false;
  Status loss_;
  std::stop_source lost_source_;
  ListenerSet<const Status&> listeners_;  // heard once
};

}  // namespace etcd::detail
