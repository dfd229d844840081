// Leader election: LeaderLatch, LeaderSelector and LeaderObserver.
//
//   etcd::recipes::LeaderLatch latch(client, "/elections/scheduler", "10.0.0.7:8080");
//   latch.start();                                   // contends in the background
//   auto sub = latch.on_is_leader([](int64_t term) { start_scheduling(term); });
//   if (latch.await_for(30s)) { ... }                // or co_await latch.await_leadership();
//   latch.hold().guarded(etcd::Txn().then(etcd::Op::put("/jobs/owner", "me"))).wait();
//
//   etcd::recipes::LeaderSelector selector(client, "/elections/compactor", "node-3",
//       [](std::stop_token stop, etcd::recipes::LeaderTerm& term) {
//         while (!stop.stop_requested()) compact_some(term.token());
//       });                                          // runs once per term, on the selector's thread
//   selector.start();
//
//   etcd::recipes::LeaderObserver observer(client, "/elections/scheduler");
//   auto on = observer.on_change([](const std::optional<etcd::recipes::LeaderInfo>& l) { ... });
//   observer.start();
//
// Key layout (the same as etcd's Go `concurrency.Election`, `etcdctl elect`
// and etcd's election service, so Go services, shell scripts and C++
// services share one election): each candidate creates NAME/<its session
// lease id in hex> (create-if-absent), bound to its session's lease, with its
// proposal as the value. The key with the lowest create revision under NAME/
// is the leader; its create revision is the term token, which strictly
// increases from one leader to the next. Every other candidate watches only
// the key created just before its own (FIFO, no thundering herd) and
// re-checks after each wake-up; every wait is anchored (read at revision R,
// watch from R+1). `etcdctl elect --listen NAME` shows our leader's value and
// our LeaderObserver shows etcdctl's.
//
// The ordered layout (RecipeOptions::contender_layout = kOrdered, for
// LeaderLatch and LeaderSelector): candidates create NAME/~<R>-<lease>-<n>
// as the ordered DistributedMutex does (mutex.h): each campaign finds the
// key just before its own by looking back over short spans of R, at the
// same cost with 10 or 10,000 candidates, and candidates may share one
// Session. The lowest create revision still leads across both layouts and
// `etcdctl elect`. (A LeaderObserver, participants() and leader() read
// every candidate, whatever the layout.)
//
// A term is a Hold (hold.h): its token() is the term token, its key() the
// leader key, its stop_token() is requested when the term ends, guarded()
// runs a Txn only while it lasts. LeaderLatch and LeaderSelector are
// Holders: hold() is the current term, is_held() says whether one lasts,
// on_lost() hears of every lost term.
//
// Loss: leadership lives as long as the session's lease and the leader key.
// When the lease is lost (process paused past the TTL, partition, revoked)
// or the key is deleted by someone else, the term ends: on_lost and
// not-leader listeners run, the term's stop_token is requested, and
// guarded() fails with Errc::kHoldLost. A lost term is routine for an
// election: it goes to the listeners, not to errors(). Leadership is never re-created
// under a lost lease: a LeaderLatch re-contests at the back of the queue,
// on a new session of its own when the old one is gone (SPEC: participation
// heals, exclusivity does not); a LeaderSelector re-queues once its callback
// has returned. Like every lease-based hold, leadership is only safe
// together with fencing: pass hold().token() / LeaderTerm::token() to the
// resources you control and have them reject smaller ones, or use guarded().
//
// Threads: listeners run on the client's executor (never on a gRPC thread),
// one at a time and in order per object; they must not block for long. A
// LeaderSelector runs its callback on one thread of its own (created by
// start(), joined by close()), because a term is long-running work that may
// block.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/hold.h"
#include "etcd/recipes/recipe.h"
#include "etcd/stream.h"
#include "etcd/txn.h"

