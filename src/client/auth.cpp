#include "auth.h"

#include <asio/post.hpp>
#include <memory>

#include "convert.h"

namespace etcd::detail {

Auth::Auth(const ClientOptions& options, EndpointSet& endpoints, ShutdownGate& gate, asio::io_context& io)
    : user_(options.user),
      password_(options.password),
      timeout_(options.default_timeout),
      endpoints_(endpoints),
      gate_(gate),
      io_(io) {}

std::string Auth::prepare_context(grpc::ClientContext& ctx, bool require_leader) const {
  // A member without a raft leader refuses such a call at once (and cancels
  // such a stream), so a client on a partitioned member fails over instead
  // of waiting.
  if (require_leader) ctx.AddMetadata("hasleader", "true");
  std::lock_guard lock(mu_);
  if (!token_.empty()) ctx.AddMetadata("token", token_);
  return token_;
}

void Auth::invalidate(const std::string& token) {
  std::lock_guard lock(mu_);
  if (token_ == token) token_.clear();
}

void Auth::with_token(std::function<void(Status)> then) {
  if (!enabled()) {
    then(Status());
    return;
  }
  bool have_token = false;
  bool start = false;
  {
    std::lock_guard lock(mu_);
    have_token = !token_.empty();
    if (!have_token) start = authenticating_.join(std::move(then));
  }
  if (have_token) {
    then(Status());
    return;
  }
  if (start) authenticate();
}

void Auth::authenticate() {
  auto land = [this](Status st, const std::string& token) {
    SingleFlight<Status>::Landing waiters;
    {
      std::lock_guard lock(mu_);
      if (st.ok()) token_ = token;
      waiters = authenticating_.land();
    }
    std::move(waiters).complete(st);
  };
  if (!gate_.try_enter(/*cleanup=*/true)) {
    land(Closed("client"), {});
    return;
  }
  auto ep = endpoints_.current();
  auto ctx = std::make_shared<grpc::ClientContext>();
  ctx->set_deadline(to_system(Clock::now() + timeout_));
  gate_.track(ctx, /*cleanup=*/true);
  auto req = std::make_shared<etcdserverpb::AuthenticateRequest>();
  req->set_name(user_);
  req->set_password(password_);
  auto resp = std::make_shared<etcdserverpb::AuthenticateResponse>();
  ep->auth->async()->Authenticate(ctx.get(), req.get(), resp.get(), [this, land, ep, ctx, req, resp](grpc::Status s) {
    // On the io thread: the waiters go on from there.
    asio::post(io_, [this, land, ep = std::move(ep), ctx = std::move(ctx), resp = std::move(resp), s = std::move(s)] {
      gate_.untrack(ctx.get());
      Status st = from_grpc(s);
      if (!s.ok() && s.error_code() == grpc::StatusCode::UNAVAILABLE) endpoints_.report_failure(ep);
      if (st.is(Errc::kAuthFailed)) {
        // Never echo the password; name the user only.
        st = Status(st.code(), "authentication failed for user '" + user_ + "'", Errc::kAuthFailed);
      } else if (s.error_code() == grpc::StatusCode::CANCELLED && gate_.closed()) {
        st = Closed("client");  // cancelled by the client's close
      }
      land(std::move(st), resp->token());
      gate_.leave(/*cleanup=*/true);
    });
  });
}

}  // namespace etcd::detail
