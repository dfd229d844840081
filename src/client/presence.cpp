#include "etcd/presence.h"

#include "client_access.h"
#include "lease_holder.h"
#include "listener_set.h"
#include "single_flight.h"

#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <exception>
#include <mutex>
#include <optional>
#include <set>

#include "etcd/retry.h"
#include "etcd/txn.h"

namespace etcd {

std::string_view to_string(PresenceEvent event) noexcept {
  switch (event) {
    case PresenceEvent::kExpired:
      return "EXPIRED";
    case PresenceEvent::kRestored:
      return "RESTORED";
    case PresenceEvent::kRestoreFailed:
      return "RESTORE_FAILED";
  }
  return "UNKNOWN";
}

Status PutIfAbsentResult::status() const {
  if (taken.empty()) return Status();
  std::string msg = std::to_string(taken.size()) + " key(s) held by another owner, left alone:";
  for (const auto& kv : taken) {
    msg += " " + kv.key + " (lease " + std::to_string(kv.lease) + ")";
  }
  return Status(StatusCode::kAlreadyExists, std::move(msg));
}

// --- put_if_absent --------------------------------------------------------------

namespace {

// Keys per transaction. etcd (--max-txn-ops, default 128) gives a nested txn
// the budget its parent leaves (max - the parent's op count), and each key
// nests two levels deep: 126 keys is the hard limit at the default; stay well
// under it.
constexpr size_t kMaxOpsPerTxn = 64;

struct PutIfAbsentRun {
  Client client;
  std::vector<Txn> txns{};
  std::vector<std::vector<std::string>> chunk_keys{};
  PutIfAbsentResult result{};
  CallOptions options{};
};

// Per key: create if absent; else rewrite if it is ours; else read it.
Op put_if_absent_op(const std::string& key, const std::string& value, int64_t lease) {
  PutOptions put{};
  put.lease = lease;
  Txn ours;
  ours.when(Compare::lease(key) == lease).then(Op::put(key, value, put)).otherwise(Op::get(key));
  Txn absent;
  absent.when(Compare::absent(key)).then(Op::put(key, value, put)).otherwise(Op::txn(std::move(ours)));
  return Op::txn(std::move(absent));
}

void run_chunk(std::shared_ptr<PutIfAbsentRun> run, size_t i, Callback<PutIfAbsentResult> done) {
  // Later chunks start from a gRPC thread: never on the caller's.
  detail::CallAccess::start_inherited(
      run->client.txn(run->txns[i]), detail::CallAccess::off_caller_thread(run->options),
      [run, i, done = std::move(done)](Result<TxnResponse> r) mutable {
        if (!r.ok()) {
          done(std::move(r).status());
          return;
        }
        const auto& keys = run->chunk_keys[i];
        if (r->responses.size() != keys.size()) {
          done(Status(StatusCode::kInternal, "put_if_absent: unexpected transaction response"));
          return;
        }
        run->result.header = r->header;
        for (size_t k = 0; k < keys.size(); ++k) {
          const TxnResponse& absent = r->responses[k].txn();
          if (absent.succeeded) {
            run->result.created.push_back(keys[k]);
            continue;
          }
          const TxnResponse& ours = absent.responses.at(0).txn();
          if (ours.succeeded) {
            run->result.refreshed.push_back(keys[k]);
            continue;
          }
          const GetResponse& got = ours.responses.at(0).get();
          if (!got.kvs.empty()) {
            run->result.taken.push_back(got.kvs.front());
          } else {
            KeyValue kv;
            kv.key = keys[k];
            run->result.taken.push_back(std::move(kv));
          }
        }
        if (i + 1 < run->txns.size()) {
          run_chunk(std::move(run), i + 1, std::move(done));
        } else {
          done(std::move(run->result));
        }
      });
}
}  // namespace

Call<PutIfAbsentResult> PresenceLease::put_if_absent(Client& client,
                                                     std::vector<std::pair<std::string, std::string>> keys,
                                                     int64_t lease) {
  const Executor ex = client.executor();
  if (lease <= 0) return Call<PutIfAbsentResult>::ready(InvalidArgument("put_if_absent: lease must be > 0"), ex);
  std::set<std::string> seen;
  for (const auto& [k, v] : keys) {
    if (k.empty()) return Call<PutIfAbsentResult>::ready(InvalidArgument("put_if_absent: empty key"), ex);
    if (!seen.insert(k).second) {
      return Call<PutIfAbsentResult>::ready(InvalidArgument("put_if_absent: duplicate key " + k), ex);
    }
  }
  if (keys.empty()) return Call<PutIfAbsentResult>::ready(PutIfAbsentResult{}, ex);

  auto run = std::make_shared<PutIfAbsentRun>(PutIfAbsentRun{client});
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % kMaxOpsPerTxn == 0) {
      run->txns.emplace_back();
      run->chunk_keys.emplace_back();
    }
    run->txns.back().then(put_if_absent_op(keys[i].first, keys[i].second, lease));
    run->chunk_keys.back().push_back(keys[i].first);
  }
  return Call<PutIfAbsentResult>(
      [run](CallOptions options, Callback<PutIfAbsentResult> done) {
        // A Call is consumed once: the shared run is used by one execution.
        run->options = std::move(options);
        run_chunk(run, 0, std::move(done));
      },
      ex);
}

