#include "watch_hub.h"

#include <asio/post.hpp>

#include "bidi_stream.h"
#include "convert.h"
#include "stream_pieces.h"

namespace etcd::detail {

namespace {
// An idle stream is asked for progress this often...
constexpr auto kProgressInterval = std::chrono::seconds(2);
// ...and dropped (and re-established on another member) after this long
// without any message.
constexpr auto kStallTimeout = std::chrono::seconds(6);
}  // namespace

// The client's one Watch stream.
class WatchStream : public BidiStream<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse> {
 public:
  explicit WatchStream(WatchHub& hub) : hub_(hub) {}

 protected:
  void on_message(const etcdserverpb::WatchResponse& r) override { hub_.on_response(this, r); }
  void on_finished(const grpc::Status& s) override { hub_.on_stream_done(this, s); }

 private:
  WatchHub& hub_;
};

void WatchEntry::cancel() {
  if (cancelled_.exchange(true)) return;
  if (auto hub = hub_.lock()) hub->cancel(shared_from_this());
  // Release what the handler holds (it may hold its own Watcher's owner);
  // on the strand, so never while the handler runs.
  asio::post(strand_, [self = shared_from_this()] { self->handler_ = nullptr; });
}

bool WatchEntry::wait_created(Deadline deadline) {
  std::unique_lock lock(created_mu_);
  return created_cv_.wait_until(lock, deadline, [this] { return created_ || finished_.load(); }) && created_;
}

void WatchEntry::deliver(Result<WatchResponse> r, int64_t through_revision) {
  asio::post(strand_, [self = shared_from_this(), r = std::move(r), through_revision]() mutable {
    if (self->cancelled_.load()) return;
    const bool ok = r.ok();
    self->handler_(std::move(r));
    if (ok && through_revision > self->delivered_revision_.load()) self->delivered_revision_.store(through_revision);
  });
}

WatchHub::WatchHub(const Namespace& ns, const StreamPieces& streams) : ns_(ns), streams_(streams) {}
WatchHub::~WatchHub() = default;

Watcher WatchHub::add(std::weak_ptr<WatchHub> self, etcdserverpb::WatchCreateRequest request, WatchHandler handler,
                      Executor ex, bool notify_created) {
  auto entry =
      std::make_shared<WatchEntry>(std::move(self), std::move(request), std::move(handler), ex, notify_created);
  std::lock_guard lock(mu_);
  if (shutdown_) {
    entry->finished_ = true;
    entry->deliver(Closed("client"), 0);
    return Watcher(entry);
  }
  entry->next_revision_ = entry->request_.start_revision();
  entry->position_ = entries_.insert(entries_.end(), entry);
  pending_creates_.push_back(entry);
  ensure_stream_locked();
  pump_creates_locked();
  return Watcher(entry);
}

void WatchHub::cancel(const std::shared_ptr<WatchEntry>& entry) {
  std::lock_guard lock(mu_);
  if (entry->position_ == std::list<std::shared_ptr<WatchEntry>>::iterator{}) return;
  entries_.erase(entry->position_);
  entry->position_ = {};
  if (entry->server_id_ >= 0) {
    if (stream_) {
      etcdserverpb::WatchRequest req;
      req.mutable_cancel_request()->set_watch_id(entry->server_id_);
      send_locked(std::move(req));
    }
    by_server_id_.erase(entry->server_id_);
    entry->server_id_ = -1;
  } else {
    // Not created yet: drop it from the queue unless its create is on the
    // wire, in which case the created response cancels it.
    for (auto it = pending_creates_.begin(); it != pending_creates_.end(); ++it) {
      if (*it == entry && !(it == pending_creates_.begin() && create_in_flight_)) {
        pending_creates_.erase(it);
        break;
      }
    }
  }
}

void WatchHub::send_locked(etcdserverpb::WatchRequest request) {
  // Posted, not called: the io thread holds none of our locks when gRPC
  // runs a reaction inline, and one thread keeps the writes in order.
  asio::post(streams_.io,
             [stream = stream_, request = std::move(request)]() mutable { stream->write(std::move(request)); });
}

void WatchHub::ensure_stream_locked() {
  if (stream_ || shutdown_ || reconnect_scheduled_) return;
  auto stream = std::make_shared<WatchStream>(*this);
  stream_ = stream;
  ++live_streams_;
  create_in_flight_ = false;
  last_heard_ = Clock::now();
  arm_liveness_locked();
  stream_endpoint_ = streams_.endpoints.current();
  auto ep = stream_endpoint_;
  streams_.open(
      stream, ep, [ep](grpc::ClientContext* ctx, WatchStream::Reactor* r) { ep->watch->async()->Watch(ctx, r); },
      [this, stream](const Status& st) {
        if (!st.is(Errc::kAuthFailed)) return false;
        // Wrong credentials do not get better by retrying: tell the watchers.
        std::lock_guard lock(mu_);
        if (stream_ != stream) return true;
        stream_.reset();
        --live_streams_;
        create_in_flight_ = false;
        pending_creates_.clear();
        by_server_id_.clear();
        auto entries = entries_;
        for (auto& e : entries) finish_entry_locked(e, st);
        stopped_cv_.notify_all();
        return true;
      });
}

void WatchHub::pump_creates_locked() {
  if (!stream_ || create_in_flight_ || pending_creates_.empty()) return;
  auto& e = pending_creates_.front();
  etcdserverpb::WatchRequest req;
  *req.mutable_create_request() = e->request_;
  req.mutable_create_request()->set_start_revision(e->next_revision_);
  create_in_flight_ = true;
  send_locked(std::move(req));
}

void WatchHub::finish_entry_locked(const std::shared_ptr<WatchEntry>& e, Status why) {
  if (e->position_ != std::list<std::shared_ptr<WatchEntry>>::iterator{}) {
    entries_.erase(e->position_);
    e->position_ = {};
  }
  if (e->server_id_ >= 0) by_server_id_.erase(e->server_id_);
  e->server_id_ = -1;
  e->finished_ = true;
  { std::lock_guard lock(e->created_mu_); }
  e->created_cv_.notify_all();
  e->deliver(std::move(why), 0);
}

void WatchHub::on_response(WatchStream* stream, const etcdserverpb::WatchResponse& r) {
  streams_.connection.note_success();
  std::lock_guard lock(mu_);
  if (stream != stream_.get()) return;  // a stale stream's last words
  last_heard_ = Clock::now();
  const int64_t header_rev = r.header().revision();

  if (r.created()) {
    if (pending_creates_.empty()) return;
    auto e = pending_creates_.front();
    pending_creates_.pop_front();
    create_in_flight_ = false;
    reconnect_attempt_ = 0;
    if (stream_broken_ && !r.canceled()) {
      stream_broken_ = false;
      streams_.log_back("watch", stream_endpoint_);
    }
    if (r.canceled() && streams_.auth.enabled() && r.cancel_reason().find("invalid auth token") != std::string::npos) {
      // The stream's token expired: every watch is re-created on a new
      // stream with a fresh token (on_stream_done queues them all again).
      pending_creates_.push_front(e);
      streams_.auth.invalidate(stream->token());
      asio::post(streams_.io, [s = stream_] { s->cancel(); });
      return;
    }
    if (r.canceled()) {
      Status why = r.compact_revision() > 0 ? Status(StatusCode::kOutOfRange,
                                                     "watch start revision was compacted (compact revision " +
                                                         std::to_string(r.compact_revision()) + ")",
                                                     e->resumed_ ? Errc::kResyncNeeded : Errc::kCompacted)
                                                  .with_revision(r.compact_revision())
                                            : Status(StatusCode::kFailedPrecondition,
                                                     "watch rejected: " + r.cancel_reason(), Errc::kWatchCanceled);
      finish_entry_locked(e, std::move(why));
    } else if (e->cancelled_.load()) {
      etcdserverpb::WatchRequest req;
      req.mutable_cancel_request()->set_watch_id(r.watch_id());
      send_locked(std::move(req));
    } else {
      e->server_id_ = r.watch_id();
      by_server_id_[r.watch_id()] = e;
      if (e->next_revision_ <= 0) e->next_revision_ = header_rev + 1;
      {
        std::lock_guard created_lock(e->created_mu_);
        e->created_ = true;
      }
      e->created_cv_.notify_all();
      if (e->notify_created_) {
        // Through the strand like any response, so before every event of
        // this creation; it delivers nothing, so it moves no revision.
        WatchResponse created;
        created.header = convert(r.header());
        created.created = true;
        e->deliver(std::move(created), 0);
      }
    }
    pump_creates_locked();
    if (r.events_size() == 0) return;
  }

  if (r.watch_id() == -1 && r.events_size() == 0) {
    // The answer to a progress request (the liveness probe of an idle
    // stream): the stream is alive, and that is all it is taken for. It is
    // neither passed on as progress nor moves where a watch resumes: etcd
    // before 3.4.25 and 3.5.8 answers it from a queue of its own, with the
    // store's current revision, and the answer can overtake events still
    // queued for the stream's watches (etcd-io/etcd#15220). Taken as
    // "delivered through", it made a view skip those events as already
    // seen (a parked waiter never woken) and a re-created watch start after
    // them. A watch created with progress_notify gets its own progress
    // notifications, which etcd sends in order with its events.
    return;
  }

  auto it = by_server_id_.find(r.watch_id());
  if (it == by_server_id_.end()) return;  // cancelled by us
  auto e = it->second;

  if (r.canceled()) {
    if (r.compact_revision() > 0) {
      finish_entry_locked(
          e, Status(StatusCode::kOutOfRange,
                    "watch fell behind a compaction (compact revision " + std::to_string(r.compact_revision()) + ")",
                    e->resumed_ ? Errc::kResyncNeeded : Errc::kCompacted)
                 .with_revision(r.compact_revision()));
    } else {
      finish_entry_locked(
          e, Status(StatusCode::kAborted, "watch cancelled by the server: " + r.cancel_reason(), Errc::kWatchCanceled));
    }
    return;
  }

  WatchResponse out;
  out.header = convert(r.header());
  int64_t through = header_rev;
  if (r.events_size() > 0) {
    out.events.reserve(static_cast<size_t>(r.events_size()));
    for (const auto& ev : r.events()) out.events.push_back(ns_.convert(ev));
    through = r.events(r.events_size() - 1).kv().mod_revision();
    e->next_revision_ = through + 1;
  } else {
    out.progress = true;
    if (header_rev + 1 > e->next_revision_) e->next_revision_ = header_rev + 1;
  }
  e->deliver(std::move(out), through);
}

void WatchHub::on_stream_done(WatchStream* stream, const grpc::Status& s) {
  std::lock_guard lock(mu_);
  --live_streams_;
  if (stream == stream_.get()) {
    stream_.reset();
    by_server_id_.clear();
    create_in_flight_ = false;
    pending_creates_.clear();
    if (!shutdown_) {
      // Re-create every live watch from the revision after its last event.
      for (auto& e : entries_) {
        if (e->server_id_ >= 0) e->resumed_ = true;
        e->server_id_ = -1;
        pending_creates_.push_back(e);
      }
      streams_.ended(s, stream->token(), stream_endpoint_, /*cancel_fails=*/false);
      if (!entries_.empty()) {
        if (!stream_broken_) streams_.log_broken("watch", stream_endpoint_, from_grpc(s));
        stream_broken_ = true;
        schedule_reconnect_locked();
      }
    }
  }
  stopped_cv_.notify_all();
}

void WatchHub::schedule_reconnect_locked() {
  if (reconnect_scheduled_) return;
  reconnect_scheduled_ = true;
  restarts_.fetch_add(1);
  const auto delay = streams_.reconnect_delay(reconnect_attempt_);
  ++reconnect_attempt_;
  if (!reconnect_timer_) reconnect_timer_ = std::make_unique<asio::steady_timer>(streams_.io);
  reconnect_timer_->expires_after(delay);
  reconnect_timer_->async_wait([this](const asio::error_code& ec) {
    std::lock_guard lock(mu_);
    reconnect_scheduled_ = false;
    if (ec || shutdown_) {
      stopped_cv_.notify_all();
      return;
    }
    if (entries_.empty()) return;
    ensure_stream_locked();
    pump_creates_locked();
  });
}

void WatchHub::arm_liveness_locked() {
  if (liveness_armed_ || shutdown_) return;
  liveness_armed_ = true;
  asio::post(streams_.io, [this] {
    if (!liveness_timer_) liveness_timer_ = std::make_unique<asio::steady_timer>(streams_.io);
    liveness_timer_->expires_after(kProgressInterval);
    liveness_timer_->async_wait([this](const asio::error_code& ec) {
      if (!ec) {
        check_liveness();
        return;
      }
      std::lock_guard lock(mu_);
      liveness_armed_ = false;
      stopped_cv_.notify_all();
    });
  });
}

void WatchHub::check_liveness() {
  std::lock_guard lock(mu_);
  liveness_armed_ = false;
  if (shutdown_) {
    stopped_cv_.notify_all();
    return;
  }
  if (entries_.empty()) return;  // re-armed by the next watch
  if (stream_) {
    const auto silent = Clock::now() - last_heard_;
    if (silent > kStallTimeout) {
      // Nothing at all for this long, not even progress: the member or the
      // link is gone without the connection noticing.
      asio::post(streams_.io, [stream = stream_] { stream->cancel(); });
      streams_.endpoints.report_stall(stream_endpoint_);
    } else if (silent >= kProgressInterval) {
      // A probe unanswered for a whole interval: the client is suspended
      // (ConnectionState) until the stream hears again; the stream stays.
      if (silent >= 2 * kProgressInterval) streams_.connection.note_connection_failure();
      etcdserverpb::WatchRequest req;
      req.mutable_progress_request();
      send_locked(std::move(req));
    }
  }
  arm_liveness_locked();
}

void WatchHub::request_progress() {
  std::lock_guard lock(mu_);
  if (!stream_ || shutdown_) return;
  etcdserverpb::WatchRequest req;
  req.mutable_progress_request();
  send_locked(std::move(req));
}

void WatchHub::shutdown() {
  std::unique_lock lock(mu_);
  if (shutdown_) return;
  shutdown_ = true;
  asio::post(streams_.io, [this] {
    if (reconnect_timer_) reconnect_timer_->cancel();
    if (liveness_timer_) liveness_timer_->cancel();
  });
  // Cancelled here, not through the io loop: a client closed on one of its
  // own io threads stops that loop, and a cancel queued there would never
  // run — the stream would outlive the core's drain and complete into a
  // destroyed hub. Outside our lock: its reactions take it.
  auto stream = std::move(stream_);
  auto entries = entries_;
  for (auto& e : entries) finish_entry_locked(e, Closed("client"));
  pending_creates_.clear();
  lock.unlock();
  if (stream) stream->cancel();
}

bool WatchHub::wait_stopped(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return stopped_cv_.wait_for(lock, timeout,
                              [this] { return live_streams_ == 0 && !reconnect_scheduled_ && !liveness_armed_; });
}

uint64_t WatchHub::open_watches() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace etcd::detail
