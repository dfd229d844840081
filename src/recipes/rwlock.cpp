#include "etcd/recipes/rwlock.h"

#include "acquisition.h"
#include "keys.h"
#include "txn_batcher.h"

#include <asio/post.hpp>
#include <cstdio>
#include <optional>
#include <set>

namespace etcd::recipes {

using detail::KeyClaims;
using detail::lease_hex;
using detail::retry_later;
using detail::seconds_since;
using detail::transient;
using detail::TxnBatcher;
using etcd::detail::CallAccess;
using Mode = DistributedReadWriteLock::Mode;

namespace {

int idx(Mode m) { return static_cast<int>(m); }
const char* mode_name(Mode m) { return m == Mode::kRead ? "read" : "write"; }

// A write key that was put again after its creation was downgraded: it is a
// read hold now.
bool downgraded(const KeyValue& kv) { return kv.mod_revision != kv.create_revision; }

}  // namespace

namespace detail {

// One acquisition attempt in flight (its registrations: see
// acquisition.h). Fields marked (mu) are guarded by RwLockState::mu.
struct RwAcquisition : AcquisitionBase {
  Mode mode = Mode::kRead;
  Callback<bool> done{};
  bool stale_removed = false;
  std::string key{};  // (mu)
  int64_t rev = 0;    // (mu) create revision of our key, once created
};

class RwLockState : public std::enable_shared_from_this<RwLockState> {
 public:
  RwLockState(Client client, std::string name, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(std::move(client), "DistributedReadWriteLock", name, std::move(options))),
        name_status(validate_name("DistributedReadWriteLock", name)),
        scope(name + "/"),
        prefixes{name + "/read/", name + "/write/"},
        identities{core->identity() + ":read", core->identity() + ":write"},
        batcher(TxnBatcher::for_client(core->client())) {}

  std::shared_ptr<RecipeCore> core;
  const Status name_status;
  // Every key of the lock lives under it (both prefixes).
  const std::string scope;
  const std::string prefixes[2];
  const std::string identities[2];
  // Contender-key creation of many recipes of one client shares Txns.
  const std::shared_ptr<TxnBatcher> batcher;

  enum class Phase { kIdle, kAcquiring, kHeld };

  mutable std::mutex mu;
  // One acquisition or hold at a time: the two sides of one object exclude
  // each other (upgrade is refused, downgrade is a transition).
  Phase phase = Phase::kIdle;
  Mode mode = Mode::kRead;
  std::shared_ptr<RwAcquisition> acq;
  std::shared_ptr<Session> session;
  std::string hold_key;
  int64_t hold_rev = 0;
  uint64_t hold_id = 0;
  bool lost = false;
  bool downgrading = false;
  Clock::time_point held_since{};
  Subscription hold_lost_sub;
  std::string last_key[2];
  std::stop_source hold_stop[2];
  int64_t claimed_lease = 0;
  std::set<std::string> claimed;
  uint64_t next_listener = 1;
  std::vector<std::pair<uint64_t, std::shared_ptr<std::function<void(const Status&)>>>> lost_listeners[2];

  Labels labels(Mode m) const { return {{"lock", core->name()}, {"mode", mode_name(m)}}; }

  Status named(Mode m, Status status) const {
    if (status.ok()) return status;
    Status out(status.code(), identities[idx(m)] + ": " + status.message(), status.reason());
    return std::move(out).with_revision(status.revision());
  }

  Executor executor() { return core->client().executor(); }

  // --- acquisition -------------------------------------------------------