PresenceLease::RestoreHook PresenceLease::restore_keys(Client client,
                                                       std::vector<std::pair<std::string, std::string>> keys) {
  auto shared = std::make_shared<const std::vector<std::pair<std::string, std::string>>>(std::move(keys));
  return [client = std::move(client), shared](int64_t lease) mutable -> Call<void> {
    auto inner = std::make_shared<Call<PutIfAbsentResult>>(put_if_absent(client, *shared, lease));
    return Call<void>(
        [inner](CallOptions options, Callback<void> done) {
          detail::CallAccess::start_inherited(std::move(*inner), detail::CallAccess::off_caller_thread(options),
                                              [done = std::move(done)](Result<PutIfAbsentResult> r) {
                                                if (!r.ok()) {
                                                  done(std::move(r).status());
                                                  return;
                                                }
                                                Status s = r->status();
                                                done(s.ok() ? Result<void>() : Result<void>(std::move(s)));
                                              });
        },
        client.executor());
  };
}

// --- PresenceLease ----------------------------------------------------------------

struct PresenceLease::Impl : std::enable_shared_from_this<PresenceLease::Impl> {
  // kIdle while `starting` runs.
  enum class Phase { kIdle, kRunning, kClosed };

  Impl(Client c, PresenceOptions o)
      : client(std::move(c)),
        options(std::move(o)),
        strand(asio::make_strand(client.executor())),
        ttl(options.ttl),
        timer(client.executor()) {}

  // Declared first: destroyed last, after the timer that uses its executor.
  Client client;
  PresenceOptions options;
  asio::strand<Executor> strand;  // events in order

  mutable std::mutex mu;
  Phase phase = Phase::kIdle;
  detail::SingleFlight<Result<void>> starting;  // the grant start() waits for
  Lease lease;
  Subscription lease_sub;  // of `lease`
  int64_t lease_id = 0;
  std::chrono::seconds ttl;
  // Bumped at every loss, install and close: stale continuations compare it.
  uint64_t generation = 0;
  int attempt = 0;
  asio::steady_timer timer;
  detail::ListenerSet<PresenceEvent, const Status&> listeners;

  // --- helpers (mu held)

  void emit_locked(PresenceEvent e, const Status& st) { listeners.notify(strand, nullptr, e, st); }

  std::chrono::milliseconds next_backoff_locked() {
    return Backoff{options.initial_backoff, options.max_backoff}.delay(++attempt);
  }

  template <class F>
  void schedule_locked(std::chrono::milliseconds delay, F fn) {
    std::weak_ptr<Impl> weak = weak_from_this();
    timer.expires_after(delay);
    timer.async_wait([weak, fn = std::move(fn)](const asio::error_code& ec) mutable {
      if (ec) return;
      if (auto self = weak.lock()) fn(*self);
    });
  }

  bool current_locked(uint64_t g) const { return phase == Phase::kRunning && generation == g; }

  void install_locked(Lease&& l) {
    lease = std::move(l);
    lease_id = lease.id();
    ttl = lease.ttl();
    const uint64_t g = ++generation;
    std::weak_ptr<Impl> weak = weak_from_this();
    // Never calls back inline: safe under our lock.
    lease_sub = lease.on_lost([weak, g](const Status& why) {
      if (auto self = weak.lock()) self->on_lease_lost(g, why);
    });
  }

  // --- start (lease_holder.h)

  std::optional<Result<void>> settled_locked() const {
    switch (phase) {
      case Phase::kRunning:
        return Result<void>();
      case Phase::kClosed:
        return Result<void>(Closed("presence lease"));
      case Phase::kIdle:
        break;
    }
    return std::nullopt;
  }

  void started_locked(Lease&& granted) {
    phase = Phase::kRunning;
    install_locked(std::move(granted));
  }

  // --- healing (on the client's executor)

  void on_lease_lost(uint64_t g, const Status& why) {
    std::optional<Lease> old;
    uint64_t next = 0;
    {
      std::lock_guard lock(mu);
      if (!current_locked(g)) return;  // closed, or an old lease
      old.emplace(std::move(lease));
      lease_id = 0;
      next = ++generation;
      if (why.is(Errc::kClosed)) {
        // The client was closed: nothing can heal any more.
        phase = Phase::kClosed;
        timer.cancel();
      } else {
        attempt = 0;
        emit_locked(PresenceEvent::kExpired, why);
      }
    }
    if (why.is(Errc::kLeaseExpired)) {
      // We stopped hearing from the server; the lease may outlive our view of
      // it for a moment. Revoke it (best effort) so its keys free up at once.
      detail::CallAccess::start_inline(old->revoke(), [](Result<void>) {});
    } else {
      old->detach();
    }
    if (!why.is(Errc::kClosed)) regrant(next);
  }

