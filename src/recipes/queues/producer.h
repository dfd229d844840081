// The enqueue side of a queue (internal): items created under one producer
// key's guard, one Txn at a time per queue object, the callers that came
// meanwhile grouped into the next Txn. Why the guard makes a retried
// enqueue safe: include/etcd/recipes/queue.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "../core/client_link.h"
#include "../core/recipe_core.h"
#include "etcd/call.h"
#include "etcd/recipes/queue.h"
#include "etcd/txn.h"
#include "item_key.h"

namespace etcd::recipes::detail {

class QueueProducer : public std::enable_shared_from_this<QueueProducer> {
 public:
  // Items per Txn when callers are grouped (an enqueue_all is never split,
  // and may be larger on its own: the server's --max-txn-ops decides).
  static constexpr size_t kMaxGroupedItems = 100;
  // And bytes of values: etcd refuses a request over --max-request-bytes
  // (1.5 MiB by default), so grouped callers stay well under it.
  static constexpr size_t kMaxGroupedBytes = 1024 * 1024;
  // How old the revision an item key is named with may be (item_key.h):
  // an object whose last enqueue is older reads the current one first, so
  // that its items sort near the commit order (a consumer's window then
  // finds the head among the first keys).
  static constexpr std::chrono::seconds kFreshRevision{1};

  // `items`: NAME/items/; `producers`: NAME/producers/. The producer id is
  // drawn at random.
  QueueProducer(std::shared_ptr<RecipeCore> core, std::string items, std::string producers, Labels labels);

  // Creates `values` at the tail, in order, in one Txn (see the file comment).
  // Their keys are NAME/items/<key_prefix>~<R>-<producer>-<seq>
  // (item_key.h; the priority queue puts the priority in key_prefix);
  // callers with different prefixes may share a Txn.
  void enqueue(std::vector<std::string> values, const CallOptions& options, Callback<Enqueued> done,
               std::string key_prefix = {});

  // At close(): deletes the producer key if that is safe — no enqueue in
  // flight and none that ever ended with an unknown outcome (a stale
  // attempt of one, guarded by the key's absence, could otherwise still
  // apply) — guarded by the revision of our last enqueue. Fire and forget.
  void close();

  const std::string& id() const { return id_; }
  const std::string& key() const { return key_; }

 private:
  struct Caller {
    std::vector<std::string> values;
    std::string key_prefix;
    Callback<Enqueued> done;
    std::optional<Deadline> deadline;
    std::stop_token stop;
    std::shared_ptr<ClientLink> link;
  };
  struct Batch {
    std::vector<Caller> callers;
    std::vector<std::vector<std::string>> keys;  // per caller, named at the first attempt
    uint64_t first_seq = 0;
    uint64_t last_seq = 0;
    // An attempt ended with Errc::kOutcomeUnknown: it may have applied.
    bool maybe_applied = false;
    int attempts = 0;
    std::optional<Deadline> deadline;  // the earliest of the callers'
    std::shared_ptr<ClientLink> link;
  };

  // Under mu_: the next batch from pending_, or none (and sending_ off).
  std::shared_ptr<Batch> next_batch_locked(std::vector<Caller>& refused);
  struct Next {
    std::shared_ptr<Batch> batch;
    std::vector<Caller> refused;  // gave up while waiting for their turn
  };
  Next take_next();
  void go(Next next);
  void send_next() { go(take_next()); }
  void send(std::shared_ptr<Batch> batch);
  // Names the batch's keys with the revision R of item_key.h: the newest
  // one this object has seen, read first (one serializable Get) when it
  // has none or its last enqueue is older than kFreshRevision.
  void name_keys(const std::shared_ptr<Batch>& batch);
  void write(const std::shared_ptr<Batch>& batch);
  void seen(int64_t revision);  // under mu_
  void on_result(const std::shared_ptr<Batch>& batch, Result<TxnResponse> r);
  void retry_later(std::shared_ptr<Batch> batch, Status why);
  void complete(const std::shared_ptr<Batch>& batch, int64_t revision);
  void fail(const std::shared_ptr<Batch>& batch, const Status& why);

  const std::shared_ptr<RecipeCore> core_;
  const std::string items_;
  const std::string id_;
  const std::string key_;
  const Labels labels_;

  std::mutex mu_;
  std::deque<Caller> pending_;
  bool sending_ = false;
  uint64_t next_seq_ = 1;
  // The producer key's mod revision after our last enqueue (0: none yet).
  int64_t guard_ = 0;
  // The newest revision this object has seen (item_key.h's R), and when.
  int64_t seen_ = 0;
  Clock::time_point seen_at_{};
  // An attempt ended with Errc::kOutcomeUnknown at some point.
  bool ever_unknown_ = false;
};

}  // namespace etcd::recipes::detail
