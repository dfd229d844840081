// Status, Result and the mapping of etcd's errors to reasons.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "convert.h"
#include "etcd/status.h"

namespace etcd {
namespace {

// `for (auto& kv : client.get(p).wait().value().kvs)` must not bind to a
// member of a dead temporary: value() on an rvalue Result yields a value.
static_assert(std::is_same_v<decltype(std::declval<Result<std::vector<int>>>().value()), std::vector<int>>);
static_assert(std::is_same_v<decltype(*std::declval<Result<std::vector<int>>>()), std::vector<int>>);
static_assert(std::is_same_v<decltype(std::declval<Result<int>&>().value()), int&>);

struct Holder {
  std::vector<std::string> items;
};
Result<Holder> make_holder() { return Holder{{"a", "b", "c"}}; }

TEST(Result, RangeForOverAMemberOfATemporaryResultIsSafe) {
  // Under ASan this was stack-use-after-scope when value() returned T&&.
  std::string joined;
  for (const auto& s : make_holder().value().items) joined += s;
  EXPECT_EQ(joined, "abc");
}

TEST(Result, ValueOnAnErrorThrowsTheStatus) {
  Result<int> r(Status(StatusCode::kNotFound, "nope", Errc::kKeyNotFound));
  EXPECT_FALSE(r.ok());
  try {
    (void)r.value();
    FAIL() << "value() on an error must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(e.status().is(Errc::kKeyNotFound));
  }
  EXPECT_EQ(r.value_or(7), 7);
  EXPECT_THROW((void)std::move(r).value(), Error);
}

TEST(Result, AnOkStatusWithoutAValueIsAnInternalError) {
  Result<int> r{Status()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(Result, MovedOutValueAndVoid) {
  Result<std::string> r(std::string("hello"));
  std::string s = std::move(r).value();
  EXPECT_EQ(s, "hello");
  Result<void> ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_NO_THROW(ok.value());
  Result<void> bad(Cancelled());
  EXPECT_THROW(bad.value(), Error);
  EXPECT_EQ(bad.status().code(), StatusCode::kCancelled);
}

TEST(Status, CodesMatchGrpcAndPrintWithTheirReason) {
  EXPECT_EQ(static_cast<int>(StatusCode::kDeadlineExceeded), 4);
  EXPECT_EQ(static_cast<int>(StatusCode::kUnavailable), 14);
  EXPECT_EQ(static_cast<int>(StatusCode::kUnauthenticated), 16);
  Status s(StatusCode::kUnavailable, "Put: gone", Errc::kOutcomeUnknown);
  EXPECT_EQ(s.to_string(), "UNAVAILABLE [outcome_unknown]: Put: gone");
  EXPECT_EQ(Cancelled().message(), "cancelled");
  EXPECT_EQ(DeadlineExceeded().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(InvalidArgument("x").reason(), Errc::kBadArgument);
  EXPECT_EQ(Status(StatusCode::kOutOfRange, "c", Errc::kCompacted).with_revision(12).revision(), 12);
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status(StatusCode::kAborted, "a", Errc::kHoldLost), Status(StatusCode::kAborted, "b", Errc::kHoldLost));
}

TEST(Status, ADecodeFailureIsDataLossWithItsOwnReason) {
  // What a typed recipe reports for a stored value its codec cannot read
  // (etcd/recipes/codec.h builds these; see codec_test.cpp).
  Status s(StatusCode::kDataLoss, "value of key 'jobs/1' is not valid JSON", Errc::kDecodeFailed);
  EXPECT_EQ(static_cast<int>(StatusCode::kDataLoss), 15);
  EXPECT_EQ(to_string(Errc::kDecodeFailed), "decode_failed");
  EXPECT_EQ(to_string(Errc::kUnreachable), "unreachable");
  EXPECT_EQ(s.to_string(), "DATA_LOSS [decode_failed]: value of key 'jobs/1' is not valid JSON");
}

TEST(Status, EtcdErrorTextsBecomeReasons) {
  struct Case {
    grpc::StatusCode code;
    const char* text;
    Errc reason;
  };
  const Case cases[] = {
      {grpc::StatusCode::OUT_OF_RANGE, "etcdserver: mvcc: required revision has been compacted", Errc::kCompacted},
      {grpc::StatusCode::OUT_OF_RANGE, "etcdserver: mvcc: required revision is a future revision",
       Errc::kFutureRevision},
      {grpc::StatusCode::NOT_FOUND, "etcdserver: requested lease not found", Errc::kLeaseNotFound},
      {grpc::StatusCode::UNAVAILABLE, "etcdserver: no leader", Errc::kNoLeader},
      {grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: duplicate key given in txn request", Errc::kDuplicateKey},
      {grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: too many operations in txn request", Errc::kTooManyOps},
      {grpc::StatusCode::PERMISSION_DENIED, "etcdserver: permission denied", Errc::kPermissionDenied},
      {grpc::StatusCode::UNAVAILABLE, "connection refused", Errc::kNone},
  };
  for (const auto& c : cases) {
    Status s = detail::from_grpc(grpc::Status(c.code, c.text));
    EXPECT_EQ(static_cast<int>(s.code()), static_cast<int>(c.code)) << c.text;
    EXPECT_EQ(s.reason(), c.reason) << c.text;
    EXPECT_EQ(s.message(), c.text);
  }
  EXPECT_TRUE(detail::from_grpc(grpc::Status::OK).ok());
}

}  // namespace
}  // namespace etcd
