// Small pieces the recipes share about keys and retries (internal).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>

#include "client/client_access.h"
#include "etcd/call.h"
#include "etcd/retry.h"
#include "etcd/session.h"
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
// absent, re-reading, a guarded write) is simply tried again, within its
// deadline: the client's one classification (etcd/retry.h) says a retry
// can help. Every recipe step is idempotent or guarded.
inline bool transient(const Status& st) { return classify(st) != Retry::kNever; }

// The recipes' own retries (a failed step tried again in the background):
// the client's one backoff, 50 ms doubling to 1 s, with jitter.
inline constexpr Backoff kStepBackoff{};

// 16 random hex digits: names a producer or a barrier party uniquely
// among the objects that share a client id.
inline std::string random_id() {
  std::random_device rd;
  const uint64_t id = (uint64_t{rd()} << 32) ^ uint64_t { rd() };
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Keys claimed by recipe objects, where etcd cannot tell two objects of one
// client apart: a contender key is named by its session's lease only (two
// objects on one name and one session would share it and both believe they
// hold it), and a transient key on the client's shared presence lease is
// recognised as "ours" by that lease. The second claim fails instead. A
// lease belongs to the one client it was granted on, so the claims are
// that client's (a service of its core), whichever clients the recipe
// objects use.
class KeyClaims {
 public:
  static std::shared_ptr<KeyClaims> of(const Client& client) {
    return etcd::detail::ClientAccess::service<KeyClaims>(client, [] { return std::make_shared<KeyClaims>(); });
  }
  static std::shared_ptr<KeyClaims> of(const Session& session) { return of(session.client()); }

  bool claim(const std::string& key) {
    std::lock_guard lock(mu_);
    return keys_.insert(key).second;
  }
  void unclaim(const std::string& key) {
    std::lock_guard lock(mu_);
    keys_.erase(key);
  }

 private:
  std::mutex mu_;
  std::set<std::string> keys_;
};

}  // namespace etcd::recipes::detail
