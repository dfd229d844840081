// The pieces of a client that its long-lived streams use (internal): the
// watch hub's Watch stream and the lease keeper's keep-alive streams open
// on the current endpoint with the client's token, tell the endpoint set
// and the connection state what they see, and wait the retry policy's
// backoff between reconnections. The client's core holds one; the hub and
// the keeper refer to it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <functional>
#include <memory>
#include <string>

#include "auth.h"
#include "connection_monitor.h"
#include "endpoints.h"
#include "etcd/client.h"

namespace etcd::detail {

struct StreamPieces {
  const RetryPolicy& retry;
  asio::io_context& io;
  EndpointSet& endpoints;
  Auth& auth;
  ConnectionMonitor& connection;
  // Where the log records of the streams go (the client's callback
  // executor, as for the unary calls' records).
  Executor callback;

  // Starts `stream` (a BidiStream) on `ep` from the io thread, once a token
  // is at hand; `bind` binds the call to it. When there is no token,
  // `refused` (if given) may end it there instead (true): a failed start
  // otherwise fails the stream, which is retried like any other.
  template <class Stream>
  void open(std::shared_ptr<Stream> stream, std::shared_ptr<Endpoint> ep, typename Stream::Bind bind,
            std::function<bool(const Status&)> refused = nullptr) const {
    asio::post(io, [this, stream = std::move(stream), ep = std::move(ep), bind = std::move(bind),
                    refused = std::move(refused)] {
      auth.with_token([this, stream, ep, bind, refused](const Status& st) {
        if (refused && refused(st)) return;
        stream->start(auth, *ep, bind, stream);
      });
    });
  }

  // A stream on `ep`, sent with `token`, ended with `s`: an expired token
  // is dropped; a member that is unavailable or ran out of time (or, with
  // `cancel_fails`, reset the stream) is left for the next endpoint, and
  // the client is suspended unless the member only lost its leader.
  void ended(const grpc::Status& s, const std::string& token, const std::shared_ptr<Endpoint>& ep,
             bool cancel_fails) const;

  // The wait before the `attempt`-th reconnection in a row (none before
  // the first).
  Clock::duration reconnect_delay(int attempt) const;
  // The log sink's records of a stream's heal: `what` ("watch", "lease
  // keep-alive") on `ep` broke with `why` and is being reconnected
  // (warning), then is back (info). Posted, never inline: the callers hold
  // their locks.
  void log_broken(const char* what, const std::shared_ptr<Endpoint>& ep, Status why) const;
  void log_back(const char* what, const std::shared_ptr<Endpoint>& ep) const;
};

}  // namespace etcd::detail
