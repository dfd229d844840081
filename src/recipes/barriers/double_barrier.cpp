// DistributedDoubleBarrier: the design and the keys are in
// include/etcd/recipes/barrier.h; docs/recipes/barriers.md has the Txns.
//
// One party per object. Its state lives on the recipe's strand, where the
// view of NAME/parties/ and NAME/ready delivers its batches and where every
// Txn's answer comes back: each of them re-evaluates what the party does
// next (arrive, complete the round, find it entered or left), so an answer
// and a view event never race.
#include <asio/post.hpp>
#include <asio/system_executor.hpp>

#include "../core/calls.h"
#include "../core/key_path.h"
#include "../core/keys.h"
#include "../core/own_presence.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "../core/strand_steps.h"
#include "../core/waiters.h"
#include "../core/waiting.h"
#include "barrier_input.h"
#include "barrier_keys.h"
#include "etcd/recipes/barrier.h"
#include "etcd/txn.h"

namespace etcd::recipes::detail {

class DoubleBarrierState : public std::enable_shared_from_this<DoubleBarrierState> {
 public:
  DoubleBarrierState(std::shared_ptr<RecipeCore> core, int64_t parties, std::chrono::seconds ttl)
      : core_(std::move(core)),
        parties_prefix_(dir_under(core_->name(), barrier_keys::kParties)),
        ready_(key_under(core_->name(), barrier_keys::kReady)),
        my_key_(parties_prefix_ + core_->client_id() + "-" + random_id()),
        parties_(parties),
        ttl_(ttl) {}

  void install() { presence_ = attach_presence(shared_from_this(), *core_, ttl_, "the party's lease"); }

  int64_t parties() const { return parties_; }

  bool entered() const {
    std::lock_guard lock(mu_);
    return phase_ == Phase::kIn;
  }

  Call<void> enter() { return begin(Phase::kEntering); }
  Call<void> leave() { return begin(Phase::kLeaving); }

 private:
  // attach_presence() reaches presence_event() and restore().
  template <class Owner>
  friend std::shared_ptr<OwnPresence> attach_presence(const std::shared_ptr<Owner>&, RecipeCore&, std::chrono::seconds,
                                                      std::string);

  enum class Phase { kOut, kEntering, kIn, kLeaving };

  // What the view shows, for one evaluation.
  struct Look {
    bool initialized = false;
    int64_t ready = 0;   // create revision of NAME/ready (0: no round)
    int64_t count = 0;   // party keys
    int64_t newest = 0;  // the highest create revision among them
    bool mine = false;   // our key is among them
  };

  Call<void> begin(Phase to) {
    return core_->call<void>([self = shared_from_this(), to](CallOptions options, Callback<void> done) {
      auto link = self->core_->link();
      if (Status st = self->core_->usable(link); !st.ok()) return done(st);
      asio::post(link->strand(), [self, link, to, options, done = std::move(done)]() mutable {
        self->begin_on_strand(link, to, options, std::move(done));
      });
    });
  }

  void begin_on_strand(const std::shared_ptr<ClientLink>& link, Phase to, const CallOptions& options,
                       Callback<void> done) {
    std::shared_ptr<WaiterSet> op;
    {
      std::lock_guard lock(mu_);
      const Phase expected = to == Phase::kEntering ? Phase::kOut : Phase::kIn;
      if (phase_ != expected) {
        return done(core_->named(Status(StatusCode::kFailedPrecondition, to == Phase::kEntering
                                                                             ? "enter: this party has entered already"
                                                                             : "leave: this party has not entered")));
      }
      phase_ = to;
      op_ = op = std::make_shared<WaiterSet>(core_);
    }
    ensure_view();
    const char* what = to == Phase::kEntering ? "the parties to enter" : "the parties to leave";
    op->add(
        options,
        [self = shared_from_this(), link, to, op, done = std::move(done)](Result<void> r) mutable {
          asio::post(link->strand(), [self, link, to, op, r = std::move(r), done = std::move(done)]() mutable {
            self->op_ended(link, to, op, std::move(r), std::move(done));
          });
        },
        what);
    if (to == Phase::kLeaving) depart(link);
    evaluate(link);
  }

