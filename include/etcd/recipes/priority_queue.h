// DistributedPriorityQueue and TypedPriorityQueue<T>: a queue whose items
// carry a priority; the lowest priority value is served first, and items of
// one priority in etcd commit order. Each item goes to exactly one consumer.
//
//   etcd::recipes::DistributedPriorityQueue q(client, "/queues/jobs");
//   q.enqueue("resize:42", 10).wait().value();              // one Txn
//   q.enqueue("page:oncall", 0).wait().value();             // served first
//   q.enqueue_all({"a", "b", "c"}, 200).wait().value();     // one Txn: all or nothing, in order
//   std::string v = q.dequeue().wait().value();             // "page:oncall"; waits while empty
//   std::optional<std::string> w = q.try_dequeue().wait().value();   // nullopt when empty
//   if (auto x = q.dequeue_for(2s)) { ... }                 // nullopt on timeout; throws on failure
//
//   etcd::recipes::TypedPriorityQueue<Job, etcd::recipes::JsonCodec<Job>> jobs(client, "/queues/typed");
//   jobs.enqueue(Job{"resize", 1}, 5).wait().value();
//   Job j = jobs.dequeue().wait().value();
//
// It is DistributedQueue (queue.h) with a priority in front of each key:
// the same engine, guarantees, lifecycle, metrics and costs, which that
// header describes. What differs:
//
// Priorities: integers from 0 to 65535 (kMinPriority..kMaxPriority), lower
// first. Anything else (a negative number too) fails the enqueue with
// Errc::kBadArgument naming the priority and the range, before any write.
//
// Key layout:
//   NAME/items/<priority>-~<R>-<producer>-<seq>   one key per item.
//       <priority> is 4 lower-case hex digits ("000a" for 10), so that
//       `etcdctl get --prefix NAME/items/` lists the items in priority
//       order; <R>, <producer> and <seq> are 16 hex digits each, as in
//       DistributedQueue: within a priority, keys sort by a revision their
//       producer had seen, and a consumer keeps a window of the first 256
//       (queue.h: its memory and start-up do not grow with the backlog).
//       Items of the layout of earlier versions (<priority>-<producer>-
//       <seq>) sort before the '~' keys of their priority.
//   NAME/producers/<producer>   the guard of a retried enqueue, as in
//       DistributedQueue.
//   A key put under NAME/items/ by other means (etcdctl) is an item too:
//   its priority is what it begins with when that is 4 lower-case hex
//   digits and a '-' (`etcdctl put NAME/items/0003-manual v` is an item of
//   priority 3); any other such key is an item of priority 65535, the
//   lowest, served after every item of a higher priority and among the
//   items of priority 65535 in commit order.
//
// Order: a consumer object keeps the items its view knows of ordered by
// (priority, create revision, key): by priority, then by commit order
// (the items of one enqueue_all share a revision; their <seq> orders
// them). Never by a client's clock, and no read sorts the queue on the
// server. The head is the head of what the object's view has seen: an item
// committed a moment ago whose watch event has not arrived yet cannot be
// served before a lower-priority item that is already known. A lone
// consumer object gets the items it knows of strictly in that order;
// several racing objects spread their takes over the first 128 items after
// a conflict (queue.h), so under contention an item may be served up to 127
// places early, a lower-priority one among them.
//
// Enqueues: one Txn per group of enqueues of one object (up to 100 items,
// never splitting an enqueue_all), guarded by the object's own producer
// key, so producers never contend with each other and an enqueue is never
// sent again because of other writers (no retry storm); it is sent again
// only after an unknown outcome or a transient failure, and never
// duplicated. One group may hold items of several priorities.
//
// Typed queues (TypedPriorityQueue<T, C>): as TypedQueue: encoded with C on
// enqueue (a value that does not encode is Errc::kBadArgument, nothing
// written), decoded before the take; a poison item is never taken, fails
// the dequeue that meets it with Errc::kDecodeFailed naming its key, is
// recorded in errors() and told to on_poison() listeners, and stays.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/codec.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

namespace detail {

// The key prefix of an item of `priority` ("000a-"), or Errc::kBadArgument
// when the priority is outside 0..65535.
Result<std::string> priority_key_prefix(int64_t priority);
// The priority of an item from its key after NAME/items/: what its first 4
// lower-case hex digits and '-' say, else 65535.
uint32_t priority_of_item(std::string_view item);

}  // namespace detail

