// DistributedBarrierWithCount: the design and the keys are in
// include/etcd/recipes/barrier.h; docs/recipes/barriers.md has the Txns.
//
// Each wait() is a party: one arrival Txn (put its key, count the parties),
// then a parked waiter that needs NAME/ready to be written after its
// arrival. One single-key view of NAME/ready per object raises the level
// (NAME/ready's mod revision) that releases them, so a completed round
// wakes each object once, however many parties it carries.
#include <asio/steady_timer.hpp>
#include <asio/system_executor.hpp>
#include <map>

#include "../core/calls.h"
#include "../core/key_path.h"
#include "../core/keys.h"
#include "../core/own_presence.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "../core/strand_steps.h"
#include "../core/waiters.h"
#include "barrier_input.h"
#include "barrier_keys.h"
#include "etcd/recipes/barrier.h"
#include "etcd/txn.h"

namespace etcd::recipes::detail {

namespace {

// Completion attempts of one arrival: each failed guard means another
// arrival, give-up or completion came in between, and a recount decides
// again; the bound only stops a pathological churn (recorded).
constexpr int kMaxCompletionAttempts = 64;
// An arrival that did not get through is sent again this often, backing
// off (a raft election takes a second or two).
constexpr int kMaxArrivalAttempts = 10;
constexpr std::chrono::milliseconds kArrivalBackoff{100};

}  // namespace

class RendezvousState : public std::enable_shared_from_this<RendezvousState> {
 public:
  RendezvousState(std::shared_ptr<RecipeCore> core, int64_t parties, std::chrono::seconds ttl,
                  std::chrono::seconds window)
      : core_(std::move(core)),
        parties_prefix_(dir_under(core_->name(), barrier_keys::kParties)),
        ready_(key_under(core_->name(), barrier_keys::kReady)),
        gave_up_(key_under(core_->name(), barrier_keys::kGaveUp)),
        party_base_(parties_prefix_ + core_->client_id() + "-" + random_id() + "-"),
        labels_{{"name", core_->name()}},
        parties_(parties),
        ttl_(ttl),
        window_(window),
        released_(std::make_shared<WaiterSet>(core_)) {}

  void install() { presence_ = attach_presence(shared_from_this(), *core_, ttl_, "the parties' lease"); }

  int64_t parties() const { return parties_; }

  Call<void> wait() {
    return core_->call<void>([self = shared_from_this()](CallOptions options, Callback<void> done) {
      auto link = self->core_->link();
      if (Status st = self->core_->usable(link); !st.ok()) return done(st);
      self->ensure_view();
      auto party = std::make_shared<Party>();
      {
        std::lock_guard lock(self->mu_);
        party->key = self->party_base_ + std::to_string(++self->next_party_);
      }
      self->presence_->with_lease(
          link, [self, link, party, options, done = std::move(done)](Result<int64_t> lease) mutable {
            if (!lease.ok()) return done(self->core_->named(std::move(lease).status()));
            self->arrive(link, party, *lease, /*heal=*/false,
                         [self, link, party, options, done = std::move(done)](Result<Arrival> r) mutable {
                           if (!r.ok()) return done(self->core_->named(std::move(r).status()));
                           self->park(link, party, options, std::move(done));
                           if (r->count >= self->parties_) self->complete(link, r->revision, 1);
                         });
          });
    });
  }

  Call<int64_t> waiting() {
    return core_->call<int64_t>([self = shared_from_this()](CallOptions, Callback<int64_t> done) {
      auto link = self->core_->link();
      if (Status st = self->core_->usable(link); !st.ok()) return done(st);
      CallAccess::start_inline(
          link->client().get(self->parties_prefix_, GetOptions{.prefix = true, .count_only = true}),
          [self, done = std::move(done)](Result<GetResponse> r) {
            if (!r.ok()) return done(self->core_->named(std::move(r).status()));
            done(r->count);
          });
    });
  }

 private:
  // attach_presence() reaches presence_event() and restore().
  template <class Owner>
  friend std::shared_ptr<OwnPresence> attach_presence(const std::shared_ptr<Owner>&, RecipeCore&, std::chrono::seconds,
                                                      std::string);

