// TransientKeyValue: the design and every Txn are in
// include/etcd/recipes/transient.h.
//
// One state object under one mutex: the phase of the key (never created,
// being created, ours, lost and healing, closed), the value with a sequence
// number, and which sequence number etcd has. Writes of the value go out one
// at a time (a single writer), always with the newest value, so that etcd
// ends with the value value() reports whatever order calls complete in.
#include "etcd/recipes/transient.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/system_executor.hpp>
#include <optional>
#include <vector>

#include "../core/background_retry.h"
#include "../core/calls.h"
#include "../core/keys.h"
#include "../core/own_presence.h"
#include "../core/recipe_core.h"
#include "../core/strand_steps.h"
#include "client/listener_set.h"
#include "etcd/presence.h"
#include "etcd/txn.h"

namespace etcd::recipes::detail {

namespace {

// How often a heal retries while another owner has the key: the cost is one
// Txn per try, and the owner gets its key back this soon after it frees up.
constexpr std::chrono::milliseconds kMaxHealBackoff{1000};

Executor executor_of(const std::shared_ptr<ClientLink>& link) { return executor_or_system(link); }

}  // namespace

class TransientState : public std::enable_shared_from_this<TransientState> {
 public:
  TransientState(std::shared_ptr<RecipeCore> core, std::string bytes, std::shared_ptr<const void> typed,
                 std::chrono::seconds ttl, bool own_lease)
      : core_(std::move(core)),
        key_(core_->name()),
        labels_{{"key", core_->name()}},
        ttl_(ttl),
        own_lease_(own_lease),
        value_(std::move(bytes)),
        typed_(std::move(typed)) {}

  void install() {
    std::weak_ptr<TransientState> weak = weak_from_this();
    core_->set_start_action([weak] {
      if (auto self = weak.lock()) self->start_in_background();
    });
    core_->set_close_action([weak] {
      if (auto self = weak.lock()) self->shutdown(nullptr);
    });
  }

  // --- the public surface -------------------------------------------------------------

  Call<void> create() {
    return core_->call<void>([self = shared_from_this()](CallOptions, Callback<void> done) {
      if (Status st = self->core_->usable(); !st.ok()) return done(st);
      self->ensure_created(std::move(done));
    });
  }

  Call<void> set_encoded(std::string bytes, std::shared_ptr<const void> typed) {
    auto arg =
        std::make_shared<std::pair<std::string, std::shared_ptr<const void>>>(std::move(bytes), std::move(typed));
    return core_->call<void>([self = shared_from_this(), arg](CallOptions, Callback<void> done) {
      if (Status st = self->core_->usable(); !st.ok()) return done(st);
      Phase phase;
      {
        std::lock_guard lock(self->mu_);
        self->value_ = std::move(arg->first);
        self->typed_ = std::move(arg->second);
        const uint64_t seq = ++self->seq_;
        phase = self->phase_;
        if (phase == Phase::kIdle || phase == Phase::kStarting || phase == Phase::kHeld) {
          self->write_waiters_.emplace_back(seq, std::move(done));
        }
      }
      switch (phase) {
        case Phase::kIdle:
          // First use: the creation writes the value (or a newer one).
          return self->ensure_created([](Result<void>) {});
        case Phase::kStarting:
          return;  // written once the creation completes
        case Phase::kHeld:
          return self->pump();
        case Phase::kLost:
          return done(self->core_->named(
              Status(StatusCode::kAborted,
                     "set_value: " + self->key_ +
                         " is not ours now (lost; it is re-created with this value where it is free); nothing "
                         "was written",
                     Errc::kHoldLost)));
        case Phase::kClosed:
          return done(self->core_->closed_status());
      }
    });
  }

  Call<bool> release() {
    return core_->call<bool>([self = shared_from_this()](CallOptions, Callback<bool> done) {
      if (!self->core_->input().ok()) return done(self->core_->input());
      self->shutdown(std::move(done));
      self->core_->close();
    });
  }

