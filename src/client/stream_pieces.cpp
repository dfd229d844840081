#include "stream_pieces.h"

#include "convert.h"
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

}  // namespace etcd::detail
