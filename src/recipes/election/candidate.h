// One candidate of an election (internal): the campaign of etcd's Go
// concurrency.Election, run by the contender engine with the Go layout's
// driver (core/lowest_key.h), shared by LeaderLatch and LeaderSelector.
//
// What it adds to the engine is participation that heals: a waiting
// candidate whose key or session vanished, or whose campaign met any other
// failure a retry can fix (core/background_retry.h), joins the queue again
// (on a new session if need be, with backoff), while a lost term is never
// re-created — its owner decides whether to campaign again. Its hooks (elected, lost,
// failed) are library code; they must not block.
#pragma once

#include <asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "../core/ordered_key.h"
#include "etcd/recipes/election.h"

namespace etcd::recipes::detail {

class Candidate : public std::enable_shared_from_this<Candidate> {
 public:
  struct Hooks {
    std::function<void(const Hold&)> elected;
    // A term ended against our will (Errc::kHoldLost). The key has been
    // removed (best effort) when this runs.
    std::function<void(const Status&)> lost;
    // The campaign stopped for good (a shared session gone, a permission):
    // a failure no retry fixes.
    std::function<void(const Status&)> failed;
  };
  struct ResignOutcome {
    bool was_leader = false;
    bool intact = false;  // was leading and its key was still there
  };

  Candidate(std::shared_ptr<RecipeCore> core, std::string value);

  const std::shared_ptr<RecipeCore> core;
  const std::string prefix;
  const std::shared_ptr<HolderSlot> slot;
  Hooks hooks;  // set before the first campaign

  // Joins the queue unless already in it (or closed). If the last
  // campaign or term is still winding down, joins once it has.
  // `caller_waits`: the calling thread blocks for the outcome anyway, so the
  // campaign's first steps may run their RPCs on it.
  void campaign(bool caller_waits = false);
  // Leaves the queue: cancels a campaign, or ends the term and deletes our
  // key. `done` (may be empty) runs once that is over.
  // `caller_waits`: the caller blocks for the outcome, so the delete may
  // run on its thread.
  void resign(std::function<void(ResignOutcome)> done, bool caller_waits = false);

  std::string value() const;
  Call<void> proclaim(std::string value);

  // The proposal, read by the driver at every campaign and changed by
  // proclaim().
  struct Proposal {
    mutable std::mutex mu;
    std::string value;
  };

 private:
  void on_campaign_done(uint64_t campaign, Result<std::optional<Hold>> r);
  void on_lost(const std::shared_ptr<HoldState>& hold, const Status& why);
  void retry_later();
  void released();
  void wound_down();

  const std::shared_ptr<Proposal> proposal_;
  const std::shared_ptr<ContenderDriver> driver_;

  mutable std::mutex mu_;
  // A campaign is in flight (from contend() until its outcome).
  bool campaigning_ = false;
  uint64_t campaign_id_ = 0;
  std::stop_source campaign_stop_;
  // A release (resign or loss clean-up) is in flight.
  bool releasing_ = false;
  // campaign() was asked for while winding down.
  bool campaign_wanted_ = false;
  std::vector<std::function<void(ResignOutcome)>> resign_waiters_;
  int failures_ = 0;
  // The pending retry, to cancel it. Owned by its handler only: a timer
  // never outlives the client's event loop.
  std::weak_ptr<asio::steady_timer> retry_timer_;
  Subscription lost_sub_;
};

}  // namespace etcd::recipes::detail
