#include "hold_state.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include "calls.h"
#include "keys.h"
#include "waiting.h"

namespace etcd::recipes {

namespace detail {

namespace {
// How long a hold that is lost when its key goes lasts before that key is
// watched (the bound on how late such a loss can be reported).
constexpr std::chrono::milliseconds kKeyWatchDelay{50};
}  // namespace

Txn hand_off_txn(const std::string& key, int64_t token, const std::string& handoff_key, const std::string& tail_key) {
  Txn txn;
  txn.when(Compare::create_revision(key) == token).then(Op::del(key), Op::put(handoff_key, key));
  if (!tail_key.empty()) txn.then(Op::txn(Txn().when(Compare::value(tail_key) == key).then(Op::del(tail_key))));
  return txn;
}

Status hold_lost_status(const RecipeCore& core, const std::string& noun, const std::string& why) {
  return Status(StatusCode::kAborted, core.identity() + ": " + noun + " lost: " + why, Errc::kHoldLost);
}

HoldState::HoldState(std::shared_ptr<RecipeCore> core, std::shared_ptr<ClientLink> link, HoldSpec spec,
                     std::shared_ptr<HolderSlot> slot)
    : core_(std::move(core)),
      session_(std::exchange(spec.session, nullptr)),
      spec_(std::move(spec)),
      claim_held_(spec_.claims != nullptr),
      slot_(std::move(slot)),
      link_(std::move(link)) {}

HoldState::~HoldState() { drop_claim(); }

std::shared_ptr<ClientLink> HoldState::link() const {
  std::lock_guard lock(mu_);
  return link_;
}

std::shared_ptr<Session> HoldState::session() const {
  std::lock_guard lock(mu_);
  return session_;
}

void HoldState::let_go() {
  std::shared_ptr<Session> session;
  std::shared_ptr<ClientLink> link;
  {
    std::lock_guard lock(mu_);
    session = std::move(session_);
    link = std::move(link_);
  }
  // In this order: a session is never the last to hold the client.
  session.reset();
}

void HoldState::drop_claim() {
  if (claim_held_.exchange(false)) spec_.claims->unclaim(spec_.key);
}

void HoldState::arm() {
  std::weak_ptr<HoldState> weak = shared_from_this();
  Subscription sub;
  if (auto session = this->session()) {
    sub = session->on_lost([weak](const Status& why) {
      if (auto self = weak.lock()) self->lose(Status(why.code(), "its session ended: " + why.message(), why.reason()));
    });
  }
  {
    std::lock_guard lock(mu_);
    if (!ended_) std::swap(session_sub_, sub);
  }
  sub.reset();
  auto link = this->link();
  if (!spec_.watch_key || !link) return;
  // The watch starts a moment later, from the key's creation: a deletion
  // meanwhile is replayed, so none is missed, and a short hold (an
  // election's campaign + resign) costs no watch at all. The timer is owned
  // by its handler only, so it goes with the client's event loop at the
  // latest.
  auto timer = std::make_shared<asio::steady_timer>(link->executor(), kKeyWatchDelay);
  std::function<void()> cancel = [weak_timer = std::weak_ptr<asio::steady_timer>(timer)] {
    auto t = weak_timer.lock();
    if (!t) return;
    // The timer is only touched on its executor.
    asio::post(t->get_executor(), [weak_timer] {
      if (auto live = weak_timer.lock()) live->cancel();
    });
  };
  timer->async_wait([weak, timer](const asio::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || !self->is_held()) return;
    self->watch_own_key(self->spec_.token + 1);
  });
  {
    std::lock_guard lock(mu_);
    if (!ended_) std::swap(cancel_watch_delay_, cancel);
  }
  if (cancel) cancel();  // ended meanwhile
}

// Loss by the key itself: deleted, or replaced by a key with another create
// revision. A watch error (a compaction, a stream that could not resume) is
// settled by one read.
void HoldState::watch_own_key(int64_t from) {
  auto link = this->link();
  if (!link) return;  // over
  std::weak_ptr<HoldState> weak = shared_from_this();
  // Gone: deleted, or re-created. (A put that keeps the create revision —
  // a downgrade, a semaphore's nudge, a proclaim — is ours.)
  const int64_t token = spec_.token;
  auto gone = [token](const KeyValue* kv) { return !kv || kv->create_revision != token; };
  const bool requests = spec_.release_requests;
  Watcher w = link->client().watch(
      spec_.key, WatchOptions{.start_revision = from}, [weak, gone, requests](Result<WatchResponse> r) {
        auto self = weak.lock();
        if (!self) return;
        if (r.ok()) {
          for (const auto& ev : r->events) {
            if (ev.type == Event::Type::kDelete) return self->lose(Status(StatusCode::kAborted, "its key was deleted"));
            if (gone(&ev.kv)) return self->lose(Status(StatusCode::kAborted, "its key was replaced"));
            if (requests && is_release_request(ev.kv.value)) self->saw_release_request();
          }
          return;
        }
        auto current = self->link();
        if (self->core_->closed() || !current) return;
        CallAccess::start_inline(current->client().get(self->spec_.key), [weak, gone, requests](Result<GetResponse> g) {
          auto s = weak.lock();
          if (!s || !g.ok()) return;  // the session's lease still bounds the hold
          if (gone(g->first())) {
            return s->lose(Status(StatusCode::kAborted, "its key was deleted"));
          }
          if (requests && is_release_request(g->first()->value)) s->saw_release_request();
          s->watch_own_key(g->header.revision + 1);
        });
      });
  {
    std::lock_guard lock(mu_);
    if (!ended_) std::swap(key_watch_, w);
  }
  w.cancel();
}

void HoldState::saw_release_request() {
  {
    std::lock_guard lock(mu_);
    if (ended_) return;
  }
  auto sink = [core = core_](Status s) { core->record_error(std::move(s)); };
  const Executor ex = executor_or_system(link());
  if (!release_request_.raise(ex, sink)) return;  // told once
  core_->metrics().add("etcd_recipes_" + spec_.family + "_release_requests_total", spec_.labels, 1);
  if (slot_) slot_->release_request_listeners().notify(ex, sink);
}

std::stop_token HoldState::release_requested() const { return release_request_.token(); }

Subscription HoldState::on_release_requested(std::function<void()> listener) {
  return release_request_.subscribe(std::move(listener), executor_or_system(link()),
                                    [core = core_](Status s) { core->record_error(std::move(s)); });
}

bool HoldState::is_held() const {
  std::lock_guard lock(mu_);
  return !ended_;
}

bool HoldState::lost() const {
  std::lock_guard lock(mu_);
  return lost_;
}

std::stop_token HoldState::stop_token() const {
  std::lock_guard lock(mu_);
  return stop_.get_token();
}

Subscription HoldState::on_lost(std::function<void(const Status&)> listener) {
  {
    std::lock_guard lock(mu_);
    if (!ended_) return listeners_.add(std::move(listener));
    if (!lost_) return Subscription();  // released: it will never be lost
  }
  // Lost already: the listener still hears of it, unless its Subscription
  // goes first (as a listener registered before the loss).
  return LostListeners::notify_one(
      executor_or_system(link()), [core = core_](Status s) { core->record_error(s); }, std::move(listener),
      hold_lost_status(*core_, spec_.noun, "lost before this listener"));
}

std::vector<Compare> HoldState::guard() const {
  std::vector<Compare> compares{Compare::create_revision(spec_.key) == spec_.token};
  if (spec_.require_unmodified) compares.push_back(Compare::mod_revision(spec_.key) == spec_.token);
  return compares;
}

Call<TxnResponse> HoldState::guarded(Txn txn) {
  auto link = this->link();
  if (!link || !is_held()) {
    return ready_call<TxnResponse>(std::move(link),
                                   Status(StatusCode::kFailedPrecondition,
                                          core_->identity() + ": the " + spec_.noun + " is not held", Errc::kHoldLost));
  }
  Txn outer;
  for (auto& c : guard()) outer.when(std::move(c));
  outer.then(Op::txn(std::move(txn)));
  auto call = link->client().txn(std::move(outer));
  return then_call<TxnResponse>(std::move(call), std::move(link),
                                [core = core_, noun = spec_.noun](Result<TxnResponse> r) -> Result<TxnResponse> {
                                  if (!r.ok()) return std::move(r).status();
                                  if (!r->succeeded) {
                                    return Status(
                                        StatusCode::kFailedPrecondition,
                                        core->identity() + ": the " + noun + " is no longer held; nothing was written",
                                        Errc::kHoldLost);
                                  }
                                  return TxnResponse(r->responses.at(0).txn());
                                });
}

bool HoldState::end_locked(bool lost) {
  if (ended_) return false;
  ended_ = true;
  lost_ = lost;
  return true;
}

void HoldState::lose(const Status& why) {
  Subscription session_sub;
  Watcher key_watch;
  std::function<void()> cancel_delay;
  {
    std::lock_guard lock(mu_);
    if (!end_locked(/*lost=*/true)) return;
    session_sub = std::move(session_sub_);
    key_watch = std::move(key_watch_);
    cancel_delay = std::move(cancel_watch_delay_);
  }
  stop_.request_stop();
  if (cancel_delay) cancel_delay();
  key_watch.cancel();
  session_sub.reset();
  core_->metrics().add("etcd_recipes_" + spec_.family + "_lost_total", spec_.labels, 1);
  core_->metrics().observe("etcd_recipes_" + spec_.family + "_hold_seconds", spec_.labels, seconds_since(since_));
  const Status status = hold_lost_status(*core_, spec_.noun, why.message());
  if (spec_.record_loss) {
    core_->record_error(status);  // logged there
  } else {
    core_->log(LogLevel::kWarning, spec_.noun + " lost", why);
  }
  auto sink = [core = core_](Status s) { core->record_error(std::move(s)); };
  // Not over yet: the link lasts until a release (which still deletes the
  // key, best effort) or the hold's end.
  const Executor ex = executor_or_system(link());
  listeners_.notify(ex, sink, status);
  listeners_.clear();  // heard once; a listener that captured its Hold must not keep it alive
  release_request_.clear();
  if (slot_) slot_->lost_listeners().notify(ex, sink, status);
}

bool HoldState::hand_over() {
  Subscription session_sub;
  Watcher key_watch;
  {
    std::lock_guard lock(mu_);
    if (!end_locked(/*lost=*/false)) return false;
    claim_held_.store(false);  // the next HoldState of the key carries it
    session_sub = std::move(session_sub_);
    key_watch = std::move(key_watch_);
  }
  stop_.request_stop();
  key_watch.cancel();
  session_sub.reset();
  listeners_.clear();
  release_request_.clear();
  if (slot_) slot_->ended(this);
  let_go();  // the HoldState that took the key over has its own
  return true;
}

namespace {

// A plain delete: the key embeds our lease id, so no other contender ever
// owns it (cheaper than a Txn on etcd 3.4). prev_kv tells whether it was
// still the key of this hold. Deleting our own key again is harmless, so a
// transient failure is retried (three attempts in all).
void delete_own_key(std::shared_ptr<ClientLink> link, std::string key, int64_t token, bool caller_waits,
                    bool earlier_unknown, int attempt, Callback<bool> done) {
  auto call = link->client().del(key, DeleteOptions{.prev_kv = true});
  CallAccess::start_inline(
      CallAccess::caller_waits(std::move(call), caller_waits),
      [link, key, token, earlier_unknown, attempt, done = std::move(done)](Result<DeleteResponse> r) mutable {
        if (!r.ok() && attempt < 3 && transient(r.status())) {
          return delete_own_key(std::move(link), std::move(key), token, false, true, attempt + 1, std::move(done));
        }
        if (!r.ok()) return done(std::move(r).status());
        bool was_ours = earlier_unknown && r->deleted == 0;  // an earlier attempt may have deleted it
        for (const auto& kv : r->prev_kvs) was_ours = was_ours || kv.create_revision == token;
        done(was_ours);
      });
}

void hand_off_own_key(std::shared_ptr<ClientLink> link, Txn txn, bool caller_waits, bool earlier_unknown, int attempt,
                      Callback<bool> done) {
  auto call = link->client().txn(txn);
  CallAccess::start_inline(
      CallAccess::caller_waits(std::move(call), caller_waits),
      [link, txn = std::move(txn), earlier_unknown, attempt, done = std::move(done)](Result<TxnResponse> r) mutable {
        if (!r.ok() && attempt < 3 && transient(r.status())) {
          return hand_off_own_key(std::move(link), std::move(txn), false, true, attempt + 1, std::move(done));
        }
        if (!r.ok()) return done(std::move(r).status());
        // An earlier attempt may have applied.
        done(r->succeeded || earlier_unknown);
      });
}

}  // namespace

void HoldState::release(bool caller_waits, Callback<bool> done) {
  bool was_lost;
  Subscription session_sub;
  Watcher key_watch;
  std::function<void()> cancel_delay;
  std::shared_ptr<ClientLink> link;
  {
    std::unique_lock lock(mu_);
    if ((ended_ && !lost_) || (lost_ && released_after_loss_) || !link_) {
      lock.unlock();
      return done(false);  // released or handed over already
    }
    link = link_;
    if (lost_) released_after_loss_ = true;
    was_lost = lost_;
    end_locked(/*lost=*/false);
    session_sub = std::move(session_sub_);
    key_watch = std::move(key_watch_);
    cancel_delay = std::move(cancel_watch_delay_);
  }
  stop_.request_stop();
  if (cancel_delay) cancel_delay();
  key_watch.cancel();
  session_sub.reset();
  listeners_.clear();  // a released hold is never lost
  release_request_.clear();
  if (!was_lost) {
    core_->metrics().observe("etcd_recipes_" + spec_.family + "_hold_seconds", spec_.labels, seconds_since(since_));
    core_->metrics().add("etcd_recipes_" + spec_.family + "_released_total", spec_.labels, 1);
  }
  if (slot_) slot_->releasing(this);
  auto self = shared_from_this();
  std::weak_ptr<Session> owner = session();
  auto released = [self, link, was_lost, owner, done = std::move(done)](Result<bool> r) {
    self->drop_claim();
    if (self->slot_) self->slot_->ended(self.get());
    if (!r.ok()) {
      self->core_->record_error(r.status());
      // A key named by this hold alone (a permit's) would
      // stay with the live session and keep the permit taken:
      // it is swept until a delete is answered. (A key named
      // by the session is adopted by its next acquisition.)
      if (!self->spec_.claims) {
        sweep_key(self->core_, owner, delete_if_created_at(self->spec_.key, self->spec_.token),
                  /*until_found=*/false);
      }
      done(self->core_->named(std::move(r).status()));
    } else {
      done(*r && !was_lost);
    }
    self->let_go();  // the hold is over (`link` lasts until this continuation is done)
  };
  if (spec_.handoff_key.empty()) {
    delete_own_key(link, spec_.key, spec_.token, caller_waits, false, 1, std::move(released));
  } else {
    hand_off_own_key(link, hand_off_txn(spec_.key, spec_.token, spec_.handoff_key, spec_.tail_key), caller_waits, false,
                     1, std::move(released));
  }
}

Call<bool> HoldState::release_call() {
  auto self = shared_from_this();
  return link_call<bool>(link(), [self](CallOptions options, Callback<bool> done) {
    self->release(options.caller_waits, std::move(done));
  });
}

// --- HolderSlot ----------------------------------------------------------

Status HolderSlot::begin(std::string_view what) {
  auto peer = peer_.lock();
  std::unique_lock lock(mu_, std::defer_lock);
  std::unique_lock<std::mutex> peer_lock;
  if (peer) {
    peer_lock = std::unique_lock<std::mutex>(peer->mu_, std::defer_lock);
    std::lock(lock, peer_lock);  // both sides at once, in a deadlock-free order
    if (peer->phase_ != Phase::kIdle) return core_->named(peer_refusal_);
  } else {
    lock.lock();
  }
  switch (phase_) {
    case Phase::kIdle:
      phase_ = Phase::kAcquiring;
      return Status();
    case Phase::kReleasing:
      return core_->named(
          Status(StatusCode::kFailedPrecondition,
                 "still releasing its last hold; " + std::string(what) + " again once release() has completed"));
    default:
      return core_->named(
          Status(StatusCode::kFailedPrecondition, "already holds or is acquiring (it is not recursive)"));
  }
}

void HolderSlot::abandon() {
  std::lock_guard lock(mu_);
  if (phase_ == Phase::kAcquiring) phase_ = Phase::kIdle;
}

void HolderSlot::held(Hold hold) {
  Hold old;
  {
    std::lock_guard lock(mu_);
    phase_ = Phase::kHeld;
    old = std::exchange(hold_, std::move(hold));
  }
}

void HolderSlot::releasing(const HoldState* state) {
  std::lock_guard lock(mu_);
  if (HoldAccess::state(hold_).get() == state) phase_ = Phase::kReleasing;
}

void HolderSlot::ended(const HoldState* state) {
  Hold old;
  {
    std::lock_guard lock(mu_);
    if (HoldAccess::state(hold_).get() != state) return;
    phase_ = Phase::kIdle;
    old = std::move(hold_);
    hold_ = Hold();
  }
  // `old` (perhaps the last owner) goes outside the lock.
}

Hold HolderSlot::current() const {
  std::lock_guard lock(mu_);
  return hold_;
}

bool HolderSlot::is_held() const {
  auto h = current();
  return h.is_held();
}

HolderSlot::Phase HolderSlot::phase() const {
  std::lock_guard lock(mu_);
  return phase_;
}

void HolderSlot::release(bool caller_waits, Callback<bool> done) {
  auto state = HoldAccess::state(current());
  if (!state) return done(false);
  state->release(caller_waits, std::move(done));
}

}  // namespace detail