  Call<void> refuse(Status why) const { return core_->ready<void>(core_->named(std::move(why))); }

  std::pair<std::string, std::shared_ptr<const void>> current() const {
    std::lock_guard lock(mu_);
    return {value_, typed_};
  }
  bool is_held() const {
    std::lock_guard lock(mu_);
    return phase_ == Phase::kHeld;
  }
  int64_t create_revision() const {
    std::lock_guard lock(mu_);
    return phase_ == Phase::kHeld ? create_rev_ : 0;
  }
  int64_t lease() const {
    std::lock_guard lock(mu_);
    return phase_ == Phase::kHeld ? lease_ : 0;
  }
  Subscription on_lost(std::function<void(const Status&)> listener) { return lost_.add(std::move(listener)); }
  Subscription on_restored(std::function<void()> listener) { return restored_.add(std::move(listener)); }

 private:
  enum class Phase { kIdle, kStarting, kHeld, kLost, kClosed };

  // What a create-if-absent Txn found.
  struct Created {
    bool ours = false;
    int64_t create_revision = 0;
    bool value_written = false;  // etcd has the value it sent
    KeyValue other{};            // when not ours: who has the key
  };

  // --- creation -----------------------------------------------------------------------------

  // start(): creates the key in the background, trying again after every
  // failure a retry can fix (core/background_retry.h), each one recorded.
  void start_in_background() {
    ensure_created([weak = weak_from_this()](Result<void> r) {
      auto self = weak.lock();
      if (!self || r.ok() || r.status().is(Errc::kClosed)) return;
      const bool again = background_retry_heals(*self->core_, r.status());
      if (!again) self->core_->log(LogLevel::kError, "gave up creating the key", r.status());
      self->core_->record_error(std::move(r).status());
      if (again) self->start_later();
    });
  }

  void start_later() {
    auto link = core_->link();
    if (!link) return;
    std::lock_guard lock(mu_);
    if (phase_ != Phase::kIdle) return;  // created by a create() meanwhile, or closed
    start_timer_ = run_after(link->executor(), kStepBackoff.delay(++start_failures_), [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->start_in_background();
    });
  }

  void ensure_created(Callback<void> done) {
    std::shared_ptr<ClientLink> link = core_->link();
    std::shared_ptr<OwnPresence> presence;
    {
      std::unique_lock lock(mu_);
      switch (phase_) {
        case Phase::kHeld:
          lock.unlock();
          return done(Result<void>());
        case Phase::kStarting:
          start_waiters_.push_back(std::move(done));
          return;
        case Phase::kLost:
          lock.unlock();
          return done(
              core_->named(Status(StatusCode::kAborted, key_ + " was lost and is being re-created", Errc::kHoldLost)));
        case Phase::kClosed:
          lock.unlock();
          return done(core_->closed_status());
        case Phase::kIdle:
          break;
      }
      if (!link) {
        lock.unlock();
        return done(core_->closed_status());
      }
      phase_ = Phase::kStarting;
      start_waiters_.push_back(std::move(done));
      // On the client's shared presence lease a key is recognised as ours by
      // the lease: another object of this client on this key must not be.
      auto claims = KeyClaims::of(link->client());
      if (!claims->claim(key_)) {
        lock.unlock();
        // Fails the waiting create and writes as any failed creation does.
        return finish_create(
            nullptr, 0,
            Status(StatusCode::kAlreadyExists,
                   key_ + " is held by another object of this client; left alone, nothing was written"));
      }
      claims_ = std::move(claims);
      if (!presence_) {
        std::weak_ptr<TransientState> weak = weak_from_this();
        presence_ = std::make_shared<OwnPresence>(
            PresenceOptions{.ttl = ttl_, .max_backoff = kMaxHealBackoff}, "the key's lease",
            [weak](PresenceEvent event, const Status& why) {
              auto self = weak.lock();
              if (!self) return;
              if (event == PresenceEvent::kExpired) self->lost(why, /*lease_gone=*/true);
              if (event == PresenceEvent::kRestoreFailed) self->heal_failed(why);
            },
            [weak](int64_t lease) -> Call<void> {
              auto self = weak.lock();
              if (!self) return Call<void>::ready(Closed("TransientKeyValue"), Executor(asio::system_executor()));
              return self->restore(lease);
            },
            own_lease_ ? nullptr : &link->client());
      }
      presence = presence_;
    }
    ensure_lease_then_create(link, presence);
  }

