#include "lease_keeper.h"

#include <asio/post.hpp>
#include <cstdio>

#include "bidi_stream.h"
#include "client_core.h"

namespace etcd::detail {

namespace {
// How often the keeper looks at its leases. Renewals are due every TTL/3, so
// this only adds up to one tick of lateness to a renewal.
constexpr auto kTick = std::chrono::milliseconds(100);
// safe_until() stays this far ahead of the computed expiry, for clock rate
// differences between this host and the members.
constexpr auto kSafetyMargin = std::chrono::milliseconds(250);

// Lease ids in hex, as etcdctl and the CLI print them.
std::string hex_id(int64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(id));
  return buf;
}
// How long a renewal may go unanswered before the stream counts as stuck.
constexpr auto kMinStallLimit = std::chrono::milliseconds(1000);
constexpr auto kMaxStallLimit = std::chrono::milliseconds(3000);
}  // namespace

// The client's one LeaseKeepAlive stream.
class KeepAliveStream : public BidiStream<etcdserverpb::LeaseKeepAliveRequest, etcdserverpb::LeaseKeepAliveResponse> {
 public:
  explicit KeepAliveStream(LeaseKeeper& keeper) : keeper_(keeper) {}

 protected:
  void on_message(const etcdserverpb::LeaseKeepAliveResponse& r) override { keeper_.on_response(this, r); }
  void on_finished(const grpc::Status& s) override { keeper_.on_stream_done(this, s); }

 private:
  LeaseKeeper& keeper_;
};

// --- LeaseState -------------------------------------------------------------

bool LeaseState::alive() const {
  std::lock_guard lock(mu_);
  // Past its expiry it is gone, even before the keeper's next look says so.
  return !lost_ && Clock::now() < expires_at_;
}

Deadline LeaseState::expires_at() const {
  std::lock_guard lock(mu_);
  return expires_at_;
}

Deadline LeaseState::safe_until() const {
  std::lock_guard lock(mu_);
  return lost_ ? Deadline{} : expires_at_ - kSafetyMargin;
}

Subscription LeaseState::on_lost(std::function<void(const Status&)> listener) {
  auto l = std::make_shared<Listener>(std::move(listener));
  std::unique_lock lock(mu_);
  if (lost_) {
    Status why = loss_;
    lock.unlock();
    asio::post(executor_, [l, why] {
      if (l->active.exchange(false)) l->fn(why);
    });
    return Subscription([l] { l->active.store(false); });
  }
  const uint64_t id = next_listener_id_++;
  listeners_.emplace(id, l);
  std::weak_ptr<LeaseState> weak = weak_from_this();
  return Subscription([weak, id, l] {
    l->active.store(false);
    if (auto self = weak.lock()) {
      std::lock_guard g(self->mu_);
      self->listeners_.erase(id);
    }
  });
}

void LeaseState::mark_lost(Status why) {
  std::map<uint64_t, std::shared_ptr<Listener>> listeners;
  {
    std::lock_guard lock(mu_);
    if (lost_) return;
    lost_ = true;
    loss_ = why;
    listeners.swap(listeners_);
  }
  lost_source_.request_stop();
  // Lost on the server's side (not revoked by its owner, not closed): the
  // client reports it as a state.
  if (why.code() != StatusCode::kCancelled && (why.is(Errc::kLeaseExpired) || why.is(Errc::kLeaseNotFound))) {
    if (auto core = core_.lock()) core->note_lease_lost();
  }
  for (auto& [id, l] : listeners) {
    asio::post(executor_, [l = l, why] {
      if (l->active.exchange(false)) l->fn(why);
    });
  }
}

void LeaseState::confirm(Deadline sent_at, int64_t ttl) {
  std::lock_guard lock(mu_);
  if (lost_) return;
  // The server renewed no earlier than we sent: expiry is at least this.
  auto at = sent_at + std::chrono::seconds(ttl);
  if (at > expires_at_) expires_at_ = at;
}

// --- LeaseKeeper ----------------------------------------------------------

LeaseKeeper::LeaseKeeper(ClientCore& core) : core_(core), tick_timer_(core.io()) {}
LeaseKeeper::~LeaseKeeper() = default;

void LeaseKeeper::keep(const std::shared_ptr<LeaseState>& state) {
  std::lock_guard lock(mu_);
  if (shutdown_) {
    state->mark_lost(Closed("client"));
    return;
  }
  auto& k = kept_[state->id()];
  k.states.push_back(state);
  k.next_send = Clock::now() + state->ttl() / 3;
  ensure_stream_locked();
  arm_tick_locked();
}

void LeaseKeeper::forget(const LeaseState* state) {
  std::lock_guard lock(mu_);
  auto it = kept_.find(state->id());
  if (it == kept_.end()) return;
  auto& v = it->second.states;
  std::erase_if(v, [state](const std::weak_ptr<LeaseState>& w) {
    auto s = w.lock();
    return !s || s.get() == state;
  });
  if (v.empty()) kept_.erase(it);
}

