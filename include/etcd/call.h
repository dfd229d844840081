// Call<T>: one asynchronous etcd operation, started lazily, consumed in
// exactly one of three ways over the same async core:
//
//   Result<GetResponse> r = client.get("k").wait();            // blocking
//   client.get("k").then([](Result<GetResponse> r) { ... });   // callback
//   Result<GetResponse> r = co_await client.get("k");          // coroutine
//
// plus .future() for std::future users. Before consuming, a deadline and a
// std::stop_token may be attached. Nothing is sent until the call is
// consumed; a Call that is dropped unconsumed does nothing.
//
// Deadlines, one rule for every call of the library (docs/client.md):
//   - A call that asks etcd something — an RPC of the client, or a recipe
//     operation made of RPCs (put, txn, enqueue, ack, release, set, size,
//     try_acquire, try_dequeue, ...) — ends by its deadline: the one given
//     with .timeout() / .deadline(), else ClientOptions::default_timeout
//     (5 s) from when it is consumed. It fails with kDeadlineExceeded then,
//     or earlier with the error that ended it (kUnavailable when the client
//     gave up on every endpoint).
//   - A call that waits for something another party does — acquire(),
//     receive(), dequeue(), a barrier's wait(), enter() and leave(),
//     await_leadership(), wait_initialized() — has no deadline unless it is
//     given one: it waits until that happens, its stop token is requested,
//     its recipe is closed or (for a hold) its session is lost. While it
//     waits, etcd being unreachable does not end it; each RPC it sends has
//     the client's default timeout and is tried again.
//
// Threads: `then` callbacks and coroutine resumptions run on the call's
// executor (the client's, unless `.on(ex)` chose another), never on gRPC's
// threads. `wait()` blocks the calling thread and does not need the
// executor, so it is safe to call from anywhere except a coroutine; so
// is wait(stop_token), the same wait ended early by a stop request.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "etcd/status.h"

namespace etcd {

using Executor = asio::any_io_executor;
using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Per-call settings handed to the async core.
struct CallOptions {
  // None: an RPC gets the client's default timeout, a wait for another
  // party has no deadline (the rule at the top of this file).
  std::optional<Deadline> deadline{};
  std::stop_token stop{};  // request a stop to cancel the call
  // Set by wait(): the caller's thread blocks anyway, so the core may run
  // the first attempt of a unary RPC on it (no hand-off between threads).
  bool caller_waits = false;
};

template <class T>
using Callback = std::function<void(Result<T>)>;

namespace detail {
struct CallAccess;  // the library's own access (src/client/client_access.h)
// Posts `completion` to `ex`; if `ex` is a closed client's own callback pool
// (its threads are gone), runs it on this thread instead, so that a call
// made after close() still completes (with kClosed) in every flavour.
void complete_on(const Executor& ex, std::function<void()> completion);
}  // namespace detail

template <class T>
class [[nodiscard]] Call {
 public:
  // Starts the operation; must call `done` exactly once, on any thread.
  using Starter = std::function<void(CallOptions, Callback<T> done)>;

  // A call of your own composition: `start` runs when the call is consumed.
  Call(Starter start, Executor executor) : start_(std::move(start)), executor_(std::move(executor)) {}
  // An already-finished call (e.g. rejected by validation before any I/O).
  static Call ready(Result<T> result, Executor executor) {
    auto shared = std::make_shared<Result<T>>(std::move(result));
    return Call([shared](CallOptions, Callback<T> done) { done(std::move(*shared)); }, std::move(executor));
  }

  Call(Call&&) noexcept = default;
  Call& operator=(Call&&) noexcept = default;
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  Call& deadline(Deadline d) & {
    options_.deadline = d;
    return *this;
  }
  Call&& deadline(Deadline d) && { return std::move(deadline(d)); }
  template <class Rep, class Period>
  Call& timeout(std::chrono::duration<Rep, Period> d) & {
    options_.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(d);
    return *this;
  }
  template <class Rep, class Period>
  Call&& timeout(std::chrono::duration<Rep, Period> d) && {
    return std::move(timeout(d));
  }
  Call& stop_token(std::stop_token token) & {
    options_.stop = std::move(token);
    return *this;
  }
  Call&& stop_token(std::stop_token token) && { return std::move(stop_token(std::move(token))); }
  // Run the completion (then / co_await) on this executor instead.
  Call& on(Executor ex) & {
    executor_ = std::move(ex);
    return *this;
  }
  Call&& on(Executor ex) && { return std::move(on(std::move(ex))); }

