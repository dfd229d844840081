// Keeps leases alive over a client's LeaseKeepAlive streams (a few hundred
// leases each, renewed on the schedule of renewal_schedule.h) and decides,
// conservatively, when a kept lease must be considered lost.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/steady_timer.hpp>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/lease.h"
#include "listener_set.h"

namespace etcd::detail {

class ClientCore;
class KeepAliveStream;
struct Endpoint;

class LeaseState : public std::enable_shared_from_this<LeaseState> {
 public:
  LeaseState(std::weak_ptr<ClientCore> core, Executor ex, int64_t id, std::chrono::seconds ttl, Deadline granted_at)
      : core_(std::move(core)), executor_(std::move(ex)), id_(id), ttl_(ttl), expires_at_(granted_at + ttl) {}

  int64_t id() const { return id_; }
  std::chrono::seconds ttl() const { return ttl_; }
  bool alive() const;
  Deadline safe_until() const;
  std::stop_token lost_token() const { return lost_source_.get_token(); }
  Subscription on_lost(std::function<void(const Status&)> listener);
  // Fires the loss once; later calls do nothing.
  void mark_lost(Status why);
  // A renewal sent at `sent_at` was confirmed with `ttl` seconds.
  void confirm(Deadline sent_at, int64_t ttl);
  Deadline expires_at() const;
  std::weak_ptr<ClientCore> core() const { return core_; }

 private:
  std::weak_ptr<ClientCore> core_;
  Executor executor_;
  const int64_t id_;
  const std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  Deadline expires_at_;
  bool lost_ = false;
  Status loss_;
  std::stop_source lost_source_;
  ListenerSet<const Status&> listeners_;  // heard once
};

class LeaseKeeper {
 public:
  explicit LeaseKeeper(ClientCore& core);
  ~LeaseKeeper();

  void keep(const std::shared_ptr<LeaseState>& state);
  void forget(const LeaseState* state);
  // One renewal, over the stream that carries the lease (if kept) or the
  // least loaded one.
  void keep_alive_once(int64_t id, Deadline deadline, Callback<LeaseKeepAliveResponse> done);

  void shutdown();
  // True once every stream ended (false: the time ran out first).
  bool wait_stopped(std::chrono::milliseconds timeout);
  uint64_t kept_leases() const;
  // Keep-alive streams open now, and streams given up (ended by the
  // transport or by silence) and replaced since the client started.
  uint64_t open_streams() const;
  uint64_t stream_restarts() const;

  // From the streams (gRPC threads).
  void on_response(KeepAliveStream* stream, const etcdserverpb::LeaseKeepAliveResponse& r);
  void on_stream_done(KeepAliveStream* stream, const grpc::Status& s);

 private:
  struct Kept {
    std::vector<std::weak_ptr<LeaseState>> states;
    std::chrono::seconds ttl{};  // the shortest of its states'
    std::size_t slot = 0;        // the stream that carries it
    Deadline next_send{};
    bool in_flight = false;  // a renewal on the slot's current stream is unanswered
  };
  struct OnceWaiter {
    uint64_t token;
    Deadline deadline;
    bool sent;  // false: no stream was up; sent when one is
    Callback<LeaseKeepAliveResponse> done;
  };
  // One keep-alive stream and what it carries. Slots are never removed (a
  // slot whose leases all went closes its stream), so an index stays valid.
  struct Slot {
    std::shared_ptr<KeepAliveStream> stream;
    std::shared_ptr<Endpoint> endpoint;  // where `stream` runs
    std::size_t leases = 0;
    // Send times of the renewals unanswered on `stream`, by lease: etcd
    // answers a stream's requests in order.
    std::map<int64_t, std::deque<Deadline>> sent_at;
    std::map<int64_t, std::deque<OnceWaiter>> once;
    Deadline last_heard{};  // the last message on `stream`, or when it opened
    int reconnect_attempt = 0;
    Deadline reconnect_not_before{};
  };
  void ensure_stream_locked(std::size_t slot);
  // False when the slot has no stream up.
  bool send_locked(std::size_t slot, int64_t id, Deadline now);
  // The stream of `slot` is over (ended or given up): what was unanswered
  // on it is sent again on its successor; returns its one-shot waiters.
  std::vector<Callback<LeaseKeepAliveResponse>> drop_stream_locked(std::size_t slot, Deadline now);
  void erase_kept_locked(std::map<int64_t, Kept>::iterator it);
  void arm_tick_locked();
  void tick();
  std::size_t slot_of(const KeepAliveStream* stream) const;

  ClientCore& core_;
  mutable std::mutex mu_;
  std::condition_variable stopped_cv_;
  std::map<int64_t, Kept> kept_;
  std::vector<Slot> slots_;
  uint64_t next_once_token_ = 1;
  int live_streams_ = 0;
  uint64_t stream_restarts_ = 0;
  asio::steady_timer tick_timer_;
  bool tick_armed_ = false;
  bool shutdown_ = false;
};

}  // namespace etcd::detail
