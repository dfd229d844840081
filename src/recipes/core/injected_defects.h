// Deliberate defects (internal), switched on only by tests that prove a
// checker catches them (tests/chaos, --inject-defect). Nothing else sets
// them; all are off by default.
#pragma once

#include <atomic>

namespace etcd::recipes::detail {

struct InjectedDefects {
  // A waiting contender (mutex, read-write lock, semaphore, election
  // candidate) that wakes up because the key it waited on went away takes
  // the hold at once, without reading whether it is now first: when the
  // key that went away was another waiter's (it gave up), two contenders
  // hold at the same time.
  std::atomic<bool> contender_skips_recheck{false};
};

InjectedDefects& injected_defects();

}  // namespace etcd::recipes::detail
