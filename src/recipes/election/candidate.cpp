#include "candidate.h"

#include <algorithm>

#include "../core/background_retry.h"
#include "../core/calls.h"
#include "../core/strand_steps.h"
#include "proposal_limit.h"

namespace etcd::recipes::detail {

Candidate::Candidate(std::shared_ptr<RecipeCore> core_in, std::string value)
    : core(std::move(core_in)),
      prefix(core->name() + "/"),
      slot(std::make_shared<HolderSlot>(core)),
      proposal_(std::make_shared<Proposal>()),
      driver_(lowest_key_driver(core, LowestKeySettings{.noun = "leadership",
                                                        .family = "election",
                                                        .labels = {{"election", core->name()}},
                                                        .value =
                                                            [proposal = proposal_] {
                                                              std::lock_guard lock(proposal->mu);
                                                              return proposal->value;
                                                            },
                                                        .watch_key = true,
                                                        .record_loss = false})) {
  proposal_->value = std::move(value);
}

std::string Candidate::value() const {
  std::lock_guard lock(proposal_->mu);
  return proposal_->value;
}

void Candidate::campaign(bool caller_waits) {
  uint64_t id;
  std::stop_token stop;
  {
    std::lock_guard lock(mu_);
    if (core->closed()) return;
    if (campaigning_) {
      // A campaign being cancelled (a resign) cannot be joined: campaign
      // again once it has wound down.
      if (campaign_stop_.stop_requested()) campaign_wanted_ = true;
      return;
    }
    const auto phase = slot->phase();
    if (releasing_ || phase == HolderSlot::Phase::kReleasing) {
      campaign_wanted_ = true;  // once the last term's key is gone
      return;
    }
    if (phase != HolderSlot::Phase::kIdle) return;  // leading already
    campaigning_ = true;
    id = ++campaign_id_;
    campaign_stop_ = std::stop_source();
    stop = campaign_stop_.get_token();
  }
  std::weak_ptr<Candidate> weak = weak_from_this();
  contend(ContendRequest{core, driver_, CallOptions{.stop = stop, .caller_waits = caller_waits}, /*wait=*/true, slot},
          [weak, id](Result<std::optional<Hold>> r) {
            if (auto self = weak.lock()) self->on_campaign_done(id, std::move(r));
          });
}

void Candidate::on_campaign_done(uint64_t id, Result<std::optional<Hold>> r) {
  std::vector<std::function<void(ResignOutcome)>> resigned;
  bool cancelled;
  {
    std::lock_guard lock(mu_);
    if (id != campaign_id_) return;
    campaigning_ = false;
    resigned.swap(resign_waiters_);
    cancelled = campaign_stop_.stop_requested();
  }
  if (r.ok() && *r && cancelled) {
    // Elected just as we resigned: leave at once; a campaign asked for
    // meanwhile joins once the key is gone.
    {
      std::lock_guard lock(mu_);
      releasing_ = true;
    }
    Hold hold = **r;
    std::weak_ptr<Candidate> weak = weak_from_this();
    return (void)hold.release().then([weak, resigned](Result<bool>) {
      for (auto& done : resigned) done(ResignOutcome{});
      if (auto self = weak.lock()) self->released();
    });
  }
  for (auto& done : resigned) done(ResignOutcome{});
  if (r.ok() && *r) {
    Hold hold = **r;
    std::weak_ptr<Candidate> weak = weak_from_this();
    // Knows the hold only weakly: a listener kept by the hold must not own it.
    auto sub = hold.on_lost([weak, state = std::weak_ptr<HoldState>(HoldAccess::state(hold))](const Status& why) {
      if (auto self = weak.lock()) self->on_lost(state.lock(), why);
    });
    {
      std::lock_guard lock(mu_);
      failures_ = 0;
      lost_sub_ = std::move(sub);
    }
    core->metrics().set("etcd_recipes_election_leader", driver_->labels(), 1);
    if (hooks.elected) hooks.elected(hold);
    return;
  }
  const Status st = r.ok() ? Status(StatusCode::kInternal, "a campaign declined") : r.status();
  if (cancelled || core->closed()) return wound_down();
  if (background_retry_heals(*core, st)) {
    // Participation heals: a waiting candidate whose key or session
    // vanished joins the queue again, as after any failure a retry can fix
    // (those are recorded).
    if (classify(st) != Retry::kNever) {
      core->record_error(Status(st.code(), "campaign failed, trying again: " + st.message(), st.reason()));
    }
    return retry_later();
  }
  core->log(LogLevel::kError, "gave up campaigning", st);
  core->record_error(Status(st.code(), "campaign stopped: " + st.message(), st.reason()));
  if (hooks.failed) hooks.failed(core->named(st));
  wound_down();
}

void Candidate::on_lost(const std::shared_ptr<HoldState>& hold, const Status& why) {
  {
    std::lock_guard lock(mu_);
    if (!hold || HoldAccess::state(slot->current()) != hold) return;  // resigned meanwhile
    releasing_ = true;
  }
  core->metrics().set("etcd_recipes_election_leader", driver_->labels(), 0);
  // Best effort: the key is usually gone already (lease expired or key
  // deleted); after a loss seen only here it must not outlive us.
  std::weak_ptr<Candidate> weak = weak_from_this();
  slot->release(false, [weak](Result<bool>) {
    if (auto self = weak.lock()) self->released();
  });
  if (hooks.lost) hooks.lost(why);
}

void Candidate::resign(std::function<void(ResignOutcome)> done, bool caller_waits) {
  if (!done) done = [](ResignOutcome) {};
  std::optional<std::stop_source> stop;
  Hold hold;
  {
    std::lock_guard lock(mu_);
    campaign_wanted_ = false;
    if (auto timer = retry_timer_.lock()) timer->cancel();
    retry_timer_.reset();
    if (campaigning_) {
      resign_waiters_.push_back(std::move(done));
      stop = campaign_stop_;
    } else {
      // A lost term still in the slot is cleaned up too: its hold (and the
      // client link it keeps) must not outlive the candidate's close.
      hold = slot->current();
      if (HoldAccess::state(hold)) releasing_ = true;
    }
    lost_sub_.reset();
  }
  if (stop) {
    stop->request_stop();  // the engine removes our key, then reports
    return;
  }
  const auto state = HoldAccess::state(hold);
  if (!state) return done(ResignOutcome{});
  const bool was_leader = hold.is_held();
  if (was_leader) core->metrics().set("etcd_recipes_election_leader", driver_->labels(), 0);
  std::weak_ptr<Candidate> weak = weak_from_this();
  state->release(caller_waits, [weak, was_leader, done = std::move(done)](Result<bool> r) {
    // The resign is reported before a campaign asked for meanwhile starts:
    // its end of term must not land after the next term's start.
    done(ResignOutcome{.was_leader = was_leader, .intact = was_leader && r.ok() && *r});
    if (auto self = weak.lock()) self->released();
  });
}

void Candidate::retry_later() {
  // Called from a campaign's outcome: the campaign (work in flight) holds
  // the link.
  auto link = core->link();
  if (!link) return;
  std::lock_guard lock(mu_);
  retry_timer_ = run_after(link->executor(), kStepBackoff.delay(++failures_), [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->campaign();
  });
}

// A release (a resign or a loss's clean-up) is over.
void Candidate::released() {
  {
    std::lock_guard lock(mu_);
    releasing_ = false;
  }
  wound_down();
}

// A campaign or a release ended: join now if that was asked for meanwhile.
void Candidate::wound_down() {
  {
    std::lock_guard lock(mu_);
    if (releasing_ || campaigning_ || !campaign_wanted_) return;
    campaign_wanted_ = false;
  }
  campaign();
}

Call<void> Candidate::proclaim(std::string value) {
  if (auto link = core->link()) {
    if (Status st = check_proposal(link->client(), core->name(), value); !st.ok()) {
      return core->ready<void>(core->named(std::move(st)));
    }
  }
  Hold hold = slot->current();
  auto state = HoldAccess::state(hold);
  auto link = state ? state->link() : nullptr;
  if (!hold.is_held() || !link) {
    return core->ready<void>(
        core->named(Status(StatusCode::kFailedPrecondition, "not the leader; nothing was written", Errc::kHoldLost)));
  }
  PutOptions keep_lease;
  keep_lease.ignore_lease = true;
  return map_call<void>(hold.guarded(Txn().then(Op::put(hold.key(), value, keep_lease))), std::move(link),
                        [proposal = proposal_, value](const TxnResponse&) {
                          // Later campaigns propose it too.
                          std::lock_guard lock(proposal->mu);
                          proposal->value = value;
                          return Result<void>();
                        });
}

}  // namespace etcd::recipes::detail
