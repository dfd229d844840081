// The driver of etcd's Go `concurrency` layout (internal), shared by the
// DistributedMutex and the election candidate — and so by `etcdctl lock`,
// `etcdctl elect` and etcd's lock and election services: each contender
// puts PREFIX<lease id in hex> (create-if-absent, bound to its session's
// lease); the lowest create revision holds; a waiter watches the deletion of
// the key created just before its own (FIFO, one wake-up per hand-off).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "contender.h"
#include "keys.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

struct LowestKeySettings {
  std::string noun;    // "lock", "leadership"
  std::string family;  // metric family: "lock", "election"
  Labels labels;
  // The contender key's value (the mutex: the client id; a candidate: its
  // proposal, which may change between campaigns).
  std::function<std::string()> value;
  // Loss also when the key is deleted by someone else (not only with the
  // lease).
  bool watch_key = true;
  // Whether a loss is also recorded in errors() (a lost lock is; a lost
  // term is routine for an election and goes to its listeners).
  bool record_loss = true;
  // A put of the holder's key with a release request is told to the hold
  // (HoldSpec::release_requests).
  bool release_requests = false;
};

class LowestKeyDriver : public ContenderDriver {
 public:
  LowestKeyDriver(std::shared_ptr<RecipeCore> core_in, LowestKeySettings settings)
      : core(std::move(core_in)), prefix(core->name() + "/"), settings_(std::move(settings)) {}

  const std::shared_ptr<RecipeCore> core;
  const std::string prefix;

  std::string key(const Session& s) override { return prefix + lease_hex(s.lease_id()); }
  std::string batch_scope() const override { return prefix; }

  // One round trip. When nothing is queued under the prefix, our key is the
  // only one and so the lowest: create it, no owner read needed (a Txn with
  // a range read in its branch costs etcd 3.4 measurably more). Otherwise
  // create ours unless it exists — a key of ours left by an earlier
  // acquisition on this session is adopted, its value brought up to date, as
  // Go's Campaign does — and read the owner.
  Txn create(const std::string& key, int64_t lease) override {
    return create_txn(prefix, key, settings_.value(), lease);
  }
  // The Txn of create() for `key` under `prefix` with `value`: it carries
  // the value three times (what bounds an election's proposal).
  static Txn create_txn(const std::string& prefix, const std::string& key, const std::string& value, int64_t lease) {
    const Op put = Op::put(key, value, PutOptions{.lease = lease});
    Txn queued;
    queued.when(Compare::absent(key))
        .then({put, Op::get(prefix, first_created())})
        .otherwise({Op::put(key, value, PutOptions{.ignore_lease = true}), Op::get(key, GetOptions{.keys_only = true}),
                    Op::get(prefix, first_created())});
    Txn txn;
    txn.when(Compare::create_revision(prefix).with_prefix() == 0).then(put).otherwise(Op::txn(std::move(queued)));
    return txn;
  }

  Created created(const TxnResponse& r) override {
    Created c;
    if (r.succeeded) {  // the prefix was empty: ours is the only key
      c.rev = r.header.revision;
      c.verdict = Verdict{.holds = true, .revision = r.header.revision};
      return c;
    }
    const TxnResponse& inner = r.responses.at(0).txn();
    const GetResponse* first;
    if (inner.succeeded) {
      c.rev = r.header.revision;
      first = &inner.responses[1].get();
    } else {
      if (const auto* kv = inner.responses[1].get().first()) c.rev = kv->create_revision;
      first = &inner.responses[2].get();
    }
    // Not the owner: the engine reads the predecessor before it waits.
    if (c.rev != 0 && first->first() && first->first()->create_revision == c.rev) {
      c.verdict = Verdict{.holds = true, .revision = r.header.revision};
    }
    return c;
  }

  // Our key, and the last key created before it, at one revision.
  Txn read(const std::string& key, int64_t rev) override {
    const GetOptions predecessor{.prefix = true,
                                 .limit = 1,
                                 .sort_order = SortOrder::kDescend,
                                 .sort_target = SortTarget::kCreate,
                                 .keys_only = true,
                                 .max_create_revision = rev - 1};
    return Txn().then({Op::get(key, GetOptions{.keys_only = true}), Op::get(prefix, predecessor)});
  }

  Verdict judge(const TxnResponse& r, int64_t) override {
    const auto* pred = r.responses[1].get().first();
    if (!pred) return Verdict{.holds = true};
    const int64_t from = r.header.revision + 1;
    return Verdict{.wait = WaitFor{.key = pred->key,
                                   .options = WatchOptions{.filter_puts = true},
                                   .recheck = key_changed(pred->key, from, /*puts=*/false)}};
  }

  HoldSpec hold_spec() override {
    return HoldSpec{.watch_key = settings_.watch_key,
                    .record_loss = settings_.record_loss,
                    .noun = settings_.noun,
                    .family = settings_.family,
                    .labels = settings_.labels,
                    .release_requests = settings_.release_requests};
  }
  const std::string& family() const override { return settings_.family; }
  const Labels& labels() const override { return settings_.labels; }
  std::string waiting_for() const override { return settings_.noun == "lock" ? "the lock" : settings_.noun; }

 private:
  static GetOptions first_created() {
    return GetOptions{.prefix = true,
                      .limit = 1,
                      .sort_order = SortOrder::kAscend,
                      .sort_target = SortTarget::kCreate,
                      .keys_only = true};
  }
  const LowestKeySettings settings_;
};

}  // namespace etcd::recipes::detail