namespace etcd::recipes {

// One candidate of an election, as etcd stores it.
struct Participant {
  std::string key{};    // NAME/<lease hex>
  std::string value{};  // its proposal
  int64_t term = 0;     // its key's create revision (its term token if it leads)
  int64_t lease = 0;
  bool leader = false;  // the lowest create revision: the leader
};

// The leader of an election.
struct LeaderInfo {
  std::string key{};
  std::string value{};
  int64_t term = 0;  // create revision of the leader key: the term token
  int64_t lease = 0;
  friend bool operator==(const LeaderInfo&, const LeaderInfo&) = default;
};

// A LeaderLatch became the leader, or one of its terms ended
// (LeaderLatch::leadership_stream).
struct LeadershipChange {
  bool leader = false;
  // The term token: of the term that began (leader), or that ended.
  int64_t term = 0;
  // A term that ended: why (as on_not_leader: Errc::kHoldLost, OK after
  // resign(), Errc::kClosed after close()).
  Status why{};
};

// The largest proposal (value), in bytes, that a candidate of election
// `name` on `client` can campaign with. A campaign sends its proposal three
// times in one Txn (create our key; or adopt a key of ours and bring its
// value up to date), and etcd refuses a request over its
// --max-request-bytes, 1.5 MiB by default: so a little under 512 KiB —
// 524,192 bytes for a two-byte name on a client without a namespace or a
// user;
// each byte of the name, the namespace or the user name costs about two.
// LeaderLatch and LeaderSelector (start() and every operation) and
// proclaim() refuse a larger value with Errc::kBadArgument naming this
// limit, before any write. A server started with a smaller
// --max-request-bytes refuses the campaign with Errc::kRequestTooLarge.
std::size_t max_proposal_bytes(const Client& client, const std::string& name);

namespace detail {
class LatchState;
class SelectorState;
class ObserverState;
}  // namespace detail

// LeaderLatch: contend for leadership for as long as the object is started;
// re-contest after losing.
class LeaderLatch : public RecipeHandle, public Holder {
 public:
  // Do no I/O. `value` is this candidate's proposal (what observers and
  // `etcdctl elect --listen` show). Invalid input (a bad name, a
  // session_ttl below 1 s, a value over max_proposal_bytes()) is reported
  // by start() and every operation (Errc::kBadArgument), before any write.
  LeaderLatch(Client client, std::string name, std::string value);
  LeaderLatch(Client client, std::string name, std::string value, RecipeOptions options);
  LeaderLatch(LeaderLatch&&) noexcept = default;
  LeaderLatch& operator=(LeaderLatch&&) noexcept = default;

  // start() (from RecipeHandle) begins contending in the background and
  // returns at once; idempotent; after resign() it contends again. A
  // failure a retry can fix (etcd unreachable, no leader, a lease grant
  // whose outcome is unknown) is recorded in errors() and the campaign goes
  // on, with backoff; it stops only on one that no retry fixes (a shared
  // session that ended, a permission).

  // Completes when this object leads (at once if it does). Fails with
  // kFailedPrecondition when not started (before start(), after resign()),
  // Errc::kClosed on close(), kCancelled / kDeadlineExceeded by its stop
  // token / the deadline given (it has none of its own: etcd/call.h), and
  // with the error that stopped the campaign if one
  // did (e.g. a shared session that was lost). A waiter parked across a
  // resign() and a later start() keeps waiting. Blocking: .wait(); callback:
  // .then(); co_await.
  Call<void> await_leadership();
  // Blocking: false when the time ran out; throws etcd::Error otherwise.
  template <class Rep, class Period>
  bool await_for(std::chrono::duration<Rep, Period> d) {
    return await_until(std::chrono::steady_clock::now() + d);
  }
  template <class C, class D>
  bool await_until(std::chrono::time_point<C, D> t) {
    return await_until_steady(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - C::now()));
  }

