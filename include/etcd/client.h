// etcd::Client — the asynchronous etcd v3 client every recipe is built on.
//
//   etcd::Client client({.endpoints = {"127.0.0.1:2379"}});
//   client.put("greeting", "hello").wait().value();
//   auto r = client.get("greeting").wait();
//   if (r.ok() && r->first()) std::cout << r->first()->value << "\n";
//
// A Client is a cheap, copyable handle: copies share one connection, one
// watch stream, one keep-alive stream and one callback executor. The last
// handle to go away closes it. The constructor does no I/O.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/connection.h"
#include "etcd/kv.h"
#include "etcd/lease.h"
#include "etcd/status.h"
#include "etcd/txn.h"
#include "etcd/watch.h"

namespace etcd {

struct RetryPolicy {
  int max_attempts = 5;  // for idempotent calls only; 1 disables retries
  // An idempotent call's attempt gives up after this long (when its deadline
  // is further away) and is retried on the next member, so that a member
  // that stopped answering does not hold calls until their deadline. With
  // one endpoint there is nowhere to move: the attempt waits for its member
  // until the call's deadline. Zero disables it.
  std::chrono::milliseconds attempt_timeout{3000};
  // A call unanswered for this long makes the client check on its member
  // (one Status request per member, repeated while calls wait there). The
  // call is given up as soon as the member does not answer the check within
  // member_check_timeout, has no raft leader, or is in a newer raft term
  // than when the call was sent: a write then ends as kOutcomeUnknown at
  // once instead of at its deadline (etcd would hold a write forwarded to a
  // dead leader for 5 s plus two election timeouts), and any other call is
  // tried again on a member with a leader. Zero disables the checks.
  std::chrono::milliseconds member_check_interval{200};
  std::chrono::milliseconds member_check_timeout{500};
  // A call whose connection is refused (nothing listens there: a member
  // restarting, or a wrong address) is retried, within its deadline, for
  // this long at most, then fails with kUnavailable. A member that accepts
  // but does not answer (a paused process) is waited for to the deadline.
  std::chrono::milliseconds refused_window{1000};
  std::chrono::milliseconds initial_backoff{20};
  std::chrono::milliseconds max_backoff{1000};
  double multiplier = 2.0;
  double jitter = 0.2;  // +- this fraction of each backoff
};

struct TlsOptions {
  std::string ca_file{};    // PEM bundle used to verify the server
  std::string cert_file{};  // client certificate (mutual TLS), optional
  std::string key_file{};
  std::string server_name{};  // override of the name checked in the certificate
};

struct ClientOptions {
  // host:port of each member; the client fails over between them.
  std::vector<std::string> endpoints{};
  // The deadline of an RPC, or of a recipe operation made of RPCs, that was
  // not given one; a wait for another party (acquire, receive, a barrier's
  // wait) has none unless given one (etcd/call.h).
  std::chrono::milliseconds default_timeout{5000};
  RetryPolicy retry{};
  std::optional<TlsOptions> tls{};
  std::string user{};  // etcd authentication, if set
  std::string password{};
  // Every key this client reads or writes lives under this prefix, which is
  // invisible to the caller (like etcd's namespace proxy).
  std::string namespace_prefix{};
  // Where callbacks run. Default: a small pool owned by the client.
  std::optional<Executor> executor{};
  int callback_threads = 2;
};

struct Member {
  uint64_t id = 0;
  std::string name{};
  std::vector<std::string> peer_urls{};
  std::vector<std::string> client_urls{};
  bool is_learner = false;
};

struct MemberListResponse {
  ResponseHeader header{};
  std::vector<Member> members{};
};

struct StatusResponse {
  ResponseHeader header{};
  std::string version{};
  int64_t db_size = 0;
  uint64_t leader = 0;  // member id of the raft leader, 0 if none
  uint64_t raft_index = 0;
  uint64_t raft_term = 0;
  uint64_t raft_applied_index = 0;
  std::vector<std::string> errors{};
  int64_t db_size_in_use = 0;
  bool is_learner = false;
};

// Counters for diagnostics and benchmarks.
struct ClientStats {
  uint64_t rpcs_started = 0;
  uint64_t rpcs_failed = 0;
  uint64_t retries = 0;
  uint64_t failovers = 0;
  uint64_t watch_stream_restarts = 0;
  uint64_t watches_open = 0;
  uint64_t leases_kept = 0;
  // Keep-alive streams open now (one per 256 kept leases, see
  // docs/client.md), and how often one was replaced because the transport
  // ended it or nothing at all came back on it.
  uint64_t lease_streams = 0;
  uint64_t lease_stream_restarts = 0;
};

namespace detail {
class ClientCore;
struct ClientAccess;
}  // namespace detail

class Client {
 public:
  // Throws etcd::Error (kInvalidArgument) on unusable options, e.g. no
  // endpoints or an endpoint that is not host:port.
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = default;
  Client& operator=(const Client&) = default;
  Client(Client&&) noexcept = default;
  Client& operator=(Client&&) noexcept = default;

