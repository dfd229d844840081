// Inspection: which recipe each key under a prefix belongs to, and what that
// recipe's state means — a plain data model, read from keys alone. Pure: no
// client, no I/O, no output. You read the keys (one Range, or pages at one
// revision), build_report() recognizes them, and you render the Report as
// you like: `etcd-recipes inspect` prints it as text and JSON, its demo
// draws a live view from it, and a dashboard or an exporter can do the same.
//
//   namespace in = etcd::recipes::inspect;
//   etcd::GetResponse got = client.get("/app/", {.prefix = true}).wait().value();
//   in::Report report = in::build_report(std::move(got.kvs), got.header.revision);
//   for (const in::Recipe& r : report.recipes)
//     std::cout << in::kind_id(r.kind) << " " << r.name << ": " << in::total(r, in::Role::kHolder)
//               << " holding, " << in::total(r, in::Role::kWaiting) << " waiting\n";
//
// Recognition is by the key layouts each recipe's header documents (their
// segments are spelled once, in the library, for the recipes and for this),
// checked in this order — the first that matches a key decides:
//   NAME/read/<contender>, NAME/write/<contender>  rwlock
//   NAME/holders/<hex>-<n>, NAME/permits "N"       semaphore (holders layout)
//   NAME/slots/<i>, NAME/queue/<contender>,
//     NAME/permits "N ordered"                     semaphore (ordered layout)
//   NAME/items/*, NAME/producers/<16 hex>,
//     NAME/claims/*, NAME/dead/*                   queue, priority queue or work queue
//   NAME/parties/*, NAME/ready, NAME/gave-up       count barrier or double barrier
//   NAME/set-by (no lease), and NAME itself        barrier (the gate)
//   NAME/receipts/*, and NAME itself               counter
//   NAME/<contender> on that very lease            lock or election (one layout: etcd's Go
//                                                  concurrency package's; values do not tell
//                                                  them apart)
//   BASE/SERVICE/ID holding that instance's JSON   service instances under BASE
//   a decimal int64 without a lease                counter
//   any other key with a lease                     transient key
//   anything else                                  a plain key
// where <contender> is a lease id in lower-case hex (the Go layout) or
// ~<R>-<lease>-<n> naming the key's own lease (the ordered layout,
// RecipeOptions::contender_layout).
//
// Bounded summaries. A recipe's collections (a queue's items, a lock's
// contenders, a service's instances, ...) may hold millions of keys. A
// reader that does not want them all asks collection_of() which collection
// a key belongs to and how its head is found, reads that collection's exact
// size (a count_only Range) and only its head, and passes the sizes to
// build_report(): the Recipe then carries the totals, total() counts by
// them, and unread() says how many keys were left out. The report of a
// summary costs what was read, whatever the prefix holds.
//
// Cost: build_report() sorts the keys it is given (O(n log n)) and decodes
// each value at most once (work records, dead letters, service instances).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "etcd/kv.h"
#include "etcd/recipes/service_instance.h"

