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
//
// A summary (the default) does not read a recipe's many keys: a collection
// (a queue's items, a lock's contenders, a service's instances, ...) that
// does not fit in one page is counted (count_only) and only its head is read
// (collection_of names the collections and how their head is found); the
// totals come with the keys, and rendering lists at most a few lines per
// recipe. `inspect --all` reads and lists every key.
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
  // Exact sizes of the collections that were summarised (only their head
  // is in `entries`), by the collection's last path segment: "items",
  // "claims", "dead", "holders", "read", "write", "parties", "receipts", a
  // service's name, or "" for a lock's contenders (NAME/ itself).
  std::map<std::string, int64_t> totals;
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

// Many keys of one recipe under one directory, which a summary counts and
// reads only the head of.
struct Collection {
  std::string dir;  // "NAME/items/", "NAME/holders/", "NAME/" (contenders), "BASE/SERVICE/", ...
  enum class Head {
    kByKey,       // the first keys by name (dead letters, receipts, instances)
    kByCreation,  // the first by create revision: who holds, who waits next
    kPerGroup,    // queue items: the first key of each producer (`<...>-` up to the last '-'), whose
                  // oldest is the queue's head
  } head = Head::kByKey;
};
// The collection whose member `kv` is, if it is one (by the layouts above).
std::optional<Collection> collection_of(const etcd::KeyValue& kv);

// `kvs`: every key read (any order), at `revision`; `totals`: the exact
// size of each collection (by Collection::dir) of which only some keys were read.
Report build_report(std::vector<etcd::KeyValue> kvs, int64_t revision,
                    const std::map<std::string, int64_t>& totals = {});

// Counts of a recipe's entries by role (the keys read).
int64_t count(const Recipe& recipe, Role role);
// The same, for the whole recipe: from its totals where a collection was summarised.
int64_t total(const Recipe& recipe, Role role);
// The keys of its summarised collections that were not read.
int64_t unread(const Recipe& recipe);

struct RenderLimits {
  size_t lines_per_recipe = 0;  // detail lines under each headline; 0: every one
  size_t recipes = 0;           // recipe blocks; 0: every one
};

// One block per recipe: a headline, then indented lines. `leases`: what
// was learned of each lease the keys carry; `now_ms`: this host's clock
// (work queue delays, dead letters' ages).
std::vector<std::string> render_text(const Report& report, const Leases& leases, int64_t now_ms,
                                     RenderLimits limits = {});

// A value as text output shows it: quoted, bytes that are not printable
// escaped, cut after `max` bytes with "...".
std::string excerpt(std::string_view bytes, size_t max = 60);
// "lease 694d7d5b2bad7c0b, TTL 7/10 s" ("expired" when gone).
std::string lease_words(int64_t lease, const Leases& leases);

}  // namespace etcd_cli::inspect