  void start(Mode m, CallOptions options, bool wait, Callback<bool> done) {
    if (!name_status.ok()) return done(name_status);
    if (core->closed()) return done(Closed(identities[idx(m)]));
    auto a = std::make_shared<RwAcquisition>();
    a->mode = m;
    a->wait = wait;
    a->done = std::move(done);
    a->caller_waits = options.caller_waits;
    std::optional<Status> refused;
    {
      std::lock_guard lock(mu);
      if (phase != Phase::kIdle) {
        if (mode == m) {
          refused =
              Status(StatusCode::kFailedPrecondition, std::string("this object already holds or is acquiring the ") +
                                                          mode_name(m) + " lock (it is not recursive)");
        } else if (m == Mode::kWrite) {
          refused = Status(StatusCode::kFailedPrecondition,
                           "upgrade refused: this object holds (or is acquiring) the read lock; release it before "
                           "taking the write lock (an in-place upgrade would deadlock two readers that both upgrade)");
        } else {
          refused = Status(StatusCode::kFailedPrecondition,
                           "this object holds (or is acquiring) the write lock; use downgrade() to turn it into a "
                           "read hold");
        }
      } else {
        phase = Phase::kAcquiring;
        mode = m;
        acq = a;
      }
    }
    if (refused) return a->done(named(m, std::move(*refused)));
    auto self = shared_from_this();
    guard_and_begin(self, a, options, DeadlineExceeded("timed out waiting for the lock"),
                    Status(StatusCode::kFailedPrecondition, "closed", Errc::kClosed));
  }

  bool claim_key(const std::string& key, int64_t lease) {
    std::vector<std::string> dropped;
    bool ok;
    {
      std::lock_guard lock(mu);
      if (claimed_lease != lease) {
        dropped.assign(claimed.begin(), claimed.end());  // an old session: its keys are history
        claimed.clear();
        claimed_lease = lease;
      }
      ok = claimed.count(key) != 0;
      if (!ok && KeyClaims::claim(key)) {
        claimed.insert(key);
        ok = true;
      }
    }
    for (auto& k : dropped) KeyClaims::unclaim(k);
    return ok;
  }

  void with_session(const std::shared_ptr<RwAcquisition>& a, const std::shared_ptr<Session>& s) {
    const std::string key = prefixes[idx(a->mode)] + lease_hex(s->lease_id());
    {
      std::lock_guard lock(mu);
      if (a->finished) return;
      session = s;
      a->key = key;
    }
    if (!claim_key(key, s->lease_id())) {
      return fail(a, Status(StatusCode::kFailedPrecondition,
                            "another DistributedReadWriteLock of this process uses key " + key +
                                " (the same name on the same session); give it its own session"));
    }
    guard_session(shared_from_this(), a, *s);
    create(a, s->lease_id());
  }

  // The nearest conflicting key created before `rev`: for a reader the last
  // writer (a downgraded write key is a reader), for a writer the last key
  // of either kind.
  static std::optional<std::string> predecessor(Mode m, int64_t rev, const std::vector<KeyValue>& writers,
                                                const std::vector<KeyValue>* readers) {
    const KeyValue* best = nullptr;
    for (const auto& kv : writers) {  // newest first
      if (kv.create_revision >= rev) continue;
      if (m == Mode::kRead && downgraded(kv)) continue;
      best = &kv;
      break;
    }
    if (readers) {
      for (const auto& kv : *readers) {
        if (kv.create_revision >= rev) continue;
        if (!best || kv.create_revision > best->create_revision) best = &kv;
        break;
      }
    }
    if (!best) return std::nullopt;
    return best->key;
  }

