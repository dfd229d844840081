// The take side of the queues (internal): one PrefixView per queue object,
// the items in commit order (CreateOrder), and the object's parked
// consumers ("takers"), each handed a distinct item.
//
// The view is a window of the queue's head (PrefixView::Options::window:
// the first kWindow item keys in key order), so that a consumer's memory
// and start-up do not grow with the backlog. Item keys sort by a revision
// their producer had seen (item_key.h), so the window holds the head, and
// an item of it may be served when nothing past the window can have
// committed before it: when the window holds every item, or the item's
// rank is above the bound's, or it committed at or before the bound's
// revision + 1 (eligible()). With no item of the window that can be
// taken, the consumer widens the window (PrefixView::grow()). What an item is, when
// it is ready and how it is taken is the queue kind's TakeDriver: a plain
// delete (DistributedQueue), a claim bound to a lease (DistributedWork-
// Queue). Everything here runs on the recipe's strand, where the view's
// batches arrive. Semantics and costs: include/etcd/recipes/queue.h and
// work_queue.h.
#pragma once

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
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
#include <string_view>
#include <utility>
#include <vector>

#include "../core/create_order.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "client/listener_set.h"
#include "etcd/call.h"
#include "etcd/recipes/queue.h"

namespace etcd::recipes::detail {

// What a queue kind decides (see the file comment). Called on the strand.
class TakeDriver : public std::enable_shared_from_this<TakeDriver> {
 public:
  struct Outcome {
    enum class Kind {
      kTaken,     // the item is the taker's
      kConflict,  // another consumer got it (or it changed) first
      kDiverted,  // the item left the queue without being delivered (a dead letter)
      kFailed,    // `status`; a transient one is retried
    };
    Kind kind = Kind::kFailed;
    TakenItem item{};
    // kTaken: the take deleted the item's key (it leaves the order at once).
    bool removed = true;
    Status status{};
  };
  using OutcomeCallback = std::function<void(Outcome)>;

  virtual ~TakeDriver() = default;
  // The end of the view's range (empty: the prefix `range` given to the
  // engine), and the keys of it the view keeps (others are never stored).
  virtual std::string view_range_end() const { return {}; }
  // Keys of the view before the items (the work queue's claims) are held
  // in full, from the view's range to this end; empty: the view begins
  // with the items.
  virtual std::string full_end() const { return {}; }
  virtual bool keeps(std::string_view key) const {
    (void)key;
    return true;
  }
  // Keys of the view that are items; the others only inform ready().
  virtual bool is_item(std::string_view key) const {
    (void)key;
    return true;
  }
  // Sees each event of the view (`revision`: the batch's) before the
  // engine indexes it, and names the item whose skip marks it clears.
  virtual std::string note(const ViewEvent& ev, int64_t revision) {
    (void)revision;
    return ev.key;
  }
  // Whether the item at `key` can be taken now.
  virtual bool ready(const std::string& key, std::chrono::system_clock::time_point now) const {
    (void)key;
    (void)now;
    return true;
  }
  // The earliest time at which an item waiting only for its delay is ready.
  virtual std::optional<std::chrono::system_clock::time_point> next_ready_time() { return std::nullopt; }
  // Sends the take of the item at `key` (`entry`: as the view has it;
  // `decoded`: what the engine's check made of it). `done` runs on the
  // strand, exactly once.
  virtual void take(const std::shared_ptr<ClientLink>& link, const std::string& key, const ViewEntry& entry,
                    std::shared_ptr<void> decoded, OutcomeCallback done) = 0;
};

class QueueConsumer : public std::enable_shared_from_this<QueueConsumer> {
 public:
  // After a failed take, the next takes pick at random among the first
  // kSpread items (instead of the head) for kContendedTakes takes; and
  // while fewer than kSpread items are there to pick from, an object waits
  // a random moment (up to kJitterRtts take round trips) before it goes for
  // an item, so that it mostly sees another object's take before sending a
  // take that would fail.
  static constexpr size_t kSpread = 32;
  // How far (in kSpread items) a contended object looks for an item of its
  // lane before it picks any of the first kSpread.
  static constexpr size_t kLaneReach = 4;
  static constexpr int kContendedTakes = 64;
  // A head that has waited this long (as this object saw it) is taken by a
  // contended object whatever its lane: lanes spread the takes, and must
  // not leave the oldest item (one given back after a consumer died, say)
  // behind while every object works its own lane.
  static constexpr std::chrono::milliseconds kHeadPatience{200};
  static constexpr double kJitterRtts = 3;
  // Item keys in the view's window at first (each grow() doubles it).
  static constexpr int64_t kWindow = 256;

