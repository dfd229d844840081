// The library's own way into a Call and a Client: for src/client and
// src/recipes only (never installed). Public headers only forward-declare
// these, so users cannot reach a call's inline start or the client's core.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <typeindex>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"

namespace etcd::detail {

class ClientCore;

// Marks the calling thread, for the scope's life, as doing the clean-up a
// recipe's close() starts (deleting its keys, revoking its lease). A call
// started there — or in the completion of such a call — is a clean-up: the
// client's close() sends it and waits for it (bounded) before it cancels
// what is left, so that a program that closes a recipe and then its client
// leaves nothing behind. Other calls in flight are cancelled at once.
class CleanupScope {
 public:
  CleanupScope() { ++depth_; }
  ~CleanupScope() { --depth_; }
  CleanupScope(const CleanupScope&) = delete;
  CleanupScope& operator=(const CleanupScope&) = delete;
  static bool active() { return depth_ > 0; }

 private:
  static thread_local int depth_;
};

struct CallAccess {
  // Starts `call` and completes on whatever thread finished it: for
  // library-internal continuations, which must not block or run user code.
  template <class T>
  static void start_inline(Call<T>&& call, std::type_identity_t<Callback<T>> done) {
    std::move(call).start_inline(std::move(done));
  }
  template <class T>
  static const CallOptions& options(const Call<T>& call) {
    return call.options_;
  }
  // For composite operations whose caller blocks: the inner call may run
  // its first attempt on the current thread.
  template <class T>
  static Call<T>&& caller_waits(Call<T>&& call, bool waits) {
    call.options_.caller_waits = waits;
    return std::move(call);
  }
  // An inner call made on behalf of an outer one inherits everything the
  // outer caller set: the deadline (unless the inner call has a sooner
  // one), the stop token and whether the caller's thread waits. The one
  // place that knows what "everything" is.
  // caller_waits lets the inner call block the current thread: right while
  // the outer call's starter runs (on the thread that called wait()), wrong
  // in a continuation on a gRPC thread. A continuation passes a copy of the
  // outer options with caller_waits cleared.
  template <class T>
  static Call<T>&& inherit(Call<T>&& inner, const CallOptions& outer) {
    auto& o = inner.options_;
    if (outer.deadline && (!o.deadline || *outer.deadline < *o.deadline)) o.deadline = outer.deadline;
    if (outer.stop.stop_possible()) o.stop = outer.stop;
    o.caller_waits = outer.caller_waits;
    return std::move(inner);
  }
  // The outer options for an inner call started off the caller's thread.
  static CallOptions off_caller_thread(CallOptions outer) {
    outer.caller_waits = false;
    return outer;
  }
  // inherit() + start_inline(), the usual pair.
  template <class T>
  static void start_inherited(Call<T>&& inner, const CallOptions& outer, std::type_identity_t<Callback<T>> done) {
    start_inline(inherit(std::move(inner), outer), std::move(done));
  }
};

struct ClientAccess {
  static const std::shared_ptr<ClientCore>& core(const Client& client) { return client.core_; }

  // A handle on the same client that keeps its core alive but takes no
  // share in keeping it open (the client closes when its last full handle
  // goes): for objects the library makes on behalf of an owner that holds a
  // full handle for as long as the client must stay open, so that they can
  // never be the handle whose release closes it.
  static Client borrow(const Client& client) {
    Client borrowed(client);
    borrowed.closer_.reset();
    return borrowed;
  }
  // Whether letting go of `client` now would close the client: it is its
  // last full handle (and the client is still open). A snapshot: another
  // last handle may go at the same moment.
  static bool last_full_handle(const Client& client) {
    return client.closer_ && client.closer_.use_count() == 1 && !client.closed();
  }

  // The client's one object of type S, made by `make` on first use and
  // destroyed with the client's core (ClientCore::service: S must not own
  // the Client).
  template <class S, class Make>
  static std::shared_ptr<S> service(const Client& client, Make make) {
    return std::static_pointer_cast<S>(
        service_slot(client, typeid(S), [&]() -> std::shared_ptr<void> { return make(); }));
  }
  static std::shared_ptr<void> service_slot(const Client& client, std::type_index type,
                                            const std::function<std::shared_ptr<void>()>& make);

  // The bytes etcd counts against its --max-request-bytes for `txn` sent
  // by `client`: the request as encoded (keys in the client's namespace)
  // inside etcd's raft request, whose header names the client's user (an
  // upper bound for the header's numbers).
  static std::size_t txn_request_bytes(const Client& client, const Txn& txn);
  // Asks the server, now, for progress on the client's watch stream (what
  // the liveness probe of an idle stream sends). For tests.
  static void request_watch_progress(const Client& client);
};

}  // namespace etcd::detail
