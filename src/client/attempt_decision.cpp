#include "attempt_decision.h"

#include <algorithm>

#include "convert.h"

namespace etcd::detail {

namespace {

// The least time worth a last try of a call before its deadline.
constexpr Clock::duration kLastTry = std::chrono::milliseconds(50);
// A reset from the member this close to the attempt's deadline is that
// deadline (the member counted it from when the request arrived, but our
// timer may fire late).
constexpr Clock::duration kServerDeadlineSlack = std::chrono::milliseconds(100);

// Why no connection could be made at all, when nothing listens at the
// address or the host does not resolve (nullptr otherwise): gRPC's text for
// those, in the client's words.
const char* unreachable_cause(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return nullptr;
  const std::string& m = s.error_message();
  if (m.find("Connection refused") != std::string::npos) return "connection refused (nothing listens there)";
  if (m.find("DNS resolution failed") != std::string::npos || m.find("ARES_SUCCESS") != std::string::npos ||
      m.find("Domain name not found") != std::string::npos) {
    return "the host name does not resolve";
  }
  return nullptr;
}

// A gRPC failure that certainly happened before the request left this
// process: the transport never connected. Only then may a write be retried.
bool never_sent(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string& m = s.error_message();
  return unreachable_cause(s) != nullptr || m.find("failed to connect to all addresses") != std::string::npos ||
         m.find("before receiving SETTINGS frame") != std::string::npos;
}

// Given up by the call watch: the member will not answer (or not in time),
// which is what unavailable means to the rules below. The watch already
// moved the client off a member that stalled or has no leader. A cancel
// this client did not ask for came from the other end: the member reset the
// stream. gRPC servers do that when their copy of the deadline runs out,
// which can come before ours does (our timer runs late on a busy machine):
// near the deadline that is the deadline. Otherwise the member dropped the
// call (it is going away), which is unavailable. Either way a write's
// outcome is unknown.
grpc::Status what_a_cancel_means(const AttemptFacts& f) {
  const grpc::Status& s = f.status;
  if (s.error_code() != grpc::StatusCode::CANCELLED) return s;
  if (f.given_up) return grpc::Status(grpc::StatusCode::UNAVAILABLE, f.given_up_detail);
  if (f.cancelled || f.closed) return s;
  const bool at_deadline = f.now + kServerDeadlineSlack >= f.attempt_deadline;
  return grpc::Status(
      at_deadline ? grpc::StatusCode::DEADLINE_EXCEEDED : grpc::StatusCode::UNAVAILABLE,
      (at_deadline ? "deadline exceeded (the member's copy of it ran out first): " : "the member reset the call: ") +
          s.error_message());
}

}  // namespace

AttemptDecision decide_after_attempt(const AttemptFacts& f) {
  AttemptDecision d;
  d.refusals = f.refusals;
  const grpc::Status s = what_a_cancel_means(f);
  auto finish = [&d](Status status) {
    d.next = AttemptDecision::Next::kFinish;
    d.status = std::move(status);
    return d;
  };
  if (s.ok()) {
    d.answered = true;
    return finish(Status());
  }
  Status status = from_grpc(s);
  if (status.is(Errc::kTokenExpired) && f.auth_enabled && f.attempts < f.max_attempts) {
    // Rejected before it was applied: authenticate again and resend.
    d.next = AttemptDecision::Next::kReauthenticate;
    return d;
  }
  if (s.error_code() == grpc::StatusCode::CANCELLED) {
    if (f.closed) return finish(Closed("client"));
    return finish(f.cancelled ? Cancelled(std::string(f.name) + " cancelled") : std::move(status));
  }
  // An attempt that ran out of its own (per-attempt) time on an idempotent
  // call means the member stopped answering: treat it like unavailable.
  const bool attempt_timed_out = f.attempt_limited && s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  const bool unavailable = s.error_code() == grpc::StatusCode::UNAVAILABLE || attempt_timed_out;
  if (f.given_up) {
    // Reported by the watch already.
  } else if (unavailable) {
    d.report = attempt_timed_out ? AttemptDecision::Report::kStall : AttemptDecision::Report::kFailure;
    d.connection_failure = !status.is(Errc::kNoLeader);
  } else if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !f.cancelled) {
    // The whole deadline passed without an answer (a write, or a call
    // shorter than one attempt): the member may have stopped answering,
    // so later calls go elsewhere (or over a fresh connection).
    d.report = AttemptDecision::Report::kStall;
  }
  // A member without a leader rejects a request before proposing it, and
  // a connection that never opened sent nothing: both are safe to retry.
  const bool unsent = never_sent(s);
  const bool safe = f.idempotent || unsent || status.is(Errc::kNoLeader);
  // "No leader" lasts an election (a second or two after the leader
  // died), and a member that takes a connection but sends no HTTP/2
  // SETTINGS (a paused process: its kernel accepts) may be back in
  // seconds: both are retried within the call's deadline, beyond
  // max_attempts, which a few quick backoffs would use up first. A
  // refused connection (nothing listens: a member restarting, or the
  // wrong address) or a host that does not resolve moves the call to the
  // next endpoint; once every endpoint has refused it (each on its latest
  // try) for RetryPolicy::refused_window, it fails as kUnreachable. While
  // any endpoint takes the connection (say, a member between leaders),
  // the call goes on within its deadline.
  const char* unreachable = unreachable_cause(s);
  if (unreachable == nullptr) {
    d.refusals.by.erase(f.endpoint);
  } else {
    d.refusals.by.insert(f.endpoint);
  }
  const bool all_refused = unreachable != nullptr && d.refusals.by.size() >= f.endpoints;
  if (!all_refused) {
    d.refusals.since.reset();
  } else if (!d.refusals.since) {
    d.refusals.since = f.now;
  }
  const bool unsent_left = unsent && (!all_refused || f.now - *d.refusals.since < f.refused_window);
  const bool attempts_left = f.attempts < f.max_attempts || status.is(Errc::kNoLeader) || unsent_left;
  if (unavailable && safe && attempts_left && !f.cancelled) {
    // A backoff that would pass the deadline is shortened, so the last
    // try is made while time is left: the call ends at its deadline, not
    // a backoff before it (with the last try's error, which says why).
    const auto left = f.call_deadline - f.now;
    if (left > kLastTry) {
      d.next = AttemptDecision::Next::kRetry;
      d.delay = std::min<Clock::duration>(f.backoff, left - kLastTry);
      return d;
    }
  }
  if (all_refused && !f.cancelled) {
    // Never sent: final for reads and writes alike (classify: kNever).
    const auto tried = std::chrono::duration_cast<std::chrono::milliseconds>(f.now - *d.refusals.since);
    return finish(Status(StatusCode::kUnavailable,
                         std::string(f.name) + ": etcd unreachable at " + f.endpoint + ": " + unreachable +
                             "; tried for " + std::to_string(tried.count()) + " ms, the request was not sent",
                         Errc::kUnreachable));
  }
  if (!f.idempotent && (unavailable || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) && !safe) {
    return finish(
        Status(status.code(),
               std::string(f.name) + ": outcome unknown (the request may have been applied): " + s.error_message(),
               Errc::kOutcomeUnknown));
  }
  return finish(std::move(status));
}

}  // namespace etcd::detail