  void regrant(uint64_t g) {
    {
      std::lock_guard lock(mu);
      if (!current_locked(g)) return;
    }
    std::weak_ptr<Impl> weak = weak_from_this();
    client.lease(options.ttl).then([weak, g](Result<Lease> r) {
      if (auto self = weak.lock()) self->on_regrant(g, std::move(r));
      // else: the Lease (if any) revokes itself.
    });
  }

  void on_regrant(uint64_t g, Result<Lease> r) {
    std::optional<Lease> discard;
    uint64_t installed = 0;
    {
      std::lock_guard lock(mu);
      if (!current_locked(g)) {
        if (r.ok()) discard.emplace(std::move(*r));
        return;
      }
      if (!r.ok()) {
        schedule_locked(next_backoff_locked(), [g](Impl& self) { self.regrant(g); });
        emit_locked(PresenceEvent::kRestoreFailed, r.status());
        return;
      }
      install_locked(std::move(*r));
      installed = generation;
    }
    run_hook(installed);
  }

  void run_hook(uint64_t g) {
    RestoreHook hook;
    int64_t id = 0;
    {
      std::lock_guard lock(mu);
      if (!current_locked(g)) return;
      hook = options.restore;
      id = lease_id;
      if (!hook) {
        attempt = 0;
        emit_locked(PresenceEvent::kRestored, Status());
        return;
      }
    }
    std::optional<Call<void>> call;
    try {
      call.emplace(hook(id));
    } catch (const std::exception& e) {
      on_hook_done(g, Status(StatusCode::kUnknown, std::string("restore hook threw: ") + e.what()));
      return;
    } catch (...) {
      on_hook_done(g, Status(StatusCode::kUnknown, "restore hook threw"));
      return;
    }
    std::weak_ptr<Impl> weak = weak_from_this();
    std::move(*call).on(client.executor()).then([weak, g](Result<void> r) {
      if (auto self = weak.lock()) self->on_hook_done(g, r.status());
    });
  }

  void on_hook_done(uint64_t g, const Status& st) {
    std::lock_guard lock(mu);
    if (!current_locked(g)) return;
    if (st.ok()) {
      attempt = 0;
      emit_locked(PresenceEvent::kRestored, Status());
      return;
    }
    schedule_locked(next_backoff_locked(), [g](Impl& self) { self.run_hook(g); });
    emit_locked(PresenceEvent::kRestoreFailed, st);
  }

  // --- close

  std::optional<Lease> shut(bool& already_closed) {
    decltype(starting)::Landing waiters;
    std::optional<Lease> old;
    {
      std::lock_guard lock(mu);
      already_closed = phase == Phase::kClosed;
      if (already_closed) return std::nullopt;
      phase = Phase::kClosed;
      ++generation;
      waiters = starting.land();
      timer.cancel();
      if (lease) old.emplace(std::move(lease));
      lease_id = 0;
    }
    std::move(waiters).complete(Closed("presence lease"));
    return old;
  }
};

std::shared_ptr<PresenceLease> PresenceLease::create(Client client) {
  return create(std::move(client), PresenceOptions());
}

std::shared_ptr<PresenceLease> PresenceLease::create(Client client, PresenceOptions options) {
  auto impl = std::make_shared<Impl>(std::move(client), std::move(options));
  return std::shared_ptr<PresenceLease>(new PresenceLease(std::move(impl)));
}

PresenceLease::~PresenceLease() {
  if (!impl_) return;
  bool already = false;
  impl_->shut(already);  // the returned Lease revokes itself on destruction
}

Call<void> PresenceLease::start() {
  return detail::start_lease_holder(impl_, "presence lease", impl_->options.ttl, impl_->client.executor());
}

Call<void> PresenceLease::close() { return detail::close_lease_holder(*impl_, impl_->client.executor()); }

int64_t PresenceLease::lease_id() const {
  std::lock_guard lock(impl_->mu);
  return impl_->lease_id;
}

std::chrono::seconds PresenceLease::ttl() const {
  std::lock_guard lock(impl_->mu);
  return impl_->ttl;
}

bool PresenceLease::alive() const {
  std::lock_guard lock(impl_->mu);
  return impl_->phase == Impl::Phase::kRunning && impl_->lease.alive();
}

bool PresenceLease::closed() const {
  std::lock_guard lock(impl_->mu);
  return impl_->phase == Impl::Phase::kClosed;
}

void PresenceLease::set_restore_hook(RestoreHook hook) {
  std::lock_guard lock(impl_->mu);
  impl_->options.restore = std::move(hook);
}

Subscription PresenceLease::on_event(std::function<void(PresenceEvent, const Status&)> listener) {
  return impl_->listeners.add(std::move(listener));
}

}  // namespace etcd
