// LeaderObserver: an exact local view of an election's candidates (anchored
// read of NAME/ at revision R, prefix watch from R+1), from which the leader
// (lowest create revision) is derived revision by revision.
#include "etcd/recipes/election.h"

#include "../election_common.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <map>

namespace etcd::recipes {

namespace detail {

class ObserverState : public std::enable_shared_from_this<ObserverState> {
 public:
  ObserverState(Client client, std::string name, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(std::move(client), "LeaderObserver", name, std::move(options))),
        input_status(core->input()),
        prefix(name + "/"),
        strand(asio::make_strand(core->client().executor())),
        labels(election_labels(name)),
        waiters(std::make_shared<WaiterSet>(core)) {}

  const std::shared_ptr<RecipeCore> core;
  const Status input_status;
  const std::string prefix;
  const asio::strand<Executor> strand;
  const Labels labels;
  const std::shared_ptr<WaiterSet> waiters;
  using ChangeList = ListenerList<const std::optional<LeaderInfo>&>;
  const std::shared_ptr<ChangeList> listeners = std::make_shared<ChangeList>();

  mutable std::mutex mu;
  bool started = false;
  bool initialized = false;
  std::optional<LeaderInfo> current;

  // --- on the strand

  void begin() {
    if (core->closed()) return;
    if (!input_status.ok()) {
      core->record_error(input_status);
      waiters->fail_all(input_status);
      return;
    }
    std::weak_ptr<RecipeCore> weak = core;
    client_state_sub_ = core->client().on_state_change([weak](ConnectionState s) {
      if (auto c = weak.lock()) c->set_state(s);
    });
    reload(++epoch_);
  }

  void stop() {
    ++epoch_;
    watch_.cancel();
    watch_ = Watcher();
    if (timer_) timer_->cancel();
    timer_.reset();
    client_state_sub_.reset();
  }

 private:
  bool stale(uint64_t e) const { return e != epoch_ || core->closed(); }

  template <class T, class F>
  void run(Call<T> call, F f) {
    run_on_strand(shared_from_this(), std::move(call), std::move(f));
  }

  void retry_later(uint64_t e, std::function<void()> step) {
    retry_on_strand(
        shared_from_this(), failures_, timer_, 2000, [self = shared_from_this(), e] { return self->stale(e); },
        std::move(step));
  }

  // Reads every candidate at one revision, then watches from the next one.
  void reload(uint64_t e) {
    GetOptions all;
    all.prefix = true;
    run(core->client().get(prefix, all), [self = shared_from_this(), e](Result<GetResponse> r) {
      if (self->stale(e)) return;
      if (!r.ok()) {
        if (!transient(r.status())) self->core->record_error(r.status());
        if (r.status().is(Errc::kClosed)) return;  // the client is closed: nothing more to see
        return self->retry_later(e, [self, e] { self->reload(e); });
      }
      self->failures_ = 0;
      self->candidates_.clear();
      for (const auto& kv : r->kvs) self->candidates_[kv.key] = kv;
      self->publish();
      self->watch(e, r->header.revision + 1);
    });
  }

  void watch(uint64_t e, int64_t from) {
    WatchOptions options;
    options.prefix = true;
    options.start_revision = from;
    options.executor = Executor(strand);
    watch_ = core->client().watch(prefix, options, [self = shared_from_this(), e](Result<WatchResponse> r) {
      if (self->stale(e)) return;
      if (!r.ok()) return self->gap(r.status());
      const auto& events = r->events;
      for (size_t i = 0; i < events.size(); ++i) {
        const Event& ev = events[i];
        if (ev.type == Event::Type::kPut) {
          self->candidates_[ev.kv.key] = ev.kv;
        } else {
          self->candidates_.erase(ev.kv.key);
        }
        // The state at the end of each revision (a Txn may change several keys).
        if (i + 1 == events.size() || events[i + 1].kv.mod_revision != ev.kv.mod_revision) self->publish();
      }
    });
  }

