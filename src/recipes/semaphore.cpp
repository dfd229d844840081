#include "etcd/recipes/semaphore.h"

#include "acquisition.h"
#include "keys.h"

#include <algorithm>
#include <asio/post.hpp>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>

namespace etcd::recipes {

using detail::KeyClaims;
using detail::lease_hex;
using detail::seconds_since;
using etcd::detail::CallAccess;
using Permit = DistributedSemaphore::Permit;

namespace {

// Makes the keys of one process distinct, whatever object or session they
// belong to.
std::atomic<uint64_t> next_seq{0};

}  // namespace

namespace detail {

class PermitState;

struct PermitAccess {
  static Permit make(std::shared_ptr<PermitState> s) { return Permit(std::move(s)); }
};

// One acquisition in flight (its registrations: see acquisition.h).
// Fields marked (mu) are guarded by SemaphoreState::mu.
struct SemAcquisition : AcquisitionBase {
  Callback<std::shared_ptr<PermitState>> done{};  // nullptr: not granted (try)
  std::string key{};                              // (mu)
  int64_t rev = 0;                                // (mu) create revision of our key, once created
  std::shared_ptr<Session> session{};             // (mu)
};

class SemaphoreState : public std::enable_shared_from_this<SemaphoreState> {
 public:
  SemaphoreState(Client client, std::string name, int permits, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(std::move(client), "DistributedSemaphore", name, std::move(options))),
        arg_status(validate(name, permits)),
        n(permits),
        n_text(std::to_string(permits)),
        permits_key(name + "/permits"),
        holders_prefix(name + "/holders/") {}

  std::shared_ptr<RecipeCore> core;
  const Status arg_status;
  const int n;
  const std::string n_text;
  const std::string permits_key;
  const std::string holders_prefix;

  mutable std::mutex mu;

  Status validate(const std::string& name, int permits) const {
    Status s = validate_name("DistributedSemaphore", name);
    if (!s.ok()) return s;
    if (permits < 1) {
      return InvalidArgument(core->identity() + ": permits must be at least 1, got " + std::to_string(permits));
    }
    return Status();
  }

  Labels labels() const { return {{"semaphore", core->name()}}; }
  Executor executor() { return core->client().executor(); }

  Status mismatch(const std::string& stored) const {
    return Status(StatusCode::kFailedPrecondition,
                  "permit count mismatch: " + permits_key + " stores " + stored + ", this object asks for " + n_text,
                  Errc::kMismatch);
  }

  // --- acquisition -------------------------------------------------------

  void start(CallOptions options, bool wait, Callback<std::shared_ptr<PermitState>> done) {
    if (!arg_status.ok()) return done(arg_status);
    if (core->closed()) return done(core->closed_status());
    auto a = std::make_shared<SemAcquisition>();
    a->wait = wait;
    a->done = std::move(done);
    a->caller_waits = options.caller_waits;
    auto self = shared_from_this();
    guard_and_begin(self, a, options, DeadlineExceeded("timed out waiting for a permit"),
                    Status(StatusCode::kFailedPrecondition, "closed", Errc::kClosed));
  }

  void with_session(const std::shared_ptr<SemAcquisition>& a, const std::shared_ptr<Session>& s) {
    const std::string key = holders_prefix + lease_hex(s->lease_id()) + "-" + std::to_string(++next_seq);
    {
      std::lock_guard lock(mu);
      if (a->finished) return;
      a->key = key;
      a->session = s;
    }
    guard_session(shared_from_this(), a, *s);
    create(a, key, s->lease_id());
  }