  // One round trip: create our key unless it exists, and read the newest
  // keys that can conflict with it. Create-if-absent, and every key it reads
  // or writes lives under `scope`: it may share a batch with the creations
  // of other names (never with another contender of this lock).
  void create(const std::shared_ptr<RwAcquisition>& a, int64_t lease) {
    std::string key;
    {
      std::lock_guard lock(mu);
      if (a->finished) return;
      key = a->key;
    }
    const GetOptions newest{.prefix = true,
                            .limit = 2,
                            .sort_order = SortOrder::kDescend,
                            .sort_target = SortTarget::kCreate,
                            .keys_only = true};
    const Op put = Op::put(key, core->client_id(), PutOptions{.lease = lease});
    Txn queued;
    queued.when(Compare::absent(key)).then({put, Op::get(prefixes[idx(Mode::kWrite)], newest)}).otherwise(Op::get(key));
    if (a->mode == Mode::kWrite) queued.then(Op::get(prefixes[idx(Mode::kRead)], newest));
    // Fast path: no key that could conflict (for a reader no writer, for a
    // writer no key at all), so ours holds at once and nothing needs to be
    // read back (a range read in the branch costs etcd 3.4 measurably more).
    const std::string& conflicting = a->mode == Mode::kRead ? prefixes[idx(Mode::kWrite)] : scope;
    Txn txn;
    txn.when({Compare::create_revision(conflicting).with_prefix() == 0, Compare::absent(key)})
        .then(put)
        .otherwise(Op::txn(std::move(queued)));
    auto self = shared_from_this();
    batcher->submit(std::move(txn), scope, a->on_caller_thread(), [self, a, key, lease](Result<TxnResponse> outer) {
      if (!outer.ok()) {
        // Create-if-absent: a transient failure is retried for as long as
        // the acquisition lasts (a key created by an attempt whose outcome
        // was unknown is replaced below, as a stale one).
        if (transient(outer.status())) return retry_later(self, a, [self, a, lease] { self->create(a, lease); });
        return self->fail(a, std::move(outer).status());
      }
      if (outer->succeeded) {
        const int64_t rev = outer->header.revision;
        if (!detail::adopt_key(self->mu, *a, a->rev, rev)) return self->remove(key, rev);
        return self->acquired(a);
      }
      const TxnResponse* r = &outer->responses.at(0).txn();
      if (!r->succeeded) {
        // A key of ours from an earlier acquisition whose release did not get
        // through: remove it (guarded) and create a fresh one, so that its
        // create revision is ours and a write key is never mistaken for a
        // downgraded one.
        const auto* stale = r->responses[0].get().first();
        if (a->stale_removed || !stale) {
          return self->fail(a, Status(StatusCode::kAborted, "could not replace the stale key " + key));
        }
        a->stale_removed = true;
        const int64_t stale_rev = stale->create_revision;
        return CallAccess::start_inline(self->core->client().txn(detail::delete_if_created_at(key, stale_rev)),
                                        [self, a, lease](Result<TxnResponse> d) {
                                          if (!d.ok()) return self->fail(a, std::move(d).status());
                                          self->create(a, lease);
                                        });
      }
      const int64_t rev = outer->header.revision;
      if (!detail::adopt_key(self->mu, *a, a->rev, rev)) return self->remove(key, rev);
      const auto* readers = a->mode == Mode::kWrite ? &r->responses[2].get().kvs : nullptr;
      auto pred = predecessor(a->mode, rev, r->responses[1].get().kvs, readers);
      if (!pred) return self->acquired(a);
      if (!a->wait) return self->finish(a, false);
      self->watch(a, *pred, rev + 1);
    });
  }

  // Anchored re-check: read our key and the nearest conflicting predecessor
  // at one revision R, then wait for a change of only that predecessor from
  // R+1.
  void recheck(const std::shared_ptr<RwAcquisition>& a) {
    const auto mine = detail::current_key(mu, *a);
    if (!mine) return;
    const std::string key = mine->key;
    const int64_t rev = mine->rev;
    const GetOptions before{.prefix = true,
                            .limit = 2,
                            .sort_order = SortOrder::kDescend,
                            .sort_target = SortTarget::kCreate,
                            .keys_only = true,
                            .max_create_revision = rev - 1};
    Txn txn;
    txn.then({Op::get(key), Op::get(prefixes[idx(Mode::kWrite)], before)});
    if (a->mode == Mode::kWrite) txn.then(Op::get(prefixes[idx(Mode::kRead)], before));
    auto self = shared_from_this();
    CallAccess::start_inline(core->client().txn(txn), [self, a, rev](Result<TxnResponse> r) {
      if (!r.ok()) return self->fail(a, std::move(r).status());
      if (auto gone = detail::own_key_lost(r->responses[0].get().first(), rev)) {
        return self->fail(a, std::move(*gone));  // never report success
      }
      const auto* readers = a->mode == Mode::kWrite ? &r->responses[2].get().kvs : nullptr;
      auto pred = predecessor(a->mode, rev, r->responses[1].get().kvs, readers);
      if (!pred) return self->acquired(a);
      self->watch(a, *pred, r->header.revision + 1);
    });
  }

