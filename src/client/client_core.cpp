#include "client_core.h"

#include <grpcpp/security/credentials.h>

#include <asio/post.hpp>
#include <climits>
#include <fstream>
#include <sstream>

#include "lease_keeper.h"
#include "watch_hub.h"

namespace etcd::detail {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(InvalidArgument("cannot read file " + path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

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
  if (o.callback_threads < 1 && !o.executor) throw Error(InvalidArgument("callback_threads must be >= 1"));
  if (!o.user.empty() && o.password.empty()) throw Error(InvalidArgument("a user needs a password"));
}

// A gRPC failure that certainly happened before the request left this
// process: the transport never connected. Only then may a write be retried.
bool never_sent(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string& m = s.error_message();
  return m.find("failed to connect to all addresses") != std::string::npos ||
         m.find("Connection refused") != std::string::npos;
}

}  // namespace

// One unary RPC: attempts, failover, backoff, deadline and cancellation.
class UnaryAttempt : public std::enable_shared_from_this<UnaryAttempt> {
 public:
  UnaryAttempt(std::shared_ptr<ClientCore> core, const char* name, bool idempotent, Deadline deadline,
               std::stop_token stop, IssueFn issue, std::function<void(Status)> finish)
      : core_(std::move(core)),
        name_(name),
        idempotent_(idempotent),
        deadline_(deadline),
        stop_(std::move(stop)),
        issue_(std::move(issue)),
        finish_(std::move(finish)),
        timer_(core_->io()) {}

  void start() {
    if (stop_.stop_possible()) {
      stop_cb_.emplace(stop_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->cancel();
      });
    }
    attempt();
  }

 private:
  void cancel() {
    std::shared_ptr<grpc::ClientContext> ctx;
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
      ctx = ctx_;
    }
    // Outside the lock: gRPC may run on_done inline from TryCancel.
    if (ctx) ctx->TryCancel();
    asio::post(core_->io(), [self = shared_from_this()] { self->timer_.cancel(); });
  }

  void attempt() {
    auto ep = core_->current_endpoint();
    {
      std::unique_lock lock(mu_);
      if (cancelled_ || core_->closed()) {
        Status why = cancelled_ ? Cancelled(std::string(name_) + " cancelled") : Closed("client");
        lock.unlock();  // complete() may wait for a running stop callback, which takes mu_
        complete(std::move(why));
        return;
      }
      ctx_ = std::make_shared<grpc::ClientContext>();
      ctx_->set_deadline(ClientCore::to_system(deadline_));
      core_->prepare_context(*ctx_, false);
      ++attempts_;
      core_->rpcs_started.fetch_add(1, std::memory_order_relaxed);
      {
        std::lock_guard gate(core_->gate_mu_);
        core_->inflight_contexts_.emplace(ctx_.get(), ctx_);
      }
    }
    // Completion hops to the io thread, moving every reference along: the
    // last reference to a channel must never drop on a gRPC thread (gRPC's
    // callback threads cannot shut themselves down), and nothing of ours
    // runs inline inside gRPC.
    issue_(*ep, ctx_.get(), [self = shared_from_this(), ep](grpc::Status s) mutable {
      asio::io_context& io = self->core_->io();
      asio::post(io, [self = std::move(self), ep = std::move(ep), s = std::move(s)] { self->on_done(ep, s); });
    });
  }

  void on_done(const std::shared_ptr<Endpoint>& ep, const grpc::Status& s) {
    {
      std::lock_guard gate(core_->gate_mu_);
      core_->inflight_contexts_.erase(ctx_.get());
    }
    if (s.ok()) {
      complete(Status());
      return;
    }
    core_->rpcs_failed.fetch_add(1, std::memory_order_relaxed);
    Status status = from_grpc(s);
    bool cancelled;
    {
      std::lock_guard lock(mu_);
      cancelled = cancelled_;
    }
    if (s.error_code() == grpc::StatusCode::CANCELLED) {
      if (core_->closed()) {
        complete(Closed("client"));
      } else {
        complete(cancelled ? Cancelled(std::string(name_) + " cancelled") : std::move(status));
      }
      return;
    }
    const bool unavailable = s.error_code() == grpc::StatusCode::UNAVAILABLE;
    if (unavailable) core_->report_endpoint_failure(ep);
    // A member without a leader rejects a request before proposing it, and
    // a connection that never opened sent nothing: both are safe to retry.
    const bool safe = idempotent_ || never_sent(s) || status.is(Errc::kNoLeader);
    if (unavailable && safe && attempts_ < core_->options().retry.max_attempts && !cancelled) {
      auto delay = core_->backoff(attempts_);
      if (Clock::now() + delay < deadline_) {
        core_->retries.fetch_add(1, std::memory_order_relaxed);
        // The timer lives on the io thread (asio timers are not thread-safe).
        asio::post(core_->io(), [self = shared_from_this(), delay] {
          self->timer_.expires_after(delay);
          self->timer_.async_wait([self](const asio::error_code&) {
            self->attempt();  // checks for cancellation and close
          });
        });
        return;
      }
    }
    if (!idempotent_ && (unavailable || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) && !safe) {
      complete(Status(status.code(),
                      std::string(name_) + ": outcome unknown (the request may have been applied): " + s.error_message(),
                      Errc::kOutcomeUnknown));
      return;
    }
    complete(std::move(status));
  }

  void complete(Status status) {
    stop_cb_.reset();  // never destroyed on the thread that runs cancel()
    auto finish = std::move(finish_);
    finish_ = nullptr;
    if (finish) finish(std::move(status));
    core_->leave();
  }

  std::shared_ptr<ClientCore> core_;
  const char* name_;
  bool idempotent_;
  Deadline deadline_;
  std::stop_token stop_;
  IssueFn issue_;
  std::function<void(Status)> finish_;
  asio::steady_timer timer_;
  std::mutex mu_;
  bool cancelled_ = false;
  int attempts_ = 0;
  std::shared_ptr<grpc::ClientContext> ctx_;
  std::optional<std::stop_callback<std::function<void()>>> stop_cb_;
};

