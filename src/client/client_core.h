// The one asynchronous core under every flavour of every client call: it
// owns the client's threads and the pieces its calls and streams share,
// and ties their lifetimes together. The pieces know nothing of the core:
// each takes the others it uses (endpoints.h, auth.h, shutdown_gate.h,
// connection_monitor.h, call_watch.h, stream_pieces.h, watch_hub.h,
// lease_keeper.h, unary_attempt.h), and what outlives a call into gRPC
// holds the core through a shared_ptr to a piece that shares its ownership.
//
// Threads owned by a client: one internal io thread (timers, retries,
// stream reconnection) and, unless the user supplied an executor, a small
// callback pool. gRPC's callback API completes RPCs on gRPC's own threads;
// the core only moves results along from there — user code always runs on
// the callback executor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <typeindex>
#include <unordered_map>

#include "auth.h"
#include "call_watch.h"
#include "client_access.h"
#include "connection_monitor.h"
#include "convert.h"
#include "endpoints.h"
#include "etcd/client.h"
#include "event_loop.h"
#include "grpc_callback_scope.h"
#include "lease_keeper.h"
#include "shutdown_gate.h"
#include "stream_pieces.h"
#include "unary_attempt.h"
#include "unary_method.h"
#include "watch_hub.h"

namespace etcd::detail {

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  explicit ClientCore(ClientOptions options);
  ~ClientCore();
  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  const ClientOptions& options() const { return options_; }
  const Namespace& ns() const { return ns_; }
  Executor executor() const { return callback_executor_; }
  EndpointSet& endpoints() { return endpoints_; }
  ConnectionMonitor& connection() { return connection_; }
  WatchHub& watch_hub() { return watch_hub_; }
  LeaseKeeper& lease_keeper() { return lease_keeper_; }

  // A lazily started Call<Out> that sends `request` through `method` (to
  // `fixed` if given, else to the current endpoint with failover), with
  // the client's deadline, cancellation and retry rules (run_unary), and
  // converts the response with `convert`. `rpc` says how its failures are
  // treated; its name and whether the call watch may give it up come from
  // `method` and `fixed`.
  template <class Out, class Stub, class Req, class Resp, class Convert>
  Call<Out> unary(const UnaryMethod<Stub, Req, Resp>& method, Rpc rpc, Req request, Convert convert,
                  std::shared_ptr<Endpoint> fixed = nullptr);

  // A watch on the client's one watch stream.
  Watcher watch(etcdserverpb::WatchCreateRequest request, WatchHandler handler, Executor ex, bool notify_created);
  // A lease granted at `granted_at`, kept alive from now on.
  Lease keep_lease(int64_t id, std::chrono::seconds ttl, Deadline granted_at);

  Deadline deadline_for(const CallOptions& options) const {
    return options.deadline ? *options.deadline : Clock::now() + options_.default_timeout;
  }

  bool closed() const { return gate_.closed(); }
  void close();
  // Waits (bounded) for the clean-ups in flight, cancels what is left, then
  // waits (bounded) for the calls and streams close() cancelled; true if
  // they all completed (nothing of gRPC's will call into the core again).
  bool drain();
  // Lets the I/O and callback loops run out and joins their threads (on
  // one of them: stops it and lets its threads go). Idempotent.
  void finish_loops();
  // On the I/O thread or one of the client's own callback threads.
  bool on_own_thread() const;

  ClientStats stats() const;

  // Per-client state of the layers above the client (the recipes'
  // group-commit batcher, their key claims): one object per type and
  // client, made by `make` on first use (under a lock: `make` must not ask
  // for another service) and destroyed with the core. Such an object must
  // not own a Client or the core: that would be a cycle that keeps the
  // client alive for ever. Typed access: ClientAccess::service<S>.
  std::shared_ptr<void> service(std::type_index type, const std::function<std::shared_ptr<void>()>& make);

 private:
  // What a unary call uses, sharing the core's ownership.
  std::shared_ptr<const UnaryPieces> unary_pieces() { return {shared_from_this(), &unary_pieces_}; }

  ClientOptions options_;
  Namespace ns_;

  EventLoop io_loop_{"etcd-io", 1};
  std::unique_ptr<EventLoop> callback_loop_;  // unless the user gave an executor
  Executor callback_executor_;

  EndpointSet endpoints_;
  ShutdownGate gate_;
  ConnectionMonitor connection_;  // its strand goes before the callback loop
  Auth auth_;
  CallCounters counters_;
  CallWatch call_watch_;
  const StreamPieces stream_pieces_;
  WatchHub watch_hub_;
  LeaseKeeper lease_keeper_;
  const UnaryPieces unary_pieces_;
  std::once_flag close_once_;

  // Last: destroyed first, while everything they might refer to is intact.
  std::mutex services_mu_;
  std::unordered_map<std::type_index, std::shared_ptr<void>> services_;
};

template <class Out, class Stub, class Req, class Resp, class Convert>
Call<Out> ClientCore::unary(const UnaryMethod<Stub, Req, Resp>& method, Rpc rpc, Req request, Convert convert,
                            std::shared_ptr<Endpoint> fixed) {
  rpc.name = method.name;
  rpc.watched = !fixed;
  auto send = std::make_shared<MethodSend<Stub, Req, Resp>>(method, std::move(request), std::move(fixed), call_watch_);
  return Call<Out>(
      [pieces = unary_pieces(), rpc, send, convert](CallOptions options, Callback<Out> done) {
        run_unary(pieces, rpc, options, send, [send, convert, done = std::move(done)](Status status) {
          if (!status.ok()) {
            done(std::move(status));
          } else {
            done(convert(send->response()));
          }
        });
      },
      executor());
}

}  // namespace etcd::detail
