// The campaign's recorded history: every operation a client invoked and how
// it completed, in the order the clients saw it, and the nemesis' faults.
// Checkers read their own records; the history is what a report shows
// around a violation.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace chaos {

using Clock = std::chrono::steady_clock;

struct Event {
  int64_t index = 0;
  double t = 0;           // seconds since the campaign started
  std::string process;    // "mutex/2", "nemesis", ...
  std::string type;       // invoke, ok, fail, info
  std::string op;         // acquire, write, add, enqueue, ...
  std::string detail;
};

class History {
 public:
  explicit History(Clock::time_point start) : start_(start) {}

  int64_t add(const std::string& process, const std::string& type, const std::string& op,
              const std::string& detail) {
    std::lock_guard lk(mu_);
    Event e;
    e.index = static_cast<int64_t>(events_.size());
    e.t = std::chrono::duration<double>(Clock::now() - start_).count();
    e.process = process;
    e.type = type;
    e.op = op;
    e.detail = detail;
    events_.push_back(std::move(e));
    return events_.back().index;
  }

  double now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  std::vector<Event> events() const {
    std::lock_guard lk(mu_);
    return events_;
  }

  // The events of processes whose name starts with `prefix` (and the
  // nemesis') within `radius` events of that family around `index`.
  std::vector<Event> around(int64_t index, const std::string& prefix, int radius) const;

 private:
  const Clock::time_point start_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

}  // namespace chaos