  // Blocks until the call completes (its deadline, if it has one, bounds
  // the wait: see the rule at the top of this file).
  Result<T> wait() && {
    options_.caller_waits = true;
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    std::move(*this).start_inline([promise](Result<T> r) { promise->set_value(std::move(r)); });
    return future.get();
  }

  // Blocks until the call completes, as wait() does, and lets `stop` end
  // it early: a stop requested on `stop` (from any thread, before or
  // during the wait) cancels the call as a stop on its own token would —
  // either token cancels it — and the wait returns what the call ended
  // with: kCancelled, or its result if that came first. For a wait that
  // someone else ends: a shutdown, a UI's cancel button, a signal handler's
  // thread.
  //
  //   std::stop_source cancel;        // cancel.request_stop() from anywhere
  //   auto held = mutex.acquire().wait(cancel.get_token());
  Result<T> wait(std::stop_token stop) && {
    return std::move(*this).wait(std::move(stop), std::chrono::hours(1), [] {});
  }
  // The same wait, woken every `every` to run `poll()` on this thread while
  // the call is still running and `stop` was not requested: for a caller
  // that must check, on the waiting thread itself, whether to give up (a
  // Python binding lets Python handle Ctrl-C there), and then requests the
  // stop. `poll` must not throw.
  template <class Rep, class Period, class Poll>
  Result<T> wait(std::stop_token stop, std::chrono::duration<Rep, Period> every, Poll&& poll) && {
    struct Done {
      std::mutex mutex;
      std::condition_variable changed;
      std::optional<Result<T>> result;
    };
    auto done = std::make_shared<Done>();
    // One source that either token requests; the call sees only it.
    std::stop_source cancel;
    auto forward = [cancel]() mutable { cancel.request_stop(); };
    std::optional<std::stop_callback<decltype(forward)>> from_call;
    if (options_.stop.stop_possible()) from_call.emplace(options_.stop, forward);
    std::stop_callback<decltype(forward)> from_wait(stop, forward);
    options_.stop = cancel.get_token();
    options_.caller_waits = true;
    std::move(*this).start_inline([done](Result<T> r) {
      std::lock_guard lock(done->mutex);
      done->result.emplace(std::move(r));
      done->changed.notify_all();
    });
    std::unique_lock lock(done->mutex);
    while (!done->changed.wait_for(lock, every, [&] { return done->result.has_value(); })) {
      if (cancel.stop_requested()) continue;
      lock.unlock();
      poll();
      lock.lock();
    }
    return std::move(*done->result);
  }

  // Runs `callback` with the result on the call's executor.
  void then(Callback<T> callback) && {
    auto ex = executor_;
    std::move(*this).start_inline([ex, cb = std::move(callback)](Result<T> r) mutable {
      // std::function needs a copyable target: the result is shared.
      auto shared = std::make_shared<std::pair<Callback<T>, Result<T>>>(std::move(cb), std::move(r));
      detail::complete_on(ex, [shared] { shared->first(std::move(shared->second)); });
    });
  }

  std::future<Result<T>> future() && {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    std::move(*this).start_inline([promise](Result<T> r) { promise->set_value(std::move(r)); });
    return future;
  }

  // Standard awaitable: usable from any coroutine type. The coroutine
  // resumes on the call's executor.
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> handle) {
    auto ex = executor_;
    std::move(*this).start_inline([this, ex, handle](Result<T> r) mutable {
      result_.emplace(std::move(r));
      detail::complete_on(ex, [handle]() mutable { handle.resume(); });
    });
  }
  Result<T> await_resume() { return std::move(*result_); }

 private:
  friend struct detail::CallAccess;
  // Completes on whatever thread finished the operation. Library-internal
  // continuations use this; they must not block and must not run user code.
  void start_inline(Callback<T> done) && {
    auto start = std::move(start_);
    start(std::move(options_), std::move(done));
  }

  Starter start_{};
  Executor executor_{};
  CallOptions options_{};
  std::optional<Result<T>> result_{};
};

}  // namespace etcd