  // Runs with the term token each time this object becomes the leader.
  Subscription on_is_leader(std::function<void(int64_t term)> listener);
  // Runs each time a term of this object ends: Errc::kHoldLost when it was
  // lost (lease gone, key deleted), OK after resign(), Errc::kClosed after
  // close(). (on_lost(), from Holder, hears of losses only.)
  Subscription on_not_leader(std::function<void(const Status&)> listener);
  // Both, as a Stream (etcd/stream.h): each change from now on, in order;
  // ends (std::nullopt) when the latch closes. A full buffer keeps the
  // newest changes (the last one is the state now).
  Stream<LeadershipChange> leadership_stream(StreamOptions options);
  Stream<LeadershipChange> leadership_stream() { return leadership_stream(StreamOptions()); }

  // Replaces the leader key's value, only if this object still leads
  // (Errc::kHoldLost otherwise, nothing written). Later campaigns use it.
  // A value over max_proposal_bytes() is Errc::kBadArgument, nothing written.
  Call<void> proclaim(std::string value);
  // Leaves the election: the term (if any) ends and our key is deleted.
  // True if this object was leading and its key was still intact. start()
  // rejoins, at the back of the queue.
  Call<bool> resign();

  // The candidates in order (the leader first), and the current leader, as
  // etcd has them now (one read each).
  Call<std::vector<Participant>> participants();
  Call<std::optional<LeaderInfo>> leader();

 private:
  bool await_until_steady(Deadline deadline);
  std::shared_ptr<detail::LatchState> state_;
};

// How a selector's term ended (LeaderTerm::end(), LeaderSelector::on_term_end).
enum class TermEnd {
  kReturned,     // the callback returned on its own
  kThrew,        // the callback threw (recorded in errors())
  kLost,         // leadership was lost (lease gone, key deleted)
  kInterrupted,  // interrupt()
  kResigned,     // resign()
  kClosed,       // close()
};

// "returned", "threw", "lost", "interrupted", "resigned", "closed".
constexpr std::string_view to_string(TermEnd end) noexcept {
  switch (end) {
    case TermEnd::kReturned:
      return "returned";
    case TermEnd::kThrew:
      return "threw";
    case TermEnd::kLost:
      return "lost";
    case TermEnd::kInterrupted:
      return "interrupted";
    case TermEnd::kResigned:
      return "resigned";
    case TermEnd::kClosed:
      return "closed";
  }
  return "unknown";
}

// One term of a LeaderSelector, handed to its callback: the term's Hold
// (key(), token(), stop_token(), guarded(), on_lost()) and a proclaim().
class LeaderTerm : public Hold {
 public:
  bool stop_requested() const { return stop_token().stop_requested(); }
  // Why the stop was requested (kLost, kInterrupted, kResigned, kClosed);
  // none while the term goes on.
  std::optional<TermEnd> end() const;
  // Replaces the leader key's value while this term is current (a value
  // over max_proposal_bytes() is Errc::kBadArgument, nothing written).
  Call<void> proclaim(std::string value) const;

 private:
  friend class detail::SelectorState;
  LeaderTerm(Hold hold, std::shared_ptr<detail::SelectorState> selector)
      : Hold(std::move(hold)), selector_(std::move(selector)) {}
  std::shared_ptr<detail::SelectorState> selector_;
};

// LeaderSelector: runs a callback for every term this object leads.
//
// When elected, the callback runs on the selector's own thread (one per
// selector, created by start()) and may block for the whole term; its
// stop_token is requested when the term must end. Whenever the callback
// returns — normally or by an exception (recorded in errors()) — the
// selector relinquishes (deletes its key) and, with auto-requeue (the
// default), joins the queue again, so it runs once per term for as long as it
// is started. It never runs two callbacks at once: after a loss it re-queues
// only once the callback has returned. After a callback that threw, it waits
// before it joins the queue again (50 ms, doubling up to 5 s while callbacks
// keep throwing), so a failing callback cannot turn into a write storm.
class LeaderSelector : public RecipeHandle, public Holder {
 public:
  using Callback = std::function<void(LeaderTerm& term)>;
  using StopCallback = std::function<void(std::stop_token stop, LeaderTerm& term)>;

