#include "own_presence.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "client/client_access.h"

#include "calls.h"
#include "keys.h"
#include "strand_steps.h"

namespace etcd::recipes::detail {

namespace {

// A first grant that did not get through is tried again, backing off: a
// raft election takes a second or two.
constexpr int kMaxGrantAttempts = 10;
constexpr std::chrono::milliseconds kGrantBackoff{100};

}  // namespace

std::shared_ptr<RecipeCore> OwnPresence::make_core(Client client, const char* kind, std::string name,
                                                   RecipeOptions options, Status input) {
  // RecipeCore checks session_ttl only when it makes sessions; these
  // recipes always use it, as their lease's TTL.
  if (input.ok() && options.session_ttl < std::chrono::seconds(1)) {
    input = InvalidArgument("session_ttl (the TTL of the lease its keys live on) must be at least 1 s (got " +
                            std::to_string(options.session_ttl.count()) + " s)");
  }
  options.session = nullptr;
  options.session_factory = nullptr;
  return std::make_shared<RecipeCore>(std::move(client), kind, std::move(name), std::move(options), std::move(input));
}

// One presence lease and the OwnPresences that use it (one, or every shared
// member of a client's lease for one TTL and backoff).
class OwnPresence::LeaseSlot : public std::enable_shared_from_this<OwnPresence::LeaseSlot> {
 public:
  struct Member {
    EventHandler on_event;
    PresenceRestoreHook restore;
    int failures = 0;  // restores failed in a row, for the backoff
    std::shared_ptr<asio::steady_timer> retry;
  };
  // The shared slots of one client, by TTL and backoff.
  struct Shared {
    std::mutex mu;
    std::map<std::pair<int64_t, int64_t>, std::weak_ptr<LeaseSlot>> by_options;
  };

  LeaseSlot(PresenceOptions options, std::shared_ptr<Shared> shared)
      : options_(std::move(options)), shared_(std::move(shared)) {}

  // The client's shared slot for `options` (made if there is none or it is
  // being closed), with `member` joined, under the registry's lock so that
  // the last member's leave cannot race with it.
  static std::pair<std::shared_ptr<LeaseSlot>, uint64_t> join_shared(const Client& client, const PresenceOptions& options,
                                                                     std::shared_ptr<Member> member) {
    auto shared = etcd::detail::ClientAccess::service<Shared>(client, [] { return std::make_shared<Shared>(); });
    std::lock_guard lock(shared->mu);
    auto& weak = shared->by_options[{options.ttl.count(), options.max_backoff.count()}];
    auto slot = weak.lock();
    if (!slot || slot->closing()) {
      slot = std::make_shared<LeaseSlot>(options, shared);
      weak = slot;
    }
    return {slot, slot->join(std::move(member))};
  }

  uint64_t join(std::shared_ptr<Member> member) {
    std::lock_guard lock(mu_);
    const uint64_t id = next_member_++;
    members_.emplace(id, std::move(member));
    return id;
  }

  bool closing() {
    std::lock_guard lock(mu_);
    return closing_;
  }


  // The lease, created (not started) if there is none.
  std::shared_ptr<PresenceLease> lease(const std::shared_ptr<ClientLink>& link) {
    std::lock_guard lock(mu_);
    if (lease_ || !link) return lease_;
    PresenceOptions options = options_;
    executor_ = link->executor();
    std::weak_ptr<LeaseSlot> weak = weak_from_this();
    if (shared_) {
      // Each member restores, and fails, alone (restore_all).
      options.restore = [weak](int64_t id) -> Call<void> {
        if (auto self = weak.lock()) return self->restore_all(id);
        return Call<void>::ready(Result<void>(), Executor(asio::system_executor()));
      };
    } else if (!members_.empty()) {
      options.restore = members_.begin()->second->restore;
    }
    lease_ = PresenceLease::create(link->client(), std::move(options));
    sub_ = lease_->on_event([weak](PresenceEvent event, const Status& why) {
      if (auto self = weak.lock()) self->on_lease_event(event, why);
    });
    return lease_;
  }

  int64_t lease_id() {
    std::lock_guard lock(mu_);
    return lease_ ? lease_->lease_id() : 0;
  }

  // Forgets `lease` (if it is still the current one) without revoking it.
  void forget(const std::shared_ptr<PresenceLease>& lease) {
    Subscription sub;
    std::lock_guard lock(mu_);
    if (lease_ != lease) return;
    lease_.reset();
    sub = std::move(sub_);
  }

