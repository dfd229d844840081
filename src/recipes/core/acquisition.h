// What the lock-like recipes (mutex, read-write lock, semaphore) share
// about one acquisition (internal).
//
// An acquisition is a small object (deriving from AcquisitionBase) that one
// recipe state runs through a few asynchronous steps. While it runs it
// registers what can end it from outside — its deadline, its stop token,
// the recipe's close() and the loss of its session — and the watch it waits
// on. Each registration holds the recipe state strongly but the acquisition
// only weakly, and ends it through the state's fail(acquisition, status).
// Registrations are stored under the state's mutex unless the acquisition
// already finished (then they are undone at once); finishing takes them all
// out under that mutex and drops them outside it, which breaks every cycle.
//
// A State used with these helpers has `std::mutex mu` (which guards the
// acquisition's `finished`, `transient_failures` and `registrations`),
// `std::shared_ptr<RecipeCore> core` and `void fail(const
// std::shared_ptr<A>&, Status)`.
#pragma once

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/recipes/recipe.h"
#include "etcd/session.h"
#include "etcd/txn.h"
#include "etcd/watch.h"
#include "client/client_access.h"
#include "keys.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

// The failures after which a release, a downgrade or a nudge (guarded,
// idempotent writes) is sent again, at most three times in all.
inline bool retryable(const Status& st) {
  return st.is(Errc::kOutcomeUnknown) || st.code() == StatusCode::kUnavailable;
}

// Deletes `key` only if it is still the key created at `rev`.
inline Txn delete_if_created_at(const std::string& key, int64_t rev) {
  Txn txn;
  txn.when(Compare::create_revision(key) == rev).then(Op::del(key));
  return txn;
}

// Deletes `key` if it is still the one created at `rev` (fire and forget).
// A failure is recorded on `core` as "<what>: <message>"; `then` runs
// either way, once the delete completed.
inline void remove_key(const std::shared_ptr<RecipeCore>& core, const std::string& key, int64_t rev, std::string what,
                       std::function<void()> then = {}) {
  etcd::detail::CallAccess::start_inline(
      core->client().txn(delete_if_created_at(key, rev)),
      [core, what = std::move(what), then = std::move(then)](Result<TxnResponse> r) {
        if (!r.ok()) {
          core->record_error(Status(r.status().code(), what + ": " + r.status().message(), r.status().reason()));
        }
        if (then) then();
      });
}

// Releases a hold: deletes `key` if it is still the one created at `rev`.
// The guarded delete is idempotent, so a retryable failure is sent again
// (at most three attempts). `done` gets whether the delete applied (false:
// the key was gone or is another one), or the last failure, which is also
// recorded on `core`. `caller_waits`: the caller blocks for the answer, so
// the first attempt may run its RPC on the caller's thread.
inline void release_key(std::shared_ptr<RecipeCore> core, std::string key, int64_t rev, bool caller_waits,
                        Callback<bool> done, int attempt = 1) {
  auto txn = core->client().txn(delete_if_created_at(key, rev));
  etcd::detail::CallAccess::start_inline(
      etcd::detail::CallAccess::caller_waits(std::move(txn), caller_waits),
      [core, key, rev, attempt, done = std::move(done)](Result<TxnResponse> r) mutable {
        if (!r.ok() && attempt < 3 && retryable(r.status())) {
          return release_key(std::move(core), std::move(key), rev, false, std::move(done), attempt + 1);
        }
        if (!r.ok()) {
          core->record_error(r.status());
          return done(std::move(r).status());
        }
        done(r->succeeded);
      });
}

using StopCallback = std::stop_callback<std::function<void()>>;

// What one acquisition has registered (see the file comment).
struct Registrations {
  std::shared_ptr<asio::steady_timer> timer{};
  // A separate object, stored only once registered: its callback may run
  // inside the registration itself.
  std::shared_ptr<std::optional<StopCallback>> stop_cb{};
  Subscription close_sub{};
  Subscription session_lost_sub{};
  Watcher watch{};  // the wait in progress, if any

  // Undoes each piece (outside the state's mutex).
  static void drop(Watcher& w, const Executor&) { w.cancel(); }
  static void drop(Subscription& s, const Executor&) { s.reset(); }
  static void drop(std::shared_ptr<asio::steady_timer>& timer, const Executor& ex) {
    if (timer) asio::post(ex, [timer = std::move(timer)] { timer->cancel(); });
  }
  // A stop callback is never destroyed on the thread that may be running it.
  static void drop(std::shared_ptr<std::optional<StopCallback>>& stop_cb, const Executor& ex) {
    if (stop_cb) asio::post(ex, [stop_cb = std::move(stop_cb)] { stop_cb->reset(); });
  }
  void drop_all(const Executor& ex) {
    drop(watch, ex);
    drop(close_sub, ex);
    drop(session_lost_sub, ex);
    drop(timer, ex);
    drop(stop_cb, ex);
  }
};

