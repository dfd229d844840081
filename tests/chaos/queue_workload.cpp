// The queue: two producers enqueue numbered items into a DistributedQueue,
// three consumers dequeue them; after the faults one consumer drains it.
//
// Checker (exactly once):
//   * no item is delivered twice;
//   * nothing invented: every delivered item was enqueued (acknowledged or
//     of unknown outcome);
//   * none lost: an item whose enqueue was acknowledged is delivered,
//     except at most one per dequeue of unknown outcome and one per take
//     the queue reported lost (etcd_recipes_queue_lost_total: a take that
//     may have committed but whose answer never came consumed an item no
//     one saw; the recipe documents that loss).
#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "etcd/recipes/metrics.h"
#include "etcd/recipes/queue.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;

// Counts the takes the queue objects report lost.
class LostTakes final : public etcd::recipes::Metrics {
 public:
  void add(std::string_view name, const etcd::recipes::Labels&, double delta) override {
    if (name == "etcd_recipes_queue_lost_total") lost += static_cast<int64_t>(delta);
  }
  void observe(std::string_view, const etcd::recipes::Labels&, double) override {}
  void set(std::string_view, const etcd::recipes::Labels&, double) override {}
  std::atomic<int64_t> lost{0};
};

class QueueWorkload : public Workload {
 public:
  std::string name() const override { return "queue"; }

  void setup(Context& ctx) override {
    clear_prefix(ctx, "/chaos/queue/");
  }

  void start(Context& ctx) override {
    for (int p = 0; p < 2; ++p) {
      threads_.spawn([this, &ctx, p](std::stop_token stop) { producer(ctx, p, stop); });
    }
    for (int c = 0; c < 3; ++c) {
      threads_.spawn([this, &ctx, c](std::stop_token stop) { consumer(ctx, c, stop); });
    }
  }

  void stop() override {
    threads_.stop();
  }

  void settle(Context& ctx) override {
    etcd::recipes::RecipeOptions options;
    options.metrics = lost_;
    etcd::recipes::DistributedQueue q(ctx.clients[0], kName, options);
    const auto until = Clock::now() + 60s;
    while (Clock::now() < until) {
      auto r = q.try_dequeue().timeout(3s).wait();
      if (r.ok() && !*r) break;  // empty
      record(ctx, "queue.drain", r);
    }
  }

  std::vector<Violation> check(Context& ctx) override {
    std::vector<Violation> out;
    auto left = ctx.admin->get(std::string(kName) + "/items/", etcd::GetOptions{.prefix = true, .count_only = true})
                    .timeout(20s)
                    .wait();
    std::lock_guard lk(mu_);
    if (left.ok()) counts_["left-in-queue"] = left->count;
    int64_t missing = 0;
    int64_t first_missing_at = -1;
    for (const auto& [item, at] : enqueued_ok_) {
      if (!delivered_.count(item)) {
        ++missing;
        if (first_missing_at < 0) first_missing_at = at;
      }
    }
    counts_["missing"] = missing;
    counts_["takes-reported-lost"] = lost_->lost.load();
    const int64_t unknown = counts_["dequeue-unknown"] + lost_->lost.load();
    if (missing > unknown) {
      out.push_back({"queue",
                     std::to_string(missing) + " acknowledged items were never delivered, but only " +
                         std::to_string(unknown) + " takes had an unknown outcome: items lost",
                     first_missing_at});
    }
    for (const auto& [item, ats] : delivered_) {
      if (ats.size() > 1) {
        out.push_back({"queue", "item " + item + " was delivered " + std::to_string(ats.size()) + " times", ats[1]});
      }
      if (!enqueued_ok_.count(item) && !enqueued_unknown_.count(item)) {
        out.push_back({"queue", "item " + item + " was delivered but never enqueued", ats[0]});
      }
    }
    return out;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    auto c = counts_;
    c["items-enqueued"] = static_cast<int64_t>(enqueued_ok_.size());
    c["items-delivered"] = static_cast<int64_t>(delivered_.size());
    return c;
  }

 private:
  static constexpr const char* kName = "/chaos/queue/q";

  template <class R>
  void record(Context& ctx, const std::string& proc, const R& r) {
    History& h = *ctx.history;
    if (!r.ok()) {
      // A timeout while waiting on an empty queue took nothing; any other
      // failure may have committed a take.
      const bool unknown = r.status().code() != etcd::StatusCode::kDeadlineExceeded || r.status().is(etcd::Errc::kOutcomeUnknown);
      if (unknown) h.add(proc, "info", "dequeue", "unknown: " + r.status().to_string());
      std::lock_guard lk(mu_);
      ++counts_[unknown ? "dequeue-unknown" : "dequeue-timeout"];
      return;
    }
    std::string value;
    if constexpr (std::is_same_v<std::decay_t<decltype(*r)>, std::string>) {
      value = *r;
    } else {
      if (!*r) return;
      value = **r;
    }
    const int64_t at = h.add(proc, "ok", "dequeue", value);
    std::lock_guard lk(mu_);
    delivered_[value].push_back(at);
    ++counts_["dequeued"];
  }

  void producer(Context& ctx, int p, std::stop_token stop) {
    const std::string proc = "queue.producer" + std::to_string(p);
    History& h = *ctx.history;
    etcd::recipes::RecipeOptions options;
    options.client_id = proc;
    etcd::recipes::DistributedQueue q(ctx.clients[static_cast<size_t>(p + 1) % ctx.clients.size()], kName, options);
    for (int n = 0; !stop.stop_requested(); ++n) {
      const std::string item = "q" + std::to_string(p) + "-" + std::to_string(n);
      h.add(proc, "invoke", "enqueue", item);
      auto r = q.enqueue(item).timeout(3s).wait();
      const int64_t at = h.add(proc, r.ok() ? "ok" : "info", "enqueue", item + (r.ok() ? "" : " unknown: " + r.status().to_string()));
      std::lock_guard lk(mu_);
      if (r.ok()) {
        enqueued_ok_[item] = at;
      } else {
        enqueued_unknown_.insert(item);
      }
      ++counts_[r.ok() ? "enqueue-ok" : "enqueue-unknown"];
      if (n % 4 == 3) std::this_thread::sleep_for(40ms);
    }
  }

  void consumer(Context& ctx, int c, std::stop_token stop) {
    const std::string proc = "queue.consumer" + std::to_string(c);
    etcd::recipes::RecipeOptions options;
    options.client_id = proc;
    options.metrics = lost_;
    etcd::recipes::DistributedQueue q(ctx.clients[static_cast<size_t>(c) % ctx.clients.size()], kName, options);
    while (!stop.stop_requested()) record(ctx, proc, q.dequeue().timeout(1s).wait());
  }

  std::shared_ptr<LostTakes> lost_ = std::make_shared<LostTakes>();
  mutable std::mutex mu_;
  std::map<std::string, int64_t> enqueued_ok_;
  std::set<std::string> enqueued_unknown_;
  std::map<std::string, std::vector<int64_t>> delivered_;
  std::map<std::string, int64_t> counts_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_queue_workload() { return std::make_unique<QueueWorkload>(); }

}  // namespace chaos