  // Waits for the predecessor to change (wait_for_change: at most one
  // wake-up; one read if the store moved between the read and the watch).
  void watch(const std::shared_ptr<RwAcquisition>& a, const std::string& pred_key, int64_t from) {
    auto self = shared_from_this();
    // A writer waits for the predecessor's deletion only; a reader also for a
    // put (the predecessor write key being downgraded).
    const bool writer = a->mode == Mode::kWrite;
    Watcher w = detail::wait_for_change(core, pred_key, WatchOptions{.filter_puts = writer}, from, detail::any_event,
                                        detail::key_changed(pred_key, from, /*puts=*/!writer), [self, a] {
                                          self->core->metrics().add("etcd_recipes_rwlock_wakeups_total",
                                                                    self->labels(a->mode), 1);
                                          asio::post(self->executor(), [self, a] { self->recheck(a); });
                                        });
    keep_watch(self, a, std::move(w));
  }

  void acquired(const std::shared_ptr<RwAcquisition>& a) {
    std::shared_ptr<Session> s;
    uint64_t id;
    Registrations registrations;
    {
      std::lock_guard lock(mu);
      if (!finish_locked(*a, registrations)) return;
      if (acq == a) acq.reset();
      phase = Phase::kHeld;
      mode = a->mode;
      lost = false;
      hold_key = a->key;
      hold_rev = a->rev;
      id = ++hold_id;
      last_key[idx(a->mode)] = a->key;
      hold_stop[idx(a->mode)] = std::stop_source();
      held_since = Clock::now();
      s = session;
    }
    std::weak_ptr<RwLockState> weak = shared_from_this();
    Subscription sub = s->on_lost([weak, id](const Status& why) {
      if (auto self = weak.lock()) self->hold_lost(id, why);
    });
    {
      std::lock_guard lock(mu);
      if (phase == Phase::kHeld && hold_id == id) hold_lost_sub = std::move(sub);
    }
    core->metrics().observe("etcd_recipes_rwlock_wait_seconds", labels(a->mode), seconds_since(a->started));
    core->metrics().add("etcd_recipes_rwlock_acquired_total", labels(a->mode), 1);
    registrations.drop_all(executor());
    auto done = std::move(a->done);
    done(true);
  }

  void fail(const std::shared_ptr<RwAcquisition>& a, Status why) {
    if (why.code() == StatusCode::kDeadlineExceeded) {
      core->metrics().add("etcd_recipes_rwlock_timeouts_total", labels(a->mode), 1);
    }
    finish(a, std::move(why));
  }

  // Ends an acquisition that did not acquire, exactly once; removes the key
  // it may have created, so it never blocks the queue.
  void finish(const std::shared_ptr<RwAcquisition>& a, Result<bool> result) {
    std::string key;
    int64_t rev;
    Registrations registrations;
    {
      std::lock_guard lock(mu);
      if (!finish_locked(*a, registrations)) return;
      if (acq == a) {
        acq.reset();
        phase = Phase::kIdle;
      }
      key = a->key;
      rev = a->rev;
    }
    registrations.drop_all(executor());
    if (rev != 0) remove(key, rev);
    auto done = std::move(a->done);
    done(result.ok() ? Result<bool>(*result) : Result<bool>(named(a->mode, std::move(result).status())));
  }

  // Deletes our key if it is still the one we created (fire and forget).
  void remove(const std::string& key, int64_t rev) { detail::remove_key(core, key, rev, "cleaning up the lock key"); }

  // --- the hold ------------------------------------------------------------

  void hold_lost(uint64_t id, const Status& why) {
    std::vector<std::shared_ptr<std::function<void(const Status&)>>> listeners;
    std::stop_source stop;
    Mode m;
    {
      std::lock_guard lock(mu);
      if (phase != Phase::kHeld || hold_id != id || lost) return;
      lost = true;
      m = mode;
      for (auto& [lid, l] : lost_listeners[idx(m)]) listeners.push_back(l);
      stop = hold_stop[idx(m)];
    }
    stop.request_stop();
    core->metrics().add("etcd_recipes_rwlock_lost_total", labels(m), 1);
    core->record_error(
        Status(StatusCode::kAborted, std::string(mode_name(m)) + " hold lost: " + why.message(), Errc::kHoldLost));
    Status status(StatusCode::kAborted, identities[idx(m)] + ": lock hold lost: " + why.message(), Errc::kHoldLost);
    for (auto& l : listeners) asio::post(executor(), [l, status] { (*l)(status); });
  }