  struct Party {
    std::string key;
    int64_t arrived = 0;  // the revision of its first arrival (under mu_)
    bool done = false;    // under mu_
  };
  struct Arrival {
    int64_t revision = 0;  // the arrival's (the count is at this revision)
    int64_t count = 0;
    bool released = false;  // (heal) the round completed while the key was gone
  };

  void ensure_view() {
    std::lock_guard lock(mu_);
    if (view_) return;
    PrefixView::Options options;
    options.single_key = true;
    std::weak_ptr<RendezvousState> weak = weak_from_this();
    view_ = PrefixView::create(core_, ready_, std::move(options), [weak](const ViewBatch& batch) {
      auto self = weak.lock();
      if (!self) return;
      // Each batch wakes this object's parked parties (to look): counted,
      // so that the bench can tell wake-ups per party.
      if (batch.kind != ViewBatch::Kind::kInitialized) {
        self->core_->metrics().add("etcd_recipes_barrier_wakeups_total", self->labels_, 1);
      }
      auto it = batch.state->find(self->ready_);
      if (it != batch.state->end()) self->released_->advance(static_cast<uint64_t>(it->second.mod_revision));
    });
    view_->start();
  }

  // The arrival Txn. First arrival:
  //   If create_revision(key) == 0 Then Put(key, id, lease), Range(parties, count) Else Get(key), Range(parties, count)
  // A heal (the lease was lost, the key with it) adds: mod_revision(ready) <= arrived (the round is still open).
  void arrive(const std::shared_ptr<ClientLink>& link, const std::shared_ptr<Party>& party, int64_t lease, bool heal,
              std::function<void(Result<Arrival>)> then, int attempt = 1) {
    int64_t arrived = 0;
    {
      std::lock_guard lock(mu_);
      arrived = party->arrived;
    }
    Txn txn;
    const GetOptions count{.prefix = true, .count_only = true};
    if (heal) {
      txn.when(Compare::create_revision(party->key) == 0, Compare::mod_revision(ready_) < arrived + 1);
    } else {
      txn.when(Compare::create_revision(party->key) == 0);
    }
    txn.then(Op::put(party->key, core_->client_id(), PutOptions{.lease = lease}), Op::get(parties_prefix_, count))
        .otherwise(Op::get(party->key), Op::get(parties_prefix_, count));
    CallAccess::start_inline(
        link->client().txn(std::move(txn)),
        [self = shared_from_this(), link, party, lease, heal, attempt, then = std::move(then)](Result<TxnResponse> r) {
          if (!r.ok()) {
            // A put of a key only this party uses, guarded by its absence:
            // sending it again is safe (a resend finds its own key by the
            // lease), e.g. while a new raft leader is elected.
            if (attempt < kMaxArrivalAttempts && transient(r.status())) {
              run_after(link->executor(), kArrivalBackoff * attempt, [self, link, party, lease, heal, attempt, then] {
                self->arrive(link, party, lease, heal, then, attempt + 1);
              });
              return;
            }
            return then(std::move(r).status());
          }
          Arrival a;
          a.count = r->responses.at(1).get().count;
          if (r->succeeded) {
            a.revision = r->header.revision;
          } else if (const KeyValue* mine = r->responses.at(0).get().first(); mine && mine->lease == lease) {
            a.revision = mine->create_revision;  // our own, from the first attempt
          } else if (heal) {
            a.released = true;  // the round completed: the key is not needed any more
            return then(a);
          } else {
            return then(Status(StatusCode::kAlreadyExists, party->key + " exists already"));
          }
          {
            std::lock_guard lock(self->mu_);
            if (party->arrived == 0) party->arrived = a.revision;
          }
          self->core_->metrics().add("etcd_recipes_barrier_arrivals_total", self->labels_, 1);
          then(a);
        });
  }

  void park(const std::shared_ptr<ClientLink>& link, const std::shared_ptr<Party>& party, const CallOptions& options,
            Callback<void> done) {
    int64_t arrived = 0;
    {
      std::lock_guard lock(mu_);
      arrived = party->arrived;
      live_[party->key] = party;
    }
    const std::string what = std::to_string(parties_) + " parties";
    released_->add_until(
        options,
        [self = shared_from_this(), link, party, done = std::move(done)](Result<void> r) mutable {
          self->finish(link, party, std::move(r), std::move(done));
        },
        what, static_cast<uint64_t>(arrived) + 1);
  }

