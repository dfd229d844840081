// Coroutine building blocks, so that the first `co_await` needs no
// scaffolding of the user's own:
//
//   etcd::Task<int64_t> bump(etcd::Client client, std::string key) {
//     auto r = co_await client.put(key, "x");
//     co_await etcd::sleep_for(std::chrono::milliseconds(10));
//     co_return r.value().header.revision;
//   }
//   int64_t rev = etcd::sync_wait(bump(client, "k"));     // blocking
//   etcd::spawn(client, bump(client, "k"));               // detached
//
// Task<T> is lazy: nothing runs until it is awaited, spawned or passed to
// sync_wait. It can be awaited from any coroutine; an exception thrown in
// it is rethrown where it is awaited. Every Call<T> of the library is
// awaitable inside it (the coroutine then resumes on the call's executor).
//
// sleep_for(d) waits on an asio timer of the task's executor (the one given
// to spawn(), inherited by the tasks it awaits); a task without one (run by
// sync_wait) uses one timer thread shared by the whole process. No sleeper
// ever has a thread of its own. A task whose executor is shut down while it
// is suspended (e.g. the last Client handle went away) is never resumed:
// end such tasks first (a stop token passed to sleep_for and to calls).
#pragma once

#include <chrono>
#include <coroutine>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/status.h"

namespace etcd {

template <class T = void>
class Task;

namespace detail {

struct TaskPromiseBase {
  // Resumed when this task finishes (symmetric transfer).
  std::coroutine_handle<> continuation{};
  std::exception_ptr exception{};
  // Where sleep_for() and spawn() place the task's own work.
  std::optional<Executor> executor{};

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) const noexcept {
      auto next = h.promise().continuation;
      return next ? next : std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };

  std::suspend_always initial_suspend() const noexcept { return {}; }
  FinalAwaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() noexcept { exception = std::current_exception(); }
};

template <class T>
struct TaskPromise : TaskPromiseBase {
  std::optional<T> value{};
  Task<T> get_return_object() noexcept;
  template <class U = T>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T take() {
    if (exception) std::rethrow_exception(exception);
    return std::move(*value);
  }
};

template <>
struct TaskPromise<void> : TaskPromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() const noexcept {}
  void take() const {
    if (exception) std::rethrow_exception(exception);
  }
};

// The executor of the coroutine behind `h`, if it is a Task.
template <class P>
std::optional<Executor> executor_of(std::coroutine_handle<P> h) {
  if constexpr (std::is_base_of_v<TaskPromiseBase, P>) {
    return h.promise().executor;
  } else {
    (void)h;
    return std::nullopt;
  }
}

// A fire-and-forget coroutine that owns its own frame.
struct Detached {
  struct promise_type {
    Detached get_return_object() const noexcept { return {}; }
    std::suspend_never initial_suspend() const noexcept { return {}; }
    std::suspend_never final_suspend() const noexcept { return {}; }
    void return_void() const noexcept {}
    void unhandled_exception() const noexcept { std::terminate(); }
  };
};

// Resumes the awaiting coroutine on `ex`.
struct ResumeOn {
  Executor ex;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) const {
    asio::post(ex, [h]() mutable { h.resume(); });
  }
  void await_resume() const noexcept {}
};

// The process-wide timer executor for sleepers without an executor.
Executor shared_timer_executor();

// Starts a wait of `d` on a timer of `ex`; `done(status)` runs once, on
// `ex`: OK when the time passed, kCancelled when `stop` was requested.
void start_sleep(Executor ex, Clock::duration d, std::stop_token stop, std::function<void(Status)> done);

template <class T>
Detached run_detached(Executor ex, Task<T> task, std::function<void(std::exception_ptr)> done);

}  // namespace detail

// A lazily started coroutine that produces a T (or throws). Move-only; the
// owner of a Task that was never awaited destroys it without running it.
template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::TaskPromise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  bool valid() const noexcept { return static_cast<bool>(handle_); }

  // Awaiting a task runs it to completion and yields its value (or
  // rethrows its exception). A task is awaited at most once.
  auto operator co_await() && noexcept { return Awaiter{handle_}; }
  auto operator co_await() & noexcept { return Awaiter{handle_}; }

 private:
  friend promise_type;
  template <class U>
  friend detail::Detached detail::run_detached(Executor, Task<U>, std::function<void(std::exception_ptr)>);

  explicit Task(Handle h) noexcept : handle_(h) {}
  void reset() noexcept {
    if (handle_) std::exchange(handle_, nullptr).destroy();
  }

  struct Awaiter {
    Handle handle;
    bool await_ready() const noexcept { return !handle || handle.done(); }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
      handle.promise().continuation = parent;
      if (!handle.promise().executor) handle.promise().executor = detail::executor_of(parent);
      return handle;
    }
    T await_resume() {
      if (!handle) throw Error(Status(StatusCode::kFailedPrecondition, "awaited an empty etcd::Task"));
      return handle.promise().take();
    }
  };

  Handle handle_{};
};

