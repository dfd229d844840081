// Barriers: everyone waits until everyone is ready.
//
//   // A gate someone opens.
//   etcd::recipes::DistributedBarrier gate(client, "/jobs/nightly/gate");
//   gate.set().wait().value();            // true: it was open
//   ...                                   // elsewhere: gate.wait().wait().value(); or gate.wait_for(30s)
//   (void)gate.remove().wait();           // opens it for every waiter (whoever set it)
//
//   // N parties, no gatekeeper.
//   etcd::recipes::DistributedBarrierWithCount rendezvous(client, "/jobs/nightly/start", 16);
//   if (!rendezvous.wait_for(60s)) { ... }  // false: fewer than 16 came in time (this party left)
//
//   // Enter together, leave together.
//   etcd::recipes::DistributedDoubleBarrier phase(client, "/jobs/nightly/phase", 4);
//   phase.enter().wait().value();  ...work...  phase.leave().wait().value();
//
// All three are recipes as every other (recipe.h: the constructor does no
// I/O, close() is idempotent and ends parked waits with Errc::kClosed). The
// keys a party or a setter writes are bound to a presence lease of the
// object's own (etcd/presence.h, TTL RecipeOptions::session_ttl): they
// vanish when the owner dies, and heal — only where still free and still
// meaningful — when the owner was merely cut off past its TTL. No thread
// per waiter: each object keeps one watch, however many calls wait on it.
// The design, the keys and each Txn are in docs/recipes/barriers.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

namespace detail {
class GateState;
class RendezvousState;
class DoubleBarrierState;

// The blocking form of a barrier's wait: false when the time ran out;
// throws etcd::Error for anything else.
bool wait_until(Call<void> call, Deadline deadline);
}  // namespace detail

// A gate: set() closes it, remove() opens it, wait() returns once it is
// open. Keys: NAME (the gate: the setter's client id, under the setter's
// lease — the key etcd's Go recipe Barrier uses, so its Hold/Release/Wait
// and ours interoperate) and NAME/set-by (the durable record that the gate
// was set and not removed since; no lease).
//
// The gate is closed while either key exists. A setter cut off from etcd
// past its TTL loses NAME with its lease, but NAME/set-by stays: waiters
// are NOT released by a lease expiry (a partitioned setter never opens the
// gate by accident). The setter heals: once it has a new lease it
// re-creates NAME, only if NAME is free and NAME/set-by is still the record
// it wrote (if someone removed the gate meanwhile, it stays open). A setter
// that dies for good leaves the gate set until someone calls remove() —
// the gate is explicit state, as in Curator; waiters bound their wait with
// a deadline. close() of the setter does not open the gate either.
struct GateOptions {
  // A wait that finds the gate open (never set, or removed already) blocks
  // until the gate is set and then removed, instead of returning at once.
  bool wait_until_set = false;
};

class DistributedBarrier : public RecipeHandle {
 public:
  // Do no I/O. Invalid input (a bad name, a session_ttl below 1 s) is
  // reported by start() and every operation (Errc::kBadArgument).
  DistributedBarrier(Client client, std::string name);
  DistributedBarrier(Client client, std::string name, RecipeOptions options);
  DistributedBarrier(Client client, std::string name, RecipeOptions options, GateOptions gate);
  DistributedBarrier(DistributedBarrier&&) noexcept = default;
  DistributedBarrier& operator=(DistributedBarrier&&) noexcept = default;

  // Closes the gate under this object's lease: true if it was open, false
  // if it was set already (nothing written; a gate whose setter's lease
  // lapsed is adopted: this object keeps it alive from now on). One Txn
  // (and the lease grant on first use).
  Call<bool> set();
  // Opens the gate, whoever set it: true if it was set. One Txn. Waiters
  // are released by its watch event (one per waiting object).
  [[nodiscard]] Call<bool> remove();
  // Completes once the gate is open (at once if it is, unless
  // GateOptions::wait_until_set). No deadline unless given one
  // (etcd/call.h); a deadline, the stop token and close() end it
  // (kDeadlineExceeded / kCancelled / kClosed).
  Call<void> wait();
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_until(wait(), Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
  }
  // This object set the gate and keeps it (advisory).
  bool is_set_by_me() const;

 private:
  std::shared_ptr<detail::GateState> state_;
};

