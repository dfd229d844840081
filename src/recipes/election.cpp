// LeaderLatch and LeaderSelector over one campaign engine (Candidate).
#include "etcd/recipes/election.h"

#include "election_common.h"
#include "core/keys.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <condition_variable>
#include <deque>
#include <thread>

namespace etcd::recipes {

using detail::KeyClaims;
using detail::lease_hex;
using detail::seconds_since;

namespace detail {

// One candidate of an election: the campaign of etcd's Go
// concurrency.Election (create NAME/<lease hex> if absent; wait for the
// deletion of the key created just before ours; the lowest create revision
// leads), plus loss detection while leading (session lost, key deleted).
//
// Every step runs on `strand`; an epoch number invalidates the completions
// of steps that a later event (loss, resign, close) made obsolete. Fields
// that the public getters read are also guarded by `mu`.
//
// What it does on its own: a candidate that is waiting and loses its key or
// session joins the queue again (participation heals). What it leaves to its
// owner (hooks): what to do when elected, when a term is lost, and when the
// campaign cannot go on.
class Candidate : public std::enable_shared_from_this<Candidate> {
 public:
  enum class Phase { kIdle, kCampaigning, kLeader };
  struct Term {
    std::string key;
    int64_t token = 0;
    int64_t lease = 0;
    std::stop_token stop;
  };
  struct Hooks {
    std::function<void(const Term&)> elected;
    // The term ended against our will (its status: Errc::kHoldLost).
    std::function<void(const Term&, const Status&)> lost;
    // The campaign stopped for good (bad input, shared session gone, ...).
    std::function<void(const Status&)> failed;
  };
  struct ResignOutcome {
    bool was_leader = false;
    bool intact = false;  // was leading and its key was still there
  };

  Candidate(std::shared_ptr<RecipeCore> core_in, Status input, std::string value)
      : core(std::move(core_in)),
        input_status(std::move(input)),
        prefix(core->name() + "/"),
        strand(asio::make_strand(core->client().executor())),
        labels(election_labels(core->name())),
        value_(std::move(value)) {
    term_stop_.request_stop();  // not leading: the token reads as stopped
  }

  const std::shared_ptr<RecipeCore> core;
  const Status input_status;
  const std::string prefix;
  const asio::strand<Executor> strand;
  const Labels labels;
  Hooks hooks;  // set before the first campaign

  // --- thread-safe getters -----------------------------------------------

  Phase phase() const {
    std::lock_guard lock(mu_);
    return phase_;
  }
  std::optional<Term> term() const {
    std::lock_guard lock(mu_);
    if (phase_ != Phase::kLeader) return std::nullopt;
    return Term{my_key_, my_rev_, my_lease_, term_stop_.get_token()};
  }
  std::string key() const {
    std::lock_guard lock(mu_);
    return my_key_;
  }
  std::stop_token leadership_token() const {
    std::lock_guard lock(mu_);
    return term_stop_.get_token();
  }
  std::string value() const {
    std::lock_guard lock(mu_);
    return value_;
  }
  void set_value(std::string v) {
    std::lock_guard lock(mu_);
    value_ = std::move(v);
  }
  // Requests the current term's stop_token; the term goes on until resigned.
  void interrupt() {
    std::stop_source s;
    {
      std::lock_guard lock(mu_);
      if (phase_ != Phase::kLeader) return;
      s = term_stop_;
    }
    s.request_stop();
  }

  // --- on the strand -----------------------------------------------------

  // Joins the queue, unless already in it (or closed).
  void campaign() {
    if (core->closed() || phase_ != Phase::kIdle) return;
    if (removals_in_flight_ > 0) {
      // Our previous key may still exist: a campaign on the same session
      // would adopt it, and the delete in flight would then end the new term.
      campaign_deferred_ = true;
      return;
    }
    if (!input_status.ok()) {
      core->record_error(input_status);
      if (hooks.failed) hooks.failed(input_status);
      return;
    }
    set_phase(Phase::kCampaigning);
    failures_ = 0;
    campaign_started_ = Clock::now();
    const uint64_t e = ++epoch_;
    get_session(e);
  }

