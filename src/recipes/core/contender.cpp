#include "contender.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <thread>

#include "background_retry.h"
#include "calls.h"
#include "injected_defects.h"
#include "keys.h"
#include "strand_steps.h"
#include "txn_batcher.h"

namespace etcd::recipes::detail {

namespace {

// One acquisition in flight. Every field after `mu` is guarded by it.
class Acquisition : public std::enable_shared_from_this<Acquisition> {
 public:
  Acquisition(ContendRequest request, std::shared_ptr<ClientLink> link, Callback<std::optional<Hold>> done)
      : core_(std::move(request.core)),
        link_(std::move(link)),
        driver_(std::move(request.driver)),
        slot_(std::move(request.slot)),
        options_(std::move(request.options)),
        wait_(request.wait),
        done_(std::move(done)) {}

  void start() {
    if (!guard()) return;
    open_session();
  }

 private:
  Executor executor() const { return link_->executor(); }
  // A blocking caller's thread may run the first steps' RPCs itself.
  bool on_caller_thread() const { return options_.caller_waits && std::this_thread::get_id() == caller_thread_; }

  template <class T>
  void keep(T Registrations::*slot, T piece) {
    {
      std::lock_guard lock(mu_);
      if (!finished_) std::swap(registrations_.*slot, piece);
    }
    Registrations::drop(piece, executor());
  }

  std::function<void(Status)> failer() {
    return [weak = weak_from_this()](Status why) {
      if (auto self = weak.lock()) self->fail(std::move(why));
    };
  }

  // Registers what ends the acquisition from outside. False if its stop
  // was requested already (it has failed then).
  bool guard() {
    auto fail = failer();
    if (options_.stop.stop_requested()) {
      fail(Cancelled("acquire cancelled"));
      return false;
    }
    if (options_.deadline) {
      auto timer = std::make_shared<asio::steady_timer>(executor(), *options_.deadline);
      timer->async_wait([fail, what = driver_->waiting_for()](const asio::error_code& ec) {
        if (!ec) fail(DeadlineExceeded("timed out waiting for " + what));
      });
      keep(&Registrations::timer, std::move(timer));
    }
    if (options_.stop.stop_possible()) {
      auto stop_cb = std::make_shared<std::optional<StopCallback>>();
      stop_cb->emplace(options_.stop, std::function<void()>([fail] { fail(Cancelled("acquire cancelled")); }));
      keep(&Registrations::stop_cb, std::move(stop_cb));
    }
    // The close waker also owns the acquisition while it is parked (every
    // other registration knows it only weakly); finishing drops it.
    keep(&Registrations::close_sub,
         core_->on_close([self = shared_from_this()] { self->fail(self->core_->closed_status()); }));
    return true;
  }

  // Starts the recipe's session. A grant that failed in a way a retry can
  // fix (background_retry.h; its outcome unknown, say: a lease granted after
  // all just expires by its TTL) is tried again for as long as the
  // acquisition lasts.
  void open_session() {
    auto self = shared_from_this();
    CallAccess::start_inline(core_->session(link_), [self](Result<std::shared_ptr<Session>> s) {
      if (!s.ok()) {
        if (background_retry_heals(*self->core_, s.status())) {
          return self->retry_later(s.status(), [self] { self->open_session(); });
        }
        return self->fail(std::move(s).status());
      }
      self->with_session(*s);
    });
  }

  void with_session(const std::shared_ptr<Session>& s) {
    const std::string key = driver_->key(*s);
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      session_ = s;
      key_ = key;
    }
    if (driver_->claims_key()) {
      auto claims = KeyClaims::of(*s);
      if (!claims->claim(key)) {
        return fail(Status(StatusCode::kFailedPrecondition,
                           "another recipe object of this process uses key " + key +
                               " (the same name on the same session); give it its own session"));
      }
      std::lock_guard lock(mu_);
      claims_ = std::move(claims);
    }
    auto fail = failer();
    keep(&Registrations::session_lost_sub, s->on_lost([fail](const Status& why) {
      fail(Status(StatusCode::kAborted, "session lost while waiting: " + why.message(), Errc::kHoldLost));
    }));
    create();
  }