// The part of an acquisition the helpers below work on.
struct AcquisitionBase {
  bool wait = true;  // false: a try, which declines instead of waiting
  Clock::time_point started = Clock::now();
  // A blocking caller's thread may run the first steps' RPCs itself.
  bool caller_waits = false;
  std::thread::id caller_thread = std::this_thread::get_id();
  bool on_caller_thread() const { return caller_waits && std::this_thread::get_id() == caller_thread; }
  // Guarded by the state's mutex.
  bool finished = false;
  int transient_failures = 0;
  Registrations registrations{};
};

// Requires the state's mutex: marks `a` finished and takes out its
// registrations, to be dropped (drop_all) outside the lock. False if it had
// finished already.
inline bool finish_locked(AcquisitionBase& a, Registrations& out) {
  if (a.finished) return false;
  a.finished = true;
  out = std::move(a.registrations);
  return true;
}

// Records `rev`, the create revision of the key `a` just made, in `slot`
// (guarded by `mu`), unless `a` finished meanwhile (timed out, cancelled,
// closed): false then, and the caller removes the key, which must not stay
// behind and block the queue.
inline bool adopt_key(std::mutex& mu, AcquisitionBase& a, int64_t& slot, int64_t rev) {
  std::lock_guard lock(mu);
  if (a.finished) return false;
  slot = rev;
  return true;
}

// An acquisition's key and that key's create revision.
struct KeyAtRevision {
  std::string key;
  int64_t rev = 0;
};

// Reads `a.key` and `a.rev` under the state's mutex; nothing if `a` finished.
template <class A>
std::optional<KeyAtRevision> current_key(std::mutex& mu, const A& a) {
  std::lock_guard lock(mu);
  if (a.finished) return std::nullopt;
  return KeyAtRevision{a.key, a.rev};
}

// A re-check's read of our own key: unless it is still the key created at
// `rev`, it is gone (the session was lost) and the waiter must never report
// success. The status to fail with, if so.
inline std::optional<Status> own_key_lost(const KeyValue* mine, int64_t rev) {
  if (mine && mine->create_revision == rev) return std::nullopt;
  return Status(StatusCode::kAborted, "our key disappeared while waiting", Errc::kHoldLost);
}

// Stores `piece` in `a`'s registrations unless `a` already finished; what
// is not kept, and what it replaces, is undone outside the lock.
template <class T>
void keep(std::mutex& mu, AcquisitionBase& a, T Registrations::*slot, T piece, const Executor& ex) {
  {
    std::lock_guard lock(mu);
    if (!a.finished) std::swap(a.registrations.*slot, piece);
  }
  Registrations::drop(piece, ex);
}

// Ends `a` with a status, if it is still alive.
template <class State, class A>
std::function<void(Status)> failer(const std::shared_ptr<State>& self, const std::shared_ptr<A>& a) {
  return [self, wa = std::weak_ptr<A>(a)](Status why) {
    if (auto acq = wa.lock()) self->fail(acq, std::move(why));
  };
}

// Registers what ends `a` from outside: its deadline (failing with
// `timed_out`), its stop token (kCancelled "acquire cancelled") and the
// recipe's close() (`closed`). A stop callback fails `a` on the thread that
// requests the stop. Returns false if the stop was requested already: `a`
// has then failed, and nothing was registered.
template <class State, class A>
bool guard(const std::shared_ptr<State>& self, const std::shared_ptr<A>& a, const CallOptions& options,
           Status timed_out, Status closed) {
  auto fail = failer(self, a);
  if (options.stop.stop_requested()) {
    fail(Cancelled("acquire cancelled"));
    return false;
  }
  const Executor ex = self->core->client().executor();
  if (options.deadline) {
    auto timer = std::make_shared<asio::steady_timer>(ex, *options.deadline);
    timer->async_wait([fail, timed_out = std::move(timed_out)](const asio::error_code& ec) {
      if (!ec) fail(timed_out);
    });
    keep(self->mu, *a, &Registrations::timer, std::move(timer), ex);
  }
  if (options.stop.stop_possible()) {
    auto stop_cb = std::make_shared<std::optional<StopCallback>>();
    stop_cb->emplace(options.stop, std::function<void()>([fail] { fail(Cancelled("acquire cancelled")); }));
    keep(self->mu, *a, &Registrations::stop_cb, std::move(stop_cb), ex);
  }
  keep(self->mu, *a, &Registrations::close_sub,
       self->core->on_close([fail, closed = std::move(closed)] { fail(closed); }), ex);
  return true;
}

// guard(), then, unless `a` ended already, the recipe's session (created
// and started on first use): `a` goes on in self->with_session(a, session),
// or fails if there is none.
template <class State, class A>
void guard_and_begin(const std::shared_ptr<State>& self, const std::shared_ptr<A>& a, const CallOptions& options,
                     Status timed_out, Status closed) {
  if (!guard(self, a, options, std::move(timed_out), std::move(closed))) return;
  etcd::detail::CallAccess::start_inline(self->core->session(), [self, a](Result<std::shared_ptr<Session>> s) {
    if (!s.ok()) return self->fail(a, std::move(s).status());
    self->with_session(a, *s);
  });
}