  void ensure_view() {
    if (view_) return;
    PrefixView::Options options;
    options.range_end = ready_ + '\0';  // [NAME/parties/, NAME/ready]
    options.accept = [prefix = parties_prefix_, ready = ready_](std::string_view key) {
      return key == ready || key.starts_with(prefix);
    };
    std::weak_ptr<DoubleBarrierState> weak = weak_from_this();
    view_ = PrefixView::create(core_, parties_prefix_, std::move(options), [weak](const ViewBatch&) {
      auto self = weak.lock();
      if (!self) return;
      if (auto link = self->core_->link()) self->evaluate(link);
    });
    view_->start();
  }

  Look look() const {
    Look l;
    if (!view_ || !view_->initialized()) return l;
    l.initialized = true;
    view_->read([&](const ViewMap& state, int64_t) {
      for (const auto& [key, entry] : state) {
        if (key == ready_) {
          l.ready = entry.create_revision;
          continue;
        }
        ++l.count;
        l.newest = std::max(l.newest, entry.create_revision);
        if (key == my_key_) l.mine = true;
      }
    });
    return l;
  }

  // On the strand: what the party does next.
  void evaluate(const std::shared_ptr<ClientLink>& link) {
    const Look l = look();
    if (!l.initialized) return;
    std::shared_ptr<WaiterSet> done;
    std::shared_ptr<WaiterSet> ended;  // ready once the round is cleared
    bool arrive = false;
    bool complete = false;
    bool clear_round = false;
    int64_t round = 0;
    {
      std::lock_guard lock(mu_);
      switch (phase_) {
        case Phase::kEntering:
          if (arrived_ != 0 && l.ready > arrived_) {
            phase_ = Phase::kIn;
            round_ = l.ready;
            done = op_;
          } else if (arrived_ == 0 && !busy_ && l.ready == 0) {
            busy_ = arrive = true;
          } else if (arrived_ == 0 && l.ready != 0 && l.count == 0) {
            // A round whose parties all died (or closed) without leaving:
            // nobody is left to end it, so whoever wants in does.
            clear_round = true;
            round = l.ready;
          } else if (arrived_ != 0 && !busy_ && l.ready == 0 && l.mine && l.count >= parties_ && l.newest == arrived_) {
            // The newest arrival completes the round (one write, not N).
            busy_ = complete = true;
          }
          break;
        case Phase::kLeaving:
          if (l.ready != round_ || l.count == 0) {
            phase_ = Phase::kOut;
            clear_round = l.ready == round_ && l.count == 0;
            round = round_;
            // The last parties out end the round before their leave returns,
            // so that a process that exits right after it leaves no key.
            if (clear_round) {
              ended = op_;
            } else {
              done = op_;
            }
          }
          break;
        case Phase::kOut:
        case Phase::kIn:
          break;
      }
    }
    if (done) done->set_ready(true);
    if (arrive) send_arrival(link);
    if (complete) send_completion(link);
    if (clear_round) send_clear(link, round, std::move(ended));
  }

  // If create_revision(NAME/ready) == 0 && create_revision(key) == 0 Then Put(key, id, lease):
  // a party arrives only between rounds.
  void send_arrival(const std::shared_ptr<ClientLink>& link) {
    presence_->with_lease(
        link,
        [self = shared_from_this(), link](Result<int64_t> lease) {
          if (!lease.ok()) return self->step_failed(link, std::move(lease).status());
          Txn txn;
          txn.when(Compare::create_revision(self->ready_) == 0, Compare::create_revision(self->my_key_) == 0)
              .then(Op::put(self->my_key_, self->core_->client_id(), PutOptions{.lease = *lease}))
              .otherwise(Op::get(self->my_key_));
          run_on_strand(link->strand(), link->client().txn(std::move(txn)),
                        [self, link, lease = *lease](Result<TxnResponse> r) {
                          if (!r.ok()) return self->step_failed(link, std::move(r).status());
                          int64_t stray = 0;
                          {
                            std::lock_guard lock(self->mu_);
                            self->busy_ = false;
                            const KeyValue* mine = r->succeeded ? nullptr : r->responses.at(0).get().first();
                            if (self->phase_ == Phase::kEntering) {
                              if (r->succeeded) self->arrived_ = r->header.revision;
                              // A resent arrival whose first attempt got through.
                              if (mine && mine->lease == lease) self->arrived_ = mine->create_revision;
                            } else if (r->succeeded) {
                              // The enter ended (withdrew) while it was arriving.
                              stray = r->header.revision;
                            }
                          }
                          if (stray != 0) {
                            remove_key(link, self->core_, self->my_key_, stray, "withdrawing from the double barrier");
                          }
                          self->evaluate(link);
                        });
        },
        &link->strand());
  }

