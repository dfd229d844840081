// DistributedQueue and TypedQueue<T>: a FIFO queue of values in etcd, each
// value delivered to exactly one consumer.
//
//   etcd::recipes::DistributedQueue q(client, "/queues/jobs");
//   q.enqueue("resize:42").wait().value();                  // one Txn
//   q.enqueue_all({"a", "b", "c"}).wait().value();          // one Txn: all or nothing, in order
//   std::string v = q.dequeue().wait().value();             // waits for an item
//   std::optional<std::string> w = q.try_dequeue().wait().value();   // nullopt when empty
//   if (auto x = q.dequeue_for(2s)) { ... }                 // nullopt on timeout; throws on failure
//   co_await q.dequeue();  q.dequeue().then(...);  q.dequeue().stop_token(st).timeout(5s).wait();
//
//   etcd::recipes::TypedQueue<Job, etcd::recipes::JsonCodec<Job>> jobs(client, "/queues/typed");
//   jobs.enqueue(Job{"resize", 1}).wait().value();
//   Job j = jobs.dequeue().wait().value();
//
// Key layout:
//   NAME/items/~<R>-<producer>-<seq>    one key per item, the value as it
//       is (or as its codec encodes it). <R>, <producer> and <seq> are 16
//       hex digits each: R a revision of etcd the producer had seen before
//       it sent the item (so the item commits after R), <producer> drawn
//       at random per queue object, <seq> counting that object's items.
//       Keys therefore sort by R, close to commit order, which is what
//       lets a consumer find the head with one bounded read (below). Any
//       key put under NAME/items/ by other means (etcdctl, the raw client)
//       is an item too; so are items of the layout of earlier versions
//       (<producer>-<seq>). Such keys sort before every '~' key and are
//       served first, in commit order among the ones a consumer's window
//       holds (exact while there are at most 256 of them; a longer
//       backlog of them is served in commit order per window).
//   NAME/producers/<producer>      one key per queue object that has
//       enqueued: the <seq> of its last committed batch. It is what makes a
//       retried enqueue safe (below). close() deletes it when no enqueue is
//       in flight and none ever had an unknown outcome (a stale attempt of
//       such an enqueue could apply after the deletion); otherwise, and
//       after a crash, it stays: remove the keys of producers that are gone
//       with `etcdctl del --prefix NAME/producers/` while no producer runs.
//
// Order: FIFO by etcd commit order — by the create revision of the item
// keys, and by key among the items of one enqueue_all (they share one
// revision, their <seq> orders them). Never by a client's clock. A
// consumer object keeps its order in memory from its own view (below), so
// no read sorts the queue on the server.
//
// Exactly one consumer per item: a take is one delete of the item's key
// with prev_kv. Of several consumers (objects, clients, processes) that go
// for the same item, etcd tells exactly one that it deleted the key (and
// hands it the value); the others learn that it was gone and go on to the
// next item. A typed queue's take is a Txn guarded by the revision of the
// value it decoded:
//   If mod_revision(item) == R Then DeleteRange(item, prev_kv)
// An item is never delivered twice. It can be lost: a consumer that dies
// between its take and its use loses the item (use DistributedWorkQueue for
// at-least-once), and a take whose outcome stays unknown (it is sent again
// once, guarded, after Errc::kOutcomeUnknown) may have deleted the item
// without anyone receiving it — recorded in errors() and counted in
// etcd_recipes_queue_lost_total.
//
// A retried enqueue never duplicates an item. Every enqueue Txn of a queue
// object is guarded by its producer key:
//   If mod_revision(NAME/producers/<producer>) == M Then
//     Put(items...), Put(NAME/producers/<producer>, <last seq>)
//   Else Get(NAME/producers/<producer>)
// where M is the revision of the object's previous enqueue (0 for its
// first). The recipe sends it again after Errc::kOutcomeUnknown or a
// transient failure (until the call's deadline): if the first attempt had
// applied — even if a consumer took its items meanwhile — the producer key
// now holds this batch's <seq> and the retry answers success without
// writing; if it had not, the retry applies. A first attempt still in
// flight somewhere can never apply after that (M has moved on). So an
// object sends one enqueue Txn at a time: enqueues made while one is in
// flight go out together in the next Txn (group commit: up to 100 items
// per Txn, never splitting one enqueue_all).
//
// Consumers: the first dequeue()/try_dequeue() of an object starts its view
// of NAME/items/, which it keeps until close(): one bounded read of the
// first 256 item keys in key order (the window; fewer if their values
// pass 8 MiB) at a revision V, then one watch of NAME/items/ from V+1 (it
// keeps only changes inside the window; after a gap it reads again). As
// the window drains under half it reads on from its end (one bounded
// read); past twice its size it lets go of its last keys. So a consumer's
// memory and start-up do not grow with the backlog: a queue of 500,000
// items costs a new consumer the same as one of 500. All parked consumers
// of an object share that one view: no watch and no thread per waiter.
// Items are handed to the object's parked consumers in the order they
// called, one item per consumer, so consumers of one object never race
// each other for an item.
//
// Commit order from a window: the window holds every key before its end
// key E, whose revision R_E is in its name. Any item past E sorts by an R
// of at least R_E and so committed after R_E; an item of the window that
// committed at or before R_E + 1 can be served knowing nothing earlier is
// missing (items of one Txn share their revision and sort by <seq>). An
// item of the window that committed later (its producer had not seen
// recent revisions) waits until the window reaches past it: with nothing
// it may serve, the consumer doubles the window (one bounded read each
// time). The window a consumer needs grows with what producers send at
// once (items per Txn times producers in flight: 16 producers of 100-item
// groups need about 1,600 keys), never with the backlog. A producer idle for more than a second first reads the newest
// revision (one serializable keys-only read of its producer key), so its
// items sort where they commit.
//
// Costs:
//   enqueue / enqueue_all: one Txn (one etcd write, one round trip) for up to
//     100 items; concurrent enqueues on one object share Txns. An object
//     whose last enqueue is more than a second old first sends one
//     serializable read (answered by the member it talks to, no raft).
//   a take: one delete (one write, one round trip) when the consumer knows
//     the head from its view, the common case; a consumer never reads the
//     queue to find the head. An object that enqueues and dequeues waits
//     for its watch to report its own item like any other: taking it from
//     the enqueue's answer could serve it before an earlier item of
//     another producer whose event had not arrived yet.
//   N consumer objects (separate processes) with parked consumers: each
//     sees every item through its own watch and may go for it; one wins,
//     the others' deletes find nothing (no revision, but each is a request
//     etcd passes through raft) and they go on. After a failed take an
//     object is "contended" for its next 64 takes: it draws one of 32
//     lanes (a hash of the key puts each item in a lane) and takes the
//     first item of its lane among the first 128 it knows of — objects in
//     different lanes never go for the same item, and a conflict draws a
//     new lane — or, with none there, one at random among the first 32;
//     and while fewer than 32 are there it first waits a random moment of
//     up to 3 take round trips, so that it mostly sees another object's
//     take before sending one that would fail. Measured (failed takes per
//     item, etcd_recipes_queue_take_conflicts_total): 1 item per Txn,
//     2 / 4 / 8 objects: 0.05 / 0.47 / 1.7 (6.4 with 8 objects without the
//     random wait); 32 items per Txn: 0.03 / 0.09 / 0.21; a backlog of
//     2000 with 8 objects: 0.10-0.11 (0.27 with random picks among the
//     first 32, before lanes). A head item that an object has seen waiting
//     for 200 ms is taken whatever its lane, so no item is left behind
//     (one given back by a consumer that died, say) while every object
//     works its own lane. So under contention FIFO holds within a
//     window of 128 items; a lone consumer object gets items strictly in
//     order and never waits.
//   try_dequeue() on a queue this object sees as empty: one read
//     (the newest item's create revision), which makes "empty"
//     linearizable.
//   a new consumer: one read of at most 257 keys, whatever the backlog;
//     a refill or widening: one such read.
//   size(): one count-only read (exact, no item is loaded).
//
// Removing an item (remove(id), as Curator's DistributedIdQueue): one
// delete of NAME/items/<id>, the same operation a take is. Of a remove and
// any number of takes of one item, etcd tells exactly one that it deleted
// the key: a removed item is never delivered (a consumer that goes for it
// finds it gone and takes the next), and a taken item is never removed
// (remove() answers false). A typed queue's take, guarded by the item's
// revision, fails the same way once the item is deleted. A remove whose
// outcome stays unknown (Errc::kOutcomeUnknown) may have deleted the item:
// it is then either removed or delivered once, never both. remove() works
// on poison items too, and needs no consumer: a producer-only object (or
// any object of the queue) can remove.
//
// Typed queues (TypedQueue<T, C>, codec.h): each item is encoded with C on
// enqueue (an encoding failure is Errc::kBadArgument, nothing written) and
// decoded before it is taken. A value that does not decode (a poison item)
// is never taken: the dequeue that meets it fails with Errc::kDecodeFailed
// (DATA_LOSS) naming the key, the failure is recorded in errors(), and the
// object skips that item from then on (other objects report it once each).
// The item stays in the queue until someone removes it (`etcdctl del KEY`)
// or takes it with an untyped DistributedQueue. on_poison() listeners hear
// of each such item. Any other error of the codec (a schema registry that
// is down) fails the dequeues that meet the item then, and leaves it
// available to later ones.
//
// Lifecycle (recipe.h): the constructor does no I/O; a bad name is
// Errc::kBadArgument from start() and every operation, before any write.
// close() ends parked consumers with Errc::kClosed (a take already sent
// completes first: its item is delivered, never dropped), refuses new work,
// stops the view and lets go of the client. Enqueues already sent complete.
//
// Metrics (label `queue`): etcd_recipes_queue_enqueued_total (items),
// _dequeued_total, _wait_seconds (a dequeue call until its item),
// _take_conflicts_total, _enqueue_retries_total, _poison_total,
// _lost_total, and the gauge etcd_recipes_queue_depth (items in the
// consumer's window, consumers only: the head of the queue, a few hundred
// at most; size() counts them all).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/codec.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

