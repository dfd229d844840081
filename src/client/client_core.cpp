#include "client_core.h"

#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <asio/post.hpp>
#include <climits>
#include <fstream>
#include <set>
#include <sstream>

#include "etcd/retry.h"
#include "lease_keeper.h"
#include "watch_hub.h"

namespace etcd::detail {

thread_local int GrpcCallbackScope::depth_ = 0;
thread_local int CleanupScope::depth_ = 0;

namespace {

// The least time worth a last try of a call before its deadline.
constexpr Clock::duration kLastTry = std::chrono::milliseconds(50);
// A reset from the member this close to the attempt's deadline is that
// deadline (the member counted it from when the request arrived, but our
// timer may fire late).
constexpr Clock::duration kServerDeadlineSlack = std::chrono::milliseconds(100);

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
  if (o.retry.member_check_interval.count() < 0) {
    throw Error(InvalidArgument("retry.member_check_interval must not be negative"));
  }
  if (o.retry.member_check_interval.count() > 0 && o.retry.member_check_timeout.count() <= 0) {
    throw Error(InvalidArgument("retry.member_check_timeout must be positive"));
  }
  if (o.callback_threads < 1 && !o.executor) throw Error(InvalidArgument("callback_threads must be >= 1"));
  if (!o.user.empty() && o.password.empty()) throw Error(InvalidArgument("a user needs a password"));
}

// Why no connection could be made at all, when nothing listens at the
// address or the host does not resolve (nullptr otherwise): gRPC's text for
// those, in the client's words.
const char* unreachable_cause(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return nullptr;
  const std::string& m = s.error_message();
  if (m.find("Connection refused") != std::string::npos) return "connection refused (nothing listens there)";
  if (m.find("DNS resolution failed") != std::string::npos || m.find("ARES_SUCCESS") != std::string::npos ||
      m.find("Domain name not found") != std::string::npos) {
    return "the host name does not resolve";
  }
  return nullptr;
}

// A gRPC failure that certainly happened before the request left this
// process: the transport never connected. Only then may a write be retried.
bool never_sent(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string& m = s.error_message();
  return unreachable_cause(s) != nullptr || m.find("failed to connect to all addresses") != std::string::npos ||
         m.find("before receiving SETTINGS frame") != std::string::npos;
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

// One unary RPC: attempts, failover, backoff, deadline and cancellation.
class UnaryAttempt : public CallWatch::Watched, public std::enable_shared_from_this<UnaryAttempt> {
 public:
  UnaryAttempt(std::shared_ptr<ClientCore> core, Rpc rpc, bool cleanup, Deadline deadline, std::stop_token stop,
               IssueFn issue, SyncIssueFn sync_issue, std::function<void(Status)> finish)
      : sync_issue_(std::move(sync_issue)),
        core_(std::move(core)),
        cleanup_(cleanup),
        rpc_(rpc),
        name_(rpc.name),
        idempotent_(rpc.idempotent),
        deadline_(deadline),
        stop_(std::move(stop)),
        issue_(std::move(issue)),
        finish_(std::move(finish)),
        timer_(core_->io()) {}

  void give_up(grpc::ClientContext* ctx, CallWatch::Verdict verdict, const std::string& detail) override {
    std::shared_ptr<grpc::ClientContext> current;
    {
      std::lock_guard lock(mu_);
      if (ctx_.get() != ctx || cancelled_ || given_up_) return;
      given_up_ = verdict;
      given_up_detail_ = detail;
      current = ctx_;
    }
    current->TryCancel();  // on_done tells this from a cancellation
  }

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
    if (core_->auth_enabled() && !authenticated_) {
      // Get a token first (shared with every other call waiting for one).
      core_->with_token([self = shared_from_this()](Status st) {
        if (!st.ok()) {
          self->complete(std::move(st));
          return;
        }
        self->authenticated_ = true;
        self->attempt();
      });
      return;
    }
    authenticated_ = false;  // the next attempt checks the token again
    auto ep = core_->current_endpoint();
    {
      std::unique_lock lock(mu_);
      if (cancelled_ || core_->refuses(cleanup_)) {
        Status why = cancelled_ ? Cancelled(std::string(name_) + " cancelled") : Closed("client");
        lock.unlock();  // complete() may wait for a running stop callback, which takes mu_
        complete(std::move(why));
        return;
      }
      ctx_ = std::make_shared<grpc::ClientContext>();
      Deadline attempt_deadline = deadline_;
      const auto per_attempt = core_->options().retry.attempt_timeout;
      // Only with another member to go to: with one endpoint the attempt
      // waits for its member until the call's deadline (a paused process
      // answers once it runs again; a fresh connection to it would not).
      if (idempotent_ && per_attempt.count() > 0 && core_->options().endpoints.size() > 1 &&
          Clock::now() + per_attempt < deadline_) {
        attempt_deadline = Clock::now() + per_attempt;
        attempt_limited_ = true;
      } else {
        attempt_limited_ = false;
      }
      attempt_deadline_ = attempt_deadline;
      ctx_->set_deadline(ClientCore::to_system(attempt_deadline));
      token_used_ = core_->prepare_context(*ctx_, rpc_.require_leader);
      ++attempts_;
      given_up_.reset();
      core_->rpcs_started.fetch_add(1, std::memory_order_relaxed);
      core_->track_context(ctx_, cleanup_);
      watch_ticket_ = core_->call_watch().add(weak_from_this(), ctx_.get(), rpc_.watched ? ep : nullptr);
    }
    if (sync_issue_) {
      // The caller waits anyway: its thread drives this first attempt, so
      // the answer needs no hand-off from a gRPC thread. Retries are async.
      auto sync = std::move(sync_issue_);
      sync_issue_ = nullptr;
      grpc::Status s = sync(*ep, ctx_.get());
      on_done(ep, s);
      return;
    }
    issue_(*ep, ctx_.get(), [self = shared_from_this(), ep](grpc::Status s) mutable {
      GrpcCallbackScope scope;
      // Released inside the scope, not when gRPC destroys this callback.
      auto attempt = std::move(self);
      attempt->on_done(ep, s);
    });
  }

  void on_done(const std::shared_ptr<Endpoint>& ep, const grpc::Status& grpc_status) {
    core_->untrack_context(ctx_.get());
    core_->call_watch().remove(watch_ticket_);
    std::optional<CallWatch::Verdict> given_up;
    std::string given_up_detail;
    {
      std::lock_guard lock(mu_);
      given_up = given_up_;
      given_up_detail = given_up_detail_;
    }
    bool cancelled;
    {
      std::lock_guard lock(mu_);
      cancelled = cancelled_;
    }
    // Given up by the call watch: the member will not answer (or not in
    // time), which is what unavailable means to the rules below. The watch
    // already moved the client off a member that stalled or has no leader.
    // A cancel this client did not ask for came from the other end: the
    // member reset the stream. gRPC servers do that when their copy of the
    // deadline runs out, which can come before ours does (our timer runs
    // late on a busy machine): near the deadline that is the deadline.
    // Otherwise the member dropped the call (it is going away), which is
    // unavailable. Either way a write's outcome is unknown.
    grpc::Status s = grpc_status;
    if (grpc_status.error_code() == grpc::StatusCode::CANCELLED) {
      if (given_up) {
        s = grpc::Status(grpc::StatusCode::UNAVAILABLE, given_up_detail);
      } else if (!cancelled && !core_->closed()) {
        const bool at_deadline = Clock::now() + kServerDeadlineSlack >= attempt_deadline_;
        s = grpc::Status(at_deadline ? grpc::StatusCode::DEADLINE_EXCEEDED : grpc::StatusCode::UNAVAILABLE,
                         (at_deadline ? "deadline exceeded (the member's copy of it ran out first): "
                                      : "the member reset the call: ") +
                             grpc_status.error_message());
      }
    }
    if (s.ok()) {
      core_->note_success();
      complete(Status());
      return;
    }
    core_->rpcs_failed.fetch_add(1, std::memory_order_relaxed);
    Status status = from_grpc(s);
    if (status.is(Errc::kTokenExpired) && core_->auth_enabled() && attempts_ < core_->options().retry.max_attempts) {
      // Rejected before it was applied: authenticate again and resend.
      core_->invalidate_token(token_used_);
      core_->retries.fetch_add(1, std::memory_order_relaxed);
      attempt();
      return;
    }
    if (s.error_code() == grpc::StatusCode::CANCELLED) {
      if (core_->closed()) {
        complete(Closed("client"));
      } else {
        complete(cancelled ? Cancelled(std::string(name_) + " cancelled") : std::move(status));
      }
      return;
    }
    // An attempt that ran out of its own (per-attempt) time on an idempotent
    // call means the member stopped answering: treat it like unavailable.
    const bool attempt_timed_out = attempt_limited_ && s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    const bool unavailable = s.error_code() == grpc::StatusCode::UNAVAILABLE || attempt_timed_out;
    if (given_up) {
      // Reported by the watch already.
    } else if (unavailable) {
      if (attempt_timed_out) {
        core_->report_endpoint_stall(ep);
      } else {
        core_->report_endpoint_failure(ep);
      }
      if (!status.is(Errc::kNoLeader)) core_->note_connection_failure();
    } else if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !cancelled) {
      // The whole deadline passed without an answer (a write, or a call
      // shorter than one attempt): the member may have stopped answering,
      // so later calls go elsewhere (or over a fresh connection).
      core_->report_endpoint_stall(ep);
    }
    // A member without a leader rejects a request before proposing it, and
    // a connection that never opened sent nothing: both are safe to retry.
    const bool unsent = never_sent(s);
    const bool safe = idempotent_ || unsent || status.is(Errc::kNoLeader);
    // "No leader" lasts an election (a second or two after the leader
    // died), and a member that takes a connection but sends no HTTP/2
    // SETTINGS (a paused process: its kernel accepts) may be back in
    // seconds: both are retried within the call's deadline, beyond
    // max_attempts, which a few quick backoffs would use up first. A
    // refused connection (nothing listens: a member restarting, or the
    // wrong address) or a host that does not resolve moves the call to the
    // next endpoint; once every endpoint has refused it (each on its latest
    // try) for RetryPolicy::refused_window, it fails as kUnreachable. While
    // any endpoint takes the connection (say, a member between leaders),
    // the call goes on within its deadline.
    bool unsent_left = false;
    const char* unreachable = unreachable_cause(s);
    if (unreachable == nullptr) {
      refused_by_.erase(ep->address);
    } else {
      refused_by_.insert(ep->address);
    }
    const bool all_refused = unreachable != nullptr && refused_by_.size() >= core_->options().endpoints.size();
    if (!all_refused) {
      first_refused_.reset();
    } else if (!first_refused_) {
      first_refused_ = Clock::now();
    }
    if (unsent) {
      unsent_left = !all_refused || Clock::now() - *first_refused_ < core_->options().retry.refused_window;
    }
    const bool attempts_left =
        attempts_ < core_->options().retry.max_attempts || status.is(Errc::kNoLeader) || unsent_left;
    if (unavailable && safe && attempts_left && !cancelled) {
      // A backoff that would pass the deadline is shortened, so the last
      // try is made while time is left: the call ends at its deadline, not
      // a backoff before it (with the last try's error, which says why).
      const auto left = deadline_ - Clock::now();
      const auto delay = std::min<Clock::duration>(core_->backoff(attempts_), left - kLastTry);
      if (left > kLastTry) {
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
    if (all_refused && !cancelled) {
      // Never sent: final for reads and writes alike (classify: kNever).
      const auto tried = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *first_refused_);
      complete(Status(StatusCode::kUnavailable,
                      std::string(name_) + ": etcd unreachable at " + ep->address + ": " + unreachable +
                          "; tried for " + std::to_string(tried.count()) + " ms, the request was not sent",
                      Errc::kUnreachable));
      return;
    }
    if (!idempotent_ && (unavailable || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) && !safe) {
      complete(
          Status(status.code(),
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
    if (finish) {
      // A clean-up's next step (started from its completion) is part of it.
      std::optional<CleanupScope> scope;
      if (cleanup_) scope.emplace();
      finish(std::move(status));
    }
    core_->leave(cleanup_);
  }

  SyncIssueFn sync_issue_;  // set only for a first attempt on a waiting caller's thread
  std::shared_ptr<ClientCore> core_;
  const bool cleanup_;  // started in a CleanupScope
  Rpc rpc_;
  const char* name_;
  bool idempotent_;
  std::string token_used_;
  bool authenticated_ = false;
  Deadline deadline_;
  std::stop_token stop_;
  IssueFn issue_;
  std::function<void(Status)> finish_;
  asio::steady_timer timer_;
  std::mutex mu_;
  bool cancelled_ = false;
  int attempts_ = 0;
  bool attempt_limited_ = false;                    // this attempt's deadline is the per-attempt one
  Deadline attempt_deadline_{};                     // the deadline this attempt was sent with
  std::optional<Clock::time_point> first_refused_;  // since when every endpoint refuses this call
  std::set<std::string> refused_by_;                // endpoints whose latest try refused the connection
  std::shared_ptr<grpc::ClientContext> ctx_;
  uint64_t watch_ticket_ = 0;
  std::optional<CallWatch::Verdict> given_up_;  // this attempt was given up by the call watch
  std::string given_up_detail_;
  std::optional<std::stop_callback<std::function<void()>>> stop_cb_;
};

ClientCore::ClientCore(ClientOptions options)
    : options_((validate(options), std::move(options))), ns_(options_.namespace_prefix) {
  pin_grpc_callback_threads();
  if (options_.executor) {
    callback_executor_ = *options_.executor;
  } else {
    callback_loop_ = std::make_unique<EventLoop>("etcd-callback", options_.callback_threads);
    callback_executor_ = callback_loop_->executor();
  }
  endpoints_.resize(options_.endpoints.size());
  watch_hub_ = std::make_unique<WatchHub>(*this);
  lease_keeper_ = std::make_unique<LeaseKeeper>(*this);
  call_watch_ = std::make_unique<CallWatch>(*this);
}

void ClientCore::track_context(const std::shared_ptr<grpc::ClientContext>& ctx, bool cleanup) {
  std::lock_guard gate(gate_mu_);
  inflight_contexts_.emplace(ctx.get(), Tracked{ctx, cleanup});
}

void ClientCore::untrack_context(grpc::ClientContext* ctx) {
  std::lock_guard gate(gate_mu_);
  inflight_contexts_.erase(ctx);
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
  // Clean-ups were left to finish (a recipe's close() started them to leave
  // nothing behind); what is still out after the bound is cancelled.
  std::unique_lock lock(gate_mu_);
  gate_cv_.wait_for(lock, kDrainTimeout, [this] { return cleanups_ == 0; });
  cleanups_admitted_.store(false);
  std::vector<std::shared_ptr<grpc::ClientContext>> late;
  for (auto& [raw, tracked] : inflight_contexts_) {
    if (auto ctx = tracked.ctx.lock()) late.push_back(std::move(ctx));
  }
  lock.unlock();
  for (auto& ctx : late) ctx->TryCancel();  // may complete calls inline
  late.clear();
  // The other calls were cancelled by close(); gRPC completes them promptly.
  lock.lock();
  gate_cv_.wait_for(lock, kDrainTimeout, [this] { return inflight_ == 0; });
  lock.unlock();
  const bool watches = watch_hub_->wait_stopped(kDrainTimeout);
  const bool leases = lease_keeper_->wait_stopped(kDrainTimeout);
  return watches && leases;
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

std::shared_ptr<Endpoint> ClientCore::endpoint_for(const std::string& address) {
  std::lock_guard lock(endpoints_mu_);
  for (size_t i = 0; i < options_.endpoints.size(); ++i) {
    if (options_.endpoints[i] == address) {
      if (!endpoints_[i]) endpoints_[i] = build_endpoint(address);
      return endpoints_[i];
    }
  }
  // Held by the core, so that its channel never dies with a call on a gRPC thread.
  auto& ep = extra_endpoints_[address];
  if (!ep) ep = build_endpoint(address);
  return ep;
}

std::shared_ptr<Endpoint> ClientCore::current_endpoint() {
  std::lock_guard lock(endpoints_mu_);
  auto& slot = endpoints_[active_];
  if (!slot) slot = build_endpoint(options_.endpoints[active_]);
  return slot;
}

std::vector<std::shared_ptr<Endpoint>> ClientCore::endpoints_except(const std::shared_ptr<Endpoint>& ep) {
  std::vector<std::shared_ptr<Endpoint>> others;
  std::lock_guard lock(endpoints_mu_);
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    auto& slot = endpoints_[i];
    if (slot == ep || (ep && options_.endpoints[i] == ep->address)) continue;
    if (!slot) slot = build_endpoint(options_.endpoints[i]);
    others.push_back(slot);
  }
  return others;
}

void ClientCore::report_endpoint_failure(const std::shared_ptr<Endpoint>& ep) {
  std::lock_guard lock(endpoints_mu_);
  if (endpoints_.size() < 2 || endpoints_[active_] != ep) return;  // someone already moved on
  active_ = (active_ + 1) % endpoints_.size();
  failovers.fetch_add(1, std::memory_order_relaxed);
}

void ClientCore::report_endpoint_stall(const std::shared_ptr<Endpoint>& ep) {
  if (!ep) return;
  report_endpoint_failure(ep);
  std::lock_guard lock(endpoints_mu_);
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    // The old channel lives on in calls still using it, and dies with them.
    if (endpoints_[i] == ep) endpoints_[i] = build_endpoint(options_.endpoints[i]);
  }
}

std::chrono::milliseconds ClientCore::backoff(int attempt) const {
  const auto& r = options_.retry;
  return etcd::Backoff{r.initial_backoff, r.max_backoff, r.multiplier, r.jitter}.delay(attempt);
}

std::string ClientCore::prepare_context(grpc::ClientContext& ctx, bool require_leader) const {
  // A member without a raft leader refuses such a call at once (and cancels
  // such a stream), so a client on a partitioned member fails over instead
  // of waiting.
  if (require_leader) ctx.AddMetadata("hasleader", "true");
  std::lock_guard lock(auth_mu_);
  if (!token_.empty()) ctx.AddMetadata("token", token_);
  return token_;
}

void ClientCore::with_token(std::function<void(Status)> then) {
  bool have_token = false;
  bool start = false;
  {
    std::lock_guard lock(auth_mu_);
    have_token = !token_.empty();
    if (!have_token) start = authenticating_.join(std::move(then));
  }
  if (have_token) {
    then(Status());
    return;
  }
  if (!start) return;
  // One Authenticate call serves every waiter.
  auto ep = current_endpoint();
  auto ctx = std::make_shared<grpc::ClientContext>();
  ctx->set_deadline(to_system(Clock::now() + options_.default_timeout));
  auto req = std::make_shared<etcdserverpb::AuthenticateRequest>();
  req->set_name(options_.user);
  req->set_password(options_.password);
  auto resp = std::make_shared<etcdserverpb::AuthenticateResponse>();
  auto self = shared_from_this();
  ep->auth->async()->Authenticate(ctx.get(), req.get(), resp.get(), [self, ep, ctx, req, resp](grpc::Status s) mutable {
    asio::io_context& io = self->io();
    asio::post(io, [self = std::move(self), ep = std::move(ep), ctx = std::move(ctx), req = std::move(req),
                    resp = std::move(resp), s = std::move(s)]() mutable {
      Status st = from_grpc(s);
      if (!s.ok() && s.error_code() == grpc::StatusCode::UNAVAILABLE) self->report_endpoint_failure(ep);
      if (st.is(Errc::kAuthFailed)) {
        // Never echo the password; name the user only.
        st = Status(st.code(), "authentication failed for user '" + self->options_.user + "'", Errc::kAuthFailed);
      }
      SingleFlight<Status>::Landing waiters;
      {
        std::lock_guard lock(self->auth_mu_);
        if (s.ok()) self->token_ = resp->token();
        waiters = self->authenticating_.land();
      }
      std::move(waiters).complete(st);
    });
  });
}

void ClientCore::invalidate_token(const std::string& token) {
  std::lock_guard lock(auth_mu_);
  if (token_ == token) token_.clear();
}

ConnectionState ClientCore::state() const {
  std::lock_guard lock(state_mu_);
  return state_;
}

Subscription ClientCore::on_state_change(std::function<void(ConnectionState)> listener) {
  return state_listeners_.add(std::move(listener));
}

void ClientCore::transition(std::initializer_list<ConnectionState> from, ConnectionState to) {
  std::lock_guard lock(state_mu_);
  if (std::find(from.begin(), from.end(), state_) == from.end() || state_ == to) return;
  state_ = to;
  if (!state_strand_) state_strand_.emplace(asio::make_strand(callback_executor_));
  // Posted in order on one strand, under the lock: listeners see every
  // change, in order.
  state_listeners_.notify(*state_strand_, nullptr, to);
}

void ClientCore::note_success() {
  transition({ConnectionState::kSuspended, ConnectionState::kLost}, ConnectionState::kReconnected);
}

void ClientCore::note_connection_failure() {
  transition({ConnectionState::kConnected, ConnectionState::kReconnected}, ConnectionState::kSuspended);
}

void ClientCore::note_lease_lost() {
  transition({ConnectionState::kConnected, ConnectionState::kReconnected, ConnectionState::kSuspended},
             ConnectionState::kLost);
}

void ClientCore::run_unary(Rpc rpc, const CallOptions& options, IssueFn issue, SyncIssueFn sync_issue,
                           std::function<void(Status)> finish) {
  const bool cleanup = CleanupScope::active();
  if (!try_enter(cleanup)) {
    finish(Closed("client"));
    return;
  }
  if (options.stop.stop_requested()) {
    leave(cleanup);
    finish(Cancelled(std::string(rpc.name) + " cancelled before it started"));
    return;
  }
  if (!options.caller_waits) sync_issue = nullptr;
  auto op = std::make_shared<UnaryAttempt>(shared_from_this(), rpc, cleanup, deadline_for(options), options.stop,
                                           std::move(issue), std::move(sync_issue), std::move(finish));
  op->start();
}

bool ClientCore::try_enter(bool cleanup) {
  std::lock_guard lock(gate_mu_);
  if (refuses(cleanup)) return false;
  ++inflight_;
  if (cleanup) ++cleanups_;
  return true;
}

void ClientCore::leave(bool cleanup) {
  std::lock_guard lock(gate_mu_);
  const bool last_cleanup = cleanup && --cleanups_ == 0;
  if (--inflight_ == 0 || last_cleanup) gate_cv_.notify_all();
}

bool ClientCore::on_own_thread() const {
  return io_loop_.running_in_this_thread() || (callback_loop_ && callback_loop_->running_in_this_thread());
}

void ClientCore::close() {
  std::call_once(close_once_, [this] {
    std::vector<std::shared_ptr<grpc::ClientContext>> to_cancel;
    {
      std::lock_guard lock(gate_mu_);
      closing_.store(true);
      for (auto& [raw, tracked] : inflight_contexts_) {
        if (tracked.cleanup) continue;  // drain() waits for it first
        if (auto ctx = tracked.ctx.lock()) to_cancel.push_back(std::move(ctx));
      }
    }
    call_watch_->shutdown();
    for (auto& ctx : to_cancel) ctx->TryCancel();  // may complete calls inline
    to_cancel.clear();
    watch_hub_->shutdown();
    lease_keeper_->shutdown();
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

std::shared_ptr<void> ClientCore::service(std::type_index type, const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard lock(services_mu_);
  auto& slot = services_[type];
  if (!slot) slot = make();
  return slot;
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
  s.lease_streams = lease_keeper_->open_streams();
  s.lease_stream_restarts = lease_keeper_->stream_restarts();
  return s;
}

}  // namespace etcd::detail
