// The ordered contender layout (internal): keys that name a revision, so
// that every read an acquisition makes is bounded by what it needs,
// however many contenders wait. The mutex's RecipeOptions::
// contender_layout = kOrdered.
//
//   NAME/~<R>-<lease>-<n>   (16 lower-case hex digits each)
//
// R is a store revision the client had seen before it sent the creation
// (refreshed by one read when it is older than kFreshRevision), lease the
// session's, n the client's contender count (several contenders may share
// one session). A key therefore commits at a revision C > R, and every key
// created before ours (C' < C) has R' < C: it sorts before NAME/~<C>.
//
// The lowest create revision holds, as in etcd's Go concurrency layout —
// and the Go layout's keys (NAME/<lease hex>: digits and letters, which
// sort before '~') take part by their create revision: `etcdctl lock` and
// Go contenders wait for ours and ours for theirs, so one lock excludes
// across a mixed fleet. A contender waits for the deletion of a key created
// before its own (the one just before it, but for keys whose R was stale)
// and looks again after each wake-up.
//
// Each Txn and what etcd reads for it (G keys of the Go layout):
//   create  If(nothing under NAME/) Then Put(K, lease) (holds). Else
//           If(K absent) Then Put(K, lease), the newest Go key (reads G),
//           and the look back; Else Get(K) (an earlier attempt's key:
//           adopted).
//   read    Get(K), the newest Go key created before K, the look back — at
//           one revision.
// The look back finds the newest key created before ours among the keys
// with R in [R_K - 16, C_K) (for the creation: every key from R_K - 16 on,
// all older than ours then); if there is none, among those in the 64
// times longer span below, and the next (to R_K - 65,536), then among all
// the keys below. A span is passed when every key in it was created after
// ours (a Compare over the range), and etcd evaluates only the compares on
// the path it takes: a look reads the keys of the spans it passes and of
// the one it stops in. With every contender on this layout G = 0; a waiter
// reads the keys created around its own creation (a few, at any number of
// waiters), and the one woken when its predecessor goes reads those and
// the empty spans below.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "contender.h"
#include "lowest_key.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

struct OrderedKeyClock;

class OrderedKeyDriver : public ContenderDriver {
 public:
  // The revisions a waiter's first look back covers below its R, and the
  // longest span before it looks at all the keys below.
  static constexpr uint64_t kFirstLook = 16;
  static constexpr uint64_t kLastLook = uint64_t{1} << 16;
  // A client's last seen revision is refreshed (one read) past this age.
  static constexpr Clock::duration kFreshRevision = std::chrono::seconds(1);

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
  // The look back below `key` (its R), within [.., to): keys created before
  // ours — at most at `rev` - 1 when rev is known (read), else every key
  // then (the creation, where ours is not there yet when etcd compares).
  Txn look_back(uint64_t r, const std::string& to, uint64_t span, int64_t rev) const;
  // The key the look (its responses) found, other than ours (created at
  // `own_rev`).
  static const KeyValue* found(const TxnResponse& look, int64_t own_rev);
  // Holds, or waits for the newer of the keys the two reads found; from `at`.
  Verdict verdict(const GetResponse& go, const TxnResponse& look, int64_t own_rev, int64_t at) const;
  void seen(int64_t revision);

  const LowestKeySettings settings_;
  const std::string ordered_;      // NAME/~
  const std::string ordered_end_;  // NAME/~g: past every key of the layout
  const std::shared_ptr<OrderedKeyClock> clock_;
};

}  // namespace etcd::recipes::detail