  // `member` leaves (for good), or (not for good) lets go of the lease if
  // it is the only one using it; `then` runs once any revoke is done.
  void leave(uint64_t member, bool for_good, std::function<void()> then) {
    std::unique_lock<std::mutex> registry;
    if (shared_ && for_good) registry = std::unique_lock(shared_->mu);
    std::shared_ptr<PresenceLease> lease;
    Subscription sub;
    std::shared_ptr<asio::steady_timer> retry;
    {
      std::lock_guard lock(mu_);
      auto it = members_.find(member);
      const bool alone = members_.size() == 1 && it != members_.end();
      if (it != members_.end() && for_good) {
        retry = std::move(it->second->retry);
        members_.erase(it);
      }
      if (alone) {
        if (for_good) closing_ = true;
        lease = std::move(lease_);
        sub = std::move(sub_);
      }
    }
    if (registry.owns_lock()) {
      registry.unlock();
    }
    if (retry) retry->cancel();
    sub.reset();
    if (!lease) {
      if (then) then();
      return;
    }
    CallAccess::start_inline(lease->close(), [lease, then = std::move(then)](Result<void>) {
      if (then) then();
    });
  }

 private:
  Executor executor() {
    std::lock_guard lock(mu_);
    return executor_ ? *executor_ : Executor(asio::system_executor());
  }

  std::vector<std::shared_ptr<Member>> members() {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<Member>> all;
    for (auto& [id, m] : members_) all.push_back(m);
    return all;
  }

  void on_lease_event(PresenceEvent event, const Status& why) {
    // Shared: the restore hook never fails, so kRestoreFailed is a failed
    // re-grant (news for everyone); each member's kRestored comes from its
    // own restore.
    if (shared_ && event == PresenceEvent::kRestored) return;
    if (event == PresenceEvent::kExpired) {
      // Retries under the lost lease are moot: restore_all follows the re-grant.
      std::vector<std::shared_ptr<asio::steady_timer>> retries;
      {
        std::lock_guard lock(mu_);
        for (auto& [id, m] : members_) {
          if (m->retry) retries.push_back(std::move(m->retry));
          m->failures = 0;
        }
      }
      for (auto& t : retries) t->cancel();
    }
    for (auto& m : members()) {
      if (m->on_event) m->on_event(event, why);
    }
  }

  // The shared lease's restore hook: every member's, each on its own;
  // answers when all have answered, always OK.
  Call<void> restore_all(int64_t id) {
    auto all = members();
    return Call<void>(
        [self = shared_from_this(), all, id](CallOptions, Callback<void> done) {
          if (all.empty()) return done(Result<void>());
          auto left = std::make_shared<std::atomic<size_t>>(all.size());
          auto finished = std::make_shared<Callback<void>>(std::move(done));
          for (const auto& m : all) {
            self->restore_one(m, id, [left, finished] {
              if (left->fetch_sub(1) == 1) (*finished)(Result<void>());
            });
          }
        },
        executor());
  }

  void restore_one(const std::shared_ptr<Member>& m, int64_t id, std::function<void()> then) {
    if (!m->restore) {
      if (then) then();
      return;
    }
    CallAccess::start_inline(m->restore(id), [weak = weak_from_this(), m, id, then = std::move(then)](Result<void> r) {
      auto self = weak.lock();
      if (r.ok()) {
        if (self) {
          std::lock_guard lock(self->mu_);
          m->failures = 0;
        }
        if (m->on_event) m->on_event(PresenceEvent::kRestored, Status());
      } else if (self && !r.status().is(Errc::kClosed)) {
        if (m->on_event) m->on_event(PresenceEvent::kRestoreFailed, r.status());
        self->retry_later(m, id);
      }
      if (then) then();
    });
  }

  // Tries `m`'s restore again under the same lease, after the backoff.
  void retry_later(const std::shared_ptr<Member>& m, int64_t id) {
    const Backoff backoff{.initial = options_.initial_backoff, .max = options_.max_backoff};
    const Executor ex = executor();
    std::lock_guard lock(mu_);
    // Lost again, or left: the next restore_all covers it, or nothing does.
    if (!lease_ || lease_->lease_id() != id) return;
    if (std::none_of(members_.begin(), members_.end(), [&](const auto& e) { return e.second == m; })) return;
    m->retry = run_after(ex, backoff.delay(m->failures++),
                         [weak = weak_from_this(), weak_m = std::weak_ptr<Member>(m), id] {
                           auto self = weak.lock();
                           auto member = weak_m.lock();
                           if (!self || !member || self->lease_id() != id) return;
                           self->restore_one(member, id, nullptr);
                         });
  }