  // Leaves the queue: ends a term, deletes our key (if it is still the one
  // we created), and reports what there was.
  void resign(std::function<void(ResignOutcome)> done) {
    campaign_deferred_ = false;
    const bool was_leader = phase_ == Phase::kLeader;
    std::string key;
    int64_t rev;
    {
      std::lock_guard lock(mu_);
      key = my_key_;
      rev = my_rev_;
      my_rev_ = 0;
    }
    if (was_leader) term_ended(/*lost=*/false);
    set_phase(Phase::kIdle);
    quiesce();
    if (rev == 0) {
      if (done) done(ResignOutcome{was_leader, false});
      return;
    }
    remove(key, rev, [done, was_leader](bool deleted) {
      if (done) done(ResignOutcome{was_leader, was_leader && deleted});
    });
  }

  // After core->close(): resigns and gives up the key claim.
  void shutdown(std::function<void(ResignOutcome)> done) {
    resign(std::move(done));
    if (!claimed_key_.empty()) {
      KeyClaims::unclaim(claimed_key_);
      claimed_key_.clear();
    }
  }

  // Runs `txn` only while our key still has create revision `rev`.
  static Call<TxnResponse> guarded(const std::shared_ptr<RecipeCore>& core, const std::string& key, int64_t rev,
                                   Txn txn) {
    auto& client = core->client();
    if (rev == 0) {
      return Call<TxnResponse>::ready(
          Status(StatusCode::kFailedPrecondition, core->identity() + ": not the leader; nothing was written",
                 Errc::kHoldLost),
          client.executor());
    }
    auto outer = std::make_shared<Call<TxnResponse>>(
        client.txn(Txn().when(Compare::create_revision(key) == rev).then(Op::txn(std::move(txn)))));
    return Call<TxnResponse>(
        [outer, core](CallOptions options, Callback<TxnResponse> done) {
          if (options.deadline) outer->deadline(*options.deadline);
          outer->stop_token(options.stop);
          CallAccess::start_inline(
              CallAccess::caller_waits(std::move(*outer), options.caller_waits),
              [core, done = std::move(done)](Result<TxnResponse> r) {
                if (!r.ok()) return done(std::move(r).status());
                if (!r->succeeded) {
                  return done(Status(StatusCode::kFailedPrecondition,
                                     core->identity() + ": leadership is gone (the term ended); nothing "
                                                        "was written",
                                     Errc::kHoldLost));
                }
                done(TxnResponse(r->responses.at(0).txn()));
              });
        },
        client.executor());
  }

  // Sets our key's value while the term with token `rev` lasts.
  static Call<void> proclaim(const std::shared_ptr<Candidate>& self, const std::string& key, int64_t rev,
                             std::string value) {
    PutOptions keep_lease;
    keep_lease.ignore_lease = true;
    auto call = guarded(self->core, key, rev, Txn().then(Op::put(key, value, keep_lease)));
    std::weak_ptr<Candidate> weak = self;
    return map_call<void>(std::move(call), self->core->client().executor(),
                          [weak, value = std::move(value)](const TxnResponse&) {
                            if (auto c = weak.lock()) c->set_value(value);
                            return Result<void>();
                          });
  }

 private:
  void set_phase(Phase p) {
    std::stop_source ended;
    {
      std::lock_guard lock(mu_);
      if (p == Phase::kLeader && phase_ != Phase::kLeader) term_stop_ = std::stop_source();
      if (p != Phase::kLeader && phase_ == Phase::kLeader) ended = term_stop_;
      phase_ = p;
    }
    ended.request_stop();  // outside the lock: stop callbacks run here
  }

  bool stale(uint64_t e) const { return e != epoch_ || core->closed(); }

  // Drops every registration of the current step.
  void quiesce() {
    ++epoch_;
    ++watch_gen_;
    watch_.cancel();
    watch_ = Watcher();
    if (retry_timer_) {
      retry_timer_->cancel();
      retry_timer_.reset();
    }
    session_lost_sub_.reset();
  }

  template <class T, class F>
  void run(Call<T> call, F f) {
    run_on_strand(shared_from_this(), std::move(call), std::move(f));
  }

  void retry_later(uint64_t e, std::function<void()> step) {
    retry_on_strand(
        shared_from_this(), failures_, retry_timer_, 1000, [self = shared_from_this(), e] { return self->stale(e); },
        std::move(step));
  }

  // A failed step: transient failures are retried, the rest stop the campaign.
  void on_error(uint64_t e, const Status& st, std::function<void()> retry) {
    if (stale(e)) return;
    if (transient(st)) return retry_later(e, std::move(retry));
    fail(e, st);
  }

