// How a DistributedWorkQueue takes an item (internal): a claim bound to the
// consumer's presence lease, and what a delivery can do with it (ack,
// requeue). The design and every Txn: include/etcd/recipes/work_queue.h.
#pragma once

#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "../core/own_presence.h"
#include "consumer.h"
#include "etcd/presence.h"
#include "etcd/recipes/work_queue.h"
#include "queue_keys.h"
#include "work_record.h"

namespace etcd::recipes::detail {

// The key names of one work queue.
using WorkKeys = QueueKeys;

// One delivery: its claim, shared by the copies of its WorkItem.
class ClaimTake;

class WorkClaim : public std::enable_shared_from_this<WorkClaim> {
 public:
  struct Fields {
    std::string id;
    std::string item_key;
    std::string claim_key;
    int64_t claim = 0;    // the claim's revision: its identity
    int64_t attempt = 0;  // deliveries, this one included
    // The item's version once claimed (the claim's put bumped it).
    int64_t version = 0;
    std::string payload;
  };
  WorkClaim(std::shared_ptr<RecipeCore> core, std::weak_ptr<ClaimTake> driver, Labels labels, Fields fields)
      : core_(std::move(core)), driver_(std::move(driver)), labels_(std::move(labels)), f_(std::move(fields)) {}

  const Fields& fields() const { return f_; }
  std::stop_token stop_token() const { return stop_.get_token(); }
  // The claim ended (acked, requeued) or was lost.
  void end() { stop_.request_stop(); }

  Call<bool> ack();
  Call<bool> requeue(std::optional<std::chrono::milliseconds> delay);

 private:
  // Sends `txn` (guarded by the claim), once more after an unknown outcome
  // with `otherwise` reading the item: true if the claim still held.
  // `releases`: the claim is given back, the item stays (a requeue).
  Call<bool> guarded(Txn txn, const char* what, const char* metric, bool releases);
  void send(std::shared_ptr<ClientLink> link, std::shared_ptr<const Txn> txn, const char* what, const char* metric,
            bool releases, CallOptions options, bool again, Callback<bool> done);

  const std::shared_ptr<RecipeCore> core_;
  const std::weak_ptr<ClaimTake> driver_;
  const Labels labels_;
  const Fields f_;
  std::stop_source stop_;
};

// What a claim hands the receiver (in TakenItem::decoded).
struct Delivery {
  std::shared_ptr<WorkClaim> claim;
  std::shared_ptr<void> decoded;  // a typed queue's value
};

class ClaimTake : public TakeDriver {
 public:
  ClaimTake(std::shared_ptr<RecipeCore> core, WorkKeys keys, Labels labels, std::chrono::seconds visibility,
            int64_t max_deliveries, WorkDecode decode);

  // The view covers NAME/claims/ up to the end of NAME/items/ (dead
  // letters between them are rare and not kept; producer keys, written by
  // every enqueue, are outside it).
  std::string view_range_end() const override;
  std::string full_end() const override;
  bool keeps(std::string_view key) const override {
    return key.starts_with(keys_.items) || key.starts_with(keys_.claims);
  }
  bool is_item(std::string_view key) const override { return key.starts_with(keys_.items); }
  std::string note(const ViewEvent& ev, int64_t revision) override;
  bool ready(const std::string& key, std::chrono::system_clock::time_point now) const override;
  std::optional<std::chrono::system_clock::time_point> next_ready_time() override;
  void take(const std::shared_ptr<ClientLink>& link, const std::string& key, const ViewEntry& entry,
            std::shared_ptr<void> decoded, OutcomeCallback done) override;

  // A claim of ours was given back at `revision` (requeued): this object
  // picks no item until its view shows that revision, so that a receive
  // right after the requeue finds the item in its place (and sees its
  // deliveries and delay as they are now).
  void released(int64_t revision);
  // An ack or requeue of the claim of `item` created at `claim` failed
  // without telling whether it applied: the claim is no longer one our
  // deliveries hold, and is released as an orphaned one if still there.
  void abandoned(const std::string& item, int64_t claim);

  // Listeners of the items this object moved to the dead letters.
  Subscription on_dead_letter(std::function<void(const DeadLetter&)> listener) {
    return dead_listeners_.add(std::move(listener));
  }

  // At close(): revokes the lease (the claims go with it: their items are
  // ready again at once) and ends every delivery.
  void close();

 private:
  struct Attempt;
  // A claim of ours whose outcome we never learned (a take that was
  // unknown twice, or whose retry failed): it holds its item under our
  // lease, which lives as long as we do, so nobody would deliver it again.
  // Once no take of the item is in flight, a claim under our lease that is
  // not one we were given is deleted (guarded by its create revision): the
  // item is ready again. Called on the strand.
  void release_if_orphaned(const std::string& item);
  void with_lease(const std::shared_ptr<ClientLink>& link, std::function<void(Result<int64_t>)> then);
  void send_claim(const std::shared_ptr<Attempt>& a);
  void send_dead_letter(const std::shared_ptr<Attempt>& a, std::string reason);
  void end_claims();

  const std::shared_ptr<RecipeCore> core_;
  const WorkKeys keys_;
  const Labels labels_;
  const std::chrono::seconds visibility_;
  const int64_t max_deliveries_;
  const WorkDecode decode_;
  ListenerSet<const DeadLetter&> dead_listeners_;

  // --- on the strand
  struct SeenClaim {
    int64_t lease = 0;
    int64_t revision = 0;  // its create revision
  };
  std::map<std::string, SeenClaim> claimed_;  // item key -> its claim in the view
  std::set<int64_t> held_;             // revisions of the claims our takes were given, until the view removes them
  std::map<std::string, int> taking_;  // item key -> our takes of it in flight
  std::set<int64_t> releasing_;        // orphaned claims being deleted
  int release_failures_ = 0;           // failed deletes of orphaned claims in a row
  std::shared_ptr<asio::steady_timer> release_retry_;
  std::map<std::string, int64_t> own_claims_;  // our claims (item key -> revision) the view has not shown yet
  int64_t own_writes_ = 0;                     // the newest revision of our requeues
  int64_t view_revision_ = 0;                  // the newest revision the view showed
  std::map<std::string, int64_t> not_before_;  // item key -> ms since the epoch
  std::set<std::pair<int64_t, std::string>> delays_;

  std::mutex mu_;
  std::shared_ptr<OwnPresence> presence_;
  std::vector<std::weak_ptr<WorkClaim>> live_;
  bool closed_ = false;
};

}  // namespace etcd::recipes::detail
