// The one retry policy: which failures a retry can help, and the backoff.
#include "etcd/retry.h"

#include <gtest/gtest.h>

#include <set>

namespace etcd {
namespace {

using std::chrono::milliseconds;

TEST(RetryTest, ClassifiesWhatARetryCanHelp) {
  EXPECT_EQ(classify(Status()), Retry::kNever);
  EXPECT_EQ(classify(Status(StatusCode::kUnavailable, "connection refused")), Retry::kAlways);
  EXPECT_EQ(classify(Status(StatusCode::kUnavailable, "no leader", Errc::kNoLeader)), Retry::kAlways);
  // The client spent RetryPolicy::refused_window on it already: final.
  EXPECT_EQ(classify(Status(StatusCode::kUnavailable, "etcd unreachable", Errc::kUnreachable)), Retry::kNever);
  EXPECT_EQ(classify(Status(StatusCode::kUnavailable, "may have been applied", Errc::kOutcomeUnknown)),
            Retry::kIfIdempotent);
  EXPECT_EQ(classify(Status(StatusCode::kDeadlineExceeded, "timed out")), Retry::kIfIdempotent);
  EXPECT_EQ(classify(Status(StatusCode::kInvalidArgument, "bad key")), Retry::kNever);
  EXPECT_EQ(classify(Status(StatusCode::kFailedPrecondition, "guard failed")), Retry::kNever);
  EXPECT_EQ(classify(Status(StatusCode::kNotFound, "no such lease")), Retry::kNever);
  EXPECT_EQ(classify(Status(StatusCode::kCancelled, "stop requested")), Retry::kNever);
  EXPECT_EQ(classify(Status(StatusCode::kPermissionDenied, "no")), Retry::kNever);
}

TEST(RetryTest, BackoffGrowsExponentiallyToItsCap) {
  const Backoff b{.initial = milliseconds(50), .max = milliseconds(1000), .multiplier = 2, .jitter = 0};
  EXPECT_EQ(b.delay(1), milliseconds(50));
  EXPECT_EQ(b.delay(2), milliseconds(100));
  EXPECT_EQ(b.delay(3), milliseconds(200));
  EXPECT_EQ(b.delay(5), milliseconds(800));
  EXPECT_EQ(b.delay(6), milliseconds(1000));
  EXPECT_EQ(b.delay(1000), milliseconds(1000)) << "no overflow past the cap";
  EXPECT_EQ(b.delay(0), milliseconds(50)) << "a first retry however it is counted";
  EXPECT_EQ(b.delay(-3), milliseconds(50));
}

TEST(RetryTest, JitterSpreadsDelaysWithinItsRange) {
  const Backoff b{.initial = milliseconds(1000), .max = milliseconds(1000), .multiplier = 2, .jitter = 0.2};
  std::set<int64_t> seen;
  for (int i = 0; i < 200; ++i) {
    const auto d = b.delay(1);
    EXPECT_GE(d, milliseconds(800));
    EXPECT_LE(d, milliseconds(1200));
    seen.insert(d.count());
  }
  EXPECT_GT(seen.size(), 20u) << "clients that failed together would retry in step";
  EXPECT_EQ(b.nominal(1), milliseconds(1000));
}

TEST(RetryTest, AMaxBelowInitialNeverShrinksTheFirstDelay) {
  const Backoff b{.initial = milliseconds(300), .max = milliseconds(100), .multiplier = 2, .jitter = 0};
  EXPECT_EQ(b.delay(1), milliseconds(300));
  EXPECT_EQ(b.delay(4), milliseconds(300));
}

}  // namespace
}  // namespace etcd
