#include "etcd/recipes/mutex.h"

#include "acquisition.h"
#include "keys.h"
#include "txn_batcher.h"

#include <asio/post.hpp>
#include <cstdio>
#include <set>

namespace etcd::recipes {

using detail::KeyClaims;
using detail::lease_hex;
using detail::seconds_since;
using detail::transient;
using detail::TxnBatcher;
using etcd::detail::CallAccess;

namespace detail {

// One acquisition attempt in flight (its registrations: see
// acquisition.h; finish() takes them all out, which breaks every cycle).
struct Acquisition : AcquisitionBase {
  Callback<bool> done;
};

class MutexState : public std::enable_shared_from_this<MutexState> {
 public:
  MutexState(Client client, std::string name, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(std::move(client), "DistributedMutex", name, std::move(options))),
        name_status(validate_name("DistributedMutex", name)),
        prefix(name + "/"),
        batcher(TxnBatcher::for_client(core->client())) {}

  std::shared_ptr<RecipeCore> core;
  const Status name_status;
  const std::string prefix;
  // Contender-key creation of many mutexes of one client shares Txns.
  const std::shared_ptr<TxnBatcher> batcher;

  // kReleasing: the delete of the last hold's key is in flight. A new
  // acquisition must not start yet: it would find that key, adopt it, and
  // lose it to the delete.
  enum class Phase { kIdle, kAcquiring, kHeld, kReleasing };

  mutable std::mutex mu;
  Phase phase = Phase::kIdle;
  std::shared_ptr<Acquisition> acq;
  std::shared_ptr<Session> session;
  std::string my_key;
  int64_t my_rev = 0;
  bool claimed = false;
  bool lost = false;
  std::stop_source hold_stop;
  Clock::time_point held_since{};
  Subscription hold_lost_sub;
  uint64_t next_listener = 1;
  std::vector<std::pair<uint64_t, std::shared_ptr<std::function<void(const Status&)>>>> lost_listeners;

  Labels labels() const { return {{"lock", core->name()}}; }

  // --- acquisition -------------------------------------------------------

  void start(CallOptions options, bool wait, Callback<bool> done) {
    if (!name_status.ok()) return done(name_status);
    if (core->closed()) return done(core->closed_status());
    auto a = std::make_shared<Acquisition>();
    a->wait = wait;
    a->done = std::move(done);
    a->caller_waits = options.caller_waits;
    {
      std::lock_guard lock(mu);
      if (phase == Phase::kReleasing) {
        return a->done(core->named(Status(StatusCode::kFailedPrecondition,
                                          "this DistributedMutex is still releasing its last hold; acquire "
                                          "again once release() has completed")));
      }
      if (phase != Phase::kIdle) {
        return a->done(core->named(Status(StatusCode::kFailedPrecondition,
                                          "this DistributedMutex already holds or is acquiring the lock "
                                          "(it is not recursive)")));
      }
      phase = Phase::kAcquiring;
      acq = a;
    }
    auto self = shared_from_this();
    guard_and_begin(self, a, options, DeadlineExceeded("timed out waiting for the lock"), core->closed_status());
  }

