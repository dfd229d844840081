// The contender engine (internal): the one implementation of "create my
// key, find what I wait for, anchored wait, re-check, detect loss, clean up"
// shared by every recipe whose holders queue by create revision — the
// mutex, both sides of the read-write lock, the semaphore and the election
// candidate.
//
// A recipe supplies a ContenderDriver: how its key is named, the Txn that
// creates it (create-if-absent, bound to the session's lease) and what that
// Txn tells, the anchored read, and the verdict on a read (holds, or what to
// wait for). The engine does everything else, the same way for all:
//   - one acquisition object with one mutex; what can end it from outside
//     (deadline, stop token, the recipe's close(), the session's loss) is
//     registered on it and undone exactly once when it finishes;
//   - creation through the client's group-commit batcher where the driver
//     names a batch scope;
//   - every wait is anchored: read at revision R, watch from R+1 (through
//     wait_for_change, which avoids etcd 3.4's 100 ms unsynced-watch delay)
//     and re-check after every wake-up; a wake-up that does not unblock only
//     moves the watch;
//   - one retry policy: a transient failure of a step that is safe to
//     repeat (starting the session, creating the key if absent, a read) is
//     recorded (RecipeCore::record_error) and retried with backoff for as
//     long as the acquisition lasts;
//   - a waiter whose own key disappeared (its session died) never reports
//     success;
//   - on every exit without a hold (declined try, timeout, cancel, close,
//     failure) the key it created is deleted before the caller hears back,
//     so nothing is left behind to block the queue; a key named by the
//     acquisition alone (the semaphore's) whose creation went unanswered,
//     or whose delete was not answered, is swept afterwards
//     (waiting.h: sweep_key) until it is gone;
//   - a hold may live at another key than the contender's own: put there
//     by the creation (Verdict::at), or moved there by one more Txn once
//     the contender is first (Verdict::admit_to: the ordered semaphore's
//     permit slots), which an acquisition that ends meanwhile undoes;
//   - on success a HoldState (core/hold_state.h) carries the hold from
//     there: loss, fencing, guarded(), release().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"
#include "etcd/session.h"
#include "etcd/txn.h"
#include "etcd/watch.h"
#include "hold_state.h"
#include "waiting.h"

namespace etcd::recipes::detail {

// What can unblock a waiting contender, after a read at revision R.
struct WaitFor {
  std::string key;  // a key, or a prefix with options.prefix
  WatchOptions options{};
  // Which watch responses wake the contender (events that cannot unblock
  // it, e.g. a later waiter leaving, are ignored).
  std::function<bool(const WatchResponse&)> relevant = any_event;
  // The read that tells whether that change happened between R and the
  // watch's creation.
  Recheck recheck{};
  // The wake-up reads with ContenderDriver::reread, which is told the key
  // waited for (the ordered layout: the key created just before ours, whose
  // hand-off then tells that nothing is left before ours). Otherwise it
  // reads with ContenderDriver::read.
  bool rereads = false;
  // A second key whose change also wakes the contender (a semaphore's
  // permit count: locks/semaphore.h), watched beside `key` from the same
  // revision; `recheck` as above, for that key. At most one wake-up in all.
  struct Also {
    std::string key;
    Recheck recheck{};
  };
  std::optional<Also> also{};
};

// A hold that lives at another key than the contender's own (the ordered
// semaphore's permits: locks/ordered_semaphore.h).
struct HeldAt {
  std::string key;
  int64_t token = 0;  // its create revision
};

// The driver's judgement of one read.
struct Verdict {
  bool holds = false;
  // When it does not hold: what to wait for. None: read again (the engine
  // then reads with ContenderDriver::read).
  std::optional<WaitFor> wait{};
  // The store revision the judgement was made at (R).
  int64_t revision = 0;
  // Passed to ContenderDriver::held (the semaphore's "waiters follow").
  bool waiters_behind = false;
  // With `holds`: the hold lives at this key already (the creation put it
  // there instead of ours).
  std::optional<HeldAt> at{};
  // With `holds`: the hold lives at this key once one more Txn has moved
  // ours there (ContenderDriver::admission).
  std::string admit_to{};
  // Nothing is left before our key: an acquisition that ends here leaves
  // as a holder would (ContenderDriver::leave).
  bool first = false;
};

// The Txn that moves a contender's key to the key its hold lives at, and
// the one that undoes it for an acquisition that ends without a hold.
// Both are guarded so that either may apply first: the admission by our
// key's create revision, the undo by a value only this acquisition writes.
struct Admission {
  Txn txn;
  Txn undo;
};

// What the answer to an admission told: admitted (`at`), never to be
// (`failure`: our key is gone), or neither (read again).
struct Admitted {
  std::optional<HeldAt> at{};
  Status failure{};
};

// What the creation Txn told.
struct Created {
  int64_t rev = 0;  // our key's create revision; 0: it vanished
  // Set when the creation Txn tells already (fast path, or a read folded
  // into it); otherwise the engine reads.
  std::optional<Verdict> verdict{};
  // A key of ours from an earlier acquisition (created at this revision)
  // must be replaced first: the engine deletes it, once, and creates again.
  int64_t stale_rev = 0;
  // The creation was refused for a reason no retry changes (e.g. a stored
  // configuration that differs): the acquisition fails with it.
  Status failure{};
  // Not created: create again, under the key ContenderDriver::rekey names
  // for this store revision (a layout whose keys name a revision, which the
  // creation found too old: core/ordered_key.h).
  int64_t retry_at = 0;
};

class ContenderDriver {
 public:
  virtual ~ContenderDriver() = default;