  // A parked party ended: released, or it gives up (its deadline, stop
  // token, close). Giving up is a Txn that deletes its key only if the
  // round did not complete since it arrived — if it did, the round counted
  // this party, and it is released after all.
  void finish(const std::shared_ptr<ClientLink>& link, const std::shared_ptr<Party>& party, Result<void> r,
              Callback<void> done) {
    int64_t arrived = 0;
    {
      std::lock_guard lock(mu_);
      party->done = true;
      live_.erase(party->key);
      arrived = party->arrived;
    }
    if (r.ok()) {
      core_->metrics().add("etcd_recipes_barrier_released_total", labels_, 1);
      return done(Result<void>());
    }
    if (r.status().is(Errc::kClosed)) return done(std::move(r));  // the lease's revoke deletes the key
    give_up(link, party->key, arrived, std::move(r), std::move(done), /*attempt=*/1);
  }

  // The give-up Txn of a party that arrived at `arrived`:
  //   If mod_revision(NAME/ready) <= arrived Then Delete(key), Put(NAME/gave-up, id, record lease)
  void give_up(const std::shared_ptr<ClientLink>& link, const std::string& key, int64_t arrived, Result<void> r,
               Callback<void> done, int attempt) {
    with_record_lease(link, [self = shared_from_this(), link, key, arrived, attempt, r = std::move(r),
                             done = std::move(done)](Result<int64_t> lease) mutable {
      if (!lease.ok()) return self->gave_up(Result<TxnResponse>(lease.status()), std::move(r), std::move(done));
      Txn txn;
      txn.when(Compare::mod_revision(self->ready_) < arrived + 1)
          .then(Op::del(key), Op::put(self->gave_up_, self->core_->client_id(), PutOptions{.lease = *lease}));
      CallAccess::start_inline(link->client().txn(std::move(txn)),
                               [self, link, key, arrived, attempt, lease = *lease, r = std::move(r),
                                done = std::move(done)](Result<TxnResponse> t) mutable {
                                 // The record lease is gone (revoked by hand): a new one, once.
                                 if (!t.ok() && t.status().is(Errc::kLeaseNotFound) && attempt == 1) {
                                   self->forget_record_lease(lease);
                                   return self->give_up(link, key, arrived, std::move(r), std::move(done), attempt + 1);
                                 }
                                 self->gave_up(std::move(t), std::move(r), std::move(done));
                               });
    });
  }

  // The give-up Txn's outcome `t`: a failed guard means the round counted
  // this party after all (released); else the wait ends with `r`.
  void gave_up(Result<TxnResponse> t, Result<void> r, Callback<void> done) {
    if (t.ok() && !t->succeeded) {
      core_->metrics().add("etcd_recipes_barrier_released_total", labels_, 1);
      return done(Result<void>());
    }
    if (!t.ok()) {
      core_->record_error(core_->named(Status(
          t.status().code(), "a party that gave up could not delete its key (its lease will): " + t.status().message(),
          t.status().reason())));
    }
    done(std::move(r));
  }