  using TermEnd = recipes::TermEnd;

  // Do no I/O and start no thread. Invalid input (name, session_ttl < 1 s,
  // an empty callback, a value over max_proposal_bytes()) is reported by
  // start() (Errc::kBadArgument), before any write.
  LeaderSelector(Client client, std::string name, std::string value, Callback callback);
  LeaderSelector(Client client, std::string name, std::string value, Callback callback, RecipeOptions options);
  LeaderSelector(Client client, std::string name, std::string value, StopCallback callback);
  LeaderSelector(Client client, std::string name, std::string value, StopCallback callback, RecipeOptions options);
  LeaderSelector(LeaderSelector&&) noexcept = default;
  LeaderSelector& operator=(LeaderSelector&&) noexcept = default;

  // start() (from RecipeHandle) joins the queue (starting the callback
  // thread); idempotent. close() requests the term's stop and waits for the
  // callback to return (unless called from the callback itself); the
  // destructor closes.

  // Re-queue automatically after each term (default true).
  void set_auto_requeue(bool on);
  // Joins the queue again if not in it (e.g. without auto-requeue, or after
  // resign()); while a term's callback runs or its key is being deleted, it
  // joins as soon as that key is gone. False once closed.
  bool requeue();
  // Ends the current term: its stop_token is requested; the key is deleted
  // once the callback returns; auto-requeue applies.
  void interrupt();
  // Leaves the election until requeue()/start(): like interrupt() without
  // re-queueing; a waiting candidate's key is deleted at once.
  void resign();

  // Completed terms (callbacks that returned).
  uint64_t terms() const;
  // Runs (on the client's executor) after each term's callback returned,
  // with how the term ended; the status says more for kThrew and kLost.
  Subscription on_term_end(std::function<void(TermEnd, const Status&)> listener);
  Call<std::vector<Participant>> participants();
  Call<std::optional<LeaderInfo>> leader();

 private:
  std::shared_ptr<detail::SelectorState> state_;
};

// LeaderObserver: follows an election's leader without taking part.
//
// It reads every candidate under NAME/ at revision R and watches the prefix
// from R+1, so its view is exact at each revision. If the watch cannot
// continue without a gap (compaction while disconnected, Errc::kResyncNeeded
// or kCompacted), it reads again and reports the difference: listeners see
// the leader that holds now, never a stale one.
class LeaderObserver : public RecipeHandle {
 public:
  // Does no I/O.
  LeaderObserver(Client client, std::string name);
  LeaderObserver(Client client, std::string name, RecipeOptions options);
  LeaderObserver(LeaderObserver&&) noexcept = default;
  LeaderObserver& operator=(LeaderObserver&&) noexcept = default;

  // start() (from RecipeHandle) starts reading and watching in the
  // background. Idempotent.
  // Completes once the first read is done (fails with Errc::kClosed on
  // close(), with the validation error for a bad name).
  Call<void> wait_initialized();
  bool initialized() const;
  // The leader as last seen (none before initialization or without one).
  std::optional<LeaderInfo> current() const;
  // Runs once with the state found by the first read (even none), then on
  // every change of the leader's key, term or value, in order. A listener
  // added after the first read hears of later changes only (current() has
  // the state).
  Subscription on_change(std::function<void(const std::optional<LeaderInfo>&)> listener);
  // The same changes as a Stream (etcd/stream.h), from now on; ends
  // (std::nullopt) when the observer closes. A full buffer keeps the
  // newest (the last one is the leader now).
  Stream<std::optional<LeaderInfo>> leader_stream(StreamOptions options);
  Stream<std::optional<LeaderInfo>> leader_stream() { return leader_stream(StreamOptions()); }

  // One read each, without start().
  Call<std::vector<Participant>> participants();
  Call<std::optional<LeaderInfo>> leader();

  // close() (from RecipeHandle): stops watching; waiters end with kClosed.

 private:
  std::shared_ptr<detail::ObserverState> state_;
};

}  // namespace etcd::recipes
