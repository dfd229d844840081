// Callers parked until a condition holds (internal): leadership, a first
// read, later a barrier or a queue item. Each waiter ends exactly once:
// when the condition holds, by its deadline or stop token, when the recipe
// closes (Errc::kClosed), or with a failure. No thread per waiter: a parked
// waiter is a few small objects and its timer.
#pragma once

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "client_link.h"
#include "etcd/call.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

// Callers parked until a condition holds (leadership, initialization), or
// until a level reaches what they need (a barrier round). Each
// waiter ends exactly once: when the condition holds, by its deadline or
// stop token, when the recipe closes (Errc::kClosed), or with a failure.
// A parked waiter is work in flight: it holds the recipe's link to the
// client until it ends.
class WaiterSet : public std::enable_shared_from_this<WaiterSet> {
 public:
  explicit WaiterSet(std::shared_ptr<RecipeCore> core) : core_(std::move(core)) {}

  // Completes `done` at once if the condition holds, otherwise parks it.
  void add(const CallOptions& options, Callback<void> done, std::string what) {
    add_until(options, std::move(done), std::move(what), kNever);
  }

  // The same, for a waiter that also completes once the level (advance())
  // reaches `needed`: e.g. a barrier party released by a round that
  // completed after it arrived.
  void add_until(const CallOptions& options, Callback<void> done, std::string what, uint64_t needed) {
    auto link = core_->link();
    if (!link) return done(core_->closed_status());  // closed, and its work is done
    auto w = std::make_shared<Waiter>();
    w->done = std::move(done);
    w->link = link;
    w->needed = needed;
    // Decided under the lock: once listed, the waiter is another thread's
    // to finish (set_ready() may move `done` out at once), so its flag must
    // not be read here again.
    bool at_once = false;
    {
      std::lock_guard lock(mu_);
      if (ready_ || level_ >= needed) {
        w->finished = at_once = true;
      } else {
        waiters_.push_back(w);
      }
    }
    if (at_once) return w->done(Result<void>());
    auto self = shared_from_this();
    std::weak_ptr<Waiter> ww = w;
    if (options.stop.stop_requested()) return finish(w, Cancelled(what + " cancelled"));
    if (options.deadline) {
      auto timer = std::make_shared<asio::steady_timer>(link->executor(), *options.deadline);
      timer->async_wait([self, ww, what](const asio::error_code& ec) {
        if (auto wp = ww.lock(); wp && !ec) self->finish(wp, DeadlineExceeded("timed out waiting for " + what));
      });
      keep(
          w, [&] { w->timer = timer; }, [&] { asio::post(link->executor(), [timer] { timer->cancel(); }); });
    }
    if (options.stop.stop_possible()) {
      // Stored only once registered: the callback may run inside the registration.
      auto stop_cb = std::make_shared<std::optional<std::stop_callback<std::function<void()>>>>();
      stop_cb->emplace(options.stop, std::function<void()>([self, ww, what] {
                         if (auto wp = ww.lock()) self->finish(wp, Cancelled(what + " cancelled"));
                       }));
      keep(
          w, [&] { w->stop_cb = stop_cb; }, [&] { drop_later(link, stop_cb); });
    }
    auto close_sub = core_->on_close([self, ww] {
      if (auto wp = ww.lock()) self->finish(wp, self->core_->closed_status());
    });
    keep(
        w, [&] { w->close_sub = std::move(close_sub); }, [] {});
  }

  // Sets the condition; while it holds, new waiters complete at once and
  // parked ones complete now.
  void set_ready(bool ready) {
    std::vector<std::shared_ptr<Waiter>> done;
    {
      std::lock_guard lock(mu_);
      ready_ = ready;
      if (ready) done.swap(waiters_);
    }
    for (auto& w : done) finish(w, Result<void>(), /*listed=*/false);
  }

  // Raises the level (it never goes down): parked waiters that needed at
  // most `level` complete now.
  void advance(uint64_t level) {
    std::vector<std::shared_ptr<Waiter>> done;
    {
      std::lock_guard lock(mu_);
      if (level <= level_) return;
      level_ = level;
      std::erase_if(waiters_, [&](const std::shared_ptr<Waiter>& w) {
        if (w->needed > level_) return false;
        done.push_back(w);
        return true;
      });
    }
    for (auto& w : done) finish(w, Result<void>(), /*listed=*/false);
  }
  uint64_t level() const {
    std::lock_guard lock(mu_);
    return level_;
  }

  // Ends every parked waiter with `why`.
  void fail_all(const Status& why) {
    std::vector<std::shared_ptr<Waiter>> done;
    {
      std::lock_guard lock(mu_);
      done.swap(waiters_);
    }
    for (auto& w : done) finish(w, why, /*listed=*/false);
  }

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};

  struct Waiter {
    Callback<void> done;
    uint64_t needed = kNever;  // the level that completes it
    std::shared_ptr<ClientLink> link;
    bool finished = false;  // guarded by WaiterSet::mu_
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<std::optional<std::stop_callback<std::function<void()>>>> stop_cb;
    Subscription close_sub;
  };

  template <class Store, class Undo>
  void keep(const std::shared_ptr<Waiter>& w, Store store, Undo undo) {
    {
      std::lock_guard lock(mu_);
      if (!w->finished) {
        store();
        return;
      }
    }
    undo();
  }

  // A stop callback is never destroyed on the thread that may be running it.
  static void drop_later(const std::shared_ptr<ClientLink>& link,
                         std::shared_ptr<std::optional<std::stop_callback<std::function<void()>>>> stop_cb) {
    if (stop_cb) asio::post(link->executor(), [stop_cb] { stop_cb->reset(); });
  }

  void finish(const std::shared_ptr<Waiter>& w, Result<void> result, bool listed = true) {
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<std::optional<std::stop_callback<std::function<void()>>>> stop_cb;
    Subscription close_sub;
    std::shared_ptr<ClientLink> link;
    {
      std::lock_guard lock(mu_);
      if (w->finished) return;
      w->finished = true;
      if (listed) std::erase(waiters_, w);
      timer = std::move(w->timer);
      stop_cb = std::move(w->stop_cb);
      close_sub = std::move(w->close_sub);
      link = std::move(w->link);
    }
    close_sub.reset();
    if (timer) asio::post(link->executor(), [timer] { timer->cancel(); });
    drop_later(link, std::move(stop_cb));
    auto done = std::move(w->done);
    done(std::move(result));
  }

  std::shared_ptr<RecipeCore> core_;
  mutable std::mutex mu_;
  bool ready_ = false;
  uint64_t level_ = 0;
  std::vector<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace etcd::recipes::detail
