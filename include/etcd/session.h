// etcd::Session — one lease and its keep-alive, shared by the recipes of a
// process (like Go's concurrency.Session).
//
//   auto session = etcd::Session::create(client, {.ttl = std::chrono::seconds(10)});
//   session->start().wait().value();                 // grants the lease
//   client.put("lock/owner", "me", {.lease = session->lease_id()});
//   session->on_lost([](const etcd::Status& why) { /* every hold is gone */ });
//   ...
//   session->close().wait();                          // revokes the lease
//
// A Session is meant for holds that confer exclusivity (lock holds, permits,
// leadership): once its lease is lost it stays lost. It never re-grants a
// lease; create a new Session to contend again. (For things that only
// confer presence and should heal, see etcd::PresenceLease.)
//
// Loss: when the client's keep-alive learns that the lease is gone on the
// server (Errc::kLeaseNotFound) or its TTL passed without a confirmed
// renewal (Errc::kLeaseExpired), the session is lost: alive() turns false,
// state() is kLost, lost_token() is requested and on_lost listeners run once
// with that status.
//
// Close: close() (or destroying the last handle) ends the session and revokes
// its lease. It is reported to on_lost listeners with an Errc::kClosed status
// and requests lost_token() (whoever holds something under the session must
// stop), but it is not a connection event: state() turns kLost without
// on_state_change listeners being called.
//
// Threads: every listener runs on the client's executor, never under a lock
// of the session; state listeners see changes in order. All methods may be
// called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/status.h"

namespace etcd {

struct SessionOptions {
  // Requested TTL of the session's lease; at least 1 s. etcd raises a TTL
  // below its own minimum; ttl() reports the TTL actually granted.
  std::chrono::seconds ttl{10};
};

class Session {
 public:
  // Does no I/O. Bad options are reported by start().
  // (Overloads, not a defaulted SessionOptions: see docs/client.md.)
  static std::shared_ptr<Session> create(Client client);
  static std::shared_ptr<Session> create(Client client, SessionOptions options);

  // Fire and forget: stops renewing and revokes the lease without waiting.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Grants the lease and starts keeping it alive. Idempotent: once started it
  // completes at once; concurrent starts share one grant (the first caller's
  // deadline and stop token apply to it). A TTL below 1 s fails with
  // Errc::kBadArgument before any I/O. After a loss it fails with the loss
  // status, after close() with Errc::kClosed. A failed grant may be retried
  // with another start().
  Call<void> start();

  // Ends the session: on_lost listeners get Errc::kClosed, lost_token() is
  // requested, and the lease is revoked; completes when the server confirmed
  // the revoke (a lease that is already gone counts as revoked). Idempotent:
  // later calls complete at once.
  Call<void> close();

  // The session's lease id; 0 before start() succeeded.
  int64_t lease_id() const;
  // The granted TTL once started, the requested one before.
  std::chrono::seconds ttl() const;
  // True while the lease is certainly alive on the server: started, neither
  // lost nor closed, and before safe_until().
  bool alive() const;
  // Until then the lease is certainly alive (last confirmed renewal + TTL,
  // minus a safety margin); a time in the past when not alive.
  Deadline safe_until() const;
  // Requested exactly once: when the lease is lost or the session closed.
  std::stop_token lost_token() const;
  // Runs `listener` once, on the client's executor, when the lease is lost
  // (or the session closed: Errc::kClosed). Registering after that runs it
  // soon. Destroying the Subscription unregisters it.
  Subscription on_lost(std::function<void(const Status&)> listener);
  // The status the session ended with (OK while it has not ended).
  Status loss() const;

  // The session's own connection state:
  //   kSuspended   before start() succeeded, and while the client is
  //                suspended (keep-alives failing) but the lease may live;
  //   kConnected   after start();
  //   kReconnected when the client recovered and the lease survived;
  //   kLost        terminal: the lease is lost (or the session closed).
  ConnectionState state() const;
  // Runs `listener` on the client's executor at every change, in order.
  Subscription on_state_change(std::function<void(ConnectionState)> listener);

  bool closed() const;
  const Client& client() const;

  struct Impl;

 private:
  explicit Session(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace etcd
