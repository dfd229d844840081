// DistributedWorkQueue and TypedWorkQueue<T>: at-least-once work in etcd.
// An item stays in the queue until a consumer acks it; a consumer that dies
// (or loses its lease) holding an item gives it back, in its place in line,
// after the visibility timeout; an item delivered too often goes to the
// dead letters.
//
//   etcd::recipes::DistributedWorkQueue wq(client, "/work/thumbnails");
//   wq.enqueue("img-42").wait().value();                      // one Txn
//   wq.enqueue("img-43", std::chrono::seconds(30)).wait().value();   // visible in 30 s
//   etcd::recipes::WorkItem item = wq.receive().wait().value();     // waits
//   process(item.value());
//   if (!item.ack().wait().value()) { /* redelivered meanwhile: our work may be done twice */ }
//   // or: (void)item.requeue().wait();  (void)item.requeue(std::chrono::seconds(5)).wait();
//
//   co_await wq.receive();  wq.try_receive();  wq.receive_for(2s);
//   for (auto& d : wq.dead_letters().wait().value()) { ... }
//   (void)wq.requeue_dead(id).wait();  (void)wq.purge_dead(id).wait();
//
// Key layout (NAME is the queue's name):
//   NAME/items/<id>        the item: a record (below) holding its value.
//                          <id> is ~<R>-<producer>-<seq>, 16 hex digits
//                          each, as in DistributedQueue (queue.h), whose
//                          key order and window it shares.
//   NAME/claims/<id>       present while a consumer holds the item: created
//                          by the claim, bound to the consumer's lease, its
//                          value the consumer's identity.
//   NAME/dead/<id>         a dead letter: a record with why it died.
//   NAME/producers/<p>     the guard that makes a retried enqueue safe (as in
//                          DistributedQueue).
//
// An item is ready when it has no claim and its delay has passed. Order:
// by the item key's create revision (etcd commit order), then by key; an
// item keeps its place while it is claimed and gets it back if the claim
// goes away (no write moves it).
//
// Claim (one Txn, one round trip, one etcd write):
//   If mod_revision(items/<id>) == M && create_revision(claims/<id>) == 0
//   Then Put(claims/<id>, identity, lease), Put(items/<id>, ignore_value)
// The second put only counts the delivery: it bumps the item's version
// (no value is sent). The claim's revision is the per-claim identity: ack
// and requeue are guarded by it, never by the consumer's id, so a stale ack
// after a redelivery — of this consumer's own earlier claim too — fails:
//   ack:      If create_revision(claims/<id>) == C Then Delete(items/<id>), Delete(claims/<id>)
//   requeue:  If create_revision(claims/<id>) == C Then Delete(claims/<id>)
//             (with a delay, also Put(items/<id>, the record with the new time))
//
// A claim whose outcome stayed unknown (sent again after an unknown
// outcome, and that failed too) may have applied: it would hold its item
// under the consumer's lease for as long as the consumer lives. So a
// consumer that sees, in its view, a claim under its own lease that none of
// its takes was given (and none of them is in flight for that item)
// deletes it:
//   release:  If create_revision(claims/<id>) == C Then Delete(claims/<id>)
// The item is ready again at once; the claim counted as one delivery.
//
// Visibility timeout: a consumer's claims are bound to its presence lease
// (TTL = WorkQueueOptions::visibility_timeout), which it renews in the
// background while it lives. The timeout is how long a dead (or cut off)
// consumer keeps its items hidden, not a limit on processing time: a live
// consumer may work on an item for hours. When the lease expires, etcd
// deletes its claims and the items are ready again, in their place. The
// consumer then takes a new lease (it heals) but never re-creates the
// claims: the items it was working on may be with someone else already,
// so their ack()s return false and their stop_token()s are requested.
// close() revokes the lease: its unacked items are ready again at once.
//
// Deliveries: each claim counts one. An item that was delivered
// max_deliveries times and comes up again is moved to the dead letters
// (one Txn) by the consumer that meets it, instead of being delivered —
// whether its consumers crashed, failed or requeued it on purpose. A typed
// queue's item whose value does not decode (poison) goes to the dead
// letters at once, with the decode error as the reason. Nothing is ever
// dropped: only ack() and purge_dead() delete an item.
//
// Removing an item (remove(id)): only a pending one, in one Txn:
//   If create_revision(claims/<id>) == 0 Then Delete(items/<id>)
// A claim is guarded by the item's mod revision and the claim's absence,
// so of a remove and a claim of one item exactly one applies: a removed
// item is never delivered, and an item being worked on is never removed
// under its consumer (remove() answers false; ack() or requeue() decide
// its fate). A move to the dead letters is guarded the same way. A remove
// whose outcome stays unknown (Errc::kOutcomeUnknown) may have applied.
//
// Delays: enqueue(value, delay) writes "not before <producer's clock +
// delay>" (system_clock, milliseconds since the epoch) in the record, and a
// consumer treats the item as not ready until its own system_clock reaches
// that time. Each consumer object keeps one timer for the earliest delayed
// item it knows, so a delayed item is received within milliseconds of its
// time even when every consumer is parked (the bar is 1 s). The producer's
// clock decides, the consumer's reads it: clocks that differ by s make an
// item ready up to s early (consumer ahead) or late (consumer behind).
// Keep hosts synchronised (NTP keeps them within milliseconds).
//
// Record (the value of NAME/items/<id>): a first line, then the payload:
//   wq1[ nb=<not-before ms>][ d=<deliveries>@<version>]\n<payload>
// d=D@V: D deliveries had been counted when the item's version was V; its
// deliveries now are D + (version - V) (D=0, V=1 without it). A value put
// by other means (etcdctl) without that first line is an item whose
// payload is the whole value.
// Dead letter (NAME/dead/<id>):
//   wqdead1 <deliveries> <dead since, ms since the epoch> <reason>\n<payload>
//
// Costs: enqueue, enqueue_all: one Txn for up to 100 items (group commit,
// as DistributedQueue). receive: one Txn (the claim) when the consumer
// knows a ready item from its view (the common case). ack, requeue: one
// Txn. A pure producer (an object that only enqueues) takes no lease, keeps
// no view and starts no background work; a consumer keeps one lease and
// one view of NAME/claims/ (every claim) and of a window of NAME/items/
// (the first 256 item keys, as DistributedQueue's: its memory and
// start-up do not grow with the backlog, only with the items claimed).
// With no ready item in its window (they are claimed or delayed) a
// consumer doubles it, one bounded read each time, and keeps that size: a
// consumer parked behind many delayed items holds them all. N consumer objects racing for
// items: as DistributedQueue (queue.h), a failed claim costs one
// round trip and is counted in etcd_recipes_workqueue_take_conflicts_total.
//
// Lifecycle as every recipe (recipe.h); after close() the deliveries'
// claims are gone (the lease was revoked): their ack() and requeue() fail
// with Errc::kClosed. Metrics (label `queue`): etcd_recipes_workqueue_
// {received,acked,requeued,dead_lettered,poison,stale_acks,
// take_conflicts,orphaned_claims_released}_total, _wait_seconds, and the gauge
// etcd_recipes_workqueue_depth (items in the consumer's window, claimed
// ones included); enqueues count in etcd_recipes_queue_enqueued_total.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/codec.h"
#include "etcd/recipes/queue.h"
#include "etcd/recipes/recipe.h"