  // One round trip: store the permit count if absent (or check it), create
  // our key, and read the two newest keys and the number of keys.
  //
  // Not sent through the TxnBatcher, whose members must be create-if-absent
  // (safe to send again after their batch failed with an unknown outcome):
  // the put of our key is unconditional. Sent again after an outcome that
  // had applied, it would put the key a second time and report the second
  // revision as the key's create revision (the fencing token, and what the
  // re-checks compare with).
  void create(const std::shared_ptr<SemAcquisition>& a, const std::string& key, int64_t lease) {
    const GetOptions newest{.prefix = true,
                            .limit = 2,
                            .sort_order = SortOrder::kDescend,
                            .sort_target = SortTarget::kCreate,
                            .keys_only = true};
    const Op put_key = Op::put(key, core->client_id(), PutOptions{.lease = lease});
    Txn checked;
    checked.when(Compare::value(permits_key) == n_text)
        .then({put_key, Op::get(holders_prefix, newest)})
        .otherwise(Op::get(permits_key));
    Txn txn;
    txn.when(Compare::absent(permits_key))
        .then({Op::put(permits_key, n_text), put_key, Op::get(holders_prefix, newest)})
        .otherwise(Op::txn(std::move(checked)));
    auto self = shared_from_this();
    // A blocking caller's thread may run this RPC itself.
    auto call = CallAccess::caller_waits(core->client().txn(txn), a->on_caller_thread());
    CallAccess::start_inline(std::move(call), [self, a, key](Result<TxnResponse> r) {
      if (!r.ok()) return self->fail(a, std::move(r).status());
      const GetResponse* holders;
      if (r->succeeded) {
        holders = &r->responses[2].get();
      } else {
        const TxnResponse& inner = r->responses[0].txn();
        if (!inner.succeeded) {
          const auto* stored = inner.responses[0].get().first();
          return self->fail(a, self->mismatch(stored ? stored->value : std::string("nothing")));
        }
        holders = &inner.responses[1].get();
      }
      const int64_t rev = r->header.revision;
      if (!detail::adopt_key(self->mu, *a, a->rev, rev)) return self->remove(key, rev);
      // Our key is the newest: it holds iff there are at most N keys.
      if (holders->count <= self->n) return self->acquired(a, /*nudge=*/false);
      if (!a->wait) return self->finish(a, std::shared_ptr<PermitState>());
      if (holders->count == self->n + 1) return self->watch_first(a, rev, rev + 1);
      self->watch_predecessor(a, holders->kvs.at(1).key, rev + 1);
    });
  }

  // Anchored re-check: at one revision R, our key, the first N keys before
  // it, the one just before it, and whether any key follows it.
  void recheck(const std::shared_ptr<SemAcquisition>& a) {
    const auto mine = detail::current_key(mu, *a);
    if (!mine) return;
    const std::string key = mine->key;
    const int64_t rev = mine->rev;
    const GetOptions first_n{.prefix = true,
                             .limit = n,
                             .sort_order = SortOrder::kAscend,
                             .sort_target = SortTarget::kCreate,
                             .keys_only = true,
                             .max_create_revision = rev - 1};
    const GetOptions last_before{.prefix = true,
                                 .limit = 1,
                                 .sort_order = SortOrder::kDescend,
                                 .sort_target = SortTarget::kCreate,
                                 .keys_only = true,
                                 .max_create_revision = rev - 1};
    const GetOptions any_after{.prefix = true, .limit = 1, .keys_only = true, .min_create_revision = rev + 1};
    auto self = shared_from_this();
    CallAccess::start_inline(
        core->client().txn(Txn().then({Op::get(key), Op::get(holders_prefix, first_n),
                                       Op::get(holders_prefix, last_before), Op::get(holders_prefix, any_after)})),
        [self, a, rev](Result<TxnResponse> r) {
          if (!r.ok()) return self->fail(a, std::move(r).status());
          if (auto gone = detail::own_key_lost(r->responses[0].get().first(), rev)) {
            return self->fail(a, std::move(*gone));  // never report success
          }
          const auto& before = r->responses[1].get().kvs;
          if (static_cast<int64_t>(before.size()) < self->n) {
            return self->acquired(a, /*nudge=*/!r->responses[3].get().kvs.empty());
          }
          const auto* pred = r->responses[2].get().first();
          const int64_t from = r->header.revision + 1;
          if (pred->key == before.back().key) return self->watch_first(a, rev, from);
          self->watch_predecessor(a, pred->key, from);
        });
  }