namespace detail {
template <class T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}

template <class T>
Detached run_detached(Executor ex, Task<T> task, std::function<void(std::exception_ptr)> done) {
  if (task.handle_) task.handle_.promise().executor = ex;
  co_await ResumeOn{ex};
  std::exception_ptr error;
  try {
    co_await std::move(task);
  } catch (...) {
    error = std::current_exception();
  }
  if (done) {
    done(error);
  } else if (error) {
    // Like an exception escaping a std::thread: nobody could see it.
    std::terminate();
  }
}
}  // namespace detail

namespace detail {
// The promise is shared: the waiter may return (and drop its copy) while
// this frame is still finishing.
template <class T>
Detached run_into(Task<T> task, std::shared_ptr<std::promise<T>> promise) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
      promise->set_value();
    } else {
      promise->set_value(co_await std::move(task));
    }
  } catch (...) {
    promise->set_exception(std::current_exception());
  }
}
}  // namespace detail

// Starts `task` on `ex` and lets it run on its own (it owns itself until it
// finishes). `done` runs on the task's last thread when it finishes, with
// the exception it threw (null if none). Without `done`, an exception that
// escapes the task ends the process, as it would from a std::thread: catch
// inside, or pass `done`.
template <class T>
void spawn(Executor ex, Task<T> task, std::function<void(std::exception_ptr)> done) {
  detail::run_detached(std::move(ex), std::move(task), std::move(done));
}
template <class T>
void spawn(Executor ex, Task<T> task) {
  spawn(std::move(ex), std::move(task), std::function<void(std::exception_ptr)>());
}
// On the client's callback executor.
template <class T>
void spawn(const Client& client, Task<T> task, std::function<void(std::exception_ptr)> done) {
  spawn(client.executor(), std::move(task), std::move(done));
}
template <class T>
void spawn(const Client& client, Task<T> task) {
  spawn(client.executor(), std::move(task));
}

// Runs `task` and blocks the calling thread until it finishes; returns its
// value or rethrows its exception. The task starts on the calling thread
// and continues wherever its awaits resume it. Not from inside a coroutine,
// and not from a thread the task needs (e.g. the only thread of the
// executor it awaits).
template <class T>
T sync_wait(Task<T> task) {
  auto promise = std::make_shared<std::promise<T>>();
  auto future = promise->get_future();
  detail::run_into(std::move(task), std::move(promise));
  return future.get();
}

namespace detail {
template <bool kWithStop>
class SleepAwaiter {
 public:
  SleepAwaiter(Clock::duration d, std::stop_token stop) : duration_(d), stop_(std::move(stop)) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  void await_suspend(std::coroutine_handle<P> h) {
    Executor ex = executor_of(h).value_or(shared_timer_executor());
    start_sleep(std::move(ex), duration_, std::move(stop_), [this, h](Status s) mutable {
      status_ = std::move(s);
      h.resume();
    });
  }
  auto await_resume() {
    if constexpr (kWithStop) return std::move(status_);
  }

 private:
  Clock::duration duration_;
  std::stop_token stop_;
  Status status_{};
};
}  // namespace detail

// co_await sleep_for(d): resumes after `d`, on the task's executor.
template <class Rep, class Period>
detail::SleepAwaiter<false> sleep_for(std::chrono::duration<Rep, Period> d) {
  return {std::chrono::duration_cast<Clock::duration>(d), std::stop_token()};
}
// co_await sleep_for(d, stop): OK after `d`, or kCancelled as soon as a stop
// is requested (at once if it already was).
template <class Rep, class Period>
detail::SleepAwaiter<true> sleep_for(std::chrono::duration<Rep, Period> d, std::stop_token stop) {
  return {std::chrono::duration_cast<Clock::duration>(d), std::move(stop)};
}

}  // namespace etcd
