#include "unary_attempt.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "attempt_decision.h"
#include "client_access.h"
#include "convert.h"
#include "grpc_callback_scope.h"
#include "log_dispatch.h"
#include "retry_backoff.h"

namespace etcd::detail {

namespace {

// One unary RPC: attempts, failover, backoff, deadline and cancellation.
class UnaryAttempt : public CallWatch::Watched, public std::enable_shared_from_this<UnaryAttempt> {
 public:
  UnaryAttempt(std::shared_ptr<const UnaryPieces> pieces, const Rpc& rpc, bool cleanup, Deadline deadline,
               std::stop_token stop, std::shared_ptr<UnarySend> send, bool caller_waits,
               std::function<void(Status)> finish)
      : pieces_(std::move(pieces)),
        p_(*pieces_),
        rpc_(rpc),
        cleanup_(cleanup),
        deadline_(deadline),
        stop_(std::move(stop)),
        send_(std::move(send)),
        on_caller_thread_(caller_waits),
        finish_(std::move(finish)),
        timer_(p_.io) {}

  void give_up(grpc::ClientContext* ctx, CallWatch::Verdict verdict, const std::string& detail) override {
    std::shared_ptr<grpc::ClientContext> current;
    {
      std::lock_guard lock(mu_);
      if (ctx_.get() != ctx || cancelled_ || given_up_) return;
      given_up_ = verdict;
      given_up_detail_ = detail;
      current = ctx_;
    }
    current->TryCancel();  // on_done tells this from a cancellation
  }

  void start() {
    if (stop_.stop_possible()) {
      stop_cb_.emplace(stop_, [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->cancel();
      });
    }
    attempt();
  }

 private:
  void cancel() {
    std::shared_ptr<grpc::ClientContext> ctx;
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
      ctx = ctx_;
    }
    // Outside the lock: gRPC may run on_done inline from TryCancel.
    if (ctx) ctx->TryCancel();
    asio::post(p_.io, [self = shared_from_this()] { self->timer_.cancel(); });
  }

  void attempt() {
    if (p_.auth.enabled() && !authenticated_) {
      // Get a token first (shared with every other call waiting for one).
      p_.auth.with_token([self = shared_from_this()](Status st) {
        if (!st.ok()) {
          self->complete(std::move(st));
          return;
        }
        self->authenticated_ = true;
        self->attempt();
      });
      return;
    }
    authenticated_ = false;  // the next attempt checks the token again
    auto ep = p_.endpoints.current();
    {
      std::unique_lock lock(mu_);
      if (cancelled_ || p_.gate.refuses(cleanup_)) {
        Status why = cancelled_ ? Cancelled(std::string(rpc_.name) + " cancelled") : Closed("client");
        lock.unlock();  // complete() may wait for a running stop callback, which takes mu_
        complete(std::move(why));
        return;
      }
      ctx_ = std::make_shared<grpc::ClientContext>();
      attempt_deadline_ = deadline_;
      const auto per_attempt = p_.options.retry.attempt_timeout;
      // Only with another member to go to: with one endpoint the attempt
      // waits for its member until the call's deadline (a paused process
      // answers once it runs again; a fresh connection to it would not).
      attempt_limited_ = rpc_.idempotent && per_attempt.count() > 0 && p_.endpoints.size() > 1 &&
                         Clock::now() + per_attempt < deadline_;
      if (attempt_limited_) attempt_deadline_ = Clock::now() + per_attempt;
      ctx_->set_deadline(to_system(attempt_deadline_));
      token_used_ = p_.auth.prepare_context(*ctx_, rpc_.require_leader);
      ++attempts_;
      given_up_.reset();
      p_.counters.rpcs_started.fetch_add(1, std::memory_order_relaxed);
      p_.gate.track(ctx_, cleanup_);
      watch_ticket_ = p_.call_watch.add(weak_from_this(), ctx_.get(), rpc_.watched ? ep : nullptr);
    }
    if (std::exchange(on_caller_thread_, false)) {
      // The caller waits anyway: its thread drives this first attempt, so
      // the answer needs no hand-off from a gRPC thread. Retries are async.
      on_done(ep, send_->run(*ep, ctx_.get()));
      return;
    }
    send_->start(*ep, ctx_.get(), [self = shared_from_this(), ep](grpc::Status s) mutable {
      GrpcCallbackScope scope;
      // Released inside the scope, not when gRPC destroys this callback.
      auto attempt = std::move(self);
      attempt->on_done(ep, s);
    });
  }

