// The one asynchronous core under every flavour of every client call.
//
// Threads owned by a client: one internal io thread (timers, retries,
// stream reconnection) and, unless the user supplied an executor, a small
// callback pool. gRPC's callback API completes RPCs on gRPC's own threads;
// the core only moves results along from there — user code always runs on
// the callback executor.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "call_watch.h"
#include "client_access.h"
#include "convert.h"
#include "etcd/client.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "event_loop.h"
#include "listener_set.h"
#include "single_flight.h"

namespace etcd::detail {

// Marks the calling thread, for the scope's life, as running one of gRPC's
// callbacks. A client core whose last reference goes on such a thread is
// deleted on a thread of its own, and a close() there does not wait: its
// destructor and close() wait for its calls' and streams' last callbacks,
// which gRPC may have to run on this very thread (waiting there would time
// out, holding up every client's callbacks meanwhile, and the late callback
// would meet a freed core).
class GrpcCallbackScope {
 public:
  GrpcCallbackScope() { ++depth_; }
  ~GrpcCallbackScope() { --depth_; }
  GrpcCallbackScope(const GrpcCallbackScope&) = delete;
  GrpcCallbackScope& operator=(const GrpcCallbackScope&) = delete;
  static bool active() { return depth_ > 0; }

 private:
  static thread_local int depth_;
};

// One member endpoint: its channel and stubs, created on first use.
struct Endpoint {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Cluster::Stub> cluster;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  std::unique_ptr<etcdserverpb::Auth::Stub> auth;
  std::atomic<bool> checking{false};  // a CallWatch check is in flight
};

class WatchHub;
class LeaseKeeper;
class LeaseState;

// What the core needs to know about an RPC.
struct Rpc {
  const char* name;
  bool idempotent;             // safe to send again after an unknown outcome
  bool require_leader = true;  // a member without a raft leader refuses it at once
  bool watched = true;         // CallWatch may give it up (not for calls to one fixed member)
};

// How the core treats an RPC's failures.
struct RpcPolicy {
  bool idempotent;             // safe to send again after an unknown outcome
  bool require_leader = true;  // a member without a raft leader refuses it at once
};

// One unary method of etcd's API, named once (ETCD_RECIPES_UNARY below):
// the stub that carries it and its blocking and callback flavours, which
// gRPC generates under the same name.
template <class Stub, class Req, class Resp>
struct UnaryMethod {
  const char* name;
  std::unique_ptr<Stub> Endpoint::*stub;
  grpc::Status (Stub::*sync)(grpc::ClientContext*, const Req&, Resp*);
  void (Stub::async::*async)(grpc::ClientContext*, const Req*, Resp*, std::function<void(grpc::Status)>);
};

template <class Stub, class Req, class Resp>
UnaryMethod<Stub, Req, Resp> unary_method(const char* name, std::unique_ptr<Stub> Endpoint::*stub,
                                          grpc::Status (Stub::*sync)(grpc::ClientContext*, const Req&, Resp*),
                                          void (Stub::async::*async)(grpc::ClientContext*, const Req*, Resp*,
                                                                     std::function<void(grpc::Status)>)) {
  return {name, stub, sync, async};
}

// ETCD_RECIPES_UNARY(kv, KV, Range): the Range method of the KV service,
// reached through Endpoint::kv.
#define ETCD_RECIPES_UNARY(member, Service, Method)                                                                \
  ::etcd::detail::unary_method(#Method, &::etcd::detail::Endpoint::member, &::etcdserverpb::Service::Stub::Method, \
                               &::etcdserverpb::Service::Stub::async::Method)

// Issues one attempt of a unary RPC on an endpoint; calls `done` once.
using IssueFn = std::function<void(Endpoint&, grpc::ClientContext*, std::function<void(grpc::Status)> done)>;
// Runs one attempt synchronously on the calling thread.
using SyncIssueFn = std::function<grpc::Status(Endpoint&, grpc::ClientContext*)>;

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  explicit ClientCore(ClientOptions options);
  ~ClientCore();
  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  const ClientOptions& options() const { return options_; }
  const Namespace& ns() const { return ns_; }
  Executor executor() const { return callback_executor_; }
  asio::io_context& io() { return io_loop_.context(); }

