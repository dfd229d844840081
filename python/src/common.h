// What every part of the Python binding shares: the exception mapping, the
// blocking wait (GIL released, Ctrl-C honoured), the asyncio start (a Python
// future completed from the client's executor), and the rules for holding
// Python objects on C++ threads.
#pragma once

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"
#include "etcd/session.h"
#include "etcd/status.h"

namespace py = pybind11;

namespace etcd::recipes {
class WorkItem;
template <class T>
class TypedWorkItem;
}  // namespace etcd::recipes

namespace etcd::python {

// How often a blocking wait wakes up to let Python handle signals (Ctrl-C).
inline constexpr std::chrono::milliseconds kSignalSlice{100};

// --- exceptions ---------------------------------------------------------------

// Imports etcd_recipes.errors and keeps its classes for the mapping below.
void init_errors();
// The exception a Status maps to (HoldLost, Timeout, Closed, InvalidArgument
// or EtcdError), carrying code, reason, message and revision. GIL held.
py::object make_exception(const Status& status);
// Sets the Python error for `status` and throws error_already_set.
[[noreturn]] void throw_status(const Status& status);

// --- Python objects on C++ threads --------------------------------------------

// False once the interpreter is shutting down: a thread that takes the GIL
// then is ended by unwinding through C++ frames that cannot unwind
// (std::terminate), so library threads leave Python alone from then on.
inline bool python_alive() { return Py_IsInitialized() != 0 && _Py_IsFinalizing() == 0; }

// A Python object that may be copied and destroyed on any thread (a listener
// captured by a std::function that the library destroys on its executor):
// the reference count is only touched with the GIL held.
class SharedPy {
 public:
  SharedPy() = default;
  explicit SharedPy(py::object o) : holder_(new py::object(std::move(o)), Deleter{}) {}
  const py::object& get() const { return *holder_; }
  explicit operator bool() const { return holder_ && *holder_; }