  void first_create(const std::shared_ptr<ClientLink>& link, const std::shared_ptr<OwnPresence>& presence,
                    int64_t lease) {
    auto [bytes, seq] = snapshot();
    send_create(link, lease, bytes, false,
                [self = shared_from_this(), link, presence, lease, seq](Result<Created> r) mutable {
                  if (!r.ok()) return self->finish_create(presence, 0, std::move(r).status());
                  if (!r->ours) return self->finish_create(presence, 0, self->taken(r->other));
                  if (presence->lease_id() != lease) {
                    // The lease was lost while the key was being created: the
                    // key went with it. Once more under the new lease.
                    return self->ensure_lease_then_create(link, presence);
                  }
                  self->finish_create(presence, lease, Result<void>(), r->create_revision, r->value_written ? seq : 0);
                });
  }

  void ensure_lease_then_create(const std::shared_ptr<ClientLink>& link, const std::shared_ptr<OwnPresence>& presence) {
    presence->with_lease(link, [self = shared_from_this(), link, presence](Result<int64_t> lease) {
      if (!lease.ok()) return self->finish_create(presence, 0, std::move(lease).status());
      self->first_create(link, presence, *lease);
    });
  }

  void finish_create(const std::shared_ptr<OwnPresence>& presence, int64_t lease, Result<void> r,
                     int64_t create_revision = 0, uint64_t written = 0) {
    std::vector<Callback<void>> waiters;
    std::vector<std::pair<uint64_t, Callback<void>>> writes;
    bool drop = false;
    std::shared_ptr<KeyClaims> claims;
    {
      std::lock_guard lock(mu_);
      if (phase_ != Phase::kStarting) return;  // closed meanwhile: the waiters were told
      waiters.swap(start_waiters_);
      if (r.ok()) {
        phase_ = Phase::kHeld;
        start_failures_ = 0;
        create_rev_ = create_revision;
        lease_ = lease;
        written_ = std::max(written_, written);
      } else {
        // Not sticky: a later create() tries again, with a new lease.
        phase_ = Phase::kIdle;
        writes.swap(write_waiters_);
        drop = true;
        claims = std::move(claims_);
      }
    }
    // The next create() starts from a new lease (one of its own), and
    // claims the key again.
    if (drop) {
      if (claims) claims->unclaim(key_);
      if (presence) presence->drop(/*for_good=*/false, nullptr);
    }
    Status st = r.ok() ? Status() : core_->named(r.status());
    for (auto& w : waiters) w(st.ok() ? Result<void>() : Result<void>(st));
    for (auto& [seq, w] : writes) w(st);
    if (r.ok()) {
      post_state(ConnectionState::kConnected);
      pump();
    }
  }

  // If create_revision(key) == 0 Then Put(key, bytes, lease) Else Get(key).
  // Sent again once after an unknown outcome: it creates at most once, and
  // the second one recognises our own key by its lease.
  void send_create(const std::shared_ptr<ClientLink>& link, int64_t lease, std::string bytes, bool again,
                   std::function<void(Result<Created>)> done) {
    Txn txn;
    txn.when(Compare::create_revision(key_) == 0)
        .then(Op::put(key_, bytes, PutOptions{.lease = lease}))
        .otherwise(Op::get(key_));
    CallAccess::start_inline(
        link->client().txn(std::move(txn)),
        [self = shared_from_this(), link, lease, bytes, again, done = std::move(done)](Result<TxnResponse> r) mutable {
          if (!r.ok()) {
            if (!again && r.status().is(Errc::kOutcomeUnknown)) {
              return self->send_create(link, lease, std::move(bytes), true, std::move(done));
            }
            return done(std::move(r).status());
          }
          Created c;
          if (r->succeeded) {
            c.ours = true;
            c.create_revision = r->header.revision;
            c.value_written = true;
            return done(c);
          }
          const KeyValue* kv = r->responses.at(0).get().first();
          if (kv && kv->lease == lease) {
            c.ours = true;
            c.create_revision = kv->create_revision;
            c.value_written = kv->value == bytes;
            return done(c);
          }
          if (kv) c.other = *kv;
          c.other.key = self->key_;
          done(c);
        });
  }

