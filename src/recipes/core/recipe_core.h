// The shared part of every recipe (internal), kept alive by its in-flight
// work: identity, client id, the input check, the link to the client, the
// session, recorded errors and the connection state with listeners,
// metrics, and the close gate.
//
// The client is reached only through the recipe's ClientLink
// (client_link.h): the core keeps it until close(), work in flight keeps
// copies, and a closed recipe whose work is done holds no share of the
// client, however long the object lives on.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/listener_set.h"
#include "client_link.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/log.h"
#include "etcd/recipes/metrics.h"
#include "etcd/recipes/recipe.h"
#include "etcd/session.h"
#include "etcd/status.h"

namespace etcd::recipes::detail {

// The client's listener container serves the recipes too.
using etcd::detail::ListenerSet;
using etcd::detail::ThrowSink;

class RecipeCore : public std::enable_shared_from_this<RecipeCore> {
 public:
  // `input`: the recipe's own checks of its arguments (besides the name and
  // the session TTL, which every recipe checks here).
  RecipeCore(Client client, std::string kind, std::string name, RecipeOptions options, Status input = Status());

  // The link to the client: the recipe's own until close(), afterwards
  // the one that work still in flight holds; null once that is done.
  // Whoever uses the client holds the link for as long as it does.
  std::shared_ptr<ClientLink> link() const;
  const std::string& name() const { return name_; }
  const std::string& identity() const { return identity_; }
  const std::string& client_id() const { return options_.client_id; }
  const RecipeOptions& options() const { return options_; }
  Metrics& metrics() { return *metrics_; }

  // The result of the input checks (named), or OK.
  const Status& input() const { return input_; }
  // input(), or kClosed after close(): what refuses an operation before
  // any I/O.
  Status usable() const;
  // usable(), or kClosed when `link` (what link() gave) is null: the
  // check of an operation that goes on with that link.
  Status usable(const std::shared_ptr<ClientLink>& link) const;

  // A Call of this recipe. Made while the recipe is open, it keeps the
  // link until it is consumed and completes on the client's executor;
  // made after close(), it completes on asio's system executor (the client
  // may be gone by the time it is consumed). `start` answers closed
  // itself, as the recipe's operations do through usable().
  template <class T>
  Call<T> call(typename Call<T>::Starter start) const {
    return link_call<T>(open_link(), std::move(start));
  }
  // A Call of this recipe that answers `result`.
  template <class T>
  Call<T> ready(Result<T> result) const {
    return ready_call<T>(open_link(), std::move(result));
  }

  // The session (shared or own), created on first use through `link` and
  // started.
  Call<std::shared_ptr<Session>> session(std::shared_ptr<ClientLink> link);
  // `s` turned out to be gone (its lease was not found) before the session
  // itself noticed: the next session() makes a new one. False for a fixed
  // shared session, which is the user's to replace.
  bool forget_session(const std::shared_ptr<Session>& s);
  // A fixed shared session (RecipeOptions::session) was given and has
  // ended (lost or closed): nothing this recipe does can bring it back.
  bool shared_session_ended() const;

  // Background failures: recorded (bounded), pushed to listeners and
  // logged (a warning).
  void record_error(Status status);
  // A log record of this recipe (etcd/log.h), posted to its strand (in
  // order); nothing once the client is gone or when no sink wants `level`.
  void log(LogLevel level, std::string message) { log(level, std::move(message), Status()); }
  void log(LogLevel level, std::string message, Status status);
  // Where a throwing listener's exception goes.
  ThrowSink throw_sink();
  std::vector<Status> errors() const;
  void clear_errors();
  Subscription on_error(std::function<void(const Status&)> listener);

  ConnectionState state() const;
  void set_state(ConnectionState state);
  Subscription on_state_change(std::function<void(ConnectionState)> listener);

  // The recipe's start (RecipeHandle::start), set once by its constructor.
  void set_start_action(std::function<void()> action) { start_action_ = std::move(action); }
  void start();
  // What close() does beyond the gate (release a hold, stop a thread), set
  // once by the recipe's constructor. It must not keep the recipe alive.
  void set_close_action(std::function<void()> action) { close_action_ = std::move(action); }

  // Shutdown gate.
  bool closed() const;
  // Marks closed, runs every registered waker (parked waiters finish with
  // kClosed), then the close action; then lets go of the link and the
  // sessions (the work just started holds what it needs). Idempotent.
  void close();
  // Registers a waker for a parked waiter; the Subscription unregisters it.
  Subscription on_close(std::function<void()> waker);
  Status closed_status() const;
  // Prefixes a status message with the recipe's identity.
  Status named(Status status) const;

 private:
  std::shared_ptr<ClientLink> open_link() const;

  std::weak_ptr<ClientLink> weak_link_;  // set once, by the constructor
  std::string kind_;
  std::string name_;
  std::string identity_;
  RecipeOptions options_;
  std::shared_ptr<Metrics> metrics_;
  Status input_;
  std::function<void()> start_action_;
  std::function<void()> close_action_;
  ListenerSet<const Status&> error_listeners_;
  ListenerSet<ConnectionState> state_listeners_;

  const bool shared_session_;  // options_.session was given

  mutable std::mutex mu_;
  std::shared_ptr<ClientLink> link_;  // until close()
  std::shared_ptr<Session> session_;
  std::vector<Status> errors_;
  uint64_t next_id_ = 1;
  std::vector<std::pair<uint64_t, std::function<void()>>> close_wakers_;
  ConnectionState state_ = ConnectionState::kConnected;
  bool closed_ = false;
  Subscription session_state_sub_;
};

}  // namespace etcd::recipes::detail