// A priority queue of byte strings (see the top of this file).
class DistributedPriorityQueue : public detail::QueueBase {
 public:
  // The range of priorities; lower is served first.
  static constexpr int64_t kMinPriority = 0;
  static constexpr int64_t kMaxPriority = 65535;

  // Do no I/O (see RecipeHandle for the lifecycle).
  DistributedPriorityQueue(Client client, std::string name);
  DistributedPriorityQueue(Client client, std::string name, RecipeOptions options);
  DistributedPriorityQueue(DistributedPriorityQueue&&) noexcept = default;
  DistributedPriorityQueue& operator=(DistributedPriorityQueue&&) noexcept = default;

  // --- The async core (blocking, callback and co_await via Call<T>).
  // Adds one item of `priority`. One Txn; retried safely (never
  // duplicated) after an unknown outcome or a transient failure until the
  // call's deadline. A priority outside 0..65535: Errc::kBadArgument,
  // nothing written.
  Call<Enqueued> enqueue(std::string value, int64_t priority);
  // Adds the items, all of `priority`, in one Txn, all or nothing, in this
  // order. An empty list commits nothing. At most 127 items (the server's
  // --max-txn-ops; more is Errc::kTooManyOps, nothing written).
  Call<Enqueued> enqueue_all(std::vector<std::string> values, int64_t priority);
  // Takes the head item (lowest priority value, then commit order); waits
  // while the queue is empty, with no deadline unless it is given one
  // (etcd/call.h): until an item comes, the deadline given or the stop
  // token, or close() (Errc::kClosed).
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
  template <class Cl, class D>
  std::optional<std::string> dequeue_until(std::chrono::time_point<Cl, D> t) {
    auto item = take_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(t - Cl::now()));
    if (!item) return std::nullopt;
    return std::move(item->value);
  }
};

// A priority queue of T, stored through a Codec<T> (codec.h). dequeue(),
// try_dequeue(), dequeue_for/until, on_poison() and codec() are those of
// TypedQueue (detail::TypedQueueBase, queue.h).
template <class T, Codec<T> C = DefaultCodec<T>>
class TypedPriorityQueue : public detail::TypedQueueBase<T, C> {
 public:
  static constexpr int64_t kMinPriority = DistributedPriorityQueue::kMinPriority;
  static constexpr int64_t kMaxPriority = DistributedPriorityQueue::kMaxPriority;

  // Do no I/O (see RecipeHandle for the lifecycle).
  TypedPriorityQueue(Client client, std::string name)
      : TypedPriorityQueue(std::move(client), std::move(name), RecipeOptions()) {}
  TypedPriorityQueue(Client client, std::string name, RecipeOptions options)
      : TypedPriorityQueue(std::move(client), std::move(name), std::move(options), C()) {}
  TypedPriorityQueue(Client client, std::string name, RecipeOptions options, C codec)
      : detail::TypedQueueBase<T, C>(std::move(client), "TypedPriorityQueue", std::move(name), std::move(options),
                                     std::move(codec), &detail::priority_of_item) {}
  TypedPriorityQueue(TypedPriorityQueue&&) noexcept = default;
  TypedPriorityQueue& operator=(TypedPriorityQueue&&) noexcept = default;

  // As DistributedPriorityQueue's, encoding with the codec first: a
  // priority out of range or a value the codec cannot encode fails the
  // call with Errc::kBadArgument, nothing written (for enqueue_all: none of
  // the values).
  Call<Enqueued> enqueue(const T& value, int64_t priority) {
    return send(priority, [&] { return this->encode_one(value); });
  }
  Call<Enqueued> enqueue_all(const std::vector<T>& values, int64_t priority) {
    return send(priority, [&] { return this->encode_all(values); });
  }

 private:
  template <class Encode>
  Call<Enqueued> send(int64_t priority, Encode encode) {
    auto prefix = detail::priority_key_prefix(priority);
    if (!prefix.ok()) return this->refuse(std::move(prefix).status());
    auto encoded = encode();
    if (!encoded.ok()) return this->refuse(std::move(encoded).status());
    return this->enqueue_encoded(std::move(*encoded), std::move(*prefix));
  }
};

}  // namespace etcd::recipes
