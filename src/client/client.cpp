#include "etcd/client.h"

#include <atomic>
#include <cstdio>

#include <thread>

#include <asio/post.hpp>

#include "client_access.h"
#include "client_core.h"

namespace etcd {

using detail::CallAccess;
using detail::ClientCore;
using detail::Endpoint;
namespace pb = etcdserverpb;

namespace {

// Validation that must happen before anything is sent.
Status check_key(const std::string& key, const char* what) {
  if (key.empty()) return InvalidArgument(std::string(what) + ": key must not be empty");
  return Status();
}

template <class Range>
Status check_range(const std::string& key, const Range& o, const char* what) {
  if (o.prefix && !o.range_end.empty()) {
    return InvalidArgument(std::string(what) + ": set either prefix or range_end, not both");
  }
  if (key.empty() && !o.prefix && o.range_end.empty()) return check_key(key, what);
  return Status();
}

}  // namespace

namespace {

// The core's destructor waits for the calls and streams close() cancelled,
// so that no gRPC thread touches it afterwards. That wait cannot run on one
// of the core's own threads, nor inside a gRPC callback (whose thread may be
// the one that must run those last callbacks), and the last reference may
// well be dropped there (a callback holding a copy of the Client, a call
// attempt holding its core): such a destruction is handed to a short-lived
// thread of its own.
std::shared_ptr<ClientCore> make_core(ClientOptions options) {
  return std::shared_ptr<ClientCore>(new ClientCore(std::move(options)), [](ClientCore* core) {
    auto destroy = [core] {
      core->close();
      if (core->drain()) {
        delete core;
        return;
      }
      // Its loops stop all the same (a close() inside a gRPC callback left
      // them running); what they still run meets a core that stays.
      core->finish_loops();
      // gRPC has not completed everything close() cancelled (its callback
      // threads are late): a call or stream would still reach the core, so
      // it is left behind (its threads are gone; memory only) rather than
      // freed under them.
      static std::atomic<bool> said{false};
      if (!said.exchange(true)) {
        std::fprintf(stderr,
                     "etcd-recipes: a closed client's gRPC calls did not complete in time; its memory is "
                     "left behind\n");
      }
    };
    if (core->on_own_thread() || detail::GrpcCallbackScope::active()) {
      std::thread(destroy).detach();
    } else {
      destroy();
    }
  });
}

}  // namespace

std::shared_ptr<void> detail::ClientAccess::service_slot(const Client& client, std::type_index type,
                                                         const std::function<std::shared_ptr<void>()>& make) {
  return client.core_->service(type, make);
}

std::size_t detail::ClientAccess::txn_request_bytes(const Client& client, const Txn& txn) {
  pb::TxnRequest req;
  client.core_->ns().fill(req, txn);
  const std::size_t body = req.ByteSizeLong();
  // etcd's InternalRaftRequest: the header (a request id and an auth
  // revision, 64-bit varints of up to 10 bytes each, and the user name),
  // then the Txn, each a length-delimited field (a tag byte and a length of
  // up to 5 bytes).
  const std::size_t user = client.core_->options().user.size();
  const std::size_t header = (1 + 10) + (1 + 5 + user) + (1 + 10);
  return (1 + 5 + header) + (1 + 5 + body);
}

void detail::ClientAccess::request_watch_progress(const Client& client) {
  client.core_->watch_hub().request_progress();
}

Client::Client(ClientOptions options) : core_(make_core(std::move(options))) {
  closer_ = std::shared_ptr<void>(nullptr, [core = core_](void*) { core->close(); });
}

Client::~Client() = default;

Call<GetResponse> Client::get(std::string key, GetOptions options) {
  if (auto st = check_range(key, options, "get"); !st.ok()) return Call<GetResponse>::ready(st, executor());
  pb::RangeRequest req;
  core_->ns().fill(req, key, options);
  auto core = core_.get();
  // A serializable read is answered locally, leader or not.
  return core_->unary<GetResponse>(ETCD_RECIPES_UNARY(kv, KV, Range),
                                   {.idempotent = true, .require_leader = !options.serializable}, std::move(req),
                                   [core](const pb::RangeResponse& r) { return core->ns().convert(r); });
}

Call<PutResponse> Client::put(std::string key, std::string value, PutOptions options) {
  if (auto st = check_key(key, "put"); !st.ok()) return Call<PutResponse>::ready(st, executor());
  pb::PutRequest req;
  core_->ns().fill(req, key, value, options);
  auto core = core_.get();
  return core_->unary<PutResponse>(ETCD_RECIPES_UNARY(kv, KV, Put), {.idempotent = false}, std::move(req),
                                   [core](const pb::PutResponse& r) { return core->ns().convert(r); });
}

Call<DeleteResponse> Client::del(std::string key, DeleteOptions options) {
  if (auto st = check_range(key, options, "delete"); !st.ok()) return Call<DeleteResponse>::ready(st, executor());
  pb::DeleteRangeRequest req;
  core_->ns().fill(req, key, options);
  auto core = core_.get();
  return core_->unary<DeleteResponse>(ETCD_RECIPES_UNARY(kv, KV, DeleteRange), {.idempotent = false}, std::move(req),
                                      [core](const pb::DeleteRangeResponse& r) { return core->ns().convert(r); });
}

Call<TxnResponse> Client::txn(const Txn& txn) {
  pb::TxnRequest req;
  core_->ns().fill(req, txn);
  // A transaction that only reads may be retried like a range.
  bool read_only = true;
  for (const auto* branch : {&req.success(), &req.failure()}) {
    for (const auto& op : *branch) read_only = read_only && op.has_request_range();
  }
  auto core = core_.get();
  return core_->unary<TxnResponse>(ETCD_RECIPES_UNARY(kv, KV, Txn), {.idempotent = read_only}, std::move(req),
                                   [core](const pb::TxnResponse& r) { return core->ns().convert(r); });
}

Call<CompactResponse> Client::compact(int64_t revision, bool physical) {
  if (revision <= 0) return Call<CompactResponse>::ready(InvalidArgument("compact: revision must be > 0"), executor());
  pb::CompactionRequest req;
  req.set_revision(revision);
  req.set_physical(physical);
  return core_->unary<CompactResponse>(ETCD_RECIPES_UNARY(kv, KV, Compact), {.idempotent = true}, std::move(req),
                                       [](const pb::CompactionResponse& r) { return detail::convert(r); });
}

Call<LeaseGrantResponse> Client::lease_grant(std::chrono::seconds ttl, int64_t id) {
  if (ttl.count() <= 0) return Call<LeaseGrantResponse>::ready(InvalidArgument("lease TTL must be > 0 s"), executor());
  pb::LeaseGrantRequest req;
  req.set_ttl(ttl.count());
  req.set_id(id);
  // Granting is not idempotent (each grant is a new lease) unless the id is chosen.
  return core_->unary<LeaseGrantResponse>(
      ETCD_RECIPES_UNARY(lease, Lease, LeaseGrant), {.idempotent = id != 0}, std::move(req),
      [](const pb::LeaseGrantResponse& r) -> Result<LeaseGrantResponse> {
        if (!r.error().empty()) return Status(StatusCode::kFailedPrecondition, "lease grant: " + r.error());
        return detail::convert(r);
      });
}

namespace detail {
Call<LeaseRevokeResponse> lease_revoke_call(const std::shared_ptr<ClientCore>& core, int64_t id) {
  pb::LeaseRevokeRequest req;
  req.set_id(id);
  return core->unary<LeaseRevokeResponse>(ETCD_RECIPES_UNARY(lease, Lease, LeaseRevoke), {.idempotent = true},
                                          std::move(req),
                                          [](const pb::LeaseRevokeResponse& r) { return detail::convert(r); });
}
}  // namespace detail

Call<LeaseRevokeResponse> Client::lease_revoke(int64_t id) { return detail::lease_revoke_call(core_, id); }

Call<LeaseTimeToLiveResponse> Client::lease_time_to_live(int64_t id, bool with_keys) {
  pb::LeaseTimeToLiveRequest req;
  req.set_id(id);
  req.set_keys(with_keys);
  auto core = core_.get();
  return core_->unary<LeaseTimeToLiveResponse>(
      ETCD_RECIPES_UNARY(lease, Lease, LeaseTimeToLive), {.idempotent = true}, std::move(req),
      [core](const pb::LeaseTimeToLiveResponse& r) { return core->ns().convert(r); });
}

Call<LeaseLeasesResponse> Client::lease_leases() {
  return core_->unary<LeaseLeasesResponse>(ETCD_RECIPES_UNARY(lease, Lease, LeaseLeases), {.idempotent = true},
                                           pb::LeaseLeasesRequest{},
                                           [](const pb::LeaseLeasesResponse& r) { return detail::convert(r); });
}

Call<LeaseKeepAliveResponse> Client::lease_keep_alive_once(int64_t id) {
  auto core = core_;
  return Call<LeaseKeepAliveResponse>(
      [core, id](CallOptions options, Callback<LeaseKeepAliveResponse> done) {
        core->lease_keeper().keep_alive_once(id, core->deadline_for(options), std::move(done));
      },
      executor());
}

Call<Lease> Client::lease(std::chrono::seconds ttl) {
  auto core = core_;
  const auto ex = executor();
  return Call<Lease>(
      [core, ttl, grant = std::make_shared<Call<LeaseGrantResponse>>(lease_grant(ttl))](CallOptions options,
                                                                                        Callback<Lease> done) mutable {
        const Deadline sent_at = Clock::now();
        CallAccess::start_inherited(std::move(*grant), options,
                                    [core, sent_at, done = std::move(done)](Result<LeaseGrantResponse> r) {
                                      if (!r.ok()) {
                                        done(std::move(r).status());
                                        return;
                                      }
                                      done(core->keep_lease(r->id, std::chrono::seconds(r->ttl), sent_at));
                                    });
      },
      ex);
}

Lease Client::keep_alive(int64_t id, std::chrono::seconds ttl) { return core_->keep_lease(id, ttl, Clock::now()); }

Watcher Client::watch(std::string key, WatchOptions options, WatchHandler handler) {
  Executor ex = options.executor ? *options.executor : executor();
  if (auto st = check_range(key, options, "watch"); !st.ok()) {
    asio::post(ex, [handler = std::move(handler), st] { handler(st); });
    return Watcher();
  }
  pb::WatchCreateRequest req;
  core_->ns().fill(req, key, options);
  return core_->watch(std::move(req), std::move(handler), ex, options.notify_created);
}

Call<MemberListResponse> Client::member_list() {
  return core_->unary<MemberListResponse>(ETCD_RECIPES_UNARY(cluster, Cluster, MemberList),
                                          {.idempotent = true, .require_leader = false}, pb::MemberListRequest{},
                                          [](const pb::MemberListResponse& r) { return detail::convert(r); });
}

Call<StatusResponse> Client::status(std::string endpoint) {
  std::shared_ptr<Endpoint> fixed;
  if (!endpoint.empty()) fixed = core_->endpoints().endpoint_for(endpoint);
  return core_->unary<StatusResponse>(
      ETCD_RECIPES_UNARY(maintenance, Maintenance, Status), {.idempotent = true, .require_leader = false},
      pb::StatusRequest{}, [](const pb::StatusResponse& r) { return detail::convert(r); }, std::move(fixed));
}

ConnectionState Client::state() const { return core_->connection().state(); }
Subscription Client::on_state_change(std::function<void(ConnectionState)> listener) {
  return core_->connection().on_change(std::move(listener));
}
bool Client::is_healthy() const {
  const auto s = core_->connection().state();
  return !core_->closed() && (s == ConnectionState::kConnected || s == ConnectionState::kReconnected);
}
Call<void> Client::ping() {
  // A linearizable read needs the leader and a quorum: the real thing.
  auto read = std::make_shared<Call<GetResponse>>(get("etcd-recipes/ping", GetOptions{.count_only = true}));
  return Call<void>(
      [read](CallOptions options, Callback<void> done) {
        CallAccess::start_inherited(std::move(*read), options, [done = std::move(done)](Result<GetResponse> r) {
          done(r.ok() ? Result<void>() : Result<void>(std::move(r).status()));
        });
      },
      executor());
}

Executor Client::executor() const { return core_->executor(); }
const ClientOptions& Client::options() const { return core_->options(); }
ClientStats Client::stats() const { return core_->stats(); }
std::string Client::current_endpoint() const { return core_->endpoints().current()->address; }
void Client::close() { core_->close(); }
bool Client::closed() const { return core_->closed(); }

// --- Lease ------------------------------------------------------------------

Lease::Lease(Lease&& other) noexcept : state_(std::move(other.state_)) {}
Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
  }
  return *this;
}
Lease::~Lease() { reset(); }

