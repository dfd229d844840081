#include "lease_keeper.h"

#include <algorithm>
#include <asio/post.hpp>
#include <cstdio>
#include <limits>

#include "bidi_stream.h"
#include "convert.h"
#include "renewal_schedule.h"
#include "stream_pieces.h"

namespace etcd::detail {

namespace {
// Lease ids in hex, as etcdctl and the CLI print them.
std::string hex_id(int64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(id));
  return buf;
}
constexpr std::size_t kNoSlot = std::numeric_limits<std::size_t>::max();
}  // namespace

// One of the client's LeaseKeepAlive streams: the one of slot `slot`.
class KeepAliveStream : public BidiStream<etcdserverpb::LeaseKeepAliveRequest, etcdserverpb::LeaseKeepAliveResponse> {
 public:
  KeepAliveStream(LeaseKeeper& keeper, std::size_t slot) : keeper_(keeper), slot_(slot) {}
  std::size_t slot() const { return slot_; }

 protected:
  void on_message(const etcdserverpb::LeaseKeepAliveResponse& r) override { keeper_.on_response(this, r); }
  void on_finished(const grpc::Status& s) override { keeper_.on_stream_done(this, s); }

 private:
  LeaseKeeper& keeper_;
  const std::size_t slot_;
};

// --- LeaseKeeper ----------------------------------------------------------

LeaseKeeper::LeaseKeeper(const StreamPieces& streams) : streams_(streams), tick_timer_(streams.io) {}
LeaseKeeper::~LeaseKeeper() = default;

void LeaseKeeper::keep(const std::shared_ptr<LeaseState>& state) {
  std::lock_guard lock(mu_);
  if (shutdown_) {
    state->mark_lost(Closed("client"));
    return;
  }
  // Its first renewal counts from when the grant was sent.
  const Deadline granted_at = state->expires_at() - state->ttl();
  const Deadline first = RenewalSchedule::first_renewal(granted_at, state->ttl(), state->id());
  auto [it, fresh] = kept_.try_emplace(state->id());
  Kept& k = it->second;
  k.states.push_back(state);
  if (fresh) {
    std::vector<std::size_t> loads;
    loads.reserve(slots_.size());
    for (const auto& slot : slots_) loads.push_back(slot.leases);
    k.slot = RenewalSchedule::pick_stream(loads);
    if (k.slot == slots_.size()) slots_.emplace_back();
    ++slots_[k.slot].leases;
    k.ttl = state->ttl();
    k.next_send = first;
  } else {
    k.ttl = std::min(k.ttl, state->ttl());
    k.next_send = std::min(k.next_send, first);
  }
  ensure_stream_locked(k.slot);
  arm_tick_locked();
}

void LeaseKeeper::erase_kept_locked(std::map<int64_t, Kept>::iterator it) {
  // Its unanswered renewals stay in the slot's sent_at: their answers are
  // still to come, in order.
  --slots_[it->second.slot].leases;
  kept_.erase(it);
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
  if (v.empty()) erase_kept_locked(it);
}

void LeaseKeeper::keep_alive_once(int64_t id, Deadline deadline, Callback<LeaseKeepAliveResponse> done) {
  std::unique_lock lock(mu_);
  if (shutdown_) {
    lock.unlock();
    done(Closed("client"));
    return;
  }
  std::size_t slot = 0;
  if (auto it = kept_.find(id); it != kept_.end()) {
    slot = it->second.slot;  // behind the lease's own renewals, in order
  } else if (slots_.empty()) {
    slots_.emplace_back();
  } else {
    for (std::size_t i = 1; i < slots_.size(); ++i) {
      if (slots_[i].leases < slots_[slot].leases) slot = i;
    }
  }
  ensure_stream_locked(slot);
  const bool sent = send_locked(slot, id, Clock::now());
  slots_[slot].once[id].push_back(OnceWaiter{next_once_token_++, deadline, sent, std::move(done)});
  arm_tick_locked();
}