// Fails `a` (kAborted, Errc::kHoldLost) if `session` is lost while it runs.
template <class State, class A>
void guard_session(const std::shared_ptr<State>& self, const std::shared_ptr<A>& a, Session& session) {
  auto fail = failer(self, a);
  keep(self->mu, *a, &Registrations::session_lost_sub, session.on_lost([fail](const Status& why) {
    fail(Status(StatusCode::kAborted, "session lost while waiting: " + why.message(), Errc::kHoldLost));
  }),
       self->core->client().executor());
}

// Keeps the watch `a` waits on (replacing, and cancelling, a spent one);
// cancels it at once if `a` finished meanwhile.
template <class State, class A>
void keep_watch(const std::shared_ptr<State>& self, const std::shared_ptr<A>& a, Watcher w) {
  keep(self->mu, *a, &Registrations::watch, std::move(w), self->core->client().executor());
}

// Runs `step` again after a backoff (50 ms per transient failure so far,
// at most 1 s), unless `a` finishes first.
template <class State, class A>
void retry_later(const std::shared_ptr<State>& self, const std::shared_ptr<A>& a, std::function<void()> step) {
  int n;
  {
    std::lock_guard lock(self->mu);
    if (a->finished) return;
    n = ++a->transient_failures;
  }
  auto timer = std::make_shared<asio::steady_timer>(self->core->client().executor(),
                                                    std::chrono::milliseconds(std::min(1000, 50 * n)));
  std::weak_ptr<A> wa = a;
  timer->async_wait([self, wa, timer, step = std::move(step)](const asio::error_code&) {
    auto acq = wa.lock();
    if (!acq) return;
    {
      std::lock_guard lock(self->mu);
      if (acq->finished) return;
    }
    step();
  });
}

// --- waiting ------------------------------------------------------------------

// One read that tells whether the change a wait watches for has happened
// already: `changed` judges the response of a get of `key` with `options`.
struct Recheck {
  std::string key;
  GetOptions options{};
  std::function<bool(const GetResponse&)> changed;
};

// For a wait on one predecessor key that existed at revision from - 1: it
// changed if it is gone or was created again since (a put too, with `puts`).
inline Recheck key_changed(std::string key, int64_t from, bool puts) {
  return Recheck{std::move(key), GetOptions{.keys_only = true}, [from, puts](const GetResponse& g) {
                   const auto* kv = g.first();
                   return !kv || kv->create_revision >= from || (puts && kv->mod_revision >= from);
                 }};
}

// Waits for one change, at revision `from` or later, that can unblock an
// acquisition (after an anchored read at from - 1): a watch of `key` with
// `options` (their start_revision is not used). `wake` runs at most once:
// for the first response `relevant` accepts (progress notifications have
// no events), for an error (look again from scratch), or when `recheck`
// shows the change happened already (or cannot tell).
//
// The watch starts at its creation, not at `from`: etcd (3.4) serves a
// watch whose start revision is already in the store from its "unsynced"
// set, which catches up only every 100 ms, so a predecessor deleted while
// the watch is still unsynced would wake us up to 100 ms late — even if it
// is deleted after the watch was created. A watch from its creation is
// served at once. The watch reports its creation (notify_created), whose
// header is the store revision C it starts after; if C >= `from`, writes
// came between the anchored read and the watch, and one read (at C or
// later) covers them: if the change is there, `wake` runs exactly as if the
// watch had delivered it; if not, it can only come later, through the
// watch. Nothing between the anchored read and the watch is lost. (A watch
// re-created on a new stream continues where it stopped and reports its
// creation again; the read is then done again, which is harmless.) The read
// is not a wake-up; only `wake` is.
inline Watcher wait_for_change(const std::shared_ptr<RecipeCore>& core, const std::string& key, WatchOptions options,
                               int64_t from, std::function<bool(const WatchResponse&)> relevant, Recheck recheck,
                               std::function<void()> wake) {
  struct Wait {
    std::atomic<bool> fired{false};
    std::function<void()> wake;
    void fire() {
      if (!fired.exchange(true)) wake();
    }
  };
  auto wait = std::make_shared<Wait>();
  wait->wake = std::move(wake);
  options.start_revision = 0;  // from its creation
  options.notify_created = true;
  std::weak_ptr<RecipeCore> weak_core = core;
  return core->client().watch(
      key, std::move(options),
      [wait, weak_core, from, relevant = std::move(relevant), recheck = std::move(recheck)](Result<WatchResponse> r) {
        if (r.ok() && r->created) {
          if (r->header.revision < from || wait->fired.load()) return;  // nothing happened since the read
          auto c = weak_core.lock();
          if (!c) return;
          etcd::detail::CallAccess::start_inline(c->client().get(recheck.key, recheck.options),
                                                 [wait, changed = recheck.changed](Result<GetResponse> g) {
                                                   // A failed read cannot rule the change out: look again.
                                                   if (!g.ok() || changed(*g)) wait->fire();
                                                 });
          return;
        }
        if (r.ok() && !relevant(*r)) return;
        wait->fire();
      });
}

// Any event wakes (a watch of one key; progress does not).
inline bool any_event(const WatchResponse& r) { return !r.events.empty(); }

}  // namespace etcd::recipes::detail
