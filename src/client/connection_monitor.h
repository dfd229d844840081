// The client's connection state (internal): calls and streams report what
// they see (an answer, a failing or silent member, a lease lost on the
// server) and the state moves accordingly; each change reaches the
// listeners subscribed when it was made, once, in order, on the callback
// executor (one strand), never on a gRPC thread and never under the
// monitor's lock.
#pragma once

#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>

#include <asio/strand.hpp>

#include "etcd/call.h"
#include "etcd/connection.h"
#include "listener_set.h"

namespace etcd::detail {

class ConnectionMonitor {
 public:
  explicit ConnectionMonitor(Executor callback_executor) : strand_(asio::make_strand(std::move(callback_executor))) {}
  ConnectionMonitor(const ConnectionMonitor&) = delete;
  ConnectionMonitor& operator=(const ConnectionMonitor&) = delete;

  ConnectionState state() const;
  Subscription on_change(std::function<void(ConnectionState)> listener);

  // A member answered: suspended or lost becomes reconnected.
  void note_success();
  // A member failed or went silent: connected becomes suspended.
  void note_connection_failure();
  // A kept lease is gone on the server: lost.
  void note_lease_lost();

 private:
  void transition(std::initializer_list<ConnectionState> from, ConnectionState to);

  mutable std::mutex mu_;
  ConnectionState state_ = ConnectionState::kConnected;
  ListenerSet<ConnectionState> listeners_;
  asio::strand<Executor> strand_;  // keeps notifications in order
};

}  // namespace etcd::detail