// N parties meet: wait() returns once N parties are waiting. No
// gatekeeper; a party that gives up (deadline, stop token, close) or dies
// (its lease expires) stops counting. Each wait() call is one party (an
// object may carry several, e.g. one per thread).
//
// Keys: NAME/parties/<id> (one per waiting party, under the object's
// lease), NAME/ready (written by the arrival that completes a round),
// NAME/gave-up (touched by every party that gives up), these two under a
// record lease (see Rounds). An arrival is one
// Txn: put its key and count the parties at that revision. The arrival that
// counts N completes the round with one more Txn, guarded so that it
// counts exactly the parties present (no arrival, no give-up and no
// completion since its count): it deletes the round's party keys and puts
// NAME/ready. Waiters watch NAME/ready only, so a rendezvous of N parties
// costs N + 1 writes and wakes each waiting object once.
//
// A party cut off past its TTL loses its key (and is not counted while it
// is gone); it re-arrives with a new lease if the round is still open. A
// party whose round completed while it was cut off is released. A party
// that gives up exactly as the round completes is told the truth: its
// wait() succeeds if the round counted it, else it fails and it did not
// count.
//
// Rounds: one name serves every round, one after the other: the next N
// wait() calls after a round completed make the next round; a new name per
// round works as well. The round's party keys go with it. NAME/ready and
// NAME/gave-up are what tells a party that was cut off whether its round
// completed; they are written under a lease of their own that is never
// kept alive, so that they stay for at least
// CountBarrierOptions::outcome_window after their last write (at most
// twice that) and then vanish: a name that is no longer used leaves
// nothing behind. A party cut off for less than the window learns its
// round's outcome as above. One cut off for longer, whose round completed
// meanwhile, may find no record of it: it arrives again and waits for (and
// counts in) the next round on the name, never released by a round it was
// not there for.
struct CountBarrierOptions {
  // How long the records of a round outlive their last write (at least
  // 1 s). Longer than any cut-off a party must survive and still learn its
  // round's outcome; each object grants one lease per window when it
  // completes a round or gives up.
  std::chrono::seconds outcome_window{3600};
};

class DistributedBarrierWithCount : public RecipeHandle {
 public:
  // Do no I/O. parties < 1 is Errc::kBadArgument (reported by start() and
  // every operation).
  DistributedBarrierWithCount(Client client, std::string name, int64_t parties);
  DistributedBarrierWithCount(Client client, std::string name, int64_t parties, RecipeOptions options);
  // outcome_window below 1 s is Errc::kBadArgument (as parties < 1).
  DistributedBarrierWithCount(Client client, std::string name, int64_t parties, RecipeOptions options,
                              CountBarrierOptions barrier);
  DistributedBarrierWithCount(DistributedBarrierWithCount&&) noexcept = default;
  DistributedBarrierWithCount& operator=(DistributedBarrierWithCount&&) noexcept = default;

  int64_t parties() const;
  // Arrives as one party and completes once N parties have arrived (this
  // one included); no deadline unless given one (etcd/call.h). By the
  // deadline given or the stop token, the party leaves
  // (guarded: see above) and the call fails with kDeadlineExceeded /
  // kCancelled.
  Call<void> wait();
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_until(wait(), Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
  }
  // Parties waiting now, as etcd has them (one Range).
  Call<int64_t> waiting();

 private:
  std::shared_ptr<detail::RendezvousState> state_;
};

// N parties enter together and leave together. enter() arrives and
// completes once N parties are in (a round starts); leave() departs and
// completes once every party of the round has left. A party that dies
// leaves by its lease. One object is one party.
//
// Keys: NAME/parties/<id> (this party, under the object's lease; also what
// etcd's Go recipe DoubleBarrier uses as NAME/waiters — not compatible:
// ours is NAME/parties), NAME/ready (the round: put by the arrival that
// makes N, deleted by the last party out). An enter() that finds a round
// in progress (NAME/ready exists) waits for it to end before it arrives:
// rounds never mix. Each object watches NAME/ (its parties and the ready
// key), so a party wakes once per arrival and departure of the round.
class DistributedDoubleBarrier : public RecipeHandle {
 public:
  DistributedDoubleBarrier(Client client, std::string name, int64_t parties);
  DistributedDoubleBarrier(Client client, std::string name, int64_t parties, RecipeOptions options);
  DistributedDoubleBarrier(DistributedDoubleBarrier&&) noexcept = default;
  DistributedDoubleBarrier& operator=(DistributedDoubleBarrier&&) noexcept = default;

  int64_t parties() const;
  // Completes once N parties (this one included) have entered; no deadline
  // unless given one (etcd/call.h). By the deadline given or the stop token
  // the party withdraws (its key is deleted) and
  // the call fails; kFailedPrecondition if this object is in already.
  Call<void> enter();
  // Deletes this party's key and completes once every party of the round
  // has left (or died). kFailedPrecondition if this object has not
  // entered. No deadline unless given one (etcd/call.h); by the deadline
  // given or the stop token the call fails, and the party
  // has left all the same (its key is gone).
  Call<void> leave();
  template <class Rep, class Period>
  bool enter_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_until(enter(), Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
  }
  template <class Rep, class Period>
  bool leave_for(std::chrono::duration<Rep, Period> d) {
    return detail::wait_until(leave(), Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
  }
  // This object entered and has not left.
  bool entered() const;

 private:
  std::shared_ptr<detail::DoubleBarrierState> state_;
};

}  // namespace etcd::recipes
