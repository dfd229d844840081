// Pieces the election recipes share (internal): parked waiters with
// deadlines, stop tokens and the close gate; ordered listener lists; reads
// of an election's candidates.
#pragma once

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "etcd/call.h"
#include "etcd/recipes/election.h"
#include "etcd/recipes/recipe.h"
#include "client/client_access.h"
#include "keys.h"

namespace etcd::recipes::detail {

using etcd::detail::CallAccess;

// Runs `call`; `f` gets its result on `self->strand` (every step of an
// election object runs on its strand).
template <class Self, class T, class F>
void run_on_strand(const std::shared_ptr<Self>& self, Call<T> call, F f) {
  CallAccess::start_inline(std::move(call), [self, f = std::move(f)](Result<T> r) {
    asio::post(self->strand, [f, r = std::move(r)]() mutable { f(std::move(r)); });
  });
}

// Runs `step` on `self->strand` after a backoff of 50 ms per failure so far
// (counted in `failures`, at most `max_ms`), unless `stale()` says a later
// event made it obsolete or the timer, kept in `slot`, was cancelled.
template <class Self>
void retry_on_strand(const std::shared_ptr<Self>& self, int& failures, std::shared_ptr<asio::steady_timer>& slot,
                     int max_ms, std::function<bool()> stale, std::function<void()> step) {
  ++failures;
  auto timer =
      std::make_shared<asio::steady_timer>(self->strand, std::chrono::milliseconds(std::min(max_ms, 50 * failures)));
  slot = timer;
  timer->async_wait([timer, stale = std::move(stale), step = std::move(step)](const asio::error_code& ec) {
    if (ec || stale()) return;
    step();
  });
}

inline Labels election_labels(const std::string& name) { return {{"election", name}}; }

// The checks every election recipe makes before any I/O.
inline Status validate_election(std::string_view kind, const std::string& name, const RecipeOptions& options) {
  if (Status st = validate_name(kind, name); !st.ok()) return st;
  if (!options.session && options.session_ttl < std::chrono::seconds(1)) {
    return InvalidArgument(std::string(kind) + "[" + name + "]: session_ttl must be at least 1 s (got " +
                           std::to_string(options.session_ttl.count()) + " s)");
  }
  return Status();
}

// Wraps `inner` into a Call<U> that maps its value with `f` (errors pass
// through). Deadline, stop token and caller_waits apply to `inner`.
template <class U, class T, class F>
Call<U> map_call(Call<T> inner, Executor executor, F f) {
  auto shared = std::make_shared<Call<T>>(std::move(inner));
  return Call<U>(
      [shared, f = std::move(f)](CallOptions options, Callback<U> done) {
        if (options.deadline) shared->deadline(*options.deadline);
        shared->stop_token(options.stop);
        CallAccess::start_inline(CallAccess::caller_waits(std::move(*shared), options.caller_waits),
                                 [f, done = std::move(done)](Result<T> r) {
                                   if (!r.ok()) return done(std::move(r).status());
                                   done(f(*r));
                                 });
      },
      std::move(executor));
}

// Every candidate under `prefix`, the leader first.
inline Call<std::vector<Participant>> read_participants(Client& client, const Status& input, std::string prefix) {
  if (!input.ok()) return Call<std::vector<Participant>>::ready(input, client.executor());
  GetOptions options;
  options.prefix = true;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  return map_call<std::vector<Participant>>(client.get(std::move(prefix), options), client.executor(),
                                            [](const GetResponse& r) {
                                              std::vector<Participant> out;
                                              for (const auto& kv : r.kvs) {
                                                Participant p;
                                                p.key = kv.key;
                                                p.value = kv.value;
                                                p.term = kv.create_revision;
                                                p.lease = kv.lease;
                                                p.leader = out.empty();
                                                out.push_back(std::move(p));
                                              }
                                              return out;
                                            });
}

inline LeaderInfo leader_info(const KeyValue& kv) {
  LeaderInfo info;
  info.key = kv.key;
  info.value = kv.value;
  info.term = kv.create_revision;
  info.lease = kv.lease;
  return info;
}

// The key with the lowest create revision under `prefix`, if any.
inline Call<std::optional<LeaderInfo>> read_leader(Client& client, const Status& input, std::string prefix) {
  if (!input.ok()) return Call<std::optional<LeaderInfo>>::ready(input, client.executor());
  GetOptions options;
  options.prefix = true;
  options.limit = 1;
  options.sort_order = SortOrder::kAscend;
  options.sort_target = SortTarget::kCreate;
  return map_call<std::optional<LeaderInfo>>(client.get(std::move(prefix), options), client.executor(),
                                             [](const GetResponse& r) -> std::optional<LeaderInfo> {
                                               if (r.kvs.empty()) return std::nullopt;
                                               return leader_info(r.kvs.front());
                                             });
}

// Listeners that run on a strand, in the order they were posted. A listener
// that throws is recorded as an error of the recipe, never propagated.
template <class... Args>
class ListenerList : public std::enable_shared_from_this<ListenerList<Args...>> {
 public:
  using Fn = std::function<void(Args...)>;

  Subscription add(Fn fn) {
    auto entry = std::make_shared<Entry>();
    entry->fn = std::move(fn);
    uint64_t id;
    {
      std::lock_guard lock(mu_);
      id = next_id_++;
      entries_.emplace_back(id, entry);
    }
    std::weak_ptr<ListenerList> weak = this->shared_from_this();
    return Subscription([weak, id, entry] {
      entry->active.store(false);
      if (auto self = weak.lock()) {
        std::lock_guard lock(self->mu_);
        std::erase_if(self->entries_, [id](const auto& p) { return p.first == id; });
      }
    });
  }

