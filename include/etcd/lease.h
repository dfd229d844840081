// Lease requests and the self-renewing Lease object.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/connection.h"
#include "etcd/kv.h"
#include "etcd/status.h"

namespace etcd {

struct LeaseGrantResponse {
  ResponseHeader header{};
  int64_t id = 0;
  int64_t ttl = 0;  // seconds, as granted (the server may raise it to its minimum)
};

struct LeaseRevokeResponse {
  ResponseHeader header{};
};

struct LeaseKeepAliveResponse {
  ResponseHeader header{};
  int64_t id = 0;
  int64_t ttl = 0;  // <= 0: the lease no longer exists
};

struct LeaseTimeToLiveResponse {
  ResponseHeader header{};
  int64_t id = 0;
  int64_t ttl = 0;  // remaining seconds; -1 when the lease has expired
  int64_t granted_ttl = 0;
  std::vector<std::string> keys{};
};

struct LeaseLeasesResponse {
  ResponseHeader header{};
  std::vector<int64_t> leases;
};

namespace detail {
class LeaseState;
class ClientCore;
}  // namespace detail

// A granted lease that keeps itself alive over one of the client's keep-alive
// streams (renewed every TTL/3; docs/client.md, "Leases") for as long as this
// object lives. When it is destroyed, renewal stops and the lease is revoked
// (asynchronously: the destructor never waits for the network).
//
// Loss: if the server says the lease is gone, or its TTL passes since the
// send time of the last confirmed renewal, the lease is lost: alive() turns
// false, lost_token() is requested and on_lost listeners run (once, on the
// client's executor). A lost lease is never re-granted by this object.
class Lease {
 public:
  Lease() = default;  // empty: id() == 0
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  int64_t id() const noexcept;
  std::chrono::seconds ttl() const noexcept;
  explicit operator bool() const noexcept { return id() != 0; }

  bool alive() const noexcept;
  // Send time of the last confirmed renewal + the TTL etcd confirmed, minus a
  // 250 ms margin: until then the lease is certainly alive on the server (bounded clock drift).
  Deadline safe_until() const noexcept;
  // Requested once, when the lease is lost (or revoked through this object).
  std::stop_token lost_token() const noexcept;
  // Runs `listener` on the client's executor when the lease is lost; runs
  // it (soon, on the executor) if it is already lost. Destroying the
  // returned Subscription unregisters it (a run already started finishes).
  // On an empty Lease the listener never runs.
  Subscription on_lost(std::function<void(const Status&)> listener);

  // Stops renewing and revokes; completes when the server confirmed.
  Call<void> revoke();
  // Stops renewing without revoking: the lease expires after its TTL.
  void detach();

 private:
  friend class detail::ClientCore;
  explicit Lease(std::shared_ptr<detail::LeaseState> state) : state_(std::move(state)) {}
  void reset() noexcept;
  std::shared_ptr<detail::LeaseState> state_{};
};

}  // namespace etcd