  // Continuations run on whatever thread completed a call; state listeners
  // are user code, run on the recipe's strand (in order, with on_lost and
  // on_restored).
  void post_state(ConnectionState state) {
    if (auto link = core_->link()) asio::post(link->strand(), [core = core_, state] { core->set_state(state); });
  }

  Status taken(const KeyValue& other) const {
    // Lease ids in hex, the form etcdctl and etcd-recipes print and take.
    std::string owner = other.lease != 0 ? "lease " + lease_hex(other.lease) : "no lease";
    return core_->named(Status(StatusCode::kAlreadyExists,
                               key_ + " is held by another owner (" + owner + ", created at revision " +
                                   std::to_string(other.create_revision) + "); left alone, nothing was written"));
  }

  std::pair<std::string, uint64_t> snapshot() const {
    std::lock_guard lock(mu_);
    return {value_, seq_};
  }

  // --- writing the value ----------------------------------------------------------------

  // Completes the writes etcd has; sends the newest value if it lacks it.
  void pump() {
    std::vector<Callback<void>> done;
    std::string bytes;
    uint64_t seq = 0;
    int64_t create_revision = 0;
    int64_t lease = 0;
    bool send = false;
    {
      std::lock_guard lock(mu_);
      take_written_locked(done);
      if (!writing_ && phase_ == Phase::kHeld && written_ < seq_) {
        writing_ = true;
        send = true;
        bytes = value_;
        seq = seq_;
        create_revision = create_rev_;
        lease = lease_;
      }
    }
    for (auto& d : done) d(Result<void>());
    auto link = core_->link();
    if (!send) return;
    if (!link) return fail_writes(core_->closed_status());
    send_write(link, bytes, seq, create_revision, lease, false);
  }

  void take_written_locked(std::vector<Callback<void>>& out) {
    std::erase_if(write_waiters_, [&](auto& w) {
      if (w.first > written_) return false;
      out.push_back(std::move(w.second));
      return true;
    });
  }

  // If create_revision(key) == C Then Put(key, bytes, lease) Else Get(key).
  void send_write(const std::shared_ptr<ClientLink>& link, std::string bytes, uint64_t seq, int64_t create_revision,
                  int64_t lease, bool again) {
    Txn txn;
    txn.when(Compare::create_revision(key_) == create_revision)
        .then(Op::put(key_, bytes, PutOptions{.lease = lease}))
        .otherwise(Op::get(key_, GetOptions{.keys_only = true}));
    CallAccess::start_inline(
        link->client().txn(std::move(txn)),
        [self = shared_from_this(), link, bytes, seq, create_revision, lease, again](Result<TxnResponse> r) mutable {
          if (!r.ok()) {
            // A guarded put of the same bytes may be applied twice: harmless.
            if (!again && r.status().is(Errc::kOutcomeUnknown)) {
              return self->send_write(link, std::move(bytes), seq, create_revision, lease, true);
            }
            {
              std::lock_guard lock(self->mu_);
              self->writing_ = false;
            }
            return self->fail_writes(self->core_->named(
                Status(r.status().code(), "set_value: " + r.status().message(), r.status().reason())));
          }
          if (!r->succeeded) {
            {
              std::lock_guard lock(self->mu_);
              self->writing_ = false;
            }
            return self->lost(
                Status(StatusCode::kAborted,
                       self->key_ + " was deleted or re-created by someone else (found by set_value)", Errc::kHoldLost),
                /*lease_gone=*/false, create_revision);
          }
          {
            std::lock_guard lock(self->mu_);
            self->writing_ = false;
            if (self->create_rev_ == create_revision) self->written_ = std::max(self->written_, seq);
          }
          self->pump();
        });
  }