  void release(Mode m, bool caller_waits, Callback<bool> done) {
    std::string key;
    int64_t rev;
    bool was_lost;
    std::stop_source stop;
    Subscription sub;
    {
      std::lock_guard lock(mu);
      if (phase != Phase::kHeld || mode != m) return done(false);
      if (downgrading) {
        return done(named(m, Status(StatusCode::kFailedPrecondition, "a downgrade is in progress")));
      }
      key = hold_key;
      rev = hold_rev;
      was_lost = lost;
      phase = Phase::kIdle;
      hold_rev = 0;
      stop = hold_stop[idx(m)];
      sub = std::move(hold_lost_sub);
      core->metrics().observe("etcd_recipes_rwlock_hold_seconds", labels(m), seconds_since(held_since));
    }
    sub.reset();
    stop.request_stop();
    // The guarded delete, retried while its outcome is unknown.
    detail::release_key(core, key, rev, caller_waits,
                        [self = shared_from_this(), m, was_lost, done = std::move(done)](Result<bool> r) {
                          if (!r.ok()) return done(self->named(m, std::move(r).status()));
                          done(*r && !was_lost);
                        });
  }

  // --- downgrade -----------------------------------------------------------

  void downgrade(Callback<void> done) {
    std::string key;
    int64_t rev;
    int64_t lease;
    uint64_t id;
    {
      std::lock_guard lock(mu);
      if (phase != Phase::kHeld || mode != Mode::kWrite) {
        return done(
            named(Mode::kWrite, Status(StatusCode::kFailedPrecondition, "downgrade: the write lock is not held")));
      }
      if (lost) {
        return done(
            named(Mode::kWrite, Status(StatusCode::kAborted, "downgrade: the write hold was lost", Errc::kHoldLost)));
      }
      if (downgrading) {
        return done(named(Mode::kWrite,
                          Status(StatusCode::kFailedPrecondition, "downgrade: a downgrade is already in progress")));
      }
      downgrading = true;
      key = hold_key;
      rev = hold_rev;
      lease = session->lease_id();
      id = hold_id;
    }
    downgrade_attempt(key, rev, lease, id, 1, std::move(done));
  }

  void downgrade_attempt(std::string key, int64_t rev, int64_t lease, uint64_t id, int attempt, Callback<void> done) {
    auto self = shared_from_this();
    // Re-purpose the write key as the read hold: the same key keeps its
    // create revision (its place in the queue); the put changes its mod
    // revision, which marks it as downgraded and wakes the readers that wait
    // for it (writers ignore puts). Idempotent, so retried when unknown.
    CallAccess::start_inline(
        core->client().txn(Txn()
                               .when(Compare::create_revision(key) == rev)
                               .then(Op::put(key, core->client_id(), PutOptions{.lease = lease}))),
        [self, key, rev, lease, id, attempt, done = std::move(done)](Result<TxnResponse> r) mutable {
          if (!r.ok() && attempt < 3 && detail::retryable(r.status())) {
            return self->downgrade_attempt(key, rev, lease, id, attempt + 1, std::move(done));
          }
          if (r.ok() && !r->succeeded) {
            {
              std::lock_guard lock(self->mu);
              self->downgrading = false;
            }
            self->hold_lost(id, Status(StatusCode::kNotFound, "the write key is gone", Errc::kKeyNotFound));
            return done(self->named(
                Mode::kWrite, Status(StatusCode::kAborted, "downgrade: the write hold was lost; nothing was changed",
                                     Errc::kHoldLost)));
          }
          // Applied, or (after retries) unknown: the hold is a read hold
          // from now on either way. If the put did not land, the key still
          // reads as a writer: later readers wait until we release, which is
          // safe.
          if (!r.ok()) {
            self->core->record_error(Status(r.status().code(),
                                            "downgrade: outcome unknown, holding as a reader: " + r.status().message(),
                                            r.status().reason()));
          }
          std::stop_source write_stop;
          bool switched = false;
          bool was_lost = false;
          {
            std::lock_guard lock(self->mu);
            self->downgrading = false;
            if (self->phase == Phase::kHeld && self->mode == Mode::kWrite && self->hold_id == id) {
              self->mode = Mode::kRead;
              self->last_key[idx(Mode::kRead)] = key;
              write_stop = self->hold_stop[idx(Mode::kWrite)];
              self->hold_stop[idx(Mode::kRead)] = std::stop_source();
              was_lost = self->lost;
              switched = true;
            }
          }
          if (!switched) {
            return done(self->named(Mode::kWrite,
                                    Status(StatusCode::kAborted, "downgrade: the write hold ended", Errc::kHoldLost)));
          }
          write_stop.request_stop();  // the write hold ended
          self->core->metrics().add("etcd_recipes_rwlock_downgrades_total", self->labels(Mode::kWrite), 1);
          // close() could not release while we were downgrading.
          if (self->core->closed()) self->release(Mode::kRead, false, [](Result<bool>) {});
          if (was_lost) {
            return done(self->named(Mode::kRead,
                                    Status(StatusCode::kAborted, "downgrade: the hold was lost", Errc::kHoldLost)));
          }
          done(Result<void>());
        });
  }

