// DistributedAtomicLong: a 64-bit signed counter in one etcd key.
//
//   etcd::recipes::DistributedAtomicLong hits(client, "/counters/hits");
//   int64_t id = hits.increment().wait().value();       // the value THIS call committed
//   int64_t now = hits.add(10).wait().value();
//   int64_t seen = hits.get().wait().value();           // 0 while the key is absent
//   hits.set(100).wait().value();
//   bool swapped = hits.compare_and_set(100, 0).wait().value();
//   co_await hits.decrement();  hits.add(5).then(...);  hits.add(1).timeout(2s).stop_token(st).wait();
//
// Key layout: the value lives in the key NAME itself, as canonical decimal
// text (IntegerCodec<int64_t>, codec.h), so `etcdctl get NAME` shows it and
// `etcdctl put NAME 41` sets it. An absent key reads as 0. A client that
// adds to the counter also keeps one receipt key,
// NAME/receipts/<client id>-<random> (the number of its last batch of adds,
// a few bytes), shared by its objects of that name and deleted when the
// last of them closes (one Delete, not waited for; a process that dies
// without closing, or a delete that does not get through, leaves that one
// receipt behind).
//
// add(n) / increment() / decrement() — read-modify-write without a lost
// update. The adds of one client to one name (from one object or several,
// from any thread) are combined: at most one guarded Txn of them is in
// flight, the adds that arrive meanwhile wait for it, and the next Txn
// carries all of them (a lone add goes out at once):
//   If mod_revision(NAME) == R Then Put(NAME, v + n1 + ... + nk), Put(receipt, op)
//                              Else Get(NAME), Get(receipt)
// where (v, R) is the value and mod revision the client last saw (R = 0,
// v = 0 for an absent key; nothing seen yet assumes the key is absent,
// which costs nothing when it is not: the failed guard returns the value).
// Each add returns the value its own increment reached, in the order the
// adds arrived (v + n1, v + n1 + n2, ...), so concurrent increments return
// distinct values (usable as ids), as if each had committed alone. A
// failed guard (another client wrote) returns the current value, and the
// batch goes again with it (no extra read), joined by the adds that arrived
// meanwhile, after a jittered back-off that grows with the conflicts of its
// adds (scaled by the last round trip, at most
// AtomicLongOptions::max_backoff). An add that was in max_attempts guarded
// Txns that failed fails with ABORTED ("gave up after N attempts under
// contention"); nothing was written by it.
//
// Unknown outcomes. A Txn whose answer was lost (Errc::kOutcomeUnknown from
// the client: a connection reset, a stranded member, a leader change) may
// or may not have applied. The batch sends the very same Txn again (guard
// R): at most one of the two can apply, since R can never be the key's mod
// revision again once anything was written. If the resent Txn applies, its
// adds committed exactly once. If its guard fails, the receipt it reads in
// the same answer tells: it holds this batch's number exactly when one of
// its attempts applied — then each add returns the value it reached, which
// that attempt committed; otherwise the adds go on as after any conflict. So an add
// resolves exactly as soon as etcd answers again, and 16 incrementers under
// connection resets or a leader kill end exactly at the sum of their
// increments. Only an add whose deadline passes (or that runs out of
// attempts) while its outcome is unresolved fails with UNAVAILABLE
// [outcome_unknown]: it may have committed once, or not at all; never
// twice, and never silently. The guard R = 0 (an absent key) is the
// exception to "R never comes back": a key deleted and created again passes
// it again, so deleting a counter while an add's outcome is being resolved
// may let that add apply in the deleted incarnation and again in the new one.
//
// compare_and_set(expected, desired): one Txn comparing the stored bytes,
//   If value(NAME) == "expected" Then Put(NAME, "desired") Else Get(NAME)
// (for expected 0, "absent or 0": a nested Txn). Canonical text makes
// comparing bytes the same as comparing numbers. true if it wrote. Not
// retried after an unknown outcome (someone could have stored `expected`
// again meanwhile): that is Errc::kOutcomeUnknown.
//
// set(v): one Put, whatever was stored (also how to repair a value that
// does not decode). get(): one linearizable read. Neither is retried after
// an unknown outcome (set's is passed on as Errc::kOutcomeUnknown).
//
// Errors:
//   - a stored value that is not a canonical int64 (written by someone
//     else): DATA_LOSS [decode_failed] naming the key, from get, add and
//     compare_and_set; it is never overwritten by them (set() replaces it);
//   - v + n outside int64: OUT_OF_RANGE, before anything is written;
//   - contention past max_attempts: ABORTED, nothing written by the call;
//   - lifecycle (recipe.h): a bad name is Errc::kBadArgument, after close()
//     Errc::kClosed, both before any I/O.
//
// Costs (round trips = etcd writes, except reads):
//   add, uncontended, the client's cache current (it wrote or read the
//     value last): one Txn (two puts: the value and the receipt). The first
//     add of a client when the key exists, or after another writer: two
//     (the failed guard brings the value).
//   k adds of one client at once: one Txn for all of them (each waits for
//     at most the Txn in flight when it came, then its own); adds per
//     second grow with the adds in flight, up to one batch per round trip.
//   adds of several clients at once: one more Txn per conflict, plus
//     back-off; a failed guard is a write request etcd passes through raft
//     (no revision).
//   compare_and_set, set, get: one round trip each.
//
// The object is a counter, not a waiter: no watch, no session, no lease.
//
// Metrics (label `counter`): etcd_recipes_counter_adds_total (committed
// adds), _txns_total (guarded Txns sent: fewer than the adds when adds were
// combined), _conflicts_total (failed guards), _gave_up_total (max_attempts
// reached), _outcome_unknown_total (adds that ended unknown),
// _unknown_resolved_total (an add of an unknown attempt resolved by the
// receipt).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

struct AtomicLongOptions {
  RecipeOptions recipe{};
  // Guarded Txns that may carry one add (the first and the retries after
  // conflicts or unknown outcomes); at least 1. Also bounded by the call's
  // deadline.
  int max_attempts = 1000;
  // The longest back-off between two attempts of one add.
  std::chrono::milliseconds max_backoff{50};
};

namespace detail {
class AtomicLongState;
}  // namespace detail

class DistributedAtomicLong : public RecipeHandle {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle). Invalid options
  // (max_attempts < 1, a negative max_backoff) are kept and reported by
  // start() and every operation (Errc::kBadArgument).
  DistributedAtomicLong(Client client, std::string name);
  DistributedAtomicLong(Client client, std::string name, RecipeOptions options);
  DistributedAtomicLong(Client client, std::string name, AtomicLongOptions options);
  DistributedAtomicLong(DistributedAtomicLong&&) noexcept = default;
  DistributedAtomicLong& operator=(DistributedAtomicLong&&) noexcept = default;

  // The stored value (0 if the key is absent). One read.
  Call<int64_t> get();
  // Stores `value`, whatever was there. One Put.
  Call<void> set(int64_t value);
  // Adds `delta` (may be negative or 0); the value this call committed.
  Call<int64_t> add(int64_t delta);
  Call<int64_t> increment() { return add(1); }
  Call<int64_t> decrement() { return add(-1); }
  // Stores `desired` if the value is `expected` (an absent key is 0);
  // true if it did.
  Call<bool> compare_and_set(int64_t expected, int64_t desired);

 private:
  std::shared_ptr<detail::AtomicLongState> state_;
};

}  // namespace etcd::recipes