 private:
  struct Deleter {
    void operator()(py::object* o) const {
      if (!python_alive()) {
        // The interpreter is gone: leak the reference rather than touch it.
        (void)o->release();
        delete o;
        return;
      }
      py::gil_scoped_acquire gil;
      delete o;
    }
  };
  std::shared_ptr<py::object> holder_{};
};

// Runs a Python callable from a C++ thread: takes the GIL, reports an
// exception as unraisable (a listener's failure must not reach the
// library's executor, where nothing could handle it).
template <class... A>
void call_python(const SharedPy& f, const char* where, A&&... args) {
  if (!python_alive()) return;
  py::gil_scoped_acquire gil;
  try {
    f.get()(std::forward<A>(args)...);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable(where);
  }
}

// Destroys a C++ object without the GIL when the calling thread holds it:
// closing a recipe or a client may wait for a listener that needs the GIL.
template <class T>
struct ReleasingDeleter {
  void operator()(T* p) const {
    if (python_alive() && PyGILState_Check() != 0) {
      py::gil_scoped_release nogil;
      delete p;
    } else {
      delete p;
    }
  }
};
template <class T, class... A>
std::shared_ptr<T> make_releasing(A&&... args) {
  return std::shared_ptr<T>(new T(std::forward<A>(args)...), ReleasingDeleter<T>{});
}

// A shared_ptr the library made, whose last Python reference may go away
// with the GIL held: its end runs without the GIL.
template <class T>
std::shared_ptr<T> releasing(std::shared_ptr<T> p) {
  T* raw = p.get();
  return std::shared_ptr<T>(raw, [p = std::move(p)](T*) mutable {
    if (python_alive() && PyGILState_Check() != 0) {
      py::gil_scoped_release nogil;
      p.reset();
    } else {
      p.reset();
    }
  });
}

// --- deadlines ------------------------------------------------------------------

// Seconds as the library's duration; a negative timeout is the caller's bug.
std::chrono::milliseconds to_duration(double seconds, const char* what);

template <class T>
Call<T>& apply_timeout(Call<T>& call, std::optional<double> timeout) {
  if (timeout) call.timeout(to_duration(*timeout, "timeout"));
  return call;
}

// --- blocking waits ---------------------------------------------------------------

// For a wait with the GIL released, between two of its slices: takes the
// GIL and lets Python handle pending signals; the exception a handler
// raised (KeyboardInterrupt), if one did. A thread still waiting while the
// interpreter shuts down never takes the GIL back (see python_alive): it
// sleeps until the process is gone.
std::optional<py::error_already_set> check_signals();

// Waits with the GIL released, in slices; between slices the main thread
// handles pending signals. `done(slice)` waits up to `slice` and returns true
// once finished. On a signal whose handler raised (KeyboardInterrupt),
// `interrupt()` runs (GIL released), then the Python error propagates.
void wait_interruptibly(const std::function<bool(std::chrono::milliseconds)>& done,
                        const std::function<void()>& interrupt);

// Runs `call` to completion for a blocking Python method, with the GIL
// released: Call::wait(stop, every, poll), whose first RPC attempt may run
// on this thread, wakes every kSignalSlice for Python to handle pending
// signals. Ctrl-C: the call is cancelled through the stop token and
// awaited (the GIL still released), then `on_interrupted` sees what it
// ended with (e.g. to release a hold that was granted in the same
// instant), and KeyboardInterrupt propagates.
template <class T>
Result<T> wait_call(Call<T> call, std::optional<double> timeout,
                    std::function<void(Result<T>&)> on_interrupted = nullptr) {
  apply_timeout(call, timeout);
  std::stop_source stop;
  std::optional<py::error_already_set> interrupted;
  Result<T> result = [&] {
    py::gil_scoped_release nogil;
    return std::move(call).wait(stop.get_token(), kSignalSlice, [&] {
      // The KeyboardInterrupt is kept aside while the GIL is released: the
      // cancelled call may run Python callbacks on other threads.
      interrupted = check_signals();
      if (interrupted) stop.request_stop();
    });
  }();
  if (interrupted) {
    if (on_interrupted) on_interrupted(result);
    throw *interrupted;
  }
  return result;
}

// The value of a finished call, or the mapped exception.
template <class T>
T value_or_raise(Result<T> r) {
  if (!r.ok()) throw_status(r.status());
  return std::move(r).value();
}
inline void value_or_raise(Result<void> r) {
  if (!r.ok()) throw_status(r.status());
}

// wait_call + value_or_raise.
template <class T>
T wait_value(Call<T> call, std::optional<double> timeout) {
  if constexpr (std::is_void_v<T>) {
    value_or_raise(wait_call(std::move(call), timeout));
  } else {
    return value_or_raise(wait_call(std::move(call), timeout));
  }
}

// The blocking-helper rule of every recipe: running out of time is an
// answer (nullopt), any other failure raises.
template <class T>
std::optional<T> value_unless_timeout(Result<T> r) {
  if (r.ok()) return std::move(r).value();
  if (r.status().code() == StatusCode::kDeadlineExceeded && !r.status().is(Errc::kOutcomeUnknown)) return std::nullopt;
  throw_status(r.status());
}
inline bool ok_unless_timeout(Result<void> r) {
  if (r.ok()) return true;
  if (r.status().code() == StatusCode::kDeadlineExceeded) return false;
  throw_status(r.status());
}

// --- asyncio ----------------------------------------------------------------------

// A call started for asyncio: cancel() requests its stop (the awaiting task
// was cancelled).
class AsyncOp {
 public:
  std::stop_token token() const { return stop_.get_token(); }
  void cancel() { stop_.request_stop(); }

 private:
  std::stop_source stop_;
};

// Converts a value with pybind11's registered types.
struct Cast {
  template <class T>
  py::object operator()(T&& v) const {
    return py::cast(std::forward<T>(v));
  }
};
struct ToBytes {
  py::object operator()(const std::string& s) const { return py::bytes(s); }
};

// One thread, for the whole process, that completes asyncio futures (takes
// the GIL and hands the result to the loop). It lives as long as the process.
Executor completion_executor();

// --- pending calls -----------------------------------------------------------------

// What a finished call's value becomes when nobody will take it: the task
// that awaited it was cancelled, or Ctrl-C came in the same instant. A hold
// or a claimed item must not stay with nobody to release it.
template <class T>
void discard(T&) {}
void discard(recipes::Hold& hold);
void discard(recipes::WorkItem& item);
struct PyValue;  // py_codec.h
void discard(recipes::TypedWorkItem<PyValue>& item);
template <class T>
void discard(std::optional<T>& v) {
  if (v) discard(*v);
}

// One C++ call, not yet started, as a Python object: the package's classes
// consume it either blocking (wait) or for asyncio (start). Single use.
class PendingCall {
 public:
  virtual ~PendingCall() = default;
  // The value; raises the mapped exception (Timeout when the time ran out).
  virtual py::object wait(std::optional<double> timeout) = 0;
  // The value (True for a call without one), or None when the time ran out.
  virtual py::object wait_or_none(std::optional<double> timeout) = 0;
  virtual std::shared_ptr<AsyncOp> start(py::object resolve, std::optional<double> timeout) = 0;
};

template <class T, class Convert>
class PendingCallOf final : public PendingCall {
 public:
  PendingCallOf(Call<T> call, Convert convert) : call_(std::move(call)), convert_(std::move(convert)) {}