  template <class Strand>
  void post(const Strand& strand, const std::shared_ptr<RecipeCore>& core, Args... args) {
    std::vector<std::shared_ptr<Entry>> entries;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, e] : entries_) entries.push_back(e);
    }
    for (auto& e : entries) {
      asio::post(strand, [e, core, tuple = std::tuple<std::decay_t<Args>...>(args...)]() mutable {
        if (!e->active.load()) return;
        try {
          std::apply(e->fn, tuple);
        } catch (const std::exception& ex) {
          core->record_error(Status(StatusCode::kUnknown, std::string("a listener threw: ") + ex.what()));
        } catch (...) {
          core->record_error(Status(StatusCode::kUnknown, "a listener threw"));
        }
      });
    }
  }

 private:
  struct Entry {
    Fn fn;
    std::atomic<bool> active{true};
  };
  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::vector<std::pair<uint64_t, std::shared_ptr<Entry>>> entries_;
};

// Callers parked until a condition holds (leadership, initialization). Each
// waiter ends exactly once: when the condition holds, by its deadline or
// stop token, when the recipe closes (Errc::kClosed), or with a failure.
class WaiterSet : public std::enable_shared_from_this<WaiterSet> {
 public:
  explicit WaiterSet(std::shared_ptr<RecipeCore> core) : core_(std::move(core)) {}

  // Completes `done` at once if the condition holds, otherwise parks it.
  void add(const CallOptions& options, Callback<void> done, std::string what) {
    auto w = std::make_shared<Waiter>();
    w->done = std::move(done);
    {
      std::lock_guard lock(mu_);
      if (ready_) {
        w->finished = true;
      } else {
        waiters_.push_back(w);
      }
    }
    if (w->finished) return w->done(Result<void>());
    auto self = shared_from_this();
    std::weak_ptr<Waiter> ww = w;
    if (options.stop.stop_requested()) return finish(w, Cancelled(what + " cancelled"));
    if (options.deadline) {
      auto timer = std::make_shared<asio::steady_timer>(core_->client().executor(), *options.deadline);
      timer->async_wait([self, ww, what](const asio::error_code& ec) {
        if (auto wp = ww.lock(); wp && !ec) self->finish(wp, DeadlineExceeded("timed out waiting for " + what));
      });
      keep(
          w, [&] { w->timer = timer; }, [&] { asio::post(core_->client().executor(), [timer] { timer->cancel(); }); });
    }
    if (options.stop.stop_possible()) {
      // Stored only once registered: the callback may run inside the registration.
      auto stop_cb = std::make_shared<std::optional<std::stop_callback<std::function<void()>>>>();
      stop_cb->emplace(options.stop, std::function<void()>([self, ww, what] {
                         if (auto wp = ww.lock()) self->finish(wp, Cancelled(what + " cancelled"));
                       }));
      keep(
          w, [&] { w->stop_cb = stop_cb; }, [&] { self->drop_later(stop_cb); });
    }
    auto close_sub = core_->on_close([self, ww] {
      if (auto wp = ww.lock()) self->finish(wp, self->core_->closed_status());
    });
    keep(
        w, [&] { w->close_sub = std::move(close_sub); }, [] {});
  }

  // Sets the condition; while it holds, new waiters complete at once and
  // parked ones complete now.
  void set_ready(bool ready) {
    std::vector<std::shared_ptr<Waiter>> done;
    {
      std::lock_guard lock(mu_);
      ready_ = ready;
      if (ready) done.swap(waiters_);
    }
    for (auto& w : done) finish(w, Result<void>(), /*listed=*/false);
  }

  // Ends every parked waiter with `why`.
  void fail_all(const Status& why) {
    std::vector<std::shared_ptr<Waiter>> done;
    {
      std::lock_guard lock(mu_);
      done.swap(waiters_);
    }
    for (auto& w : done) finish(w, why, /*listed=*/false);
  }

 private:
  struct Waiter {
    Callback<void> done;
    bool finished = false;  // guarded by WaiterSet::mu_
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<std::optional<std::stop_callback<std::function<void()>>>> stop_cb;
    Subscription close_sub;
  };

  template <class Store, class Undo>
  void keep(const std::shared_ptr<Waiter>& w, Store store, Undo undo) {
    {
      std::lock_guard lock(mu_);
      if (!w->finished) {
        store();
        return;
      }
    }
    undo();
  }

  // A stop callback is never destroyed on the thread that may be running it.
  void drop_later(std::shared_ptr<std::optional<std::stop_callback<std::function<void()>>>> stop_cb) {
    if (stop_cb) asio::post(core_->client().executor(), [stop_cb] { stop_cb->reset(); });
  }

  void finish(const std::shared_ptr<Waiter>& w, Result<void> result, bool listed = true) {
    std::shared_ptr<asio::steady_timer> timer;
    std::shared_ptr<std::optional<std::stop_callback<std::function<void()>>>> stop_cb;
    Subscription close_sub;
    {
      std::lock_guard lock(mu_);
      if (w->finished) return;
      w->finished = true;
      if (listed) std::erase(waiters_, w);
      timer = std::move(w->timer);
      stop_cb = std::move(w->stop_cb);
      close_sub = std::move(w->close_sub);
    }
    close_sub.reset();
    if (timer) asio::post(core_->client().executor(), [timer] { timer->cancel(); });
    drop_later(std::move(stop_cb));
    auto done = std::move(w->done);
    done(std::move(result));
  }

  std::shared_ptr<RecipeCore> core_;
  std::mutex mu_;
  bool ready_ = false;
  std::vector<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace etcd::recipes::detail