  void on_done(const std::shared_ptr<Endpoint>& ep, const grpc::Status& status) {
    p_.gate.untrack(ctx_.get());
    p_.call_watch.remove(watch_ticket_);
    AttemptFacts facts;
    {
      std::lock_guard lock(mu_);
      facts.given_up = given_up_.has_value();
      facts.given_up_detail = given_up_detail_;
      facts.cancelled = cancelled_;
    }
    const auto& retry = p_.options.retry;
    facts.status = status;
    facts.name = rpc_.name;
    facts.idempotent = rpc_.idempotent;
    facts.auth_enabled = p_.auth.enabled();
    facts.attempts = attempts_;
    facts.max_attempts = retry.max_attempts;
    facts.closed = p_.gate.closed();
    facts.attempt_limited = attempt_limited_;
    facts.now = Clock::now();
    facts.attempt_deadline = attempt_deadline_;
    facts.call_deadline = deadline_;
    facts.refused_window = retry.refused_window;
    facts.endpoint = ep->address;
    facts.endpoints = p_.endpoints.size();
    if (!status.ok()) facts.backoff = retry_backoff(retry).delay(attempts_);
    facts.refusals = std::move(refusals_);
    AttemptDecision d = decide_after_attempt(facts);
    refusals_ = std::move(d.refusals);

    if (d.answered) {
      p_.connection.note_success();
    } else {
      p_.counters.rpcs_failed.fetch_add(1, std::memory_order_relaxed);
    }
    if (d.report == AttemptDecision::Report::kStall) p_.endpoints.report_stall(ep);
    if (d.report == AttemptDecision::Report::kFailure) p_.endpoints.report_failure(ep);
    if (d.connection_failure) p_.connection.note_connection_failure();
    switch (d.next) {
      case AttemptDecision::Next::kFinish:
        complete(std::move(d.status));
        return;
      case AttemptDecision::Next::kReauthenticate:
        p_.auth.invalidate(token_used_);
        p_.counters.retries.fetch_add(1, std::memory_order_relaxed);
        attempt();
        return;
      case AttemptDecision::Next::kRetry:
        p_.counters.retries.fetch_add(1, std::memory_order_relaxed);
        if (log_wanted(LogLevel::kInfo)) {
          post_log(p_.callback, LogLevel::kInfo, LogSource{"client", ep->address},
                   std::string(rpc_.name) + ": attempt " + std::to_string(attempts_) + " failed, retrying in " +
                       std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d.delay).count()) +
                       " ms",
                   from_grpc(status));
        }
        // The timer lives on the io thread (asio timers are not thread-safe).
        asio::post(p_.io, [self = shared_from_this(), delay = d.delay] {
          self->timer_.expires_after(delay);
          self->timer_.async_wait([self](const asio::error_code&) {
            self->attempt();  // checks for cancellation and close
          });
        });
        return;
    }
  }

  void complete(Status status) {
    stop_cb_.reset();  // never destroyed on the thread that runs cancel()
    auto finish = std::move(finish_);
    finish_ = nullptr;
    if (finish) {
      // A clean-up's next step (started from its completion) is part of it.
      std::optional<CleanupScope> scope;
      if (cleanup_) scope.emplace();
      finish(std::move(status));
    }
    p_.gate.leave(cleanup_);
  }

  const std::shared_ptr<const UnaryPieces> pieces_;  // keeps the client's core alive
  const UnaryPieces& p_;
  const Rpc rpc_;
  const bool cleanup_;  // started in a CleanupScope
  const Deadline deadline_;
  std::stop_token stop_;
  const std::shared_ptr<UnarySend> send_;
  bool on_caller_thread_;  // the next attempt runs on a waiting caller's thread (the first only)
  std::function<void(Status)> finish_;
  std::string token_used_;
  bool authenticated_ = false;
  asio::steady_timer timer_;
  std::mutex mu_;
  bool cancelled_ = false;
  int attempts_ = 0;
  bool attempt_limited_ = false;  // this attempt's deadline is the per-attempt one
  Deadline attempt_deadline_{};   // the deadline this attempt was sent with
  Refusals refusals_;
  std::shared_ptr<grpc::ClientContext> ctx_;
  uint64_t watch_ticket_ = 0;
  std::optional<CallWatch::Verdict> given_up_;  // this attempt was given up by the call watch
  std::string given_up_detail_;
  std::optional<std::stop_callback<std::function<void()>>> stop_cb_;
};

}  // namespace

void run_unary(std::shared_ptr<const UnaryPieces> pieces, const Rpc& rpc, const CallOptions& options,
               std::shared_ptr<UnarySend> send, std::function<void(Status)> finish) {
  const bool cleanup = CleanupScope::active();
  if (!pieces->gate.try_enter(cleanup)) {
    finish(Closed("client"));
    return;
  }
  if (options.stop.stop_requested()) {
    pieces->gate.leave(cleanup);
    finish(Cancelled(std::string(rpc.name) + " cancelled before it started"));
    return;
  }
  const Deadline deadline = options.deadline ? *options.deadline : Clock::now() + pieces->options.default_timeout;
  auto op = std::make_shared<UnaryAttempt>(std::move(pieces), rpc, cleanup, deadline, options.stop, std::move(send),
                                           options.caller_waits, std::move(finish));
  op->start();
}

}  // namespace etcd::detail