  // --- KV
  // (Overloads rather than default arguments: GCC 12 destroys a defaulted
  // class-type argument twice inside `co_await`.) Options may be braced
  // anywhere, co_await included: they own no memory, and each call copies
  // them into its request before it returns (kv.h).
  Call<GetResponse> get(std::string key) { return get(std::move(key), GetOptions()); }
  Call<GetResponse> get(std::string key, GetOptions options);
  Call<PutResponse> put(std::string key, std::string value) {
    return put(std::move(key), std::move(value), PutOptions());
  }
  Call<PutResponse> put(std::string key, std::string value, PutOptions options);
  Call<DeleteResponse> del(std::string key) { return del(std::move(key), DeleteOptions()); }
  Call<DeleteResponse> del(std::string key, DeleteOptions options);
  Call<TxnResponse> txn(const Txn& txn);
  Call<CompactResponse> compact(int64_t revision, bool physical = false);

  // --- Leases
  Call<LeaseGrantResponse> lease_grant(std::chrono::seconds ttl, int64_t id = 0);
  Call<LeaseRevokeResponse> lease_revoke(int64_t id);
  Call<LeaseTimeToLiveResponse> lease_time_to_live(int64_t id, bool with_keys = false);
  Call<LeaseLeasesResponse> lease_leases();
  // One renewal, sent over the shared keep-alive stream.
  Call<LeaseKeepAliveResponse> lease_keep_alive_once(int64_t id);
  // Grants a lease and keeps it alive for as long as the Lease lives.
  Call<Lease> lease(std::chrono::seconds ttl);
  // Keeps an existing lease alive (e.g. granted elsewhere).
  Lease keep_alive(int64_t id, std::chrono::seconds ttl);

  // --- Watch
  Watcher watch(std::string key, WatchOptions options, WatchHandler handler);

  // --- Cluster and maintenance
  Call<MemberListResponse> member_list();
  // Status of the member this client currently talks to, or of a given
  // endpoint (host:port; it need not be one of the client's endpoints).
  Call<StatusResponse> status() { return status(std::string()); }
  Call<StatusResponse> status(std::string endpoint);

  // --- Health
  ConnectionState state() const;
  // Runs `listener` on the client's executor at every state change, in order.
  Subscription on_state_change(std::function<void(ConnectionState)> listener);
  // Passive: no call or stream is failing right now.
  bool is_healthy() const;
  // Active: a linearizable read that needs the cluster's quorum.
  Call<void> ping();

  // --- The client itself
  Executor executor() const;
  const ClientOptions& options() const;
  ClientStats stats() const;
  // The endpoint calls currently go to.
  std::string current_endpoint() const;
  // Refuses new calls (Errc::kClosed), cancels watches, keep-alives and
  // calls in flight — except the clean-ups that recipes' close() started
  // (deleting their keys, revoking their leases), which it lets finish
  // (up to 5 s) — and waits (bounded) for what it cancelled. Idempotent; also done when the
  // last handle goes away. On one of the client's own threads or inside a
  // gRPC callback it does not wait (the wait could not end there): the
  // client's destruction waits instead, on a thread of its own.
  void close();
  bool closed() const;

 private:
  friend struct detail::ClientAccess;
  std::shared_ptr<detail::ClientCore> core_{};
  // Shared by every copy: closes the core when the last copy goes away.
  std::shared_ptr<void> closer_{};
};

}  // namespace etcd
