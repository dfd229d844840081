// Composing Calls inside recipes (internal): an outer Call's deadline, stop
// token and caller_waits reach the inner call it wraps, in one place.
#pragma once

#include <memory>
#include <utility>

#include "etcd/call.h"

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

// Applies an outer call's options to `inner` (a deadline only if the outer
// call has one; the stop token and caller_waits always).
template <class T>
Call<T>&& inherit(Call<T>&& inner, const CallOptions& options) {
  if (options.deadline) inner.deadline(*options.deadline);
  inner.stop_token(options.stop);
  return CallAccess::caller_waits(std::move(inner), options.caller_waits);
}

// A Call<U> over `inner` whose result goes through `f(Result<T>) ->
// Result<U>`. Nothing is sent until the outer call is consumed.
template <class U, class T, class F>
Call<U> then_call(Call<T> inner, Executor executor, F f) {
  auto shared = std::make_shared<Call<T>>(std::move(inner));
  return Call<U>(
      [shared, f = std::move(f)](CallOptions options, Callback<U> done) mutable {
        CallAccess::start_inline(inherit(std::move(*shared), options),
                                 [f = std::move(f), done = std::move(done)](Result<T> r) mutable {
                                   done(f(std::move(r)));
                                 });
      },
      std::move(executor));
}

// The same, for a value mapping `f(const T&) -> U`; errors pass through.
template <class U, class T, class F>
Call<U> map_call(Call<T> inner, Executor executor, F f) {
  return then_call<U>(std::move(inner), std::move(executor), [f = std::move(f)](Result<T> r) -> Result<U> {
    if (!r.ok()) return std::move(r).status();
    return f(*r);
  });
}

}  // namespace etcd::recipes::detail