  void with_session(const std::shared_ptr<Acquisition>& a, const std::shared_ptr<Session>& s) {
    const std::string key = prefix + lease_hex(s->lease_id());
    {
      std::lock_guard lock(mu);
      if (a->finished) return;
      session = s;
    }
    if (!claimed_or_claim(key)) {
      return fail(a, core->named(Status(StatusCode::kFailedPrecondition,
                                        "another DistributedMutex of this process uses key " + key +
                                            " (the same name on the same session); give it its own session")));
    }
    auto self = shared_from_this();
    guard_session(self, a, *s);
    // One round trip. When nothing is queued under the prefix, our key is
    // the only one and so the lowest: create it, no owner read needed (a
    // Txn with a range read in its branch costs etcd 3.4 measurably more).
    // Otherwise create ours unless it exists, and read the owner.
    const GetOptions first_created{
        .prefix = true, .limit = 1, .sort_order = SortOrder::kAscend, .sort_target = SortTarget::kCreate};
    const Op create = Op::put(key, core->client_id(), PutOptions{.lease = s->lease_id()});
    Txn queued;
    queued.when(Compare::absent(key))
        .then({create, Op::get(prefix, first_created)})
        .otherwise({Op::get(key), Op::get(prefix, first_created)});
    Txn txn;
    txn.when(Compare::create_revision(prefix).with_prefix() == 0).then(create).otherwise(Op::txn(std::move(queued)));
    batcher->submit(std::move(txn), prefix, a->on_caller_thread(), [self, a, s, key](Result<TxnResponse> r) {
      if (!r.ok()) {
        // Creating our key is idempotent (create-if-absent): a transient
        // failure is retried for as long as the acquisition lasts.
        if (transient(r.status())) return retry_later(self, a, [self, a, s] { self->with_session(a, s); });
        return self->fail(a, std::move(r).status());
      }
      int64_t rev = 0;
      bool owner = false;
      if (r->succeeded) {  // the prefix was empty: ours is the only key
        rev = r->header.revision;
        owner = true;
      } else {
        const TxnResponse& inner = r->responses.at(0).txn();
        if (inner.succeeded) {
          rev = r->header.revision;
        } else if (const auto* kv = inner.responses[0].get().first()) {
          rev = kv->create_revision;
        }
        const auto* first = inner.responses[1].get().first();
        owner = rev != 0 && first && first->create_revision == rev;
      }
      {
        std::unique_lock lock(self->mu);
        if (a->finished) {
          // Timed out, cancelled or closed while the key was being created:
          // the key must not stay behind and block the queue.
          lock.unlock();
          if (rev != 0) self->remove(key, rev);
          return;
        }
        self->my_key = key;
        self->my_rev = rev;
      }
      if (rev == 0) return self->fail(a, Status(StatusCode::kAborted, "lock key vanished", Errc::kHoldLost));
      if (owner) return self->acquired(a);
      if (!a->wait) return self->finish(a, false);
      self->wait_for_predecessor(a);
    });
  }

  bool claimed_or_claim(const std::string& key) {
    std::lock_guard lock(mu);
    if (claimed && my_key == key) return true;
    if (claimed) {
      KeyClaims::unclaim(my_key);  // a new session: the old key is history
      claimed = false;
    }
    if (!KeyClaims::claim(key)) return false;
    claimed = true;
    my_key = key;
    return true;
  }

  // Anchored wait: read (my key, the last key created before mine) at one
  // revision R, then wait for a change of only that predecessor from R+1.
  void wait_for_predecessor(const std::shared_ptr<Acquisition>& a) {
    std::string key;
    int64_t rev;
    {
      std::lock_guard lock(mu);
      if (a->finished) return;
      key = my_key;
      rev = my_rev;
    }
    const GetOptions predecessor{.prefix = true,
                                 .limit = 1,
                                 .sort_order = SortOrder::kDescend,
                                 .sort_target = SortTarget::kCreate,
                                 .max_create_revision = rev - 1};
    auto self = shared_from_this();
    CallAccess::start_inline(
        CallAccess::caller_waits(core->client().txn(Txn().then({Op::get(key), Op::get(prefix, predecessor)})),
                                 a->on_caller_thread()),
        [self, a, rev](Result<TxnResponse> r) {
          if (!r.ok()) {
            if (transient(r.status())) return retry_later(self, a, [self, a] { self->wait_for_predecessor(a); });
            return self->fail(a, std::move(r).status());
          }
          if (auto gone = detail::own_key_lost(r->responses[0].get().first(), rev)) {
            return self->fail(a, std::move(*gone));  // never report success
          }
          const auto* pred = r->responses[1].get().first();
          if (!pred) return self->acquired(a);
          self->watch_predecessor(a, pred->key, r->header.revision + 1);
        });
  }

