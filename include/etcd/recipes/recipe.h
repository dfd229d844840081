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

struct RecipeOptions {
  // Shows in keys' values and in errors; default: "<hostname>:<pid>".
  std::string client_id{};
  // Share one session (one lease) between recipes; by default each recipe
  // object that needs one creates its own on first use.
  std::shared_ptr<Session> session{};
  // TTL of a session the recipe creates itself.
  std::chrono::seconds session_ttl{10};
  std::shared_ptr<Metrics> metrics{};
};

// "<hostname>:<pid>".
std::string default_client_id();

// Checks a recipe name (a key prefix): not empty, no NUL byte, no trailing '/'.
Status validate_name(std::string_view kind, const std::string& name);

namespace detail {

// The shared part of a recipe, kept alive by its in-flight work.
class RecipeCore : public std::enable_shared_from_this<RecipeCore> {
 public:
  RecipeCore(Client client, std::string kind, std::string name, RecipeOptions options);

  Client& client() { return client_; }
  const std::string& name() const { return name_; }
  const std::string& identity() const { return identity_; }
  const std::string& client_id() const { return options_.client_id; }
  Metrics& metrics() { return *metrics_; }
  const RecipeOptions& options() const { return options_; }

  // The session (shared or own), created on first use and started.
  Call<std::shared_ptr<Session>> session();

  // Background failures: recorded (bounded) and pushed to listeners.
  void record_error(Status status);
  std::vector<Status> errors() const;
  void clear_errors();
  Subscription on_error(std::function<void(const Status&)> listener);

  ConnectionState state() const;
  void set_state(ConnectionState state);
  Subscription on_state_change(std::function<void(ConnectionState)> listener);

  // Shutdown gate.
  bool closed() const;
  // Marks closed and runs every registered waker (parked waiters finish
  // with kClosed). Idempotent.
  void close();
  // Registers a waker for a parked waiter; the Subscription unregisters it.
  Subscription on_close(std::function<void()> waker);
  Status closed_status() const;
  // Prefixes a status message with the recipe's identity.
  Status named(Status status) const;

 private:
  Client client_;
  std::string name_;
  std::string identity_;
  RecipeOptions options_;
  std::shared_ptr<Metrics> metrics_;

  mutable std::mutex mu_;
  std::shared_ptr<Session> session_;
  std::vector<Status> errors_;
  uint64_t next_id_ = 1;
  std::vector<std::pair<uint64_t, std::shared_ptr<std::function<void(const Status&)>>>> error_listeners_;
  std::vector<std::pair<uint64_t, std::shared_ptr<std::function<void(ConnectionState)>>>> state_listeners_;
  std::vector<std::pair<uint64_t, std::function<void()>>> close_wakers_;
  ConnectionState state_ = ConnectionState::kConnected;
  bool closed_ = false;
  Subscription session_state_sub_;
};

}  // namespace detail
// What every recipe object answers, over its core: its name and identity
// ("DistributedMutex[/locks/orders]"), its connection state (following its
// session) and the background failures it recorded, with listeners.
class RecipeHandle {
 public:
  const std::string& name() const;
  const std::string& identity() const;
  ConnectionState state() const;
  Subscription on_state_change(std::function<void(ConnectionState)> listener);
  // Recorded background failures (bounded), oldest first.
  std::vector<Status> errors() const;
  void clear_errors();
  Subscription on_error(std::function<void(const Status&)> listener);

 protected:
  RecipeHandle() = default;
  // Called once by the recipe's constructor.
  void bind_recipe(std::shared_ptr<detail::RecipeCore> core) { recipe_core_ = std::move(core); }

 private:
  std::shared_ptr<detail::RecipeCore> recipe_core_{};
};

}  // namespace etcd::recipes