  // The arrival that counted N parties at revision `counted` completes
  // the round:
  //   If every key under NAME/parties/ has mod_revision <= counted,
  //      mod_revision(NAME/gave-up) <= counted, mod_revision(NAME/ready) <= counted
  //   Then DeleteRange(NAME/parties/), Put(NAME/ready, id, record lease)
  //   Else Range(NAME/parties/, count)
  // so it counts exactly the parties present at `counted`. When the guard
  // fails, someone arrived, gave up or completed since: the recount at the
  // new revision decides again (a later arrival that counts N completes
  // the round itself, and one more attempt is harmless).
  void complete(const std::shared_ptr<ClientLink>& link, int64_t counted, int attempt) {
    with_record_lease(link, [self = shared_from_this(), link, counted, attempt](Result<int64_t> lease) {
      if (!lease.ok()) return self->completed(link, counted, attempt, 0, Result<TxnResponse>(lease.status()));
      Txn txn;
      txn.when(Compare::mod_revision(self->parties_prefix_).with_prefix() < counted + 1,
               Compare::mod_revision(self->gave_up_) < counted + 1, Compare::mod_revision(self->ready_) < counted + 1)
          .then(Op::del(self->parties_prefix_, DeleteOptions{.prefix = true}),
                Op::put(self->ready_, self->core_->client_id(), PutOptions{.lease = *lease}))
          .otherwise(Op::get(self->parties_prefix_, GetOptions{.prefix = true, .count_only = true}));
      CallAccess::start_inline(link->client().txn(std::move(txn)),
                               [self, link, counted, attempt, lease = *lease](Result<TxnResponse> r) {
                                 self->completed(link, counted, attempt, lease, std::move(r));
                               });
    });
  }

  // What the completion Txn (with the record lease `lease`) answered.
  void completed(const std::shared_ptr<ClientLink>& link, int64_t counted, int attempt, int64_t lease,
                 Result<TxnResponse> r) {
    if (!r.ok() && lease != 0 && r.status().is(Errc::kLeaseNotFound) && attempt < kMaxArrivalAttempts) {
      // The record lease is gone (revoked by hand): a new one.
      forget_record_lease(lease);
      return complete(link, counted, attempt + 1);
    }
    if (!r.ok()) {
      // Not applied, or unknown: the same guarded Txn again is safe
      // (if it was applied, its guard now fails and the recount ends it).
      if (attempt < kMaxArrivalAttempts && transient(r.status())) {
        run_after(link->executor(), kArrivalBackoff * attempt,
                  [self = shared_from_this(), link, counted, attempt] { self->complete(link, counted, attempt + 1); });
        return;
      }
      return core_->record_error(core_->named(
          Status(r.status().code(), "completing a round failed: " + r.status().message(), r.status().reason())));
    }
    if (r->succeeded) {
      core_->metrics().add("etcd_recipes_barrier_rounds_total", labels_, 1);
      return;
    }
    const int64_t count = r->responses.at(0).get().count;
    if (count < parties_) return;
    if (attempt >= kMaxCompletionAttempts) {
      return core_->record_error(
          core_->named(Status(StatusCode::kAborted, "completing a round: gave up after " + std::to_string(attempt) +
                                                        " attempts (parties keep arriving and leaving)")));
    }
    complete(link, r->header.revision, attempt + 1);
  }

  // The lease that NAME/ready and NAME/gave-up are written under: granted
  // with a TTL of twice the outcome window and used while at least one
  // window of it is left, so that every record outlives its write by a
  // window (and by two at most). It is never kept alive nor revoked: the
  // records must outlive this object.
  void with_record_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then) {
    const auto now = Clock::now();
    int64_t usable = 0;
    {
      std::lock_guard lock(mu_);
      if (record_lease_ != 0 && now < record_usable_until_) usable = record_lease_;
    }
    if (usable != 0) return then(usable);
    CallAccess::start_inline(link->client().lease_grant(2 * window_),
                             [self = shared_from_this(), now, then = std::move(then)](Result<LeaseGrantResponse> g) {
                               if (!g.ok()) return then(std::move(g).status());
                               {
                                 std::lock_guard lock(self->mu_);
                                 self->record_lease_ = g->id;
                                 // The server counts from its grant, after `now`.
                                 self->record_usable_until_ = now + std::chrono::seconds(g->ttl) - self->window_;
                               }
                               then(g->id);
                             });
  }
  void forget_record_lease(int64_t lease) {
    std::lock_guard lock(mu_);
    if (record_lease_ == lease) record_lease_ = 0;
  }

