// The barrier: three parties meet at a DistributedBarrierWithCount of three,
// round after round (a fresh barrier name per round).
//
// Checker: no party released early — when a party's wait for round r
// returns released, every party had already called wait for round r.
#include <map>
#include <mutex>

#include "etcd/recipes/barrier.h"
#include "workload.h"

namespace chaos {
namespace {

using namespace std::chrono_literals;

constexpr int kParties = 3;

class BarrierWorkload : public Workload {
 public:
  std::string name() const override { return "barrier"; }

  void setup(Context& ctx) override {
    clear_prefix(ctx, "/chaos/barrier/");
  }

  void start(Context& ctx) override {
    for (int p = 0; p < kParties; ++p) {
      threads_.spawn([this, &ctx, p](std::stop_token stop) { party(ctx, p, stop); });
    }
  }

  void stop() override {
    threads_.stop();
  }

  std::vector<Violation> check(Context&) override {
    std::lock_guard lk(mu_);
    std::vector<Violation> out;
    for (const auto& [round, r] : rounds_) {
      for (const auto& [p, released_at] : r.released) {
        int entered = 0;
        for (const auto& [q, t] : r.invoked) entered += t < released_at.first ? 1 : 0;
        if (entered < kParties) {
          out.push_back({"barrier",
                         "party " + std::to_string(p) + " was released from round " + std::to_string(round) +
                             " when only " + std::to_string(entered) + " of " + std::to_string(kParties) +
                             " parties had come",
                         released_at.second});
        }
      }
    }
    return out;
  }

  std::map<std::string, int64_t> counts() const override {
    std::lock_guard lk(mu_);
    return counts_;
  }

 private:
  struct Round {
    std::map<int, Clock::time_point> invoked;
    std::map<int, std::pair<Clock::time_point, int64_t>> released;
  };

  void party(Context& ctx, int p, std::stop_token stop) {
    const std::string proc = "barrier." + std::to_string(p);
    History& h = *ctx.history;
    etcd::recipes::RecipeOptions options;
    options.client_id = proc;
    options.session_ttl = 3s;
    for (int round = 0; !stop.stop_requested(); ++round) {
      etcd::recipes::DistributedBarrierWithCount b(ctx.clients[static_cast<size_t>(p) % ctx.clients.size()],
                                                   "/chaos/barrier/round-" + std::to_string(round), kParties, options);
      {
        std::lock_guard lk(mu_);
        rounds_[round].invoked[p] = Clock::now();
      }
      h.add(proc, "invoke", "wait", "round " + std::to_string(round));
      auto r = b.wait().timeout(8s).wait();
      const auto now = Clock::now();
      const int64_t at = h.add(proc, r.ok() ? "ok" : "fail", "wait",
                               "round " + std::to_string(round) + (r.ok() ? " released" : " " + r.status().to_string()));
      std::lock_guard lk(mu_);
      if (r.ok()) rounds_[round].released[p] = {now, at};
      ++counts_[r.ok() ? "released" : "not-released"];
    }
  }

  mutable std::mutex mu_;
  std::map<int, Round> rounds_;
  std::map<std::string, int64_t> counts_;
  Threads threads_;  // last: joined first
};

}  // namespace

std::unique_ptr<Workload> make_barrier_workload() { return std::make_unique<BarrierWorkload>(); }

}  // namespace chaos
