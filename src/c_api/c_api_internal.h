// What the C API's translation units share (internal): turning Status and
// exceptions into etcdr_error, reading size-prefixed options structs,
// timeouts, and the callback slot that makes "the callback never runs
// after destroy" hold.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stop_token>
#include <string>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"
#include "etcd/status.h"
#include "etcd_recipes.h"

namespace etcdr_impl {
template <class Fn>
class CallbackSlot;
}  // namespace etcdr_impl

struct etcdr_client {
  etcd::Client client;
  // The one connection-state callback of the handle
  // (etcdr_client_on_state_change), subscribed on first use under state_mu.
  std::shared_ptr<etcdr_impl::CallbackSlot<etcdr_state_cb>> state = nullptr;
  etcd::Subscription state_sub{};
  std::mutex state_mu{};
};

// A cancellation handle (etcdr_call_create): the stop source whose token
// the asynchronous calls given it carry. The token shares the source's
// state, so a call outlives the handle safely.
struct etcdr_call {
  std::stop_source source;
};

namespace etcdr_impl {

// Overwrites `err` (freeing the message it held) with `status`.
void set_error(etcdr_error* err, const etcd::Status& status) noexcept;

inline etcdr_code ok(etcdr_error* err) noexcept {
  set_error(err, etcd::Status());
  return ETCDR_OK;
}
inline etcdr_code fail(etcdr_error* err, const etcd::Status& status) noexcept {
  set_error(err, status);
  return static_cast<etcdr_code>(status.code());
}
inline etcdr_code invalid(etcdr_error* err, const char* message) noexcept {
  try {
    return fail(err, etcd::InvalidArgument(message));
  } catch (...) {
    // Building the Status allocates; the code alone still tells the caller.
    return ETCDR_INVALID_ARGUMENT;
  }
}
// A value the call answered with, into `*out` (a failure leaves it alone).
template <class T, class Out>
etcdr_code store(etcdr_error* err, etcd::Result<T> result, Out* out) {
  if (!result.ok()) return fail(err, result.status());
  *out = static_cast<Out>(*result);
  return ok(err);
}
inline etcdr_code hold_lost(etcdr_error* err, const char* message) {
  return fail(err, etcd::Status(etcd::StatusCode::kAborted, message, etcd::Errc::kHoldLost));
}

// Runs `f` (which returns an etcdr_code and fills `err`), so that no
// exception crosses into C: etcd::Error keeps its status, anything else
// becomes RESOURCE_EXHAUSTED or INTERNAL.
template <class F>
etcdr_code guarded(etcdr_error* err, F&& f) noexcept {
  try {
    return std::forward<F>(f)();
  } catch (const etcd::Error& e) {
    return fail(err, e.status());
  } catch (const std::bad_alloc&) {
    set_error(err, etcd::Status());  // no memory for a message either
    if (err != nullptr) err->code = ETCDR_RESOURCE_EXHAUSTED;
    return ETCDR_RESOURCE_EXHAUSTED;
  } catch (const std::exception& e) {
    return fail(err, etcd::Status(etcd::StatusCode::kInternal, std::string("etcd-recipes C API: ") + e.what()));
  } catch (...) {
    return fail(err, etcd::Status(etcd::StatusCode::kInternal, "etcd-recipes C API: unknown exception"));
  }
}

// Calls `cb(user, &e, args...)` with `status` as an etcdr_error the library
// owns for the duration of the call.
template <class Cb, class... Args>
void invoke_with_status(Cb cb, void* user, const etcd::Status& status, Args&&... args) noexcept {
  etcdr_error e = ETCDR_ERROR_INIT;
  set_error(&e, status);
  cb(user, &e, std::forward<Args>(args)...);
  etcdr_error_clear(&e);
}

// Completes an asynchronous call whose success is a new handle wrapping the
// result (a permit, a work item). Without memory for the handle the caller
// hears RESOURCE_EXHAUSTED and the result is dropped: a permit is released,
// a claimed item comes back when the consumer's lease ends — never lost.
template <class Handle, class T, class Cb>
void complete_with_handle(Cb done, void* user, etcd::Result<T> result) noexcept {
  Handle* handle = nullptr;
  if (result.ok()) {
    try {
      handle = new Handle{std::move(*result)};
    } catch (const std::bad_alloc&) {
      invoke_with_status(done, user, etcd::Status(etcd::StatusCode::kResourceExhausted, "out of memory"), handle);
      return;
    }
  }
  invoke_with_status(done, user, result.status(), handle);
}

// A copy of a caller's options struct as this library knows it: the bytes
// the caller declared (`size`), the rest zero (every field's default). A
// struct from a newer header is accepted when the fields this library does
// not know are all zero (their defaults): otherwise the caller asked for
// something this library cannot do.
template <class T>
etcd::Status read_options(const T* in, T& out) {
  std::memset(&out, 0, sizeof(T));
  if (in == nullptr) return etcd::Status();
  if (in->size < sizeof(size_t)) {
    return etcd::InvalidArgument("options->size is not set: fill the struct with its _init() function");
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  if (in->size > sizeof(T)) {
    for (size_t i = sizeof(T); i < in->size; ++i) {
      if (bytes[i] != 0) {
        return etcd::InvalidArgument("options set fields that this version of the library does not know (built with " +
                                     std::string(etcdr_version_string()) + ")");
      }
    }
  }
  std::memcpy(&out, in, in->size < sizeof(T) ? in->size : sizeof(T));
  out.size = sizeof(T);
  return etcd::Status();
}

// The _init() of every options struct: zero the caller's bytes, set size.
template <class T>
void init_options(T* options, size_t size) noexcept {
  if (options == nullptr || size < sizeof(size_t)) return;
  std::memset(options, 0, size);
  options->size = size;
}

// A negative timeout leaves the call without a deadline of its own: a
// waiting recipe call then waits until it can complete, a plain call gets
// the client's default timeout.
template <class T>
etcd::Call<T> with_timeout(etcd::Call<T> call, int64_t timeout_ms) {
  if (timeout_ms >= 0) call.timeout(std::chrono::milliseconds(timeout_ms));
  return call;
}

// A copy of `bytes` in a malloc'd, NUL-terminated buffer for etcdr_free.
char* copy_out(const std::string& bytes);

// The recipes' options from the C struct (NULL: defaults), or why not.
etcd::Status to_recipe_options(const etcdr_recipe_options* in, etcd::recipes::RecipeOptions& out);

// The user's one callback of a handle (on_lost, on_change), shared with the
// listener that calls it. Setting it (and so destroying the handle) waits
// for a run in progress on another thread, so that after
// etcdr_*_destroy/on_*() returns the old callback never runs again; a run
// on the calling thread (the callback changing itself) does not deadlock.
template <class Fn>
class CallbackSlot {
 public:
  void set(Fn fn, void* user) {
    std::lock_guard lock(mu_);
    fn_ = fn;
    user_ = user;
  }
  // Runs `call(fn, user)` if a callback is set.
  template <class F>
  void run(F&& call) {
    std::lock_guard lock(mu_);
    if (fn_ != nullptr) std::forward<F>(call)(fn_, user_);
  }

 private:
  std::recursive_mutex mu_;
  Fn fn_ = nullptr;
  void* user_ = nullptr;
};

// An optional byte string from the C side (NULL with length 0: empty).
inline std::string bytes(const char* p, size_t n) { return n == 0 ? std::string() : std::string(p, n); }

// A recipe's close() for a destroy, which has no one to report to.
template <class R>
void close_quietly(R& recipe) noexcept {
  try {
    recipe.close();
  } catch (...) {
    // Nothing a destroy could act on.
  }
}

// `call` made cancellable by `cancel` (may be NULL: not cancellable).
template <class T>
etcd::Call<T> with_cancel(etcd::Call<T> call, const etcdr_call* cancel) {
  if (cancel != nullptr) call.stop_token(cancel->source.get_token());
  return call;
}

// A recipe name as the C API accepts it: not NULL, not empty (the recipe
// checks the rest).
inline bool bad_name(const char* name) { return name == nullptr || *name == '\0'; }

// The checks every etcdr_<recipe>_create(client, name, options, out, err)
// makes before anything else, in this order: `*out` cleared; a client, an
// out pointer and a name; the options read into `ro`. ETCDR_OK to go on;
// otherwise `err` says which argument (with `fn`, the function's name).
template <class Handle>
etcdr_code begin_create(const char* fn, const etcdr_client* client, const char* name,
                        const etcdr_recipe_options* options, Handle** out, etcd::recipes::RecipeOptions& ro,
                        etcdr_error* err) {
  if (out != nullptr) *out = nullptr;
  if (client == nullptr || out == nullptr) return invalid(err, (std::string(fn) + ": client and out are required").c_str());
  if (bad_name(name)) return invalid(err, (std::string(fn) + ": the name is empty").c_str());
  if (auto s = to_recipe_options(options, ro); !s.ok()) return fail(err, s);
  return ETCDR_OK;
}

}  // namespace etcdr_impl

// What every recipe handle answers about its recipe (etcdr_recipe_*): the
// error and connection-state callbacks, over the C++ recipe's on_error and
// on_state_change. A member of each recipe handle; etcdr_*_recipe() hands
// out a pointer to it.
struct etcdr_recipe {
  etcd::recipes::RecipeHandle* recipe = nullptr;
  std::shared_ptr<etcdr_impl::CallbackSlot<etcdr_error_cb>> errors =
      std::make_shared<etcdr_impl::CallbackSlot<etcdr_error_cb>>();
  std::shared_ptr<etcdr_impl::CallbackSlot<etcdr_state_cb>> states =
      std::make_shared<etcdr_impl::CallbackSlot<etcdr_state_cb>>();
  etcd::Subscription error_sub{};
  etcd::Subscription state_sub{};

  // Subscribes the slots to `r`, which must outlive this (the handle owns both).
  void bind(etcd::recipes::RecipeHandle& r);
  // Clears the callbacks (waiting for a run in progress) and unsubscribes:
  // the first thing every recipe handle's destroy does.
  void unbind() noexcept;
};
