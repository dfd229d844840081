// The one error model of etcd-recipes: every operation yields a Result<T>,
// which is either a value or a Status. Status codes have the same numeric
// values as gRPC's, so a transport failure passes through unchanged, and a
// finer etcd-specific reason (Errc) says what happened in etcd's terms.
// See docs/errors.md.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace etcd {

// Numeric values match grpc::StatusCode (and absl::StatusCode).
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// What went wrong, in etcd's (or this library's) own terms. kNone when the
// code alone says everything.
enum class Errc : int {
  kNone = 0,
  kCompacted,         // the requested revision was compacted away
  kFutureRevision,    // the requested revision is newer than the store
  kLeaseNotFound,     // the lease does not exist (expired or revoked)
  kLeaseExpired,      // a kept lease was confirmed gone
  kKeyNotFound,       // a key that had to exist does not
  kOutcomeUnknown,    // a write may or may not have been applied
  kClosed,            // the object was closed; no new work is accepted
  kNoLeader,          // the member has no raft leader
  kAuthFailed,        // wrong user name or password
  kTokenExpired,      // the auth token expired (refreshed automatically)
  kPermissionDenied,  // the user lacks permission for the key
  kRequestTooLarge,   // the request exceeds the server's size limit
  kTooManyOps,        // a Txn has more operations than the server allows
  kDuplicateKey,      // a Txn writes the same key twice
  kBadArgument,       // rejected by this library before anything was sent
  kWatchCanceled,     // the server cancelled a watch
  kResyncNeeded,      // a watch cannot resume without a gap; reload
  kHoldLost,          // an exclusive hold (lock, permit, leadership) is gone
  kMismatch,          // stored configuration differs (e.g. permit count)
  kDecodeFailed,      // a stored value is not a valid T for its codec
  kUnreachable,       // no endpoint took a connection (refused, no such host): nothing was sent
};

std::string_view to_string(StatusCode code) noexcept;
std::string_view to_string(Errc reason) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(StatusCode code, std::string message, Errc reason = Errc::kNone)
      : code_(code), reason_(reason), message_(std::move(message)) {}

  static Status Ok() noexcept { return Status(); }

  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  StatusCode code() const noexcept { return code_; }
  Errc reason() const noexcept { return reason_; }
  const std::string& message() const noexcept { return message_; }
  // Extra integer detail: for a watch that ends with kCompacted or
  // kResyncNeeded, the compact revision the server reported (reload at or
  // after it). 0 otherwise, including a read at a compacted revision (etcd's
  // error does not say which revision it was compacted to).
  int64_t revision() const noexcept { return revision_; }
  Status& with_revision(int64_t rev) & noexcept {
    revision_ = rev;
    return *this;
  }
  Status&& with_revision(int64_t rev) && noexcept {
    revision_ = rev;
    return std::move(*this);
  }

  bool is(Errc r) const noexcept { return reason_ == r; }
  // "UNAVAILABLE [outcome_unknown]: message"
  std::string to_string() const;

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code_ == b.code_ && a.reason_ == b.reason_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  Errc reason_ = Errc::kNone;
  int64_t revision_ = 0;
  std::string message_;
};

// Thrown only by Result<T>::value() on an error result and by the few
// constructors that validate their arguments (documented where they do).
class Error : public std::runtime_error {
 public:
  explicit Error(Status status) : std::runtime_error(status.to_string()), status_(std::move(status)) {}
  const Status& status() const noexcept { return status_; }

 private:
  Status status_;
};

// Helpers for the common codes.
Status InvalidArgument(std::string message, Errc reason = Errc::kBadArgument);
Status Closed(std::string_view what);
Status Cancelled();
Status Cancelled(std::string message);
Status DeadlineExceeded();
Status DeadlineExceeded(std::string message);

// A value or an error. Modelled on absl::StatusOr; `Result<void>` carries
// only a Status.
template <class T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}        // NOLINT
  Result(Status status) : state_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    if (std::get<1>(state_).ok()) {
      state_.template emplace<1>(StatusCode::kInternal, "Result built from an OK status without a value");
    }
  }

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(state_);
  }
  Status status() && { return ok() ? Status() : std::move(std::get<1>(state_)); }

  T& value() & {
    throw_if_error();
    return std::get<0>(state_);
  }
  const T& value() const& {
    throw_if_error();
    return std::get<0>(state_);
  }
  // By value, not T&&: `for (auto& kv : client.get(p).wait().value().kvs)`
  // must not iterate a member of a Result that died at the end of the
  // range-init expression. The value is moved out, so this costs a move.
  T value() && {
    throw_if_error();
    return std::move(std::get<0>(state_));
  }
  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<0>(state_) : static_cast<T>(std::forward<U>(fallback));
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void throw_if_error() const {
    if (!ok()) throw Error(std::get<1>(state_));
  }
  std::variant<T, Status> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;
  Result() = default;
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const noexcept { return status_.ok(); }
  explicit operator bool() const noexcept { return ok(); }
  const Status& status() const& noexcept { return status_; }
  Status status() && noexcept { return std::move(status_); }
  void value() const {
    if (!ok()) throw Error(status_);
  }

 private:
  Status status_;
};

}  // namespace etcd
