// ViewLifecycle: the start and the stop of a recipe that reads through a
// PrefixView and holds no lease of its own (the caches, KeyspaceView,
// SharedValue): its connection state is its client's, and its view starts
// once.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "client_link.h"
#include "prefix_view.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

class ViewLifecycle {
 public:
  // Creates `owner`'s view of `range` (its batches go to owner->on_batch())
  // and makes the recipe's start and close run owner->start() and
  // owner->stop(). Each refers to the owner weakly: the view lives inside
  // it. An owner whose three members are private befriends ViewLifecycle.
  template <class Owner>
  static std::shared_ptr<PrefixView> attach(const std::shared_ptr<Owner>& owner, const std::shared_ptr<RecipeCore>& core,
                                            std::string range, PrefixView::Options options) {
    std::weak_ptr<Owner> weak = owner;
    auto view = PrefixView::create(core, std::move(range), std::move(options), [weak](const ViewBatch& batch) {
      if (auto self = weak.lock()) self->on_batch(batch);
    });
    core->set_start_action([weak] {
      if (auto self = weak.lock()) self->start();
    });
    core->set_close_action([weak] {
      if (auto self = weak.lock()) self->stop();
    });
    return view;
  }

  // The first call follows the client's connection state into `core`, then
  // starts `view`; later calls do nothing. Nothing happens once the recipe
  // has no client link (closed).
  void start(const std::shared_ptr<RecipeCore>& core, PrefixView& view) {
    {
      std::lock_guard lock(mu_);
      if (started_) return;
      started_ = true;
    }
    auto link = core->link();
    if (!link) return;
    std::weak_ptr<RecipeCore> weak = core;
    auto sub = link->client().on_state_change([weak](ConnectionState state) {
      if (auto c = weak.lock()) c->set_state(state);
    });
    {
      std::lock_guard lock(mu_);
      client_state_sub_ = std::move(sub);
    }
    view.start();
  }

  // Stops following the client's state (the subscription ends outside the
  // lock: ending it may wait for a listener that runs).
  void stop() {
    Subscription sub;  // declared first, so it ends after the lock is released
    std::lock_guard lock(mu_);
    sub = std::move(client_state_sub_);
  }

 private:
  std::mutex mu_;
  bool started_ = false;
  Subscription client_state_sub_;
};

}  // namespace etcd::recipes::detail
