// One unary method of etcd's API, named once (ETCD_RECIPES_UNARY), and the
// send of one request through it (internal): the request and response of
// a call, kept for all its attempts, and both ways gRPC offers to send
// them, made from the one method: through the callback API, or blocking on
// the calling thread (what a caller that waits anyway saves a thread
// hand-off with: UnaryAttempt's first attempt).
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <utility>

#include "call_watch.h"
#include "endpoints.h"

namespace etcd::detail {

// The stub that carries a method and its blocking and callback flavours,
// which gRPC generates under the same name.
template <class Stub, class Req, class Resp>
struct UnaryMethod {
  const char* name;
  std::unique_ptr<Stub> Endpoint::*stub;
  grpc::Status (Stub::*sync)(grpc::ClientContext*, const Req&, Resp*);
  void (Stub::async::*async)(grpc::ClientContext*, const Req*, Resp*, std::function<void(grpc::Status)>);
};

template <class Stub, class Req, class Resp>
UnaryMethod<Stub, Req, Resp> unary_method(const char* name, std::unique_ptr<Stub> Endpoint::*stub,
                                          grpc::Status (Stub::*sync)(grpc::ClientContext*, const Req&, Resp*),
                                          void (Stub::async::*async)(grpc::ClientContext*, const Req*, Resp*,
                                                                     std::function<void(grpc::Status)>)) {
  return {name, stub, sync, async};
}

// ETCD_RECIPES_UNARY(kv, KV, Range): the Range method of the KV service,
// reached through Endpoint::kv.
#define ETCD_RECIPES_UNARY(member, Service, Method)                                                                \
  ::etcd::detail::unary_method(#Method, &::etcd::detail::Endpoint::member, &::etcdserverpb::Service::Stub::Method, \
                               &::etcdserverpb::Service::Stub::async::Method)

// Sends one call's request, once per attempt (never two at once).
class UnarySend {
 public:
  virtual ~UnarySend() = default;
  // Through gRPC's callback API; `done` runs once, on a gRPC thread. The
  // send must live until it has.
  virtual void start(Endpoint& ep, grpc::ClientContext* ctx, std::function<void(grpc::Status)> done) = 0;
  // On the calling thread, which blocks until the answer.
  virtual grpc::Status run(Endpoint& ep, grpc::ClientContext* ctx) = 0;
};

template <class Stub, class Req, class Resp>
class MethodSend final : public UnarySend {
 public:
  // To `fixed` if given, else to the endpoint of each attempt. Every
  // answer's raft term goes to `watch` (CallWatch::note_term).
  MethodSend(const UnaryMethod<Stub, Req, Resp>& method, Req request, std::shared_ptr<Endpoint> fixed, CallWatch& watch)
      : method_(method), request_(std::move(request)), fixed_(std::move(fixed)), watch_(watch) {}

  void start(Endpoint& ep, grpc::ClientContext* ctx, std::function<void(grpc::Status)> done) override {
    response_.Clear();
    ((stub(ep).async())->*method_.async)(ctx, &request_, &response_, [this, done = std::move(done)](grpc::Status s) {
      answered(s);
      done(std::move(s));
    });
  }

  grpc::Status run(Endpoint& ep, grpc::ClientContext* ctx) override {
    response_.Clear();
    grpc::Status s = (stub(ep).*method_.sync)(ctx, request_, &response_);
    answered(s);
    return s;
  }

  // The last attempt's answer.
  const Resp& response() const { return response_; }

 private:
  Stub& stub(Endpoint& ep) const { return *((fixed_ ? *fixed_ : ep).*method_.stub); }
  void answered(const grpc::Status& s) {
    // Every etcd response header carries the member's raft term.
    if constexpr (requires { response_.header().raft_term(); }) {
      if (s.ok()) watch_.note_term(response_.header().raft_term());
    }
  }

  const UnaryMethod<Stub, Req, Resp> method_;
  const Req request_;
  const std::shared_ptr<Endpoint> fixed_;
  CallWatch& watch_;
  Resp response_;
};

}  // namespace etcd::detail
