// GroupMember: this process's membership of a named group, with a payload,
// and a live list of every member — the etcd form of Curator's GroupMember.
//
//   etcd::recipes::GroupMember me(client, "/groups/indexers", "node-7", "10.0.0.7:9000");
//   auto sub = me.on_change([](const etcd::recipes::GroupEvent& e) { ... });  // joins, updates, leaves
//   me.start();                                   // joins in the background and follows the group
//   me.wait_initialized().timeout(5s).wait().value();
//   std::map<std::string, std::string> all = me.members();                 // id -> payload, local
//   me.set_payload("10.0.0.7:9001").wait().value();
//   me.join().wait().value();                     // or join explicitly: kAlreadyExists if the id is taken
//   bool was_member = me.leave().wait().value();  // or close() / the destructor
//
// Key layout: a member is the key GROUP/ID whose value is its payload (the
// bytes as given), a transient key (transient.h) on a presence lease with
// TTL RecipeOptions::session_ttl: it exists while its owner lives, and for
// at most the TTL after an owner that died without leaving. `etcdctl get
// --prefix GROUP/` lists the members. An id is one path segment: not empty,
// no '/', no NUL byte.
//
// Membership (the transient key's rules, transient.h):
//   join (start() in the background, or join()): one Txn,
//     If create_revision(GROUP/ID) == 0 Then Put(GROUP/ID, payload, lease) Else Get(GROUP/ID)
//     — an id someone else has is refused (StatusCode::kAlreadyExists) and
//     never overwritten; start() keeps trying (recorded in errors());
//   set_payload: one Txn, If create_revision(GROUP/ID) == C Then Put(...)
//     (C: the create revision of our key), only while we are a member;
//   leave / close: one Txn deleting the key if it is still ours, and the
//     lease's revoke when it was its last user.
// After a lease loss (the process was cut off past the TTL, or the lease was
// revoked) the member re-joins by itself with its current payload, where
// its id is free: on_lost, then on_restored listeners; state() kLost, then
// kReconnected.
//
// The member list: start() reads GROUP/ at a revision R and watches it from
// R+1 (the engine's gap-free view), keeping only direct children (GROUP/ID,
// not deeper keys). members() answers from memory. on_change listeners run
// on the client's executor, one at a time, in revision order:
//   kJoined   a member appeared (at the first read, every member present:
//             `initial` set)
//   kUpdated  a member's payload changed (or its key was re-created: a
//             member that re-joined under a new lease while we were cut off)
//   kLeft     a member is gone (left, closed, or its lease ran out);
//             `payload` is the last one seen
// When the watch cannot go on without a gap (the revision it needs was
// compacted while the client was cut off) the list is read again and the
// differences are reported as events with `resync` set — never a silent
// replacement.
//
// Costs: join, set_payload, leave: one Txn each (a join also a lease grant
// for the client's first presence key of that TTL; the lease's keep-alive
// is shared by every transient key of the client); the list: one paged
// Range at start() and one watch on the client's shared stream, one more
// Range after each gap; memory grows with the number of members (each id
// and payload once). Lifecycle as every recipe (recipe.h); the constructor
// does no I/O.
//
// Metrics: those of the transient key (label `key`: GROUP/ID), and
// etcd_recipes_group_members (label `group`: members seen now),
// etcd_recipes_group_changes_total, etcd_recipes_group_resyncs_total.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "etcd/call.h"
#include "etcd/client.h"
#include "etcd/recipes/recipe.h"
#include "etcd/status.h"

namespace etcd::recipes {

struct GroupEvent {
  enum class Type { kJoined, kUpdated, kLeft };
  Type type = Type::kJoined;
  // The member's id (the key below GROUP/).
  std::string id{};
  // kJoined, kUpdated: the payload now; kLeft: the last one seen.
  std::string payload{};
  // kUpdated: the payload before.
  std::string previous_payload{};
  // The list is exact at this revision after the event.
  int64_t revision = 0;
  // kJoined at the first read.
  bool initial = false;
  // A difference found by a read after a gap in the watch.
  bool resync = false;
};

namespace detail {
class GroupMemberState;
}  // namespace detail

class GroupMember : public RecipeHandle {
 public:
  // Do no I/O (see RecipeHandle for the lifecycle). `group` is the group's
  // key prefix (no trailing '/'); `id` this member's id (see above).
  GroupMember(Client client, std::string group, std::string id, std::string payload);
  GroupMember(Client client, std::string group, std::string id, std::string payload, RecipeOptions options);
  GroupMember(GroupMember&&) noexcept = default;
  GroupMember& operator=(GroupMember&&) noexcept = default;

  // The group (the recipe's name), this member's id and its key GROUP/ID.
  const std::string& group() const { return name(); }
  const std::string& id() const;
  const std::string& member_key() const;

  // start() (from RecipeHandle) joins in the background (retrying what a
  // retry can fix) and begins following the member list; idempotent.

  // Joins now: completes once the key is ours. Idempotent. Fails with
  // StatusCode::kAlreadyExists (naming the key) if the id is someone
  // else's — nothing written — and with Errc::kHoldLost while re-joining
  // after a loss.
  Call<void> join();
  // Makes `payload` the current payload and writes it while we are a
  // member (joining first if it never joined); kHoldLost while not (the
  // payload is kept and written by the re-join).
  Call<void> set_payload(std::string payload);
  // The current payload (the last one given).
  std::string payload() const;
  // Leaves (deletes the key if it is ours, revokes the lease if it was its
  // last user), then closes: true if we were a member.
  [[nodiscard]] Call<bool> leave();

  // We are a member now (advisory: not seen lost).
  bool is_member() const;
  // The lease of our key while we are a member, else 0.
  int64_t lease() const;

  // The members as the list shows them now, id -> payload (empty before
  // the first read). This member shows once its key was written and seen.
  std::map<std::string, std::string> members() const;
  // The list is exact at this revision (0 before the first read).
  int64_t revision() const;
  // Completes once the first read of the list is applied. Fails with
  // Errc::kClosed on close(), kFailedPrecondition before start().
  Call<void> wait_initialized();
  // Reads of the list after a gap in its watch since start().
  uint64_t resyncs() const;

  Subscription on_change(std::function<void(const GroupEvent&)> listener);
  // Our key stopped being ours (lease lost, deleted by someone else); the
  // member re-joins where its id is free. Once per loss.
  Subscription on_lost(std::function<void(const Status&)> listener);
  // We are a member again after a loss.
  Subscription on_restored(std::function<void()> listener);

 private:
  std::shared_ptr<detail::GroupMemberState> state_;
};

}  // namespace etcd::recipes
