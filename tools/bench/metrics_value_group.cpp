// SharedValue and GroupMember metrics: a set + compare_and_set cycle on one
// key (two Txns, two etcd writes), and an uncontended join + leave of a
// group (the member key's create-if-absent Txn and its guarded delete; the
// presence lease's grant and revoke are part of each cycle, since the
// member is the lease's only user; group_join_leave_shared_seq keeps another
// transient key alive so that the lease is shared and a cycle is the two
// Txns). As ratios to put_seq, measured interleaved with puts. Only the
// public APIs are used.
#include <memory>
#include <stdexcept>
#include <string>

#include "bench.h"
#include "etcd/recipes/group_member.h"
#include "etcd/recipes/shared_value.h"
#include "etcd/recipes/transient.h"

namespace bench::metrics_value_group {
namespace {

using etcd::recipes::GroupMember;
using etcd::recipes::SharedValue;

// set(v), then compare_and_set(the revision set returned, v'): one cycle,
// two Txns. No watch (start() is not called): get() is the writes' answers.
double value_set_cas_seq(Context& ctx) {
  SharedValue<std::string> value(ctx.client, Context::key_prefix("value_set_cas_seq") + "value");
  const double rate = measure_cycle_paired(ctx, [&] {
    const int64_t revision = value.set("a").timeout(kCallBound).wait().value();
    if (!value.compare_and_set(revision, "b").timeout(kCallBound).wait().value()) {
      throw std::runtime_error("value_set_cas_seq: an uncontended compare_and_set lost");
    }
  });
  value.close();
  return rate;
}

// join, then leave, with a new member object each cycle (a member that
// left is closed).
double group_join_leave_seq(Context& ctx) {
  const std::string group = Context::key_prefix("group_join_leave_seq") + "group";
  return measure_cycle_paired(ctx, [&] {
    GroupMember member(ctx.client, group, "bench", "payload");
    member.join().timeout(kCallBound).wait().value();
    if (!member.leave().timeout(kCallBound).wait().value()) {
      throw std::runtime_error("group_join_leave_seq: leave found the member gone");
    }
  });
}

// The same with another transient key of the client alive throughout (as
// in a process with a registration or a second membership): the presence
// lease is shared and outlives each member, so a cycle is the two Txns.
double group_join_leave_shared_seq(Context& ctx) {
  const std::string prefix = Context::key_prefix("group_join_leave_shared_seq");
  etcd::recipes::TransientKeyValue anchor(ctx.client, prefix + "anchor", "keeps the lease");
  anchor.create().timeout(kCallBound).wait().value();
  const double rate = measure_cycle_paired(ctx, [&] {
    GroupMember member(ctx.client, prefix + "group", "bench", "payload");
    member.join().timeout(kCallBound).wait().value();
    if (!member.leave().timeout(kCallBound).wait().value()) {
      throw std::runtime_error("group_join_leave_shared_seq: leave found the member gone");
    }
  });
  anchor.close();
  return rate;
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "value_set_cas_seq", .unit = "cycles/s", .order = 1520, .run = value_set_cas_seq},
    {.name = "group_join_leave_seq", .unit = "cycles/s", .order = 1530, .run = group_join_leave_seq},
    {.name = "group_join_leave_shared_seq", .unit = "cycles/s", .order = 1531, .run = group_join_leave_shared_seq},
});

}  // namespace
}  // namespace bench::metrics_value_group
