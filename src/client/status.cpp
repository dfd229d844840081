#include "etcd/status.h"

#include "etcd/connection.h"
#include "etcd/kv.h"

namespace etcd {

std::string_view to_string(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kUnknown:
      return "UNKNOWN";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kAborted:
      return "ABORTED";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

std::string_view to_string(Errc reason) noexcept {
  switch (reason) {
    case Errc::kNone:
      return "";
    case Errc::kCompacted:
      return "compacted";
    case Errc::kFutureRevision:
      return "future_revision";
    case Errc::kLeaseNotFound:
      return "lease_not_found";
    case Errc::kLeaseExpired:
      return "lease_expired";
    case Errc::kKeyNotFound:
      return "key_not_found";
    case Errc::kOutcomeUnknown:
      return "outcome_unknown";
    case Errc::kClosed:
      return "closed";
    case Errc::kNoLeader:
      return "no_leader";
    case Errc::kAuthFailed:
      return "auth_failed";
    case Errc::kTokenExpired:
      return "token_expired";
    case Errc::kPermissionDenied:
      return "permission_denied";
    case Errc::kRequestTooLarge:
      return "request_too_large";
    case Errc::kTooManyOps:
      return "too_many_ops";
    case Errc::kDuplicateKey:
      return "duplicate_key";
    case Errc::kBadArgument:
      return "bad_argument";
    case Errc::kWatchCanceled:
      return "watch_canceled";
    case Errc::kResyncNeeded:
      return "resync_needed";
    case Errc::kHoldLost:
      return "hold_lost";
    case Errc::kMismatch:
      return "mismatch";
    case Errc::kDecodeFailed:
      return "decode_failed";
    case Errc::kUnreachable:
      return "unreachable";
  }
  return "unknown_reason";
}

std::string_view to_string(ConnectionState state) noexcept {
  switch (state) {
    case ConnectionState::kConnected:
      return "CONNECTED";
    case ConnectionState::kSuspended:
      return "SUSPENDED";
    case ConnectionState::kReconnected:
      return "RECONNECTED";
    case ConnectionState::kLost:
      return "LOST";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  std::string out(etcd::to_string(code_));
  if (reason_ != Errc::kNone) {
    out += " [";
    out += etcd::to_string(reason_);
    out += "]";
  }
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

Status InvalidArgument(std::string message, Errc reason) {
  return Status(StatusCode::kInvalidArgument, std::move(message), reason);
}
Status Closed(std::string_view what) {
  return Status(StatusCode::kFailedPrecondition, std::string(what) + " is closed", Errc::kClosed);
}
Status Cancelled() { return Cancelled("cancelled"); }
Status DeadlineExceeded() { return DeadlineExceeded("deadline exceeded"); }
Status Cancelled(std::string message) { return Status(StatusCode::kCancelled, std::move(message)); }
Status DeadlineExceeded(std::string message) { return Status(StatusCode::kDeadlineExceeded, std::move(message)); }

std::string prefix_range_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return kFromKey;  // every byte was 0xff (or empty): to the end of the keyspace
}

}  // namespace etcd