  // `items`: the prefix of the item keys; `range`: the view's prefix (it
  // may hold other keys the driver reads, e.g. claims); `metric`: the
  // prefix of the engine's metric names ("etcd_recipes_queue"); `rank`: the
  // order of the items before commit order (the priority queue's
  // priority), none for plain commit order.
  QueueConsumer(std::shared_ptr<RecipeCore> core, std::string items, std::string range, std::string metric,
                Labels labels, TakeCheck check, std::shared_ptr<TakeDriver> driver, CreateOrder::Rank rank = nullptr);
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
  void on_take(const std::shared_ptr<Taker>& t, const Pick& pick, TakeDriver::Outcome outcome);
  void repark(const std::shared_ptr<Taker>& t);
  void check_empty(const std::shared_ptr<Taker>& t);
  void pump_later();
  // Arms the timer for the next delayed item while takers are parked.
  void wake_for_delays();
  std::string metric(const char* name) const { return metric_ + name; }
  void observe_rtt(Clock::time_point sent) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
    rtt_ms_ = std::clamp(0.8 * rtt_ms_ + 0.2 * ms, 0.2, 20.0);
  }
  // Items that could be taken now, counting up to `cap`.
  size_t available(size_t cap) const;
  // Whether an item of the window may be served before everything past it
  // (the file comment).
  bool eligible(const CreateOrder::Position& pos) const;
  // An item that could be taken now (not busy, stale, poison, nor waiting).
  bool takeable(const CreateOrder::Position& pos, std::chrono::system_clock::time_point now) const;
  // In contended mode with few items: starts the random wait (true: the
  // takes wait for it).
  bool jitter();

  const std::shared_ptr<RecipeCore> core_;
  const std::string items_;
  const std::string range_;
  const std::string metric_;
  const Labels labels_;
  const TakeCheck check_;
  const std::shared_ptr<TakeDriver> driver_;
  std::shared_ptr<PrefixView> view_;  // set by attach()
  ListenerSet<const std::string&, const Status&> poison_listeners_;

  // --- on the strand
  bool view_started_ = false;
  bool initialized_ = false;
  const CreateOrder::Rank rank_;
  CreateOrder order_;
  // ViewBatch::window_end of the last batch: empty when the window holds
  // every item.
  std::string window_end_;
  // A take of ours is in flight -> whether the view reported a change of
  // the item meanwhile: a change reported before the take's failure comes
  // back is the one that explains it, and no later one need come, so the
  // failure must not mark the item stale then (it would wait for a change
  // that already happened: a lost wake-up).
  std::map<std::string, bool> busy_;
  std::set<std::string> stale_;   // our take failed: skipped until the view reports a change
  std::set<std::string> poison_;  // the check refused it (kDecodeFailed): skipped until it changes
  std::deque<std::shared_ptr<Taker>> parked_;
  // Try-only takers waiting for the view to reach a revision.
  std::vector<std::pair<int64_t, std::shared_ptr<Taker>>> at_revision_;
  int contended_ = 0;
  size_t lane_ = 0;  // drawn at each conflict
  // The first takeable item this object saw, and since when.
  std::string head_;
  std::chrono::steady_clock::time_point head_since_{};
  int failures_ = 0;  // transient take failures in a row
  std::shared_ptr<asio::steady_timer> retry_timer_;
  std::shared_ptr<asio::steady_timer> jitter_timer_;
  std::shared_ptr<asio::steady_timer> delay_timer_;
  std::optional<std::chrono::system_clock::time_point> delay_timer_at_;
  bool jitter_passed_ = false;  // the pump that the jitter timer runs
  double rtt_ms_ = 1;           // moving average of a take's round trip
  std::minstd_rand rng_;
};

}  // namespace etcd::recipes::detail
