#include "shutdown_gate.h"

#include <vector>

namespace etcd::detail {

bool ShutdownGate::try_enter(bool cleanup) {
  std::lock_guard lock(mu_);
  if (refuses(cleanup)) return false;
  ++inflight_;
  if (cleanup) ++cleanups_;
  return true;
}

void ShutdownGate::leave(bool cleanup) {
  std::lock_guard lock(mu_);
  const bool last_cleanup = cleanup && --cleanups_ == 0;
  if (--inflight_ == 0 || last_cleanup) cv_.notify_all();
}

void ShutdownGate::track(const std::shared_ptr<grpc::ClientContext>& ctx, bool cleanup) {
  std::lock_guard lock(mu_);
  contexts_.emplace(ctx.get(), Tracked{ctx, cleanup});
}

void ShutdownGate::untrack(grpc::ClientContext* ctx) {
  std::lock_guard lock(mu_);
  contexts_.erase(ctx);
}

void ShutdownGate::close() {
  std::vector<std::shared_ptr<grpc::ClientContext>> to_cancel;
  {
    std::lock_guard lock(mu_);
    if (closing_.exchange(true)) return;
    for (auto& [raw, tracked] : contexts_) {
      if (tracked.cleanup) continue;  // drain() waits for it first
      if (auto ctx = tracked.ctx.lock()) to_cancel.push_back(std::move(ctx));
    }
  }
  for (auto& ctx : to_cancel) ctx->TryCancel();  // may complete calls inline
}

void ShutdownGate::drain(std::chrono::milliseconds timeout) {
  // Clean-ups were left to finish (a recipe's close() started them to leave
  // nothing behind); what is still out after the bound is cancelled.
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return cleanups_ == 0; });
  cleanups_admitted_.store(false);
  std::vector<std::shared_ptr<grpc::ClientContext>> late;
  for (auto& [raw, tracked] : contexts_) {
    if (auto ctx = tracked.ctx.lock()) late.push_back(std::move(ctx));
  }
  lock.unlock();
  for (auto& ctx : late) ctx->TryCancel();  // may complete calls inline
  late.clear();
  // The other calls were cancelled by close(); gRPC completes them promptly.
  lock.lock();
  cv_.wait_for(lock, timeout, [this] { return inflight_ == 0; });
}

}  // namespace etcd::detail
