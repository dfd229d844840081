// The machinery shared by the client's long-lived bidirectional streams
// (watch, lease keep-alive): reads always outstanding, writes queued (the
// callback API allows one in flight), writes made before the call exists
// held until it does, and the reactor kept alive until gRPC is done with it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "auth.h"
#include "endpoints.h"
#include "grpc_callback_scope.h"

namespace etcd::detail {

template <class Request, class Response>
class BidiStream : public grpc::ClientBidiReactor<Request, Response> {
 public:
  using Reactor = grpc::ClientBidiReactor<Request, Response>;
  // Binds the call to this reactor, e.g. stub->async()->Watch(ctx, reactor).
  using Bind = std::function<void(grpc::ClientContext*, Reactor*)>;

  // `self` keeps the stream alive until OnDone; `auth` signs the call.
  void start(const Auth& auth, const Endpoint& ep, const Bind& bind, std::shared_ptr<BidiStream> self) {
    self_ = std::move(self);
    endpoint_ = ep.address;
    token_ = auth.prepare_context(ctx_, /*require_leader=*/true);
    bind(&ctx_, this);
    const Request* first = nullptr;
    {
      std::lock_guard lock(mu_);
      started_ = true;
      first = next_locked();
    }
    if (first) this->StartWrite(first);
    this->StartRead(&response_);
    // Held until the stream is ending and no write is in flight: a write
    // started outside our lock must never meet a call gRPC already freed.
    this->AddHold();
    this->StartCall();
  }

  // gRPC may run reactions inline inside StartWrite/StartCall, so nothing
  // here is called with a lock held that a reaction takes.
  void write(Request request) {
    const Request* next = nullptr;
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      writes_.push_back(std::move(request));  // deque: references stay valid
      next = next_locked();
    }
    if (next) this->StartWrite(next);
  }

  void cancel() { ctx_.TryCancel(); }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& token() const { return token_; }

  void OnWriteDone(bool ok) override {
    GrpcCallbackScope scope;
    const Request* next = nullptr;
    bool release = false;
    {
      std::lock_guard lock(mu_);
      writes_.pop_front();
      writing_ = false;
      if (ok) next = next_locked();
      release = !next && take_hold_locked();
    }
    if (next) this->StartWrite(next);
    if (release) this->RemoveHold();
  }

  void OnReadDone(bool ok) override {
    GrpcCallbackScope scope;
    if (!ok) {
      // The stream is ending: no new writes; OnDone follows once the hold
      // goes (now, or when the write in flight completes).
      bool release;
      {
        std::lock_guard lock(mu_);
        ending_ = true;
        release = take_hold_locked();
      }
      if (release) this->RemoveHold();
      return;
    }
    on_message(response_);
    this->StartRead(&response_);
  }

  void OnDone(const grpc::Status& s) override {
    GrpcCallbackScope scope;
    auto keep_alive_until_return = std::move(self_);
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    on_finished(s);
  }

 protected:
  virtual void on_message(const Response& response) = 0;
  virtual void on_finished(const grpc::Status& status) = 0;

 private:
  const Request* next_locked() {
    if (!started_ || writing_ || ending_ || done_ || writes_.empty()) return nullptr;
    writing_ = true;
    return &writes_.front();
  }
  // True exactly once: when the stream is ending and no write is in flight.
  bool take_hold_locked() {
    if (!ending_ || writing_ || hold_released_) return false;
    hold_released_ = true;
    return true;
  }

  grpc::ClientContext ctx_;
  Response response_;
  std::mutex mu_;
  std::deque<Request> writes_;
  bool writing_ = false;
  bool started_ = false;
  bool ending_ = false;  // the read side ended: the stream is over
  bool hold_released_ = false;
  bool done_ = false;
  std::shared_ptr<BidiStream> self_;
  std::string endpoint_;
  std::string token_;
};

}  // namespace etcd::detail