// What an enqueue committed.
struct Enqueued {
  // The revision of the Txn that created the items: their create revision.
  int64_t revision = 0;
  // The item keys, in queue order.
  std::vector<std::string> keys{};
};

namespace detail {

class QueueState;

// An item as a take got it: its key, its value, its create revision and
// what the queue's check (a typed queue's decode) made of it.
struct TakenItem {
  std::string key{};
  std::string value{};
  int64_t revision = 0;
  std::shared_ptr<void> decoded{};
};

// Runs on each item before it is taken (a typed queue decodes it): the
// decoded value, or the error that keeps the item in the queue.
using TakeCheck = std::function<Result<std::shared_ptr<void>>(const std::string& key, const std::string& value)>;

// The class of an item, served before commit order (lower first): the
// priority queue's priority. It is given the item's key without
// NAME/items/ and must depend on it alone.
using ItemRank = std::function<uint32_t(std::string_view item)>;

// What the queues share: the engine (the producer's guarded group commit,
// the consumers' view, ordering and takes).
class QueueBase : public RecipeHandle {
 public:
  QueueBase(QueueBase&&) noexcept = default;
  QueueBase& operator=(QueueBase&&) noexcept = default;

  // Items in the queue now (one count-only read): advisory, since others
  // may enqueue and take at any moment. Includes poison items.
  Call<int64_t> size();

