// The client's shutdown gate (internal): every call, member check and
// authentication enters it before it starts and leaves once gRPC is done
// with it, so that closing can refuse new work, cancel what is in flight
// and wait (bounded) until nothing of gRPC's will call into the client.
//
// A clean-up (a call started in a CleanupScope: a recipe's close() deleting
// its keys) is let in while closing, and its context is not cancelled by
// close(): drain() waits for the clean-ups first, then stops admitting
// them, cancels what is left and waits for it.
//
// Thread-safe; nothing here runs user code.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace etcd::detail {

class ShutdownGate {
 public:
  // False once closing, except for a clean-up while close still waits for
  // clean-ups; `leave` pairs with a true.
  bool try_enter(bool cleanup);
  void leave(bool cleanup);
  bool closed() const { return closing_.load(); }
  // Whether a call (a clean-up or not) may no longer start an attempt.
  bool refuses(bool cleanup) const { return closing_.load() && !(cleanup && cleanups_admitted_.load()); }

  // The context of an attempt in flight, cancelled when the client closes
  // (a clean-up's only once drain() has waited for it).
  void track(const std::shared_ptr<grpc::ClientContext>& ctx, bool cleanup);
  void untrack(grpc::ClientContext* ctx);

  // Refuses from now on and cancels the contexts in flight but the
  // clean-ups'. Idempotent.
  void close();
  // Waits up to `timeout` for the clean-ups in flight, cancels what is
  // left, then waits up to `timeout` for everything that entered to leave.
  void drain(std::chrono::milliseconds timeout);

 private:
  std::atomic<bool> closing_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int inflight_ = 0;
  int cleanups_ = 0;                           // of inflight_
  std::atomic<bool> cleanups_admitted_{true};  // until drain() stops waiting for them
  struct Tracked {
    std::weak_ptr<grpc::ClientContext> ctx;
    bool cleanup;
  };
  std::unordered_map<grpc::ClientContext*, Tracked> contexts_;
};

}  // namespace etcd::detail