namespace etcd::recipes {

struct WorkQueueOptions {
  // TTL of the consumer's presence lease: how long the items of a consumer
  // that died stay hidden (at least 1 s; etcd may raise it to its minimum
  // lease TTL).
  std::chrono::seconds visibility_timeout{30};
  // Deliveries of an item before it goes to the dead letters (at least 1).
  int max_deliveries = 5;
  // client_id (shown in claims) and metrics apply; a work queue consumer
  // takes a presence lease of its own (claims heal, they are not holds), so
  // session, session_factory and session_ttl are not used.
  RecipeOptions recipe{};
};

// A dead letter, as listed by dead_letters().
struct DeadLetter {
  std::string id{};
  std::string key{};    // NAME/dead/<id>
  std::string value{};  // the payload, as it was enqueued
  int64_t deliveries = 0;
  std::string reason{};
  std::chrono::system_clock::time_point since{};
  int64_t revision = 0;  // mod revision of the dead letter
};

namespace detail {
class WorkQueueState;
class WorkClaim;

// What a receive got (internal): the claim and the payload, and the typed
// queue's decoded value.
struct ClaimedItem {
  std::shared_ptr<WorkClaim> claim{};
  std::string value{};
  std::shared_ptr<void> decoded{};
};

// Decodes a payload for a typed queue (null: untyped).
using WorkDecode = std::function<Result<std::shared_ptr<void>>(const std::string& key, const std::string& payload)>;

// The claim of one delivered item (shared by copies of its WorkItem).
class WorkItemBase {
 public:
  // The item's id: the last segment of its key.
  const std::string& id() const;
  // NAME/items/<id>.
  const std::string& key() const;
  // This delivery's number: 1 the first time.
  int64_t attempt() const;
  // The per-claim identity: the revision of the claim.
  int64_t claim() const;
  // Requested when the claim ends: acked, requeued, or lost (the
  // consumer's lease expired or it was closed). Hand it to the work.
  std::stop_token stop_token() const;

