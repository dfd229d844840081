// Authentication with a user and password (internal): one token for the
// whole client, fetched by one Authenticate call however many calls and
// streams wait for it, and dropped when the server rejects it, so that the
// next call authenticates again. A client without a user sends no token.
//
// The Authenticate call enters the shutdown gate as a clean-up would: a
// closing client lets it finish (bounded, with the clean-ups) before it
// cancels it, and waits for it; waiters on a cancelled one hear kClosed.
// Waiters run on the io thread, or inline when a token is at hand.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "endpoints.h"
#include "etcd/client.h"
#include "shutdown_gate.h"
#include "single_flight.h"

namespace etcd::detail {

class Auth {
 public:
  Auth(const ClientOptions& options, EndpointSet& endpoints, ShutdownGate& gate, asio::io_context& io);
  Auth(const Auth&) = delete;
  Auth& operator=(const Auth&) = delete;

  bool enabled() const { return !user_.empty(); }
  // Runs `then` once a token is available (or with why there is none);
  // without a user, at once.
  void with_token(std::function<void(Status)> then);
  // The server rejected `token`: the next call authenticates again.
  void invalidate(const std::string& token);
  // Adds the token (if any) and the leader requirement to a context;
  // returns the token used, so a rejection can invalidate exactly that one.
  std::string prepare_context(grpc::ClientContext& ctx, bool require_leader) const;

 private:
  void authenticate();

  const std::string user_;
  const std::string password_;
  const std::chrono::milliseconds timeout_;
  EndpointSet& endpoints_;
  ShutdownGate& gate_;
  asio::io_context& io_;
  mutable std::mutex mu_;
  std::string token_;
  SingleFlight<Status> authenticating_;  // one Authenticate call for every waiter
};

}  // namespace etcd::detail