  py::object wait(std::optional<double> timeout) override {
    auto r = run(timeout);
    if (!r.ok()) throw_status(r.status());
    return to_python(std::move(r));
  }
  py::object wait_or_none(std::optional<double> timeout) override {
    auto r = run(timeout);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kDeadlineExceeded && !r.status().is(Errc::kOutcomeUnknown)) {
        return py::none();
      }
      throw_status(r.status());
    }
    if constexpr (std::is_void_v<T>) {
      return py::bool_(true);
    } else {
      return to_python(std::move(r));
    }
  }
  std::shared_ptr<AsyncOp> start(py::object resolve, std::optional<double> timeout) override {
    auto op = std::make_shared<AsyncOp>();
    Call<T> call = take();
    apply_timeout(call, timeout);
    call.stop_token(op->token());
    SharedPy r(std::move(resolve));
    py::gil_scoped_release nogil;
    // Completed on the binding's executor, not the client's: a client that
    // was closed no longer runs what is posted to it, and a call made after
    // close() must still fail the awaiting future (with Closed).
    std::move(call).on(completion_executor()).then([r, op, convert = convert_](Result<T> result) {
      if constexpr (!std::is_void_v<T>) {
        if (result.ok() && op->token().stop_requested()) discard(*result);
      }
      if (!python_alive()) return;
      py::gil_scoped_acquire gil;
      try {
        if (!result.ok()) {
          r.get()(false, make_exception(result.status()));
        } else if constexpr (std::is_void_v<T>) {
          r.get()(true, py::none());
        } else {
          r.get()(true, convert(std::move(result).value()));
        }
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("etcd_recipes: completing an asyncio future");
      }
    });
    return op;
  }

 private:
  Call<T> take() {
    if (!call_) throw std::logic_error("this call was already consumed");
    Call<T> c = std::move(*call_);
    call_.reset();
    return c;
  }
  Result<T> run(std::optional<double> timeout) {
    if constexpr (std::is_void_v<T>) {
      return wait_call(take(), timeout);
    } else {
      return wait_call<T>(take(), timeout, [](Result<T>& r) {
        if (r.ok()) discard(*r);
      });
    }
  }
  py::object to_python(Result<T> r) {
    if constexpr (std::is_void_v<T>) {
      return py::none();
    } else {
      return convert_(std::move(r).value());
    }
  }

  std::optional<Call<T>> call_;
  Convert convert_;
};

template <class T, class Convert = Cast>
std::shared_ptr<PendingCall> pending(Call<T> call, Convert convert = Convert()) {
  return std::make_shared<PendingCallOf<T, Convert>>(std::move(call), std::move(convert));
}

// Module parts. bind_options (RecipeOptions, the metrics) comes before the
// recipes, whose constructors take a RecipeOptions.
void bind_client(py::module_& m);
void bind_options(py::module_& m);
void bind_recipes(py::module_& m);
void bind_bytes_recipes(py::module_& m);
void bind_typed(py::module_& m);
void bind_testing(py::module_& m);
void bind_values(py::module_& m);  // SharedValue, GroupMember (bind_values.cpp)
void bind_multi_lock(py::module_& m);
void bind_log(py::module_& m);
void bind_presence(py::module_& m);

}  // namespace etcd::python

namespace etcd::python {

// A listener registration as a Python object; cancel() (or the object's
// end) unregisters it. Unregistering may wait for a run of the listener,
// which needs the GIL: so it runs without it.
struct PySubscription {
  Subscription sub;
  void cancel() {
    py::gil_scoped_release nogil;
    sub.reset();
  }
};
using PySubscriptionPtr = std::unique_ptr<PySubscription, ReleasingDeleter<PySubscription>>;
inline PySubscriptionPtr wrap(Subscription s) {
  PySubscriptionPtr p(new PySubscription());
  p->sub = std::move(s);
  return p;
}

// A C++ listener that runs the Python callable `f` with the arguments
// converted by `convert` (with the GIL).
template <class... A, class Convert>
std::function<void(A...)> listener(py::object f, const char* where, Convert convert) {
  SharedPy cb(std::move(f));
  return [cb, where, convert](A... args) {
    if (!python_alive()) return;
    py::gil_scoped_acquire gil;
    try {
      convert(cb.get(), args...);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable(where);
    }
  };
}

}  // namespace etcd::python
