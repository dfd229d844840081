// LeaderSelector over the election candidate (candidate.h): one callback
// per term, on one thread of the selector's own.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <thread>

#include "candidate.h"
#include "client/listener_set.h"
#include "etcd/recipes/election.h"
#include "participants.h"
#include "proposal_limit.h"

namespace etcd::recipes {

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

namespace {

// The selector's own checks of its input: the callback, then the proposal.
Status check_input(const Client& client, const std::string& name, const std::string& value,
                   const LeaderSelector::StopCallback& cb) {
  if (!cb) return InvalidArgument("the leadership callback is empty");
  return check_proposal(client, name, value);
}

}  // namespace

class SelectorState : public std::enable_shared_from_this<SelectorState> {
 public:
  SelectorState(Client client, std::string name, std::string value, LeaderSelector::StopCallback cb,
                RecipeOptions options)
      : core(std::make_shared<RecipeCore>(client, "LeaderSelector", name, std::move(options),
                                          check_input(client, name, value, cb))),
        candidate(std::make_shared<Candidate>(core, std::move(value))),
        worker(std::make_shared<SelectorWorker>()),
        callback(std::move(cb)) {}

  void init() {
    std::weak_ptr<SelectorState> weak = shared_from_this();
    candidate->hooks.elected = [weak](const Hold& term) {
      if (auto self = weak.lock()) self->on_elected(term);
    };
    candidate->hooks.lost = [weak](const Status& why) {
      if (auto self = weak.lock()) self->end_as(TermEnd::kLost, why);
    };
    candidate->hooks.failed = [weak](const Status&) {
      if (auto self = weak.lock()) self->started.store(false);
    };
  }

  const std::shared_ptr<RecipeCore> core;
  const std::shared_ptr<Candidate> candidate;
  const std::shared_ptr<SelectorWorker> worker;
  const LeaderSelector::StopCallback callback;
  std::atomic<bool> started{false};
  std::atomic<bool> auto_requeue{true};
  std::atomic<bool> running{false};  // a term's callback is queued or running
  std::atomic<uint64_t> terms{0};
  std::atomic<bool> requeue_pending{false};  // requeue() asked while `running`
  ListenerSet<TermEnd, const Status&> term_end;

  mutable std::mutex mu;
  std::optional<TermEnd> end;  // (mu) why the current term's stop was requested
  Status end_status;           // (mu)
  int throws_in_a_row = 0;     // (mu)
  // (mu) The backoff before queueing again, to cancel it. Owned by its
  // handler only: a timer never outlives the client's event loop.
  std::weak_ptr<asio::steady_timer> backoff;

  std::optional<TermEnd> end_reason() const {
    std::lock_guard lock(mu);
    return end;
  }

  // Requests the current term's stop, remembering why (the first reason
  // stays).
  void end_as(TermEnd why, Status status = Status()) {
    {
      std::lock_guard lock(mu);
      if (!end) {
        end = why;
        end_status = std::move(status);
      }
    }
    if (auto state = HoldAccess::state(candidate->slot->current())) state->request_stop();
  }

  // While a term runs or its key is being deleted, joining now would race
  // the old term: the request waits for term_over's resign to complete, so a
  // caller that ends a term and asks again at once (a blocking "lead once"
  // loop, without auto-requeue) is not left to poll.
  bool requeue() {
    if (core->closed()) return false;
    if (running.load()) {
      requeue_pending.store(true);
      // term_over clears `running` and then takes a pending request: if it
      // did so between the load above and the store, take it here instead.
      if (running.load() || !requeue_pending.exchange(false)) return true;
    }
    return join_now();
  }

  bool join_now() {
    if (core->closed()) return false;
    if (core->input().ok()) worker->ensure_started();
    started.store(true);
    candidate->campaign();
    return true;
  }