  // Deletes the item: true if this claim still held it; false if it had
  // been lost (the item was or will be delivered again). Sent again once,
  // guarded, after an unknown outcome; kOutcomeUnknown if even that stays
  // open, and then the claim, if it is still there, is given back by the
  // consumer (the item is delivered again; the work may be done twice).
  // After any other failure nothing was written: the claim stays, and
  // ack() may be called again.
  [[nodiscard]] Call<bool> ack() const;
  // Gives the item back (ready again now, or after `delay`) keeping its
  // place in line; this delivery stays counted. False as for ack().
  [[nodiscard]] Call<bool> requeue() const;
  [[nodiscard]] Call<bool> requeue(std::chrono::milliseconds delay) const;

  bool valid() const noexcept { return claim_ != nullptr; }

 protected:
  WorkItemBase() = default;
  explicit WorkItemBase(std::shared_ptr<WorkClaim> claim) : claim_(std::move(claim)) {}
  std::shared_ptr<WorkClaim> claim_{};
};

// What DistributedWorkQueue and TypedWorkQueue share.
class WorkQueueBase : public RecipeHandle {
 public:
  WorkQueueBase(WorkQueueBase&&) noexcept = default;
  WorkQueueBase& operator=(WorkQueueBase&&) noexcept = default;

  // Items in the queue (ready, delayed and claimed; one count-only read).
  Call<int64_t> size();
  // Every dead letter, in key order (read page by page).
  Call<std::vector<DeadLetter>> dead_letters();
  // Moves a dead letter back into the queue, at its tail, with its
  // deliveries starting again from 0. False if there is no such dead letter.
  [[nodiscard]] Call<bool> requeue_dead(std::string id);
  // Deletes a dead letter. False if there is no such dead letter.
  [[nodiscard]] Call<bool> purge_dead(std::string id);
  // Removes a pending item (ready or delayed, not claimed) without
  // delivering it: true if this call deleted it; false if it is claimed
  // now, or not there (acked, dead-lettered, removed, never enqueued).
  // `id` as for DistributedQueue::remove (an item key from Enqueued::keys
  // or its last segment); anything else is Errc::kBadArgument, nothing
  // written. One Txn (see "Removing an item" at the top of this file).
  [[nodiscard]] Call<bool> remove(std::string id);
  // Runs (on the client's executor, in order) each time this object moves
  // an item to the dead letters instead of delivering it (too many
  // deliveries, or poison): the dead letter as written.
  Subscription on_dead_letter(std::function<void(const DeadLetter& dead)> listener);

