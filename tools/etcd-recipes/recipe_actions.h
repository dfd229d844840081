// The operator's actions on recipe state that both the CLI and the
// dashboard offer, written once: each is one guarded write, so acting on
// what an operator saw never touches what has changed since.
//
//   requeue_dead_letter  `workqueue requeue-dead NAME ID`, the dashboard's Requeue:
//                        DistributedWorkQueue::requeue_dead (the dead letter goes
//                        back to the pending items, in one Txn guarded on it)
//   purge_dead_letter    `workqueue purge-dead NAME ID`, the dashboard's Purge:
//                        DistributedWorkQueue::purge_dead
//   force_release        `lock --force-release NAME`, the dashboard's Release:
//                        Txn If(CreateRevision(KEY) == TOKEN) Then Delete(KEY) —
//                        deletes that holder's key only if it is still the same
//                        incarnation (its fencing token); its holder loses the hold
//                        at once (a forced take-over, unlike `lock --revoke`, which
//                        asks).
#pragma once

#include <cstdint>
#include <string>

#include "common.h"

namespace etcd_cli {

struct ActionOutcome {
  bool done = false;    // the write happened
  std::string message;  // what happened, or why nothing did (the key was gone or had changed)
};

// Throws Failure when etcd could not be asked (unreachable, permission
// denied); a guard that did not hold is an outcome with done == false.
ActionOutcome requeue_dead_letter(Context& ctx, const std::string& queue, const std::string& id);
ActionOutcome purge_dead_letter(Context& ctx, const std::string& queue, const std::string& id);
ActionOutcome force_release(Context& ctx, const std::string& lock, const std::string& key, int64_t token);

}  // namespace etcd_cli
