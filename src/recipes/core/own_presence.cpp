#include "own_presence.h"

#include <asio/post.hpp>
#include <utility>

#include "calls.h"
#include "strand_steps.h"

namespace etcd::recipes::detail {

OwnPresence::OwnPresence(PresenceOptions options, std::string what, EventHandler on_event, PresenceRestoreHook restore)
    : options_(std::move(options)),
      what_(std::move(what)),
      on_event_(std::move(on_event)),
      restore_(std::move(restore)) {}

OwnPresence::~OwnPresence() { drop(true, nullptr); }

void OwnPresence::with_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then,
                             const asio::strand<Executor>* resume_on) {
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
  auto resume = [lease, what = what_, then = std::move(then)](Result<void> r) {
    if (!r.ok()) return then(std::move(r).status());
    const int64_t id = lease->lease_id();
    if (id == 0) return then(Status(StatusCode::kUnavailable, what + " is being renewed after a loss"));
    then(id);
  };
  if (resume_on) return run_on_strand(*resume_on, lease->start(), std::move(resume));
  CallAccess::start_inline(lease->start(), std::move(resume));
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

}  // namespace etcd::recipes::detail
