// Reaping bookkeeping keys: the few keys some recipes keep without a lease,
// which a process that crashed (or a close() whose delete did not get
// through) leaves behind. reap() finds them under a prefix and removes
// those no live process can need, each with a guarded delete.
//
//   etcd::recipes::ReapReport r = etcd::recipes::reap(client, "/app/", {.idle =
//   std::chrono::minutes(10)}).wait().value(); for (const auto& k : r.keys) std::cout << k.key << (k.reaped ? " reaped"
//   : " kept: " + k.kept_because) << "\n"; etcd::recipes::reap(client, "/app/", {.idle = 1min, .dry_run = true});   //
//   what it would remove
//
// The keys, and why removing each is safe:
//
//   NAME/producers/<p>   a queue's producer key (DistributedQueue,
//     DistributedPriorityQueue, DistributedWorkQueue: queue.h). It guards a
//     retried enqueue of one live queue object. Removed when its mod
//     revision did not move for `idle`:
//       (read at the start)  ... wait idle ...
//       If mod_revision(NAME/producers/<p>) == M Then Delete(NAME/producers/<p>)
//     A live producer that was idle loses nothing: its next enqueue finds
//     the key gone (its guard fails), sees that no attempt of that enqueue
//     can have applied, and writes again creating the key (one more round
//     trip, never a duplicate). Its guard can never be satisfied by a stale
//     attempt either: every attempt compares the key's mod revision of the
//     producer's previous enqueue, which the key never has again. The one
//     exception is a producer's first enqueue, guarded by the key's
//     absence: an attempt of it still on its way to etcd `idle` after the
//     key was written could apply again. Keep `idle` far above your
//     enqueue deadlines (a request is applied or refused within seconds).
//
//   NAME/receipts/<client>-<r>   a counter's receipt (DistributedAtomicLong:
//     atomic_long.h). It tells a client whether an add whose outcome was
//     unknown applied. Removed when its mod revision did not move for
//     `idle`, guarded the same way. A live, idle client loses nothing: its
//     next add writes the receipt again in its Txn. An add still resolving
//     an unknown outcome needs it, and it resolves as soon as etcd answers
//     that client again; so `idle` must be longer than any client can stay
//     cut off from etcd with an add in flight (a client whose adds have a
//     deadline shorter than `idle` is always safe).
//
//   NAME/permits   a semaphore's permit count (DistributedSemaphore:
//     semaphore.h), stored once without a lease. Removed when nobody holds
//     or waits, in one Txn:
//       If mod_revision(NAME/permits) == M && no key under NAME/holders/,
//          NAME/slots/, NAME/queue/ (create_revision over each range == 0)
//       Then Delete(NAME/permits)
//     No wait is needed: every acquisition creates its key in one Txn that
//     stores NAME/permits when it is absent (or checks it when present), so
//     an acquisition that commits after the delete stores it again, and one
//     that committed before makes the guard fail. (This is also how a
//     semaphore's N is changed: the next acquirer's N is stored.)
//
// Nothing else is touched: keys on a lease go with their lease, and items,
// claims, dead letters, holders, parties and values are never reaped.
// Recognition is inspect.h's (the first layout that matches a key
// decides), so a key of your own shaped like one of these under the same
// prefix would be taken for it: give reap() a prefix that holds only
// recipes.
//
// Cost: one keys-only read per 1,000 keys under the prefix (the scan), one
// read of each candidate's value (up to 64 per Txn), the wait, then one Txn
// per candidate (a write only when it deletes). dry_run does the same reads
// and the same guards with nothing in the Txn's success branch: it writes
// nothing, and reports what would have been removed then.
//
// The call waits `idle` on the client's executor (a timer, no thread); its
// stop token ends the wait (kCancelled, nothing deleted), and a deadline
// that comes before the wait ends is refused at once (kDeadlineExceeded,
// nothing read).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/inspect.h"

namespace etcd::recipes {

struct ReapOptions {
  // How long a producer key or a counter receipt must stay unchanged
  // before it is removed (see above for how long is safe). 0 removes what
  // is unchanged between the read and the delete: only for keys you know
  // to be abandoned (a test, a namespace nobody uses any more).
  std::chrono::milliseconds idle{std::chrono::minutes(10)};
  // Report, delete nothing.
  bool dry_run = false;
};

// One bookkeeping key reap() found.
struct ReapedKey {
  std::string key{};
  std::string recipe{};                        // the NAME of its recipe
  inspect::Kind kind = inspect::Kind::kPlain;  // kQueue, kPriorityQueue, kWorkQueue, kCounter or kSemaphore
  inspect::Role role = inspect::Role::kKey;    // kProducer, kReceipt or kPermits
  int64_t mod_revision = 0;                    // as first read
  bool reaped = false;                         // deleted (dry_run: would have been)
  std::string kept_because{};                  // why not, when not reaped
};

struct ReapReport {
  int64_t revision = 0;  // the revision of the scan
  std::vector<ReapedKey> keys{};
  size_t reaped() const {
    size_t n = 0;
    for (const auto& k : keys) n += k.reaped ? 1 : 0;
    return n;
  }
};

// Finds the bookkeeping keys under `prefix` (a key prefix: "/app/" or
// "/app/jobs/") and removes the ones that are safe to remove (above). An
// empty prefix is Errc::kBadArgument: reap() never scans a whole keyspace
// by accident. A negative idle is Errc::kBadArgument.
Call<ReapReport> reap(Client client, std::string prefix, ReapOptions options);

}  // namespace etcd::recipes
