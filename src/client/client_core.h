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
#include <asio/thread_pool.hpp>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <unordered_map>
#include <string>
#include <thread>
#include <vector>

#include "convert.h"
#include "etcd/client.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace etcd::detail {

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
};

class WatchHub;
class LeaseKeeper;
class LeaseState;

// Issues one attempt of a unary RPC on an endpoint; calls `done` once.
using IssueFn = std::function<void(Endpoint&, grpc::ClientContext*, std::function<void(grpc::Status)> done)>;

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  explicit ClientCore(ClientOptions options);
  ~ClientCore();
  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  const ClientOptions& options() const { return options_; }
  const Namespace& ns() const { return ns_; }
  Executor executor() const { return callback_executor_; }
  asio::io_context& io() { return *io_; }

  // The endpoint calls go to now (connecting lazily).
  std::shared_ptr<Endpoint> current_endpoint();
  // A call on `ep` failed in a way that suggests the member is unusable:
  // move on to the next endpoint (once per failure of the current one).
  void report_endpoint_failure(const std::shared_ptr<Endpoint>& ep);
  // A standalone endpoint for one-off calls to a specific member.
  std::shared_ptr<Endpoint> make_endpoint(const std::string& address) const;

  // Runs one unary RPC with the client's deadline, cancellation, failover
  // and retry rules; `finish` gets the final status exactly once, on a gRPC
  // or io thread (it must not run user code).
  void run_unary(const char* name, bool idempotent, const CallOptions& options, IssueFn issue,
                 std::function<void(Status)> finish);

  // Typed wrapper: a lazily started Call<Out> around run_unary.
  template <class Out, class Req, class Resp, class Issue, class Convert>
  Call<Out> unary(const char* name, bool idempotent, Req request, Issue issue, Convert convert);

  // Adds the auth token (if any) and stream/leader metadata to a context.
  void prepare_context(grpc::ClientContext& ctx, bool require_leader) const;
  Deadline deadline_for(const CallOptions& options) const {
    return options.deadline ? *options.deadline : Clock::now() + options_.default_timeout;
  }
  std::chrono::milliseconds backoff(int attempt);
  // gRPC takes deadlines on the system clock.
  static std::chrono::system_clock::time_point to_system(Deadline d) {
    return std::chrono::system_clock::now() +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(d - Clock::now());
  }

  static Lease make_lease(std::shared_ptr<LeaseState> state) { return Lease(std::move(state)); }

  WatchHub& watch_hub() { return *watch_hub_; }
  LeaseKeeper& lease_keeper() { return *lease_keeper_; }

  // Shutdown gate: `try_enter` refuses once closing; `leave` pairs with it.
  bool try_enter();
  void leave();
  bool closed() const { return closing_.load(); }
  void close();

  ClientStats stats() const;
  std::atomic<uint64_t> rpcs_started{0}, rpcs_failed{0}, retries{0}, failovers{0};

 private:
  std::shared_ptr<Endpoint> build_endpoint(const std::string& address) const;
  bool on_own_thread() const;

  ClientOptions options_;
  Namespace ns_;

  // Shared with the threads that run them, so that a core destroyed on one
  // of its own threads does not pull the loop out from under that thread.
  std::shared_ptr<asio::io_context> io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> io_work_;
  std::thread io_thread_;
  std::shared_ptr<asio::thread_pool> callback_pool_;
  Executor callback_executor_;

  mutable std::mutex endpoints_mu_;
  std::vector<std::shared_ptr<Endpoint>> endpoints_;  // lazily filled
  size_t active_ = 0;

  std::mutex rng_mu_;
  std::minstd_rand rng_;

  std::unique_ptr<WatchHub> watch_hub_;
  std::unique_ptr<LeaseKeeper> lease_keeper_;

  std::atomic<bool> closing_{false};
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  int inflight_ = 0;
  std::unordered_map<grpc::ClientContext*, std::weak_ptr<grpc::ClientContext>> inflight_contexts_;  // cancelled on close
  friend class UnaryAttempt;
  std::once_flag close_once_;
};

template <class Out, class Req, class Resp, class Issue, class Convert>
Call<Out> ClientCore::unary(const char* name, bool idempotent, Req request, Issue issue, Convert convert) {
  auto self = shared_from_this();
  auto state = std::make_shared<std::pair<Req, Resp>>(std::move(request), Resp{});
  return Call<Out>(
      [self, name, idempotent, state, issue, convert](CallOptions options, Callback<Out> done) {
        self->run_unary(
            name, idempotent, options,
            [state, issue](Endpoint& ep, grpc::ClientContext* ctx, std::function<void(grpc::Status)> cb) {
              state->second.Clear();
              issue(ep, ctx, &state->first, &state->second, std::move(cb));
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