  // The first waiter: any deletion of a key created before ours admits us.
  // (wait_for_change: at most one wake-up; if the store moved between the
  // read and the watch, one read tells whether fewer than N keys before ours
  // are left.)
  void watch_first(const std::shared_ptr<SemAcquisition>& a, int64_t rev, int64_t from) {
    const GetOptions before{.prefix = true, .limit = n, .keys_only = true, .max_create_revision = rev - 1};
    Watcher w = detail::wait_for_change(
        core, holders_prefix, WatchOptions{.prefix = true, .prev_kv = true, .filter_puts = true}, from,
        [rev](const WatchResponse& r) {
          for (const auto& ev : r.events) {
            // A key after ours (a later waiter giving up) changes nothing.
            if (!ev.prev_kv || ev.prev_kv->create_revision < rev) return true;
          }
          return false;
        },
        detail::Recheck{holders_prefix, before,
                        [n = n](const GetResponse& g) { return static_cast<int64_t>(g.kvs.size()) < n; }},
        waker(a));
    keep_watch(shared_from_this(), a, std::move(w));
  }

  // A later waiter: woken when the key just before ours is deleted (gave up,
  // released) or nudged (admitted, which makes us the first waiter).
  void watch_predecessor(const std::shared_ptr<SemAcquisition>& a, const std::string& pred_key, int64_t from) {
    Watcher w = detail::wait_for_change(core, pred_key, WatchOptions{}, from, detail::any_event,
                                        detail::key_changed(pred_key, from, /*puts=*/true), waker(a));
    keep_watch(shared_from_this(), a, std::move(w));
  }

  // A wake-up: look again from scratch.
  std::function<void()> waker(const std::shared_ptr<SemAcquisition>& a) {
    return [self = shared_from_this(), a] {
      self->core->metrics().add("etcd_recipes_semaphore_wakeups_total", self->labels(), 1);
      asio::post(self->executor(), [self, a] { self->recheck(a); });
    };
  }

  void acquired(const std::shared_ptr<SemAcquisition>& a, bool nudge_next);

  void fail(const std::shared_ptr<SemAcquisition>& a, Status why) {
    if (why.code() == StatusCode::kDeadlineExceeded)
      core->metrics().add("etcd_recipes_semaphore_timeouts_total", labels(), 1);
    finish(a, std::move(why));
  }

  // Ends an acquisition that did not acquire, exactly once; removes the key
  // it may have created, so it never blocks the queue.
  void finish(const std::shared_ptr<SemAcquisition>& a, Result<std::shared_ptr<PermitState>> result) {
    std::string key;
    int64_t rev;
    Registrations registrations;
    {
      std::lock_guard lock(mu);
      if (!finish_locked(*a, registrations)) return;
      key = a->key;
      rev = a->rev;
    }
    registrations.drop_all(executor());
    if (rev != 0) remove(key, rev);
    auto done = std::move(a->done);
    done(result.ok() ? std::move(result)
                     : Result<std::shared_ptr<PermitState>>(core->named(std::move(result).status())));
  }

  // Deletes a key if it is still the one created at `rev` (fire and forget).
  void remove(const std::string& key, int64_t rev) {
    detail::remove_key(core, key, rev, "cleaning up a semaphore key");
  }