  void fail_writes(const Status& why) {
    std::vector<std::pair<uint64_t, Callback<void>>> writes;
    {
      std::lock_guard lock(mu_);
      writes.swap(write_waiters_);
    }
    for (auto& [seq, w] : writes) w(why);
  }

  // --- loss and healing -----------------------------------------------------------------

  // The key stopped being ours: its lease is gone (the presence lease heals
  // and runs restore()), or someone else deleted or replaced it while the
  // lease lives (healed here). `create_revision`: of the key a failed
  // guarded write found gone (0: any).
  void lost(const Status& why, bool lease_gone, int64_t create_revision = 0) {
    bool report = false;
    uint64_t gen = 0;
    std::shared_ptr<asio::steady_timer> timer;
    {
      std::lock_guard lock(mu_);
      if (phase_ == Phase::kHeld && (create_revision == 0 || create_revision == create_rev_)) {
        report = true;
      } else if (!(phase_ == Phase::kLost && lease_gone)) {
        return;
      }
      phase_ = Phase::kLost;
      create_rev_ = 0;
      lease_ = 0;
      gen = ++gen_;
      taken_reported_ = false;
      timer = std::move(heal_timer_);
    }
    if (timer) timer->cancel();
    const Status named =
        core_->named(Status(why.code(), "lost " + key_ + ": " + why.message() + "; it is re-created where it is free",
                            why.is(Errc::kNone) ? Errc::kHoldLost : why.reason()));
    fail_writes(core_->named(Status(StatusCode::kAborted,
                                    "set_value: " + key_ + " was lost before the value was written: " + why.message(),
                                    Errc::kHoldLost)));
    if (report) {
      core_->record_error(named);
      core_->metrics().add("etcd_recipes_transient_lost_total", labels_, 1);
      post_state(ConnectionState::kLost);
      if (auto link = core_->link()) lost_.notify(link->strand(), core_->throw_sink(), named);
    }
    if (!lease_gone) heal(gen);
  }

  // restore() under the lease we have, retried until the key is ours again
  // (a lease loss meanwhile hands over to the presence lease's healing).
  void heal(uint64_t gen) {
    int64_t lease = 0;
    std::shared_ptr<ClientLink> link = core_->link();
    {
      std::lock_guard lock(mu_);
      if (gen != gen_ || phase_ != Phase::kLost || !presence_ || !link) return;
      lease = presence_->lease_id();
    }
    if (lease == 0) return;  // being re-granted: the restore hook follows
    CallAccess::start_inline(restore(lease), [self = shared_from_this(), link, gen](Result<void> r) {
      if (r.ok()) return;
      if (!r.status().is(Errc::kClosed)) self->heal_failed(r.status());
      std::lock_guard lock(self->mu_);
      if (gen != self->gen_ || self->phase_ != Phase::kLost) return;
      self->heal_timer_ = run_after(link->executor(), kMaxHealBackoff, [weak = self->weak_from_this(), gen] {
        if (auto s = weak.lock()) s->heal(gen);
      });
    });
  }