 protected:
  WorkQueueBase(Client client, const char* kind, std::string name, WorkQueueOptions options, WorkDecode decode);

  Call<Enqueued> enqueue_payloads(std::vector<std::string> payloads, std::chrono::milliseconds delay);
  // Starts a receive: waits for an item, or (try_only) answers none when
  // no item is ready. `done` runs once, on any thread.
  static void start_receive(const std::shared_ptr<WorkQueueState>& state, bool try_only, CallOptions options,
                            Callback<std::optional<TakenItem>> done);
  // The delivery in `r` (ok, with an item), moved out.
  static ClaimedItem to_claimed(Result<std::optional<TakenItem>>& r);
  // A receive whose result goes through `convert(ClaimedItem) -> R`
  // (try_only: R is an optional, empty when no item was ready).
  template <class R, class F>
  Call<R> receive_as(bool try_only, F convert) const {
    auto [keep, executor] = call_context();
    return Call<R>(
        [keep = std::move(keep), state = state_, try_only, convert = std::move(convert)](CallOptions options,
                                                                                         Callback<R> done) {
          start_receive(state, try_only, std::move(options),
                        [convert, done = std::move(done)](Result<std::optional<TakenItem>> r) {
                          if (!r.ok()) return done(std::move(r).status());
                          if constexpr (requires { typename R::value_type; }) {
                            if (!*r) return done(R());
                            done(R(convert(to_claimed(r))));
                          } else {
                            done(convert(to_claimed(r)));
                          }
                        });
        },
        std::move(executor));
  }
  // A receive that waits until `deadline`: none when the time ran out;
  // throws etcd::Error on other failures.
  std::optional<ClaimedItem> receive_until(Deadline deadline);
  // A Call that fails at once with `why` (named after this recipe).
  Call<Enqueued> refuse(Status why) const;

 private:
  std::pair<std::shared_ptr<void>, Executor> call_context() const;

 protected:
  std::shared_ptr<WorkQueueState> state_;
};

}  // namespace detail

// One delivery of an item of a DistributedWorkQueue.
class WorkItem : public detail::WorkItemBase {
 public:
  WorkItem() = default;
  const std::string& value() const { return value_; }

 private:
  friend class DistributedWorkQueue;
  explicit WorkItem(detail::ClaimedItem c) : WorkItemBase(std::move(c.claim)), value_(std::move(c.value)) {}
  std::string value_{};
};

// One delivery of an item of a TypedWorkQueue<T>.
template <class T>
class TypedWorkItem : public detail::WorkItemBase {
 public:
  TypedWorkItem() = default;
  const T& value() const { return *value_; }

 private:
  template <class U, Codec<U> C>
  friend class TypedWorkQueue;
  explicit TypedWorkItem(detail::ClaimedItem c)
      : WorkItemBase(std::move(c.claim)), value_(std::static_pointer_cast<T>(std::move(c.decoded))) {}
  std::shared_ptr<T> value_{};
};

class DistributedWorkQueue : public detail::WorkQueueBase {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle).
  DistributedWorkQueue(Client client, std::string name);
  DistributedWorkQueue(Client client, std::string name, WorkQueueOptions options);
  DistributedWorkQueue(DistributedWorkQueue&&) noexcept = default;
  DistributedWorkQueue& operator=(DistributedWorkQueue&&) noexcept = default;

  // Adds an item at the tail, ready now or after `delay` (see the top of
  // this file for whose clock decides). One Txn; retried safely (never
  // duplicated) as DistributedQueue::enqueue.
  Call<Enqueued> enqueue(std::string value);
  Call<Enqueued> enqueue(std::string value, std::chrono::milliseconds delay);
  // Adds the items in one Txn, all or nothing, in this order.
  Call<Enqueued> enqueue_all(std::vector<std::string> values);
  Call<Enqueued> enqueue_all(std::vector<std::string> values, std::chrono::milliseconds delay);