  // An admitted waiter tells the waiter behind it (which watches our key)
  // that it is now the first waiter: a put that keeps the key's create
  // revision and lease. Guarded, so it never re-creates a released key;
  // idempotent, so retried when its outcome is unknown.
  void nudge(std::string key, int64_t rev, int64_t lease, int attempt) {
    auto self = shared_from_this();
    if (attempt == 1) core->metrics().add("etcd_recipes_semaphore_nudges_total", labels(), 1);
    CallAccess::start_inline(
        core->client().txn(Txn()
                               .when(Compare::create_revision(key) == rev)
                               .then(Op::put(key, core->client_id(), PutOptions{.lease = lease}))),
        [self, key, rev, lease, attempt](Result<TxnResponse> r) {
          if (!r.ok() && attempt < 3 && detail::retryable(r.status())) return self->nudge(key, rev, lease, attempt + 1);
          if (!r.ok()) {
            self->core->record_error(Status(
                r.status().code(), "telling the next waiter (it waits until we release): " + r.status().message(),
                r.status().reason()));
          }
        });
  }

  Call<int> available_permits() {
    if (!arg_status.ok()) return Call<int>::ready(arg_status, executor());
    auto self = shared_from_this();
    auto call = std::make_shared<Call<TxnResponse>>(core->client().txn(
        Txn().then({Op::get(permits_key), Op::get(holders_prefix, GetOptions{.prefix = true, .count_only = true})})));
    return Call<int>(
        [self, call](CallOptions options, Callback<int> done) {
          if (options.deadline) call->deadline(*options.deadline);
          call->stop_token(options.stop);
          CallAccess::start_inline(std::move(*call), [self, done = std::move(done)](Result<TxnResponse> r) {
            if (!r.ok()) return done(self->core->named(std::move(r).status()));
            const auto* stored = r->responses[0].get().first();
            if (stored && stored->value != self->n_text) return done(self->core->named(self->mismatch(stored->value)));
            const int64_t used = r->responses[1].get().count;
            done(static_cast<int>(std::max<int64_t>(0, self->n - used)));
          });
        },
        executor());
  }
};

class PermitState : public std::enable_shared_from_this<PermitState> {
 public:
  PermitState(std::shared_ptr<SemaphoreState> s, std::string k, int64_t r, std::shared_ptr<Session> session_)
      : sem(std::move(s)), key(std::move(k)), rev(r), session(std::move(session_)) {}

  const std::shared_ptr<SemaphoreState> sem;  // keeps the client and metrics
  const std::string key;
  const int64_t rev;
  const std::shared_ptr<Session> session;  // keeps the lease alive
  const Clock::time_point held_since = Clock::now();

  mutable std::mutex mu;
  bool released = false;
  bool lost = false;
  Status loss;
  std::stop_source stop;
  Subscription lost_sub;
  uint64_t next_listener = 1;
  std::vector<std::pair<uint64_t, std::shared_ptr<std::function<void(const Status&)>>>> listeners;

  void arm() {
    std::weak_ptr<PermitState> weak = shared_from_this();
    Subscription sub = session->on_lost([weak](const Status& why) {
      if (auto p = weak.lock()) p->hold_lost(why);
    });
    std::lock_guard lock(mu);
    if (!released) lost_sub = std::move(sub);
  }

  void hold_lost(const Status& why) {
    std::vector<std::shared_ptr<std::function<void(const Status&)>>> ls;
    std::stop_source s;
    Status status(StatusCode::kAborted, sem->core->identity() + ": permit " + key + " lost: " + why.message(),
                  Errc::kHoldLost);
    {
      std::lock_guard lock(mu);
      if (released || lost) return;
      lost = true;
      loss = status;
      for (auto& [id, l] : listeners) ls.push_back(l);
      s = stop;
    }
    s.request_stop();
    sem->core->metrics().add("etcd_recipes_semaphore_lost_total", sem->labels(), 1);
    sem->core->record_error(Status(StatusCode::kAborted, "permit " + key + " lost: " + why.message(), Errc::kHoldLost));
    auto ex = sem->executor();
    for (auto& l : ls) asio::post(ex, [l, status] { (*l)(status); });
  }