  void create() {
    std::string key;
    int64_t lease;
    {
      std::unique_lock lock(mu_);
      if (finished_) {
        // Finished while a retry of the creation was pending.
        const bool unanswered = create_unanswered_;
        lock.unlock();
        if (unanswered) remove_unanswered_key();
        return;
      }
      key = key_;
      lease = session_->lease_id();
      create_unanswered_ = true;
    }
    auto self = shared_from_this();
    auto on_created = [self](Result<TxnResponse> r) {
      const bool may_have_applied = !r.ok() && (transient(r.status()) || r.status().is(Errc::kOutcomeUnknown) ||
                                                r.status().code() == StatusCode::kDeadlineExceeded);
      {
        std::lock_guard lock(self->mu_);
        if (may_have_applied) {
          self->key_unanswered_ = true;
        } else {
          self->create_unanswered_ = false;
        }
      }
      if (may_have_applied && self->is_finished()) return self->remove_unanswered_key();
      if (!r.ok()) {
        // Creating our key is idempotent (create-if-absent): a transient
        // failure is retried for as long as the acquisition lasts.
        if (transient(r.status())) return self->retry_later(r.status(), [self] { self->create(); });
        // The session's lease is gone before the session noticed (revoked
        // elsewhere; its keys deleted): nothing was held yet, so this
        // acquisition goes on with a new session of the recipe's own.
        if (r.status().is(Errc::kLeaseNotFound) && self->renew_session()) return;
        self->fail(std::move(r).status());
        if (may_have_applied) self->remove_unanswered_key();
        return;
      }
      self->on_created(self->driver_->created(*r));
    };
    Txn txn = driver_->create(key, lease);
    const std::string scope = driver_->batch_scope();
    if (!scope.empty()) {
      TxnBatcher::of(link_->client())->submit(link_, std::move(txn), scope, on_caller_thread(), std::move(on_created));
    } else {
      CallAccess::start_inline(CallAccess::caller_waits(link_->client().txn(std::move(txn)), on_caller_thread()),
                               std::move(on_created));
    }
  }

  // Drops the acquisition's session (and its key claim) and starts again on
  // a new one. False when the session cannot be replaced (a fixed shared
  // one, or this happened twice).
  bool renew_session() {
    std::shared_ptr<Session> old;
    std::string key;
    std::shared_ptr<KeyClaims> claims;
    Subscription old_loss;
    {
      std::lock_guard lock(mu_);
      if (finished_ || renewed_) return false;
      renewed_ = true;
      old = session_;
      key = key_;
      claims = std::exchange(claims_, nullptr);
      // The old session's end (it closes once dropped) is not ours any more.
      old_loss = std::move(registrations_.session_lost_sub);
    }
    old_loss.reset();
    if (!core_->forget_session(old)) return false;
    if (claims) claims->unclaim(key);
    open_session();
    return true;
  }

  void on_created(Created c) {
    if (!c.failure.ok()) return fail(std::move(c.failure));
    if (c.stale_rev != 0) return replace_stale(c.stale_rev);
    if (c.retry_at != 0) return rekey(c.retry_at);
    {
      std::unique_lock lock(mu_);
      if (c.verdict && c.verdict->holds && c.verdict->at) held_at_ = *c.verdict->at;
      if (finished_) {
        // Timed out, cancelled or closed while the key was being created:
        // it must not stay behind and block the queue (nor a hold the
        // creation put elsewhere).
        lock.unlock();
        if (c.rev != 0) remove_own_key(c.rev, {});
        return;
      }
      rev_ = c.rev;
    }
    if (c.rev == 0) return fail(Status(StatusCode::kAborted, "our key vanished", Errc::kHoldLost));
    if (c.verdict) return on_verdict(std::move(*c.verdict));
    read();
  }