void LeaseKeeper::keep_alive_once(int64_t id, Deadline deadline, Callback<LeaseKeepAliveResponse> done) {
  std::unique_lock lock(mu_);
  if (shutdown_) {
    lock.unlock();
    done(Closed("client"));
    return;
  }
  once_[id].push_back(OnceWaiter{next_once_token_++, deadline, std::move(done)});
  ensure_stream_locked();
  send_locked(id);
  arm_tick_locked();
}

void LeaseKeeper::ensure_stream_locked() {
  if (stream_ || shutdown_) return;
  if (Clock::now() < reconnect_not_before_) return;  // the tick retries
  auto stream = std::make_shared<KeepAliveStream>(*this);
  stream_ = stream;
  ++live_streams_;
  stream_endpoint_ = core_.current_endpoint();
  asio::post(core_.io(), [this, stream, ep = stream_endpoint_] {
    auto start = [this, stream, ep](const Status&) {
      stream->start(
          core_, *ep,
          [ep](grpc::ClientContext* ctx, KeepAliveStream::Reactor* r) { ep->lease->async()->LeaseKeepAlive(ctx, r); },
          stream);
    };
    if (core_.auth_enabled()) {
      core_.with_token(start);
    } else {
      start(Status());
    }
  });
}

void LeaseKeeper::send_locked(int64_t id) {
  if (!stream_) return;
  sent_at_[id].push_back(Clock::now());
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id);
  asio::post(core_.io(),
             [stream = stream_, request = std::move(request)]() mutable { stream->write(std::move(request)); });
}

void LeaseKeeper::arm_tick_locked() {
  if (tick_armed_ || shutdown_) return;
  tick_armed_ = true;
  asio::post(core_.io(), [this] {
    tick_timer_.expires_after(kTick);
    tick_timer_.async_wait([this](const asio::error_code& ec) {
      if (!ec) {
        tick();
        return;
      }
      std::lock_guard lock(mu_);
      tick_armed_ = false;
      stopped_cv_.notify_all();
    });
  });
}

void LeaseKeeper::tick() {
  std::vector<std::pair<std::shared_ptr<LeaseState>, Status>> lost;
  std::vector<Callback<LeaseKeepAliveResponse>> timed_out;
  {
    std::lock_guard lock(mu_);
    tick_armed_ = false;
    if (shutdown_) {
      stopped_cv_.notify_all();
      return;
    }
    const auto now = Clock::now();
    ensure_stream_locked();
    // A stream whose renewals go unanswered is stuck (member paused, link
    // blackholed): drop it, so the next one starts on another member while
    // the leases still have time left.
    Deadline oldest_unanswered{};
    Clock::duration stall_limit = kMinStallLimit;
    for (auto& [id, q] : sent_at_) {
      if (!q.empty() && (oldest_unanswered == Deadline{} || q.front() < oldest_unanswered))
        oldest_unanswered = q.front();
    }
    for (auto& [id, k] : kept_) {
      for (auto& w : k.states) {
        if (auto st = w.lock())
          stall_limit =
              std::max<Clock::duration>(stall_limit, std::min<Clock::duration>(st->ttl() / 3, kMaxStallLimit));
      }
    }
    if (stream_ && oldest_unanswered != Deadline{} && now - oldest_unanswered > stall_limit) {
      asio::post(core_.io(), [stream = stream_] { stream->cancel(); });
      sent_at_.clear();
      core_.report_endpoint_stall(stream_endpoint_);
    }
    for (auto it = kept_.begin(); it != kept_.end();) {
      auto& k = it->second;
      std::erase_if(k.states, [](const std::weak_ptr<LeaseState>& w) { return w.expired(); });
      bool any_alive = false;
      Clock::duration period = std::chrono::hours(1);
      for (auto& w : k.states) {
        auto s = w.lock();
        if (!s) continue;
        period = std::min<Clock::duration>(period, s->ttl() / 3);
        if (now >= s->expires_at()) {
          lost.emplace_back(s, Status(StatusCode::kUnavailable,
                                      "lease " + hex_id(it->first) + " passed its TTL without a confirmed renewal",
                                      Errc::kLeaseExpired));
        } else {
          any_alive = true;
        }
      }
      if (!any_alive) {
        it = kept_.erase(it);
        continue;
      }
      if (now >= k.next_send) {
        send_locked(it->first);
        k.next_send = now + std::max<Clock::duration>(period, kTick);
      }
      ++it;
    }
    for (auto it = once_.begin(); it != once_.end();) {
      auto& q = it->second;
      while (!q.empty() && now >= q.front().deadline) {
        timed_out.push_back(std::move(q.front().done));
        q.pop_front();
      }
      it = q.empty() ? once_.erase(it) : std::next(it);
    }
    if (!kept_.empty() || !once_.empty()) arm_tick_locked();
  }
  for (auto& [s, why] : lost) s->mark_lost(why);
  for (auto& d : timed_out) d(DeadlineExceeded("lease keep-alive deadline exceeded"));
}

