// EventLog<E>: what a recipe's listener delivered, in order, for a test to
// read while more arrive: the events, whether two calls ever overlapped
// (a recipe's listeners run one at a time), and a bounded wait for a count.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

#include "support/etcd_fixture.h"

namespace etcd::test {

template <class E>
struct EventLog {
  std::mutex mu;
  std::vector<E> all;
  std::atomic<bool> overlapped{false};
  std::atomic<int> inside{0};

  // The listener to register; it must not outlive the log.
  std::function<void(const E&)> listener() {
    return [this](const E& e) {
      if (inside.fetch_add(1) != 0) overlapped = true;
      {
        std::lock_guard lock(mu);
        all.push_back(e);
      }
      inside.fetch_sub(1);
    };
  }
  size_t size() {
    std::lock_guard lock(mu);
    return all.size();
  }
  E at(size_t i) {
    std::lock_guard lock(mu);
    return all.at(i);
  }
  // True once at least n events arrived (within 15 s).
  bool wait_for(size_t n) {
    return eventually([&] { return size() >= n; }, std::chrono::seconds(15));
  }
};

}  // namespace etcd::test