  const PresenceOptions options_;
  const std::shared_ptr<Shared> shared_;  // null: a lease of one owner's
  std::mutex mu_;
  std::shared_ptr<PresenceLease> lease_;
  std::optional<Executor> executor_;  // the client's, once a lease was made
  Subscription sub_;
  std::map<uint64_t, std::shared_ptr<Member>> members_;
  uint64_t next_member_ = 1;
  bool closing_ = false;
};

namespace {

std::pair<std::shared_ptr<OwnPresence::LeaseSlot>, uint64_t> make_slot(PresenceOptions options,
                                                                        OwnPresence::EventHandler on_event,
                                                                        PresenceRestoreHook restore,
                                                                        const Client* share_with) {
  auto member = std::make_shared<OwnPresence::LeaseSlot::Member>();
  member->on_event = std::move(on_event);
  member->restore = std::move(restore);
  if (share_with) return OwnPresence::LeaseSlot::join_shared(*share_with, options, std::move(member));
  auto slot = std::make_shared<OwnPresence::LeaseSlot>(std::move(options), nullptr);
  const uint64_t id = slot->join(std::move(member));
  return {slot, id};
}

}  // namespace

OwnPresence::OwnPresence(PresenceOptions options, std::string what, EventHandler on_event, PresenceRestoreHook restore,
                         const Client* share_with)
    : OwnPresence(options.ttl, std::move(what),
                  make_slot(options, std::move(on_event), std::move(restore), share_with)) {}

OwnPresence::OwnPresence(std::chrono::seconds ttl, std::string what,
                         std::pair<std::shared_ptr<LeaseSlot>, uint64_t> slot)
    : ttl_(ttl), what_(std::move(what)), slot_(std::move(slot.first)), member_(slot.second) {}

OwnPresence::~OwnPresence() { drop(true, nullptr); }

void OwnPresence::with_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
                             const asio::strand<Executor>* resume_on) {
  start(link, std::move(then), resume_on ? std::optional(*resume_on) : std::nullopt, 1);
}

void OwnPresence::start(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
                        std::optional<asio::strand<Executor>> resume_on, int attempt) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return then(Closed(what_));
  }
  std::shared_ptr<PresenceLease> lease = slot_->lease(link);
  if (!lease) return then(Closed(what_));
  if (const int64_t id = lease->lease_id(); id != 0) return then(id);
  auto resume = [this_lease = lease, link, what = what_, resume_on, attempt, then = std::move(then),
                 weak = weak_from_this()](Result<void> r) mutable {
    if (r.ok()) {
      const int64_t id = this_lease->lease_id();
      if (id == 0) return then(Status(StatusCode::kUnavailable, what + " is being renewed after a loss"));
      return then(id);
    }
    auto self = weak.lock();
    // The first grant did not get through (or its outcome is unknown, e.g.
    // the raft leader changed): a new lease, after a backoff. A grant that
    // was applied after all expires by its TTL.
    if (!self || attempt >= kMaxGrantAttempts || !transient(r.status())) return then(std::move(r).status());
    self->slot_->forget(this_lease);
    auto timer = std::make_shared<asio::steady_timer>(link->executor(), kGrantBackoff * attempt);
    timer->async_wait([self, link, then = std::move(then), resume_on, attempt, timer](asio::error_code) mutable {
      self->start(link, std::move(then), resume_on, attempt + 1);
    });
  };
  if (resume_on) return run_on_strand(*resume_on, lease->start(), std::move(resume));
  CallAccess::start_inline(lease->start(), std::move(resume));
}

int64_t OwnPresence::lease_id() const { return slot_->lease_id(); }


void OwnPresence::drop(bool for_good, std::function<void()> then) {
  {
    std::lock_guard lock(mu_);
    if (closed_) {
      if (then) then();
      return;
    }
    if (for_good) closed_ = true;
  }
  slot_->leave(member_, for_good, std::move(then));
}

void PresenceLossReport::on_event(RecipeCore& core, PresenceEvent event, const Status& why, bool owns_keys,
                                  std::string_view lease, std::string_view consequence) {
  {
    std::lock_guard lock(mu_);
    if (event == PresenceEvent::kExpired && !owns_keys) return;
    if (event == PresenceEvent::kRestored && !reported_) return;
    if (event == PresenceEvent::kRestoreFailed) return;
    reported_ = event == PresenceEvent::kExpired;
  }
  if (event == PresenceEvent::kRestored) {
    core.log(LogLevel::kInfo, std::string(lease) + " healed: a new lease, the keys re-created where free");
    return core.set_state(ConnectionState::kReconnected);
  }
  core.record_error(core.named(
      Status(why.code(), std::string(lease) + " was lost: " + why.message() + "; " + std::string(consequence),
             why.is(Errc::kNone) ? Errc::kHoldLost : why.reason())));
  core.set_state(ConnectionState::kLost);
}

}  // namespace etcd::recipes::detail