  // The watch ended: it cannot go on without a gap (compaction while
  // disconnected) or failed. Read again and report what changed meanwhile.
  void gap(const Status& why) {
    const bool resync = why.is(Errc::kResyncNeeded) || why.is(Errc::kCompacted);
    if (resync) {
      core->metrics().add("etcd_recipes_leader_observer_resyncs_total", labels, 1);
    } else if (!why.is(Errc::kClosed)) {
      core->record_error(Status(why.code(), "watch ended: " + why.message(), why.reason()));
    }
    watch_ = Watcher();
    if (why.is(Errc::kClosed)) return;  // the client is closed
    const uint64_t next = ++epoch_;
    if (resync) return reload(next);
    retry_later(next, [self = shared_from_this(), next] { self->reload(next); });
  }

  void publish() {
    const KeyValue* first = nullptr;
    for (const auto& [key, kv] : candidates_) {
      if (!first || kv.create_revision < first->create_revision) first = &kv;
    }
    std::optional<LeaderInfo> leader;
    if (first) leader = leader_info(*first);
    bool first_time;
    {
      std::lock_guard lock(mu);
      first_time = !initialized;
      if (!first_time && current == leader) return;
      current = leader;
      initialized = true;
    }
    if (!first_time) core->metrics().add("etcd_recipes_leader_changes_total", labels, 1);
    listeners->post(strand, core, leader);
    if (first_time) waiters->set_ready(true);
  }

  uint64_t epoch_ = 0;
  int failures_ = 0;
  std::map<std::string, KeyValue> candidates_;
  Watcher watch_;
  std::shared_ptr<asio::steady_timer> timer_;
  Subscription client_state_sub_;
};

}  // namespace detail

LeaderObserver::LeaderObserver(Client client, std::string name)
    : LeaderObserver(std::move(client), std::move(name), RecipeOptions()) {}

LeaderObserver::LeaderObserver(Client client, std::string name, RecipeOptions options)
    : state_(std::make_shared<detail::ObserverState>(std::move(client), std::move(name), std::move(options))) {
  std::weak_ptr<detail::ObserverState> weak = state_;
  state_->core->set_start_action([weak] {
    auto s = weak.lock();
    if (!s) return;
    {
      std::lock_guard lock(s->mu);
      if (s->started) return;
      s->started = true;
    }
    asio::post(s->strand, [s] { s->begin(); });
  });
  // Parked waiters end with kClosed through the gate; the watch stops.
  state_->core->set_close_action([weak] {
    if (auto s = weak.lock()) asio::post(s->strand, [s] { s->stop(); });
  });
  bind_recipe(state_->core);
}

Call<void> LeaderObserver::wait_initialized() {
  auto s = state_;
  return Call<void>(
      [s](CallOptions options, Callback<void> done) {
        if (!s->input_status.ok()) return done(s->input_status);
        if (s->core->closed()) return done(s->core->closed_status());
        {
          std::unique_lock lock(s->mu);
          if (!s->started) {
            lock.unlock();
            return done(s->core->named(Status(StatusCode::kFailedPrecondition, "not started (call start() first)")));
          }
        }
        s->waiters->add(options, std::move(done), "the first read");
      },
      s->core->client().executor());
}

bool LeaderObserver::initialized() const {
  std::lock_guard lock(state_->mu);
  return state_->initialized;
}

std::optional<LeaderInfo> LeaderObserver::current() const {
  std::lock_guard lock(state_->mu);
  return state_->current;
}

Subscription LeaderObserver::on_change(std::function<void(const std::optional<LeaderInfo>&)> listener) {
  return state_->listeners->add(std::move(listener));
}

Call<std::vector<Participant>> LeaderObserver::participants() {
  return detail::read_participants(state_->core->client(), state_->input_status, state_->prefix);
}

Call<std::optional<LeaderInfo>> LeaderObserver::leader() {
  return detail::read_leader(state_->core->client(), state_->input_status, state_->prefix);
}

}  // namespace etcd::recipes