// --- Hold ------------------------------------------------------------------

// The owners of a hold; the last one gone releases it (fire and forget).
struct Hold::Owner {
  std::shared_ptr<detail::HoldState> state;
  ~Owner() {
    if (state && state->is_held()) state->release(false, [](Result<bool>) {});
  }
};

Hold detail::HoldAccess::make(std::shared_ptr<HoldState> state) {
  auto owner = std::make_shared<Hold::Owner>();
  owner->state = std::move(state);
  return Hold(std::move(owner));
}

std::shared_ptr<detail::HoldState> detail::HoldAccess::state(const Hold& hold) {
  return hold.owner_ ? hold.owner_->state : nullptr;
}

std::string Hold::key() const { return owner_ ? owner_->state->spec().key : std::string(); }
int64_t Hold::token() const { return owner_ ? owner_->state->spec().token : 0; }
int64_t Hold::lease() const { return owner_ ? owner_->state->spec().lease : 0; }
bool Hold::is_held() const { return owner_ && owner_->state->is_held(); }

std::stop_token Hold::stop_token() const {
  if (owner_) return owner_->state->stop_token();
  std::stop_source ended;
  ended.request_stop();
  return ended.get_token();
}

std::stop_token Hold::release_requested() const {
  return owner_ ? owner_->state->release_requested() : std::stop_token();
}

