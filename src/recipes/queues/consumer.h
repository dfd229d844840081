// The take side of a queue (internal): one PrefixView of NAME/items/ per
// queue object, the items in commit order (CreateOrder), and the object's
// parked consumers ("takers"), each handed a distinct item and taking it
// with one guarded delete. Everything here runs on the recipe's strand,
// where the view's batches arrive. Semantics and costs:
// include/etcd/recipes/queue.h.
#pragma once

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "../core/create_order.h"
#include "../core/listeners.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "etcd/call.h"
#include "etcd/recipes/queue.h"

namespace etcd::recipes::detail {

class QueueConsumer : public std::enable_shared_from_this<QueueConsumer> {
 public:
  // After a failed take, the next takes pick at random among the first
  // kSpread items (instead of the head) for kContendedTakes takes; and
  // while fewer than kSpread items are there to pick from, an object waits
  // a random moment (up to kJitterRtts take round trips) before it goes for
  // an item, so that it mostly sees another object's take before sending a
  // take that would fail.
  static constexpr size_t kSpread = 32;
  static constexpr int kContendedTakes = 64;
  static constexpr double kJitterRtts = 3;

  // `rank`: the order of the items before commit order (the priority
  // queue's priority); none for plain commit order.
  QueueConsumer(std::shared_ptr<RecipeCore> core, std::string items, Labels labels, TakeCheck check,
                CreateOrder::Rank rank = nullptr);
  // Called once, right after construction (the view's handler refers back
  // to this object weakly).
  void attach();

  // Waits for an item (try_only: answers none when the queue is empty).
  void take(bool try_only, const CallOptions& options, Callback<std::optional<TakenItem>> done);

  // The close action: drops what waits on the strand.
  void stop();

  Subscription on_poison(std::function<void(const std::string&, const Status&)> listener) {
    return poison_listeners_.add(std::move(listener));
  }

 private:
  struct Taker {
    bool try_only = false;
    Callback<std::optional<TakenItem>> done;
    std::shared_ptr<ClientLink> link;
    Clock::time_point since;
    bool finished = false;
    // A take of an item is in flight for it: a deadline, stop or close
    // that comes meanwhile is kept in `end` and applied once the take is
    // decided (an item taken is delivered, never dropped).
    bool claiming = false;
    std::optional<Status> end;
    // try_only: 0 nothing checked yet, 1 reading the queue's size, 2
    // waiting for the view to reach what the read saw, 3 the view has seen
    // it (nothing to take now means empty).
    int emptiness = 0;
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<std::optional<std::stop_callback<std::function<void()>>>> stop_cb;
    Subscription close_sub;
  };
  struct Pick {
    CreateOrder::Position position;
    ViewEntry entry;
  };

  void admit(const std::shared_ptr<Taker>& t, const CallOptions& options);
  void expire(const std::shared_ptr<Taker>& t, Status why);
  void finish(const std::shared_ptr<Taker>& t, Result<std::optional<TakenItem>> result);
  void on_batch(const ViewBatch& batch);
  void pump();
  std::optional<Pick> next_item();
  void claim(const std::shared_ptr<Taker>& t, Pick pick);
  void send_take(const std::shared_ptr<Taker>& t, Pick pick, std::shared_ptr<void> decoded, bool again);
  void on_take(const std::shared_ptr<Taker>& t, const Pick& pick, std::shared_ptr<void> decoded, bool again,
               Result<TxnResponse> r);
  void repark(const std::shared_ptr<Taker>& t);
  void check_empty(const std::shared_ptr<Taker>& t);
  void pump_later();
  void observe_rtt(Clock::time_point sent) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
    rtt_ms_ = std::clamp(0.8 * rtt_ms_ + 0.2 * ms, 0.2, 20.0);
  }
  // Items that could be taken now, counting up to `cap`.
  size_t available(size_t cap) const;
  // In contended mode with few items: starts the random wait (true: the
  // takes wait for it).
  bool jitter();

  const std::shared_ptr<RecipeCore> core_;
  const std::string items_;
  const Labels labels_;
  const TakeCheck check_;
  std::shared_ptr<PrefixView> view_;  // set by attach()
  ListenerSet<const std::string&, const Status&> poison_listeners_;

  // --- on the strand
  bool view_started_ = false;
  bool initialized_ = false;
  CreateOrder order_;
  std::set<std::string> busy_;    // a take of ours is in flight
  std::set<std::string> stale_;   // our take failed: skipped until the view reports a change
  std::set<std::string> poison_;  // the check refused it (kDecodeFailed): skipped until it changes
  std::deque<std::shared_ptr<Taker>> parked_;
  // Try-only takers waiting for the view to reach a revision.
  std::vector<std::pair<int64_t, std::shared_ptr<Taker>>> at_revision_;
  int contended_ = 0;
  int failures_ = 0;  // transient take failures in a row
  std::shared_ptr<asio::steady_timer> retry_timer_;
  std::shared_ptr<asio::steady_timer> jitter_timer_;
  bool jitter_passed_ = false;  // the pump that the jitter timer runs
  double rtt_ms_ = 1;           // moving average of a take's round trip
  std::minstd_rand rng_;
};

}  // namespace etcd::recipes::detail
