// Composing Calls inside recipes (internal). An outer Call's deadline, stop
// token and caller_waits reach the inner call through the client's one
// CallAccess::inherit (client/client_access.h). The outer call keeps the
// link it completes through (client_link.h) until it is consumed.
#pragma once

#include <memory>
#include <utility>

#include "client/client_access.h"
#include "client_link.h"
#include "etcd/call.h"

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

// A Call<U> over `inner` whose result goes through `f(Result<T>) ->
// Result<U>`. Nothing is sent until the outer call is consumed.
template <class U, class T, class F>
Call<U> then_call(Call<T> inner, std::shared_ptr<ClientLink> link, F f) {
  auto shared = std::make_shared<Call<T>>(std::move(inner));
  return link_call<U>(std::move(link), [shared, f = std::move(f)](CallOptions options, Callback<U> done) mutable {
    CallAccess::start_inherited(
        std::move(*shared), options,
        [f = std::move(f), done = std::move(done)](Result<T> r) mutable { done(f(std::move(r))); });
  });
}

// The same, for a value mapping `f(const T&) -> U`; errors pass through.
template <class U, class T, class F>
Call<U> map_call(Call<T> inner, std::shared_ptr<ClientLink> link, F f) {
  return then_call<U>(std::move(inner), std::move(link), [f = std::move(f)](Result<T> r) -> Result<U> {
    if (!r.ok()) return std::move(r).status();
    return f(*r);
  });
}

}  // namespace etcd::recipes::detail