  void fail(uint64_t e, const Status& st) {
    if (stale(e)) return;
    std::string key;
    int64_t rev;
    {
      std::lock_guard lock(mu_);
      key = my_key_;
      rev = my_rev_;
      my_rev_ = 0;
    }
    if (phase_ == Phase::kLeader) term_ended(/*lost=*/true);
    set_phase(Phase::kIdle);
    quiesce();
    if (rev != 0) remove(key, rev, nullptr);
    Status named = core->named(Status(st.code(), "campaign stopped: " + st.message(), st.reason()));
    core->record_error(named);
    if (hooks.failed) hooks.failed(named);
  }

  // Our key or session vanished while we waited: queue again (with backoff).
  void restart(uint64_t e) {
    if (stale(e)) return;
    {
      std::lock_guard lock(mu_);
      my_rev_ = 0;
    }
    quiesce();
    const uint64_t next = epoch_;
    retry_later(next, [self = shared_from_this(), next] { self->get_session(next); });
  }

  void get_session(uint64_t e) {
    run(core->session(), [self = shared_from_this(), e](Result<std::shared_ptr<Session>> s) {
      if (self->stale(e)) return;
      if (!s.ok()) return self->on_error(e, s.status(), [self, e] { self->get_session(e); });
      self->with_session(e, *s);
    });
  }

  bool claim(const std::string& key) {
    if (claimed_key_ == key) return true;
    if (!claimed_key_.empty()) KeyClaims::unclaim(claimed_key_);  // a new session: the old key is history
    claimed_key_.clear();
    if (!KeyClaims::claim(key)) return false;
    claimed_key_ = key;
    return true;
  }

  void with_session(uint64_t e, const std::shared_ptr<Session>& s) {
    const std::string key = prefix + lease_hex(s->lease_id());
    if (!claim(key)) {
      return fail(e, Status(StatusCode::kFailedPrecondition,
                            "another recipe object of this process uses key " + key +
                                " (the same name on the same session); give it its own session"));
    }
    std::weak_ptr<Candidate> weak = shared_from_this();
    session_lost_sub_ = s->on_lost([weak, e](const Status& why) {
      if (auto self = weak.lock()) asio::post(self->strand, [self, e, why] { self->on_session_lost(e, why); });
    });
    create_key(e, key, s->lease_id());
  }

  // One round trip: create our key unless it exists, and read the leader.
  void create_key(uint64_t e, const std::string& key, int64_t lease) {
    GetOptions first_created;
    first_created.prefix = true;
    first_created.limit = 1;
    first_created.sort_order = SortOrder::kAscend;
    first_created.sort_target = SortTarget::kCreate;
    PutOptions with_lease;
    with_lease.lease = lease;
    const std::string proposal = value();
    Txn txn;
    txn.when(Compare::absent(key))
        .then({Op::put(key, proposal, with_lease), Op::get(prefix, first_created)})
        .otherwise({Op::get(key), Op::get(prefix, first_created)});
    run(core->client().txn(txn), [self = shared_from_this(), e, key, lease, proposal](Result<TxnResponse> r) {
      int64_t rev = 0;
      const KeyValue* existing = nullptr;
      if (r.ok()) {
        if (r->succeeded) {
          rev = r->header.revision;
        } else if ((existing = r->responses[0].get().first())) {
          rev = existing->create_revision;
        }
      }
      if (self->stale(e)) {
        // Resigned or closed while the key was being created: it must not
        // stay behind (unless a newer campaign adopted it).
        if (rev != 0 && (self->core->closed() || self->phase_ == Phase::kIdle)) self->remove(key, rev, nullptr);
        return;
      }
      if (!r.ok()) {
        // Create-if-absent is safe to repeat. A lease that is gone means our
        // session is gone: queue again once it has been replaced.
        if (r.status().is(Errc::kLeaseNotFound)) return self->restart(e);
        return self->on_error(e, r.status(), [self, e, key, lease] { self->create_key(e, key, lease); });
      }
      if (rev == 0) return self->restart(e);
      {
        std::lock_guard lock(self->mu_);
        self->my_key_ = key;
        self->my_rev_ = rev;
        self->my_lease_ = lease;
      }
      self->failures_ = 0;
      if (existing && existing->value != proposal) {
        // Our key from an earlier campaign on this session: bring its value
        // up to date, as Go's Campaign does.
        CallAccess::start_inline(proclaim(self, key, rev, proposal), [](Result<void>) {});
      }
      const auto* leader = r->responses[1].get().first();
      if (leader && leader->create_revision == rev) return self->become_leader(e, r->header.revision);
      self->wait_for_predecessor(e);
    });
  }