  // --- accessors --------------------------------------------------------------

  bool is_locked(Mode m) const {
    std::lock_guard lock(mu);
    return phase == Phase::kHeld && mode == m && !lost && !(m == Mode::kWrite && downgrading);
  }
  int64_t fencing_token(Mode m) const {
    std::lock_guard lock(mu);
    return phase == Phase::kHeld && mode == m ? hold_rev : 0;
  }

  Call<TxnResponse> guarded(Mode m, Txn txn) {
    std::string key;
    int64_t rev = 0;
    {
      std::lock_guard lock(mu);
      if (phase == Phase::kHeld && mode == m && !lost && !(m == Mode::kWrite && downgrading)) {
        key = hold_key;
        rev = hold_rev;
      }
    }
    auto& client = core->client();
    if (rev == 0) {
      return Call<TxnResponse>::ready(named(m, Status(StatusCode::kFailedPrecondition, "not held", Errc::kHoldLost)),
                                      client.executor());
    }
    Txn outer;
    outer.when(Compare::create_revision(key) == rev);
    // A write hold also requires the key not to be downgraded.
    if (m == Mode::kWrite) outer.when(Compare::mod_revision(key) == rev);
    outer.then(Op::txn(std::move(txn)));
    auto call = std::make_shared<Call<TxnResponse>>(client.txn(outer));
    auto self = shared_from_this();
    return Call<TxnResponse>(
        [call, self, m](CallOptions options, Callback<TxnResponse> done) {
          if (options.deadline) call->deadline(*options.deadline);
          call->stop_token(options.stop);
          CallAccess::start_inline(std::move(*call), [self, m, done = std::move(done)](Result<TxnResponse> r) {
            if (!r.ok()) return done(std::move(r).status());
            if (!r->succeeded) {
              return done(self->named(
                  m, Status(StatusCode::kFailedPrecondition,
                            std::string("the ") + mode_name(m) + " lock is no longer held; nothing was written",
                            Errc::kHoldLost)));
            }
            done(TxnResponse(r->responses.at(0).txn()));
          });
        },
        client.executor());
  }

  Subscription on_lost(Mode m, std::function<void(const Status&)> listener) {
    std::lock_guard lock(mu);
    const uint64_t id = next_listener++;
    lost_listeners[idx(m)].emplace_back(id, std::make_shared<std::function<void(const Status&)>>(std::move(listener)));
    std::weak_ptr<RwLockState> weak = shared_from_this();
    return Subscription([weak, m, id] {
      if (auto s = weak.lock()) {
        std::lock_guard l(s->mu);
        std::erase_if(s->lost_listeners[idx(m)], [id](const auto& p) { return p.first == id; });
      }
    });
  }