std::size_t LeaseKeeper::slot_of(const KeepAliveStream* stream) const {
  const std::size_t i = stream->slot();
  return i < slots_.size() && slots_[i].stream.get() == stream ? i : kNoSlot;
}

void LeaseKeeper::ensure_stream_locked(std::size_t i) {
  Slot& slot = slots_[i];
  if (slot.stream || shutdown_) return;
  if (Clock::now() < slot.reconnect_not_before) return;  // the tick retries
  auto stream = std::make_shared<KeepAliveStream>(*this, i);
  slot.stream = stream;
  ++live_streams_;
  slot.endpoint = streams_.endpoints.current();
  slot.last_heard = Clock::now();
  auto ep = slot.endpoint;
  streams_.open(stream, ep, [ep](grpc::ClientContext* ctx, KeepAliveStream::Reactor* r) {
    ep->lease->async()->LeaseKeepAlive(ctx, r);
  });
}

bool LeaseKeeper::send_locked(std::size_t i, int64_t id, Deadline now) {
  Slot& slot = slots_[i];
  if (!slot.stream) return false;
  // Recorded before the write is even queued: the server renews no earlier.
  slot.sent_at[id].push_back(now);
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id);
  // Posted under the lock, so writes reach the stream in the order their
  // send times were recorded.
  asio::post(streams_.io,
             [stream = slot.stream, request = std::move(request)]() mutable { stream->write(std::move(request)); });
  return true;
}

std::vector<Callback<LeaseKeepAliveResponse>> LeaseKeeper::drop_stream_locked(std::size_t i, Deadline now) {
  Slot& slot = slots_[i];
  slot.stream.reset();
  // What was unanswered is gone with the stream: due again at once (the
  // per-tick budget spreads the resends); the other leases keep their times.
  for (auto& [id, q] : slot.sent_at) {
    if (auto it = kept_.find(id); it != kept_.end() && it->second.slot == i) {
      it->second.in_flight = false;
      it->second.next_send = std::min(it->second.next_send, now);
    }
  }
  slot.sent_at.clear();
  std::vector<Callback<LeaseKeepAliveResponse>> failed;
  for (auto& [id, q] : slot.once) {
    for (auto& w : q) failed.push_back(std::move(w.done));
  }
  slot.once.clear();
  return failed;
}