  // Removes the item `id` without delivering it: true if this call deleted
  // it, false if it was not there (taken, removed, or never enqueued).
  // `id` is an item key as an enqueue returned it (Enqueued::keys) or its
  // last segment (the part after NAME/items/); anything else is
  // Errc::kBadArgument, nothing written. One delete (one round trip, one
  // etcd write when the item is there). See "Removing an item" at the top.
  [[nodiscard]] Call<bool> remove(std::string id);

 protected:
  // `rank`: none for commit order alone.
  // `rank`: null for commit order alone (no defaulted class-type
  // parameters in public headers: docs/client.md, GCC 12).
  QueueBase(Client client, const char* kind, std::string name, RecipeOptions options, TakeCheck check, ItemRank rank);

  // Enqueues values already encoded, in order, in one Txn, under
  // NAME/items/<key_prefix>~<R>-<producer>-<seq> (item_key.h).
  Call<Enqueued> enqueue_encoded(std::vector<std::string> values, std::string key_prefix);
  // An untyped dequeue / try_dequeue: the value as it is.
  Call<std::string> dequeue_bytes();
  Call<std::optional<std::string>> try_dequeue_bytes();
  // Starts a take: waits for an item, or (try_only) answers none when the
  // queue is empty. `done` runs once, on any thread.
  static void start_take(const std::shared_ptr<QueueState>& state, bool try_only, CallOptions options,
                         Callback<std::optional<TakenItem>> done);
  // A Call of this recipe running `start`: it keeps the recipe's link to
  // its client until consumed and completes on the client's executor.
  template <class R>
  Call<R> make_call(typename Call<R>::Starter start) const {
    auto [keep, executor] = call_context();
    return Call<R>([keep = std::move(keep), start = std::move(start)](
                       CallOptions options, Callback<R> done) { start(std::move(options), std::move(done)); },
                   std::move(executor));
  }
  // The decoded value of the item in `r` (ok, with an item), moved out.
  // Out of line: the same code inline in a typed queue's template trips
  // GCC 12's -Wmaybe-uninitialized (a false positive about the Result's
  // variant) in some users' -Werror builds.
  static std::shared_ptr<void> decoded_of(Result<std::optional<TakenItem>>& r);
  // An enqueue refused before anything was sent (bad input), named after
  // this recipe.
  Call<Enqueued> refuse(Status why) const {
    return make_call<Enqueued>([why = named(std::move(why))](CallOptions, Callback<Enqueued> done) { done(why); });
  }
  // `status`, named after this recipe ("TypedQueue[/q]: ...").
  Status named(Status status) const;
  // Listeners of items the check refused (TypedQueue::on_poison).
  Subscription add_poison_listener(std::function<void(const std::string& key, const Status& why)> listener);
  // A take that waits until `deadline`: none when the time ran out; throws
  // etcd::Error on other failures.
  std::optional<TakenItem> take_until(Deadline deadline);