  void close() {
    if (core->closed()) return;
    core->close();  // wakes a parked acquisition with kClosed
    std::optional<Mode> held;
    {
      std::lock_guard lock(mu);
      if (phase == Phase::kHeld) held = mode;
    }
    if (held) release(*held, false, [](Result<bool>) {});  // fire and forget
    std::set<std::string> keys;
    {
      std::lock_guard lock(mu);
      keys.swap(claimed);
    }
    for (auto& k : keys) KeyClaims::unclaim(k);
  }
};

}  // namespace detail

// --- LockView -----------------------------------------------------------------

Call<void> DistributedReadWriteLock::LockView::acquire() {
  auto s = state_;
  const Mode m = mode_;
  return Call<void>(
      [s, m](CallOptions options, Callback<void> done) {
        s->start(m, options, /*wait=*/true, [done = std::move(done)](Result<bool> r) {
          done(r.ok() ? Result<void>() : Result<void>(std::move(r).status()));
        });
      },
      s->executor());
}

Call<bool> DistributedReadWriteLock::LockView::try_acquire() {
  auto s = state_;
  const Mode m = mode_;
  return Call<bool>(
      [s, m](CallOptions options, Callback<bool> done) { s->start(m, options, /*wait=*/false, std::move(done)); },
      s->executor());
}

Call<bool> DistributedReadWriteLock::LockView::release() {
  auto s = state_;
  const Mode m = mode_;
  return Call<bool>(
      [s, m](CallOptions options, Callback<bool> done) { s->release(m, options.caller_waits, std::move(done)); },
      s->executor());
}

void DistributedReadWriteLock::LockView::lock() { acquire().wait().value(); }

bool DistributedReadWriteLock::LockView::try_lock() {
  auto r = try_acquire().wait();
  return r.ok() && *r;
}

bool DistributedReadWriteLock::LockView::try_lock_until_steady(Deadline deadline) {
  auto r = acquire().deadline(deadline).wait();
  if (r.ok()) return true;
  if (r.status().code() != StatusCode::kDeadlineExceeded) state_->core->record_error(r.status());
  return false;
}

bool DistributedReadWriteLock::LockView::unlock() noexcept {
  try {
    auto r = release().wait();
    return r.ok() && *r;
  } catch (...) {
    return false;
  }
}

bool DistributedReadWriteLock::LockView::is_locked() const { return state_->is_locked(mode_); }
int64_t DistributedReadWriteLock::LockView::fencing_token() const { return state_->fencing_token(mode_); }

std::string DistributedReadWriteLock::LockView::key() const {
  std::lock_guard lock(state_->mu);
  return state_->last_key[idx(mode_)];
}

std::stop_token DistributedReadWriteLock::LockView::hold_token() const {
  std::lock_guard lock(state_->mu);
  return state_->hold_stop[idx(mode_)].get_token();
}

Subscription DistributedReadWriteLock::LockView::on_lost(std::function<void(const Status&)> listener) {
  return state_->on_lost(mode_, std::move(listener));
}

Call<TxnResponse> DistributedReadWriteLock::LockView::guarded(Txn txn) {
  return state_->guarded(mode_, std::move(txn));
}

const std::string& DistributedReadWriteLock::LockView::name() const { return state_->core->name(); }
const std::string& DistributedReadWriteLock::LockView::identity() const { return state_->identities[idx(mode_)]; }
ConnectionState DistributedReadWriteLock::LockView::state() const { return state_->core->state(); }
Subscription DistributedReadWriteLock::LockView::on_state_change(std::function<void(ConnectionState)> listener) {
  return state_->core->on_state_change(std::move(listener));
}
std::vector<Status> DistributedReadWriteLock::LockView::errors() const { return state_->core->errors(); }
Subscription DistributedReadWriteLock::LockView::on_error(std::function<void(const Status&)> listener) {
  return state_->core->on_error(std::move(listener));
}
void DistributedReadWriteLock::LockView::close() { state_->close(); }

// --- DistributedReadWriteLock -----------------------------------------------------

DistributedReadWriteLock::DistributedReadWriteLock(Client client, std::string name, RecipeOptions options)
    : state_(std::make_shared<detail::RwLockState>(std::move(client), std::move(name), std::move(options))),
      read_(state_, Mode::kRead),
      write_(state_, Mode::kWrite) {
  bind_recipe(state_->core);
}

DistributedReadWriteLock::~DistributedReadWriteLock() { close(); }

Call<void> DistributedReadWriteLock::downgrade() {
  auto s = state_;
  return Call<void>([s](CallOptions, Callback<void> done) { s->downgrade(std::move(done)); }, s->executor());
}

void DistributedReadWriteLock::close() { state_->close(); }

}  // namespace etcd::recipes
