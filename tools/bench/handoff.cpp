#include "handoff.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace bench {
namespace {

using Millis = std::chrono::duration<double, std::milli>;

class HandoffRun : public std::enable_shared_from_this<HandoffRun> {
 public:
  explicit HandoffRun(const HandoffSpec& spec) : spec_(spec) {}

  void start() {
    for (std::size_t i = 0; i < spec_.contenders; ++i) take(i);
  }

  // Waits until done, then ends every contender and waits for the parked
  // requests to finish.
  HandoffSamples finish(Clock::time_point give_up) {
    std::unique_lock lock(mu_);
    const bool done = cv_.wait_until(lock, give_up, [&] { return stopping_; });
    lock.unlock();
    spec_.close_all();
    lock.lock();
    cv_.wait_until(lock, Clock::now() + std::chrono::seconds(10), [&] { return outstanding_ == 0; });
    if (!done) throw std::runtime_error(spec_.what + ": only " + std::to_string(samples_.size()) + " samples in time");
    if (error_) throw etcd::Error(*error_);
    if (samples_.empty()) throw std::runtime_error(spec_.what + ": no handoffs measured");
    HandoffSamples out;
    out.ms = samples_;
    std::ranges::sort(out.ms);
    out.wakeups_per_handoff = (wakeups_end_ - wakeups_start_) / static_cast<double>(samples_.size());
    return out;
  }

 private:
  void take(std::size_t i) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      ++outstanding_;
    }
    spec_.take(i).then([self = shared_from_this(), i](etcd::Result<void> r) {
      self->on_taken(i, std::move(r));
      std::lock_guard lock(self->mu_);
      if (--self->outstanding_ == 0) self->cv_.notify_all();
    });
  }

  void on_taken(std::size_t i, etcd::Result<void> r) {
    const auto now = Clock::now();
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;  // closed: parked requests end with kClosed
      if (!r.ok()) return fail(r.status());
      if (given_at_) {
        if (++handoffs_ == spec_.warmup) {
          wakeups_start_ = spec_.wakeups();
          measure_end_ = now + spec_.window;
        } else if (handoffs_ > spec_.warmup) {
          samples_.push_back(Millis(now - *given_at_).count());
        }
      }
      if (handoffs_ > spec_.warmup && (now >= measure_end_ || samples_.size() >= spec_.max_samples)) {
        wakeups_end_ = spec_.wakeups();
        stopping_ = true;
        cv_.notify_all();
        return;
      }
      given_at_ = Clock::now();
    }
    spec_.give(i).then([self = shared_from_this(), i](etcd::Result<bool> given) {
      if (!given.ok() || !*given) {
        std::lock_guard lock(self->mu_);
        if (!self->stopping_) {
          self->fail(given.ok() ? etcd::Status(etcd::StatusCode::kAborted, self->spec_.what + ": a hold was lost")
                                : given.status());
        }
        return;
      }
      self->take(i);  // ask again, behind the others
    });
  }

  // Under mu_.
  void fail(etcd::Status why) {
    if (!error_) error_ = std::move(why);
    stopping_ = true;
    cv_.notify_all();
  }

  const HandoffSpec spec_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int outstanding_ = 0;
  int handoffs_ = 0;
  Clock::time_point measure_end_ = Clock::time_point::max();
  std::optional<Clock::time_point> given_at_;
  std::vector<double> samples_;
  double wakeups_start_ = 0;
  double wakeups_end_ = 0;
  std::optional<etcd::Status> error_;
};

}  // namespace

double HandoffSamples::percentile(double p) const {
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(ms.size())));
  return ms.at(std::max<std::size_t>(rank, 1) - 1);
}

std::string HandoffSamples::summary() const {
  const auto slow = std::count_if(ms.begin(), ms.end(), [](double v) { return v > 40.0; });
  char buf[256];
  std::snprintf(buf, sizeof buf, "%zu samples, min %.3f p90 %.3f max %.3f ms, %lld over 40 ms, %.2f wake-ups each",
                ms.size(), ms.front(), percentile(90), ms.back(), static_cast<long long>(slow), wakeups_per_handoff);
  return buf;
}

HandoffSamples measure_handoffs(const HandoffSpec& spec, Clock::time_point give_up) {
  auto run = std::make_shared<HandoffRun>(spec);
  run->start();
  return run->finish(give_up);
}

}  // namespace bench
