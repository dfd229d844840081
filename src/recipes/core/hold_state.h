// The one implementation of a hold (internal): what Hold and Holder expose,
// for every recipe.
//
// A HoldState is armed once the engine (or a recipe's own step, such as a
// downgrade) has established the hold. From then on exactly one of two ends
// comes first:
//   - loss: the session's lease is gone, or (with `watch_key`, the default)
//     the key was deleted or re-created by someone else. The stop token is requested,
//     the hold's and the holder's on_lost listeners run on the executor, the
//     loss is recorded in the recipe's errors(), and guarded() fails.
//   - release: the stop token is requested and the key deleted (one plain
//     delete: the key embeds our lease id, so no other contender ever owns
//     it; prev_kv tells whether it was still ours). A release after a loss
//     reports false.
// A hand-over (a rwlock downgrade) ends a hold like a release, without the
// delete: the key lives on under another HoldState.
//
// A hold is work in flight: it keeps the recipe's link to the client (and
// its session) until it has been released or handed over, and lets go of
// both then. A Hold still in someone's hands after that answers without
// the client: is_held() false, release() false, guarded() kHoldLost.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "client/listener_set.h"
#include "client_link.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"
#include "etcd/session.h"
#include "etcd/txn.h"
#include "etcd/watch.h"
#include "once_signal.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

class HolderSlot;
class KeyClaims;

struct HoldSpec {
  std::string key{};
  int64_t token = 0;  // the key's create revision
  int64_t lease = 0;
  // Keeps the lease alive for as long as the hold lasts; its loss is ours.
  // (The HoldState takes it over: HoldState::session().)
  std::shared_ptr<Session> session{};
  // What guarded() and the loss check compare; by default the key's create
  // revision (a downgradable write hold also requires mod == create).
  bool require_unmodified = false;
  // Lost when the key is deleted or re-created by someone else, not only
  // with the lease (an operator's `etcdctl del` ends the hold).
  bool watch_key = true;
  // A loss is also recorded in the recipe's errors() (false where a loss
  // is routine and goes to listeners only, as a leader's term).
  bool record_loss = true;
  // Where the key is claimed (KeyClaims) until the hold ends; null: it is
  // not.
  std::shared_ptr<KeyClaims> claims{};
  // Set: releasing the hold also records the hand-off in one Txn — it puts
  // this key, with the released key as its value — so that the contender
  // waiting for our key knows, from one compare, that it was let go by a
  // holder (core/ordered_key.h). Empty: a release is a plain delete.
  std::string handoff_key{};
  // Set with handoff_key: the release also deletes this key if it still
  // names the released key (the ordered layout's tail record).
  std::string tail_key{};
  // For messages and metrics: "lock", "permit", "leadership".
  std::string noun = "hold";
  // The metric family: etcd_recipes_<family>_{lost_total,hold_seconds}.
  std::string family{};
  Labels labels{};
  // A put of the key that keeps its create revision and carries
  // kReleaseRequestMark in its value is a release request: the hold's
  // release_requested() token and listeners fire (needs watch_key).
  bool release_requests = false;
};

// What a release request (DistributedMutex::request_release) appends to the
// holder key's value, re-put with the same create revision and lease: the
// mark lives and dies with the hold it asks.
inline constexpr std::string_view kReleaseRequestMark = "\n~release requested";
inline bool is_release_request(std::string_view value) {
  return value.find(kReleaseRequestMark) != std::string_view::npos;
}

using LostListeners = etcd::detail::ListenerSet<const Status&>;

class HoldState : public std::enable_shared_from_this<HoldState> {
 public:
  HoldState(std::shared_ptr<RecipeCore> core, std::shared_ptr<ClientLink> link, HoldSpec spec,
            std::shared_ptr<HolderSlot> slot = nullptr);
  ~HoldState();

  // Starts watching for loss. Call once, after construction.
  void arm();

  const HoldSpec& spec() const { return spec_; }
  const std::shared_ptr<RecipeCore>& core() const { return core_; }
  // The link to the client and the session, until the hold has been
  // released or handed over (null afterwards).
  std::shared_ptr<ClientLink> link() const;
  std::shared_ptr<Session> session() const;
  bool is_held() const;
  bool lost() const;
  std::stop_token stop_token() const;
  Subscription on_lost(std::function<void(const Status&)> listener);
  // Requested when someone asks the holder to release (HoldSpec::
  // release_requests); the hold goes on until released.
  std::stop_token release_requested() const;
  Subscription on_release_requested(std::function<void()> listener);

  // The compares that hold while this hold is intact.
  std::vector<Compare> guard() const;
  Call<TxnResponse> guarded(Txn txn);