ClientCore::ClientCore(ClientOptions options)
    : options_((validate(options), std::move(options))),
      ns_(options_.namespace_prefix),
      io_(std::make_shared<asio::io_context>(1)),
      rng_(std::random_device{}()) {
  io_work_.emplace(io_->get_executor());
  io_thread_ = std::thread([io = io_] { io->run(); });
  if (options_.executor) {
    callback_executor_ = *options_.executor;
  } else {
    callback_pool_ = std::make_shared<asio::thread_pool>(static_cast<size_t>(options_.callback_threads));
    callback_executor_ = callback_pool_->get_executor();
  }
  endpoints_.resize(options_.endpoints.size());
  watch_hub_ = std::make_unique<WatchHub>(*this);
  lease_keeper_ = std::make_unique<LeaseKeeper>(*this);
}

ClientCore::~ClientCore() {
  close();
  // If the last reference went away on one of our own threads, that thread
  // cannot join itself; close() left it to finish on its own.
  if (io_thread_.joinable()) {
    if (io_thread_.get_id() == std::this_thread::get_id()) {
      io_thread_.detach();
    } else {
      io_thread_.join();
    }
  }
  if (callback_pool_ && callback_pool_->get_executor().running_in_this_thread()) {
    std::thread([pool = std::move(callback_pool_)] { pool->join(); }).detach();
  }
}

std::shared_ptr<Endpoint> ClientCore::build_endpoint(const std::string& address) const {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, INT_MAX);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Detect a dead link under an idle stream; etcd's default policy allows
  // pings every 5 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
  // Each endpoint is one member: never let gRPC share a connection between
  // clients, so a client's failover and faults stay its own.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options_.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options_.tls->ca_file.empty()) ssl.pem_root_certs = read_file(options_.tls->ca_file);
    if (!options_.tls->cert_file.empty()) ssl.pem_cert_chain = read_file(options_.tls->cert_file);
    if (!options_.tls->key_file.empty()) ssl.pem_private_key = read_file(options_.tls->key_file);
    if (!options_.tls->server_name.empty()) args.SetSslTargetNameOverride(options_.tls->server_name);
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  auto ep = std::make_shared<Endpoint>();
  ep->address = address;
  ep->channel = grpc::CreateCustomChannel(address, creds, args);
  ep->kv = etcdserverpb::KV::NewStub(ep->channel);
  ep->watch = etcdserverpb::Watch::NewStub(ep->channel);
  ep->lease = etcdserverpb::Lease::NewStub(ep->channel);
  ep->cluster = etcdserverpb::Cluster::NewStub(ep->channel);
  ep->maintenance = etcdserverpb::Maintenance::NewStub(ep->channel);
  ep->auth = etcdserverpb::Auth::NewStub(ep->channel);
  return ep;
}

