#include "own_presence.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <optional>
#include <utility>

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

OwnPresence::OwnPresence(PresenceOptions options, std::string what, EventHandler on_event, PresenceRestoreHook restore)
    : options_(std::move(options)),
      what_(std::move(what)),
      on_event_(std::move(on_event)),
      restore_(std::move(restore)) {}

OwnPresence::~OwnPresence() { drop(true, nullptr); }

void OwnPresence::with_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
                             const asio::strand<Executor>* resume_on) {
  start(link, std::move(then), resume_on ? std::optional(*resume_on) : std::nullopt, 1);
}

void OwnPresence::start(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
                        std::optional<asio::strand<Executor>> resume_on, int attempt) {
  std::shared_ptr<PresenceLease> lease;
  {
    std::lock_guard lock(mu_);
    if (closed_) return then(Closed(what_));
    if (!lease_) {
      if (!link) return then(Closed(what_));
      PresenceOptions options = options_;
      options.restore = restore_;
      lease_ = PresenceLease::create(link->client(), std::move(options));
      if (on_event_) sub_ = lease_->on_event(on_event_);
    }
    lease = lease_;
  }
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
    self->forget(this_lease);
    auto timer = std::make_shared<asio::steady_timer>(link->executor(), kGrantBackoff * attempt);
    timer->async_wait([self, link, then = std::move(then), resume_on, attempt, timer](asio::error_code) mutable {
      self->start(link, std::move(then), resume_on, attempt + 1);
    });
  };
  if (resume_on) return run_on_strand(*resume_on, lease->start(), std::move(resume));
  CallAccess::start_inline(lease->start(), std::move(resume));
}

void OwnPresence::forget(const std::shared_ptr<PresenceLease>& lease) {
  Subscription sub;
  {
    std::lock_guard lock(mu_);
    if (lease_ != lease) return;
    lease_.reset();
    sub = std::move(sub_);
  }
}

int64_t OwnPresence::lease_id() const {
  std::lock_guard lock(mu_);
  return lease_ ? lease_->lease_id() : 0;
}

void OwnPresence::drop(bool for_good, std::function<void()> then) {
  std::shared_ptr<PresenceLease> lease;
  Subscription sub;
  {
    std::lock_guard lock(mu_);
    if (for_good) closed_ = true;
    lease = std::move(lease_);
    sub = std::move(sub_);
  }
  sub.reset();
  if (!lease) {
    if (then) then();
    return;
  }
  CallAccess::start_inline(lease->close(), [lease, then = std::move(then)](Result<void>) {
    if (then) then();
  });
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
  if (event == PresenceEvent::kRestored) return core.set_state(ConnectionState::kReconnected);
  core.record_error(core.named(
      Status(why.code(), std::string(lease) + " was lost: " + why.message() + "; " + std::string(consequence),
             why.is(Errc::kNone) ? Errc::kHoldLost : why.reason())));
  core.set_state(ConnectionState::kLost);
}

}  // namespace etcd::recipes::detail
