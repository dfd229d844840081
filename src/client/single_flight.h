// Start once, join while it runs (internal): the first caller of join()
// starts the work, callers arriving while it runs wait for the same
// result, and land() ends the flight, so that the next join() starts the
// work again. What a session's and a presence lease's start() and the
// client's authentication share.
//
// Not synchronised: the owner guards it with the lock that guards what the
// work produces (a token, a phase), so that deciding to start, joining and
// landing are each atomic with that state. The waiters are completed after
// that lock is released, through the Landing that land() hands over: a
// waiter may call back into its owner.
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace etcd::detail {

template <class R>
class SingleFlight {
 public:
  using Waiter = std::function<void(R)>;

  // A flight's waiters, taken by land(): completed once, with one result.
  class Landing {
   public:
    Landing() = default;
    void complete(const R& result) && {
      auto waiters = std::move(waiters_);
      for (auto& w : waiters) w(result);
    }

   private:
    friend class SingleFlight;
    explicit Landing(std::vector<Waiter> waiters) : waiters_(std::move(waiters)) {}
    std::vector<Waiter> waiters_;
  };

  // Joins the flight in progress, or starts one: true when the caller is
  // the first and must start the work.
  [[nodiscard]] bool join(Waiter waiter) {
    waiters_.push_back(std::move(waiter));
    if (running_) return false;
    running_ = true;
    return true;
  }

  bool running() const { return running_; }

  // Ends the flight (its work finished, or its owner closed): the waiters
  // to complete once the lock is released.
  [[nodiscard]] Landing land() {
    running_ = false;
    return Landing(std::exchange(waiters_, {}));
  }

 private:
  bool running_ = false;
  std::vector<Waiter> waiters_;
};

}  // namespace etcd::detail
