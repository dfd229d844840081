// The counter: three parties add small deltas to one DistributedAtomicLong.
//
// Checker:
//   * every value an add returned is distinct (each add commits its own
//     value);
//   * the final value equals the acknowledged adds plus some subset of the
//     adds whose outcome is unknown (they may or may not have been
//     applied), and nothing else.
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "etcd/recipes/atomic_long.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;

class CounterWorkload : public Workload {
 public:
  std::string name() const override { return "counter"; }

  void setup(Context& ctx) override {
    auto r = ctx.admin->del(kName).timeout(10s).wait();
    if (!r.ok()) throw etcd::Error(std::move(r).status());
  }

  void start(Context& ctx) override {
    for (int p = 0; p < 3; ++p) {
      threads_.spawn([this, &ctx, p](std::stop_token stop) { party(ctx, p, stop); });
    }
  }

  void stop() override {
    threads_.stop();
  }

  std::vector<Violation> check(Context& ctx) override {
    std::vector<Violation> out;
    etcd::recipes::DistributedAtomicLong counter(*ctx.admin, kName);
    auto final_value = counter.get().timeout(20s).wait();
    if (!final_value.ok()) {
      out.push_back({"counter", "could not read the final value: " + final_value.status().to_string(), -1, false});
      return out;
    }
    std::lock_guard lk(mu_);
    std::map<int64_t, int64_t> seen;  // value -> history index
    int64_t acked = 0;
    for (const auto& a : adds_) {
      if (!a.ok) continue;
      acked += a.delta;
      auto [it, fresh] = seen.emplace(a.value, a.at);
      if (!fresh) {
        out.push_back({"counter", "two adds returned the same value " + std::to_string(a.value), a.at});
      }
    }
    // Which totals the unknown adds can make (all deltas are positive and
    // small): a subset-sum over them.
    std::vector<int64_t> unknown;
    for (const auto& a : adds_) {
      if (!a.ok) unknown.push_back(a.delta);
    }
    const int64_t extra = *final_value - acked;
    int64_t max_extra = 0;
    for (int64_t d : unknown) max_extra += d;
    bool possible = false;
    if (extra >= 0 && extra <= max_extra) {
      std::vector<char> can(static_cast<size_t>(max_extra) + 1, 0);
      can[0] = 1;
      for (int64_t d : unknown) {
        for (int64_t s = max_extra; s >= d; --s) {
          if (can[static_cast<size_t>(s - d)]) can[static_cast<size_t>(s)] = 1;
        }
      }
      possible = can[static_cast<size_t>(extra)] != 0;
    }
    if (!possible) {
      out.push_back({"counter",
                     "final value " + std::to_string(*final_value) + " is not the acknowledged adds (" +
                         std::to_string(acked) + ") plus a subset of the " + std::to_string(unknown.size()) +
                         " adds of unknown outcome (at most " + std::to_string(max_extra) + ")",
                     -1});
    }
    counts_["final"] = *final_value;
    counts_["acked-sum"] = acked;
    return out;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    return counts_;
  }

 private:
  static constexpr const char* kName = "/chaos/counter/value";

  struct Add {
    int64_t delta = 0;
    bool ok = false;
    int64_t value = 0;
    int64_t at = -1;
  };

  void party(Context& ctx, int p, std::stop_token stop) {
    std::mt19937_64 rng(ctx.seed * 131 + static_cast<uint64_t>(p));
    const std::string proc = "counter." + std::to_string(p);
    History& h = *ctx.history;
    etcd::recipes::RecipeOptions options;
    options.client_id = proc;
    etcd::recipes::DistributedAtomicLong counter(ctx.clients[static_cast<size_t>(p) % ctx.clients.size()], kName,
                                                 options);
    while (!stop.stop_requested()) {
      const int64_t delta = std::uniform_int_distribution<int>(1, 5)(rng);
      h.add(proc, "invoke", "add", std::to_string(delta));
      auto r = counter.add(delta).timeout(3s).wait();
      Add a;
      a.delta = delta;
      a.ok = r.ok();
      if (a.ok) a.value = *r;
      a.at = h.add(proc, a.ok ? "ok" : "info", "add",
                   a.ok ? std::to_string(delta) + " -> " + std::to_string(a.value)
                        : std::to_string(delta) + " unknown: " + r.status().to_string());
      std::lock_guard lk(mu_);
      adds_.push_back(a);
      ++counts_[a.ok ? "add-ok" : "add-unknown"];
    }
  }

  mutable std::mutex mu_;
  std::vector<Add> adds_;
  std::map<std::string, int64_t> counts_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_counter_workload() { return std::make_unique<CounterWorkload>(); }

}  // namespace chaos