  // Re-creates the key with the current value under `lease`, only where it
  // is free: the presence lease's restore hook (it retries on failure).
  Call<void> restore(int64_t lease) {
    auto link = core_->link();
    if (!link) return Call<void>::ready(core_->closed_status(), executor_of(link));
    return Call<void>(
        [self = shared_from_this(), link, lease](CallOptions, Callback<void> done) {
          uint64_t gen = 0;
          std::string bytes;
          uint64_t seq = 0;
          {
            std::lock_guard lock(self->mu_);
            if (self->phase_ == Phase::kClosed) return done(self->core_->closed_status());
            // Lost while being created: first_create() tries again itself.
            if (self->phase_ != Phase::kLost) return done(Result<void>());
            gen = self->gen_;
            bytes = self->value_;
            seq = self->seq_;
          }
          self->send_create(link, lease, bytes, false,
                            [self, lease, gen, seq, done = std::move(done)](Result<Created> r) mutable {
                              if (!r.ok()) return done(std::move(r).status());
                              if (!r->ours) return done(self->taken(r->other));
                              {
                                std::lock_guard lock(self->mu_);
                                if (gen != self->gen_ || self->phase_ != Phase::kLost) return done(Result<void>());
                                self->phase_ = Phase::kHeld;
                                self->create_rev_ = r->create_revision;
                                self->lease_ = lease;
                                self->written_ = r->value_written ? seq : 0;
                              }
                              self->core_->metrics().add("etcd_recipes_transient_restored_total", self->labels_, 1);
                              self->post_state(ConnectionState::kReconnected);
                              if (auto l = self->core_->link())
                                self->restored_.notify(l->strand(), self->core_->throw_sink());
                              self->pump();
                              done(Result<void>());
                            });
        },
        link->executor());
  }

  // A heal attempt failed. Another owner having the key is recorded once per
  // loss; anything else (etcd unreachable) is what the loss already said.
  void heal_failed(const Status& why) {
    if (why.code() != StatusCode::kAlreadyExists) return;
    {
      std::lock_guard lock(mu_);
      if (phase_ != Phase::kLost || taken_reported_) return;
      taken_reported_ = true;
    }
    core_->record_error(
        Status(why.code(), why.message() + " (retried until it is free)", why.reason()).with_revision(why.revision()));
  }

  // --- removal -------------------------------------------------------------------------------

  // Deletes the key if it is ours, revokes the lease, then answers `done`
  // (if any) with whether the key was ours. Once; later calls get the answer.
  void shutdown(Callback<bool> done) {
    std::vector<Callback<void>> starts;
    std::vector<std::pair<uint64_t, Callback<void>>> writes;
    std::shared_ptr<OwnPresence> presence;
    std::shared_ptr<KeyClaims> claims;
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<asio::steady_timer> start_timer;
    int64_t create_revision = 0;
    {
      std::unique_lock lock(mu_);
      if (released_) {
        lock.unlock();
        if (done) done(*released_);
        return;
      }
      if (done) release_waiters_.push_back(std::move(done));
      if (phase_ == Phase::kClosed) return;  // under way
      create_revision = phase_ == Phase::kHeld ? create_rev_ : 0;
      phase_ = Phase::kClosed;
      ++gen_;
      starts.swap(start_waiters_);
      writes.swap(write_waiters_);
      presence = presence_;
      claims = std::move(claims_);
      timer = std::move(heal_timer_);
      start_timer = std::move(start_timer_);
    }
    if (timer) timer->cancel();
    if (start_timer) start_timer->cancel();
    const Status closed = core_->closed_status();
    for (auto& s : starts) s(closed);
    for (auto& [seq, w] : writes) w(closed);
    lost_.clear();
    restored_.clear();
    auto link = core_->link();
    auto revoke = [self = shared_from_this(), presence, claims, link](bool ours) {
      // The key is no longer ours once the delete was answered: another
      // object of this client may claim it from now.
      if (claims) claims->unclaim(self->key_);
      if (!presence) return self->finish_release(ours);
      // Revoking deletes whatever is still under the lease: the key, if a
      // delete above failed.
      presence->drop(/*for_good=*/true, [self, ours] { self->finish_release(ours); });
    };
    if (create_revision == 0 || !link) return revoke(false);
    Txn txn;
    txn.when(Compare::create_revision(key_) == create_revision).then(Op::del(key_));
    CallAccess::start_inline(link->client().txn(std::move(txn)), [revoke](Result<TxnResponse> r) {
      // An unknown outcome: the revoke that follows deletes it all the same.
      revoke(r.ok() ? r->succeeded : r.status().is(Errc::kOutcomeUnknown));
    });
  }

