// Waiting for a change, and what an acquisition registers while it waits
// (internal): the pieces the contender engine (contender.cpp) is made of.
//
// Everything that can end an acquisition from outside — its deadline, its
// stop token, the recipe's close(), the loss of its session — and the watch
// it waits on are Registrations, stored on the acquisition and undone
// exactly once, outside its lock, when it finishes.
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

#include "client/client_access.h"
#include "client_link.h"
#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcd/recipes/recipe.h"
#include "etcd/session.h"
#include "etcd/txn.h"
#include "etcd/watch.h"
#include "keys.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

// The failures after which a release, a downgrade or a nudge (guarded,
// idempotent writes) is sent again, at most three times in all.

// Deletes `key` only if it is still the key created at `rev`.
inline Txn delete_if_created_at(const std::string& key, int64_t rev) {
  Txn txn;
  txn.when(Compare::create_revision(key) == rev).then(Op::del(key));
  return txn;
}

// Deletes `key` only if it is bound to `lease`: the key an acquisition
// may have created when the answer to its creation never came.
inline Txn delete_if_leased(const std::string& key, int64_t lease) {
  Txn txn;
  txn.when(Compare::lease(key) == lease).then(Op::del(key));
  return txn;
}

// Sends `txn` (a guarded, idempotent delete), again after a transient
// failure, at most three times in all (fire and forget, holding `link`
// until done). A failure is recorded on `core` as "<what>: <message>";
// `then` runs either way, once the delete completed, with whether it was
// answered.
inline void remove_with(const std::shared_ptr<ClientLink>& link, const std::shared_ptr<RecipeCore>& core, Txn txn,
                        std::string what, std::function<void(bool answered)> then, int attempt = 1) {
  etcd::detail::CallAccess::start_inline(
      link->client().txn(txn),
      [link, core, txn, what = std::move(what), then = std::move(then), attempt](Result<TxnResponse> r) mutable {
        if (!r.ok() && transient(r.status()) && attempt < 3) {
          return remove_with(link, core, std::move(txn), std::move(what), std::move(then), attempt + 1);
        }
        if (!r.ok()) {
          core->record_error(Status(r.status().code(), what + ": " + r.status().message(), r.status().reason()));
        }
        if (then) then(r.ok());
      });
}

// A key of ours that must go but could not be deleted yet: sends `txn` (a
// guarded delete) now and every kSweepInterval until it is done — until an
// answer comes (`until_found` false: the key cannot come back), or until
// an answer says the guard held and the key was deleted (`until_found`
// true: its creation may still be on its way) — or the session ends, the
// recipe closes, or kSweepRounds sweeps went by. Fire and forget.
inline constexpr auto kSweepInterval = std::chrono::seconds(2);
inline constexpr int kSweepRounds = 300;  // 10 minutes

inline void sweep_key(std::shared_ptr<RecipeCore> core, std::weak_ptr<Session> session, Txn txn, bool until_found,
                      int round = 0) {
  auto link = core->link();
  auto s = session.lock();
  if (!link || core->closed() || !s || s->lost_token().stop_requested() || round >= kSweepRounds) return;
  s.reset();
  auto ex = link->executor();
  etcd::detail::CallAccess::start_inline(
      link->client().txn(txn),
      [core = std::move(core), session = std::move(session), txn, until_found, round, ex](Result<TxnResponse> r) mutable {
        if (r.ok() && (!until_found || r->succeeded)) return;
        auto timer = std::make_shared<asio::steady_timer>(ex, kSweepInterval);
        timer->async_wait([core = std::move(core), session = std::move(session), txn = std::move(txn), until_found,
                           round, timer](const asio::error_code& ec) mutable {
          if (!ec) sweep_key(std::move(core), std::move(session), std::move(txn), until_found, round + 1);
        });
      });
}

// Deletes `key` if it is still the one created at `rev`, as remove_with.
inline void remove_key(const std::shared_ptr<ClientLink>& link, const std::shared_ptr<RecipeCore>& core,
                       const std::string& key, int64_t rev, std::string what, std::function<void()> then = {}) {
  remove_with(link, core, delete_if_created_at(key, rev), std::move(what), [then = std::move(then)](bool) {
    if (then) then();
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
  Watcher watch{};       // the wait in progress, if any
  Watcher also_watch{};  // its second key (WaitFor::also), if any

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
    drop(also_watch, ex);
    drop(close_sub, ex);
    drop(session_lost_sub, ex);
    drop(timer, ex);
    drop(stop_cb, ex);
  }
};

// A re-check's read of our own key: unless it is still the key created at
// `rev`, it is gone (the session was lost) and the waiter must never report
// success. The status to fail with, if so.
inline std::optional<Status> own_key_lost(const KeyValue* mine, int64_t rev) {
  if (mine && mine->create_revision == rev) return std::nullopt;
  return Status(StatusCode::kAborted, "our key disappeared while waiting", Errc::kHoldLost);
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
//
// The watch's handler lives in the client's watch hub: it knows the link
// only weakly (the waiter holds it while it waits), never making a cycle.
inline Watcher wait_for_change(const std::shared_ptr<ClientLink>& link, const std::string& key, WatchOptions options,
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
  std::weak_ptr<ClientLink> weak_link = link;
  return link->client().watch(
      key, std::move(options),
      [wait, weak_link, from, relevant = std::move(relevant), recheck = std::move(recheck)](Result<WatchResponse> r) {
        if (r.ok() && r->created) {
          if (r->header.revision < from || wait->fired.load()) return;  // nothing happened since the read
          auto l = weak_link.lock();
          if (!l) return;
          etcd::detail::CallAccess::start_inline(l->client().get(recheck.key, recheck.options),
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
