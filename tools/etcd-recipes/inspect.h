// `etcd-recipes inspect`: which recipe each key under a prefix belongs to,
// and what that recipe's state means. Pure (no client, no output), so the
// unit tests drive it with hand-made keys; the command reads the keys and
// leases and prints what this returns.
//
// Recognition is by the key layouts docs/recipes/*.md document, checked in
// this order (the first that matches a key decides):
//   NAME/read/<hex>, NAME/write/<hex>            rwlock
//   NAME/holders/<hex>-<n>, NAME/permits (N)     semaphore
//   NAME/items/*, NAME/producers/<16 hex>,
//   NAME/claims/*, NAME/dead/*                   queue, priority queue or work queue
//   NAME/parties/*, NAME/ready, NAME/gave-up     count barrier or double barrier
//   NAME/set-by (no lease), and NAME itself      barrier (gate)
//   NAME/receipts/*, and NAME itself             counter
//   NAME/<lease id in hex> on that very lease    lock or election (one layout: etcd's Go
//                                                concurrency package; values do not tell them apart)
//   BASE/SERVICE/ID holding that instance's JSON service instances under BASE
//   a decimal int64 without a lease              counter
//   any other key with a lease                   transient key
//   anything else                                a plain key
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "etcd/kv.h"
#include "etcd/recipes/service_instance.h"

namespace etcd_cli::inspect {

enum class Kind {
  kLockOrElection,
  kRwLock,
  kSemaphore,
  kQueue,
  kPriorityQueue,
  kWorkQueue,
  kGate,
  kCountBarrier,
  kDoubleBarrier,
  kBarrier,  // NAME/parties/ or NAME/ready whose keys do not say which of the two
  kCounter,
  kServices,
  kTransient,
  kPlain,
};
// The kind as printed and in JSON: "lock_or_election", "work_queue", ...
const char* kind_id(Kind kind);
// As the text output says it: "lock or election", "work queue", ...
const char* kind_words(Kind kind);

// What the command learned of a lease (LeaseTimeToLive, just after the read).
struct LeaseTtl {
  int64_t ttl = -1;  // remaining seconds; -1: expired (or revoked) since the read
  int64_t granted = 0;
};
using Leases = std::map<int64_t, LeaseTtl>;

// One key's part in a recipe.
enum class Role {
  kHolder,    // holds (lock, leader, writer, reader, semaphore permit)
  kWaiting,   // queued behind the holders
  kPermits,   // a semaphore's NAME/permits
  kItem,      // a queue item (work queue: not claimed)
  kClaimed,   // a work-queue item with a claim
  kClaim,     // NAME/claims/<id>
  kDead,      // NAME/dead/<id>
  kProducer,  // NAME/producers/<p>
  kParty,     // a barrier party
  kReady,     // a barrier's NAME/ready
  kGaveUp,    // a count barrier's NAME/gave-up
  kGateKey,   // a gate's NAME
  kSetBy,     // a gate's NAME/set-by
  kValue,     // a counter's NAME
  kReceipt,   // a counter's NAME/receipts/...
  kInstance,  // a service instance
  kKey,       // a transient or plain key
};
const char* role_id(Role role);

struct Entry {
  Role role = Role::kKey;
  etcd::KeyValue kv;
  std::string mode;       // rwlock: "read" or "write" (a downgraded write key: "read")
  std::string id;         // queue item / claim / dead letter id; service instance id
  int64_t priority = -1;  // priority queue items
  // Work queue: the deliveries counted so far (a claimed item: this claim's attempt number).
  int64_t deliveries = 0;
  int64_t not_before_ms = 0;  // work queue: a delayed item's time (ms since the epoch)
  std::string claimed_by;     // work queue items: the claim's value (the consumer's client id)
  int64_t claim_lease = 0;
  std::string reason;    // dead letters
  int64_t since_ms = 0;  // dead letters
  std::string payload;   // work queue items and dead letters: the value without the record line
  std::optional<etcd::recipes::ServiceInstance> instance;
};

struct Recipe {
  Kind kind = Kind::kPlain;
  std::string name;  // the recipe's NAME (services: BASE; transient and plain keys: the key)
  // In the recipe's own order: holders first then waiters (by create
  // revision), items in the order they are served, everything else by key.
  std::vector<Entry> entries;
  std::optional<int64_t> permits;  // semaphore: N from NAME/permits
  std::optional<int64_t> value;    // counter
};

struct Report {
  int64_t revision = 0;
  std::vector<Recipe> recipes;  // by name, then kind
};

// `kvs`: every key read (any order), at `revision`.
Report build_report(std::vector<etcd::KeyValue> kvs, int64_t revision);

// Counts of a recipe's entries by role.
int64_t count(const Recipe& recipe, Role role);

// One block per recipe: a headline, then indented lines. `leases`: what
// was learned of each lease the keys carry; `now_ms`: this host's clock
// (work queue delays, dead letters' ages).
std::vector<std::string> render_text(const Report& report, const Leases& leases, int64_t now_ms);

// A value as text output shows it: quoted, bytes that are not printable
// escaped, cut after `max` bytes with "...".
std::string excerpt(std::string_view bytes, size_t max = 60);
// "lease 694d7d5b2bad7c0b, TTL 7/10 s" ("expired" when gone).
std::string lease_words(int64_t lease, const Leases& leases);

}  // namespace etcd_cli::inspect