 private:
  std::pair<std::shared_ptr<void>, Executor> call_context() const;

 protected:
  std::shared_ptr<QueueState> state_;
};

// What the typed queues share: the codec, the decoding takes and the
// poison listeners. The enqueues are each queue's own.
template <class T, Codec<T> C>
class TypedQueueBase : public QueueBase {
 public:
  TypedQueueBase(TypedQueueBase&&) noexcept = default;
  TypedQueueBase& operator=(TypedQueueBase&&) noexcept = default;

  // Takes the head item, decoded; waits while the queue is empty. A poison
  // head fails it with Errc::kDecodeFailed naming the key (the item stays).
  Call<T> dequeue() {
    return this->template make_call<T>([state = this->state_](CallOptions options, Callback<T> done) {
      start_take(state, false, std::move(options),
                 [done = std::move(done)](Result<std::optional<detail::TakenItem>> r) {
                   if (!r.ok()) return done(std::move(r).status());
                   done(take_value(decoded_of(r)));
                 });
    });
  }
  Call<std::optional<T>> try_dequeue() {
    return this->template make_call<std::optional<T>>([state = this->state_](CallOptions options,
                                                                             Callback<std::optional<T>> done) {
      start_take(state, true, std::move(options), [done = std::move(done)](Result<std::optional<detail::TakenItem>> r) {
        if (!r.ok()) return done(std::move(r).status());
        if (!*r) return done(std::optional<T>());
        done(std::optional<T>(take_value(decoded_of(r))));
      });
    });
  }

  template <class Rep, class Period>
  std::optional<T> dequeue_for(std::chrono::duration<Rep, Period> d) {
    return dequeue_until(std::chrono::steady_clock::now() + d);
  }
  template <class Cl, class D>
  std::optional<T> dequeue_until(std::chrono::time_point<Cl, D> t) {
    auto item = take_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - Cl::now()));
    if (!item) return std::nullopt;
    return take_value(std::move(item->decoded));
  }

  // Runs (on the client's executor, in order) each time this object meets
  // an item whose value does not decode: its key and the decode error. The
  // item stays in the queue; this object skips it from then on.
  Subscription on_poison(std::function<void(const std::string& key, const Status& why)> listener) {
    return add_poison_listener(std::move(listener));
  }

  const C& codec() const { return *codec_; }

 protected:
  TypedQueueBase(Client client, const char* kind, std::string name, RecipeOptions options, C codec, ItemRank rank)
      : QueueBase(std::move(client), kind, std::move(name), std::move(options), make_check(codec), std::move(rank)),
        codec_(std::make_shared<const C>(std::move(codec))) {}

  // The value encoded (as a batch of one), or the codec's error
  // (Errc::kBadArgument).
  Result<std::vector<std::string>> encode_one(const T& value) const {
    auto bytes = encode_value<T>(*codec_, value);
    if (!bytes.ok()) return std::move(bytes).status();
    std::vector<std::string> one;
    one.push_back(std::move(*bytes));
    return one;
  }
  // The values encoded, or the codec's error for the first that is not.
  Result<std::vector<std::string>> encode_all(const std::vector<T>& values) const {
    std::vector<std::string> encoded;
    encoded.reserve(values.size());
    for (const T& v : values) {
      auto bytes = encode_value<T>(*codec_, v);
      if (!bytes.ok()) return std::move(bytes).status();
      encoded.push_back(std::move(*bytes));
    }
    return encoded;
  }

 private:
  static detail::TakeCheck make_check(const C& codec) {
    return [codec = std::make_shared<const C>(codec)](const std::string& key,
                                                      const std::string& value) -> Result<std::shared_ptr<void>> {
      auto decoded = decode_value<T>(*codec, value, key);
      if (!decoded.ok()) return std::move(decoded).status();
      return std::shared_ptr<void>(std::make_shared<T>(std::move(*decoded)));
    };
  }
  static T take_value(std::shared_ptr<void> decoded) { return std::move(*std::static_pointer_cast<T>(decoded)); }

  std::shared_ptr<const C> codec_;
};

}  // namespace detail