  // Anchored wait: read (our key, the last key created before ours) at one
  // revision, then watch only that key from the next revision.
  void wait_for_predecessor(uint64_t e) {
    std::string key;
    int64_t rev;
    {
      std::lock_guard lock(mu_);
      key = my_key_;
      rev = my_rev_;
    }
    GetOptions predecessor;
    predecessor.prefix = true;
    predecessor.limit = 1;
    predecessor.sort_order = SortOrder::kDescend;
    predecessor.sort_target = SortTarget::kCreate;
    predecessor.max_create_revision = rev - 1;
    run(core->client().txn(Txn().then({Op::get(key), Op::get(prefix, predecessor)})),
        [self = shared_from_this(), e, rev](Result<TxnResponse> r) {
          if (self->stale(e)) return;
          if (!r.ok()) return self->on_error(e, r.status(), [self, e] { self->wait_for_predecessor(e); });
          const auto* mine = r->responses[0].get().first();
          if (!mine || mine->create_revision != rev) return self->restart(e);  // our key is gone: queue again
          const auto* pred = r->responses[1].get().first();
          if (!pred) return self->become_leader(e, r->header.revision);
          self->watch_deletion(e, pred->key, r->header.revision + 1, [self, e](Result<WatchResponse>) {
            // Deleted (or the watch ended): look again from scratch.
            self->core->metrics().add("etcd_recipes_election_wakeups_total", self->labels, 1);
            self->wait_for_predecessor(e);
          });
        });
  }

  // Watches `key` from `from` for its deletion; `fire` runs once (on the
  // deletion or when the watch ends with an error).
  void watch_deletion(uint64_t e, const std::string& key, int64_t from,
                      std::function<void(Result<WatchResponse>)> fire) {
    const uint64_t gen = ++watch_gen_;
    WatchOptions options;
    options.start_revision = from;
    options.filter_puts = true;
    options.executor = Executor(strand);
    watch_ = core->client().watch(key, options,
                                  [self = shared_from_this(), e, gen, fire = std::move(fire)](Result<WatchResponse> r) {
                                    if (self->stale(e) || gen != self->watch_gen_) return;
                                    if (r.ok() && r->events.empty()) return;  // progress
                                    ++self->watch_gen_;                       // spent
                                    fire(std::move(r));
                                  });
  }

  void become_leader(uint64_t e, int64_t anchor) {
    set_phase(Phase::kLeader);
    failures_ = 0;
    leader_since_ = Clock::now();
    core->metrics().add("etcd_recipes_leadership_acquired_total", labels, 1);
    core->metrics().observe("etcd_recipes_leadership_wait_seconds", labels, seconds_since(campaign_started_));
    core->metrics().set("etcd_recipes_leader", labels, 1);
    watch_own_key(e, anchor + 1);
    if (hooks.elected) {
      if (auto t = term()) hooks.elected(*t);
    }
  }

  // While leading, our key's deletion (by anyone) ends the term.
  void watch_own_key(uint64_t e, int64_t from) {
    watch_deletion(e, key(), from, [self = shared_from_this(), e](Result<WatchResponse> r) {
      if (r.ok()) return self->lose(e, Status(StatusCode::kAborted, "its key was deleted", Errc::kHoldLost));
      self->verify_leadership(e);  // the watch ended (say, compaction while disconnected): look again
    });
  }

  void verify_leadership(uint64_t e) {
    std::string key;
    int64_t rev;
    {
      std::lock_guard lock(mu_);
      key = my_key_;
      rev = my_rev_;
    }
    run(core->client().get(key), [self = shared_from_this(), e, rev](Result<GetResponse> r) {
      if (self->stale(e)) return;
      if (!r.ok()) {
        if (transient(r.status())) return self->retry_later(e, [self, e] { self->verify_leadership(e); });
        return self->lose(e, r.status());
      }
      const auto* kv = r->first();
      if (!kv || kv->create_revision != rev) {
        return self->lose(e, Status(StatusCode::kAborted, "its key is gone", Errc::kHoldLost));
      }
      self->watch_own_key(e, r->header.revision + 1);
    });
  }

  void on_session_lost(uint64_t e, const Status& why) {
    if (stale(e)) return;
    if (phase_ == Phase::kLeader) {
      return lose(e, Status(StatusCode::kAborted, "its session was lost: " + why.message(), Errc::kHoldLost));
    }
    restart(e);  // a waiting candidate queues again on a new session
  }