  // Waits for the predecessor's deletion (wait_for_change: at most one
  // wake-up; one read if the store moved between the read and the watch).
  void watch_predecessor(const std::shared_ptr<Acquisition>& a, const std::string& pred_key, int64_t from) {
    auto self = shared_from_this();
    std::weak_ptr<Acquisition> wa = a;
    Watcher w =
        detail::wait_for_change(core, pred_key, WatchOptions{.filter_puts = true}, from, detail::any_event,
                                detail::key_changed(pred_key, from, /*puts=*/false), [self, wa] {
                                  auto acq_ptr = wa.lock();
                                  if (!acq_ptr) return;
                                  // Deleted (or the watch failed): look again from scratch.
                                  self->core->metrics().add("etcd_recipes_lock_wakeups_total", self->labels(), 1);
                                  self->wait_for_predecessor(acq_ptr);
                                });
    keep_watch(self, a, std::move(w));
  }

  void acquired(const std::shared_ptr<Acquisition>& a) {
    std::shared_ptr<Session> s;
    {
      std::lock_guard lock(mu);
      if (a->finished) return;
      phase = Phase::kHeld;
      lost = false;
      hold_stop = std::stop_source();
      held_since = Clock::now();
      s = session;
    }
    std::weak_ptr<MutexState> weak = shared_from_this();
    auto sub = s->on_lost([weak](const Status& why) {
      if (auto self = weak.lock()) self->hold_lost(why);
    });
    {
      std::lock_guard lock(mu);
      hold_lost_sub = std::move(sub);
    }
    core->metrics().observe("etcd_recipes_lock_wait_seconds", labels(), seconds_since(a->started));
    core->metrics().add("etcd_recipes_lock_acquired_total", labels(), 1);
    finish(a, true);
  }

  void fail(const std::shared_ptr<Acquisition>& a, Status why) {
    if (why.code() == StatusCode::kDeadlineExceeded) {
      core->metrics().add("etcd_recipes_lock_timeouts_total", labels(), 1);
    }
    finish(a, std::move(why));
  }

  // Ends an acquisition exactly once. A failed or declined one removes the
  // key it may have created, so it never blocks the queue.
  void finish(const std::shared_ptr<Acquisition>& a, Result<bool> result) {
    bool remove_key = false;
    std::string key;
    int64_t rev = 0;
    Registrations registrations;
    std::shared_ptr<Acquisition> current;
    {
      std::lock_guard lock(mu);
      if (!finish_locked(*a, registrations)) return;
      if (acq == a) current = std::move(acq);
      if (!(result.ok() && *result)) {
        phase = Phase::kIdle;
        remove_key = my_rev != 0;
        key = my_key;
        rev = my_rev;
        my_rev = 0;
      }
    }
    // Everything registered for the acquisition goes now, outside the lock.
    registrations.drop_all(core->client().executor());
    auto done = std::move(a->done);
    Result<bool> outcome = result.ok() ? Result<bool>(*result) : Result<bool>(core->named(std::move(result).status()));
    if (!remove_key) return done(std::move(outcome));
    // Report only once our key is gone: a declined or failed acquisition
    // leaves nothing behind that could block the queue.
    auto shared = std::make_shared<Result<bool>>(std::move(outcome));
    remove(key, rev, [done = std::move(done), shared] { done(std::move(*shared)); });
  }

  // Deletes our key if it is still the one we created (fire and forget).
  void remove(const std::string& key, int64_t rev, std::function<void()> then = {}) {
    detail::remove_key(core, key, rev, "cleaning up the lock key", std::move(then));
  }

  // --- the hold ------------------------------------------------------------

  void hold_lost(const Status& why) {
    std::vector<std::shared_ptr<std::function<void(const Status&)>>> listeners;
    std::stop_source stop;
    {
      std::lock_guard lock(mu);
      if (phase != Phase::kHeld || lost) return;
      lost = true;
      stop = hold_stop;
      for (auto& [id, l] : lost_listeners) listeners.push_back(l);
    }
    stop.request_stop();
    core->metrics().add("etcd_recipes_lock_lost_total", labels(), 1);
    Status status(StatusCode::kAborted, core->identity() + ": lock hold lost: " + why.message(), Errc::kHoldLost);
    core->record_error(status);
    for (auto& l : listeners) asio::post(core->client().executor(), [l, status] { (*l)(status); });
  }