  Subscription on_lost(std::function<void(const Status&)> listener) {
    auto l = std::make_shared<std::function<void(const Status&)>>(std::move(listener));
    std::unique_lock lock(mu);
    if (lost) {
      Status why = loss;
      lock.unlock();
      asio::post(sem->executor(), [l, why] { (*l)(why); });
      return Subscription();
    }
    const uint64_t id = next_listener++;
    listeners.emplace_back(id, l);
    std::weak_ptr<PermitState> weak = shared_from_this();
    return Subscription([weak, id] {
      if (auto p = weak.lock()) {
        std::lock_guard g(p->mu);
        std::erase_if(p->listeners, [id](const auto& e) { return e.first == id; });
      }
    });
  }

  void release(bool caller_waits, Callback<bool> done) {
    bool was_lost;
    std::stop_source s;
    Subscription sub;
    {
      std::lock_guard lock(mu);
      if (released) return done(false);
      released = true;
      was_lost = lost;
      s = stop;
      sub = std::move(lost_sub);
    }
    sub.reset();
    s.request_stop();
    sem->core->metrics().observe("etcd_recipes_semaphore_hold_seconds", sem->labels(), seconds_since(held_since));
    sem->core->metrics().add("etcd_recipes_semaphore_released_total", sem->labels(), 1);
    // The guarded delete, retried while its outcome is unknown.
    detail::release_key(sem->core, key, rev, caller_waits,
                        [self = shared_from_this(), was_lost, done = std::move(done)](Result<bool> r) {
                          if (!r.ok()) return done(self->sem->core->named(std::move(r).status()));
                          done(*r && !was_lost);
                        });
  }

  bool is_held() const {
    std::lock_guard lock(mu);
    return !released && !lost;
  }
};

void SemaphoreState::acquired(const std::shared_ptr<SemAcquisition>& a, bool nudge_next) {
  std::string key;
  int64_t rev;
  std::shared_ptr<Session> s;
  Registrations registrations;
  {
    std::lock_guard lock(mu);
    if (!finish_locked(*a, registrations)) return;
    key = a->key;
    rev = a->rev;
    s = a->session;
  }
  auto permit = std::make_shared<PermitState>(shared_from_this(), key, rev, s);
  permit->arm();
  core->metrics().observe("etcd_recipes_semaphore_wait_seconds", labels(), seconds_since(a->started));
  core->metrics().add("etcd_recipes_semaphore_acquired_total", labels(), 1);
  registrations.drop_all(executor());
  if (nudge_next) nudge(key, rev, s->lease_id(), 1);
  auto done = std::move(a->done);
  done(std::move(permit));
}

}  // namespace detail

// --- Permit ---------------------------------------------------------------------

namespace {

// The release of `s` as a Call. It starts when the Call is consumed, so
// that a blocking wait() lets its RPC run on the caller's thread; a Call
// dropped unconsumed releases when it is dropped (fire and forget): a
// release must happen even then.
Call<bool> release_call(std::shared_ptr<detail::PermitState> s) {
  struct Pending {
    std::shared_ptr<detail::PermitState> state;
    ~Pending() {
      if (state) state->release(false, [](Result<bool>) {});
    }
  };
  auto ex = s->sem->executor();
  auto pending = std::make_shared<Pending>();
  pending->state = std::move(s);
  return Call<bool>(
      [pending](CallOptions options, Callback<bool> done) {
        auto state = std::move(pending->state);
        state->release(options.caller_waits, std::move(done));
      },
      std::move(ex));
}

}  // namespace

Permit& Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    if (state_) state_->release(false, [](Result<bool>) {});
    state_ = std::move(other.state_);
  }
  return *this;
}

Permit::~Permit() {
  if (state_) state_->release(false, [](Result<bool>) {});  // fire and forget
}

bool Permit::is_held() const { return state_ && state_->is_held(); }

bool Permit::release() {
  auto r = release_async().wait();
  return r.ok() && *r;
}

Call<bool> Permit::release_async() {
  auto s = std::move(state_);
  if (!s) return Call<bool>::ready(false, asio::system_executor());
  return release_call(std::move(s));
}