std::shared_ptr<Endpoint> ClientCore::make_endpoint(const std::string& address) const {
  return build_endpoint(address);
}

std::shared_ptr<Endpoint> ClientCore::current_endpoint() {
  std::lock_guard lock(endpoints_mu_);
  auto& slot = endpoints_[active_];
  if (!slot) slot = build_endpoint(options_.endpoints[active_]);
  return slot;
}

void ClientCore::report_endpoint_failure(const std::shared_ptr<Endpoint>& ep) {
  std::lock_guard lock(endpoints_mu_);
  if (endpoints_.size() < 2 || endpoints_[active_] != ep) return;  // someone already moved on
  active_ = (active_ + 1) % endpoints_.size();
  failovers.fetch_add(1, std::memory_order_relaxed);
}

std::chrono::milliseconds ClientCore::backoff(int attempt) {
  const auto& r = options_.retry;
  double ms = static_cast<double>(r.initial_backoff.count());
  for (int i = 1; i < attempt; ++i) ms *= r.multiplier;
  ms = std::min(ms, static_cast<double>(r.max_backoff.count()));
  std::lock_guard lock(rng_mu_);
  std::uniform_real_distribution<double> jitter(1.0 - r.jitter, 1.0 + r.jitter);
  return std::chrono::milliseconds(static_cast<int64_t>(ms * jitter(rng_)));
}

void ClientCore::prepare_context(grpc::ClientContext& ctx, bool require_leader) const {
  // etcd cancels such streams when its member loses the raft leader, so a
  // client on a partitioned member notices and fails over.
  if (require_leader) ctx.AddMetadata("hasleader", "true");
}

void ClientCore::run_unary(const char* name, bool idempotent, const CallOptions& options, IssueFn issue,
                           std::function<void(Status)> finish) {
  if (!try_enter()) {
    finish(Closed("client"));
    return;
  }
  if (options.stop.stop_requested()) {
    leave();
    finish(Cancelled(std::string(name) + " cancelled before it started"));
    return;
  }
  auto op = std::make_shared<UnaryAttempt>(shared_from_this(), name, idempotent, deadline_for(options),
                                           options.stop, std::move(issue), std::move(finish));
  op->start();
}

bool ClientCore::try_enter() {
  std::lock_guard lock(gate_mu_);
  if (closing_.load()) return false;
  ++inflight_;
  return true;
}

void ClientCore::leave() {
  std::lock_guard lock(gate_mu_);
  if (--inflight_ == 0) gate_cv_.notify_all();
}

bool ClientCore::on_own_thread() const {
  if (io_thread_.get_id() == std::this_thread::get_id()) return true;
  return callback_pool_ && callback_pool_->get_executor().running_in_this_thread();
}

void ClientCore::close() {
  std::call_once(close_once_, [this] {
    std::vector<std::shared_ptr<grpc::ClientContext>> to_cancel;
    {
      std::lock_guard lock(gate_mu_);
      closing_.store(true);
      for (auto& [raw, weak] : inflight_contexts_) {
        if (auto ctx = weak.lock()) to_cancel.push_back(std::move(ctx));
      }
    }
    for (auto& ctx : to_cancel) ctx->TryCancel();  // may complete calls inline
    to_cancel.clear();
    watch_hub_->shutdown();
    lease_keeper_->shutdown();
    const bool own_thread = on_own_thread();
    {
      // In-flight calls were cancelled above; gRPC completes them promptly.
      std::unique_lock lock(gate_mu_);
      if (!own_thread) gate_cv_.wait_for(lock, std::chrono::seconds(5), [this] { return inflight_ == 0; });
    }
    io_work_.reset();
    if (!own_thread) {
      watch_hub_->wait_stopped(std::chrono::seconds(5));
      lease_keeper_->wait_stopped(std::chrono::seconds(5));
      io_->stop();
      if (io_thread_.joinable()) io_thread_.join();
      if (callback_pool_) callback_pool_->join();
    } else {
      io_->stop();
      if (callback_pool_) callback_pool_->stop();
    }
  });
}

ClientStats ClientCore::stats() const {
  ClientStats s;
  s.rpcs_started = rpcs_started.load();
  s.rpcs_failed = rpcs_failed.load();
  s.retries = retries.load();
  s.failovers = failovers.load();
  s.watch_stream_restarts = watch_hub_->stream_restarts();
  s.watches_open = watch_hub_->open_watches();
  s.leases_kept = lease_keeper_->kept_leases();
  return s;
}

}  // namespace etcd::detail