  void release(bool caller_waits, Callback<bool> done) {
    std::string key;
    int64_t rev;
    bool was_lost;
    std::stop_source stop;
    Subscription lost_sub;
    {
      std::lock_guard lock(mu);
      if (phase != Phase::kHeld) return done(false);
      key = my_key;
      rev = my_rev;
      was_lost = lost;
      phase = Phase::kReleasing;
      my_rev = 0;
      stop = hold_stop;
      lost_sub = std::move(hold_lost_sub);
      core->metrics().observe("etcd_recipes_lock_hold_seconds", labels(), seconds_since(held_since));
    }
    lost_sub.reset();
    stop.request_stop();
    release_attempt(key, rev, was_lost, 1, caller_waits, false, std::move(done));
  }

  // A plain delete (cheaper than a Txn on etcd 3.4): the key embeds our
  // session's lease id, so no other contender ever owns it. prev_kv tells
  // whether it was still the key of this hold.
  void release_attempt(std::string key, int64_t rev, bool was_lost, int attempt, bool caller_waits,
                       bool earlier_unknown, Callback<bool> done) {
    auto self = shared_from_this();
    CallAccess::start_inline(
        CallAccess::caller_waits(core->client().del(key, DeleteOptions{.prev_kv = true}), caller_waits),
        [self, key, rev, was_lost, attempt, earlier_unknown, done = std::move(done)](Result<DeleteResponse> r) mutable {
          if (!r.ok() && attempt < 3 && transient(r.status())) {
            // Deleting our own key again is harmless.
            return self->release_attempt(key, rev, was_lost, attempt + 1, false, true, std::move(done));
          }
          {
            std::lock_guard lock(self->mu);
            if (self->phase == Phase::kReleasing) self->phase = Phase::kIdle;
          }
          if (!r.ok()) {
            self->core->record_error(r.status());
            return done(self->core->named(std::move(r).status()));
          }
          bool was_ours = earlier_unknown && r->deleted == 0;  // an earlier attempt may have deleted it
          for (const auto& kv : r->prev_kvs) was_ours = was_ours || kv.create_revision == rev;
          done(was_ours && !was_lost);
        });
  }
};

}  // namespace detail

DistributedMutex::DistributedMutex(Client client, std::string name, RecipeOptions options)
    : state_(std::make_shared<detail::MutexState>(std::move(client), std::move(name), std::move(options))) {
  bind_recipe(state_->core);
}

DistributedMutex::~DistributedMutex() { close(); }

Call<void> DistributedMutex::acquire() {
  auto s = state_;
  return Call<void>(
      [s](CallOptions options, Callback<void> done) {
        s->start(options, /*wait=*/true, [done = std::move(done)](Result<bool> r) {
          done(r.ok() ? Result<void>() : Result<void>(std::move(r).status()));
        });
      },
      s->core->client().executor());
}

Call<bool> DistributedMutex::try_acquire() {
  auto s = state_;
  return Call<bool>([s](CallOptions options, Callback<bool> done) { s->start(options, false, std::move(done)); },
                    s->core->client().executor());
}

Call<bool> DistributedMutex::release() {
  auto s = state_;
  return Call<bool>(
      [s](CallOptions options, Callback<bool> done) { s->release(options.caller_waits, std::move(done)); },
      s->core->client().executor());
}

void DistributedMutex::lock() { acquire().wait().value(); }

bool DistributedMutex::try_lock() {
  auto r = try_acquire().wait();
  return r.ok() && *r;
}

bool DistributedMutex::try_lock_until_steady(Deadline deadline) {
  auto r = acquire().deadline(deadline).wait();
  if (r.ok()) return true;
  if (r.status().code() != StatusCode::kDeadlineExceeded) state_->core->record_error(r.status());
  return false;
}

bool DistributedMutex::unlock() noexcept {
  try {
    auto r = release().wait();
    return r.ok() && *r;
  } catch (...) {
    return false;
  }
}

bool DistributedMutex::is_locked() const {
  std::lock_guard lock(state_->mu);
  return state_->phase == detail::MutexState::Phase::kHeld && !state_->lost;
}

int64_t DistributedMutex::fencing_token() const {
  std::lock_guard lock(state_->mu);
  return state_->phase == detail::MutexState::Phase::kHeld ? state_->my_rev : 0;
}

std::string DistributedMutex::key() const {
  std::lock_guard lock(state_->mu);
  return state_->my_key;
}

std::stop_token DistributedMutex::hold_token() const {
  std::lock_guard lock(state_->mu);
  return state_->hold_stop.get_token();
}

Subscription DistributedMutex::on_lost(std::function<void(const Status&)> listener) {
  std::unique_lock lock(state_->mu);
  if (state_->phase == detail::MutexState::Phase::kHeld && state_->lost) {
    // Already lost: the listener still hears of it.
    lock.unlock();
    Status why(StatusCode::kAborted, state_->core->identity() + ": lock hold lost", Errc::kHoldLost);
    asio::post(state_->core->client().executor(), [listener = std::move(listener), why] { listener(why); });
    return Subscription();
  }
  const uint64_t id = state_->next_listener++;
  state_->lost_listeners.emplace_back(id, std::make_shared<std::function<void(const Status&)>>(std::move(listener)));
  std::weak_ptr<detail::MutexState> weak = state_;
  return Subscription([weak, id] {
    if (auto s = weak.lock()) {
      std::lock_guard l(s->mu);
      std::erase_if(s->lost_listeners, [id](const auto& p) { return p.first == id; });
    }
  });
}

Call<TxnResponse> DistributedMutex::guarded(Txn txn) {
  std::string key;
  int64_t rev = 0;
  {
    std::lock_guard lock(state_->mu);
    if (state_->phase == detail::MutexState::Phase::kHeld && !state_->lost) {
      key = state_->my_key;
      rev = state_->my_rev;
    }
  }
  auto& client = state_->core->client();
  if (rev == 0) {
    return Call<TxnResponse>::ready(
        Status(StatusCode::kFailedPrecondition, state_->core->identity() + ": not held", Errc::kHoldLost),
        client.executor());
  }
  auto outer = std::make_shared<Call<TxnResponse>>(
      client.txn(Txn().when(Compare::create_revision(key) == rev).then(Op::txn(std::move(txn)))));
  auto core = state_->core;
  return Call<TxnResponse>(
      [outer, core](CallOptions options, Callback<TxnResponse> done) {
        if (options.deadline) outer->deadline(*options.deadline);
        outer->stop_token(options.stop);
        CallAccess::start_inline(std::move(*outer), [core, done = std::move(done)](Result<TxnResponse> r) {
          if (!r.ok()) return done(std::move(r).status());
          if (!r->succeeded) {
            return done(Status(StatusCode::kFailedPrecondition,
                               core->identity() + ": the lock is no longer held; nothing was written",
                               Errc::kHoldLost));
          }
          done(TxnResponse(r->responses.at(0).txn()));
        });
      },
      client.executor());
}

void DistributedMutex::close() {
  auto s = state_;
  if (s->core->closed()) return;
  s->core->close();  // wakes a parked acquisition with kClosed
  bool held;
  {
    std::lock_guard lock(s->mu);
    held = s->phase == detail::MutexState::Phase::kHeld;
  }
  if (held) s->release(false, [](Result<bool>) {});  // fire and forget
  std::string key;
  {
    std::lock_guard lock(s->mu);
    if (s->claimed) {
      key = s->my_key;
      s->claimed = false;
    }
  }
  if (!key.empty()) KeyClaims::unclaim(key);
}

}  // namespace etcd::recipes
