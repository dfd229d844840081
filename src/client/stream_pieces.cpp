#include "stream_pieces.h"

#include "convert.h"
#include "log_dispatch.h"
#include "retry_backoff.h"

namespace etcd::detail {

void StreamPieces::ended(const grpc::Status& s, const std::string& token, const std::shared_ptr<Endpoint>& ep,
                         bool cancel_fails) const {
  const Status why = from_grpc(s);
  if (why.is(Errc::kTokenExpired)) auth.invalidate(token);
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
      (cancel_fails && s.error_code() == grpc::StatusCode::CANCELLED)) {
    endpoints.report_failure(ep);
    if (!why.is(Errc::kNoLeader)) connection.note_connection_failure();
  }
}

Clock::duration StreamPieces::reconnect_delay(int attempt) const {
  return attempt == 0 ? Clock::duration{} : Clock::duration(retry_backoff(retry).delay(attempt));
}

void StreamPieces::log_broken(const char* what, const std::shared_ptr<Endpoint>& ep, Status why) const {
  if (!log_wanted(LogLevel::kWarning)) return;
  post_log(callback, LogLevel::kWarning, LogSource{"client", ep ? ep->address : std::string()},
           std::string("the ") + what + " stream broke; reconnecting", std::move(why));
}

void StreamPieces::log_back(const char* what, const std::shared_ptr<Endpoint>& ep) const {
  if (!log_wanted(LogLevel::kInfo)) return;
  post_log(callback, LogLevel::kInfo, LogSource{"client", ep ? ep->address : std::string()},
           std::string("the ") + what + " stream is back", Status());
}

}  // namespace etcd::detail