void LeaseKeeper::on_response(KeepAliveStream* stream, const etcdserverpb::LeaseKeepAliveResponse& r) {
  core_.note_success();
  std::vector<std::shared_ptr<LeaseState>> states;
  Deadline sent_at{};
  std::vector<Callback<LeaseKeepAliveResponse>> once;
  {
    std::lock_guard lock(mu_);
    if (stream != stream_.get()) return;
    reconnect_attempt_ = 0;
    auto sit = sent_at_.find(r.id());
    if (sit != sent_at_.end() && !sit->second.empty()) {
      sent_at = sit->second.front();
      sit->second.pop_front();
    }
    if (auto kit = kept_.find(r.id()); kit != kept_.end()) {
      for (auto& w : kit->second.states) {
        if (auto s = w.lock()) states.push_back(std::move(s));
      }
      if (r.ttl() <= 0) kept_.erase(kit);
    }
    if (auto oit = once_.find(r.id()); oit != once_.end() && !oit->second.empty()) {
      once.push_back(std::move(oit->second.front().done));
      oit->second.pop_front();
      if (oit->second.empty()) once_.erase(oit);
    }
  }
  for (auto& s : states) {
    if (r.ttl() <= 0) {
      s->mark_lost(
          Status(StatusCode::kNotFound, "lease " + hex_id(r.id()) + " no longer exists", Errc::kLeaseNotFound));
    } else if (sent_at != Deadline{}) {
      s->confirm(sent_at, r.ttl());
    }
  }
  for (auto& d : once) {
    if (r.ttl() <= 0) {
      d(Status(StatusCode::kNotFound, "lease " + hex_id(r.id()) + " not found", Errc::kLeaseNotFound));
    } else {
      d(convert(r));
    }
  }
}

void LeaseKeeper::on_stream_done(KeepAliveStream* stream, const grpc::Status& s) {
  std::vector<Callback<LeaseKeepAliveResponse>> failed;
  {
    std::lock_guard lock(mu_);
    --live_streams_;
    if (stream == stream_.get()) {
      stream_.reset();
      sent_at_.clear();  // those renewals are gone with the stream
      for (auto& [id, q] : once_) {
        for (auto& w : q) failed.push_back(std::move(w.done));
      }
      once_.clear();
      if (!shutdown_) {
        const Status why = from_grpc(s);
        if (why.is(Errc::kTokenExpired)) core_.invalidate_token(stream->token());
        if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
            s.error_code() == grpc::StatusCode::CANCELLED) {
          core_.report_endpoint_failure(stream_endpoint_);
          if (!why.is(Errc::kNoLeader)) core_.note_connection_failure();
        }
        reconnect_not_before_ =
            Clock::now() +
            (reconnect_attempt_ == 0 ? Clock::duration{} : Clock::duration(core_.backoff(reconnect_attempt_)));
        ++reconnect_attempt_;
        // Renew everything as soon as a new stream is up.
        for (auto& [id, k] : kept_) k.next_send = Clock::now();
        if (!kept_.empty()) arm_tick_locked();
      }
    }
    stopped_cv_.notify_all();
  }
  Status why = from_grpc(s);
  if (why.ok()) why = Status(StatusCode::kUnavailable, "keep-alive stream ended");
  for (auto& d : failed) d(why);
}

void LeaseKeeper::shutdown() {
  std::vector<std::shared_ptr<LeaseState>> states;
  std::vector<Callback<LeaseKeepAliveResponse>> failed;
  std::shared_ptr<KeepAliveStream> stream;
  {
    std::lock_guard lock(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    // Cancelled below, not through the io loop (see WatchHub::shutdown).
    stream = std::move(stream_);
    asio::post(core_.io(), [this] { tick_timer_.cancel(); });
    for (auto& [id, k] : kept_) {
      for (auto& w : k.states) {
        if (auto s = w.lock()) states.push_back(std::move(s));
      }
    }
    kept_.clear();
    for (auto& [id, q] : once_) {
      for (auto& w : q) failed.push_back(std::move(w.done));
    }
    once_.clear();
  }
  if (stream) stream->cancel();
  // The lease may well be alive on the server, but nobody renews it now.
  for (auto& s : states) s->mark_lost(Closed("client"));
  for (auto& d : failed) d(Closed("client"));
}

bool LeaseKeeper::wait_stopped(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return stopped_cv_.wait_for(lock, timeout, [this] { return live_streams_ == 0 && !tick_armed_; });
}

uint64_t LeaseKeeper::kept_leases() const {
  std::lock_guard lock(mu_);
  return kept_.size();
}

}  // namespace etcd::detail
