// Small pieces the lock recipes share (internal).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "etcd/call.h"
#include "etcd/status.h"

namespace etcd::recipes::detail {

// A lease id as it appears in contender keys: lower-case hex, no padding
// (the layout of etcd's Go concurrency package).
inline std::string lease_hex(int64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(id));
  return buf;
}

// Failures after which an idempotent step (creating a contender key if
// absent, re-reading) is simply tried again: the request did not get
// through, or its outcome is unknown.
inline bool transient(const Status& st) {
  return st.code() == StatusCode::kDeadlineExceeded || st.code() == StatusCode::kUnavailable ||
         st.is(Errc::kOutcomeUnknown);
}

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Keys claimed by recipe objects of this process. Two objects on one name
// and one session would share a contender key and both believe they hold
// it; the second claim fails instead.
class KeyClaims {
 public:
  static bool claim(const std::string& key) {
    std::lock_guard lock(mu());
    return keys().insert(key).second;
  }
  static void unclaim(const std::string& key) {
    std::lock_guard lock(mu());
    keys().erase(key);
  }

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::set<std::string>& keys() {
    static std::set<std::string> k;
    return k;
  }
};

}  // namespace etcd::recipes::detail