  // The acquisition ended without a hold, and whether its key was created
  // is unknown (the creation's answer was lost, or it failed in a way that
  // may have applied). A key named by the acquisition alone (the
  // semaphore's: lease and sequence number) would otherwise stay, bound to
  // a live session, and take a place in the queue for as long as the
  // session lives: delete it if it carries our lease. (A key named by the
  // session only — the mutex's, a candidate's — is adopted by the next
  // acquisition on the session instead, and another acquisition may be
  // using it by now.)
  //
  // The creation may still be on its way (held up in the network, or
  // queued at a member), so one delete is not enough: the key is swept
  // (sweep_key) until a sweep finds and deletes it.
  void remove_unanswered_key() {
    std::string key;
    int64_t lease;
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mu_);
      if (!create_unanswered_ || !session_) return;
      create_unanswered_ = false;
      key = key_;
      lease = session_->lease_id();
      session = session_;
    }
    if (driver_->claims_key()) return;
    for (auto& txn : driver_->strays(key, lease)) sweep_key(core_, session, std::move(txn), /*until_found=*/true);
  }

  // Deletes our key (created at `rev`) after an acquisition ended without a
  // hold, then runs `then`. A key named by the acquisition alone that
  // could not be deleted (no delete was answered) is swept until one is.
  //
  // The driver says how (ContenderDriver::leave: a key with nothing left
  // before it may leave as a holder would), and an admission that was sent
  // (Verdict::admit_to) is undone with it in one Txn: whichever of the two
  // applies first, the other finds nothing of ours. A hold the creation put
  // elsewhere (Verdict::at) is deleted instead.
  void remove_own_key(int64_t rev, std::function<void()> then) {
    std::shared_ptr<Session> owner;
    std::string key;
    bool first;
    std::optional<Txn> undo;
    std::optional<HeldAt> held_at;
    {
      std::lock_guard lock(mu_);
      owner = session_;
      key = key_;
      first = first_;
      undo = admission_undo_;
      held_at = held_at_;
    }
    // A hold the creation put elsewhere, which the acquisition ended
    // before it was handed out.
    Txn txn = held_at ? delete_if_created_at(held_at->key, held_at->token) : driver_->leave(key, rev, first);
    if (undo) txn = Txn().then(Op::txn(std::move(txn)), Op::txn(std::move(*undo)));
    if (driver_->claims_key() || !owner) {
      return remove_with(link_, core_, std::move(txn), "cleaning up a contender key", [then = std::move(then)](bool) {
        if (then) then();
      });
    }
    std::weak_ptr<Session> session = owner;
    remove_with(link_, core_, txn, "cleaning up a contender key",
                [core = core_, session, txn, then = std::move(then)](bool answered) {
                  if (!answered) sweep_key(core, session, txn, /*until_found=*/false);
                  if (then) then();
                });
  }

  // Not created (Created::retry_at): create again under the key the driver
  // names for `revision`. A creation of the old key that went
  // unanswered may still apply (held up in the network, or queued at a
  // member): that key is swept until a sweep finds and deletes it.
  void rekey(int64_t revision) {
    std::string old_key;
    bool unanswered;
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      old_key = key_;
      key_ = driver_->rekey(key_, revision);
      unanswered = std::exchange(key_unanswered_, false);
      session = session_;
    }
    if (unanswered && session) {
      sweep_key(core_, session, delete_if_leased(old_key, session->lease_id()), /*until_found=*/true);
    }
    create();
  }

  // A key of ours left by an earlier acquisition whose release did not get
  // through: delete it (guarded) and create a fresh one, once.
  void replace_stale(int64_t stale_rev) {
    std::string key;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      if (stale_replaced_) {
        key = key_;
      } else {
        stale_replaced_ = true;
      }
    }
    if (!key.empty()) return fail(Status(StatusCode::kAborted, "could not replace the stale key " + key));
    auto self = shared_from_this();
    CallAccess::start_inline(link_->client().txn(delete_if_created_at(key_, stale_rev)), [self](Result<TxnResponse> d) {
      if (!d.ok()) return self->fail(std::move(d).status());
      self->create();
    });
  }

  void on_verdict(Verdict v) {
    {
      std::lock_guard lock(mu_);
      first_ = v.first;
    }
    if (v.holds) return v.admit_to.empty() ? acquired(v) : admit(std::move(v));
    if (!wait_) return finish(std::optional<Hold>());
    if (!v.wait) return read();
    watch(std::move(*v.wait), v.revision + 1);
  }

  // The anchored read at one revision R.
  void read() {
    std::string key;
    int64_t rev;
    std::string waited_for;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      key = key_;
      rev = rev_;
      waited_for = waited_for_;
    }
    Txn txn = waited_for.empty() ? driver_->read(key, rev) : driver_->reread(key, rev, waited_for);
    auto self = shared_from_this();
    CallAccess::start_inline(CallAccess::caller_waits(link_->client().txn(std::move(txn)), on_caller_thread()),
                             [self, rev](Result<TxnResponse> r) {
                               if (!r.ok()) {
                                 if (transient(r.status())) {
                                   return self->retry_later(r.status(), [self] { self->read(); });
                                 }
                                 return self->fail(std::move(r).status());
                               }
                               if (auto gone = own_key_lost(r->responses.at(0).get().first(), rev)) {
                                 return self->fail(std::move(*gone));  // never report success
                               }
                               Verdict v = self->driver_->judge(*r, rev);
                               v.revision = r->header.revision;
                               self->on_verdict(std::move(v));
                             });
  }

  // Moves our key to the one the hold will live at (Verdict::admit_to),
  // then holds. Sent again after a transient failure (the admission tells
  // from the store whether an earlier one applied); an acquisition that
  // ends meanwhile undoes it (remove_own_key).
  void admit(Verdict v) {
    std::string key;
    int64_t rev;
    Admission admission;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      key = key_;
      rev = rev_;
      admission = driver_->admission(key, rev, session_->lease_id(), v.admit_to);
      admission_undo_ = admission.undo;
    }
    auto self = shared_from_this();
    CallAccess::start_inline(
        CallAccess::caller_waits(link_->client().txn(std::move(admission.txn)), on_caller_thread()),
        [self, v = std::move(v), key, rev](Result<TxnResponse> r) mutable {
          if (!r.ok()) {
            if (transient(r.status()) || r.status().is(Errc::kOutcomeUnknown)) {
              return self->retry_later(r.status(), [self, v] { self->admit(v); });
            }
            return self->fail(std::move(r).status());
          }
          Admitted a = self->driver_->admitted(*r, key, rev, v.admit_to);
          if (!a.failure.ok()) return self->fail(std::move(a.failure));
          if (!a.at) return self->read();  // taken by another: look again
          v.at = std::move(a.at);
          self->acquired(v);
        });
  }

  // Waits for one change that can unblock us, then reads again (at most
  // one wake-up per watch).
  void watch(WaitFor w, int64_t from) {
    {
      std::lock_guard lock(mu_);
      waited_for_ = w.rereads ? w.key : std::string();
    }
    std::weak_ptr<Acquisition> weak = weak_from_this();
    auto core = core_;
    auto driver = driver_;
    // One wake-up, whichever of the watches sees its change first.
    auto woken = std::make_shared<std::atomic<bool>>(false);
    auto wake = [weak, core, driver, woken] {
      if (woken->exchange(true)) return;
      core->metrics().add("etcd_recipes_" + driver->family() + "_wakeups_total", driver->labels(), 1);
      auto self = weak.lock();
      if (!self) return;
      if (injected_defects().contender_skips_recheck.load(std::memory_order_relaxed)) {
        return self->acquired(Verdict{.holds = true});
      }
      self->read();
    };
    Watcher also;
    if (w.also) {
      also = wait_for_change(link_, w.also->key, WatchOptions{}, from, any_event, std::move(w.also->recheck), wake);
    }
    Watcher watcher =
        wait_for_change(link_, w.key, std::move(w.options), from, std::move(w.relevant), std::move(w.recheck), wake);
    keep(&Registrations::watch, std::move(watcher));
    keep(&Registrations::also_watch, std::move(also));
  }

  // After the failure `why` (recorded: nobody hears of it otherwise), runs
  // `step` again after the step backoff (kStepBackoff), unless the
  // acquisition finishes first.
  void retry_later(const Status& why, std::function<void()> step) {
    int n;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      n = ++transient_failures_;
    }
    core_->record_error(Status(
        why.code(), "waiting for " + driver_->waiting_for() + ", trying again after: " + why.message(), why.reason()));
    run_after(executor(), kStepBackoff.delay(n), [weak = weak_from_this(), step = std::move(step)] {
      if (auto self = weak.lock(); self && !self->is_finished()) step();
    });
  }

  bool is_finished() const {
    std::lock_guard lock(mu_);
    return finished_;
  }

  void acquired(const Verdict& v) {
    Registrations registrations;
    std::shared_ptr<HoldState> state;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
      registrations = std::move(registrations_);
      HoldSpec spec = driver_->hold_spec();
      spec.key = v.at ? v.at->key : key_;
      spec.token = v.at ? v.at->token : rev_;
      spec.lease = session_->lease_id();
      spec.session = session_;
      spec.claims = std::exchange(claims_, nullptr);  // the hold carries the claim from here
      state = std::make_shared<HoldState>(core_, link_, std::move(spec), slot_);
    }
    registrations.drop_all(executor());
    state->arm();
    Hold hold = HoldAccess::make(state);
    if (slot_) slot_->held(hold);
    driver_->held(state, v);
    core_->metrics().observe("etcd_recipes_" + driver_->family() + "_wait_seconds", driver_->labels(),
                             seconds_since(started_));
    core_->metrics().add("etcd_recipes_" + driver_->family() + "_acquired_total", driver_->labels(), 1);
    auto done = std::move(done_);
    done(std::optional<Hold>(std::move(hold)));
  }

  void fail(Status why) {
    if (why.code() == StatusCode::kDeadlineExceeded) {
      core_->metrics().add("etcd_recipes_" + driver_->family() + "_timeouts_total", driver_->labels(), 1);
    }
    finish(std::move(why));
  }

  // Ends an acquisition without a hold, exactly once. The key it created
  // is deleted before the caller hears back: a declined or failed
  // acquisition leaves nothing behind that could block the queue.
  void finish(Result<std::optional<Hold>> result) {
    Registrations registrations;
    std::string key;
    int64_t rev;
    std::shared_ptr<KeyClaims> claims;
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
      registrations = std::move(registrations_);
      key = key_;
      rev = rev_;
      claims = std::exchange(claims_, nullptr);
    }
    registrations.drop_all(executor());
    if (!result.ok()) result = core_->named(std::move(result).status());
    auto complete = [slot = slot_, key, claims, done = std::move(done_),
                     shared = std::make_shared<Result<std::optional<Hold>>>(std::move(result))] {
      if (claims) claims->unclaim(key);
      if (slot) slot->abandon();
      done(std::move(*shared));
    };
    if (rev == 0) return complete();
    remove_own_key(rev, std::move(complete));
  }

  const std::shared_ptr<RecipeCore> core_;
  // Held for as long as the acquisition lives (it is work in flight), and
  // handed to the hold it establishes.
  const std::shared_ptr<ClientLink> link_;
  const std::shared_ptr<ContenderDriver> driver_;
  const std::shared_ptr<HolderSlot> slot_;
  const CallOptions options_;
  const bool wait_;
  const Clock::time_point started_ = Clock::now();
  const std::thread::id caller_thread_ = std::this_thread::get_id();
  Callback<std::optional<Hold>> done_;

  mutable std::mutex mu_;
  bool finished_ = false;
  std::shared_ptr<KeyClaims> claims_;  // set while this acquisition claims its key
  bool stale_replaced_ = false;
  bool renewed_ = false;
  // A creation was sent and its answer has not told whether it applied.
  bool create_unanswered_ = false;
  // A creation of the current key went unanswered at least once.
  bool key_unanswered_ = false;
  int transient_failures_ = 0;
  std::shared_ptr<Session> session_;
  std::string key_;
  int64_t rev_ = 0;
  std::string waited_for_;             // the key of the last wait, if it rereads (WaitFor::rereads)
  bool first_ = false;                 // the last verdict's Verdict::first
  std::optional<Txn> admission_undo_;  // an admission was sent: what undoes it (Admission::undo)
  std::optional<HeldAt> held_at_;      // the creation put the hold there (Verdict::at)
  Registrations registrations_;
};

}  // namespace