  // If create_revision(NAME/ready) == 0 Then Put(NAME/ready, id): the round starts.
  void send_completion(const std::shared_ptr<ClientLink>& link) {
    Txn txn;
    txn.when(Compare::create_revision(ready_) == 0).then(Op::put(ready_, core_->client_id()));
    run_on_strand(link->strand(), link->client().txn(std::move(txn)),
                  [self = shared_from_this(), link](Result<TxnResponse> r) {
                    if (!r.ok()) return self->step_failed(link, std::move(r).status());
                    {
                      std::lock_guard lock(self->mu_);
                      self->busy_ = false;
                    }
                    self->evaluate(link);
                  });
  }

  // If create_revision(key) == arrived Then Delete(key).
  void depart(const std::shared_ptr<ClientLink>& link) {
    int64_t arrived = 0;
    {
      std::lock_guard lock(mu_);
      arrived = arrived_;
      arrived_ = 0;
    }
    if (arrived == 0) return;
    remove_key(link, core_, my_key_, arrived, "leaving the double barrier");
  }

  // The last party out ends the round, so that the next one can begin:
  // If create_revision(NAME/ready) == round && no key under NAME/parties/ Then Delete(NAME/ready).
  // A leave waiting on it (`ended`) completes once the answer is in, either way.
  void send_clear(const std::shared_ptr<ClientLink>& link, int64_t round, std::shared_ptr<WaiterSet> ended) {
    Txn txn;
    txn.when(Compare::create_revision(ready_) == round, Compare::create_revision(parties_prefix_).with_prefix() == 0)
        .then(Op::del(ready_));
    CallAccess::start_inline(link->client().txn(std::move(txn)), [self = shared_from_this(), ended = std::move(ended)](
                                                                     Result<TxnResponse> r) {
      if (ended) ended->set_ready(true);
      if (!r.ok()) {
        self->core_->record_error(self->core_->named(
            Status(r.status().code(), "ending the round failed (the next party out will): " + r.status().message(),
                   r.status().reason())));
      }
    });
  }

  // An arrival or completion failed: the enter fails with it.
  void step_failed(const std::shared_ptr<ClientLink>& link, Status why) {
    std::shared_ptr<WaiterSet> op;
    {
      std::lock_guard lock(mu_);
      busy_ = false;
      op = op_;
    }
    if (op) op->fail_all(core_->named(std::move(why)));
    (void)link;
  }

  // An enter or leave call ended (on the strand).
  void op_ended(const std::shared_ptr<ClientLink>& link, Phase to, const std::shared_ptr<WaiterSet>& op, Result<void> r,
                Callback<void> done) {
    int64_t arrived = 0;
    bool answer_now = false;
    {
      std::lock_guard lock(mu_);
      if (op_ == op) op_.reset();
      if (r.ok() || phase_ != Phase::kEntering) {
        // Done; or a leave that ran out of time: our key is gone, so this
        // party has left all the same.
        if (!r.ok() && to == Phase::kLeaving) phase_ = Phase::kOut;
        answer_now = true;
      } else {
        arrived = arrived_;
        phase_ = Phase::kOut;
        arrived_ = 0;
      }
    }
    if (answer_now) return done(std::move(r));
    if (arrived == 0 || r.status().is(Errc::kClosed)) return done(std::move(r));
    // Withdraw, unless the round started with us in it: then we are in.
    //   If create_revision(NAME/ready) == 0 && create_revision(key) == arrived Then Delete(key) Else Get(NAME/ready)
    Txn txn;
    txn.when(Compare::create_revision(ready_) == 0, Compare::create_revision(my_key_) == arrived)
        .then(Op::del(my_key_))
        .otherwise(Op::get(ready_));
    run_on_strand(
        link->strand(), link->client().txn(std::move(txn)),
        [self = shared_from_this(), arrived, r = std::move(r), done = std::move(done)](Result<TxnResponse> t) mutable {
          if (t.ok() && !t->succeeded) {
            const KeyValue* ready = t->responses.at(0).get().first();
            if (ready && ready->create_revision > arrived) {
              {
                std::lock_guard lock(self->mu_);
                self->phase_ = Phase::kIn;
                self->round_ = ready->create_revision;
                self->arrived_ = arrived;
              }
              return done(Result<void>());
            }
          }
          done(std::move(r));
        });
  }