int64_t Lease::id() const noexcept { return state_ ? state_->id() : 0; }
std::chrono::seconds Lease::ttl() const noexcept { return state_ ? state_->ttl() : std::chrono::seconds(0); }
bool Lease::alive() const noexcept { return state_ && state_->alive(); }
Deadline Lease::safe_until() const noexcept { return state_ ? state_->safe_until() : Deadline{}; }
std::stop_token Lease::lost_token() const noexcept { return state_ ? state_->lost_token() : std::stop_token{}; }
Subscription Lease::on_lost(std::function<void(const Status&)> listener) {
  if (!state_) return Subscription();
  return state_->on_lost(std::move(listener));
}

void Lease::detach() {
  if (!state_) return;
  if (auto core = state_->client().lock()) core->lease_keeper().forget(state_.get());
  state_.reset();
}

Call<void> Lease::revoke() {
  auto state = std::move(state_);
  auto core = state ? state->client().lock() : nullptr;
  if (!core) {
    return Call<void>::ready(Status(), asio::system_executor());
  }
  core->lease_keeper().forget(state.get());
  state->mark_lost(Status(StatusCode::kCancelled, "lease revoked by its owner", Errc::kLeaseNotFound));
  auto revoke = std::make_shared<Call<LeaseRevokeResponse>>(detail::lease_revoke_call(core, state->id()));
  return Call<void>(
      [revoke](CallOptions options, Callback<void> done) {
        CallAccess::start_inherited(std::move(*revoke), options,
                                    [done = std::move(done)](Result<LeaseRevokeResponse> r) {
                                      // Already gone is what revoking wanted.
                                      if (!r.ok() && !r.status().is(Errc::kLeaseNotFound)) {
                                        done(std::move(r).status());
                                      } else {
                                        done(Result<void>());
                                      }
                                    });
      },
      core->executor());
}

void Lease::reset() noexcept {
  if (!state_) return;
  try {
    // Fire and forget: a destructor never waits for the network.
    CallAccess::start_inline(revoke(), [](Result<void>) {});
  } catch (...) {
  }
  state_.reset();
}

// --- Watcher ----------------------------------------------------------------

Watcher& Watcher::operator=(Watcher&& other) noexcept {
  if (this != &other) {
    cancel();
    entry_ = std::move(other.entry_);
  }
  return *this;
}
Watcher::~Watcher() { cancel(); }
void Watcher::cancel() {
  if (entry_) entry_->cancel();
}
bool Watcher::active() const { return entry_ && entry_->active(); }
int64_t Watcher::delivered_revision() const { return entry_ ? entry_->delivered_revision() : 0; }
bool Watcher::wait_created(Deadline deadline) const { return entry_ && entry_->wait_created(deadline); }

}  // namespace etcd
