#include "client_core.h"

#include <grpcpp/security/credentials.h>

namespace etcd::detail {

thread_local int GrpcCallbackScope::depth_ = 0;
thread_local int CleanupScope::depth_ = 0;

namespace {

void validate(const ClientOptions& o) {
  if (o.endpoints.empty()) throw Error(InvalidArgument("ClientOptions.endpoints is empty"));
  for (const auto& ep : o.endpoints) {
    auto colon = ep.rfind(':');
    if (ep.empty() || colon == std::string::npos || colon == 0 || colon + 1 == ep.size() ||
        ep.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      throw Error(InvalidArgument("endpoint '" + ep + "' is not host:port"));
    }
    if (ep.find("://") != std::string::npos) {
      throw Error(InvalidArgument("endpoint '" + ep + "' must be host:port without a scheme"));
    }
  }
  if (o.default_timeout.count() <= 0) throw Error(InvalidArgument("default_timeout must be positive"));
  if (o.retry.max_attempts < 1) throw Error(InvalidArgument("retry.max_attempts must be >= 1"));
  if (o.retry.member_check_interval.count() < 0) {
    throw Error(InvalidArgument("retry.member_check_interval must not be negative"));
  }
  if (o.retry.member_check_interval.count() > 0 && o.retry.member_check_timeout.count() <= 0) {
    throw Error(InvalidArgument("retry.member_check_timeout must be positive"));
  }
  if (o.callback_threads < 1 && !o.executor) throw Error(InvalidArgument("callback_threads must be >= 1"));
  if (!o.user.empty() && o.password.empty()) throw Error(InvalidArgument("a user needs a password"));
}

// gRPC 1.51 (Debian 12) runs callback-API completions on a shared pool of
// "nexting" threads that is torn down when the last channel that used it is
// destroyed, and that teardown races with a completion still unwinding on
// one of those threads (an assertion in grpc_cq_internal_unref). A client
// closing while its last call completes hit it. One process-wide channel
// that made a callback call and is never destroyed keeps the pool alive for
// the life of the process, so the teardown never happens.
void pin_grpc_callback_threads() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Reachable from a static: never destroyed, not reported as a leak.
    static auto* channel =
        new std::shared_ptr<grpc::Channel>(grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()));
    static auto* stub = etcdserverpb::Maintenance::NewStub(*channel).release();
    auto* ctx = new grpc::ClientContext();
    ctx->set_deadline(std::chrono::system_clock::now());
    auto* req = new etcdserverpb::StatusRequest();
    auto* resp = new etcdserverpb::StatusResponse();
    stub->async()->Status(ctx, req, resp, [ctx, req, resp](const grpc::Status&) {
      delete resp;
      delete req;
      delete ctx;
    });
  });
}

}  // namespace

ClientCore::ClientCore(ClientOptions options)
    : options_((validate(options), std::move(options))),
      ns_(options_.namespace_prefix),
      callback_loop_(options_.executor ? nullptr
                                       : std::make_unique<EventLoop>("etcd-callback", options_.callback_threads)),
      callback_executor_(options_.executor ? *options_.executor : Executor(callback_loop_->executor())),
      endpoints_(options_),
      connection_(callback_executor_),
      auth_(options_, endpoints_, gate_, io_loop_.context()),
      call_watch_(options_.retry, io_loop_.context(), endpoints_, auth_, gate_, connection_),
      stream_pieces_{options_.retry, io_loop_.context(), endpoints_, auth_, connection_, callback_executor_},
      watch_hub_(ns_, stream_pieces_),
      lease_keeper_(stream_pieces_),
      unary_pieces_{options_,    io_loop_.context(), endpoints_, auth_,
                    gate_,       connection_,        call_watch_, counters_,
                    callback_executor_} {
  pin_grpc_callback_threads();
}

ClientCore::~ClientCore() {
  close();
  // Never on one of our own threads (see make_core in client.cpp). A close()
  // that ran on one of them could not wait: wait here, so that no stream or
  // call completes into a destroyed core.
  drain();
  // One that ran inside a gRPC callback left the loops running: what they
  // still have queued (the shutdown's timer cancels) reaches the hub and
  // the keeper, which are destroyed before the loops are.
  finish_loops();
}

void ClientCore::finish_loops() {
  io_loop_.finish();
  if (callback_loop_) callback_loop_->finish();
}

bool ClientCore::drain() {
  constexpr auto kDrainTimeout = std::chrono::seconds(5);
  gate_.drain(kDrainTimeout);
  const bool watches = watch_hub_.wait_stopped(kDrainTimeout);
  const bool leases = lease_keeper_.wait_stopped(kDrainTimeout);
  return watches && leases;
}

bool ClientCore::on_own_thread() const {
  return io_loop_.running_in_this_thread() || (callback_loop_ && callback_loop_->running_in_this_thread());
}

void ClientCore::close() {
  std::call_once(close_once_, [this] {
    call_watch_.shutdown();
    gate_.close();
    watch_hub_.shutdown();
    lease_keeper_.shutdown();
    // Waiting for what was cancelled, or for the loops' threads, cannot end
    // inside a gRPC callback: the call whose callback runs is in flight until
    // it returns (the wait always ran out, after 5 s), and gRPC runs the
    // other calls' and streams' last callbacks on the few threads it shares
    // among every client in the process (two on two cores), so that two such
    // closes at once stalled every client for as long as their waits lasted.
    // The destructor waits instead, on a thread of its own (make_core).
    if (GrpcCallbackScope::active()) return;
    if (!on_own_thread()) drain();  // otherwise the destructor does
    finish_loops();
  });
}

Watcher ClientCore::watch(etcdserverpb::WatchCreateRequest request, WatchHandler handler, Executor ex,
                          bool notify_created) {
  return watch_hub_.add(std::shared_ptr<WatchHub>(shared_from_this(), &watch_hub_), std::move(request),
                        std::move(handler), std::move(ex), notify_created);
}

Lease ClientCore::keep_lease(int64_t id, std::chrono::seconds ttl, Deadline granted_at) {
  auto state = std::make_shared<LeaseState>(weak_from_this(),
                                            std::shared_ptr<ConnectionMonitor>(shared_from_this(), &connection_),
                                            callback_executor_, id, ttl, granted_at);
  lease_keeper_.keep(state);
  return Lease(std::move(state));
}

std::shared_ptr<void> ClientCore::service(std::type_index type, const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard lock(services_mu_);
  auto& slot = services_[type];
  if (!slot) slot = make();
  return slot;
}

ClientStats ClientCore::stats() const {
  ClientStats s;
  s.rpcs_started = counters_.rpcs_started.load();
  s.rpcs_failed = counters_.rpcs_failed.load();
  s.retries = counters_.retries.load();
  s.failovers = endpoints_.failovers();
  s.watch_stream_restarts = watch_hub_.stream_restarts();
  s.watches_open = watch_hub_.open_watches();
  s.leases_kept = lease_keeper_.kept_leases();
  s.lease_streams = lease_keeper_.open_streams();
  s.lease_stream_restarts = lease_keeper_.stream_restarts();
  return s;
}

}  // namespace etcd::detail
