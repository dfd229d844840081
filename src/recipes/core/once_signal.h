// A signal raised at most once, heard by every listener exactly once
// (internal): a hold's release request (HoldState, MultiHold).
//
// raised() and a std::stop_token tell whether it was raised; listeners run
// on the executor the owner gives, never inline. Whether it was raised and
// the subscription of a new listener are decided under one lock, so a
// listener added as it is raised hears of it either with the others or on
// its own, never neither. The token is requested outside that lock: its
// stop callbacks run on the raising thread and may call back into the owner.
#pragma once

#include <functional>
#include <mutex>
#include <stop_token>
#include <utility>

#include "client/listener_set.h"

namespace etcd::recipes::detail {

class OnceSignal {
 public:
  std::stop_token token() const { return source_.get_token(); }

  bool raised() const {
    std::lock_guard lock(mu_);
    return raised_;
  }

  // Raises it and posts every listener to `executor`: false (nothing done)
  // if it was raised before.
  template <class Executor>
  bool raise(const Executor& executor, const etcd::detail::ThrowSink& on_throw) {
    {
      std::lock_guard lock(mu_);
      if (raised_) return false;
      raised_ = true;
    }
    source_.request_stop();
    listeners_.notify(executor, on_throw);
    return true;
  }

  // Runs `listener` on `executor` once the signal is raised: at once if it
  // was.
  template <class Executor>
  Subscription subscribe(std::function<void()> listener, const Executor& executor,
                         const etcd::detail::ThrowSink& on_throw) {
    {
      std::lock_guard lock(mu_);
      if (!raised_) return listeners_.add(std::move(listener));
    }
    return etcd::detail::ListenerSet<>::notify_one(executor, on_throw, std::move(listener));
  }

  // Drops the listeners not yet told (the owner ended; they may own it).
  void clear() { listeners_.clear(); }

 private:
  mutable std::mutex mu_;
  bool raised_ = false;
  std::stop_source source_;
  etcd::detail::ListenerSet<> listeners_;
};

}  // namespace etcd::recipes::detail
