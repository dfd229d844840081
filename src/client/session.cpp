#include "etcd/session.h"

#include "client_access.h"
#include "lease_holder.h"
#include "listener_set.h"
#include "single_flight.h"

#include <asio/strand.hpp>
#include <mutex>
#include <optional>
#include <utility>

namespace etcd {

struct Session::Impl : std::enable_shared_from_this<Session::Impl> {
  // kIdle while `starting` runs.
  enum class Phase { kIdle, kStarted, kLost, kClosed };

  Impl(Client c, SessionOptions o)
      : client(std::move(c)), options(o), strand(asio::make_strand(client.executor())), ttl(options.ttl) {}

  // Declared first: destroyed last, after everything that may use its executor.
  Client client;
  SessionOptions options;
  asio::strand<Executor> strand;  // keeps state notifications in order

  mutable std::mutex mu;
  Phase phase = Phase::kIdle;
  detail::SingleFlight<Result<void>> starting;  // the grant start() waits for
  Lease lease;
  int64_t lease_id = 0;
  std::chrono::seconds ttl;
  ConnectionState state = ConnectionState::kSuspended;
  Status loss;
  std::stop_source lost_source;
  detail::ListenerSet<const Status&> lost_listeners;  // heard once
  detail::ListenerSet<ConnectionState> state_listeners;
  Subscription client_sub;
  Subscription lease_sub;  // of `lease`

  // --- helpers (mu held)

  void set_state_locked(ConnectionState s, bool notify = true) {
    if (state == s) return;
    state = s;
    if (notify) state_listeners.notify(strand, nullptr, s);
  }

  // Ends the session (loss or close): on_lost() from now on hears of it at
  // once; fire_lost() tells the listeners so far.
  void end_locked(Phase to, Status why, bool notify_state) {
    phase = to;
    loss = std::move(why);
    set_state_locked(ConnectionState::kLost, notify_state);
  }

  void fire_lost(const Status& why) {
    lost_source.request_stop();
    lost_listeners.notify(client.executor(), nullptr, why);
    lost_listeners.clear();
  }

  // --- start

  // (lease_holder.h) start()'s answer without a grant.
  std::optional<Result<void>> settled_locked() const {
    switch (phase) {
      case Phase::kStarted:
        return Result<void>();
      case Phase::kLost:
        return Result<void>(loss);
      case Phase::kClosed:
        return Result<void>(Closed("session"));
      case Phase::kIdle:
        break;
    }
    return std::nullopt;
  }

  // (lease_holder.h) The grant succeeded.
  void started_locked(Lease&& granted) {
    lease = std::move(granted);
    lease_id = lease.id();
    ttl = lease.ttl();
    phase = Phase::kStarted;
    std::weak_ptr<Impl> weak = weak_from_this();
    const int64_t id = lease_id;
    // Neither registration calls back inline: safe under our lock.
    lease_sub = lease.on_lost([weak, id](const Status& why) {
      if (auto self = weak.lock()) self->on_lease_lost(id, why);
    });
    client_sub = client.on_state_change([weak](ConnectionState s) {
      if (auto self = weak.lock()) self->on_client_state(s);
    });
    set_state_locked(client.state() == ConnectionState::kSuspended ? ConnectionState::kSuspended
                                                                   : ConnectionState::kConnected);
  }

  // --- events (on the client's executor)

  void on_lease_lost(int64_t id, const Status& why) {
    Subscription sub;
    {
      std::lock_guard lock(mu);
      if (phase != Phase::kStarted || lease_id != id) return;  // closed, or an old lease
      end_locked(Phase::kLost, why, /*notify_state=*/true);
      sub = std::move(client_sub);
    }
    fire_lost(why);
  }