  void lose(uint64_t e, const Status& why) {
    if (stale(e) || phase_ != Phase::kLeader) return;
    auto t = term();
    {
      std::lock_guard lock(mu_);
      my_rev_ = 0;
    }
    term_ended(/*lost=*/true);
    set_phase(Phase::kIdle);
    quiesce();
    // Best effort: the key is usually gone already (lease expired or key
    // deleted); after a local-only loss it must not outlive us.
    remove(t->key, t->token, nullptr);
    Status status(StatusCode::kAborted, core->identity() + ": leadership lost: " + why.message(), Errc::kHoldLost);
    core->record_error(status);
    if (hooks.lost) hooks.lost(*t, status);
  }

  void term_ended(bool lost) {
    if (lost) core->metrics().add("etcd_recipes_leadership_lost_total", labels, 1);
    core->metrics().observe("etcd_recipes_leadership_held_seconds", labels, seconds_since(leader_since_));
    core->metrics().set("etcd_recipes_leader", labels, 0);
  }

  // Deletes our key if it is still the one we created.
  // `then` runs on the thread that completed the delete, not on the strand
  // (so that a caller blocked on the strand, say a listener waiting for
  // resign(), still gets its answer): it must be quick and thread-safe.
  void remove(const std::string& key, int64_t rev, std::function<void(bool deleted)> then) {
    ++removals_in_flight_;
    CallAccess::start_inline(
        core->client().txn(Txn().when(Compare::create_revision(key) == rev).then(Op::del(key))),
        [self = shared_from_this(), then = std::move(then)](Result<TxnResponse> r) {
          if (!r.ok() && !r.status().is(Errc::kClosed)) {
            self->core->record_error(
                Status(r.status().code(), "deleting the candidate key: " + r.status().message(), r.status().reason()));
          }
          if (then) then(r.ok() && r->succeeded);
          asio::post(self->strand, [self] {
            if (--self->removals_in_flight_ == 0 && std::exchange(self->campaign_deferred_, false)) {
              self->campaign();
            }
          });
        });
  }

 public:
  // Runs `f` on the strand: at once if already there, posted otherwise.
  template <class F>
  void on_strand(F f) {
    if (strand.running_in_this_thread()) {
      f();
    } else {
      asio::post(strand, std::move(f));
    }
  }

 private:
  mutable std::mutex mu_;
  Phase phase_ = Phase::kIdle;  // written on the strand, under mu_
  std::string value_;
  std::string my_key_;
  int64_t my_rev_ = 0;
  int64_t my_lease_ = 0;
  std::stop_source term_stop_;

  // Strand only.
  uint64_t epoch_ = 0;
  uint64_t watch_gen_ = 0;
  int failures_ = 0;
  Clock::time_point campaign_started_{};
  Clock::time_point leader_since_{};
  Watcher watch_;
  std::shared_ptr<asio::steady_timer> retry_timer_;
  Subscription session_lost_sub_;
  std::string claimed_key_;
  int removals_in_flight_ = 0;
  bool campaign_deferred_ = false;
};

// --- LeaderLatch ----------------------------------------------------------------

class LatchState : public std::enable_shared_from_this<LatchState> {
 public:
  LatchState(Client client, std::string name, std::string value, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(std::move(client), "LeaderLatch", name, std::move(options))),
        candidate(std::make_shared<Candidate>(core, validate_election("LeaderLatch", name, core->options()),
                                              std::move(value))),
        waiters(std::make_shared<WaiterSet>(core)) {}

  void init() {
    std::weak_ptr<LatchState> weak = shared_from_this();
    candidate->hooks.elected = [weak](const Candidate::Term& t) {
      if (auto self = weak.lock()) self->on_elected(t);
    };
    candidate->hooks.lost = [weak](const Candidate::Term&, const Status& why) {
      if (auto self = weak.lock()) self->on_lost(why);
    };
    candidate->hooks.failed = [weak](const Status& why) {
      if (auto self = weak.lock()) self->on_failed(why);
    };
  }

  const std::shared_ptr<RecipeCore> core;
  const std::shared_ptr<Candidate> candidate;
  const std::shared_ptr<WaiterSet> waiters;
  const std::shared_ptr<ListenerList<int64_t>> is_leader = std::make_shared<ListenerList<int64_t>>();
  const std::shared_ptr<ListenerList<const Status&>> not_leader = std::make_shared<ListenerList<const Status&>>();

  mutable std::mutex mu;
  bool started = false;
  std::optional<Status> failure;

