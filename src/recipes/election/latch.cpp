// LeaderLatch over the election candidate (candidate.h).
#include "../core/waiters.h"
#include "candidate.h"
#include "client/listener_set.h"
#include "etcd/recipes/election.h"
#include "participants.h"
#include "proposal_limit.h"

#include <asio/post.hpp>
#include <asio/system_executor.hpp>

namespace etcd::recipes {

namespace detail {

class LatchState : public std::enable_shared_from_this<LatchState> {
 public:
  LatchState(Client client, std::string name, std::string value, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(client, "LeaderLatch", name, std::move(options),
                                          check_proposal(client, name, value))),
        candidate(std::make_shared<Candidate>(core, std::move(value))),
        waiters(std::make_shared<WaiterSet>(core)) {}

  void init() {
    std::weak_ptr<LatchState> weak = shared_from_this();
    candidate->hooks.elected = [weak](const Hold& term) {
      if (auto self = weak.lock()) self->on_elected(term);
    };
    candidate->hooks.lost = [weak](const Status& why) {
      if (auto self = weak.lock()) self->on_lost(why);
    };
    candidate->hooks.failed = [weak](const Status& why) {
      if (auto self = weak.lock()) self->on_failed(why);
    };
  }

  const std::shared_ptr<RecipeCore> core;
  const std::shared_ptr<Candidate> candidate;
  const std::shared_ptr<WaiterSet> waiters;
  // Listeners run on the recipe's strand, one at a time and in order.
  ListenerSet<int64_t> is_leader;
  ListenerSet<const Status&> not_leader;

  mutable std::mutex mu;
  bool started = false;
  uint64_t starts = 0;  // start() calls: tells a posted campaign from a stale one
  std::optional<Status> failure;

  // The campaign starts on the executor, unless a blocking waiter comes
  // first and runs it on its own thread (campaign_if_started): start() must
  // not block, and a waiter that drives the first RPCs itself saves the
  // hand-offs between threads.
  void start() {
    uint64_t this_start;
    {
      std::lock_guard lock(mu);
      started = true;
      failure.reset();
      this_start = ++starts;
    }
    auto link = core->link();
    if (!link) return;  // closed
    std::weak_ptr<LatchState> weak = shared_from_this();
    asio::post(link->executor(), [weak, this_start] {
      if (auto self = weak.lock()) self->campaign_if_started(this_start, /*caller_waits=*/false);
    });
  }
  // Campaigns if the latch is (still) started by `start_id` (0: any start).
  void campaign_if_started(uint64_t start_id, bool caller_waits) {
    {
      std::lock_guard lock(mu);
      if (!started || (start_id != 0 && start_id != starts)) return;
    }
    candidate->campaign(caller_waits);
  }

  // The events below come from work in flight (a campaign, a hold), which
  // holds the link: it is there for the listeners.
  void on_elected(const Hold& term) {
    // Listeners first: one registered after a waiter woke up must not hear
    // of this term.
    if (auto link = core->link()) is_leader.notify(link->strand(), core->throw_sink(), term.token());
    waiters->set_ready(true);
  }
  void on_lost(const Status& why) {
    waiters->set_ready(false);
    if (auto link = core->link()) not_leader.notify(link->strand(), core->throw_sink(), why);
    bool again;
    {
      std::lock_guard lock(mu);
      again = started;
    }
    // At the back of the queue (on a new session if the old one is gone).
    if (again && !core->closed()) candidate->campaign();
  }
  void on_failed(const Status& why) {
    {
      std::lock_guard lock(mu);
      failure = why;
    }
    waiters->fail_all(why);
  }
  void resign(Status reported, std::function<void(bool)> done, bool caller_waits = false) {
    {
      std::lock_guard lock(mu);
      started = false;
    }
    auto self = shared_from_this();
    candidate->resign(
        [self, reported, done = std::move(done)](Candidate::ResignOutcome outcome) {
          if (outcome.was_leader) {
            self->waiters->set_ready(false);
            if (auto link = self->core->link()) {
              self->not_leader.notify(link->strand(), self->core->throw_sink(), reported);
            }
          }
          if (done) done(outcome.intact);
        },
        caller_waits);
  }
};

}  // namespace detail

LeaderLatch::LeaderLatch(Client client, std::string name, std::string value)
    : LeaderLatch(std::move(client), std::move(name), std::move(value), RecipeOptions()) {}

LeaderLatch::LeaderLatch(Client client, std::string name, std::string value, RecipeOptions options)
    : state_(std::make_shared<detail::LatchState>(std::move(client), std::move(name), std::move(value),
                                                  std::move(options))) {
  state_->init();
  auto& core = state_->core;
  core->set_start_action([s = state_] { s->start(); });
  // Stops contending and resigns (without waiting); parked waiters end with
  // kClosed through the close gate.
  core->set_close_action([s = state_] { s->resign(s->core->closed_status(), nullptr); });
  bind_recipe(core);
  bind_holder(state_->candidate->slot);
}

Call<void> LeaderLatch::await_leadership() {
  auto s = state_;
  return s->core->call<void>([s](CallOptions options, Callback<void> done) {
    if (Status st = s->core->usable(); !st.ok()) return done(std::move(st));
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
    // Already campaigning or leading: nothing happens.
    if (options.caller_waits) s->campaign_if_started(0, /*caller_waits=*/true);
  });
}

bool LeaderLatch::await_until_steady(Deadline deadline) {
  auto r = await_leadership().deadline(deadline).wait();
  if (r.ok()) return true;
  if (r.status().code() == StatusCode::kDeadlineExceeded) return false;
  throw Error(std::move(r).status());
}

Subscription LeaderLatch::on_is_leader(std::function<void(int64_t)> listener) {
  return state_->is_leader.add(std::move(listener));
}

Subscription LeaderLatch::on_not_leader(std::function<void(const Status&)> listener) {
  return state_->not_leader.add(std::move(listener));
}

Stream<LeadershipChange> LeaderLatch::leadership_stream(StreamOptions options) {
  auto link = state_->core->link();
  return etcd::detail::listener_stream<LeadershipChange>(
      link ? link->executor() : Executor(asio::system_executor()), options, etcd::detail::StreamOverflow::kKeepNewest,
      [this](std::function<void(LeadershipChange)> push) {
        // Both listeners run on the latch's strand, in order: the term that
        // ends is the last one that began.
        auto term = std::make_shared<int64_t>(0);
        auto became = std::make_shared<Subscription>(on_is_leader([push, term](int64_t t) {
          *term = t;
          push(LeadershipChange{true, t, Status()});
        }));
        auto ended = std::make_shared<Subscription>(
            on_not_leader([push, term](const Status& why) { push(LeadershipChange{false, *term, why}); }));
        return Subscription([became, ended] {
          became->reset();
          ended->reset();
        });
      },
      [core = state_->core](std::function<void()> fn) { return core->on_close(std::move(fn)); });
}

Call<void> LeaderLatch::proclaim(std::string value) { return state_->candidate->proclaim(std::move(value)); }

Call<bool> LeaderLatch::resign() {
  auto s = state_;
  return s->core->call<bool>(
      [s](CallOptions options, Callback<bool> done) { s->resign(Status(), std::move(done), options.caller_waits); });
}

Call<std::vector<Participant>> LeaderLatch::participants() {
  return detail::read_participants(*state_->core, state_->candidate->prefix);
}

Call<std::optional<LeaderInfo>> LeaderLatch::leader() {
  return detail::read_leader(*state_->core, state_->candidate->prefix);
}

}  // namespace etcd::recipes