  // The contender key for a session.
  virtual std::string key(const Session& session) = 0;
  // The key to create next after a creation of `key` told Created::retry_at
  // (layouts that never tell it keep the key).
  virtual std::string rekey(const std::string& key, int64_t /*revision*/) { return key; }
  // Claim the key (KeyClaims) for the life of the acquisition and the hold
  // (keys named only by the lease: two objects on one session would share
  // one key).
  virtual bool claims_key() const { return true; }
  // Creates `key` if absent, bound to `lease`, and reads what created()
  // needs — in one Txn.
  virtual Txn create(const std::string& key, int64_t lease) = 0;
  // The key prefix every key the creation Txn touches lives under: its Txn
  // may share a batch with other scopes (never a nested one). Empty: sent
  // alone.
  virtual std::string batch_scope() const { return {}; }
  virtual Created created(const TxnResponse& response) = 0;
  // The anchored read: one Txn of reads at one revision; its first response
  // must be the Get of `key`.
  virtual Txn read(const std::string& key, int64_t rev) = 0;
  // The read after a wake-up from a wait with WaitFor::rereads, for
  // `waited_for` (its key): by default the anchored read. (The ordered
  // layout first checks whether that key was let go by a holder:
  // core/ordered_key.h.)
  virtual Txn reread(const std::string& key, int64_t rev, const std::string& /*waited_for*/) { return read(key, rev); }
  virtual Verdict judge(const TxnResponse& response, int64_t rev) = 0;
  // For a verdict with Verdict::admit_to: the admission of `key` (created
  // at `rev`, bound to `lease`) into `to`, and what its answer told. An
  // admission whose answer is lost is sent again: its Txn must tell from
  // the store that an earlier one applied.
  virtual Admission admission(const std::string& /*key*/, int64_t /*rev*/, int64_t /*lease*/,
                              const std::string& /*to*/) {
    return {};
  }
  virtual Admitted admitted(const TxnResponse& /*response*/, const std::string& /*key*/, int64_t /*rev*/,
                            const std::string& /*to*/) {
    return Admitted{.failure = Status(StatusCode::kInternal, "no admission")};
  }
  // The Txn that removes our key (created at `rev`) when the acquisition
  // ends without a hold; `first`: nothing was left before it (the last
  // verdict's Verdict::first).
  virtual Txn leave(const std::string& key, int64_t rev, bool /*first*/) { return delete_if_created_at(key, rev); }
  // The Txns that remove what a creation of `key` on `lease` whose answer
  // never came may have written (each swept until it finds its key).
  virtual std::vector<Txn> strays(const std::string& key, int64_t lease) { return {delete_if_leased(key, lease)}; }
  // The hold's description (noun, family, labels, watch_key,
  // require_unmodified); the engine fills in key, token, lease, session.
  virtual HoldSpec hold_spec() = 0;
  // Runs once the hold is established, before the caller hears of it.
  virtual void held(const std::shared_ptr<HoldState>&, const Verdict&) {}
  // The metric family ("lock", "rwlock", "semaphore", "election") and labels.
  virtual const std::string& family() const = 0;
  virtual const Labels& labels() const = 0;
  // How to report waiting out the deadline: "timed out waiting for the lock".
  virtual std::string waiting_for() const = 0;
};

struct ContendRequest {
  std::shared_ptr<RecipeCore> core;
  std::shared_ptr<ContenderDriver> driver;
  CallOptions options{};
  bool wait = true;  // false: a try, which declines (nullopt) instead of waiting
  // The recipe's slot, for recipes that keep their hold (null: the hold
  // goes only to the caller, as a semaphore's permits).
  std::shared_ptr<HolderSlot> slot{};
};

// Runs one acquisition; `done` gets the hold, nullopt for a declined try,
// or the failure (named after the recipe). Checks the slot (not recursive,
// not while releasing) and the close gate before any I/O.
void contend(ContendRequest request, Callback<std::optional<Hold>> done);

// The same as a Call, for a recipe's acquire() / try_acquire().
Call<Hold> acquire_call(std::shared_ptr<RecipeCore> core, std::shared_ptr<ContenderDriver> driver,
                        std::shared_ptr<HolderSlot> slot, Status input);
Call<std::optional<Hold>> try_acquire_call(std::shared_ptr<RecipeCore> core, std::shared_ptr<ContenderDriver> driver,
                                           std::shared_ptr<HolderSlot> slot, Status input);

}  // namespace etcd::recipes::detail