  // The lease was re-granted after a loss: the parties still waiting
  // arrive again (only while their round is open), and may complete it.
  Call<void> restore(int64_t lease) {
    auto link = core_->link();
    std::vector<std::shared_ptr<Party>> live;
    {
      std::lock_guard lock(mu_);
      for (auto& [key, p] : live_) live.push_back(p);
    }
    if (!link || live.empty()) return Call<void>::ready(Result<void>(), executor_or_system(link));
    return Call<void>(
        [self = shared_from_this(), link, lease, live = std::move(live)](CallOptions, Callback<void> done) {
          struct Pending {
            size_t left;
            Status first_error;
            Callback<void> done;
            std::mutex mu;
          };
          auto pending = std::make_shared<Pending>();
          pending->left = live.size();
          pending->done = std::move(done);
          for (auto& party : live) {
            self->arrive(link, party, lease, /*heal=*/true, [self, link, pending](Result<Arrival> r) {
              if (r.ok() && !r->released && r->count >= self->parties_) self->complete(link, r->revision, 1);
              bool last = false;
              {
                std::lock_guard lock(pending->mu);
                if (!r.ok() && pending->first_error.ok()) pending->first_error = r.status();
                last = --pending->left == 0;
              }
              if (last) {
                pending->done(pending->first_error.ok() ? Result<void>() : Result<void>(pending->first_error));
              }
            });
          }
        },
        link->executor());
  }

  void presence_event(PresenceEvent event, const Status& why) {
    bool owns = false;
    {
      std::lock_guard lock(mu_);
      owns = !live_.empty();
    }
    loss_.on_event(*core_, event, why, owns, "the parties' lease", "they do not count until they arrive again");
  }

  const std::shared_ptr<RecipeCore> core_;
  const std::string parties_prefix_;
  const std::string ready_;
  const std::string gave_up_;
  const std::string party_base_;
  const Labels labels_;
  const int64_t parties_;
  const std::chrono::seconds ttl_;
  const std::chrono::seconds window_;  // CountBarrierOptions::outcome_window
  const std::shared_ptr<WaiterSet> released_;
  std::shared_ptr<OwnPresence> presence_;  // set by install()
  PresenceLossReport loss_;

  std::mutex mu_;
  std::shared_ptr<PrefixView> view_;
  uint64_t next_party_ = 0;
  std::map<std::string, std::shared_ptr<Party>> live_;  // parked parties, by key
  int64_t record_lease_ = 0;                            // with_record_lease()
  Clock::time_point record_usable_until_{};
};

}  // namespace etcd::recipes::detail

namespace etcd::recipes {

DistributedBarrierWithCount::DistributedBarrierWithCount(Client client, std::string name, int64_t parties)
    : DistributedBarrierWithCount(std::move(client), std::move(name), parties, RecipeOptions()) {}

DistributedBarrierWithCount::DistributedBarrierWithCount(Client client, std::string name, int64_t parties,
                                                         RecipeOptions options)
    : DistributedBarrierWithCount(std::move(client), std::move(name), parties, std::move(options),
                                  CountBarrierOptions()) {}

DistributedBarrierWithCount::DistributedBarrierWithCount(Client client, std::string name, int64_t parties,
                                                         RecipeOptions options, CountBarrierOptions barrier) {
  const auto ttl = options.session_ttl;
  Status input = detail::check_parties(parties);
  if (input.ok() && barrier.outcome_window < std::chrono::seconds(1)) {
    input = InvalidArgument("outcome_window must be at least 1 s (got " +
                            std::to_string(barrier.outcome_window.count()) + " s)");
  }
  auto core = detail::OwnPresence::make_core(std::move(client), "DistributedBarrierWithCount", std::move(name),
                                             std::move(options), std::move(input));
  state_ = std::make_shared<detail::RendezvousState>(core, parties, ttl, barrier.outcome_window);
  state_->install();
  bind_recipe(std::move(core));
}

int64_t DistributedBarrierWithCount::parties() const { return state_->parties(); }
Call<void> DistributedBarrierWithCount::wait() { return state_->wait(); }
Call<int64_t> DistributedBarrierWithCount::waiting() { return state_->waiting(); }

namespace detail {

bool wait_until(Call<void> call, Deadline deadline) {
  auto r = std::move(call).deadline(deadline).wait();
  if (r.ok()) return true;
  if (r.status().code() == StatusCode::kDeadlineExceeded) return false;
  throw Error(std::move(r).status());
}

}  // namespace detail

}  // namespace etcd::recipes