  // On the candidate's strand.
  void on_elected(const Candidate::Term& t) {
    // Listeners first: one registered after a waiter woke up must not hear
    // of this term.
    is_leader->post(candidate->strand, core, t.token);
    waiters->set_ready(true);
  }
  void on_lost(const Status& why) {
    waiters->set_ready(false);
    not_leader->post(candidate->strand, core, why);
    bool again;
    {
      std::lock_guard lock(mu);
      again = started;
    }
    if (again) candidate->campaign();  // at the back of the queue (on a new session if the old one is gone)
  }
  void on_failed(const Status& why) {
    {
      std::lock_guard lock(mu);
      failure = why;
    }
    waiters->fail_all(why);
  }
};

}  // namespace detail

LeaderLatch::LeaderLatch(Client client, std::string name, std::string value, RecipeOptions options)
    : state_(std::make_shared<detail::LatchState>(std::move(client), std::move(name), std::move(value),
                                                  std::move(options))) {
  bind_recipe(state_->core);
  state_->init();
}

LeaderLatch::~LeaderLatch() { close(); }

void LeaderLatch::start() {
  auto s = state_;
  if (s->core->closed()) return;
  {
    std::lock_guard lock(s->mu);
    s->started = true;
    s->failure.reset();
  }
  asio::post(s->candidate->strand, [s] {
    bool go;
    {
      std::lock_guard lock(s->mu);
      go = s->started;
    }
    if (go) s->candidate->campaign();
  });
}

bool LeaderLatch::has_leadership() const {
  return !state_->core->closed() && state_->candidate->phase() == detail::Candidate::Phase::kLeader;
}

Call<void> LeaderLatch::await_leadership() {
  auto s = state_;
  return Call<void>(
      [s](CallOptions options, Callback<void> done) {
        if (!s->candidate->input_status.ok()) return done(s->candidate->input_status);
        if (s->core->closed()) return done(s->core->closed_status());
        {
          std::unique_lock lock(s->mu);
          if (s->failure) {
            Status why = *s->failure;
            lock.unlock();
            return done(why);
          }
          if (!s->started) {
            lock.unlock();
            return done(s->core->named(Status(StatusCode::kFailedPrecondition, "not started (call start() first)")));
          }
        }
        s->waiters->add(options, std::move(done), "leadership");
      },
      s->core->client().executor());
}

Subscription LeaderLatch::on_is_leader(std::function<void(int64_t)> listener) {
  return state_->is_leader->add(std::move(listener));
}

Subscription LeaderLatch::on_not_leader(std::function<void(const Status&)> listener) {
  return state_->not_leader->add(std::move(listener));
}

int64_t LeaderLatch::term() const {
  auto t = state_->candidate->term();
  return t ? t->token : 0;
}

std::string LeaderLatch::key() const { return state_->candidate->key(); }

std::stop_token LeaderLatch::leadership_token() const { return state_->candidate->leadership_token(); }

Call<TxnResponse> LeaderLatch::guarded(Txn txn) {
  auto t = state_->candidate->term();
  return detail::Candidate::guarded(state_->core, t ? t->key : std::string(), t ? t->token : 0, std::move(txn));
}

Call<void> LeaderLatch::proclaim(std::string value) {
  auto t = state_->candidate->term();
  return detail::Candidate::proclaim(state_->candidate, t ? t->key : std::string(), t ? t->token : 0, std::move(value));
}

Call<bool> LeaderLatch::resign() {
  auto s = state_;
  return Call<bool>(
      [s](CallOptions, Callback<bool> done) {
        {
          std::lock_guard lock(s->mu);
          s->started = false;
        }
        // Inline when called from a listener (on the strand), so that
        // waiting for it there does not deadlock.
        s->candidate->on_strand([s, done = std::move(done)] {
          s->candidate->resign([s, done](detail::Candidate::ResignOutcome outcome) {
            if (outcome.was_leader) {
              s->waiters->set_ready(false);
              s->not_leader->post(s->candidate->strand, s->core, Status());
            }
            done(outcome.intact);
          });
        });
      },
      s->core->client().executor());
}

Call<std::vector<Participant>> LeaderLatch::participants() {
  return detail::read_participants(state_->core->client(), state_->candidate->input_status, state_->candidate->prefix);
}

Call<std::optional<LeaderInfo>> LeaderLatch::leader() {
  return detail::read_leader(state_->core->client(), state_->candidate->input_status, state_->candidate->prefix);
}

void LeaderLatch::close() {
  auto s = state_;
  if (s->core->closed()) return;
  s->core->close();  // parked waiters finish with kClosed
  asio::post(s->candidate->strand, [s] {
    s->candidate->shutdown([s](detail::Candidate::ResignOutcome outcome) {
      if (outcome.was_leader) s->not_leader->post(s->candidate->strand, s->core, s->core->closed_status());
    });
  });
}

// --- LeaderTerm ---------------------------------------------------------------------

Call<TxnResponse> LeaderTerm::guarded(Txn txn) const {
  if (!candidate_) {
    return Call<TxnResponse>::ready(Status(StatusCode::kFailedPrecondition, "an empty LeaderTerm", Errc::kHoldLost),
                                    Executor());
  }
  return detail::Candidate::guarded(candidate_->core, key_, token_, std::move(txn));
}

Call<void> LeaderTerm::proclaim(std::string value) const {
  if (!candidate_) {
    return Call<void>::ready(Status(StatusCode::kFailedPrecondition, "an empty LeaderTerm", Errc::kHoldLost),
                             Executor());
  }
  return detail::Candidate::proclaim(candidate_, key_, token_, std::move(value));
}

// --- LeaderSelector -------------------------------------------------------------------

namespace detail {

// The selector's own thread: runs one term's callback at a time.
class SelectorWorker : public std::enable_shared_from_this<SelectorWorker> {
 public:
  // A job is called with run=false when the worker stopped before it ran.
  using Job = std::function<void(bool run)>;