int64_t Permit::fencing_token() const { return state_ ? state_->rev : 0; }
std::string Permit::key() const { return state_ ? state_->key : std::string(); }

std::stop_token Permit::hold_token() const {
  if (!state_) return std::stop_token();
  std::lock_guard lock(state_->mu);
  return state_->stop.get_token();
}

Subscription Permit::on_lost(std::function<void(const Status&)> listener) {
  if (!state_) return Subscription();
  return state_->on_lost(std::move(listener));
}

Call<TxnResponse> Permit::guarded(Txn txn) {
  if (!state_ || !state_->is_held()) {
    return Call<TxnResponse>::ready(
        Status(StatusCode::kFailedPrecondition, "DistributedSemaphore permit: not held", Errc::kHoldLost),
        state_ ? state_->sem->executor() : Executor(asio::system_executor()));
  }
  auto s = state_;
  auto& client = s->sem->core->client();
  auto call = std::make_shared<Call<TxnResponse>>(
      client.txn(Txn().when(Compare::create_revision(s->key) == s->rev).then(Op::txn(std::move(txn)))));
  return Call<TxnResponse>(
      [call, s](CallOptions options, Callback<TxnResponse> done) {
        if (options.deadline) call->deadline(*options.deadline);
        call->stop_token(options.stop);
        CallAccess::start_inline(std::move(*call), [s, done = std::move(done)](Result<TxnResponse> r) {
          if (!r.ok()) return done(std::move(r).status());
          if (!r->succeeded) {
            return done(s->sem->core->named(Status(StatusCode::kFailedPrecondition,
                                                   "permit " + s->key + " is no longer held; nothing was written",
                                                   Errc::kHoldLost)));
          }
          done(TxnResponse(r->responses.at(0).txn()));
        });
      },
      client.executor());
}

// --- DistributedSemaphore ---------------------------------------------------------

DistributedSemaphore::DistributedSemaphore(Client client, std::string name, int permits, RecipeOptions options)
    : state_(
          std::make_shared<detail::SemaphoreState>(std::move(client), std::move(name), permits, std::move(options))) {
  bind_recipe(state_->core);
}

DistributedSemaphore::~DistributedSemaphore() { close(); }

Call<Permit> DistributedSemaphore::acquire() {
  auto s = state_;
  return Call<Permit>(
      [s](CallOptions options, Callback<Permit> done) {
        s->start(options, /*wait=*/true, [done = std::move(done)](Result<std::shared_ptr<detail::PermitState>> r) {
          if (!r.ok()) return done(std::move(r).status());
          done(detail::PermitAccess::make(std::move(*r)));
        });
      },
      s->executor());
}

Call<std::optional<Permit>> DistributedSemaphore::try_acquire() {
  auto s = state_;
  return Call<std::optional<Permit>>(
      [s](CallOptions options, Callback<std::optional<Permit>> done) {
        s->start(options, /*wait=*/false, [done = std::move(done)](Result<std::shared_ptr<detail::PermitState>> r) {
          if (!r.ok()) return done(std::move(r).status());
          if (!*r) return done(std::optional<Permit>());
          done(std::optional<Permit>(detail::PermitAccess::make(std::move(*r))));
        });
      },
      s->executor());
}

Call<int> DistributedSemaphore::available_permits() { return state_->available_permits(); }

Permit DistributedSemaphore::acquire_blocking() { return acquire().wait().value(); }

std::optional<Permit> DistributedSemaphore::try_acquire_until_steady(Deadline deadline) {
  auto r = acquire().deadline(deadline).wait();
  if (r.ok()) return std::move(*r);
  if (r.status().code() == StatusCode::kDeadlineExceeded) return std::nullopt;
  throw Error(r.status());
}

int DistributedSemaphore::permits() const { return state_->n; }
void DistributedSemaphore::close() { state_->core->close(); }

}  // namespace etcd::recipes