  // Claims the first ready item; waits while there is none, with no
  // deadline unless it is given one (etcd/call.h).
  Call<WorkItem> receive();
  // Claims the first ready item, or none if there is none now.
  Call<std::optional<WorkItem>> try_receive();

  // Blocking: std::nullopt when the time ran out; throws etcd::Error on
  // any other failure.
  template <class Rep, class Period>
  std::optional<WorkItem> receive_for(std::chrono::duration<Rep, Period> d) {
    auto c = receive_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
    if (!c) return std::nullopt;
    return WorkItem(std::move(*c));
  }
};

// A work queue of T, stored through a Codec<T> (codec.h). An item whose
// value does not decode goes to the dead letters (reason: the decode
// error) and is not delivered.
template <class T, Codec<T> C = DefaultCodec<T>>
class TypedWorkQueue : public detail::WorkQueueBase {
 public:
  TypedWorkQueue(Client client, std::string name)
      : TypedWorkQueue(std::move(client), std::move(name), WorkQueueOptions()) {}
  TypedWorkQueue(Client client, std::string name, WorkQueueOptions options)
      : TypedWorkQueue(std::move(client), std::move(name), std::move(options), C()) {}
  TypedWorkQueue(Client client, std::string name, WorkQueueOptions options, C codec)
      : WorkQueueBase(std::move(client), "TypedWorkQueue", std::move(name), std::move(options), make_decode(codec)),
        codec_(std::make_shared<const C>(std::move(codec))) {}
  TypedWorkQueue(TypedWorkQueue&&) noexcept = default;
  TypedWorkQueue& operator=(TypedWorkQueue&&) noexcept = default;

  // A value the codec cannot encode fails with Errc::kBadArgument, nothing
  // written.
  Call<Enqueued> enqueue(const T& value) { return enqueue_all(std::vector<T>{value}, std::chrono::milliseconds(0)); }
  Call<Enqueued> enqueue(const T& value, std::chrono::milliseconds delay) {
    return enqueue_all(std::vector<T>{value}, delay);
  }
  Call<Enqueued> enqueue_all(const std::vector<T>& values) { return enqueue_all(values, std::chrono::milliseconds(0)); }
  Call<Enqueued> enqueue_all(const std::vector<T>& values, std::chrono::milliseconds delay) {
    std::vector<std::string> encoded;
    encoded.reserve(values.size());
    for (const T& v : values) {
      auto bytes = encode_value<T>(*codec_, v);
      if (!bytes.ok()) return refuse(std::move(bytes).status());
      encoded.push_back(std::move(*bytes));
    }
    return enqueue_payloads(std::move(encoded), delay);
  }

  Call<TypedWorkItem<T>> receive() {
    return receive_as<TypedWorkItem<T>>(false, [](detail::ClaimedItem c) { return TypedWorkItem<T>(std::move(c)); });
  }
  Call<std::optional<TypedWorkItem<T>>> try_receive() {
    return receive_as<std::optional<TypedWorkItem<T>>>(
        true, [](detail::ClaimedItem c) { return TypedWorkItem<T>(std::move(c)); });
  }
  template <class Rep, class Period>
  std::optional<TypedWorkItem<T>> receive_for(std::chrono::duration<Rep, Period> d) {
    auto c = receive_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
    if (!c) return std::nullopt;
    return TypedWorkItem<T>(std::move(*c));
  }

  const C& codec() const { return *codec_; }

 private:
  static detail::WorkDecode make_decode(const C& codec) {
    return [codec = std::make_shared<const C>(codec)](const std::string& key,
                                                      const std::string& payload) -> Result<std::shared_ptr<void>> {
      auto decoded = decode_value<T>(*codec, payload, key);
      if (!decoded.ok()) return std::move(decoded).status();
      return std::shared_ptr<void>(std::make_shared<T>(std::move(*decoded)));
    };
  }
  std::shared_ptr<const C> codec_;
};

}  // namespace etcd::recipes