  void ensure_started() {
    std::lock_guard lock(thread_mu_);
    if (thread_.joinable() || joined_) return;
    thread_ = std::thread([self = shared_from_this()] { self->loop(); });
    thread_id_ = thread_.get_id();
  }

  void post(Job job) {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
    cv_.notify_all();
  }

  bool on_worker_thread() const {
    std::lock_guard lock(thread_mu_);
    return thread_id_ == std::this_thread::get_id();
  }

  // Stops after the current job and waits for it, unless called from the
  // worker thread itself (then the thread ends on its own, detached).
  void stop_and_join() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    std::lock_guard lock(thread_mu_);
    joined_ = true;
    if (!thread_.joinable()) return;
    if (thread_id_ == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

 private:
  void loop() {
    for (;;) {
      Job job;
      bool run;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        run = !stopping_;
      }
      job(run);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  mutable std::mutex thread_mu_;
  std::thread thread_;
  std::thread::id thread_id_{};
  bool joined_ = false;
};

class SelectorState : public std::enable_shared_from_this<SelectorState> {
 public:
  SelectorState(Client client, std::string name, std::string value, LeaderSelector::StopCallback cb,
                RecipeOptions options, std::shared_ptr<SelectorWorker> worker_in)
      : core(std::make_shared<RecipeCore>(std::move(client), "LeaderSelector", name, std::move(options))),
        candidate(std::make_shared<Candidate>(core, validate(name, cb), std::move(value))),
        worker(std::move(worker_in)),
        callback(std::move(cb)) {}

  Status validate(const std::string& name, const LeaderSelector::StopCallback& cb) const {
    if (Status st = validate_election("LeaderSelector", name, core->options()); !st.ok()) return st;
    if (!cb) return InvalidArgument("LeaderSelector[" + name + "]: the leadership callback is empty");
    return Status();
  }

  void init() {
    std::weak_ptr<SelectorState> weak = shared_from_this();
    candidate->hooks.elected = [weak](const Candidate::Term& t) {
      if (auto self = weak.lock()) self->on_elected(t);
    };
    candidate->hooks.failed = [weak](const Status&) {
      if (auto self = weak.lock()) self->started.store(false);
    };
    // A lost term needs nothing here: its stop_token is requested, and the
    // selector re-queues once the callback has returned.
  }

  const std::shared_ptr<RecipeCore> core;
  const std::shared_ptr<Candidate> candidate;
  const std::shared_ptr<SelectorWorker> worker;
  const LeaderSelector::StopCallback callback;
  std::atomic<bool> started{false};
  std::atomic<bool> auto_requeue{true};
  std::atomic<bool> running{false};  // a term's callback is queued or running
  std::atomic<uint64_t> terms{0};

  // On the candidate's strand.
  void on_elected(const Candidate::Term& t) {
    if (core->closed() || !started.load() || running.load()) {
      candidate->resign(nullptr);
      return;
    }
    running.store(true);
    LeaderTerm term;
    term.candidate_ = candidate;
    term.key_ = t.key;
    term.token_ = t.token;
    term.stop_ = t.stop;
    worker->post([self = shared_from_this(), term](bool run) mutable {
      std::string failure;
      if (run) {
        try {
          self->callback(term.stop_token(), term);
        } catch (const std::exception& ex) {
          failure = ex.what();
          if (failure.empty()) failure = "a std::exception";
        } catch (...) {
          failure = "an exception that is not a std::exception";
        }
      }
      asio::post(self->candidate->strand, [self, failure, run] { self->term_over(failure, run); });
    });
  }

  // The callback returned (or never ran): relinquish, then re-queue.
  void term_over(const std::string& failure, bool ran) {
    if (ran) terms.fetch_add(1);
    if (!failure.empty()) {
      core->record_error(Status(StatusCode::kAborted, "the leadership callback threw: " + failure));
    }
    auto requeue = [self = shared_from_this()](Candidate::ResignOutcome) {
      asio::post(self->candidate->strand, [self] {
        self->running.store(false);
        if (!self->core->closed() && self->started.load() && self->auto_requeue.load()) self->candidate->campaign();
      });
    };
    // Closed from within the callback: the key goes only now.
    if (core->closed()) {
      candidate->shutdown(std::move(requeue));
    } else {
      candidate->resign(std::move(requeue));
    }
  }
};

}  // namespace detail

LeaderSelector::LeaderSelector(Client client, std::string name, std::string value, Callback callback,
                               RecipeOptions options)
    : LeaderSelector(std::move(client), std::move(name), std::move(value),
                     callback ? StopCallback([cb = std::move(callback)](std::stop_token, LeaderTerm& t) { cb(t); })
                              : StopCallback(),
                     std::move(options)) {}

LeaderSelector::LeaderSelector(Client client, std::string name, std::string value, StopCallback callback,
                               RecipeOptions options)
    : worker_(std::make_shared<detail::SelectorWorker>()) {
  state_ = std::make_shared<detail::SelectorState>(std::move(client), std::move(name), std::move(value),
                                                   std::move(callback), std::move(options), worker_);
  bind_recipe(state_->core);
  state_->init();
}

LeaderSelector::~LeaderSelector() {
  close();
  worker_->stop_and_join();
}

void LeaderSelector::set_auto_requeue(bool on) { state_->auto_requeue.store(on); }

void LeaderSelector::start() { (void)requeue(); }

bool LeaderSelector::requeue() {
  auto s = state_;
  if (s->core->closed() || s->running.load()) return false;
  if (s->candidate->input_status.ok()) worker_->ensure_started();
  s->started.store(true);
  asio::post(s->candidate->strand, [s] {
    if (s->started.load() && !s->running.load()) s->candidate->campaign();
  });
  return true;
}

void LeaderSelector::interrupt() { state_->candidate->interrupt(); }

void LeaderSelector::resign() {
  auto s = state_;
  s->started.store(false);
  s->candidate->interrupt();
  asio::post(s->candidate->strand, [s] {
    // A running term relinquishes when its callback returns.
    if (!s->running.load()) s->candidate->resign(nullptr);
  });
}

bool LeaderSelector::has_leadership() const {
  return state_->running.load() && state_->candidate->phase() == detail::Candidate::Phase::kLeader &&
         !state_->candidate->leadership_token().stop_requested();
}

uint64_t LeaderSelector::terms() const { return state_->terms.load(); }

Call<std::vector<Participant>> LeaderSelector::participants() {
  return detail::read_participants(state_->core->client(), state_->candidate->input_status, state_->candidate->prefix);
}

Call<std::optional<LeaderInfo>> LeaderSelector::leader() {
  return detail::read_leader(state_->core->client(), state_->candidate->input_status, state_->candidate->prefix);
}

void LeaderSelector::close() {
  auto s = state_;
  const bool first = !s->core->closed();
  s->core->close();
  s->started.store(false);
  s->candidate->interrupt();
  // Waits for a running callback (it has been asked to stop), so that no
  // other candidate can lead while it still runs; the key goes after it.
  // Called from the callback itself, it cannot wait: the key then goes when
  // the callback returns.
  const bool from_callback = worker_->on_worker_thread();
  worker_->stop_and_join();
  if (first && !from_callback) {
    asio::post(s->candidate->strand, [s] { s->candidate->shutdown(nullptr); });
  }
}

}  // namespace etcd::recipes
