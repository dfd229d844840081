#include "connection_monitor.h"

#include <algorithm>

namespace etcd::detail {

ConnectionState ConnectionMonitor::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

Subscription ConnectionMonitor::on_change(std::function<void(ConnectionState)> listener) {
  return listeners_.add(std::move(listener));
}

void ConnectionMonitor::transition(std::initializer_list<ConnectionState> from, ConnectionState to) {
  std::lock_guard lock(mu_);
  if (std::find(from.begin(), from.end(), state_) == from.end() || state_ == to) return;
  state_ = to;
  // Posted in order on one strand, under the lock: listeners see every
  // change, in order, each made while they were subscribed.
  listeners_.notify_past_unsubscribe(strand_, nullptr, to);
}

void ConnectionMonitor::note_success() {
  transition({ConnectionState::kSuspended, ConnectionState::kLost}, ConnectionState::kReconnected);
}

void ConnectionMonitor::note_connection_failure() {
  transition({ConnectionState::kConnected, ConnectionState::kReconnected}, ConnectionState::kSuspended);
}

void ConnectionMonitor::note_lease_lost() {
  transition({ConnectionState::kConnected, ConnectionState::kReconnected, ConnectionState::kSuspended},
             ConnectionState::kLost);
}

}  // namespace etcd::detail