// A queue of byte strings (see the top of this file).
class DistributedQueue : public detail::QueueBase {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle).
  DistributedQueue(Client client, std::string name);
  DistributedQueue(Client client, std::string name, RecipeOptions options);
  DistributedQueue(DistributedQueue&&) noexcept = default;
  DistributedQueue& operator=(DistributedQueue&&) noexcept = default;

  // --- The async core (blocking, callback and co_await via Call<T>).
  // Adds one item at the tail. One Txn; retried safely (never duplicated)
  // after an unknown outcome or a transient failure until the call's
  // deadline.
  Call<Enqueued> enqueue(std::string value);
  // Adds the items in one Txn, all or nothing, in this order (they share
  // one revision). An empty list commits nothing. At most 127 items (etcd's
  // default --max-txn-ops is 128; the server refuses more with
  // Errc::kTooManyOps, nothing written).
  Call<Enqueued> enqueue_all(std::vector<std::string> values);
  // Takes the head item; waits while the queue is empty, with no deadline
  // unless it is given one (etcd/call.h): until an item comes, the deadline
  // given or the stop token, or close() (Errc::kClosed).
  Call<std::string> dequeue() { return dequeue_bytes(); }
  // Takes the head item, or none if the queue is empty now.
  Call<std::optional<std::string>> try_dequeue() { return try_dequeue_bytes(); }

  // --- Blocking.
  // std::nullopt when the time ran out; throws etcd::Error on any other
  // failure (closed, bad name, ...).
  template <class Rep, class Period>
  std::optional<std::string> dequeue_for(std::chrono::duration<Rep, Period> d) {
    return dequeue_until(std::chrono::steady_clock::now() + d);
  }
  template <class C, class D>
  std::optional<std::string> dequeue_until(std::chrono::time_point<C, D> t) {
    auto item = take_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - C::now()));
    if (!item) return std::nullopt;
    return std::move(item->value);
  }
};

// A queue of T, stored through a Codec<T> (codec.h); see the top of this
// file for what happens to a value that does not decode. dequeue(),
// try_dequeue(), dequeue_for/until, on_poison() and codec() are those of
// detail::TypedQueueBase.
template <class T, Codec<T> C = DefaultCodec<T>>
class TypedQueue : public detail::TypedQueueBase<T, C> {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle).
  TypedQueue(Client client, std::string name) : TypedQueue(std::move(client), std::move(name), RecipeOptions()) {}
  TypedQueue(Client client, std::string name, RecipeOptions options)
      : TypedQueue(std::move(client), std::move(name), std::move(options), C()) {}
  TypedQueue(Client client, std::string name, RecipeOptions options, C codec)
      : detail::TypedQueueBase<T, C>(std::move(client), "TypedQueue", std::move(name), std::move(options),
                                     std::move(codec), nullptr) {}
  TypedQueue(TypedQueue&&) noexcept = default;
  TypedQueue& operator=(TypedQueue&&) noexcept = default;

  // As DistributedQueue's, encoding with the codec first: a value it
  // cannot encode fails the call with Errc::kBadArgument, nothing written
  // (for enqueue_all: none of the values).
  Call<Enqueued> enqueue(const T& value) { return enqueue_encoded_or_refuse(this->encode_one(value)); }
  Call<Enqueued> enqueue_all(const std::vector<T>& values) {
    return enqueue_encoded_or_refuse(this->encode_all(values));
  }

 private:
  Call<Enqueued> enqueue_encoded_or_refuse(Result<std::vector<std::string>> encoded) {
    if (!encoded.ok()) return this->refuse(std::move(encoded).status());
    return this->enqueue_encoded(std::move(*encoded), std::string());
  }
};

}  // namespace etcd::recipes
