// The adds of one client to one counter, combined (internal; the semantics
// users see are in etcd/recipes/atomic_long.h).
//
// Every add is a guarded Txn on the counter's key, and of two guarded Txns
// sent at once with the same guard only one can pass: adds of one process
// sent side by side only make each other fail and try again. So the adds of
// every DistributedAtomicLong of one client on one name go through one
// combiner, which has at most one guarded Txn in flight; the adds that
// arrive meanwhile wait, and the next Txn carries all of them:
//   If mod_revision(NAME) == R
//   Then Put(NAME, v + n1 + ... + nk), Put(receipt, op)
//   Else Get(NAME), Get(receipt)
// Each add is told the value its own increment reached, in the order the
// adds arrived (v + n1, v + n1 + n2, ...), so concurrent increments still
// return distinct values. A lone add goes out at once: combining costs an
// add no latency, and k concurrent adds cost one write instead of k (plus
// the conflicts they would have had).
//
// A batch whose guard fails learns the new value from the answer and goes
// again (after a back-off when another writer won: another process); the
// adds that arrived meanwhile join it. A batch whose answer was lost is
// sent again as the very same Txn, so that at most one of the two applies,
// and the combiner's receipt, read by a failed guard, tells whether one did
// (op is the batch's number). The adds of a batch that may have applied
// stay in it until that is settled; one whose deadline passes meanwhile is
// told its outcome is unknown (it committed once, or not at all).
//
// One combiner per (client, name) while an object of that client and name
// is open; its receipt NAME/receipts/<client id>-<random> is deleted by the
// last of those objects to close.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "../core/client_link.h"
#include "../core/recipe_core.h"
#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/metrics.h"

namespace etcd::recipes::detail {

// The counter's value as a read or a failed guard showed it, with what
// identifies the write that stored it.
struct CounterSeen {
  int64_t value = 0;
  int64_t mod_revision = 0;  // 0: the key is absent
  int64_t create_revision = 0;
  int64_t version = 0;
  int64_t observed_at = 0;  // the header revision of the answer that showed it
};

// The value `kv` holds (absent: 0) as of `header_revision`, or
// DATA_LOSS [decode_failed] naming the key.
Result<CounterSeen> counter_seen(const KeyValue* kv, int64_t header_revision);

// What an object's adds share: where they report, and its limits (made
// once per object).
struct AdderOptions {
  std::shared_ptr<RecipeCore> core;  // its object's: metrics, the name in errors
  Labels labels;
  int max_attempts = 1;
  std::chrono::milliseconds max_backoff{50};
};

// One add, as its object hands it to the combiner.
struct CounterAdd {
  int64_t delta = 0;
  CallOptions options;
  Callback<int64_t> done;
  std::shared_ptr<const AdderOptions> adder;
  std::shared_ptr<ClientLink> link;  // keeps the client while the add lasts

  // The combiner's.
  int attempts = 0;    // guarded Txns that carried it
  int conflicts = 0;   // of those, the ones whose guard failed
  int64_t target = 0;  // the value its increment reaches in the batch in flight
};

class AddCombiner : public std::enable_shared_from_this<AddCombiner> {
 public:
  // The combiner of `client` for the counter `key` (made on first use; a
  // new one once the last object of the previous one left). The caller
  // then belongs to it until leave().
  static std::shared_ptr<AddCombiner> join(const Client& client, const std::string& key,
                                           const std::string& client_id);

  AddCombiner(std::string key, std::string receipt) : key_(std::move(key)), receipt_(std::move(receipt)) {}

  // An object that joined no longer adds (its close()). True when it was
  // the last one and a batch wrote the receipt: the caller deletes it.
  bool leave();

  const std::string& key() const { return key_; }
  const std::string& receipt() const { return receipt_; }

  // Runs `add` alone or in a batch; its done runs exactly once.
  void submit(std::unique_ptr<CounterAdd> add);

  // What the combiner last saw of the counter (every object's reads and
  // writes keep it current; absent until anything was seen).
  CounterSeen cached();
  // Keeps the newest of what was seen.
  void remember(const CounterSeen& s);

 private:
  class Batch;
  friend class Batch;

  bool try_join();
  // With mu_ held: the adds that wait form the next batch (empty: none).
  std::shared_ptr<Batch> next_batch_locked();
  // Starts the next batch, or goes idle when nothing waits.
  void send_next();
  double jitter();

  const std::string key_;
  const std::string receipt_;
  std::mutex mu_;
  int members_ = 0;     // objects that joined and did not leave
  bool retired_ = false;  // the last one left: join() makes a new combiner
  bool wrote_receipt_ = false;
  bool busy_ = false;  // a batch is in flight (or waiting out its back-off)
  std::deque<std::unique_ptr<CounterAdd>> waiting_;
  CounterSeen seen_;
  uint64_t ops_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace etcd::recipes::detail