  void on_client_state(ConnectionState s) {
    std::lock_guard lock(mu);
    if (phase != Phase::kStarted) return;
    switch (s) {
      case ConnectionState::kSuspended:
        if (state == ConnectionState::kConnected || state == ConnectionState::kReconnected) {
          set_state_locked(ConnectionState::kSuspended);
        }
        break;
      case ConnectionState::kConnected:
      case ConnectionState::kReconnected:
        // If the lease died meanwhile, its loss (already decided by the
        // keeper) arrives next and makes the session kLost instead.
        if (state == ConnectionState::kSuspended && lease.alive()) set_state_locked(ConnectionState::kReconnected);
        break;
      case ConnectionState::kLost:
        // Some lease of the client is gone; ours reports itself.
        break;
    }
  }

  // --- close

  // Ends the session; returns the lease to revoke (empty if none).
  std::optional<Lease> shut(bool& already_closed) {
    decltype(starting)::Landing waiters;
    std::optional<Lease> to_revoke;
    Subscription sub;
    bool fire = false;
    {
      std::lock_guard lock(mu);
      already_closed = phase == Phase::kClosed;
      if (already_closed) return std::nullopt;
      const bool was_lost = phase == Phase::kLost;
      waiters = starting.land();
      if (lease) to_revoke.emplace(std::move(lease));
      if (was_lost) {
        phase = Phase::kClosed;  // keeps the loss status
      } else {
        end_locked(Phase::kClosed, Closed("session"), /*notify_state=*/false);
        fire = true;
      }
      sub = std::move(client_sub);
    }
    if (fire) fire_lost(Closed("session"));
    std::move(waiters).complete(Closed("session"));
    return to_revoke;
  }
};

std::shared_ptr<Session> Session::create(Client client) { return create(std::move(client), SessionOptions()); }

std::shared_ptr<Session> Session::create(Client client, SessionOptions options) {
  auto impl = std::make_shared<Impl>(std::move(client), options);
  return std::shared_ptr<Session>(new Session(std::move(impl)));
}

Session::~Session() {
  if (!impl_) return;
  bool already = false;
  // Destroying the Lease revokes it without waiting.
  impl_->shut(already);
}

Call<void> Session::start() {
  return detail::start_lease_holder(impl_, "session", impl_->options.ttl, impl_->client.executor());
}

Call<void> Session::close() { return detail::close_lease_holder(*impl_, impl_->client.executor()); }

int64_t Session::lease_id() const {
  std::lock_guard lock(impl_->mu);
  return impl_->lease_id;
}

std::chrono::seconds Session::ttl() const {
  std::lock_guard lock(impl_->mu);
  return impl_->ttl;
}

bool Session::alive() const {
  std::lock_guard lock(impl_->mu);
  return impl_->phase == Impl::Phase::kStarted && impl_->lease.alive() && Clock::now() < impl_->lease.safe_until();
}

Deadline Session::safe_until() const {
  std::lock_guard lock(impl_->mu);
  return impl_->phase == Impl::Phase::kStarted ? impl_->lease.safe_until() : Deadline{};
}

std::stop_token Session::lost_token() const { return impl_->lost_source.get_token(); }

Subscription Session::on_lost(std::function<void(const Status&)> listener) {
  std::unique_lock lock(impl_->mu);
  if (impl_->phase == Impl::Phase::kLost || impl_->phase == Impl::Phase::kClosed) {
    Status why = impl_->loss;
    lock.unlock();
    return decltype(impl_->lost_listeners)::notify_one(impl_->client.executor(), nullptr, std::move(listener), why);
  }
  return impl_->lost_listeners.add(std::move(listener));
}

Status Session::loss() const {
  std::lock_guard lock(impl_->mu);
  return impl_->loss;
}

ConnectionState Session::state() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state;
}

Subscription Session::on_state_change(std::function<void(ConnectionState)> listener) {
  return impl_->state_listeners.add(std::move(listener));
}

bool Session::closed() const {
  std::lock_guard lock(impl_->mu);
  return impl_->phase == Impl::Phase::kClosed;
}

const Client& Session::client() const { return impl_->client; }

}  // namespace etcd