  // The endpoint calls go to now (connecting lazily).
  std::shared_ptr<Endpoint> current_endpoint();
  // Every endpoint of the client but `ep` (built if not yet): where a call
  // could go instead.
  std::vector<std::shared_ptr<Endpoint>> endpoints_except(const std::shared_ptr<Endpoint>& ep);
  // A call on `ep` failed in a way that suggests the member is unusable:
  // move on to the next endpoint (once per failure of the current one).
  void report_endpoint_failure(const std::shared_ptr<Endpoint>& ep);
  // `ep` stopped answering on an open connection (paused member, blackholed
  // link): move on, and give the endpoint a fresh channel, because gRPC
  // would keep using the dead connection until its keepalive gives up.
  void report_endpoint_stall(const std::shared_ptr<Endpoint>& ep);
  // The endpoint for a specific member (one of ours, or any other), kept
  // for the client's lifetime.
  std::shared_ptr<Endpoint> endpoint_for(const std::string& address);

  // Runs one unary RPC with the client's deadline, cancellation, failover
  // and retry rules; `finish` gets the final status exactly once, on a gRPC
  // or io thread (it must not run user code).
  // With `options.caller_waits`, the first attempt runs on the calling
  // thread through `sync_issue`.
  void run_unary(Rpc rpc, const CallOptions& options, IssueFn issue, SyncIssueFn sync_issue,
                 std::function<void(Status)> finish);

  // Typed wrapper: a lazily started Call<Out> around run_unary that sends
  // `request` through `method` (to `fixed` if given, else to the current
  // endpoint with failover) and converts the response with `convert`.
  template <class Out, class Stub, class Req, class Resp, class Convert>
  Call<Out> unary(const UnaryMethod<Stub, Req, Resp>& method, RpcPolicy policy, Req request, Convert convert,
                  std::shared_ptr<Endpoint> fixed);
  template <class Out, class Stub, class Req, class Resp, class Convert>
  Call<Out> unary(const UnaryMethod<Stub, Req, Resp>& method, RpcPolicy policy, Req request, Convert convert) {
    return unary<Out>(method, policy, std::move(request), std::move(convert), nullptr);
  }

  // Adds the auth token (if any) and leader metadata to a context; returns
  // the token used, so a rejection can invalidate exactly that one.
  std::string prepare_context(grpc::ClientContext& ctx, bool require_leader) const;

  // --- Authentication (user/password): one token, refreshed on demand.
  bool auth_enabled() const { return !options_.user.empty(); }
  // Runs `then` (on the io thread or inline) once a token is available.
  void with_token(std::function<void(Status)> then);
  // The server rejected `token`: the next call authenticates again.
  void invalidate_token(const std::string& token);

  // --- Connection state
  ConnectionState state() const;
  Subscription on_state_change(std::function<void(ConnectionState)> listener);
  // Calls and streams report what they see.
  void note_success();
  void note_connection_failure();
  void note_lease_lost();
  Deadline deadline_for(const CallOptions& options) const {
    return options.deadline ? *options.deadline : Clock::now() + options_.default_timeout;
  }
  std::chrono::milliseconds backoff(int attempt) const;
  // gRPC takes deadlines on the system clock.
  static std::chrono::system_clock::time_point to_system(Deadline d) {
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(d - Clock::now());
  }

  static Lease make_lease(std::shared_ptr<LeaseState> state) { return Lease(std::move(state)); }

  WatchHub& watch_hub() { return *watch_hub_; }
  CallWatch& call_watch() { return *call_watch_; }
  // Every etcd response header carries the member's raft term.
  template <class Resp>
  void note_term(const Resp& resp) {
    if constexpr (requires { resp.header().raft_term(); }) call_watch_->note_term(resp.header().raft_term());
  }
  // Contexts of calls in flight, cancelled when the client closes (a
  // clean-up's only once close() has waited for it).
  void track_context(const std::shared_ptr<grpc::ClientContext>& ctx, bool cleanup);
  void untrack_context(grpc::ClientContext* ctx);
  LeaseKeeper& lease_keeper() { return *lease_keeper_; }

  // Shutdown gate: `try_enter` refuses once closing — except a clean-up
  // (CleanupScope) while close() still waits for clean-ups; `leave` pairs
  // with it.
  bool try_enter(bool cleanup);
  void leave(bool cleanup);
  bool closed() const { return closing_.load(); }
  // Whether a call (a clean-up or not) may no longer start an attempt.
  bool refuses(bool cleanup) const { return closing_.load() && !(cleanup && cleanups_admitted_.load()); }
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
  std::atomic<uint64_t> rpcs_started{0}, rpcs_failed{0}, retries{0}, failovers{0};

