// The ordered contender layout (internal): keys whose byte order is their
// commit order, so that every read an acquisition makes is bounded by what
// it needs, however many contenders wait. The mutex's
// RecipeOptions::contender_layout = kOrdered.
//
//   NAME/~<R>-<lease>-<n>        (16 lower-case hex digits each)
//
// R is a store revision the client had seen, lease the session's, n the
// client's contender count (several contenders may share one session). A
// key is created only at the tail: its creation Txn requires that no key
// of the layout sorts at or after it, so of two keys that exist together
// the one created first sorts first. A refused creation learns the store's
// revision from its answer and tries again with that R (which is above
// every R in use: each key committed after its R).
//
// The lowest create revision holds, as in etcd's Go concurrency layout —
// and the Go layout's keys (NAME/<lease hex>: digits and letters, which
// sort before '~') take part by their create revision: `etcdctl lock` and
// Go contenders wait for ours and ours for theirs, so one lock still
// excludes across a mixed fleet. A contender waits for the deletion of the
// key just before its own.
//
// Each Txn and what etcd reads for it (W waiters, G keys of the Go layout,
// S = kWindowRevisions):
//   create  If(no key in [K, NAME/~g)) Then Put(K, lease), the newest Go
//           key (reads G), the last key in [~<R-S>, K) (reads the keys
//           created in those S revisions), and — only when there is none —
//           the last key before ~<R-S> (reads the keys ahead older than
//           that). Else Get(K) (an earlier attempt's key: adopted).
//   read    Get(K) and the same three reads, at one revision.
// With every contender on this layout G = 0; a waiter that arrives while
// the one before it arrived within S revisions reads only the keys of that
// window; a waiter woken by its predecessor's delete reads the keys still
// ahead of it (none, when it is next). What is O(W) is the first read of a
// waiter whose predecessor is older than S revisions, or all the waiters
// ahead after a predecessor in the middle left — once per such event, not
// per acquisition.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "contender.h"
#include "lowest_key.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

class OrderedKeyDriver : public ContenderDriver {
 public:
  // The revisions a waiter's first look back covers.
  static constexpr int64_t kWindowRevisions = 256;

  OrderedKeyDriver(std::shared_ptr<RecipeCore> core, LowestKeySettings settings);

  const std::shared_ptr<RecipeCore> core;
  const std::string prefix;  // NAME/

  std::string key(const Session& s) override;
  std::string rekey(const std::string& key, int64_t revision) override;
  bool claims_key() const override { return false; }  // unique by its count
  std::string batch_scope() const override { return prefix; }
  Txn create(const std::string& key, int64_t lease) override;
  Created created(const TxnResponse& response) override;
  Txn read(const std::string& key, int64_t rev) override;
  Verdict judge(const TxnResponse& response, int64_t rev) override;
  HoldSpec hold_spec() override;
  const std::string& family() const override { return settings_.family; }
  const Labels& labels() const override { return settings_.labels; }
  std::string waiting_for() const override { return settings_.noun == "lock" ? "the lock" : settings_.noun; }

 private:
  // The three reads of create() and read() (below our key, at most
  // `max_create` for the Go layout's keys).
  std::vector<Op> reads_before(const std::string& key, int64_t max_create) const;
  // The verdict on those three responses, from `at` on.
  Verdict verdict(const GetResponse& go, const GetResponse& window, const TxnResponse& older, int64_t at) const;
  void seen(int64_t revision);

  const LowestKeySettings settings_;
  const std::string ordered_;      // NAME/~
  const std::string ordered_end_;  // NAME/~g: past every key of the layout
  const std::shared_ptr<std::atomic<int64_t>> seen_;  // the client's highest revision seen
};

}  // namespace etcd::recipes::detail
