// What common.h declares: mapping statuses to etcd_recipes.errors, the
// interruptible wait, and the executor that completes Python's calls.
#include "common.h"

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <cmath>
#include <string>
#include <thread>

#include "etcd/session.h"

namespace etcd::python {
namespace {

// The classes of etcd_recipes.errors. Leaked on purpose: they must outlive
// every thread that may still map a status while the interpreter exits.
struct ErrorClasses {
  PyObject* etcd_error = nullptr;
  PyObject* hold_lost = nullptr;
  PyObject* timeout = nullptr;
  PyObject* closed = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* decode_failed = nullptr;
};
ErrorClasses errors;

PyObject* class_for(const Status& s) {
  if (s.is(Errc::kHoldLost)) return errors.hold_lost;
  if (s.is(Errc::kClosed)) return errors.closed;
  if (s.code() == StatusCode::kDeadlineExceeded) return errors.timeout;
  if (s.code() == StatusCode::kInvalidArgument) return errors.invalid_argument;
  if (s.is(Errc::kDecodeFailed)) return errors.decode_failed;
  return errors.etcd_error;
}

}  // namespace

void init_errors() {
  py::module_ mod = py::module_::import("etcd_recipes.errors");
  errors.etcd_error = py::object(mod.attr("EtcdError")).release().ptr();
  errors.hold_lost = py::object(mod.attr("HoldLost")).release().ptr();
  errors.timeout = py::object(mod.attr("Timeout")).release().ptr();
  errors.closed = py::object(mod.attr("Closed")).release().ptr();
  errors.invalid_argument = py::object(mod.attr("InvalidArgument")).release().ptr();
  errors.decode_failed = py::object(mod.attr("DecodeFailed")).release().ptr();
}

py::object make_exception(const Status& s) {
  py::handle cls(class_for(s));
  return cls(s.to_string(), std::string(to_string(s.code())), static_cast<int>(s.code()),
             std::string(to_string(s.reason())), s.message(), s.revision());
}

void throw_status(const Status& s) {
  py::object exc = make_exception(s);
  PyErr_SetObject(class_for(s), exc.ptr());
  throw py::error_already_set();
}

std::chrono::milliseconds to_duration(double seconds, const char* what) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw_status(InvalidArgument(std::string(what) + " must be a finite number of seconds >= 0 (got " +
                                 std::to_string(seconds) + ")"));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

std::optional<py::error_already_set> check_signals() {
  // A (daemon) thread still waiting while the interpreter shuts down must
  // not take the GIL back (see python_alive): it sleeps until the process
  // is gone.
  while (!python_alive()) std::this_thread::sleep_for(std::chrono::seconds(1));
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return std::nullopt;
  return py::error_already_set();
}

void wait_interruptibly(const std::function<bool(std::chrono::milliseconds)>& done,
                        const std::function<void()>& interrupt) {
  for (;;) {
    std::optional<py::error_already_set> pending;
    {
      py::gil_scoped_release nogil;
      if (done(kSignalSlice)) return;
      // Kept aside while the GIL is released: interrupt() may run Python
      // callbacks on other threads.
      pending = check_signals();
      if (pending) interrupt();
    }
    if (pending) throw *pending;
  }
}

Executor completion_executor() {
  struct Loop {
    asio::io_context io{1};
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    Loop() {
      std::thread([this] { io.run(); }).detach();
    }
  };
  static Loop* loop = new Loop();  // never destroyed: completions may come until the process ends
  return loop->io.get_executor();
}

}  // namespace etcd::python
