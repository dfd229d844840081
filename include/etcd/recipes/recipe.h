// What every recipe shares: an identity that shows in errors and logs
// ("DistributedMutex[/locks/orders]"), a client id, recorded background
// errors with listeners, a connection state with listeners, metrics, and a
// shutdown gate (close() refuses new work, wakes parked waiters with
// Errc::kClosed and drains what is in flight).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/recipes/metrics.h"
#include "etcd/session.h"
#include "etcd/status.h"

namespace etcd::recipes {

// How the contenders of a DistributedMutex, a DistributedReadWriteLock, a
// LeaderLatch, a LeaderSelector and a DistributedSemaphore queue (mutex.h
// and semaphore.h, "Key layout").
enum class ContenderLayout {
  // NAME/<lease id in hex>, the layout of etcd's Go concurrency package,
  // `etcdctl lock` and etcd's lock service (the semaphore: its holders
  // layout). Each acquisition costs etcd reads of every waiting key (sorted
  // by create revision): O(waiters).
  kGoConcurrency,
  // NAME/~<revision>-<lease>-<n>, keys that name a revision: each acquisition
  // costs etcd the same at any number of waiters, and contenders may share
  // one session. Excludes together with kGoConcurrency contenders and
  // `etcdctl lock` on the same name (the lowest create revision holds).
  kOrdered,
};

struct RecipeOptions {
  // Shows in keys' values and in errors; default: "<hostname>:<pid>".
  std::string client_id{};
  // Share one session (one lease) between recipes; by default each recipe
  // object that needs one creates its own on first use.
  std::shared_ptr<Session> session{};
  // Makes the sessions of this recipe instead of Session::create (for
  // shared or specially configured leases). Called again after a session
  // was lost: a hold is never re-created under a lost lease, but the next
  // acquisition gets a fresh session. A fixed `session` that was lost stays
  // lost (every later acquisition fails with Errc::kLeaseExpired); give a
  // factory to recover.
  std::function<std::shared_ptr<Session>()> session_factory{};
  // TTL of a session the recipe creates itself (at least 1 s).
  std::chrono::seconds session_ttl{10};
  // Keys that only confer presence and heal (TransientKeyValue, and so a
  // ServiceRegistry's registrations): by default every such object of one
  // Client with the same session_ttl shares one presence lease (one lease
  // and keep-alive for the process, however many keys; each key still heals
  // alone, only where it is free). true: this object's keys live on a lease
  // of their own (revoked by its close(), and lost or healed alone).
  bool own_presence_lease = false;
  // The key layout of the mutex, the read-write lock, the election's
  // candidates and the semaphore (other recipes keep their own).
  ContenderLayout contender_layout = ContenderLayout::kGoConcurrency;
  std::shared_ptr<Metrics> metrics{};
};

// "<hostname>:<pid>".
std::string default_client_id();

// Checks a recipe name (a key prefix): not empty, no NUL byte, no trailing '/'.
Status validate_name(std::string_view kind, const std::string& name);

namespace detail {
class RecipeCore;
}  // namespace detail

// What every recipe object answers, over its core: its name and identity
// ("DistributedMutex[/locks/orders]"), its connection state (following its
// session), the background failures it recorded, with listeners — and one
// lifecycle, the same for every recipe (docs/recipes.md, "Lifecycle"):
//   - the constructor does no I/O and never throws; invalid input (a bad
//     name, a TTL below 1 s, permits < 1, ...) is kept and reported by every
//     later operation (Errc::kBadArgument), before anything is written;
//   - start() is the first use: background recipes (elections, observers,
//     caches) begin their work, the others check their input. Operations
//     start a recipe on first use, so calling it is optional for those;
//   - close() is idempotent: new work is refused with Errc::kClosed, parked
//     waiters finish with Errc::kClosed, what the recipe holds is released
//     (without waiting); the destructor closes;
//   - blocking helpers: running out of time gives false / std::nullopt; any
//     other failure throws etcd::Error;
//   - listeners run on the client's executor, never on gRPC's threads; a
//     listener that throws is recorded in errors();
//   - recipe objects are movable, not copyable.
class RecipeHandle {
 public:
  RecipeHandle(RecipeHandle&&) noexcept = default;
  RecipeHandle& operator=(RecipeHandle&& other) noexcept;
  RecipeHandle(const RecipeHandle&) = delete;
  RecipeHandle& operator=(const RecipeHandle&) = delete;
  ~RecipeHandle();  // close()

  const std::string& name() const;
  const std::string& identity() const;
  // Throws etcd::Error for invalid input (kBadArgument) or after close()
  // (kClosed). Idempotent.
  void start();
  // See above. Idempotent.
  void close();
  bool closed() const;
  ConnectionState state() const;
  Subscription on_state_change(std::function<void(ConnectionState)> listener);
  // Recorded background failures (bounded), oldest first.
  std::vector<Status> errors() const;
  void clear_errors();
  Subscription on_error(std::function<void(const Status&)> listener);

 protected:
  RecipeHandle() = default;
  // Called once by the recipe's constructor.
  void bind_recipe(std::shared_ptr<detail::RecipeCore> core);

 private:
  std::shared_ptr<detail::RecipeCore> recipe_core_{};
};

}  // namespace etcd::recipes