namespace etcd::recipes::inspect {

// The kind of recipe a group of keys is.
enum class Kind {
  kLockOrElection,  // DistributedMutex, or an election's candidates (same layout)
  kRwLock,          // DistributedReadWriteLock
  kSemaphore,       // DistributedSemaphore, either layout
  kQueue,           // DistributedQueue
  kPriorityQueue,   // DistributedPriorityQueue
  kWorkQueue,       // DistributedWorkQueue
  kGate,            // DistributedBarrier
  kCountBarrier,    // DistributedBarrierWithCount
  kDoubleBarrier,   // DistributedDoubleBarrier
  kBarrier,         // NAME/parties/ or NAME/ready whose keys do not say which of the two
  kCounter,         // DistributedAtomicLong
  kServices,        // ServiceRegistry's instances under a base path
  kTransient,       // a key with a lease that no layout claims (TransientKeyValue, ...)
  kPlain,           // any other key
};
// A stable identifier of the kind, for machines (JSON, metric labels):
// "lock_or_election", "rwlock", "semaphore", "queue", "priority_queue",
// "work_queue", "barrier" (the gate), "count_barrier", "double_barrier",
// "count_or_double_barrier", "counter", "services", "transient", "key".
const char* kind_id(Kind kind);

// One key's part in its recipe.
enum class Role {
  kHolder,    // holds: a lock's or a leader's key, a writer's or reader's, a semaphore permit
  kWaiting,   // queued behind the holders (entries are in the order they will be served)
  kPermits,   // a semaphore's NAME/permits
  kItem,      // a queue item (work queue: not claimed)
  kClaimed,   // a work-queue item with a claim: in flight
  kClaim,     // a work queue's NAME/claims/<id> whose item was not read (or is gone)
  kDead,      // a work queue's dead letter NAME/dead/<id>
  kProducer,  // a queue's NAME/producers/<p>
  kParty,     // a barrier party
  kReady,     // a count or double barrier's NAME/ready
  kGaveUp,    // a count barrier's NAME/gave-up
  kGateKey,   // a gate's NAME
  kSetBy,     // a gate's NAME/set-by
  kValue,     // a counter's NAME
  kReceipt,   // a counter's NAME/receipts/...
  kInstance,  // a service instance
  kKey,       // a transient or plain key
};
// A stable identifier of the role: "holder", "waiting", "permits", "item",
// "in_flight", "claim", "dead_letter", "producer", "party", "ready",
// "gave_up", "gate", "set_by", "value", "receipt", "instance", "key".
const char* role_id(Role role);

// One key, and what its recipe's layout says of it. A holder's or waiter's
// fencing token is its kv.create_revision.
struct Entry {
  Role role = Role::kKey;
  etcd::KeyValue kv;
  std::string mode;       // rwlock: "read" or "write" (a downgraded write key: "read")
  std::string id;         // queue item / claim / dead letter id (the key's last segment); service instance id
  int64_t priority = -1;  // priority queue items: 0..65535, lower first; -1 otherwise
  // Work queue: the deliveries counted so far (a claimed item: this claim's attempt number).
  int64_t deliveries = 0;
  int64_t not_before_ms = 0;  // work queue items: not ready before this time (ms since the epoch); 0: ready
  std::string claimed_by;     // claimed items: the claim's value (the consumer's client id)
  int64_t claim_lease = 0;    // claimed items: the claim's lease (the consumer's visibility timeout)
  std::string reason;         // dead letters: why
  int64_t since_ms = 0;       // dead letters: dead since (ms since the epoch)
  std::string payload;        // work queue items and dead letters: the value without the record line
  std::optional<etcd::recipes::ServiceInstance> instance;  // service instances: the decoded instance
};

struct Recipe {
  Kind kind = Kind::kPlain;
  std::string name;  // the recipe's NAME (services: BASE; transient and plain keys: the key)
  // In the recipe's own order: holders first then waiters (by create
  // revision, the permit count first), items in the order they are served
  // (priority, then commit order), barrier parties by creation, everything
  // else by key.
  std::vector<Entry> entries;
  // Exact sizes of the collections that were summarised (only their head
  // is in `entries`), by the collection's last path segment: "items",
  // "claims", "dead", "holders", "queue", "read", "write", "parties",
  // "receipts", a service's name, or "" for a lock's contenders (NAME/
  // itself). Empty when every key was read.
  std::map<std::string, int64_t> totals;
  std::optional<int64_t> permits;  // semaphore: N from NAME/permits (none: missing or unreadable)
  std::optional<int64_t> value;    // counter: its value (none: absent, or not a decimal int64)
};

struct Report {
  int64_t revision = 0;         // the revision the keys were read at
  std::vector<Recipe> recipes;  // by name, then kind
};

// Many keys of one recipe under one directory, which a summary counts and
// reads only the head of.
struct Collection {
  std::string dir;  // "NAME/items/", "NAME/holders/", "NAME/" (contenders), "BASE/SERVICE/", ...
  enum class Head {
    kByKey,       // the first keys by name (dead letters, receipts, instances)
    kByCreation,  // the first by create revision: who holds, who waits next
    kPerGroup,    // queue items: the first key of each producer (the key up to its last '-'),
                  // whose oldest is the queue's head
  } head = Head::kByKey;
};
// The collection `kv` is a member of, if any (by the layouts above).
std::optional<Collection> collection_of(const etcd::KeyValue& kv);

// Recognizes `kvs`: every key read (any order), at `revision`.
Report build_report(std::vector<etcd::KeyValue> kvs, int64_t revision);
// The same for a summary: `totals` is the exact size of each collection (by
// Collection::dir) of which only some keys were read.
Report build_report(std::vector<etcd::KeyValue> kvs, int64_t revision, const std::map<std::string, int64_t>& totals);

// How many of the recipe's entries (the keys read) have `role`.
int64_t count(const Recipe& recipe, Role role);
// The same for the whole recipe: from its totals where a collection was
// summarised (a work queue's kItem: the items not in flight).
int64_t total(const Recipe& recipe, Role role);
// How many keys of its summarised collections were not read.
int64_t unread(const Recipe& recipe);
// Whether total(recipe, role) counts keys that were not read: a summary
// summarised the collection they are in (only its head is in `entries`).
bool summarised(const Recipe& recipe, Role role);

}  // namespace etcd::recipes::inspect
