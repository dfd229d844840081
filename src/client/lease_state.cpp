#include "lease_state.h"

#include "connection_monitor.h"

namespace etcd::detail {

namespace {
// safe_until() stays this far ahead of the computed expiry, for clock rate
// differences between this host and the members.
constexpr auto kSafetyMargin = std::chrono::milliseconds(250);
}  // namespace

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
  std::unique_lock lock(mu_);
  if (lost_) {
    Status why = loss_;
    lock.unlock();
    return decltype(listeners_)::notify_one(executor_, nullptr, std::move(listener), why);
  }
  return listeners_.add(std::move(listener));
}

void LeaseState::mark_lost(Status why) {
  {
    std::lock_guard lock(mu_);
    if (lost_) return;
    lost_ = true;
    loss_ = why;
  }
  lost_source_.request_stop();
  // Lost on the server's side (not revoked by its owner, not closed): the
  // client reports it as a state.
  if (why.code() != StatusCode::kCancelled && (why.is(Errc::kLeaseExpired) || why.is(Errc::kLeaseNotFound))) {
    if (auto connection = connection_.lock()) connection->note_lease_lost();
  }
  // Added before lost_ was set, or never: nobody joins them now.
  listeners_.notify(executor_, nullptr, why);
  listeners_.clear();
}

void LeaseState::confirm(Deadline sent_at, int64_t ttl) {
  std::lock_guard lock(mu_);
  if (lost_) return;
  // The server renewed no earlier than we sent: expiry is at least this.
  auto at = sent_at + std::chrono::seconds(ttl);
  if (at > expires_at_) expires_at_ = at;
}

}  // namespace etcd::detail
