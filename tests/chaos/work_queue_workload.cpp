// The work queue: two producers enqueue numbered items, three consumers
// receive and ack them (visibility timeout 2 s, so a consumer cut off from
// etcd gives its items back quickly). After the faults, one consumer
// drains the queue.
//
// Checker:
//   * none lost: every item whose enqueue was acknowledged is acked at
//     least once (or is a dead letter, with its reason), or had an ack of
//     unknown outcome and is gone from etcd (that ack deleted it);
//   * nothing invented: every delivered item was enqueued (acknowledged or
//     of unknown outcome);
//   * duplicates only after a loss: an item is never delivered again after
//     an ack of it succeeded, and never acked successfully twice.
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "etcd/recipes/metrics.h"
#include "etcd/recipes/work_queue.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;

class WorkQueueWorkload : public Workload {
 public:
  std::string name() const override { return "workqueue"; }

  void setup(Context& ctx) override {
    clear_prefix(ctx, "/chaos/workqueue/");
  }

  void start(Context& ctx) override {
    for (int p = 0; p < 2; ++p) {
      threads_.spawn([this, &ctx, p](std::stop_token stop) { producer(ctx, p, stop); });
    }
    for (int c = 0; c < 3; ++c) {
      threads_.spawn([this, &ctx, c](std::stop_token stop) { consumer(ctx, c, stop, false); });
    }
  }

  void stop() override {
    threads_.stop();
  }

  // One consumer takes what is left, until every acknowledged item was
  // acked (bounded: items claimed by consumers that were cut off come back
  // after the visibility timeout).
  void settle(Context& ctx) override {
    std::stop_source never;
    const auto until = Clock::now() + 60s;
    while (Clock::now() < until && !all_acked()) consumer(ctx, 9, never.get_token(), true, until);
  }

  std::vector<Violation> check(Context& ctx) override {
    std::vector<Violation> out;
    etcd::recipes::DistributedWorkQueue wq(*ctx.admin, kName);
    std::set<std::string> dead;
    auto letters = wq.dead_letters().timeout(20s).wait();
    if (letters.ok()) {
      for (const auto& d : *letters) dead.insert(d.value);
    }
    // What is still in the queue: NAME/items/<id> holds "wq1...\n<payload>".
    std::set<std::string> queued;
    auto left = ctx.admin->get(std::string(kName) + "/items/", etcd::GetOptions{.prefix = true}).timeout(20s).wait();
    if (!left.ok()) {
      out.push_back({"workqueue", "could not read the queue: " + left.status().to_string(), -1, false});
      return out;
    }
    for (const auto& kv : left->kvs) {
      const auto nl = kv.value.find('\n');
      queued.insert(nl == std::string::npos ? kv.value : kv.value.substr(nl + 1));
    }
    std::lock_guard lk(mu_);
    counts_["dead-letters"] = static_cast<int64_t>(dead.size());
    counts_["left-in-queue"] = static_cast<int64_t>(queued.size());
    // Claims of a take whose outcome stayed unknown, given back by their
    // consumer (the item would wait for the consumer's end otherwise).
    counts_["orphans-released"] = static_cast<int64_t>(
        metrics_->value("etcd_recipes_workqueue_orphaned_claims_released_total", {{"queue", kName}}));
    for (const auto& [item, at] : enqueued_ok_) {
      if (acked_.count(item) || dead.count(item)) continue;
      if (queued.count(item)) {
        out.push_back({"workqueue", "item " + item + " is still in the queue after the drain: never delivered again", at});
      } else if (!ack_unknown_.count(item)) {
        // Gone from etcd without an ack that could have deleted it.
        out.push_back({"workqueue", "item " + item + " was enqueued (acknowledged), never acked, and is gone: lost", at});
      }
    }
    for (const auto& [item, deliveries] : deliveries_) {
      if (!enqueued_ok_.count(item) && !enqueued_unknown_.count(item)) {
        out.push_back({"workqueue", "item " + item + " was delivered but never enqueued", deliveries.front().at});
      }
      // Deliveries are numbered in the order etcd granted the claims
      // (attempt()), whichever consumer recorded them first.
      const Delivery* acked = nullptr;
      for (const auto& d : deliveries) {
        if (!d.acked) continue;
        if (acked) {
          out.push_back({"workqueue", "item " + item + " was acked successfully twice (attempts " +
                                          std::to_string(acked->attempt) + " and " + std::to_string(d.attempt) + ")",
                         d.at});
        }
        if (!acked || d.attempt < acked->attempt) acked = &d;
      }
      for (const auto& d : deliveries) {
        if (acked && d.attempt > acked->attempt) {
          out.push_back({"workqueue",
                         "item " + item + " was delivered again (attempt " + std::to_string(d.attempt) +
                             ") after attempt " + std::to_string(acked->attempt) + " was acked successfully",
                         d.at});
        }
      }
    }
    return out;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    auto c = counts_;
    c["items-enqueued"] = static_cast<int64_t>(enqueued_ok_.size());
    c["items-acked"] = static_cast<int64_t>(acked_.size());
    return c;
  }

