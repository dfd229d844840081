// Steps of a recipe that runs on a strand (internal): a call whose result
// continues on the strand, and a retry with backoff on it.
#pragma once

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>

#include "client/client_access.h"
#include "etcd/call.h"

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

// Runs `call`; `f` gets its result on `self->strand` (every step of the
// object runs on its strand).
template <class Self, class T, class F>
void run_on_strand(const std::shared_ptr<Self>& self, Call<T> call, F f) {
  CallAccess::start_inline(std::move(call), [self, f = std::move(f)](Result<T> r) {
    asio::post(self->strand, [f, r = std::move(r)]() mutable { f(std::move(r)); });
  });
}

// Runs `step` on `self->strand` after a backoff of 50 ms per failure so far
// (counted in `failures`, at most `max_ms`), unless `stale()` says a later
// event made it obsolete or the timer, kept in `slot`, was cancelled.
template <class Self>
void retry_on_strand(const std::shared_ptr<Self>& self, int& failures, std::shared_ptr<asio::steady_timer>& slot,
                     int max_ms, std::function<bool()> stale, std::function<void()> step) {
  ++failures;
  auto timer =
      std::make_shared<asio::steady_timer>(self->strand, std::chrono::milliseconds(std::min(max_ms, 50 * failures)));
  slot = timer;
  timer->async_wait([timer, stale = std::move(stale), step = std::move(step)](const asio::error_code& ec) {
    if (ec || stale()) return;
    step();
  });
}

}  // namespace etcd::recipes::detail