Subscription Hold::on_release_requested(std::function<void()> listener) const {
  if (!owner_) return Subscription();
  return owner_->state->on_release_requested(std::move(listener));
}

Subscription Hold::on_lost(std::function<void(const Status&)> listener) const {
  if (!owner_) return Subscription();
  return owner_->state->on_lost(std::move(listener));
}

Call<TxnResponse> Hold::guarded(Txn txn) const {
  if (!owner_) {
    return Call<TxnResponse>(
        [](CallOptions, Callback<TxnResponse> done) {
          done(Status(StatusCode::kFailedPrecondition, "an empty Hold guards nothing", Errc::kHoldLost));
        },
        asio::system_executor());
  }
  return owner_->state->guarded(std::move(txn));
}

Call<bool> Hold::release() const {
  if (!owner_) return Call<bool>([](CallOptions, Callback<bool> done) { done(false); }, asio::system_executor());
  return owner_->state->release_call();
}

// --- Holder ----------------------------------------------------------------

Hold Holder::hold() const { return slot_ ? slot_->current() : Hold(); }
bool Holder::is_held() const { return slot_ && slot_->is_held(); }
Subscription Holder::on_lost(std::function<void(const Status&)> listener) {
  return slot_->lost_listeners().add(std::move(listener));
}

}  // namespace etcd::recipes
