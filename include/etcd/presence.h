// etcd::PresenceLease — a self-healing lease for keys that only confer
// presence: service registrations, barrier keys, transient keys, queue
// consumers. NEVER use it for exclusive holds (locks, permits, leadership):
// those must stay lost once their lease is lost (see etcd::Session).
//
//   auto presence = etcd::PresenceLease::create(client);
//   presence->start().wait().value();
//   std::vector<std::pair<std::string, std::string>> keys{{"svc/a/1", "10.0.0.1:80"}};
//   etcd::PresenceLease::put_if_absent(client, keys, presence->lease_id()).wait();
//   presence->set_restore_hook(etcd::PresenceLease::restore_keys(client, keys));
//   auto sub = presence->on_event([](etcd::PresenceEvent e, const etcd::Status& s) { ... });
//
// When its lease is lost (expired or not found), the PresenceLease reports
// kExpired, grants a new lease (retrying with backoff while that fails), runs
// the restore hook with the new lease id, and reports kRestored — or
// kRestoreFailed, and retries the hook (or the grant) later, with backoff,
// until it succeeds, the lease is lost again, or close() is called.
//
// The restore hook must re-create keys only where they are still free, never
// overwriting a key someone else created meanwhile: put_if_absent() and
// restore_keys() do exactly that.
//
// No thread of its own: backoff timers run on the client's executor, and so
// do the hook and the event listeners (events in order). All methods may be
// called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/kv.h"
#include "etcd/status.h"

namespace etcd {

enum class PresenceEvent {
  kExpired,        // the lease was lost (status: why); healing starts
  kRestored,       // a new lease was granted and the restore hook succeeded
  kRestoreFailed,  // granting or the restore hook failed (status: why); retried later
};

std::string_view to_string(PresenceEvent event) noexcept;

// Re-creates the owned keys under `new_lease_id`, only where still free.
using PresenceRestoreHook = std::function<Call<void>(int64_t new_lease_id)>;

struct PresenceOptions {
  // Requested TTL of each lease; at least 1 s.
  std::chrono::seconds ttl{10};
  // Run after every re-grant; may also be set later with set_restore_hook().
  PresenceRestoreHook restore{};
  // Backoff between failed re-grants / restore attempts (doubling, +-20%
  // jitter, capped at max_backoff).
  std::chrono::milliseconds initial_backoff{250};
  std::chrono::milliseconds max_backoff{5000};
};

// What put_if_absent() did, key by key.
struct PutIfAbsentResult {
  ResponseHeader header{};               // of the last transaction
  std::vector<std::string> created{};    // were absent: created under the lease
  std::vector<std::string> refreshed{};  // already under this lease: value rewritten
  std::vector<KeyValue> taken{};         // held by another owner: left alone
  // OK when no key was taken; otherwise kAlreadyExists naming the taken keys.
  Status status() const;
};

class PresenceLease {
 public:
  using RestoreHook = PresenceRestoreHook;

  // Does no I/O. Bad options are reported by start().
  static std::shared_ptr<PresenceLease> create(Client client);
  static std::shared_ptr<PresenceLease> create(Client client, PresenceOptions options);

  // Fire and forget: stops healing, cancels timers and revokes the lease.
  ~PresenceLease();
  PresenceLease(const PresenceLease&) = delete;
  PresenceLease& operator=(const PresenceLease&) = delete;

  // Grants the first lease (the restore hook is not run for it: create the
  // keys yourself, e.g. with put_if_absent). Idempotent; concurrent starts
  // share one grant. TTL < 1 s fails with Errc::kBadArgument before any I/O;
  // after close() it fails with Errc::kClosed.
  Call<void> start();
  // Stops healing and revokes the current lease (its keys go with it).
  // Idempotent; later calls complete at once.
  Call<void> close();

  // The current lease id: 0 before start() and while healing after a loss.
  int64_t lease_id() const;
  // The granted TTL once started, the requested one before.
  std::chrono::seconds ttl() const;
  // A current lease exists and is alive.
  bool alive() const;
  bool closed() const;

  void set_restore_hook(RestoreHook hook);
  // Runs `listener` on the client's executor for every event, in order.
  Subscription on_event(std::function<void(PresenceEvent, const Status&)> listener);

  // Creates each key under `lease` only if it is absent, in one atomic Txn
  // (one per 64 keys: etcd limits nested transactions by --max-txn-ops). A
  // key that exists under the same lease gets its value rewritten; a key
  // that exists under any other owner (another lease, or none) is left alone
  // and reported in `taken`. A failure after the first Txn leaves the
  // earlier ones applied (they are safe to repeat). Empty or duplicate keys and lease <= 0 fail with
  // Errc::kBadArgument before any write.
  static Call<PutIfAbsentResult> put_if_absent(Client& client, std::vector<std::pair<std::string, std::string>> keys,
                                               int64_t lease);
  // A restore hook that put_if_absent()s `keys` and fails (kAlreadyExists,
  // naming them) while any of them is held by another owner.
  static RestoreHook restore_keys(Client client, std::vector<std::pair<std::string, std::string>> keys);

  struct Impl;

 private:
  explicit PresenceLease(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace etcd
