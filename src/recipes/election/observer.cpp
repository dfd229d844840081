// LeaderObserver: the leader of an election (the lowest create revision
// under NAME/), derived revision by revision from a PrefixView of NAME/
// (anchored read, watch from the next revision, differences after a gap).
#include <asio/system_executor.hpp>

#include "../core/client_link.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "../core/view_lifecycle.h"
#include "client/listener_set.h"
#include "etcd/recipes/election.h"
#include "participants.h"

#include <asio/post.hpp>

namespace etcd::recipes {

namespace detail {

class ObserverState : public std::enable_shared_from_this<ObserverState> {
 public:
  ObserverState(Client client, std::string name, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(std::move(client), "LeaderObserver", name, std::move(options))),
        input_status(core->input()),
        prefix(name + "/"),
        labels(election_labels(name)) {}

  // Called once, right after construction: the view's handler refers back
  // to this state weakly (the view lives inside it). Its batches and this
  // observer's listeners share the recipe's strand.
  void attach() { view = ViewLifecycle::attach(shared_from_this(), core, prefix, PrefixView::Options()); }

  const std::shared_ptr<RecipeCore> core;
  const Status input_status;
  const std::string prefix;
  const Labels labels;
  std::shared_ptr<PrefixView> view;  // set by attach()
  ListenerSet<const std::optional<LeaderInfo>&> listeners;

  mutable std::mutex mu;
  bool initialized = false;
  std::optional<LeaderInfo> current;

 private:
  friend class ViewLifecycle;  // reaches start(), stop() and on_batch()

  void start() { lifecycle_.start(core, *view); }
  // After the close gate (which wakes wait_initialized() and stops the view).
  void stop() { lifecycle_.stop(); }

  // On the strand, once per revision of the view (and once after a resync).
  void on_batch(const ViewBatch& batch) {
    if (batch.kind == ViewBatch::Kind::kResynced &&
        (batch.cause.is(Errc::kResyncNeeded) || batch.cause.is(Errc::kCompacted))) {
      core->metrics().add("etcd_recipes_leader_observer_resyncs_total", labels, 1);
    }
    const ViewMap::value_type* first = nullptr;
    for (const auto& candidate : *batch.state) {
      if (!first || candidate.second.create_revision < first->second.create_revision) first = &candidate;
    }
    std::optional<LeaderInfo> leader;
    if (first) leader = leader_info(to_kv(first->first, first->second));
    bool first_time;
    {
      std::lock_guard lock(mu);
      first_time = !initialized;
      if (!first_time && current == leader) return;
      current = leader;
      initialized = true;
    }
    if (!first_time) core->metrics().add("etcd_recipes_leader_changes_total", labels, 1);
    // On the strand, from the running view (work in flight): the link is there.
    if (auto link = core->link()) listeners.notify(link->strand(), core->throw_sink(), leader);
  }

  ViewLifecycle lifecycle_;
};

}  // namespace detail

LeaderObserver::LeaderObserver(Client client, std::string name)
    : LeaderObserver(std::move(client), std::move(name), RecipeOptions()) {}

LeaderObserver::LeaderObserver(Client client, std::string name, RecipeOptions options)
    : state_(std::make_shared<detail::ObserverState>(std::move(client), std::move(name), std::move(options))) {
  state_->attach();
  bind_recipe(state_->core);
}

Call<void> LeaderObserver::wait_initialized() {
  auto s = state_;
  if (!s->input_status.ok()) return s->core->ready<void>(s->input_status);
  return s->view->wait_initialized();
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
  return state_->listeners.add(std::move(listener));
}

Stream<std::optional<LeaderInfo>> LeaderObserver::leader_stream(StreamOptions options) {
  auto link = state_->core->link();
  return etcd::detail::listener_stream<std::optional<LeaderInfo>>(
      link ? link->executor() : Executor(asio::system_executor()), options, etcd::detail::StreamOverflow::kKeepNewest,
      [this](std::function<void(std::optional<LeaderInfo>)> push) {
        return on_change([push](const std::optional<LeaderInfo>& l) { push(l); });
      },
      [core = state_->core](std::function<void()> fn) { return core->on_close(std::move(fn)); });
}

Call<std::vector<Participant>> LeaderObserver::participants() {
  return detail::read_participants(*state_->core, state_->prefix);
}

Call<std::optional<LeaderInfo>> LeaderObserver::leader() { return detail::read_leader(*state_->core, state_->prefix); }

}  // namespace etcd::recipes
