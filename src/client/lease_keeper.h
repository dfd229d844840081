// Keeps leases alive over a client's LeaseKeepAlive streams (a few hundred
// leases each, renewed on the schedule of renewal_schedule.h) and decides,
// conservatively, when a kept lease must be considered lost.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/io_context.hpp>
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

#include "etcd/client.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/lease.h"
#include "lease_state.h"

namespace etcd::detail {

class KeepAliveStream;
struct Endpoint;
struct StreamPieces;

class LeaseKeeper {
 public:
  // Its streams run as `streams` says; a silent one is given up.
  explicit LeaseKeeper(const StreamPieces& streams);
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
    // The stream broke and the log sink was told; it hears when it is back.
    bool broken = false;
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

  const StreamPieces& streams_;
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
