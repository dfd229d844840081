// Steps of a recipe (internal): a call whose result continues on a strand,
// a step run after a delay, and a retry with backoff on a strand.
#pragma once

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>

#include "client/client_access.h"
#include "etcd/call.h"

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

// Runs `call`; `f` gets its result on `strand`.
template <class T, class F>
void run_on_strand(asio::strand<Executor> strand, Call<T> call, F f) {
  CallAccess::start_inline(std::move(call), [strand = std::move(strand), f = std::move(f)](Result<T> r) {
    asio::post(strand, [f, r = std::move(r)]() mutable { f(std::move(r)); });
  });
}

// Runs `step` on `executor` once `delay` has passed, unless the returned
// timer is cancelled first (then never). The caller may keep the timer to
// cancel it; the wait keeps it alive meanwhile. `step` holds what it needs
// (a weak reference to its owner, looked at when it runs).
template <class Ex>
std::shared_ptr<asio::steady_timer> run_after(const Ex& executor, Clock::duration delay, std::function<void()> step) {
  auto timer = std::make_shared<asio::steady_timer>(executor, delay);
  timer->async_wait([timer, step = std::move(step)](const asio::error_code& ec) {
    if (!ec) step();
  });
  return timer;
}

// Runs `step` on `strand` after the step backoff (kStepBackoff, capped at
// `max_ms`) for the failures so far (counted in `failures`), unless
// `stale()` says a later event made it obsolete or the timer, kept in
// `slot`, was cancelled.
inline void retry_on_strand(const asio::strand<Executor>& strand, int& failures,
                            std::shared_ptr<asio::steady_timer>& slot, int max_ms, std::function<bool()> stale,
                            std::function<void()> step) {
  ++failures;
  Backoff backoff = kStepBackoff;
  backoff.max = std::chrono::milliseconds(max_ms);
  slot = run_after(strand, backoff.delay(failures), [stale = std::move(stale), step = std::move(step)] {
    if (!stale()) step();
  });
}

}  // namespace etcd::recipes::detail