  void finish_release(bool ours) {
    std::vector<Callback<bool>> waiters;
    {
      std::lock_guard lock(mu_);
      released_ = ours;
      waiters.swap(release_waiters_);
    }
    for (auto& w : waiters) w(ours);
  }

  const std::shared_ptr<RecipeCore> core_;
  const std::string key_;
  const Labels labels_;
  const std::chrono::seconds ttl_;
  const bool own_lease_;  // RecipeOptions::own_presence_lease
  ListenerSet<const Status&> lost_;
  ListenerSet<> restored_;

  mutable std::mutex mu_;
  Phase phase_ = Phase::kIdle;
  std::string value_;
  std::shared_ptr<const void> typed_;
  uint64_t seq_ = 1;      // of value_
  uint64_t written_ = 0;  // the newest seq etcd has (while kHeld)
  bool writing_ = false;
  int64_t create_rev_ = 0;
  int64_t lease_ = 0;
  uint64_t gen_ = 0;  // bumped at each loss and at close: stale heals compare it
  bool taken_reported_ = false;
  std::shared_ptr<OwnPresence> presence_;
  std::shared_ptr<KeyClaims> claims_;  // set while this object claims key_ (from a create until it failed or closed)
  std::shared_ptr<asio::steady_timer> heal_timer_;
  // start(): the next try after a failure, and the failures in a row.
  std::shared_ptr<asio::steady_timer> start_timer_;
  int start_failures_ = 0;
  std::vector<Callback<void>> start_waiters_;
  std::vector<std::pair<uint64_t, Callback<void>>> write_waiters_;
  std::optional<bool> released_;
  std::vector<Callback<bool>> release_waiters_;
};

// --- TransientBase ------------------------------------------------------------------------------

TransientBase::TransientBase(Client client, const char* kind, std::string key, std::string bytes,
                             std::shared_ptr<const void> typed, Status input, RecipeOptions options) {
  const auto ttl = options.session_ttl;
  const bool own_lease = options.own_presence_lease;
  auto core = OwnPresence::make_core(std::move(client), kind, std::move(key), std::move(options), std::move(input));
  state_ = std::make_shared<TransientState>(core, std::move(bytes), std::move(typed), ttl, own_lease);
  state_->install();
  bind_recipe(std::move(core));
}

Call<void> TransientBase::create() { return state_->create(); }
Call<bool> TransientBase::release() { return state_->release(); }
bool TransientBase::is_held() const { return state_->is_held(); }
int64_t TransientBase::create_revision() const { return state_->create_revision(); }
int64_t TransientBase::lease() const { return state_->lease(); }
Subscription TransientBase::on_lost(std::function<void(const Status&)> listener) {
  return state_->on_lost(std::move(listener));
}
Subscription TransientBase::on_restored(std::function<void()> listener) {
  return state_->on_restored(std::move(listener));
}
std::pair<std::string, std::shared_ptr<const void>> TransientBase::current() const { return state_->current(); }
Call<void> TransientBase::set_encoded(std::string bytes, std::shared_ptr<const void> typed) {
  return state_->set_encoded(std::move(bytes), std::move(typed));
}

Call<void> TransientBase::refuse(Status why) const { return state_->refuse(std::move(why)); }

Status TransientBase::bad_value(Status why) {
  if (why.is(Errc::kBadArgument)) return why;
  return InvalidArgument("cannot encode the value: " + why.message());
}

}  // namespace etcd::recipes::detail

namespace etcd::recipes {

TransientKeyValue::TransientKeyValue(Client client, std::string key, std::string value)
    : TransientKeyValue(std::move(client), std::move(key), std::move(value), RecipeOptions()) {}

TransientKeyValue::TransientKeyValue(Client client, std::string key, std::string value, RecipeOptions options)
    : TransientBase(std::move(client), "TransientKeyValue", std::move(key), std::move(value), nullptr, Status(),
                    std::move(options)) {}

}  // namespace etcd::recipes
