// All watches of one client over one gRPC Watch stream, re-created from
// their next revision whenever the stream has to be re-established.
#pragma once

#include <grpcpp/grpcpp.h>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "etcd/client.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/watch.h"

namespace etcd::detail {

class Namespace;
class WatchHub;
class WatchStream;
struct Endpoint;
struct StreamPieces;

class WatchEntry : public std::enable_shared_from_this<WatchEntry> {
 public:
  WatchEntry(std::weak_ptr<WatchHub> hub, etcdserverpb::WatchCreateRequest request, WatchHandler handler, Executor ex,
             bool notify_created)
      : hub_(std::move(hub)),
        request_(std::move(request)),
        handler_(std::move(handler)),
        strand_(asio::make_strand(ex)),
        notify_created_(notify_created) {}

  void cancel();
  bool active() const { return !cancelled_.load() && !finished_.load(); }
  int64_t delivered_revision() const { return delivered_revision_.load(); }
  bool wait_created(Deadline deadline);

 private:
  friend class WatchHub;
  void deliver(Result<WatchResponse> r, int64_t through_revision);

  std::weak_ptr<WatchHub> hub_;
  etcdserverpb::WatchCreateRequest request_;
  WatchHandler handler_;
  asio::strand<Executor> strand_;
  const bool notify_created_;  // deliver a `created` response at each creation
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> finished_{false};  // an error ended it
  std::atomic<int64_t> delivered_revision_{0};
  // Guarded by the hub's mutex.
  int64_t server_id_ = -1;
  int64_t next_revision_ = 0;  // where a re-created watch starts; 0 = now
  bool resumed_ = false;       // re-created after a stream break
  std::list<std::shared_ptr<WatchEntry>>::iterator position_;
  // wait_created
  std::mutex created_mu_;
  std::condition_variable created_cv_;
  bool created_ = false;
};

class WatchHub {
 public:
  // Its stream runs as `streams` says; events' keys leave `ns`.
  WatchHub(const Namespace& ns, const StreamPieces& streams);
  ~WatchHub();

  // `self` is this hub as its owner shares it: a Watcher's cancel()
  // reaches the hub through it while the hub lives.
  Watcher add(std::weak_ptr<WatchHub> self, etcdserverpb::WatchCreateRequest request, WatchHandler handler, Executor ex,
              bool notify_created = false);
  void cancel(const std::shared_ptr<WatchEntry>& entry);

  void shutdown();
  // True once every stream ended (false: the time ran out first).
  bool wait_stopped(std::chrono::milliseconds timeout);
  uint64_t stream_restarts() const { return restarts_.load(); }
  uint64_t open_watches() const;
  // Asks the server, now, to report progress on the stream (what the
  // liveness probe of an idle stream sends). For tests.
  void request_progress();

  // From the stream (gRPC threads).
  void on_response(WatchStream* stream, const etcdserverpb::WatchResponse& r);
  void on_stream_done(WatchStream* stream, const grpc::Status& s);

 private:
  void ensure_stream_locked();
  void send_locked(etcdserverpb::WatchRequest request);
  void pump_creates_locked();
  void finish_entry_locked(const std::shared_ptr<WatchEntry>& e, Status why);
  void schedule_reconnect_locked();
  void arm_liveness_locked();
  void check_liveness();

  const Namespace& ns_;
  const StreamPieces& streams_;
  mutable std::mutex mu_;
  std::condition_variable stopped_cv_;
  std::shared_ptr<WatchStream> stream_;
  std::shared_ptr<Endpoint> stream_endpoint_;  // where stream_ runs
  bool stream_ready_ = false;
  std::list<std::shared_ptr<WatchEntry>> entries_;
  std::deque<std::shared_ptr<WatchEntry>> pending_creates_;
  bool create_in_flight_ = false;
  std::unordered_map<int64_t, std::shared_ptr<WatchEntry>> by_server_id_;
  std::unique_ptr<asio::steady_timer> reconnect_timer_;
  // Liveness: an established stream with watches must hear from the server;
  // progress requests make an idle one speak.
  std::unique_ptr<asio::steady_timer> liveness_timer_;
  bool liveness_armed_ = false;
  Deadline last_heard_{};
  bool reconnect_scheduled_ = false;
  int reconnect_attempt_ = 0;
  // The stream broke and the log sink was told; it hears when it is back.
  bool stream_broken_ = false;
  bool shutdown_ = false;
  int live_streams_ = 0;
  std::atomic<uint64_t> restarts_{0};
};

}  // namespace etcd::detail