void LeaseKeeper::arm_tick_locked() {
  if (tick_armed_ || shutdown_) return;
  tick_armed_ = true;
  asio::post(streams_.io, [this] {
    tick_timer_.expires_after(RenewalSchedule::kTick);
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
  std::vector<Callback<LeaseKeepAliveResponse>> dropped;
  {
    std::lock_guard lock(mu_);
    tick_armed_ = false;
    if (shutdown_) {
      stopped_cv_.notify_all();
      return;
    }
    const auto now = Clock::now();
    // What each slot's leases ask of it this tick.
    struct Look {
      std::chrono::seconds shortest_ttl = std::chrono::seconds::max();
      double due_per_tick = 0;
      std::vector<std::pair<Deadline, int64_t>> due;  // (expiry, lease): the most urgent go first
    };
    std::vector<Look> looks(slots_.size());
    for (auto it = kept_.begin(); it != kept_.end();) {
      auto& k = it->second;
      std::erase_if(k.states, [](const std::weak_ptr<LeaseState>& w) { return w.expired(); });
      bool any_alive = false;
      auto ttl = std::chrono::seconds::max();
      Deadline expiry = Deadline::max();
      for (auto& w : k.states) {
        auto s = w.lock();
        if (!s) continue;
        const Deadline e = s->expires_at();
        if (now >= e) {
          lost.emplace_back(s, Status(StatusCode::kUnavailable,
                                      "lease " + hex_id(it->first) + " passed its TTL without a confirmed renewal",
                                      Errc::kLeaseExpired));
          continue;
        }
        any_alive = true;
        ttl = std::min(ttl, s->ttl());
        expiry = std::min(expiry, e);
      }
      if (!any_alive) {
        erase_kept_locked(it++);
        continue;
      }
      k.ttl = ttl;
      Look& look = looks[k.slot];
      look.shortest_ttl = std::min(look.shortest_ttl, ttl);
      look.due_per_tick += std::chrono::duration<double>(RenewalSchedule::kTick) /
                           std::chrono::duration<double>(RenewalSchedule::interval(ttl));
      if (!k.in_flight && now >= k.next_send) look.due.emplace_back(expiry, it->first);
      ++it;
    }
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = slots_[i];
      Look& look = looks[i];
      if (slot.stream) {
        Deadline oldest = Deadline::max();
        for (auto& [id, q] : slot.sent_at) {
          if (!q.empty()) oldest = std::min(oldest, q.front());
        }
        const bool elsewhere = streams_.endpoints.size() > 1;
        const Clock::duration limit = slot.leases > 0 ? RenewalSchedule::silence_limit(look.shortest_ttl, elsewhere)
                                                      : Clock::duration(streams_.retry.attempt_timeout);
        if (oldest != Deadline::max() && RenewalSchedule::silent_too_long(now, oldest, slot.last_heard, limit)) {
          // Nothing at all came back (member paused, link blackholed): give
          // the stream up, so its successor starts on another member (and a
          // fresh connection) while the leases still have time left.
          asio::post(streams_.io, [stream = slot.stream] { stream->cancel(); });
          auto ep = slot.endpoint;
          auto failed = drop_stream_locked(i, now);
          for (auto& d : failed) dropped.push_back(std::move(d));
          ++stream_restarts_;
          streams_.endpoints.report_stall(ep);
          streams_.connection.note_connection_failure();
          if (!slot.broken) {
            streams_.log_broken("lease keep-alive", ep,
                                Status(StatusCode::kUnavailable, "no answer on the keep-alive stream in time"));
          }
          slot.broken = true;
          slot.reconnect_not_before = now + streams_.reconnect_delay(slot.reconnect_attempt);
          ++slot.reconnect_attempt;
          continue;  // its due leases go out on the successor, from the next tick
        }
        if (slot.leases == 0 && slot.once.empty() && slot.sent_at.empty()) {
          // Nothing left to carry: close it (a later lease opens it again).
          asio::post(streams_.io, [stream = slot.stream] { stream->cancel(); });
          slot.stream.reset();
          continue;
        }
      }
      if (slot.leases == 0 && slot.once.empty()) continue;
      ensure_stream_locked(i);
      if (!slot.stream) continue;
      const std::size_t budget = RenewalSchedule::sends_per_tick(look.due_per_tick);
      auto& due = look.due;
      if (due.size() > budget) {
        std::ranges::nth_element(due, due.begin() + static_cast<std::ptrdiff_t>(budget));
        due.resize(budget);
      }
      for (auto& [expiry, id] : due) {
        Kept& k = kept_.at(id);
        send_locked(i, id, now);
        k.in_flight = true;
        k.next_send = now + RenewalSchedule::interval(k.ttl);
      }
      for (auto& [id, q] : slot.once) {
        for (auto& w : q) {
          if (!w.sent) w.sent = send_locked(i, id, now);
        }
      }
    }
    for (auto& slot : slots_) {
      for (auto it = slot.once.begin(); it != slot.once.end();) {
        auto& q = it->second;
        while (!q.empty() && now >= q.front().deadline) {
          timed_out.push_back(std::move(q.front().done));
          q.pop_front();
        }
        it = q.empty() ? slot.once.erase(it) : std::next(it);
      }
    }
    bool busy = !kept_.empty();
    for (auto& slot : slots_) busy = busy || !slot.once.empty() || slot.stream;
    if (busy) arm_tick_locked();
  }
  for (auto& [s, why] : lost) s->mark_lost(why);
  for (auto& d : timed_out) d(DeadlineExceeded("lease keep-alive deadline exceeded"));
  for (auto& d : dropped) d(Status(StatusCode::kUnavailable, "keep-alive stream stopped answering"));
}

void LeaseKeeper::on_response(KeepAliveStream* stream, const etcdserverpb::LeaseKeepAliveResponse& r) {
  streams_.connection.note_success();
  std::vector<std::shared_ptr<LeaseState>> states;
  Deadline sent_at{};
  std::vector<Callback<LeaseKeepAliveResponse>> once;
  {
    std::lock_guard lock(mu_);
    const std::size_t i = slot_of(stream);
    if (i == kNoSlot) return;
    Slot& slot = slots_[i];
    slot.last_heard = Clock::now();
    slot.reconnect_attempt = 0;
    if (slot.broken) {
      slot.broken = false;
      streams_.log_back("lease keep-alive", slot.endpoint);
    }
    bool answered_all = true;
    if (auto sit = slot.sent_at.find(r.id()); sit != slot.sent_at.end()) {
      if (!sit->second.empty()) {
        sent_at = sit->second.front();
        sit->second.pop_front();
      }
      if (sit->second.empty()) {
        slot.sent_at.erase(sit);
      } else {
        answered_all = false;
      }
    }
    if (auto kit = kept_.find(r.id()); kit != kept_.end()) {
      if (kit->second.slot == i && answered_all) kit->second.in_flight = false;
      for (auto& w : kit->second.states) {
        if (auto s = w.lock()) states.push_back(std::move(s));
      }
      if (r.ttl() <= 0) erase_kept_locked(kit);
    }
    if (auto oit = slot.once.find(r.id()); oit != slot.once.end() && !oit->second.empty()) {
      once.push_back(std::move(oit->second.front().done));
      oit->second.pop_front();
      if (oit->second.empty()) slot.once.erase(oit);
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
    // Not the slot's stream any more: given up or closed by the keeper.
    if (const std::size_t i = slot_of(stream); i != kNoSlot) {
      Slot& slot = slots_[i];
      const auto now = Clock::now();
      auto ep = slot.endpoint;
      failed = drop_stream_locked(i, now);
      if (!shutdown_) {
        ++stream_restarts_;
        streams_.ended(s, stream->token(), ep, /*cancel_fails=*/true);
        if (slot.leases > 0 && !slot.broken) streams_.log_broken("lease keep-alive", ep, from_grpc(s));
        if (slot.leases > 0) slot.broken = true;
        slot.reconnect_not_before = now + streams_.reconnect_delay(slot.reconnect_attempt);
        ++slot.reconnect_attempt;
        if (slot.leases > 0) arm_tick_locked();
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
  std::vector<std::shared_ptr<KeepAliveStream>> streams;
  {
    std::lock_guard lock(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    // Cancelled below, not through the io loop (see WatchHub::shutdown).
    for (auto& slot : slots_) {
      if (slot.stream) streams.push_back(std::move(slot.stream));
      slot.stream.reset();
      slot.sent_at.clear();
      for (auto& [id, q] : slot.once) {
        for (auto& w : q) failed.push_back(std::move(w.done));
      }
      slot.once.clear();
      slot.leases = 0;
    }
    asio::post(streams_.io, [this] { tick_timer_.cancel(); });
    for (auto& [id, k] : kept_) {
      for (auto& w : k.states) {
        if (auto s = w.lock()) states.push_back(std::move(s));
      }
    }
    kept_.clear();
  }
  for (auto& stream : streams) stream->cancel();
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

uint64_t LeaseKeeper::open_streams() const {
  std::lock_guard lock(mu_);
  return static_cast<uint64_t>(std::ranges::count_if(slots_, [](const Slot& s) { return s.stream != nullptr; }));
}

uint64_t LeaseKeeper::stream_restarts() const {
  std::lock_guard lock(mu_);
  return stream_restarts_;
}

}  // namespace etcd::detail
