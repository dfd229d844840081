// The client's retry and failover rules for one attempt of a unary call.
#include "attempt_decision.h"

#include <gtest/gtest.h>

namespace etcd::detail {
namespace {

using std::chrono::milliseconds;
using Next = AttemptDecision::Next;
using Report = AttemptDecision::Report;

const Clock::time_point kNow = Clock::time_point() + std::chrono::hours(1);

// A read on the second of three endpoints, first attempt, two seconds left.
AttemptFacts read_failed(grpc::StatusCode code, std::string message) {
  AttemptFacts f;
  f.status = grpc::Status(code, std::move(message));
  f.name = "Range";
  f.idempotent = true;
  f.attempts = 1;
  f.max_attempts = 5;
  f.now = kNow;
  f.attempt_deadline = kNow + milliseconds(2000);
  f.call_deadline = kNow + milliseconds(2000);
  f.backoff = milliseconds(20);
  f.refused_window = milliseconds(1000);
  f.endpoint = "127.0.0.1:2";
  f.endpoints = 3;
  return f;
}

AttemptFacts write_failed(grpc::StatusCode code, std::string message) {
  AttemptFacts f = read_failed(code, std::move(message));
  f.name = "Put";
  f.idempotent = false;
  return f;
}

TEST(AttemptDecisionTest, AnAnswerFinishesTheCall) {
  AttemptFacts f = read_failed(grpc::StatusCode::OK, "");
  f.status = grpc::Status::OK;
  const auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_TRUE(d.status.ok());
  EXPECT_TRUE(d.answered);
  EXPECT_EQ(d.report, Report::kNone);
}

TEST(AttemptDecisionTest, AnUnavailableReadFailsOverAndRetriesAfterTheBackoff) {
  const auto d = decide_after_attempt(read_failed(grpc::StatusCode::UNAVAILABLE, "socket closed"));
  EXPECT_EQ(d.next, Next::kRetry);
  EXPECT_EQ(d.delay, milliseconds(20));
  EXPECT_EQ(d.report, Report::kFailure);
  EXPECT_TRUE(d.connection_failure);
  EXPECT_FALSE(d.answered);
}

TEST(AttemptDecisionTest, TheLastTryIsMadeBeforeTheDeadlineNotABackoffAfterIt) {
  AttemptFacts f = read_failed(grpc::StatusCode::UNAVAILABLE, "socket closed");
  f.backoff = milliseconds(500);
  f.call_deadline = kNow + milliseconds(200);
  auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kRetry);
  EXPECT_EQ(d.delay, milliseconds(150));  // 50 ms left for the last try
  f.call_deadline = kNow + milliseconds(50);
  d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_EQ(d.status.code(), StatusCode::kUnavailable);
}

TEST(AttemptDecisionTest, AReadStopsRetryingAfterMaxAttempts) {
  AttemptFacts f = read_failed(grpc::StatusCode::UNAVAILABLE, "socket closed");
  f.attempts = 5;
  const auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_EQ(d.status.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(d.status.is(Errc::kOutcomeUnknown));
}

TEST(AttemptDecisionTest, ASentWriteThatFailedHasAnUnknownOutcome) {
  const auto d = decide_after_attempt(write_failed(grpc::StatusCode::UNAVAILABLE, "socket closed"));
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_TRUE(d.status.is(Errc::kOutcomeUnknown));
  EXPECT_NE(d.status.message().find("Put: outcome unknown"), std::string::npos);
  EXPECT_EQ(d.report, Report::kFailure);  // the next call goes elsewhere
}

TEST(AttemptDecisionTest, AWriteThatWasNeverSentIsRetried) {
  auto d = decide_after_attempt(write_failed(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses"));
  EXPECT_EQ(d.next, Next::kRetry);
  d = decide_after_attempt(write_failed(grpc::StatusCode::UNAVAILABLE, "Connection refused"));
  EXPECT_EQ(d.next, Next::kRetry);
}

TEST(AttemptDecisionTest, NoLeaderIsRetriedBeyondMaxAttemptsWithoutSuspendingTheClient) {
  AttemptFacts f = write_failed(grpc::StatusCode::UNAVAILABLE, "etcdserver: no leader");
  f.attempts = 9;
  const auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kRetry);
  EXPECT_EQ(d.report, Report::kFailure);
  EXPECT_FALSE(d.connection_failure);
}

TEST(AttemptDecisionTest, EveryEndpointRefusingForTheWindowIsUnreachable) {
  AttemptFacts f = write_failed(grpc::StatusCode::UNAVAILABLE, "Connection refused");
  f.refusals.by = {"127.0.0.1:1", "127.0.0.1:3"};
  // The third refusal makes it every endpoint: the window starts.
  auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kRetry);
  ASSERT_TRUE(d.refusals.since);
  EXPECT_EQ(*d.refusals.since, kNow);
  // Still refused a window later: final, and never sent.
  f.refusals = d.refusals;
  f.attempts = 7;
  f.now = kNow + milliseconds(1000);
  d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_TRUE(d.status.is(Errc::kUnreachable));
  EXPECT_NE(d.status.message().find("tried for 1000 ms, the request was not sent"), std::string::npos);
}

TEST(AttemptDecisionTest, AnEndpointThatTakesTheConnectionLeavesTheRefusals) {
  AttemptFacts f = read_failed(grpc::StatusCode::UNAVAILABLE, "socket closed");
  f.refusals.by = {"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"};
  f.refusals.since = kNow - milliseconds(5000);
  const auto d = decide_after_attempt(f);
  EXPECT_EQ(d.refusals.by.count("127.0.0.1:2"), 0u);
  EXPECT_FALSE(d.refusals.since);
  EXPECT_EQ(d.next, Next::kRetry);
}

TEST(AttemptDecisionTest, AnExpiredTokenAuthenticatesAgainWhileAttemptsAreLeft) {
  AttemptFacts f = write_failed(grpc::StatusCode::UNAUTHENTICATED, "etcdserver: invalid auth token");
  f.auth_enabled = true;
  EXPECT_EQ(decide_after_attempt(f).next, Next::kReauthenticate);
  f.attempts = 5;
  const auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_TRUE(d.status.is(Errc::kTokenExpired));
}

TEST(AttemptDecisionTest, ACancelTheCallerAskedForOrACloseFinishes) {
  AttemptFacts f = read_failed(grpc::StatusCode::CANCELLED, "Cancelled");
  f.cancelled = true;
  auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_EQ(d.status.code(), StatusCode::kCancelled);
  EXPECT_EQ(d.status.message(), "Range cancelled");
  f.cancelled = false;
  f.closed = true;
  d = decide_after_attempt(f);
  EXPECT_TRUE(d.status.is(Errc::kClosed));
  EXPECT_EQ(d.report, Report::kNone);
}

TEST(AttemptDecisionTest, AResetFromTheMemberIsUnavailableOrNearTheDeadlineTheDeadline) {
  AttemptFacts f = write_failed(grpc::StatusCode::CANCELLED, "Cancelled");
  auto d = decide_after_attempt(f);
  EXPECT_TRUE(d.status.is(Errc::kOutcomeUnknown));
  EXPECT_NE(d.status.message().find("the member reset the call"), std::string::npos);
  EXPECT_EQ(d.report, Report::kFailure);
  f.attempt_deadline = kNow + milliseconds(80);
  d = decide_after_attempt(f);
  EXPECT_TRUE(d.status.is(Errc::kOutcomeUnknown));
  EXPECT_NE(d.status.message().find("the member's copy of it ran out first"), std::string::npos);
  EXPECT_EQ(d.report, Report::kStall);
}

TEST(AttemptDecisionTest, AnAttemptTheCallWatchGaveUpIsUnavailableAndAlreadyReported) {
  AttemptFacts f = read_failed(grpc::StatusCode::CANCELLED, "Cancelled");
  f.given_up = true;
  f.given_up_detail = "member 127.0.0.1:2 lost its raft leader";
  auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kRetry);
  EXPECT_EQ(d.report, Report::kNone);
  EXPECT_FALSE(d.connection_failure);
  f.idempotent = false;
  d = decide_after_attempt(f);
  EXPECT_TRUE(d.status.is(Errc::kOutcomeUnknown));
  EXPECT_NE(d.status.message().find("lost its raft leader"), std::string::npos);
}

TEST(AttemptDecisionTest, APerAttemptTimeoutIsAStallAndRetried) {
  AttemptFacts f = read_failed(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded");
  f.attempt_limited = true;
  auto d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kRetry);
  EXPECT_EQ(d.report, Report::kStall);
  // The call's own deadline: final, and the member is still suspect.
  f.attempt_limited = false;
  d = decide_after_attempt(f);
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_EQ(d.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(d.report, Report::kStall);
}

TEST(AttemptDecisionTest, OtherErrorsFinishAsTheyAre) {
  const auto d =
      decide_after_attempt(read_failed(grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: key is not provided"));
  EXPECT_EQ(d.next, Next::kFinish);
  EXPECT_EQ(d.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.report, Report::kNone);
  EXPECT_FALSE(d.connection_failure);
}

}  // namespace
}  // namespace etcd::detail
