// Wall-clock time as the recipes store it in etcd: milliseconds since the
// Unix epoch. Only for values other processes read (a work item's
// not-before time, a service instance's registration time); waits and
// timeouts use the steady clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace etcd::recipes::detail {

inline int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline std::chrono::system_clock::time_point wall_clock_at(int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

}  // namespace etcd::recipes::detail