  // Deletes the key. `caller_waits`: the first attempt may run on the
  // caller's thread. Idempotent: a second release gives false.
  void release(bool caller_waits, Callback<bool> done);
  Call<bool> release_call();
  // Ends the hold without touching the key, which lives on under another
  // HoldState (its spec takes over the claim). False if it had ended
  // already.
  bool hand_over();

  // Ends the hold as lost (idempotent; ignored once released).
  void lose(const Status& why);
  // Requests the stop token without ending the hold (a selector's
  // interrupt(): the work is asked to stop; the hold goes when it returns).
  void request_stop() { stop_.request_stop(); }

 private:
  bool end_locked(bool lost);  // requires mu_
  void finished(bool lost);    // outside mu_
  void watch_own_key(int64_t from);
  // The key was re-put with a release request: tell, once.
  void saw_release_request();

  void drop_claim();
  // Lets go of the link and the session: the hold is over.
  void let_go();

  std::shared_ptr<RecipeCore> core_;
  // Declared before spec_: taken out of the spec first.
  std::shared_ptr<Session> session_;  // (mu_)
  const HoldSpec spec_;
  std::atomic<bool> claim_held_;
  std::shared_ptr<HolderSlot> slot_;
  const Clock::time_point since_ = Clock::now();

  mutable std::mutex mu_;
  std::shared_ptr<ClientLink> link_;
  bool ended_ = false;
  bool lost_ = false;
  bool released_after_loss_ = false;
  std::stop_source stop_;
  OnceSignal release_request_;
  Subscription session_sub_;
  Watcher key_watch_;
  // Cancels the timer that delays the key watch: an ended hold must not
  // keep the client's event loop busy (Client::close drains it).
  std::function<void()> cancel_watch_delay_;  // (mu_)
  LostListeners listeners_;
};

// The current hold of a recipe that keeps one (mutex, rwlock side, latch)
// and its phase, so that one object never runs two acquisitions at once and
// never starts one while its last release is in flight.
class HolderSlot : public std::enable_shared_from_this<HolderSlot> {
 public:
  enum class Phase { kIdle, kAcquiring, kHeld, kReleasing };

  explicit HolderSlot(std::shared_ptr<RecipeCore> core) : core_(std::move(core)) {}

  // Two slots of one object that exclude each other (a rwlock's sides):
  // begin() on this slot is refused with `refusal` while `peer` is not
  // idle. Set once, before use.
  void exclude(std::weak_ptr<HolderSlot> peer, Status refusal) {
    peer_ = std::move(peer);
    peer_refusal_ = std::move(refusal);
  }

  // kIdle -> kAcquiring, or the status that refuses a new acquisition.
  Status begin(std::string_view what);
  // An acquisition ended without a hold: back to kIdle.
  void abandon();
  // kAcquiring -> kHeld with `hold`.
  void held(Hold hold);
  // The current hold's release is in flight (kReleasing).
  void releasing(const HoldState* state);
  // The current hold ended (released or handed over): back to kIdle.
  void ended(const HoldState* state);

  Hold current() const;
  bool is_held() const;
  Phase phase() const;

  // Releases the current hold (false when there is none).
  void release(bool caller_waits, Callback<bool> done);

  LostListeners& lost_listeners() { return lost_; }
  etcd::detail::ListenerSet<>& release_request_listeners() { return release_requests_; }
  const std::shared_ptr<RecipeCore>& core() const { return core_; }

 private:
  friend class HoldState;
  std::shared_ptr<RecipeCore> core_;
  std::weak_ptr<HolderSlot> peer_;
  Status peer_refusal_;
  mutable std::mutex mu_;
  Phase phase_ = Phase::kIdle;
  Hold hold_;
  LostListeners lost_;
  etcd::detail::ListenerSet<> release_requests_;
};

struct HoldAccess {
  // A new Hold handle over `state`: the first owner of an armed state.
  static Hold make(std::shared_ptr<HoldState> state);
  static std::shared_ptr<HoldState> state(const Hold& hold);
};

// The release that records its hand-off (HoldSpec::handoff_key): one Txn,
// guarded by the key's create revision (so it never records the release of
// a key that is not ours any more; safe to send again), deletes `key`,
// puts `handoff_key` := `key`, and deletes `tail_key` (if set) if it still
// names `key`. Callers may add compares and ops to both branches.
Txn hand_off_txn(const std::string& key, int64_t token, const std::string& handoff_key, const std::string& tail_key);

// The status of a lost hold, named after its recipe.
Status hold_lost_status(const RecipeCore& core, const std::string& noun, const std::string& why);

}  // namespace etcd::recipes::detail