void contend(ContendRequest request, Callback<std::optional<Hold>> done) {
  auto& core = request.core;
  auto link = core->link();
  if (core->closed() || !link) return done(core->closed_status());
  if (request.slot) {
    if (Status st = request.slot->begin("acquire"); !st.ok()) return done(std::move(st));
  }
  std::make_shared<Acquisition>(std::move(request), std::move(link), std::move(done))->start();
}

Call<Hold> acquire_call(std::shared_ptr<RecipeCore> core, std::shared_ptr<ContenderDriver> driver,
                        std::shared_ptr<HolderSlot> slot, Status input) {
  if (!input.ok()) return core->ready<Hold>(std::move(input));
  return core->call<Hold>([core, driver, slot](CallOptions options, Callback<Hold> done) {
    contend(ContendRequest{core, driver, std::move(options), /*wait=*/true, slot},
            [done = std::move(done)](Result<std::optional<Hold>> r) {
              // An acquisition that waits never declines.
              if (!r.ok()) return done(std::move(r).status());
              Hold hold = r->value_or(Hold());
              done(std::move(hold));
            });
  });
}

Call<std::optional<Hold>> try_acquire_call(std::shared_ptr<RecipeCore> core, std::shared_ptr<ContenderDriver> driver,
                                           std::shared_ptr<HolderSlot> slot, Status input) {
  if (!input.ok()) return core->ready<std::optional<Hold>>(std::move(input));
  return core->call<std::optional<Hold>>([core, driver, slot](CallOptions options, Callback<std::optional<Hold>> done) {
    contend(ContendRequest{core, driver, std::move(options), /*wait=*/false, slot}, std::move(done));
  });
}

}  // namespace etcd::recipes::detail
