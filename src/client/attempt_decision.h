// What to do after one attempt of a unary call (internal): the client's
// retry and failover rules, as one pure function of what the attempt saw
// (decide_after_attempt), so that they read, and are tested, apart from
// the machinery that sends attempts and keeps time (UnaryAttempt).
//
// The outcomes: finish the call with a status; retry after a backoff (on
// whatever endpoint is current by then: a failure report moves the client
// on to the next member first, a stall report also gives the member a
// fresh connection); or authenticate again and resend at once.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <optional>
#include <set>
#include <string>

#include "etcd/call.h"
#include "etcd/status.h"

namespace etcd::detail {

// A call's record of refused connections, across its attempts.
struct Refusals {
  std::set<std::string> by;                // endpoints whose latest try refused the connection
  std::optional<Clock::time_point> since;  // since when every endpoint does
};

// What one attempt saw, and what the call knows besides.
struct AttemptFacts {
  grpc::Status status;  // as gRPC completed the attempt
  const char* name = "";
  bool idempotent = false;  // safe to send again after an unknown outcome
  bool auth_enabled = false;
  int attempts = 1;        // made so far, this one included
  int max_attempts = 1;    // RetryPolicy::max_attempts
  bool cancelled = false;  // the caller asked for a stop
  bool closed = false;     // the client is closing
  bool given_up = false;   // the call watch gave the attempt up (and cancelled it)
  std::string given_up_detail;
  bool attempt_limited = false;  // sent with the per-attempt deadline, not the call's
  Clock::time_point now{};       // when the attempt completed
  Clock::time_point attempt_deadline{};
  Clock::time_point call_deadline{};
  Clock::duration backoff{};         // the policy's delay after `attempts` failures
  Clock::duration refused_window{};  // RetryPolicy::refused_window
  std::string endpoint;              // where the attempt went
  std::size_t endpoints = 1;         // how many the client has
  Refusals refusals;                 // before this attempt
};

struct AttemptDecision {
  enum class Next { kFinish, kRetry, kReauthenticate };
  enum class Report { kNone, kFailure, kStall };  // what the endpoint set hears of the member

  Next next = Next::kFinish;
  Status status;            // kFinish: the call's result
  Clock::duration delay{};  // kRetry: the wait before the next attempt
  Report report = Report::kNone;
  bool answered = false;            // the member answered (the connection state hears of it)
  bool connection_failure = false;  // the connection state hears of a failure
  Refusals refusals;                // after this attempt
};

AttemptDecision decide_after_attempt(const AttemptFacts& facts);

}  // namespace etcd::detail
