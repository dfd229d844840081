#include "recipe_actions.h"

#include "etcd/recipes/work_queue.h"
#include "etcd/txn.h"

namespace etcd_cli {
namespace {

ActionOutcome on_dead_letter(Context& ctx, const std::string& queue, const std::string& id, bool requeue) {
  const std::string what = cat("workqueue ", requeue ? "requeue-dead " : "purge-dead ", queue, " ", id);
  etcd::recipes::DistributedWorkQueue q(ctx.client(), queue);
  auto call = requeue ? q.requeue_dead(id) : q.purge_dead(id);
  if (!check(std::move(call).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what)) {
    return {false, cat("no dead letter ", id, " (no key ", queue, "/dead/", id, ")")};
  }
  return {true, cat(requeue ? "requeued dead letter " : "purged dead letter ", id, " of ", queue)};
}

}  // namespace

ActionOutcome requeue_dead_letter(Context& ctx, const std::string& queue, const std::string& id) {
  return on_dead_letter(ctx, queue, id, true);
}

ActionOutcome purge_dead_letter(Context& ctx, const std::string& queue, const std::string& id) {
  return on_dead_letter(ctx, queue, id, false);
}

ActionOutcome force_release(Context& ctx, const std::string& lock, const std::string& key, int64_t token) {
  auto txn = etcd::Txn().when(etcd::Compare::create_revision(key) == token).then(etcd::Op::del(key));
  auto r = check(ctx.client().txn(std::move(txn)).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(),
                 cat("lock --force-release ", lock));
  if (!r.succeeded) {
    return {false, cat("not released: ", key, " is no longer the hold with token ", token,
                        " (released, or taken again since)")};
  }
  return {true, cat("released ", lock, ": deleted ", key, " (token ", token, "); its holder lost the hold")};
}

}  // namespace etcd_cli