  // Per-client state of the layers above the client (the recipes'
  // group-commit batcher, their key claims): one object per type and
  // client, made by `make` on first use (under a lock: `make` must not ask
  // for another service) and destroyed with the core. Such an object must
  // not own a Client or the core: that would be a cycle that keeps the
  // client alive for ever. Typed access: ClientAccess::service<S>.
  std::shared_ptr<void> service(std::type_index type, const std::function<std::shared_ptr<void>()>& make);

 private:
  std::shared_ptr<Endpoint> build_endpoint(const std::string& address) const;

  ClientOptions options_;
  Namespace ns_;

  EventLoop io_loop_{"etcd-io", 1};
  std::unique_ptr<EventLoop> callback_loop_;  // unless the user gave an executor
  Executor callback_executor_;

  mutable std::mutex endpoints_mu_;
  std::vector<std::shared_ptr<Endpoint>> endpoints_;  // lazily filled
  std::unordered_map<std::string, std::shared_ptr<Endpoint>> extra_endpoints_;
  size_t active_ = 0;

  std::unique_ptr<WatchHub> watch_hub_;
  std::unique_ptr<LeaseKeeper> lease_keeper_;
  std::unique_ptr<CallWatch> call_watch_;

  void transition(std::initializer_list<ConnectionState> from, ConnectionState to);

  mutable std::mutex auth_mu_;
  std::string token_;
  SingleFlight<Status> authenticating_;  // one Authenticate call for every waiter

  mutable std::mutex state_mu_;
  ConnectionState state_ = ConnectionState::kConnected;
  ListenerSet<ConnectionState> state_listeners_;
  std::optional<asio::strand<Executor>> state_strand_;  // keeps notifications in order

  std::atomic<bool> closing_{false};
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  int inflight_ = 0;
  int cleanups_ = 0;                           // of inflight_
  std::atomic<bool> cleanups_admitted_{true};  // until drain() stops waiting for them
  struct Tracked {
    std::weak_ptr<grpc::ClientContext> ctx;
    bool cleanup;
  };
  std::unordered_map<grpc::ClientContext*, Tracked> inflight_contexts_;  // cancelled on close
  friend class UnaryAttempt;
  std::once_flag close_once_;

  // Last: destroyed first, while everything they might refer to is intact.
  std::mutex services_mu_;
  std::unordered_map<std::type_index, std::shared_ptr<void>> services_;
};

template <class Out, class Stub, class Req, class Resp, class Convert>
Call<Out> ClientCore::unary(const UnaryMethod<Stub, Req, Resp>& method, RpcPolicy policy, Req request, Convert convert,
                            std::shared_ptr<Endpoint> fixed) {
  auto self = shared_from_this();
  auto state = std::make_shared<std::pair<Req, Resp>>(std::move(request), Resp{});
  const Rpc rpc{method.name, policy.idempotent, policy.require_leader, /*watched=*/!fixed};
  return Call<Out>(
      [self, rpc, method, fixed, state, convert](CallOptions options, Callback<Out> done) {
        self->run_unary(
            rpc, options,
            // The call (UnaryAttempt) keeps the core alive while it is in flight.
            [core = self.get(), state, method, fixed](Endpoint& ep, grpc::ClientContext* ctx,
                                                      std::function<void(grpc::Status)> cb) {
              Endpoint& target = fixed ? *fixed : ep;
              state->second.Clear();
              ((target.*method.stub)->async()->*method.async)(ctx, &state->first, &state->second,
                                                              [core, state, cb = std::move(cb)](grpc::Status s) {
                                                                if (s.ok()) core->note_term(state->second);
                                                                cb(std::move(s));
                                                              });
            },
            [core = self.get(), state, method, fixed](Endpoint& ep, grpc::ClientContext* ctx) {
              Endpoint& target = fixed ? *fixed : ep;
              state->second.Clear();
              grpc::Status s = ((*(target.*method.stub)).*method.sync)(ctx, state->first, &state->second);
              if (s.ok()) core->note_term(state->second);
              return s;
            },
            [state, convert, done = std::move(done)](Status status) {
              if (!status.ok()) {
                done(std::move(status));
              } else {
                done(convert(state->second));
              }
            });
      },
      executor());
}

}  // namespace etcd::detail