  // The lease was re-granted after a loss (our key went with the old one).
  Call<void> restore(int64_t lease) {
    auto link = core_->link();
    if (!link) return Call<void>::ready(core_->closed_status(), executor_or_system(link));
    asio::post(link->strand(), [self = shared_from_this(), link, lease] { self->rejoin(link, lease); });
    return Call<void>::ready(Result<void>(), link->executor());
  }

  // On the strand: an entering party arrives again (unless its round
  // started meanwhile, with it); a party in a round re-creates its key if
  // the round still runs, so that the others wait for it to leave.
  void rejoin(const std::shared_ptr<ClientLink>& link, int64_t lease) {
    const Look l = look();
    int64_t round = 0;
    {
      std::lock_guard lock(mu_);
      if (phase_ == Phase::kEntering && arrived_ != 0 && !(l.initialized && l.ready > arrived_)) arrived_ = 0;
      if (phase_ == Phase::kIn) round = round_;
    }
    if (round != 0) {
      Txn txn;
      txn.when(Compare::create_revision(ready_) == round, Compare::create_revision(my_key_) == 0)
          .then(Op::put(my_key_, core_->client_id(), PutOptions{.lease = lease}));
      run_on_strand(link->strand(), link->client().txn(std::move(txn)),
                    [self = shared_from_this(), link](Result<TxnResponse> r) {
                      if (r.ok() && r->succeeded) {
                        std::lock_guard lock(self->mu_);
                        if (self->phase_ == Phase::kIn) self->arrived_ = r->header.revision;
                      }
                    });
    }
    evaluate(link);
  }

  void presence_event(PresenceEvent event, const Status& why) {
    bool owns = false;
    {
      std::lock_guard lock(mu_);
      owns = phase_ != Phase::kOut;
    }
    loss_.on_event(*core_, event, why, owns, "the party's lease", "it arrives again where its round allows");
  }

  const std::shared_ptr<RecipeCore> core_;
  const std::string parties_prefix_;
  const std::string ready_;
  const std::string my_key_;
  const int64_t parties_;
  const std::chrono::seconds ttl_;
  std::shared_ptr<OwnPresence> presence_;  // set by install()
  PresenceLossReport loss_;
  std::shared_ptr<PrefixView> view_;  // created on the strand

  mutable std::mutex mu_;  // the strand changes these; entered() reads them
  Phase phase_ = Phase::kOut;
  int64_t arrived_ = 0;  // create revision of our key (0: none)
  int64_t round_ = 0;    // create revision of NAME/ready of the round we are in
  bool busy_ = false;    // an arrival or completion Txn is in flight
  std::shared_ptr<WaiterSet> op_;
};

}  // namespace etcd::recipes::detail

namespace etcd::recipes {

DistributedDoubleBarrier::DistributedDoubleBarrier(Client client, std::string name, int64_t parties)
    : DistributedDoubleBarrier(std::move(client), std::move(name), parties, RecipeOptions()) {}

DistributedDoubleBarrier::DistributedDoubleBarrier(Client client, std::string name, int64_t parties,
                                                   RecipeOptions options) {
  const auto ttl = options.session_ttl;
  auto core = detail::OwnPresence::make_core(std::move(client), "DistributedDoubleBarrier", std::move(name),
                                             std::move(options), detail::check_parties(parties));
  state_ = std::make_shared<detail::DoubleBarrierState>(core, parties, ttl);
  state_->install();
  bind_recipe(std::move(core));
}

int64_t DistributedDoubleBarrier::parties() const { return state_->parties(); }
Call<void> DistributedDoubleBarrier::enter() { return state_->enter(); }
Call<void> DistributedDoubleBarrier::leave() { return state_->leave(); }
bool DistributedDoubleBarrier::entered() const { return state_->entered(); }

}  // namespace etcd::recipes
