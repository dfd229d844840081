// The one listener container of the library (internal): the client's
// connection-state listeners, a session's and a presence lease's, a lease's
// loss listeners, and every recipe's.
//
// Listeners are user code: they never run on a gRPC thread and never under
// their owner's lock. notify() posts each one to an executor the owner
// chose (a strand keeps them in order); call() runs them here, for an owner
// already on its executor. Unsubscribing stops a listener whose call was
// already posted but had not begun (but for notify_past_unsubscribe(): the
// client's connection state). A listener that throws is handed to
// `on_throw` (a recipe records it) and never takes a thread down; with no
// sink, the exception leaves the listener as a callback's would (the
// client's own listeners).
#pragma once

#include <asio/post.hpp>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "etcd/connection.h"
#include "etcd/status.h"

namespace etcd::detail {

// Where a listener's exception goes: a recipe's RecipeCore::record_error.
using ThrowSink = std::function<void(Status)>;

// Runs `fn`; with a sink, an exception becomes a recorded status.
template <class F>
void run_listener(F&& fn, const ThrowSink& on_throw) {
  if (!on_throw) {
    std::forward<F>(fn)();
    return;
  }
  try {
    std::forward<F>(fn)();
  } catch (const std::exception& ex) {
    on_throw(Status(StatusCode::kUnknown, std::string("a listener threw: ") + ex.what()));
  } catch (...) {
    on_throw(Status(StatusCode::kUnknown, "a listener threw"));
  }
}

template <class... Args>
class ListenerSet {
 public:
  using Fn = std::function<void(Args...)>;

  ListenerSet() : shared_(std::make_shared<Shared>()) {}
  ListenerSet(const ListenerSet&) = delete;
  ListenerSet& operator=(const ListenerSet&) = delete;

  Subscription add(Fn fn) {
    auto entry = std::make_shared<Entry>(std::move(fn));
    uint64_t id;
    {
      std::lock_guard lock(shared_->mu);
      id = shared_->next_id++;
      shared_->entries.emplace_back(id, entry);
    }
    std::weak_ptr<Shared> weak = shared_;
    return Subscription([weak, id, entry] {
      entry->active.store(false);
      if (auto s = weak.lock()) {
        std::lock_guard lock(s->mu);
        std::erase_if(s->entries, [id](const auto& p) { return p.first == id; });
      }
    });
  }

  // Drops every listener (they may own what owns this set): after an event
  // heard once, or at the owner's end. Calls already posted still run.
  void clear() {
    std::vector<std::pair<uint64_t, std::shared_ptr<Entry>>> dropped;
    std::lock_guard lock(shared_->mu);
    dropped.swap(shared_->entries);
  }

  bool empty() const {
    std::lock_guard lock(shared_->mu);
    return shared_->entries.empty();
  }

  // Posts every listener with `args` to `executor`. Posting never runs a
  // listener inline, so an owner may notify under its lock to keep its
  // events in order.
  template <class Executor>
  void notify(const Executor& executor, const ThrowSink& on_throw, Args... args) const {
    for (auto& e : snapshot()) post(executor, e, on_throw, /*even_if_unsubscribed=*/false, args...);
  }

  // The same, but a call posted runs even if its listener unsubscribes
  // before it begins: a listener hears of every event made while it was
  // subscribed (the client's connection state: a program that stops
  // listening as it finishes still hears of the change that came before).
  template <class Executor>
  void notify_past_unsubscribe(const Executor& executor, const ThrowSink& on_throw, Args... args) const {
    for (auto& e : snapshot()) post(executor, e, on_throw, /*even_if_unsubscribed=*/true, args...);
  }

  // Runs every listener here and now: for callers that already run on the
  // executor and must keep an order across events.
  void call(const ThrowSink& on_throw, Args... args) const {
    for (auto& e : snapshot()) {
      if (e->active.load()) run_listener([&] { e->fn(args...); }, on_throw);
    }
  }

  // Posts one listener (not kept) the same way: for a listener added after
  // the event it must still hear of. The Subscription stops it if it has
  // not begun.
  template <class Executor>
  static Subscription notify_one(const Executor& executor, const ThrowSink& on_throw, Fn fn, Args... args) {
    auto entry = std::make_shared<Entry>(std::move(fn));
    post(executor, entry, on_throw, /*even_if_unsubscribed=*/false, args...);
    return Subscription([entry] { entry->active.store(false); });
  }

 private:
  struct Entry {
    explicit Entry(Fn f) : fn(std::move(f)) {}
    Fn fn;
    std::atomic<bool> active{true};
  };
  struct Shared {
    mutable std::mutex mu;
    uint64_t next_id = 1;
    std::vector<std::pair<uint64_t, std::shared_ptr<Entry>>> entries;
  };

  template <class Executor>
  static void post(const Executor& executor, const std::shared_ptr<Entry>& e, const ThrowSink& on_throw,
                   bool even_if_unsubscribed, Args... args) {
    asio::post(executor,
               [e, on_throw, even_if_unsubscribed, tuple = std::tuple<std::decay_t<Args>...>(args...)]() mutable {
                 if (!even_if_unsubscribed && !e->active.load()) return;
                 run_listener([&] { std::apply(e->fn, tuple); }, on_throw);
               });
  }

  std::vector<std::shared_ptr<Entry>> snapshot() const {
    std::vector<std::shared_ptr<Entry>> out;
    std::lock_guard lock(shared_->mu);
    out.reserve(shared_->entries.size());
    for (auto& [id, e] : shared_->entries) out.push_back(e);
    return out;
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace etcd::detail