  void on_elected(const Hold& hold) {
    if (core->closed() || !started.load() || running.exchange(true)) {
      candidate->resign(nullptr);
      return;
    }
    {
      std::lock_guard lock(mu);
      end.reset();
      end_status = Status();
    }
    LeaderTerm term(hold, shared_from_this());
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
      self->term_over(failure, run);
    });
  }

  // The callback returned (or never ran): relinquish, then re-queue.
  void term_over(const std::string& failure, bool ran) {
    if (ran) terms.fetch_add(1);
    TermEnd how;
    Status why;
    bool threw = !failure.empty();
    {
      std::lock_guard lock(mu);
      how = end.value_or(TermEnd::kReturned);
      why = end_status;
      throws_in_a_row = threw ? throws_in_a_row + 1 : 0;
    }
    if (threw) {
      how = TermEnd::kThrew;
      why = Status(StatusCode::kAborted, "the leadership callback threw: " + failure);
      core->record_error(why);
    }
    // The term's hold (work in flight) keeps the link until it is released,
    // below.
    if (auto link = core->link(); ran && link) term_end.notify(link->executor(), core->throw_sink(), how, why);
    core->metrics().add("etcd_recipes_election_terms_total",
                        {{"election", core->name()}, {"end", std::string(to_string(how))}}, 1);
    auto self = shared_from_this();
    candidate->resign([self](Candidate::ResignOutcome) {
      self->running.store(false);
      if (self->requeue_pending.exchange(false)) return (void)self->join_now();
      if (self->core->closed() || !self->started.load() || !self->auto_requeue.load()) return;
      self->requeue_after_backoff();
    });
  }

  // After callbacks that threw, wait before joining again: the step
  // backoff, up to 5 s while they keep throwing.
  void requeue_after_backoff() {
    std::shared_ptr<asio::steady_timer> timer;
    {
      std::lock_guard lock(mu);
      if (throws_in_a_row == 0) {
        timer.reset();
      } else if (auto link = core->link()) {
        Backoff slow = kStepBackoff;
        slow.max = std::chrono::seconds(5);
        timer = std::make_shared<asio::steady_timer>(link->executor(), slow.delay(throws_in_a_row));
        backoff = timer;
      } else {
        return;  // closed, and its work is done
      }
    }
    if (!timer) return (void)join_now();
    std::weak_ptr<SelectorState> weak = shared_from_this();
    timer->async_wait([weak, timer](const asio::error_code& ec) {
      if (auto self = weak.lock(); self && !ec && self->started.load()) (void)self->join_now();
    });
  }

  void resign() {
    requeue_pending.store(false);
    started.store(false);
    end_as(TermEnd::kResigned);
    cancel_backoff();
    // A running term relinquishes when its callback returns.
    if (!running.load()) candidate->resign(nullptr);
  }

  // Waits for a running callback (it has been asked to stop), so that no
  // other candidate can lead while it still runs; the key goes after it.
  // Called from the callback itself, it cannot wait: the key then goes when
  // the callback returns.
  void close() {
    started.store(false);
    end_as(TermEnd::kClosed, core->closed_status());
    cancel_backoff();
    const bool from_callback = worker->on_worker_thread();
    worker->stop_and_join();
    if (!from_callback) candidate->resign(nullptr);
  }

  void cancel_backoff() {
    std::lock_guard lock(mu);
    if (auto timer = backoff.lock()) timer->cancel();
    backoff.reset();
  }
};

}  // namespace detail

// --- LeaderTerm ---------------------------------------------------------------------

std::optional<TermEnd> LeaderTerm::end() const {
  if (!selector_ || !stop_requested()) return std::nullopt;
  // The hold itself may have ended first (a loss the candidate has not
  // reported yet).
  return selector_->end_reason().value_or(TermEnd::kLost);
}

Call<void> LeaderTerm::proclaim(std::string value) const {
  if (!selector_ || !is_held()) {
    return Call<void>(
        [](CallOptions, etcd::Callback<void> done) {
          done(Status(StatusCode::kFailedPrecondition, "this term is over; nothing was written", Errc::kHoldLost));
        },
        asio::system_executor());
  }
  return selector_->candidate->proclaim(std::move(value));
}

// --- LeaderSelector -------------------------------------------------------------------

LeaderSelector::LeaderSelector(Client client, std::string name, std::string value, Callback callback)
    : LeaderSelector(std::move(client), std::move(name), std::move(value), std::move(callback), RecipeOptions()) {}

LeaderSelector::LeaderSelector(Client client, std::string name, std::string value, Callback callback,
                               RecipeOptions options)
    : LeaderSelector(std::move(client), std::move(name), std::move(value),
                     callback ? StopCallback([cb = std::move(callback)](std::stop_token, LeaderTerm& t) { cb(t); })
                              : StopCallback(),
                     std::move(options)) {}

LeaderSelector::LeaderSelector(Client client, std::string name, std::string value, StopCallback callback)
    : LeaderSelector(std::move(client), std::move(name), std::move(value), std::move(callback), RecipeOptions()) {}

LeaderSelector::LeaderSelector(Client client, std::string name, std::string value, StopCallback callback,
                               RecipeOptions options)
    : state_(std::make_shared<detail::SelectorState>(std::move(client), std::move(name), std::move(value),
                                                     std::move(callback), std::move(options))) {
  state_->init();
  auto& core = state_->core;
  core->set_start_action([s = state_] { (void)s->requeue(); });
  core->set_close_action([s = state_] { s->close(); });
  bind_recipe(core);
  bind_holder(state_->candidate->slot);
}

void LeaderSelector::set_auto_requeue(bool on) { state_->auto_requeue.store(on); }

bool LeaderSelector::requeue() { return state_->requeue(); }

void LeaderSelector::interrupt() { state_->end_as(TermEnd::kInterrupted); }

void LeaderSelector::resign() { state_->resign(); }

uint64_t LeaderSelector::terms() const { return state_->terms.load(); }

Subscription LeaderSelector::on_term_end(std::function<void(TermEnd, const Status&)> listener) {
  return state_->term_end.add(std::move(listener));
}

Call<std::vector<Participant>> LeaderSelector::participants() {
  return detail::read_participants(*state_->core, state_->candidate->prefix);
}

Call<std::optional<LeaderInfo>> LeaderSelector::leader() {
  return detail::read_leader(*state_->core, state_->candidate->prefix);
}

}  // namespace etcd::recipes