 private:
  static constexpr const char* kName = "/chaos/workqueue/q";

  struct Delivery {
    int64_t attempt = 0;
    bool acked = false;
    int64_t at = -1;
  };

  bool all_acked() {
    std::lock_guard lk(mu_);
    for (const auto& [item, at] : enqueued_ok_) {
      if (!acked_.count(item) && !ack_unknown_.count(item)) return false;
    }
    return true;
  }

  void producer(Context& ctx, int p, std::stop_token stop) {
    const std::string proc = "workqueue.producer" + std::to_string(p);
    History& h = *ctx.history;
    etcd::recipes::WorkQueueOptions options;
    options.recipe.client_id = proc;
    etcd::recipes::DistributedWorkQueue wq(ctx.clients[static_cast<size_t>(p) % ctx.clients.size()], kName, options);
    for (int n = 0; !stop.stop_requested(); ++n) {
      const std::string item = "p" + std::to_string(p) + "-" + std::to_string(n);
      h.add(proc, "invoke", "enqueue", item);
      auto r = wq.enqueue(item).timeout(3s).wait();
      const int64_t at = h.add(proc, r.ok() ? "ok" : "info", "enqueue", item + (r.ok() ? "" : " unknown: " + r.status().to_string()));
      {
        std::lock_guard lk(mu_);
        if (r.ok()) {
          enqueued_ok_[item] = at;
        } else {
          enqueued_unknown_.insert(item);
        }
        ++counts_[r.ok() ? "enqueue-ok" : "enqueue-unknown"];
      }
      std::this_thread::sleep_for(20ms);
    }
  }

  void consumer(Context& ctx, int c, std::stop_token stop, bool draining,
                Clock::time_point until = Clock::time_point::max()) {
    std::mt19937_64 rng(ctx.seed * 977 + static_cast<uint64_t>(c));
    const std::string proc = "workqueue.consumer" + std::to_string(c);
    History& h = *ctx.history;
    etcd::recipes::WorkQueueOptions options;
    options.recipe.client_id = proc;
    options.visibility_timeout = 2s;
    options.max_deliveries = 1000;
    options.recipe.metrics = metrics_;
    etcd::recipes::DistributedWorkQueue wq(ctx.clients[static_cast<size_t>(c) % ctx.clients.size()], kName, options);
    while (!stop.stop_requested() && Clock::now() < until) {
      if (draining && all_acked()) break;
      auto r = wq.receive().timeout(1s).wait();
      if (!r.ok()) {
        if (r.status().code() != etcd::StatusCode::kDeadlineExceeded) {
          h.add(proc, "fail", "receive", r.status().to_string());
          std::lock_guard lk(mu_);
          ++counts_["receive-error"];
        }
        continue;
      }
      const etcd::recipes::WorkItem item = *r;
      const int64_t at = h.add(proc, "ok", "receive", item.value() + " attempt " + std::to_string(item.attempt()));
      size_t slot;
      {
        std::lock_guard lk(mu_);
        auto& list = deliveries_[item.value()];
        list.push_back({item.attempt(), false, at});
        slot = list.size() - 1;
        ++counts_["delivered"];
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 40)(rng)));
      auto a = item.ack().timeout(3s).wait();
      const bool ok = a.ok() && *a;
      const int64_t ack_at = h.add(proc, ok ? "ok" : "fail", "ack",
                                   item.value() + (a.ok() ? (*a ? "" : " claim was lost") : " " + a.status().to_string()));
      std::lock_guard lk(mu_);
      if (!a.ok()) ack_unknown_.insert(item.value());
      if (ok) {
        auto& d = deliveries_[item.value()][slot];
        d.acked = true;
        d.at = ack_at;
        acked_.insert(item.value());
      }
      ++counts_[ok ? "ack-ok" : (a.ok() ? "ack-lost" : "ack-unknown")];
    }
    wq.close();
  }

  mutable std::mutex mu_;
  const std::shared_ptr<etcd::recipes::PrometheusMetrics> metrics_ =
      std::make_shared<etcd::recipes::PrometheusMetrics>();
  std::map<std::string, int64_t> enqueued_ok_;
  std::set<std::string> enqueued_unknown_;
  std::map<std::string, std::vector<Delivery>> deliveries_;
  std::set<std::string> acked_;
  std::set<std::string> ack_unknown_;  // an ack of unknown outcome: it may have deleted the item
  std::map<std::string, int64_t> counts_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_work_queue_workload() { return std::make_unique<WorkQueueWorkload>(); }

}  // namespace chaos
